/* emit.h -- the Triton emitter's private header: the state of one
 * emit_triton call (Emitter, InstInfo, ValInfo) and the helpers that its
 * files share: emit_triton.c (the module, tensor descriptors and the
 * driver), emit_passes.c (the passes 1-5), emit_expr.c (expressions) and
 * emit_stmt.c (statements).  Included by those four files only; the
 * entry points are emit/emit_triton.h's.
 */
#ifndef KAD_EMIT_H
#define KAD_EMIT_H

#include "base/base.h"
#include "ir/ir.h"
#include "emit/emit_triton.h"

/* ------------------------------------------------------------------ */
/* emit_triton.c, emit_passes.c, emit_expr.c, emit_stmt.c: internals  */
/* ------------------------------------------------------------------ */

/* The state of one emit_triton call, shared by the emitter's three files
 * (the passes: emit_passes.c, with emit_triton.c's driver; expressions:
 * emit_expr.c; statements: emit_stmt.c).  The em_* functions are used by those files only. */

/* A printed expression and the precedence of its outermost operator (PR_*,
 * emit_expr.c). */
typedef struct Ex {
    const char *s;
    int prec;
} Ex;

/* How an operand position treats a Python literal (see const_literal_ok). */
typedef enum Ctx {
    CTX_ANY,     /* no literal: a typed constant (tl.full) */
    CTX_BIN,     /* weak scalar of a binary operator: converted straight to the peer's dtype */
    CTX_TT,      /* to_tensor first (fp32/i32/...), then promoted with the peer tensor */
    CTX_CONVERT, /* to_tensor, then cast to the pointee dtype (load other, store value) */
    CTX_SLOT,    /* assigned to a variable: to_tensor's dtype must be the IR dtype */
    CTX_RANGE,   /* a bound of range(): the loop variable's dtype comes from it */
} Ctx;

typedef struct InstInfo InstInfo;

/* Per instruction, mirroring the IR's region tree. */
struct InstInfo {
    const Inst *in;
    const Block *blk;  /* the block holding it */
    int idx;           /* its index in blk */
    InstInfo *parent;  /* the control-flow instruction whose region holds it, or NULL */
    int depth;         /* number of enclosing control-flow instructions */
    InstInfo **reg;    /* per region, the infos of its instructions */
    ValId *eff;        /* operands as printed: implicit broadcasts skipped */
    int pos, end;      /* print-order numbers: the instruction, and after its regions */
    int mid;           /* while: the number between the condition and the body */
    int region;        /* index of the region of parent holding it */
    int rstart[2];     /* if: print-order number where each region starts */
    bool effects;      /* writes memory or asserts (itself or inside its regions) */
    bool dead;         /* pure and unused: not printed */
    int desc;          /* an IF_DESC access printed as a descriptor load/store: 1 + its index in
                        * Emitter.descs; 0 otherwise */
};

/* A live interval [lo, hi] in print-order positions (see liveness). */
typedef struct Ival {
    int lo, hi;
} Ival;

/* Per value. */
typedef struct ValInfo {
    InstInfo *defi;    /* defining instruction; NULL for kernel and region params */
    const Block *blk;  /* block where it becomes visible */
    InstInfo *scope;   /* the control-flow instruction whose region blk is, or NULL */
    int depth;         /* control-flow depth of that block */
    int nuses;         /* uses as printed (live instructions, after stripping) */
    InstInfo *useri;   /* the user when nuses == 1 */
    int uarg;          /* its operand index there */
    bool cnst;         /* a constant (or broadcast of one): printed at each use */
    bool inl;          /* printed inside its single user's expression */
    bool param;        /* a kernel parameter */
    bool iv;           /* a for loop's induction variable */
    bool var;          /* printed as a Python variable */
    int def_pos, last_pos;
    /* coalescing (meaningful on class roots) */
    int cls;           /* union-find parent */
    int prio;          /* how strongly hint names the class: 3 param, 2 loop slot, 1 other */
    const char *hint;  /* sanitized preferred name, or NULL */
    const char *name;  /* the Python name, once assigned */
    Vec(Ival) ivals;   /* live intervals of all members; from liveness's end on sorted by lo */
    Vec(int) imax;     /* imax.v[i]: the largest hi of ivals.v[0..i] (interferes' lookup) */
    int ilo, ihi;      /* the span of ivals: classes whose spans are apart do not interfere */
    bool civ, cparam;  /* a var member is a loop variable, a kernel parameter */
    int8_t cx;         /* em_may_be_constexpr, once asked: 0 not yet, 1 no, 2 yes */
} ValInfo;

/* One emission: emit_passes.c's passes fill it, emit_expr.c and emit_stmt.c
 * print from it. */
typedef struct Emitter {
    Arena *a;
    const Func *f;
    Diags *d;
    const EmitOptions *opt;
    ValInfo *vi;
    int nvals;
    InstInfo *body;         /* infos of f->body */
    Vec(InstInfo *) order;  /* every instruction in print order */
    int counter;            /* next print-order number */
    bool measuring;         /* rendering only to measure line lengths: placeholder names */
    Vec(int) reads;         /* classes read by the expression being rendered */
    bool libdevice;         /* some op printed through libdevice */
    bool failed;
    const InstInfo *early_return; /* the last top-level `if`, without results: an
                                     empty then-branch prints as `return` */
    /* the names in use (open addressing) */
    const char **set;
    uint32_t mask;
    const char **ubase; /* emit_unique_name's bases (same mask) and per base the next */
    int *unext;         /* suffix to try: every smaller one is taken (names are never freed) */
    int ntmp;
    const char *kname;      /* the printed function's name */
    Vec(const Inst *) scans; /* the scans, in print order */
    const char **combine_names; /* per scan: its combine function (identical ones shared) */
    const char *helpers;    /* the combine functions' source, printed before the kernel */
    Vec(struct EmDesc) descs; /* the tensor descriptors of the accesses printed as TMA */
} Emitter;

/* A tensor descriptor the emitter prints (tl.make_tensor_descriptor): of
 * its first access (operand indices from ir_desc_at), once at the top of
 * the kernel when base, shape and strides are parameters or constants
 * (hoisted, named), else inline at each access.  flag: a backward's
 * gradient descriptor, used only under the constexpr TMA_<param> that the
 * launcher computes (emit_tma_flag), else 0. */
typedef struct EmDesc {
    InstInfo *first;
    ValId base, dims[2 * KAD_MAX_RANK]; /* shape[r], strides[r - 1] */
    int rank;
    bool nan, hoist;
    ValId flag;          /* the gradient parameter the flag is named after, or 0 */
    const char *name;    /* hoisted: the variable */
} EmDesc;

static inline Type em_vtype(const Emitter *E, ValId v) { return E->f->vals.v[v].ty; }
/* The name of the combine function of scan `in` (emit_triton.c). */
const char *em_combine_name(Emitter *E, const Inst *in);

/* emit_triton.c (em_error) and emit_passes.c (the rest) */

/* A located error in E->d; nothing while measuring (the final print
 * reports it once). */
void em_error(Emitter *E, Loc loc, const char *fmt, ...);
/* The root of v's class: the values that share one Python variable. */
int em_find(Emitter *E, int v);
/* Whether v may be a Triton constexpr at some launch: a scalar computed
 * only from scalar int kernel parameters (Triton's JIT makes one equal to 1
 * a constexpr) and constants.  Such a value must not become a variable that
 * a loop reassigns or an if-branch yields (Triton refuses a constexpr
 * there): it joins no class there, and its copies convert with tl.cast. */
bool em_may_be_constexpr(const Emitter *E, ValId v);
/* A hint as a Python identifier: characters outside [A-Za-z0-9_] become
 * '_' (`acc.1` -> `acc_1`), a leading digit gets a 'v' in front.  NULL
 * when there is no hint or it is purely numeric (an anonymous value). */
const char *em_py_ident(Arena *a, const char *h);

/* emit_expr.c */

/* The constant instruction v is (through broadcasts), or NULL when v is
 * not a constant. */
const Inst *em_const_inst(const Emitter *E, ValId v);
/* Operand i of info as printed in an operand position of kind ctx. */
Ex em_opnd(Emitter *E, InstInfo *info, int i, Ctx ctx);
/* The expression computing the (single) result of info. */
Ex em_gen_inst(Emitter *E, InstInfo *info);
/* The printed name of a variable value; records its class in E->reads. */
const char *em_var_name(Emitter *E, ValId v);
/* load/store/atomic_add arguments: "ptr[, value][, mask=m][, other=o]". */
const char *em_mem_args(Emitter *E, InstInfo *info);
/* An access printed as a descriptor's (info->desc): "DESC.load([offsets])"
 * or "DESC.store([offsets], value)". */
const char *em_desc_access(Emitter *E, InstInfo *info);
/* The Python string literal of s. */
const char *em_py_string(Emitter *E, const char *s);

/* emit_stmt.c */

/* Appends the copies dsts[k] = operand first+k of info as one parallel
 * assignment (copies within one class vanish, a cycle is a tuple
 * assignment), at indentation depth. */
void em_print_moves(Emitter *E, Buf *b, int depth, InstInfo *info, int first, const ValId *dsts, int n,
                    Ctx ctx);
/* The statements of one instruction (control flow: its header and inits
 * only when measuring); the instructions of a block. */
void em_print_inst(Emitter *E, Buf *b, InstInfo *info, int depth);
void em_print_block(Emitter *E, Buf *b, const Block *blk, InstInfo *infos, int depth);

/* Lines longer than this stop inlining into them. */
enum { LINE_LIMIT = 100 };

/* emit_triton.c: the ops that open a loop, or any region; the
 * descriptor an IF_DESC access of info prints through (pass 1 asks). */
bool emit_is_loop(OpKind op);
bool emit_is_cf(OpKind op);
void emit_desc_choose(Emitter *E, InstInfo *info);

/* emit_passes.c: the names in use, a name marked used, a fresh name from
 * base (base itself, else base_1, base_2, ...). */
bool emit_name_used(const Emitter *E, const char *s);
void emit_name_add(Emitter *E, const char *s);
const char *emit_unique_name(Emitter *E, const char *base);

/* emit_passes.c: the passes, in the order the driver runs them. */
void emit_scan_block(Emitter *E, const Block *b, InstInfo *infos, InstInfo *parent, int region, int depth);
void emit_mark_dead(Emitter *E);
void emit_decide_inlining(Emitter *E);
void emit_liveness(Emitter *E);
void emit_coalesce(Emitter *E);
void emit_coalesce_names(Emitter *E);
void emit_assign_names(Emitter *E, const char *kname);

#endif
