/* autodiff.h -- what the other stages call of AD: reverse mode
 * (ad_backward: a backward Program) and forward mode (ad_forward), what to
 * differentiate (AdSpec), the saving forward (ad_save.c), the one-writer
 * check (ad_race.c), and the few facts of AD's analysis the API asks for.
 *
 * Included by AD's files and by the later stages (the emitters, the
 * checker, kad.c, main.c).  What only AD's files share is ad/ad_int.h
 * (the state of one differentiation, the strategies' entry points) and
 * ad/ad.h (the rules' builders and the sweeps' helpers).
 */
#ifndef KAD_AUTODIFF_H
#define KAD_AUTODIFF_H

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "plan/plan.h"

/* ------------------------------------------------------------------ */
/* ad_save.c: loop results the forward saves for the backward          */
/* (docs/AD.md, "Saved loop results")                                  */
/* ------------------------------------------------------------------ */

/* The values the saving forward stores: results of the forward's top-level
 * `for` loops, by ValId, one after the other in the program's slot,
 * row-major, in fp32 (fp16/bf16 widened exactly).  The buffer holds slot
 * elements per program, program p's at p * slot with p = pid0 + G0 * (pid1
 * + G1 * pid2).  ValIds are the forward's: the kernel AD differentiates
 * (the forward plus the kad_saved parameter, gauge_rewrite's copy of it)
 * keeps them, and a loop gauge_rewrite splits in two defines the original
 * loop's results with the original ValIds. */
typedef struct SavePlan {
    ValId *val;
    Type *ty;
    int64_t *off;
    int n;
    int64_t slot;
} SavePlan;
/* The parameter a saving (or loading) kernel takes the buffer by. */
#define KAD_SAVE_PARAM "kad_saved"

/* The spread's parameter (FuncSpread, write/spread.c): S, the programs a forward program's loop is
 * dealt to. */
#define KAD_SPREAD_PARAM "kad_spread"
/* The lanes of f's one 1-D tile when f has no loop and computes lane by lane
 * (write/spread.c's lanewise: elementwise ops, memory accesses, scalars
 * broadcast); 0 otherwise (also when f has no tile). */
int32_t spread_lane_width(const Func *f);
/* The plan of fwd (verified): NULL when nothing is worth saving. */
const SavePlan *save_plan(Arena *a, const Func *fwd);
/* fwd with one more parameter, KAD_SAVE_PARAM (*fp32), last; with stores,
 * the saving forward: each planned value stored after its loop. */
Func *save_kernel(Arena *a, const Func *fwd, const SavePlan *p, bool stores);
/* ------------------------------------------------------------------ */
/* backward.c: reverse-mode AD (see docs/AD.md)                       */
/* ------------------------------------------------------------------ */

/* What to differentiate, by pointer-parameter name. */
typedef struct AdSpec {
    const char *const *wrt;  /* differentiated inputs (only read by the kernel) */
    int nwrt;
    const char *const *outs; /* differentiated outputs (only written by the kernel) */
    int nouts;
    int mutate;              /* tests only: AD_MUTATE_* deliberately breaks a rule */
    int64_t while_cap;       /* the tape capacity of a `while` loop without a bound kad finds
                              * (0: KAD_WHILE_CAP_DEFAULT) */
    int64_t tape_budget;     /* bytes of tape per launch above which taped `for` loops are
                              * checkpointed (0: no budget) */
    bool atomics;            /* accumulate every input gradient with atomic_add (KAD_GRAD_ATOMICS) */
    bool *grad_rmw;          /* out, optional (nwrt entries): d_<wrt[j]> is added by read-modify-writes
                              * private to each program (several load sites; grad_when may hold
                              * their condition) */
    const char **grad_write; /* out, optional (nwrt entries): ad_backward sets entry j to NULL
                              * when d_<wrt[j]> is written with plain tl.store, else to why it
                              * is accumulated with tl.atomic_add */
    const char **grad_when;  /* out, optional (nwrt entries): where grad_write[j] is set, the
                              * Python condition under which the backward still writes
                              * d_<wrt[j]> with plain stores (checked at run time), or NULL */
    bool *grad_first;        /* out, optional (nwrt entries): with grad_rmw, the site the backward
                              * reaches first stores its gradient without reading (first_writer) */
    bool trusted;            /* the outputs and scratch buffers hold what the forward stored (the
                              * caller checked): the backward loads what ad_trust.c plans */
    int fold_zero_block;     /* the tile of a fold's loop zeroing its rows of partials (0:
                              * FOLD_ZERO_BLOCK); the CUDA C module passes its lane count, so that
                              * the loop runs one element per thread */
    const SavePlan *save;    /* the forward's last parameter is KAD_SAVE_PARAM, holding what the
                              * saving forward stored: the primal sweep loads the planned loops'
                              * results instead of running them (NULL: recompute everything) */
} AdSpec;
enum {
    AD_MUTATE_NONE = 0,
    AD_MUTATE_EXP = 1,      /* d(exp x) = d*x instead of d*exp(x) */
    AD_MUTATE_MUL = 2,      /* d(a*b)/da = d*a instead of d*b */
    AD_MUTATE_MAX = 3,      /* max/min reductions: d to every lane, not the extremal ones */
    AD_MUTATE_WHERE = 4,    /* where(c, a, b): the two sides' adjoints swapped */
    AD_MUTATE_CUMSUM = 5,   /* cumsum: the adjoint scans in the same direction */
    AD_MUTATE_MAX_DROP = 6, /* scalar max/min reductions: adjoint dropped without the
                               shift-invariance proof */
    AD_MUTATE_TAPE = 7,     /* taped loops: the reverse loop reads the tape's slots in forward order */
    AD_MUTATE_LIBM = 8,     /* libdevice functions (ad_libm_partial): each partial derivative doubled */
    AD_MUTATE_STRONG_ZERO = 9, /* no strong zeros (ad_finite.c): 0 * inf stays NaN, both modes */
    AD_MUTATE_SCAN_JAC = 10,   /* the general scan rule: its Jacobian J_a used untransposed */
};
/* Testing aid: the AD_MUTATE_* of a name ("exp", "mul", "max", "where",
 * "cumsum", "max_drop", "tape", "libm", "strong_zero"); -1 if unknown.  check_gradients applies the one
 * CheckConfig.mutate names (the CLI and the Python tests take it from
 * KAD_TEST_MUTATE; docs/AD.md). */
int ad_mutation_by_name(const char *name);

/* The backward kernel as kad hands it out: ad_reverse, then the simplify
 * pass (CSE, DCE: the primal sweep's dead stores' operands go away), with
 * ir_verify before and after.  NULL after an error. */
Program *ad_backward(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec);
/* Splits "x_ptr, w_ptr" at commas into trimmed names; returns the count. */
int ad_split_names(Arena *a, const char *s, const char ***out);

/* ------------------------------------------------------------------ */
/* sweep_fwd.c: forward-mode AD (JVP; see docs/AD.md, "Forward mode")   */
/* ------------------------------------------------------------------ */

/* The jvp kernel of fwd: one pass computing fwd's outputs and their
 * tangents.  Params: fwd's runtime params, then t_<x> per input in spec->wrt
 * (a name also in spec->outs, updated in place, once, here), then t_<y> per
 * output only in spec->outs, each in fwd's parameter order; fwd's
 * constexprs.  spec's mutate/atomics/out fields are ignored.  Simplified
 * and verified; NULL after located errors (what forward mode refuses). */
Func *ad_forward(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec);

/* ------------------------------------------------------------------ */
/* ad_analysis.c: the parameters' use, the gradient contract          */
/* ------------------------------------------------------------------ */

/* How the kernel uses pointer parameter i: AD_ACCESS_LOAD if some load may
 * read through it, AD_ACCESS_STORE if some store or atomic may write
 * through it (a pointer selected among parameters counts for each of them,
 * one of ambiguous provenance for every pointer parameter). */
enum { AD_ACCESS_LOAD = 1, AD_ACCESS_STORE = 2 };
int ad_param_access(Arena *a, const Func *f, int i);
/* The number of names in spec->wrt not also in spec->outs (in-place names
 * get one gradient parameter, among the outputs'). */
int ad_spec_nwrt_only(const AdSpec *spec);
/* ------------------------------------------------------------------ */
/* ad_race.c: one writer per element of a differentiated output        */
/* ------------------------------------------------------------------ */

#define KAD_RACE_PARAM "kad_race_info" /* the check kernel's last parameter: 2 i32 per site */
/* A store into a checked output: the forward's instruction and its parameter. */
typedef struct RaceSite {
    const Inst *store;
    int param; /* the parameter it stores into, or -1: a pointer selected among several */
    const char *why_programs, *why_lanes; /* a collision the analysis found (its witness), or NULL */
    bool lanes_proven; /* its lanes write distinct elements in every launch: the check kernel's
                        * own-code hits are then iterations overwriting (ordered), not a race */
} RaceSite;
typedef Vec(RaceSite) RaceSiteVec;
/* Whether a launch of fwd may write one element of a differentiated output from two
 * programs, or from two lanes of one store (docs/AD.md, "One writer per element"). */
typedef struct RacePlan {
    RaceSiteVec sites;    /* the stores into the outputs, in program order (site s = index) */
    uint64_t tagged;      /* bit p: parameter p's buffer is replaced by a tag buffer (the outputs the
                           * sites store into, and the other candidates of a selected pointer) */
    Access *acc;          /* fwd's analysis: the conditions' symbols */
    AccCondVec skip;      /* no check when all of these hold for the launch (and !always) */
    bool always;          /* some store kad cannot prove: check (on the first launch of a key) */
    Func *kernel;         /* the check kernel: fwd's runtime parameters (the outputs' as *i64 tag
                           * buffers laid out like them), then KAD_RACE_PARAM; NULL: why */
    const char *why;      /* why there is no check kernel (a launch that needs one is refused) */
} RacePlan;
/* The plan for a backward of fwd w.r.t. spec: NULL when every store into spec's outputs is
 * proven to have one writer per element for every launch. */
RacePlan *race_plan(Arena *a, const Func *fwd, const AdSpec *spec);
/* Whether this launch needs no check: every condition holds (iargs: the int parameters). */
bool race_skip(const RacePlan *p, const int64_t *iargs, const int64_t grid[3]);
/* The refusal for site s (programs: two programs met there; else two lanes or iterations). */
const char *race_message(Arena *a, const Func *fwd, const RacePlan *p, int s, bool programs);
/* The check of one launch of fwd on the interpreter (args: fwd's, in mode's layout): true
 * when no element has two writers; else false after a located error. */
bool race_run(const Func *fwd, const RacePlan *p, const int64_t grid[3], const InterpArg *args, int nargs,
              InterpMode mode, Diags *d);

#endif
