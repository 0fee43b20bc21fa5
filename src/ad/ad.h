/* ad.h: the AD stage's private header -- what the files of src/ad/ share.
 *
 * Included by src/ad/ files only: the other stages see the AD stage through
 * what ad/autodiff.h declares (ad_backward, ad_forward; the Program is
 * plan/plan.h's).  The state of one differentiation (Ad) and what AD's
 * files call across files are ad/ad_int.h's, which this header includes.
 * It holds
 *   - Em, where a rule emits code (the function built, its block, the
 *     forward instruction's Loc), for reverse mode (Em.ad) and forward mode
 *     (Em.f) alike, and the IR builder helpers on it (build.c): one
 *     definition of each for both modes;
 *   - reverse mode's accessors of Ad (ad_int.h) and forward mode's state
 *     (Fd) with its accessors;
 *   - what the files of each mode call across files: the reverse sweep
 *     (sweep_rev.c), its rules (rules_rev.c), its tapes (tape_rev.c), the
 *     ways of writing an input gradient (write/), the driver (backward.c);
 *     the forward sweep (sweep_fwd.c) and its rules (rules_fwd.c). */
#ifndef KAD_AD_H
#define KAD_AD_H

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "plan/plan.h"
#include "ad/autodiff.h"
#include "ad/ad_int.h"

/* ln 2 and 2/sqrt(pi), spelled out: M_LN2 and M_2_SQRTPI are not C11. */
#define AD_LN2 0.69314718055994530942
#define AD_2_SQRTPI 1.12837916709551257390

typedef Vec(ValId) ValVec;

/* A float value (not a pointer). */
static inline bool is_float(Type t) { return t.dt != DT_PTR && dtype_is_float((Dtype)t.dt); }

/* ---- Forward mode's state (sweep_fwd.c) ---- */

enum { R_NONE = 0, R_UNKNOWN = -1, R_MANY = -2 };

typedef struct Fd {
    Arena *a;
    Diags *d;
    const Func *fw;
    const AdSpec *spec;
    int nvals, np;
    int *role;     /* by param index: AD_ROLE_* */
    int *root;     /* by ValId (pointers): param + 1, R_UNKNOWN, R_MANY, R_NONE */
    uint8_t *tv;   /* by ValId: a float with a tangent */
    uint8_t *sv;   /* by ValId: a pointer with a shadow */
    int *nuses;    /* by ValId */
    int *jcov;     /* by ValId: uses as operand 0 of a custom_jvp (whose rule gives the tangent) */
    bool changed;
    Func *jv;
    ValId *pm, *tm, *sm; /* by ValId: primal copy, tangent (0: zero), shadow */
    AdFinite fin;        /* which partials need a strong zero (ad_finite.c) */
    int errors;
} Fd;

static inline Type fd_ty(const Fd *f, ValId v) { return f->fw->vals.v[v].ty; }
static inline const char *fd_name(const Fd *f, ValId v) { return f->fw->vals.v[v].name; }

/* ---- Where rules emit code, for both modes ---- */

/* The function being built (the backward or the jvp kernel), the block
 * code goes to and the forward instruction's Loc; the mode's state in ad
 * (reverse) or f (forward), the other NULL. */
typedef struct Em {
    Func *g;
    Block *b;
    Loc loc;
    Ad *ad;
    Fd *f;
} Em;

static inline Em em_rev(Ad *ad, Block *b, Loc loc) { return (Em){ad->bw, b, loc, ad, NULL}; }
static inline Em em_fwd(Fd *f, Block *b, Loc loc) { return (Em){f->jv, b, loc, NULL, f}; }
/* The type of a value of the function being built. */
static inline Type ety(const Em *e, ValId v) { return e->g->vals.v[v].ty; }

/* build.c: the IR builders of both modes' rules.  Each emits into e->b
 * with e->loc; an operand's type is its type in e->g. */
ValId e1(Em *e, OpKind op, ValId x);
ValId e2(Em *e, OpKind op, ValId x, ValId y);
ValId ecmp(Em *e, OpKind op, ValId x, ValId y);
ValId ewhere(Em *e, ValId c, ValId x, ValId y);
/* A float constant shaped like `like`. */
ValId ec(Em *e, ValId like, double v);
ValId ezero(Em *e, Type t);
/* x cast to dt (x itself when it has dt). */
ValId ecast(Em *e, ValId x, Dtype dt);
ValId ereduce(Em *e, OpKind op, ValId x, int axis, bool keep);
ValId eshape(Em *e, OpKind op, ValId x, Type to, int64_t ival);
ValId epermute(Em *e, ValId x, const int32_t *perm);
/* A reduction's value (or adjoint) r broadcast back to x's shape xt. */
ValId bcast_back(Em *e, ValId r, Type xt, int axis, bool keep);
/* The adjoint of a broadcast from xt: sum over the broadcast axes. */
ValId unbroadcast(Em *e, ValId d, Type xt);
/* x with a new axis `at` of size n (broadcast), the other axes as x's. */
ValId ewiden(Em *e, ValId x, int at, int32_t n);
/* arange(0, n) of dtype dt along axis `at` of a tile of type like. */
ValId eiota(Em *e, Type like, int at, Dtype dt);
/* The rules' arithmetic (rules_rev.c, rules_fwd.c), on the Em e in scope. */
#define MUL(x, z) e2(e, OP_MUL, (x), (z))
#define DIV(x, z) e2(e, OP_DIV, (x), (z))
#define ADD(x, z) e2(e, OP_ADD, (x), (z))
#define SUB(x, z) e2(e, OP_SUB, (x), (z))
#define NEG(x) e1(e, OP_NEG, (x))
/* The stable rank of each lane of x along its last axis (sort, topk: IF_REVERSE in flags is
 * descending), after an assert with nan_msg that x holds no NaN. */
ValId esort_rank(Em *e, ValId x, unsigned flags, const char *nan_msg);

/* ad_analysis.c: resolves spec's names to parameter roles (role, by parameter index, zeroed:
 * AD_ROLE_*), for both modes; false after located errors in d.  Reverse mode (forward false)
 * refuses fp8 buffers (their gradients would be rounded to 2 or 3 bits, and fp8 has no
 * atomic_add); forward mode needs an input as well as an output. */
bool ad_assign_roles(Diags *d, const Func *f, const AdSpec *spec, int *role, bool forward);

/* ---- Reverse mode: the analysis (ad_analysis.c, ad_shift.c, ad_validate.c) ---- */

/* Ad.root: 0 unknown / not a pointer, p+1 derives from parameter p,
 * ROOT_AMBIG read from memory (or converted), ROOT_SET(s) one of the
 * parameters of provenance set s (a `tl.where`, or values chosen in the
 * branches of an `if` or the iterations of a loop). */
#define ROOT_AMBIG (-1)
#define ROOT_SET(s) (-2 - (s))
#define SET_OF(r) (-2 - (r))

/* Where a store to an output sits: its block and `if` nesting, so that two
 * stores in the two branches of one `if` are known to be mutually
 * exclusive, and two in one block to run in program order. */
typedef struct IfStep {
    const Inst *inst; /* an enclosing `if` */
    int region;       /* 0: then, 1: else */
} IfStep;
typedef struct StoreSite {
    const Inst *store;
    const Block *block; /* the block holding the store */
    int root;           /* Ad.root code of the pointer (a parameter or a set) */
    const IfStep *path; /* enclosing ifs, outermost first */
    int npath;
    int loop_depth;
} StoreSite;
typedef Vec(StoreSite) SiteVec;
/* Where a block sits: the instruction (index i of block b) whose region it
 * is, and where that block sits in turn (NULL for the kernel's body). */
typedef struct BlockPos {
    const Block *b;
    int i;
    const struct BlockPos *up;
} BlockPos;

/* The type of fw value v as the forward has it (not ad.h's fty: no lanes). */
static inline Type fw_ty(const Ad *ad, ValId v) { return ad->fw->vals.v[v].ty; }

/* ad_analysis.c: how a for, while or if passes a forward fixpoint's facts, for both modes' facts
 * (ad_analysis.c's provenance and varied, sweep_fwd.c's tangents and shadows): the operands into
 * the regions' carried parameters, each region walked, the yields back into the parameters, the
 * parameters (an if: the yields) into the results.  flow joins one value's facts into another's;
 * walk visits a block. */
typedef struct FactWalk {
    void *ctx;
    void (*flow)(void *ctx, ValId to, ValId from);
    void (*walk)(void *ctx, const Block *b);
} FactWalk;
void ad_flow_regions(const Inst *in, const FactWalk *w);
/* ad_analysis.c: adds to nuses[v] each use of v in b (regions included), and to jcov[v] (when
 * not NULL) each use as operand 0 of a custom_jvp. */
void ad_count_uses(const Block *b, int *nuses, int *jcov);

/* ---- Reverse mode: accessors of Ad (ad_int.h) ---- */

/* The type of fw value v; a reduce's combine-region value as a tile while
 * adj_reduce applies the region lane by lane (ad->lanes). */
static inline Type fty(const Ad *ad, ValId v)
{
    Type t = ad->fw->vals.v[v].ty;
    if (ad->lanes && ad->lanes[v])
        t = type_with_shape(t, ad->lane_ty.rank, ad->lane_ty.shape);
    return t;
}
static inline Type bty(const Ad *ad, ValId v) { return ad->bw->vals.v[v].ty; }
static inline const char *fname(const Ad *ad, ValId v) { return ad->fw->vals.v[v].name; }

/* A pointer into a differentiated buffer: it gets a shadow. */
static inline bool needs_shadow(const Ad *ad, ValId v)
{
    return fty(ad, v).dt == DT_PTR && ad_root_role(ad, v) != AD_ROLE_NONE;
}

/* The adjoint dtype: fp16/bf16/fp8 adjoints accumulate in fp32 (for fp8
 * this is also the straight-through rule: a cast to fp8 passes its
 * adjoint unchanged, docs/AD.md). */
static inline Type adt(Type t)
{
    if (t.dt == DT_F16 || t.dt == DT_BF16 || dtype_is_fp8((Dtype)t.dt))
        t.dt = DT_F32;
    return t;
}

/* Names a bw value after a fw value, with a prefix ("d", "d_"), unless it
 * already has a name. */
static inline void name_after(Ad *ad, ValId bv, const char *prefix, ValId fv)
{
    const char *n = fv ? fname(ad, fv) : NULL;
    if (!bv || ad->bw->vals.v[bv].name || !n)
        return;
    ad->bw->vals.v[bv].name = arena_printf(ad->a, "%s%s", prefix, n);
}

/* The primal copy (P0) and shadow (S0) of fw value v in the current scope. */
static inline ValId P0(const Ad *ad, ValId v)
{
    ASSERT(v > 0 && ad->pm[v] > 0);
    return ad->pm[v];
}

static inline ValId S0(const Ad *ad, ValId v)
{
    ASSERT(v > 0 && ad->sm[v] > 0);
    return ad->sm[v];
}

/* ---- Forward mode: accessors of Fd ---- */

static inline void fd_name_after(Fd *f, ValId jv, const char *prefix, ValId fv)
{
    const char *n = fv ? fd_name(f, fv) : NULL;
    if (!jv || f->jv->vals.v[jv].name || !n)
        return;
    f->jv->vals.v[jv].name = arena_printf(f->a, "%s%s", prefix, n);
}

static inline void fd_fail(Fd *f, Loc loc, const char *fmt, const char *arg)
{
    diag_error(f->d, loc, fmt, arg ? arg : "?");
    f->errors++;
}

static inline ValId PF(const Fd *f, ValId v)
{
    ASSERT(v > 0 && f->pm[v] > 0);
    return f->pm[v];
}

/* ---- Reverse mode across files ---- */

/* The analysis (ad_analysis.c, ad_shift.c, ad_validate.c), for messages and stages. */
bool an_root_has(const Ad *ad, int r, int p);       /* is parameter p a candidate of root code r? */
const char *an_param_name(const Ad *ad, int p);
const char *an_root_name(const Ad *ad, ValId v);    /* v's parameter(s), quoted as '%s' */
const char *an_display(const Ad *ad, ValId v, ValId alt); /* how a value is called in messages */
void an_useful_block(Ad *ad, const Block *b);       /* the backward facts (useful) of b */
bool an_nan_const(const Ad *ad, ValId v);           /* a float NaN constant (through broadcasts)? */
void drop_shift_invariant(Ad *ad);                  /* stage 3 (ad_shift.c) */
/* Stage 4 (ad_validate.c) on b: path/npath its enclosing ifs, loop the innermost enclosing loop,
 * loop_depth how many loops enclose it, sites the output stores met so far, up where b sits. */
void validate_block(Ad *ad, const Block *b, int loop_depth, const Inst *loop, const IfStep *path,
                    int npath, SiteVec *sites, const BlockPos *up);

/* sweep_rev.c: the sweeps.  ad_reverse builds the backward Program of fwd; gmode (inputs a gather
 * kernel writes), nofold, scatter and plain_out are backward.c's and write/gather.c's. */
Program *ad_reverse(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec, const uint8_t *gmode,
                    bool nofold, bool scatter, uint8_t *plain_out);
/* clone_block's modes: copy fb's terminating yield (extended by the shadows ysh marks); leave
 * out linear-accumulator chains (adjoint loops). */
enum { CL_YIELD = 1, CL_SKIP_CHAIN = 2 };
/* The primal sweep: fb copied into bb without stores, with shadow pointers. */
void clone_block(Ad *ad, const Block *fb, Block *bb, unsigned mode, const bool *ysh);
/* The adjoint sweep: fb's instructions walked backwards into bb. */
void adj_block(Ad *ad, const Block *fb, Block *bb);
/* A copy of `in` (attributes, result types, Loc) with new operands. */
Inst *emit_like(Ad *ad, Block *b, const Inst *in, const ValId *args);
/* A closed combine region's body fr copied into rb, its values renamed through m; the yield at
 * yloc (NULL: at each instruction's own location). */
void copy_combine_body(Ad *ad, Block *rb, const Block *fr, ValId *m, const Loc *yloc);
/* Region ops rebuilt with more operands and results than in fw: the forward's carried values,
 * then the shadows of the carried pointers, then in adjoint regions the adjoints of outside
 * values.  These fill and bind those lists in that one order, for both sweeps. */
typedef struct Slots {
    ValId *args; /* operands */
    Type *tys;   /* result types (unused for terminators) */
    int na, nt;
} Slots;
Slots slots_new(Ad *ad, int cap);
bool *shadow_flags(Ad *ad, const ValId *vs, int n); /* sh[i]: carried slot i needs a shadow */
const ValId *carriers(const Inst *in); /* the fw values carrying each result through the regions */
ValId param_like(Ad *ad, Block *b, ValId v, const char *prefix); /* a param mirroring fw value v */
void add_carried(Ad *ad, Slots *s, const ValId *fv, const ValId *rt, int n, const bool *skip,
                 const bool *sh);
void add_params(Ad *ad, Block *reg, const Block *fr, int nlead, const bool *skip, const bool *sh);
void bind_results(Ad *ad, const Inst *in, const Inst *ni, const bool *sh);
/* The active values defined outside in's regions and used inside them: their adjoints leave the
 * adjoint region as its last results (add_adjoints, bind_adjoints). */
ValVec collect_outside(Ad *ad, const Inst *in);
void add_adjoints(Em *e, Slots *s, ValVec L);
void bind_adjoints(Ad *ad, const Inst *ni, ValVec L);
ValId adj_param(Ad *ad, Block *reg, ValId v); /* a region param carrying v's adjoint */
ValId adj_or_zero(Em *e, ValId v);            /* v's adjoint, or a zero of its adjoint type */

/* rules_rev.c: the adjoint rules. */
void adj_rule(Em *e, const Inst *in);   /* every op's adjoint, one case per op */
void adj_reduce(Em *e, const Inst *in); /* a reduce with a combine region */
void adj_scan(Em *e, const Inst *in);   /* a scan: a rule per recognized combine, else general */
void accum(Em *e, ValId v, ValId c);    /* adj[v] += c (cast to v's adjoint dtype); active v only */
/* The primal of fw value v in the current scope, in its adjoint dtype. */
static inline ValId P(Em *e, ValId v) { return ecast(e, P0(e->ad, v), (Dtype)adt(fty(e->ad, v)).dt); }
/* Structural zeros (docs/AD.md, "Untaken branches: exact zeros"): v's mask m, sel when it is a
 * selection's; d on the lanes where c is take, 0 elsewhere, with its structural zeros. */
void zm_set(Ad *ad, ValId v, ValId m, bool sel);
ValId eselect(Em *e, ValId c, ValId d, bool take);

/* tape_rev.c: taped loops (ad_tape.c plans them). */
ValId tape_trips(Ad *ad, Block *b, const Inst *in);            /* the trip count of taped `for` in */
ValId tape_seg_len(Ad *ad, Block *b, ValId trips, Loc loc);    /* k = ceil(sqrt(trips)), as the host's */
void tape_emit_record(Ad *ad, Block *reg, TapeLoop *tl);       /* the primal sweep's tape stores */
void clone_tape_while(Ad *ad, Block *bb, const Inst *in, TapeLoop *tl); /* a taped `while`'s copy */
void adj_tape_loop(Ad *ad, Block *bb, const Inst *in, TapeLoop *tl);    /* its adjoint, backwards */

/* write/: each way of writing an input gradient decides (asked by write/plain.c's
 * ad_plain_inputs, per input), then acts on the finished reverse sweep. */
typedef Vec(const Inst *) InstPtrVec;
/* write/plain.c: input i's mode from its active loads ls (plain stores, read-modify-writes, else
 * the fold's decision); whether the launcher can evaluate condition c (a flag). */
void decide_loads(Ad *ad, Access **Ap, int i, const InstPtrVec *ls);
bool cond_checkable(Access *A, const AccCond *c);
/* write/fold.c: the grid axes b's program ids use (bits); the fold of input i read at the one
 * site l whose address ignores the program ids of indep (plain 3); site rows for input i loaded at
 * the sites ls (plain 6, 7). */
unsigned used_axes(const Block *b);
void fold_candidate(Ad *ad, Access *A, int i, const Inst *l, unsigned indep);
bool site_rows(Ad *ad, Access *A, int i, const InstPtrVec *ls);
/* write/scatter.c: input i's loads split into scattered sites (a kernel of their own) and the
 * rest (decide_loads); true when marked. */
bool scatter_split(Ad *ad, Access **Ap, int i, const InstPtrVec *ls);
void fold_inputs(Ad *ad); /* write/fold.c: plain 3's atomic_adds into partials and a sum kernel */
void site_inputs(Ad *ad); /* write/fold.c: plain 6, 7's into one row of partials per site */
/* write/gather.c: the site-row inputs that become gathers (a Program with their kernels), or NULL;
 * *ran when it built a backward. */
Program *gather_inputs(Arena *a, const Func *orig, const Func *fwd, const AdSpec *spec,
                       const uint8_t *plain, bool *ran);
/* write/gemm.c: the GEMM form for the inputs still written with atomics; false on a kad bug. */
bool gemm_inputs(Arena *a, Diags *d, const Func *fwd, Program *P, const AdSpec *spec);

/* backward.c: ad_reverse, then simplification and verification. */
Program *reverse_simplified(Arena *a, Diags *d, const Func *orig, const Func *fwd, const AdSpec *spec,
                            const uint8_t *gmode, bool nofold, bool scatter, uint8_t *plain_out);

/* ---- Forward mode across files ---- */

/* sweep_fwd.c: the forward sweep over fb into jb; a copy of `in` with other operands and result
 * type rt. */
void emit_block(Fd *f, const Block *fb, Block *jb);
Inst *emit_copy(Em *e, const Inst *in, const ValId *args, int nargs, Type rt);

/* rules_fwd.c: the tangent rules. */
ValId tan_rule(Em *e, const Inst *in); /* the tangent of in's result, one case per op */
ValId TZ(Em *e, ValId v);              /* fw value v's tangent, or a zero of its type */

#endif
