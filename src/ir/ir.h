/* ir.h -- the IR stage's header: the typed tile IR (ops.h's table,
 * Inst, Block, Func and what hangs on a Func), its construction and
 * printer (ir.c), the textual reader (irparse.c), the verifier (verify.c),
 * the passes (pass.c), the libdevice ops' values (libm.c) and the CPU
 * interpreter (interp.c).  Also the host plan that a backward kernel's
 * header carries in the IR text (tapes, the spread, the fold), which ir.c
 * prints and irparse.c reads; the plan stage (src/plan/plan.h) owns it.
 *
 * Included by the IR's files and by every later stage: the front ends
 * build the IR with ir.c's constructors, so the IR sits below them
 * (base < ir < front < ...; tools/stage_deps.py).  ir/ir_int.h is the
 * interpreter's private header.
 */
#ifndef KAD_IR_H
#define KAD_IR_H

#include "base/base.h"
#include "ir/ops.h"

/* ------------------------------------------------------------------ */
/* The IR                                                              */
/* ------------------------------------------------------------------ */

typedef enum OpKind {
#define X(e, name, nargs, nres, nreg, pure, ew, diff) e,
    KAD_OPS(X)
#undef X
    OP_COUNT
} OpKind;

typedef struct OpInfo {
    const char *name;
    int nargs, nres, nregions;
    bool pure, elementwise;
    char diff; /* 'D', 'Z', 'M', 'C' as in ops.h */
} OpInfo;
extern const OpInfo op_info[OP_COUNT]; /* constant table, defined in ir.c */
OpKind op_by_name(const char *s, size_t n); /* OP_COUNT if unknown */
/* A float op whose result depends differentiably on its operands ('D' or 'N'). */
static inline bool op_differentiable(int op) { return op_info[op].diff == 'D' || op_info[op].diff == 'N'; }
/* A read-modify-write of memory (ptr, value [, mask] -> the old value): tl.atomic_add and the
 * other atomics.  Only atomic_add is linear in its value; the others are refused where a
 * gradient would flow through them, and dropped from a backward like any scratch write. */
static inline bool op_is_atomic(int op)
{
    return op == OP_ATOMIC_ADD || op == OP_ATOMIC_MAX || op == OP_ATOMIC_MIN || op == OP_ATOMIC_XCHG;
}
/* A write of memory through its first operand: a store or an atomic. */
static inline bool op_writes_memory(int op) { return op == OP_STORE || op_is_atomic(op); }

/* Inst.flags */
enum {
    IF_HAS_MASK = 1 << 0,  /* load/store/atomic_add: a mask operand follows */
    IF_HAS_OTHER = 1 << 1, /* load: an `other` operand follows the mask */
    IF_KEEP_DIMS = 1 << 2, /* reductions */
    IF_REVERSE = 1 << 3,   /* cumsum/cumprod/scan; sort: descending */
    IF_DESC = 1 << 4,      /* load/store: made from a tensor descriptor; its operands follow (ir_desc_at) */
};

/* OP_DOT ival: the forward's input precision. */
typedef enum DotPrec { DP_DEFAULT, DP_TF32, DP_TF32X3, DP_IEEE } DotPrec;

/* Values are indices into Func.vals; 0 means "no value". */
typedef int32_t ValId;

typedef struct Value {
    Type ty;
    const char *name; /* source-name hint ("offs", "acc"), or NULL */
    Loc loc;          /* where it was defined (params: the parameter) */
} Value;

typedef struct Block Block;

/* One instruction.  Results, operands and regions are arena arrays. */
typedef struct Inst {
    uint16_t op;    /* OpKind */
    uint16_t flags; /* IF_* */
    int nargs, nres, nregions;
    ValId *args;
    ValId *res;
    Block **regions;
    int64_t ival;                 /* op-specific integer attribute (see ops.h) */
    double fval;                  /* OP_CONST float value */
    int32_t ints[KAD_MAX_RANK];   /* op-specific list (permute, hints) */
    int nints;
    const char *sattr;            /* op-specific string (assert message) */
    Loc loc;                      /* the source construct it came from */
} Inst;

/* A load or store with IF_DESC came from a tensor descriptor's desc.load /
 * desc.store (in-kernel or host-side).  Its pointer tile and mask stay the
 * semantics (interpreter, access analysis, AD); after them it carries the
 * descriptor as operands, so that emitters can print the access as TMA:
 *     base (scalar pointer), shape[r] (int scalars), strides[r - 1] (int
 *     scalars; the last stride is the constant 1), offsets[r] (i32 scalars)
 * with r the pointer tile's rank (the block shape is the tile's shape).  A
 * load's padding is its `other` operand (a NaN constant: "nan", else "zero").
 * ir_desc_at: the index of the first descriptor operand (base), which is
 * nargs for an access without IF_DESC; ir_desc_rank: r, or 0. */
static inline int ir_desc_at(const Inst *in)
{
    if (!(in->flags & IF_DESC))
        return in->nargs;
    return (in->op == OP_LOAD ? 1 : 2) + !!(in->flags & IF_HAS_MASK) + !!(in->flags & IF_HAS_OTHER);
}
static inline int ir_desc_rank(const Inst *in) { return (in->nargs - ir_desc_at(in)) / 3; }

/* tl.range's scheduling hints on an OP_FOR (nints = 0: none given): ints[LH_*].
 * LH_STAGES and LH_UNROLL hold the value or -1; LH_GIVEN and LH_TRUE are
 * bit sets (LHB_*) of the boolean hints written and of those set to True. */
enum { LH_STAGES, LH_UNROLL, LH_GIVEN, LH_TRUE, LH_N };
enum { LHB_FLATTEN = 1, LHB_WARP_SPECIALIZE = 2, LHB_NO_ACC_MULTI_BUFFER = 4, LHB_DISABLE_LICM = 8 };
/* The hints' names (tl.range keywords) and the bit of each boolean one. */
extern const struct LoopHint { const char *name; int bit; } ir_loop_hints[6];

/* A region: parameters, then instructions; the last instruction of a
 * region of for/if/while-body is OP_YIELD, of a while-cond OP_CONDITION.
 * A region whose parent yields nothing still ends in an empty yield. */
struct Block {
    ValId *params;
    int nparams;
    Vec(Inst) insts;
};

/* A specialized constexpr parameter, kept for printing and emitters. */
typedef struct ConstParam {
    const char *name;
    const char *value; /* as Python would spell it: 1024, 1e-06, True, 'relu', tl.float16 */
    int pos;           /* 1 + its position among all parameters of the kernel's def (runtime
                          and constexpr), set by sema; 0 when unknown (IR read from text,
                          where constexprs are taken to come last).  Memory only: the IR
                          text does not carry it.  The backward module keeps the def's order. */
    bool runtime;      /* a runtime (non-constexpr) parameter that Triton's JIT specializes to a
                          constant: None, or the int 1 (docs/LANGUAGE.md "Signatures").  Callers
                          still pass it: emitted kernels keep it as a plain parameter, launchers
                          pass it among the runtime arguments.  Memory only, like pos. */
} ConstParam;

/* A host-side tensor descriptor parameter (triton.tools.tensor_descriptor.
 * TensorDescriptor, signature `tensordesc<fp32[64, 64]>`): the kernel
 * takes it expanded, as params[param .. param + 2*rank): the base pointer
 * (named like the parameter), `<name>_shape_<k>` (i32) per dimension,
 * `<name>_stride_<k>` (i64) per dimension but the last (the constant 1).
 * Launchers expand a TensorDescriptor object there.  Memory only, like
 * ConstParam.pos: the IR text does not carry it. */
typedef struct FuncDesc {
    const char *name;
    int param;
    int rank;
    int64_t block[KAD_MAX_RANK];
    bool nan;
} FuncDesc;

/* A runtime int parameter the kernel is specialized to see in [lo, hi]
 * (signature `n=i32[1:4096]`, IR `%n: i32 in [1, 4096]`): sema runs the
 * `range` loops whose trip count that fixes at 0 or 1 as straight-line
 * code; launchers and the interpreter refuse a value outside.  param: an
 * index into Func.params (a backward's and a jvp's first parameters are
 * the forward's, in order, so the index holds there too). */
typedef struct ParamRange {
    int param;
    int64_t lo, hi;
} ParamRange;
/* A runtime int parameter that bounds a `range(start, n, step)` loop with
 * constant start and step > 0 (sema, of a kernel specialized without a
 * range for it): for n in [lo, hi] = [start + 1, start + step] the loop
 * runs once, and a signature with `n=i32[lo:hi]` makes it straight-line
 * code (kad_kernel_range_hints).  Memory only. */
typedef struct RangeHint {
    const char *name;
    int64_t lo, hi;
} RangeHint;

/* A kernel in IR form.
 *
 * Structured control flow:
 *   for:   args = lb, ub, step (same int dtype, scalars), inits...
 *          region 0 params = iv, carried... ; yields the next carried values
 *          results = the carried values after the last iteration
 *          (iterates iv = lb, lb+step, ... while iv < ub for step > 0,
 *           iv > ub for step < 0, like Python's range)
 *   if:    args = cond (i1 scalar); regions then, else, each yielding the
 *          results; results = the yielded values of the taken region
 *   while: args = inits...; region 0 (cond) params = carried, ends in
 *          `condition %c`; region 1 (body) params = carried, yields the
 *          next carried values; results = carried values when %c is false
 * Regions see every value defined before them in enclosing regions. */
typedef struct Func {
    const char *name;
    Arena *a;
    Vec(Value) vals;   /* vals.v[0] is a dummy so that 0 means "none" */
    ValId *params;     /* runtime parameters in signature order (no constexprs) */
    int nparams;
    Vec(ConstParam) consts; /* constexpr parameters in signature order */
    Block *body;       /* params of body are unused (the kernel params live in `params`) */
    Loc loc;
    Vec(FuncDesc) descs; /* host-side tensor descriptor parameters, expanded (sema_sig.c) */
    Vec(ParamRange) ranges; /* runtime int parameters specialized to a range (in the IR text) */
    Vec(RangeHint) hints;   /* loops a range would make straight-line (sema; memory only) */
    Vec(Block *) rules; /* custom adjoint rules (OP_CUSTOM_VJP's ival indexes them): params =
                         * the helper's value arguments, then the result's adjoint; the region
                         * yields one adjoint per float argument.  Values live in vals. */
} Func;

/* ------------------------------------------------------------------ */
/* ir.c: construction, printing                                        */
/* ------------------------------------------------------------------ */

Func *ir_func_new(Arena *a, const char *name, Loc loc);
/* Whether in may write memory: a store, an atomic, a barrier, or a region holding one. */
bool ir_inst_writes(const Inst *in);
/* Whether b, or a region nested in it, holds an instruction of kind op. */
bool ir_block_has_op(const Block *b, int op);
/* Whether in takes v as an operand or uses it in one of its regions; whether
 * b (or a region nested in it) uses v. */
bool ir_inst_uses(const Inst *in, ValId v);
bool ir_block_uses(const Block *b, ValId v);
/* def[v] = the instruction defining v, for every result in b and the regions nested in
 * it (def: by ValId, f->vals.n entries; parameters' entries left as they were). */
void ir_index_defs(const Block *b, const Inst **def);
/* A deep copy of f's body, values, parameters, constexprs, ranges and rules, named
 * name, allocated in a; its hints are left empty. */
Func *ir_func_clone(Arena *a, const Func *f, const char *name);
/* The range of runtime parameter index param (Func.ranges), or NULL. */
const ParamRange *ir_param_range(const Func *f, int param);
ValId ir_value_new(Func *f, Type ty, const char *name, Loc loc);
ValId ir_param_add(Func *f, Type ty, const char *name, Loc loc);
Block *ir_block_new(Func *f);
/* b's terminator (its last instruction), or NULL when b is empty. */
const Inst *ir_block_term(const Block *b);
ValId ir_block_param_add(Func *f, Block *b, Type ty, const char *name, Loc loc);
/* Appends an instruction; args copied; nres results created with the given
 * types (may be NULL when nres == 0).  Returns the instruction, valid until
 * the next append to the same block. */
Inst *ir_emit(Func *f, Block *b, OpKind op, const ValId *args, int nargs,
              const Type *res_types, int nres, Loc loc);
/* The instruction of block b (not of its regions) that defines v, or NULL
 * (defined elsewhere).  Valid until the next append to b. */
const Inst *ir_block_def(const Block *b, ValId v);
/* Copies the attributes of src (flags, ival, fval, ints, sattr) onto dst: a copy of an
 * instruction with other operands. */
void ir_inst_copy_attrs(Inst *dst, const Inst *src);
/* A 16-bit float tile widened to fp32, seen through at most one permute
 * (trans): for v = cast(x) or permute(cast(x)) with x bf16 or fp16 and the
 * cast's result fp32, x (and *perm the permute, or NULL); else 0.  def: the
 * defining instructions by ValId (nv entries). */
ValId ir_widened16(const Func *f, const Inst *const *def, int nv, ValId v, const Inst **perm);
/* perm (an instruction of pf) applied to x in f, appended to b: the same
 * permutation with x's dtype; returns its result. */
ValId ir_permute_as(Func *f, Block *b, const Func *pf, const Inst *perm, ValId x);
/* Short forms for single-result ops; return the result. */
ValId ir_op1(Func *f, Block *b, OpKind op, Type ty, ValId x, Loc loc);
ValId ir_op2(Func *f, Block *b, OpKind op, Type ty, ValId x, ValId y, Loc loc);
ValId ir_op3(Func *f, Block *b, OpKind op, Type ty, ValId x, ValId y, ValId z, Loc loc);
ValId ir_const_int(Func *f, Block *b, Type ty, int64_t v, Loc loc);
ValId ir_const_float(Func *f, Block *b, Type ty, double v, Loc loc);
/* Adds a region to inst (a for/if/while being built). */
Block *ir_inst_add_region(Func *f, Inst *inst);
/* Empties b's instruction list and returns its old array (*n entries), for
 * a pass that rebuilds the block from it. */
Inst *ir_block_detach(Block *b, int *n);
static inline Type ir_type(const Func *f, ValId v) { return f->vals.v[v].ty; }

/* The textual form (see docs/IR.md, "Textual IR"):
 *   kernel @name(%x_ptr: *fp32, %n: i32) [BLOCK = 1024] {
 *     %pid = program_id 0 : i32
 *     %offs = arange 0 : i32[1024]
 *     %x = load %p, mask %m, other %o : fp32[1024]
 *     %s = sum %x {axis = 0} : fp32
 *     %r:2 = for %i = %lb to %ub step %st iter_args(%acc = %a0, %k = %k0) -> (fp32[64], i32) { ... yield %a, %b }
 *     %v = if %c -> (fp32[64]) { ... yield %a } else { ... yield %b }
 *     store %p, %v, mask %m
 *   }
 * ir_print writes it; irparse reads it back; print(parse(print(f))) == print(f). */
void ir_print(Buf *b, const Func *f);
char *ir_to_string(Arena *a, const Func *f);
/* A float constant as the printer writes it: the shortest decimal that
 * reads back to x, always a float literal ("1.0", "1e-06", "-inf", "nan"). */
void ir_format_float(Buf *b, double x);
/* "default", "tf32", "tf32x3", "ieee" for a DotPrec. */
const char *ir_dot_prec_name(int prec);
/* The names ir_print gives the values of f (without '%'), by ValId; NULL
 * for values not defined in f.  For messages that name values. */
const char **ir_names(Arena *a, const Func *f);

/* ------------------------------------------------------------------ */
/* irparse.c                                                           */
/* ------------------------------------------------------------------ */

/* Parses one kernel in textual IR.  NULL on error (located in d; file is
 * the name used in locations). */
Func *ir_parse(Arena *a, Diags *d, const char *file, const char *text);

/* ------------------------------------------------------------------ */
/* verify.c                                                            */
/* ------------------------------------------------------------------ */

/* Checks operand counts and types, shapes of elementwise ops, region
 * structure, terminators, yields against results, single definition and
 * dominance.  Problems are reported as errors at the instruction's Loc,
 * prefixed "IR verifier: ".  Returns true when f is valid. */
bool ir_verify(const Func *f, Diags *d);

/* ------------------------------------------------------------------ */
/* pass.c                                                              */
/* ------------------------------------------------------------------ */

/* Runs the named pass on f in place ("simplify", "dce", "verify").
 * Unknown names are an error in d.  Returns false on error. */
bool pass_run(Func *f, const char *name, Diags *d);
/* Dead-code elimination ("dce").  whiles_terminate: the caller knows every
 * `while` of f terminates (a backward kernel recomputing a forward that
 * terminated), so an unused `while` without effects is removed too. */
bool pass_dce(Func *f, bool whiles_terminate);
/* Adjoint dots on 16-bit tiles (a backward's, ad_backward): a dot whose
 * operands are both bf16 (or both fp16) tiles widened to fp32 (directly or
 * through one permute: ir_widened16) and which reads data through params[first..] (the
 * gradients: the recomputed forward's dots keep the author's form) takes
 * the 16-bit tiles as they are.  Exact: a 16-bit float is exactly a TF32
 * (or fp32) value and the products and sums are fp32 either way; it runs at
 * the 16-bit dot rate.  Returns how many dots it changed. */
int pass_narrow_dots(Func *f, int first);

/* ------------------------------------------------------------------ */
/* The host plan in a kernel's header: tapes, the spread, the fold    */
/* ------------------------------------------------------------------ */

/* Data of the plan stage (Program.tapes, Program.spread, Program.fold; src/plan/plan.h), declared
 * here because the IR text carries it in a backward kernel's header: ir.c prints it, irparse.c
 * reads it (IrPlanText).  AD fills it (ad_tape.c, write/spread.c, write/fold.c). */

/* An integer the host computes from a launch (ad_tape.c): a tape's trip
 * count.  TX_PARAM: the value of int parameter number v (an index into
 * Func.params, one of the contract's); TX_GRID: the grid's size along axis
 * v; TX_PID: tl.program_id(v), any of 0 .. grid[v] - 1 (the host bounds the
 * expression over all of them: interval arithmetic); the others combine x
 * and y with the kernel's integer semantics (div and rem truncate, as C
 * and Triton do; cdiv(x, y) = (x + y - 1) / y, y > 0). */
enum { TX_CONST, TX_PARAM, TX_GRID, TX_ADD, TX_SUB, TX_MUL, TX_DIV, TX_REM, TX_MAX, TX_MIN, TX_CDIV, TX_PID };
typedef struct TapeExpr {
    int op;
    int64_t v;
    const struct TapeExpr *x, *y;
} TapeExpr;
/* The IR text's name of a TX_ operation (add ... cdiv), or NULL (ir.c). */
const char *ir_tape_expr_op_name(int op);
/* A tape of a backward kernel: a scratch buffer (pointer parameter param,
 * after the flags) holding, for every iteration t < trips of one `for`
 * loop and every program p (numbered x fastest), `slot` elements at
 * (t * programs + p) * slot: the loop-carried values its reverse sweep
 * needs at the start of iteration t.  The launcher and plan_run
 * allocate trips * programs * slot elements (uninitialized: each is
 * written before it is read). */
typedef struct FuncTape {
    ValId param;           /* the Program's main kernel's */
    const TapeExpr *trips; /* iterations per program, >= 0 once clamped */
    int64_t slot;          /* elements per (iteration, program) */
    Loc loc;               /* the loop (the forward's), or the kernel's for IR text */
    const char *what;      /* the taped values' names, "m_i, l_i" (header), or NULL */
    bool bounded;          /* a `while` loop's: trips is a capacity; KAD_TAPE_HEAD elements come
                            * first (element 0: the overflow flag, zeroed by the host, nonzero
                            * after a launch whose loop ran past the capacity) */
    const char *bound;     /* bounded: how the capacity was found, or NULL */
    const char *recomputed; /* the carried ints/pointers the reverse loop recomputes, or NULL */
    const char *linear;    /* the loop's linear accumulators (no tape), or NULL */
    bool ckpt;             /* checkpointed (a tape budget): with k = ceil(sqrt(trips)) per
                            * program, slots 0 .. k - 1 hold one segment's iterations, slot
                            * k + s the carried values at iteration s * k; the host allocates
                            * 2 * ceil(sqrt(trips)) slots per program */
    int64_t budget;        /* the tape budget in bytes per launch (0: none); the host refuses a
                            * launch whose tapes exceed it */
    bool revolve;          /* ckpt by binomial checkpointing (trips not depending on the program
                            * id): the tape starts with a plan's head (1 + 5 * rows elements: the
                            * rows, then RV_FIELDS each, as exact floats, revolve_plan), then
                            * s slots per program (revolve_fit, the budget shared equally among
                            * f's checkpointed tapes) */
} FuncTape;

/* A backward's spread (write/spread.c, docs/AD.md "Spreading a loop over
 * programs"): its last parameter, KAD_SPREAD_PARAM (i32), is S, the programs
 * each forward program's loop iterations are dealt to; the main kernel then
 * runs on the grid (G0 * S, G1, G2).  trips: the loop's trip count for the
 * host (no program id, no division).  S = 1 runs it as before. */
typedef struct FuncSpread {
    ValId param;
    const TapeExpr *trips; /* iterations to deal: the loop's trip count times parts */
    int parts;             /* > 1: the loop's tile split into this many (write/spread.c) */
    int32_t lanes;         /* > 0: the loop is split_lanes', over parts of a tile of this many
                            * lanes (its launch defaults read it: emit_grad_launch.c) */
    Loc loc;               /* the loop */
} FuncSpread;
/* The host plan a backward's kernel header carries in the IR text, between its constexprs and
 * its body: `tape(...)`, `spread(...)` and `fold(...)`.  The plan stage's data (Program.tapes,
 * Program.spread, Program.fold), printed and parsed by ir.c and irparse.c because it names the
 * kernel's values; plan_print and plan_parse (src/plan/text.c) use these. */
typedef struct IrPlanText {
    Vec(FuncTape) tapes;
    const FuncSpread *spread;
    const struct FoldPlan *fold;
} IrPlanText;
/* ir_print with the header's plan (pt may be NULL: none). */
void ir_print_plan(Buf *b, const Func *f, const IrPlanText *pt);
/* ir_parse that also reads the header's plan into *pt (allocated in a). */
Func *ir_parse_plan(Arena *a, Diags *d, const char *file, const char *text, IrPlanText *pt);
/* The same for the kernel at *pos in src (line *line of file), where the text may go on: *pos
 * and *line are left at the token after the kernel (its rules included). */
Func *ir_parse_next(Arena *a, Diags *d, const char *file, const char *src, const char **pos, int *line,
                    IrPlanText *pt);
/* Reads the quoted string at s (s[0] == '"'; the escapes \n \t \" \\ and \xHH but \x00): its
 * text in a and *end after the closing quote; NULL on an error, with *err the message and *at
 * where it stands (irparse.c). */
const char *ir_string_read(Arena *a, const char *s, const char **end, const char **at, const char **err);
/* One input whose gradient is summed through partials. */
typedef struct FoldInput {
    int slot;          /* bw param index: the partials (the place of d_<x> in the contract) */
    ValId span;        /* bw param (i64): elements of d_<x>'s storage span, the partials' row length */
    const char *name;  /* x's name */
    Dtype dt;          /* d_<x>'s dtype */
    Dtype pdt;         /* the partials' dtype: fp64 for fp64, else fp32 */
    bool load_store;   /* the site is stored once per program, through the load's address and a
                        * mask the same in every fold iteration (a top-level site): each row's
                        * written elements are what the load reaches (access_cover), so a launch
                        * whose load covers a dense d_<x> writes every element of every row */
    int rows;          /* site rows (ad_site_rows): one row per adding site, this many; 0: a folded
                        * input, one row per fold program */
    ValId flag;        /* site rows under a launcher flag (bw i1 param): when it is false, one row
                        * that the sites add into with atomics; else 0 */
} FoldInput;
/* How a folded backward runs.  The forward's programs along the folded axes
 * (G_a, G_b, ...: t = pid_a + G_a * (pid_b + G_b * pid_c) numbers them) are
 * shared among P <= prod G programs along the first folded axis (the others
 * launched with 1): program q runs t = q, q + P, ... in order.  Its partials
 * parameters get buffers of P rows of span elements (slices of one
 * allocation; a program zeroes its own rows when the grid has one program
 * along every unfolded axis, else they must be zero-filled unless the
 * launch provably writes every element: FoldInput.load_store), its span
 * parameters those spans, its programs parameters the G's; then the one
 * sum kernel runs. */
typedef struct FoldPlan {
    int axis;          /* the first folded axis: the one launched with P programs; -1: none */
    unsigned axes;     /* the folded axes (bits); 0: not folded (site rows only) */
    int nargs;         /* the parameters before the fold's: params [0, nargs) */
    ValId programs[3]; /* bw params (i32, last, by axis): G_k for each folded axis k, else 0 */
    int n;
    FoldInput *in;
} FoldPlan;
/* The partials' dtype of a gradient of dtype dt (FoldInput.pdt): fp64 for fp64, else fp32. */
static inline Dtype fold_partial_dtype(Dtype dt) { return dt == DT_F64 ? DT_F64 : DT_F32; }

/* ------------------------------------------------------------------ */
/* libm.c: the libdevice ops' values and names (ops.h, KAD_LIBM_OPS)     */
/* ------------------------------------------------------------------ */

/* Rounding of the *_round ops (ival): round to nearest even, toward zero,
 * down, up; libdevice's suffixes. */
enum { RND_RN, RND_RZ, RND_RD, RND_RU };
extern const char *const libm_rounding_names[4];
bool op_is_libm(int op);
/* The operand index that is an i32 (ldexp, powi: 1; jn, yn: 0), or -1. */
int libm_int_operand(int op);
/* The libdevice function op prints as (add_round {round = rz}: "add_rz"). */
const char *libm_name(Arena *a, int op, int64_t ival);
/* One lane's value: float operands a, b, c, the int operand n; f32: the
 * result is fp32 (the *_round ops round in float). */
double libm_eval(int op, int64_t ival, bool f32, double a, double b, double c, int64_t n);

/* ------------------------------------------------------------------ */
/* interp.c                                                            */
/* ------------------------------------------------------------------ */

/* One runtime argument, in the order of Func.params. */
typedef struct InterpArg {
    void *data;     /* pointer params: host buffer */
    int64_t nbytes; /* its size in bytes (bounds checks) */
    int64_t i;      /* integer scalars */
    double f;       /* float scalars */
} InterpArg;

typedef enum InterpMode {
    IM_AS_WRITTEN, /* each float op rounded to its dtype (fp32, fp16, bf16) */
    IM_F64,        /* every float computed in double; float buffers hold doubles */
} InterpMode;

/* Runs every program of f on one grid, in order (x fastest), with f's
 * runtime arguments (nargs == f->nparams; its ranges are checked).  Errors
 * (out-of-bounds access, failed device_assert, ...) name the source line and
 * the program id and stop the run.  Returns true on success.  A backward's
 * host steps (flags, tapes, several kernels) are plan_run's (src/plan/). */
bool interp_run(const Func *f, const int64_t grid[3], const InterpArg *args, int nargs,
                InterpMode mode, Diags *d);
/* Whether f's int arguments lie in the ranges it was specialized for (Func.ranges); false
 * after a located error in d. */
bool interp_ranges_hold(const Func *f, const InterpArg *args, Diags *d);

#endif
