/* plan.h: the plan stage's header -- a backward is a Program.
 *
 * A Program is what a backward is at run time: its main kernel, the
 * companion kernels its strategies made (the fold's sum kernel, the GEMM
 * form's dacc and operand kernels, gather and scatter kernels), the host
 * data those strategies planned (launch flags, tapes, zero-fill covers, the
 * spread, the output gradients read on a private copy), and the ordered
 * list of host steps that runs it.  The AD strategies (src/ad/) fill the
 * plan data of the Program ad_backward returns; plan_steps orders the steps
 * from it.  The steps' walkers:
 *   - run.c (plan_run) executes them on the interpreter, each launch one
 *     interp_run of one kernel on one grid;
 *   - emit_grad_plan.c prints the Triton launcher that does the same on a GPU.
 * text.c prints and parses a Program in the IR's textual form: the main
 * kernel (its header's tape/spread/fold annotations), the companion kernels
 * as kernels of their own, then a `plan { ... }` with the rest of the plan
 * data and the steps (kad grad --ir; kad_parse_ir reads it back, the
 * companions from the text).
 * tape.c evaluates and describes the tapes' plan data for the host, and
 * fold_sum.c builds the fold's sum kernel from its plan data: the plan
 * stage reads a Program's data without calling the AD that made it (the
 * order base < ir < front < analysis < plan < ad; tools/stage_deps.py).
 * Another launcher emitter (a CUDA C host file) walks P->steps with
 * plan_step_kernel and plan_step_grid_add, switching on Step.kind, exactly
 * as plan_run does.
 *
 * The main kernel's parameters are, in order: the contract (the forward's,
 * then the output gradients, then the input gradients: plan_nargs of them),
 * the flags, the tapes, the spread's S, then the fold's hidden parameters.
 * No part of the plan lives on a kernel's Func: the kernel emitters take the
 * fold and the flags from the Program (EmitOptions.fold and .flags; the CUDA C
 * emitter reads the Program), and the guards are evaluated from
 * P->guards (access_report.c's func_guards_hold).
 *
 * Before the Program: the plan data the AD strategies fill (flags, covers,
 * the fold's sum kernel, tape heads, the GEMM form, gathers); the tapes,
 * the spread and the fold's plan are ir/ir.h's (the IR text prints them in
 * a kernel's header).  Included by the plan's files and by the later
 * stages (AD, the emitters, the checker, kad.c, main.c). */
#ifndef KAD_PLAN_H
#define KAD_PLAN_H

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"

/* A backward as a program: kernels plus host steps (src/plan/plan.h). */
typedef struct Program Program;

/* ------------------------------------------------------------------ */
/* The plan data of a backward (filled by AD's strategies)            */
/* ------------------------------------------------------------------ */

/* A flag of a backward kernel: an i1 parameter, true when cond holds for
 * the launch (then an input's gradient is written with plain stores or
 * private read-modify-writes, else with atomics).  The generated launcher
 * computes it on the host and passes it as a tl.constexpr, so Triton
 * compiles only the branch the launch takes; plan_run computes it with
 * access_cond_eval (false when it cannot: atomics, always right). */
typedef struct FuncFlag {
    ValId param;
    Access *acc;
    const AccCond *const *cond; /* true when every one holds */
    int ncond;
    const int64_t *grid_add; /* NULL: cond's num_programs are the forward's grid; else a gather
                              * kernel's (write/gather.c): the forward's plus grid_add[k] along axis k */
} FuncFlag;
/* An input gradient of a backward kernel (its parameter) that the launch
 * overwrites entirely when `cover` holds for the gradient tensor's view
 * (and, when flag is not 0, the FuncFlag of that parameter holds: the
 * plain stores are taken): then the launcher does not zero-fill it.  One
 * per input gradient. */
typedef struct FuncCover {
    ValId param;
    ValId flag;
    Access *acc;
    const AccCover *cover; /* NULL: always zero-filled, because of why */
    const char *why;
} FuncCover;
/* The fold's one sum kernel of every input j (Program.sum): (part_j, d_j, span_j, rows_j, dense_j
 * for each j) [grid sum_j cdiv(span_j, FOLD_SUM_BLOCK)]: d_j += the sum of its rows
 * (FOLD_SUM_ROWS rows at a time, summed by a reduction, in row order); dense_j != 0: d_j = the
 * sum, stored at every element of the span. */
enum { FOLD_SUM_BLOCK = 64, FOLD_SUM_ROWS = 64, FOLD_CPU_PROGRAMS = 3, FOLD_ZERO_BLOCK = 1024 };
/* Elements before a `while` tape's slots: element 0 is its overflow flag. */
#define KAD_TAPE_HEAD 4
/* ------------------------------------------------------------------ */
/* write/gemm.c: deterministic operand gradients of a tiled matmul     */
/* ------------------------------------------------------------------ */

enum { GEMM_MAX_GROUP = 8 }; /* the most K iterations one program of an operand kernel owns */
/* The launch order of an operand kernel k: a 1-D grid of tiles x groups
 * (groups = cdiv(trips, R)); program p takes, within blocks of GEMM_ORDER
 * consecutive tile ids, first = p / (GEMM_ORDER * groups) * GEMM_ORDER,
 * rows = min(tiles - first, GEMM_ORDER), tile id first + (p % (GEMM_ORDER *
 * groups)) % rows and K group (p % (GEMM_ORDER * groups)) / rows: programs
 * running together share both operands in L2 (a bijection onto [0, tiles) x
 * [0, groups); each element's sum order is unchanged). */
enum { GEMM_ORDER = 8 };
/* The contraction chunk of the operand kernels (GemmOperand.chunk). */
enum { GEMM_CHUNK = 64 };
/* One operand gradient of the plan: kernel k (grid (tiles of its own id *
 * cdiv(trips, group), 1, 1), in GEMM_ORDER's order) writes d_<name> = bw param `slot` with plain stores:
 * those of the one-iteration kernel (grid (tiles, trips)), which are
 * disjoint when cond holds (NULL: always; symbols: its params, its grid). */
typedef struct GemmOperand {
    const char *name;
    int slot;
    int own;            /* 0: the program's id is u (loops over v), 1: v */
    int group;          /* R: the K iterations one program owns (grid (tiles * cdiv(trips, R), 1, 1)) */
    bool wide;          /* k computes them as one tile R times as wide along the K axis (one dot),
                         * not as R loop bodies (write/gemm.c, "Widening") */
    int chunk;          /* > 0: k and single sum over the other tile id's lanes in chunks of this many
                         * (one dot per chunk into the accumulator; write/gemm.c, "Chunks"); 0: whole */
    Func *k;
    Func *single;       /* when R > 1: the one-iteration kernel (grid (tiles, trips), named
                         * <k>_single), which the launcher runs instead of k when k's grid has
                         * fewer programs than the GPU has SMs (the same sums, bit for bit);
                         * else NULL */
    Access *acc;        /* of the one-iteration kernel (R = 1), whose stores k's are */
    const AccCond *cond;
    const AccCover *cover; /* what that kernel's store reaches over its grid (tiles, trips): when it
                            * covers d_<name>'s view, the launcher skips its zero-fill; or NULL */
} GemmOperand;
/* How the GEMM form of a backward runs (Program.gemm).  Every kernel takes
 * the backward's contract arguments, then kad_dacc (U * V * tile elements
 * of sdt), kad_tiles_u (U), kad_tiles_v (V).  first: the forward's grid,
 * stores each program's dacc tile at (u, v); then each operand kernel.
 * Valid for a launch when the programs map one to one onto [0, U) x [0, V)
 * through id[0], id[1] (checked per launch) and each operand's cond holds;
 * else the atomic backward (the Func itself) runs. */
typedef struct GemmPlan {
    Func *first;
    const TapeExpr *id[2];  /* u, v over the grid, program ids and int params */
    const TapeExpr *trips;  /* the K loop's iterations */
    int64_t tile;           /* elements of one dacc tile */
    Dtype sdt;              /* the scratch's dtype */
    int nargs;              /* the contract's arguments */
    const char *data;       /* the name of the tile the loop reads (dacc) */
    int n;
    GemmOperand op[2];
} GemmPlan;
/* ------------------------------------------------------------------ */
/* write/gather.c: a stencil's input gradient as a gather              */
/* ------------------------------------------------------------------ */

/* One gathered input gradient: kernel k (its params: the backward's
 * contract, params [0, plan_nargs)) runs on the forward's grid plus
 * grid_add[d] programs along each axis d and stores every element of
 * d_<name> that a site of the backward added into, once. */
typedef struct GatherIn {
    const char *name;
    int slot;            /* the backward's param d_<name> */
    Func *k;
    int64_t grid_add[3];
    int nsites;
    int flag;            /* the index in Program.flags of the launch condition k needs (its stores
                          * are distinct elements; when false, the backward's sites add with
                          * tl.atomic_add), or -1: always */
    Access *acc;         /* k's analysis, and the condition (NULL: none) */
    const AccCond *cond;
    const Inst *const *sites; /* ad_gather_check's: the sites in its bw */
    bool scatter;        /* not a gather: k adds the scattered sites' adjoints with atomic_adds
                          * after the backward stored the rest (ad_scatter_split); nsites of
                          * them, grid_add 0, flag -1 */
    Access *cover_acc;   /* a gather: what k stores at least (the site of offset 0 in the backward
                          * ad_gather_check read, analysed by cover_acc), or NULL with cover_why */
    const AccCover *cover;
    const char *cover_why;
} GatherIn;
typedef struct GatherPlan {
    int n;
    GatherIn *in;
    int main;            /* the backward kernel itself: 0 launched, 1 not (nothing left to do), 2 launched
                          * unless every gather's flag holds (then it has nothing left to do) */
} GatherPlan;

/* One host step.  j indexes the table of the Program that its kind names. */
typedef enum StepKind {
    STEP_GEMM,        /* the GEMM form (P->gemm) when the launch allows it: the operand gradients
                       * zeroed, the dacc kernel, each operand kernel; then the Program is done.
                       * When the launch does not allow it, the steps after it run */
    STEP_COPY,        /* output gradient params[P->cleared.v[j]] replaced by a private copy: the
                       * backward's stores read and clear it (the caller's is kept) */
    STEP_GUARDS,      /* the main kernel's launch conditions (P->guards): refuse a launch that
                       * breaks one */
    STEP_FLAG,        /* flag j (P->flags.v[j]) computed for this launch: an i1 argument */
    STEP_TAPE,        /* tape j (P->tapes.v[j]) allocated for this launch (its revolve plan or
                       * `while` overflow flag in its head) */
    STEP_TAPE_BUDGET, /* the tapes' bytes against the checkpointing budget */
    STEP_ZERO,        /* input gradient cover j (P->covers.v[j]): zero-filled unless the launch
                       * provably overwrites it.  The launcher's; the interpreter's callers pass
                       * zeroed gradients, so plan_run does nothing */
    STEP_SPREAD,      /* S, the programs each forward program's loop is dealt to (P->spread): an
                       * argument, and the main launch's grid[0] times S */
    STEP_LAUNCH,      /* the main kernel on the forward's grid (times S) */
    STEP_LAUNCH_UNLESS_GATHERED, /* the same, skipped when every gather's flag holds
                       * (GatherPlan.main == 2) */
    STEP_FOLD,        /* a folded launch (P->fold): the partials allocated, the main kernel on
                       * the folded grid, then the sum kernel P->sum over every input's rows */
    STEP_GATHER,      /* gather (or scatter) kernel P->gather->in[j] on the forward's grid plus
                       * its grid_add, when its flag holds (or it has none) */
    STEP_TAPE_CHECK,  /* tape j of a `while` loop: a launch that overflowed its capacity is an
                       * error (never a gradient from a partial tape) */
    STEP_COUNT
} StepKind;

typedef struct Step {
    int kind; /* StepKind */
    int j;    /* the index into the table the kind names; 0 otherwise */
} Step;

typedef struct Program {
    Arena *a;                   /* the Program's arena (plan_new's), which its steps grow in */
    Func *main;                 /* the backward kernel (or any kernel: a Program of one launch) */
    const FoldPlan *fold;       /* a folded backward (write/fold.c): main's fold loop over the
                                 * forward's programs and its hidden parameters, after the spread's
                                 * (the kernel emitters print them); else NULL */
    Func *sum;                  /* the fold's sum kernel (fold_sum_kernel), when fold */
    const GemmPlan *gemm;       /* the GEMM form of the matmul operand gradients (write/gemm.c), or NULL */
    const GatherPlan *gather;   /* input gradients written by kernels of their own after main
                                 * (write/gather.c, write/scatter.c), or NULL */
    const FuncSpread *spread;   /* main's loop the launcher may spread over more programs
                                 * (write/spread.c), or NULL */
    Vec(FuncGuard) guards;      /* main's launch conditions (access.c): STEP_GUARDS and the
                                 * launcher refuse a launch that breaks one */
    Vec(FuncFlag) flags;        /* main's i1 parameters after the contract's, computed per launch
                                 * (plain stores proven for it): STEP_FLAG; the kernel emitters make
                                 * them tl.constexpr */
    Vec(FuncCover) covers;      /* per input gradient: when the launcher need not zero-fill it */
    Vec(FuncTape) tapes;        /* main's scratch buffers for loops run backwards (ad_tape.c),
                                 * parameters after the flags */
    Vec(int) cleared;           /* output gradients (indices into main's params) its stores read
                                 * and clear: run on a private copy of the caller's */
    Vec(const char *) notes;    /* how loops are reversed (ad_gauge.c, write/spread.c): the header's
                                 * and `kad grad --report`'s */
    const char *trusted;        /* built with AdSpec.trusted and loading what the forward stored:
                                 * those buffers' names, comma-separated; else NULL (ad_trust.c) */
    Vec(Step) steps;            /* the host steps in order (plan_steps) */
} Program;

/* A Program of f alone (no plan data, no steps until plan_steps). */
Program *plan_new(Arena *a, Func *f);
/* (Re)builds P->steps from its plan data, in the order plan_run executes them.  The AD driver
 * and the parser call it once the plan data is final. */
void plan_steps(Program *P);
/* The arguments a caller passes: the contract (main's parameters without the flags, tapes, spread
 * and the fold's). */
int plan_nargs(const Program *P);
/* The index of P's first step of this kind, or -1. */
int plan_find_step(const Program *P, int kind);
/* A step's name, for messages and dumps ("launch", "fold", ...). */
const char *plan_step_name(int kind);
/* The kernel a launch step runs (STEP_LAUNCH*, STEP_FOLD: main; STEP_GATHER: the gather kernel);
 * NULL for a host-only step.  STEP_GEMM launches several: P->gemm's. */
const Func *plan_step_kernel(const Program *P, const Step *s);
/* P's companion kernels in the order its text prints them: the fold's sum kernel, the GEMM form's
 * dacc kernel and each operand's kernel (then its one-iteration kernel), the gather and scatter
 * kernels.  Returns how many; out (room for that many) may be NULL. */
int plan_companions(const Program *P, const Func **out);
/* The programs a STEP_GATHER kernel adds to the forward's grid along each axis (else 0). */
void plan_step_grid_add(const Program *P, const Step *s, int64_t out[3]);

/* run.c: runs P's steps on the interpreter for the forward's grid and the contract's arguments
 * (plan_nargs of them).  Errors as interp_run's. */
bool plan_run(const Program *P, const int64_t grid[3], const InterpArg *args, int nargs, InterpMode mode,
              Diags *d);

/* text.c: the textual form of a Program (docs/IR.md, "Programs"): the main kernel's IR with its
 * tape(...), spread(...) and fold(...) annotations (ir_print_plan), each companion kernel's IR
 * (plan_companions' order), then, unless P is one kernel launched once, `plan { ... }`: guards,
 * flags, covers, cleared gradients, the sum kernel, the GEMM form, gathers, notes, trusted
 * buffers, steps. */
void plan_print(Buf *b, const Program *P);
char *plan_to_string(Arena *a, const Program *P);
/* Parses that text into a Program: its kernels (the companions read from the text, not rebuilt),
 * its plan data (conditions over one Access of the main kernel), its steps (the plan's, else
 * plan_steps').  print(parse(print(P))) == print(P).  NULL after errors in d. */
Program *plan_parse(Arena *a, Diags *d, const char *file, const char *text);

/* tape.c: a Program's tapes on the host (planned by ad_tape.c): trip counts bounded and printed,
 * a launch's tape sizes, revolve's schedule, the tapes' descriptions. */
/* Bounds e over a launch's programs (iargs: by param index; grid): every
 * value e takes in a program lies in [*lo, *hi]; false on a possible
 * division by zero or an overflow. */
bool tape_expr_bound(const TapeExpr *e, const int64_t *iargs, const int64_t grid[3], int64_t *lo, int64_t *hi);
/* Whether e names tl.program_id (then its host form bounds it). */
bool tape_expr_has_pid(const TapeExpr *e);
/* e as a Python expression: int parameter p as ARGS["p"] (names from f;
 * bare p when args is NULL), the grid as GRID[k] (tl.num_programs(k) when
 * grid is NULL), tl.program_id(k) as tl.program_id(k) when grid is NULL,
 * else the expression is in interval form: calls of the helpers of
 * kad_py_tape_interval (src/emit/py/tape.py, printed by the launcher) on
 * (lo, hi) pairs, the program id (0, GRID[k] - 1). */
const char *tape_expr_host(Arena *a, const TapeExpr *e, const Func *f, const char *args, const char *grid);
/* The number of elements of f's tape j for a launch (0 when the loop
 * runs no iteration); false after a located error in d. */
bool tape_elems(const Program *P, int j, const int64_t *iargs, const int64_t grid[3], int64_t *out, Diags *d);
/* Binomial checkpointing (revolve) of a taped `for` loop under a tape
 * budget (docs/AD.md, "Bounded memory").  A plan is a list of rows of
 * RV_FIELDS int32 the backward kernel interprets in order, with the
 * loop's carried values in registers at iteration `cur` (0 and the loop's
 * initial values at the start); a row does, in this order: */
enum {
    RV_RESTORE = 0, /* >= 0: load the registers from this slot, which holds iteration RV_AT: cur = RV_AT */
    RV_AT = 1,
    RV_ADVANCE = 2, /* run the body this many times from cur (recomputing), cur += it */
    RV_STORE = 3,   /* >= 0: store the registers to this slot */
    RV_REVERSE = 4, /* 1: the adjoint of iteration cur (its body recomputed from the registers) */
    RV_FIELDS = 5
};
/* C(s + t, s): the most iterations s checkpoint slots reverse with each
 * iteration advanced at most t times (saturates at INT64_MAX). */
int64_t revolve_beta(int64_t s, int64_t t);
/* The smallest t with revolve_beta(s, t) >= trips (s >= 1). */
int64_t revolve_reps(int64_t trips, int64_t s);
/* The plan reversing iterations trips - 1 .. 0 (each exactly once, in
 * that order) with s >= 1 slots (slot 0: the initial values) and
 * t = revolve_reps(trips, s): its rows written to out (RV_FIELDS int32 each) when
 * out is not NULL; returns the number of rows, *advanced the iterations
 * the plan recomputes (may be NULL); -1 when out of memory. */
int64_t revolve_plan(int64_t trips, int64_t s, int32_t *out, int64_t *advanced);
/* Revolve's choice for a launch: the most slots s <= trips whose tape
 * (the plan's head, 1 + RV_FIELDS * rows elements of esz bytes, then s slots of
 * slot_bytes per program) fits in budget bytes; false when even one slot
 * does not (or out of memory).  *rows: the plan's rows. */
bool revolve_fit(int64_t trips, int64_t programs, int64_t slot_bytes, int64_t esz, int64_t budget, int64_t *s,
                 int64_t *rows);
/* f's revolve tape j for a launch: its elements (the plan's head: the
 * number of rows, then the rows, as floats; then s slots per program),
 * s, its rows, and the plan (malloc'ed, RV_FIELDS * rows int32, the caller frees) when plan
 * is not NULL; each may be NULL.  Each checkpointed tape of f gets an equal
 * share of the budget.  False after a located error in d. */
bool tape_revolve_of(const Program *P, int j, const int64_t *iargs, const int64_t grid[3], int64_t *elems,
                     int64_t *slots, int64_t *nrows, int32_t **plan, Diags *d);
/* The description of f's tape j (header and `kad grad --report`): what is
 * taped, its bytes, trip count or capacity, what is recomputed, the
 * checkpoint schedule and recompute factor; lname: who allocates it. */
const char *tape_describe(Arena *a, const Program *P, int j, const char *lname);
/* `kad grad --report` for backward P: one paragraph per tape. */
const char *tape_report(Arena *a, const Program *P);

/* fold_sum.c: the fold's one sum kernel of the n inputs in (their dt and pdt; the contract: FOLD_SUM_BLOCK
 * above), Program.sum. */
Func *fold_sum_kernel(Arena *a, const char *name, const FoldInput *in, int n, Loc loc);

#endif
