/* ad_int.h -- the AD folder's shared state: one differentiation's facts
 * and maps (Ad), its tapes (TapeLoop), strong zeros, trusted values, and
 * what AD's files call across files (the analysis, the ways of writing
 * an input gradient in write/, tapes, the online-softmax rewrite, the
 * saved values' loads, libdevice partials).
 *
 * Included by src/ad/ files only (other stages see ad/autodiff.h).
 * ad/ad.h, the rules' and sweeps' toolkit, includes it; ad_gauge.c,
 * ad_tape.c, ad_libm.c and the other files that do not use that toolkit
 * include this header alone (they define statics named like its short
 * helpers: fty, is_float, R_NONE, MUL, ...).
 */
#ifndef KAD_AD_INT_H
#define KAD_AD_INT_H

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "plan/plan.h"
#include "ad/autodiff.h"

/* ------------------------------------------------------------------ */
/* ad_tape.c: a loop's trip count as a host expression                */
/* ------------------------------------------------------------------ */

/* A TapeExpr node (ad_tape.c), with x + 0, x - 0, x * 1, x / 1, cdiv(x, 1) and 0 + y folded. */
const TapeExpr *tape_expr_new(Arena *a, int op, int64_t v, const TapeExpr *x, const TapeExpr *y);
/* v (an int scalar of f; def: its defining instructions by ValId, NULL for a parameter or a
 * region's) as an expression of f's int arguments, the grid and the program id; NULL with
 * *why (what stops it) when it is computed from something else (a load, a loop's variable). */
const TapeExpr *tape_expr_of(Arena *a, const Func *f, const struct Inst *const *def, ValId v, const char **why);
/* The TX_ op of an integer IR op the host evaluates (add, sub, mul, div, rem, maximum,
 * minimum), else -1. */
int tape_expr_op(int op);

/* ------------------------------------------------------------------ */
/* write/spread.c: a loop spread over more programs                   */
/* ------------------------------------------------------------------ */

/* The lanes of a spread loop's tile after a split: a wider tile whose body
 * is lane by lane is split into tiles of this many. */
#ifndef KAD_SPREAD_TILE
#define KAD_SPREAD_TILE 8192
#endif
/* The lanes of each part a loop-free lane-by-lane backward on a wider tile
 * runs its tile in (write/spread.c, split_lanes). */
#ifndef KAD_LANE_TILE
#define KAD_LANE_TILE 1024
#endif
/* Spreads P's main loop when the rule of write/spread.c holds (P->spread set), else leaves it. */
void ad_spread(Arena *a, Program *P);

/* ------------------------------------------------------------------ */
/* ad_save.c: what the backward loads of the saved values             */
/* ------------------------------------------------------------------ */

/* For the top-level `for` loop fw->body->insts.v[k]: per result, its offset
 * in the slot (-1: not saved, and unused after the loop), or NULL when the
 * loop must run (a result used after it is not saved, or none is). */
const int64_t *save_offsets(Arena *a, const SavePlan *p, const Func *fw, int k);
/* The offset (i64, elements) of this program's slot: program * slot, or
 * with an iteration number iter (a tape's) (iter * programs + program) *
 * slot, where program = pid0 + G0 * (pid1 + G1 * pid2). */
ValId save_slot_at(Func *f, Block *b, ValId iter, int64_t slot, Loc loc);
/* Pointers to the elements of a value of type vt at offset off from base:
 * row-major, a scalar pointer for a scalar. */
ValId save_elems(Func *f, Block *b, ValId base, Type vt, int64_t off, Loc loc);

/* ------------------------------------------------------------------ */
/* write/plain.c: how each input gradient is written                  */
/* ------------------------------------------------------------------ */

/* Decides ad->plain (and why/when/cond/fold_axes) per differentiated input
 * of ad (after ad_analyze; ad->plain etc. allocated): see write/plain.c. */
typedef struct Ad Ad;
void ad_plain_inputs(Ad *ad);

/* ------------------------------------------------------------------ */
/* write/fold.c: deterministic shared gradients (grid folding, partials) */
/* ------------------------------------------------------------------ */

/* Folds bw = P->main (ad_backward's, before verification), its plan P->fold, along the grid axes `axes` (bits) for
 * the n inputs whose gradient parameters are params[slot[j]] (names[j]: the
 * inputs' names): see write/fold.c.  False, bw unchanged, when a gradient
 * pointer flows where the fold cannot follow it. */
bool ad_fold(Arena *a, Program *P, unsigned axes, const int *slot, const char *const *names, int n, int zero_block);
/* Marks a folded backward's fold loop for Triton's software pipelining
 * (tl.range num_stages=3) where that is safe and fits (write/fold.c); after
 * the backward's last simplify. */
void ad_fold_pipeline(Arena *a, const Program *P);
/* Site rows (Ad.plain 6 and 7), in bw = P->main and its plan P->fold: the gradient of the input
 * whose gradient parameter is params[slot] (x: its name) is added at several
 * sites, each adding to distinct elements over the whole launch, but two
 * sites may meet across programs (a stencil's taps).  Each site k then
 * stores into row k of a partials buffer (plain stores: no atomics), and
 * the input's sum kernel adds the rows in order.  flag: a bw i1 param, or
 * 0; when it is false at run time, the sites atomic_add into row 0.  Run
 * before ad_fold (which extends the plan).  False, bw unchanged, when a
 * gradient pointer flows where the rewrite cannot follow it. */
bool ad_site_rows(Arena *a, Program *P, int slot, const char *name, ValId flag);
/* ------------------------------------------------------------------ */
/* ad_gauge.c: online-softmax loops reversed by a second pass           */
/* ------------------------------------------------------------------ */

/* fwd with each `for` loop of online-softmax form (a running max m, values c starting at 0
 * rescaled by exp(m - m_new) plus terms linear in exp(s - m_new); docs/AD.md, "Online
 * softmax: a second pass instead of a tape") replaced by a loop computing the max alone and
 * a loop accumulating the c with the final max, in a copy allocated in a, with one note per
 * rewritten loop in *notes (*nnotes of them: the backward's Program.notes); fwd itself, and no
 * notes, when no loop matches.  Only AD sees the copy. */
const Func *gauge_rewrite(Arena *a, const Func *fwd, const char ***notes, int *nnotes);
/* In a backward made from such a copy: each pair of loops 1 and 2 whose primal copies
 * stand in one block, loop 1 writing nothing (its max not taped) and both flat, becomes one
 * loop computing the max and loop 2's accumulators rescaled by it, as the forward's online
 * loop did: one pass over the data instead of two (the reverse of loop 2 is untouched).
 * Before the backward's simplify.  False only without memory. */
bool ad_gauge_fuse(Func *f);

/* ------------------------------------------------------------------ */
/* ad_tape.c: tapes for loops with non-linear loop-carried values       */
/* ------------------------------------------------------------------ */

/* A `for` loop of the forward whose reverse sweep runs backwards, reading
 * the carried values it needs from a tape (docs/AD.md, "Tapes"). */
typedef struct TapeLoop {
    const struct Inst *loop; /* the forward's `for` */
    uint8_t *taped;          /* by carried slot: recorded on the tape */
    uint8_t *linear;         /* by carried slot: a linear accumulator (ad->chain), no tape */
    uint8_t *affine;         /* by carried slot: an int or pointer advanced by a loop-invariant
                              * step (or unchanged): recomputed as init + t * step, no tape */
    ValId *delta;            /* by carried slot (affine): the fw value of its step, 0: unchanged */
    uint8_t *neg;            /* by carried slot (affine): advanced by -delta (c - d: an int counted down) */
    const struct Inst **inner; /* by carried slot (affine): the `for` loop in the body that advances it by
                                * delta per inner iteration (its step: delta times that loop's trip
                                * count, bounds invariant), or NULL: the body advances it by delta */
    int64_t *off;            /* by carried slot (taped): its first element in a tape slot */
    int64_t slot;            /* elements per (iteration, program) */
    Dtype dt;                /* the tape's dtype: fp64 when a taped value is, else fp32 */
    const TapeExpr *trips;   /* the loop's trip count for the host */
    const char *what;        /* the taped values' names */
    ValId param;             /* bw: the tape parameter (0 until the emission makes it) */
    /* a `while` loop's tape (ad_tape_plan_while): trips is a capacity, not a trip count */
    bool is_while;
    const char *bound;       /* how the capacity was found (header, report) */
    ValId cap_ub, cap_init;  /* fw: capacity = cdiv(max(cap_ub + cap_plus - cap_init, 0), cap_step); */
    int64_t cap_step, cap_plus; /* cap_ub 0: the constant cap_const */
    int64_t cap_const;
    ValId count, capv;       /* bw: the latest primal copy's iteration count (a result) and capacity */
    const char *recomputed, *linear_names; /* names for the report, or NULL */
    bool ckpt;               /* checkpointed (AdSpec.tape_budget): segments of k = ceil(sqrt(trips)) */
    ValId kv;                /* bw (ckpt): the latest primal copy's segment length */
    bool revolve;            /* ckpt by binomial checkpointing (a plan in the tape's head) */
    ValId headv;             /* bw (revolve): the elements before the slots (1 + RV_FIELDS * rows), i64 */
} TapeLoop;
/* The default capacity of a `while` loop's tape when kad finds no bound
 * (AdSpec.while_cap overrides it). */
#define KAD_WHILE_CAP_DEFAULT 1024
/* Plans the tape of `for` loop in (ad_analysis's validation, after the
 * loop's body; linear: by carried slot, the linear accumulators; rep: a
 * store under it whose writes the iterations order, which alone puts the
 * loop on a tape, for the messages; at: the tape's index in Ad.tapes,
 * program order).  False after a located error saying why kad cannot
 * tape it. */
bool ad_tape_plan(struct Ad *ad, const struct Inst *in, const uint8_t *linear, const struct Inst *rep, int at);
/* Plans the tape of `while` loop in, every differentiated carried float
 * recorded, its capacity a bound kad extracts from the condition (a
 * counter compared with a loop-invariant int) or spec->while_cap. */
bool ad_tape_plan_while(struct Ad *ad, const struct Inst *in, const struct Inst *rep, int at);
/* Is fw value v the same in every iteration of the loop whose body's
 * values ad_mark_defs stamped with id (defined outside it, or computed
 * inside by pure ops from such values only)? */
bool ad_tape_invariant(struct Ad *ad, ValId v, int id);
/* The tape of fw loop in, or NULL when it has none. */
TapeLoop *ad_tape_of(struct Ad *ad, const struct Inst *in);

/* ------------------------------------------------------------------ */
/* ad_analysis.c, ad_validate.c: what AD differentiates and refuses     */
/* ------------------------------------------------------------------ */

/* What a pointer parameter is to AD.  AD_ROLE_INOUT: named both in wrt and
 * in outs, a buffer the kernel updates in place (docs/AD.md, "In-place
 * buffers"): read like an input (its pre-launch value), written like an
 * output, one gradient buffer d_<name> for both. */
enum { AD_ROLE_NONE, AD_ROLE_IN, AD_ROLE_OUT, AD_ROLE_INOUT };
static inline bool ad_role_reads(int role) { return role == AD_ROLE_IN || role == AD_ROLE_INOUT; }
static inline bool ad_role_writes(int role) { return role == AD_ROLE_OUT || role == AD_ROLE_INOUT; }

/* The state of one differentiation (ad_reverse): the facts ad_analyze
 * computes about fw, then the maps sweep_rev.c's sweeps fill.  Arrays "by
 * ValId" are indexed by fw values (nvals entries). */
/* Strong zeros (ad_finite.c; docs/AD.md, "Untaken branches: exact zeros").
 * What is KNOWN of a forward value, lane by lane (0: nothing): */
enum {
    VK_FIN = 1,  /* finite (no inf, no NaN) */
    VK_NOHI = 2, /* no +inf, no NaN (finite or -inf) */
    VK_NZ = 4,   /* never +-0 */
    VK_NN = 8,   /* never < 0 */
    VK_LE0 = 16, /* never > 0 */
    VK_NONAN = 32, /* never NaN (may be +-inf) */
    VK_FINITE = VK_FIN | VK_NOHI | VK_NONAN,
    VK_ALL_INT = VK_FINITE, /* integers, booleans, pointers */
};
typedef struct AdFinite {
    const uint8_t *k; /* by ValId: VK_*; NULL: strong zeros off */
    int n;            /* values covered (f->vals.n) */
} AdFinite;
/* The facts of every value of f (a forward walk, loops and combine regions
 * to a fixpoint; loaded data and parameters are finite). */
AdFinite ad_value_facts(Arena *a, const Func *f);
/* May the partial derivative of in's result with respect to operand k be
 * non-finite?  Then the rules of both modes make operand k's contribution
 * exactly 0 where the incoming adjoint (tangent) is exactly 0.  The one
 * list per op kind: a new op with a rule that can be non-finite adds its
 * case there.  False when fi is NULL or fi->k is (strong zeros off). */
bool ad_partial_unsafe(const AdFinite *fi, const Inst *in, int k);

/* ad_trust.c: a forward value the trusted backward (AdSpec.trusted) loads from the buffer the
 * forward stored it in, instead of recomputing it (docs/AD.md, "Trusted saved outputs"). */
enum {
    TRUST_STAT,       /* a scalar stored as it is: its primal is the load; its rule as written */
    TRUST_RECIP,      /* y = 1 / w, loaded: dw = -dy * y * y */
    TRUST_RSQRT,      /* y = 1 / sqrt(w) or rsqrt(w), loaded: dw = -dy * y^3 / 2 */
    TRUST_SOFTMAX,    /* y = exp(w) / sum(exp(w)) (exp2: scale ln 2), loaded: dw = scale * y * (dy - sum(dy*y)) */
    TRUST_LOGSOFTMAX, /* y = w - log(sum(exp(w))), loaded: dw = dy - exp(y) * sum(dy) */
};
typedef struct TrustVal {
    int kind;          /* TRUST_* */
    ValId v;           /* the forward value */
    ValId w;           /* RECIP, RSQRT, SOFTMAX, LOGSOFTMAX: the operand its rule gives the adjoint */
    ValId mask;        /* the store's mask, or 0 */
    const Inst *store; /* the one store of v into its buffer */
    const Block *block; /* the block holding v's definition and its store */
    int axis;          /* SOFTMAX, LOGSOFTMAX: the reduced axis */
    bool keep;         /* ... reduced with keep_dims */
    double scale;      /* SOFTMAX: 1 (exp) or ln 2 (exp2), times the constants w was scaled by
                        * on its way from w's operand (shifted); LOGSOFTMAX: those constants */
    bool shifted;      /* w is replaced by the operand a of w = (a - bcast(row value)) * c: the
                        * row value's adjoint is exactly zero (shift invariance) */
    double other;      /* the load's value off the mask: 0, or -inf (LOGSOFTMAX) */
    int narrow;        /* SOFTMAX, LOGSOFTMAX stored through a float cast to a narrower type (bf16,
                        * fp16): that type (the load returns v rounded to it, cast back), else 0 */
} TrustVal;

typedef struct Ad {
    Arena *a;
    Diags *d;
    const Func *fw;
    const AdSpec *spec;
    Program *P;                /* the backward being built: its main kernel is bw (below) */
    /* facts (ad_analysis.c) */
    int nvals;                 /* fw->vals.n: size of the per-value arrays */
    int *role;                 /* by fw param index: AD_ROLE_* */
    int *root;                 /* by ValId: 0 none, p+1 derives from param p, -1 ambiguous
                                * (read from memory), <= -2 one of several params (psets) */
    uint8_t *varied;           /* by ValId: depends on a differentiated input */
    uint8_t *useful;           /* by ValId: reaches a differentiated output */
    uint8_t *pinned;           /* by ValId: kept not useful (shift-invariant maxima), or NULL */
    uint8_t *chain;            /* by ValId: on a loop's linear-accumulator chain */
    int *nuses;                /* by ValId: operand uses anywhere */
    const Inst **def;          /* by ValId: defining instruction (NULL: param) */
    uint8_t *stored;           /* by param index: some store/atomic writes through it */
    uint8_t *cleared;          /* by param index: an output stored at several sites whose writes may
                                * meet (outside loops): its stores read their gradient and clear it,
                                * in reverse order, from a private copy (Program.cleared) */
    const Inst **first_store;  /* by param index: the first tl.store through it, or NULL */
    const Inst **first_atomic; /* by param index: the first atomic_add through it, or NULL */
    int *stamp;                /* by ValId: scratch marks (ad_mark_defs) */
    int gen;                   /* the last generation handed out for stamp/seen */
    bool changed;              /* facts fixpoint: something changed this round */
    Vec(uint8_t *) psets;      /* provenance sets: root -2 - s is psets.v[s], nparams flags */
    /* emission (sweep_rev.c, rules_rev.c, tape_rev.c) */
    Func *bw;
    ValId *pm;   /* by ValId: its primal copy in the current bw scope */
    ValId *sm;   /* by ValId (pointers): its shadow (gradient-buffer pointer) */
    ValId *vm;   /* by ValId (pointers selected among params, some without a
                  * gradient): i1 tile, true where the shadow is real; 0: everywhere */
    ValId *adj;  /* by ValId: accumulated adjoint (0 = zero so far) */
    ValId *grad; /* by param index: its gradient param in bw, or 0 */
    TrustVal **trust; /* by fw ValId (AdSpec.trusted): what the backward loads (ad_trust.c), or NULL */
    ValId saved_base; /* bw: this program's slot of the saved loop results (AdSpec.save), once made */
    int *seen;   /* by ValId: scratch marks (collect_outside) */
    uint8_t *plain;    /* by param index: input gradient written with plain stores
                        * (1), or with them when flag[i] holds, else atomics (2), or
                        * summed through per-program partials (3, write/fold.c), or added
                        * by read-modify-writes private to the program (4; when flag[i]
                        * holds, else atomics: 5), or stored per site into rows of
                        * partials (6; when flag[i] holds, else atomics: 7; ad_site_rows) */
    const char **why;  /* by param index (inputs): why atomics, or NULL */
    const char **when; /* by param index (plain 2): the condition as Python */
    AccCondVec *cond;  /* by param index (plain 2, 5, 7): the conditions (all must hold) */
    ValId *flag;       /* by param index (plain 2): bw i1 scalar, the condition */
    const AccCover **cover; /* by param index (plain 1, 2; 4, 5 with first): what its one load site reaches
                             * (access_cover), or NULL; dropped when adj_load does not store it */
    uint8_t *wrote;    /* by param index (plain 1, 2): adj_load stored its gradient with the
                        * load's own address and mask */
    const char **cover_why; /* by param index (plain 1, 2): why cover is NULL */
    const Inst **first; /* by param index (plain 4, 5): the earliest load of the site the backward
                         * runs before every other site, writing each element once
                         * (first_writer): its adjoint is stored without reading d_<x>, and
                         * cover describes what it reaches; or NULL */
    int64_t *rmw_lanes; /* by param index (plain 4, 5): L when every element of d_<x> the program
                         * touches is touched by one lane of its rank-1 tiles of L lanes only
                         * (access_lane_private): the barriers around its read-modify-writes
                         * then carry L (`barrier {lanes = L}`), which a backend that runs each
                         * lane as one thread in program order may drop; else 0 */
    unsigned fold_axes; /* plain 3 (summed through partials, write/fold.c): the grid axes folded, or 0 */
    uint8_t *scat;     /* by fw ValId (a load's result), or NULL (not asked for): a scattered site
                        * (write/scatter.c, scatter_split): adj_load adds its adjoint with an atomic_add
                        * marked AD_SCATTER_MARK, which ad_scatter_split moves into a kernel run
                        * after the backward */
    Access *acc;       /* fw's access analysis, or NULL */
    Vec(FuncGuard) guards; /* launch conditions the backward needs (check_loop_store) */
    Access *vacc;          /* the access analysis of fw for the validation's proofs, once made */
    int nrev;              /* stores whose enclosing loops must run backwards (need_reverse) */
    int varstep_loops;     /* `for` loops of a step not constant around the block being validated */
    const Inst *rev_store; /* the last of them (for messages) */
    Vec(struct TapeLoop) tapes; /* the loops whose reverse sweep reads a tape (ad_tape.c) */
    const uint8_t *lanes; /* by ValId, or NULL: the values of a reduce's combine region while
                           * adj_reduce applies it to tiles; rules_rev.c types them lane_ty's shape */
    Type lane_ty;
    AdFinite fin; /* which partials need a strong zero (ad_finite.c) */
    Vec(ValId) zm; /* by bw value: an i1 of its shape, true on the lanes where that adjoint (or
                    * contribution) is 0 because no gradient reaches them (a tl.where's untaken
                    * side, a store's masked-off lanes); 0: none known (strong_zero) */
    Vec(uint8_t) zsel; /* by bw value: its zm includes a selection's lanes (zm_sel) */
} Ad;

/* Resolves ad->spec to roles, computes the facts and validates fw (a, d,
 * fw, spec set; the fact arrays are allocated here).  False after located
 * errors in ad->d: then nothing may be emitted. */
bool ad_analyze(Ad *ad);
/* Does v get an adjoint: float, varied and useful? */
bool ad_active(const Ad *ad, ValId v);
/* The role of the parameter pointer v derives from (AD_ROLE_NONE if none).
 * For a pointer selected among several parameters: the role of those that
 * are differentiated (validated to agree), AD_ROLE_NONE if none is. */
int ad_root_role(const Ad *ad, ValId v);
/* b's terminator (its last instruction), or NULL when b is empty. */
const Inst *ad_block_term(const Block *b);
/* The combine functions of `scan` that AD has rules of their own for,
 * recognized from the region's IR (docs/AD.md, "Scans"): a sum `x + y`; the
 * first-order linear recurrence `(a1*a2, a2*b1 + b2)` on pairs (params a1, b1,
 * a2, b2); a running `maximum` / `minimum`; a selection.  SCAN_OTHER: any
 * other, differentiated by the general rule (through the combine's Jacobians). */
typedef enum ScanKind { SCAN_OTHER, SCAN_SUM, SCAN_LINREC, SCAN_MAX, SCAN_MIN, SCAN_SELECT } ScanKind;
ScanKind ad_scan_kind(const Func *f, const Inst *scan);
/* SCAN_SELECT: every float value k the combine yields is `where(c, x_k, y_k)` or
 * `where(c, y_k, x_k)` (x: the running values' params, y: the next element's): a
 * selection, so each result is one input element.  True for such a slot k, with the
 * region's condition *cond and whether it selects the running value when true. */
bool ad_scan_select(const Inst *scan, int k, ValId *cond, bool *running_when_true);
/* Stamps every value defined in b (regions included) with id. */
void ad_mark_defs(Ad *ad, const Block *b, int id);
/* ad_trust.c: fills ad->trust when ad->spec->trusted (else NULL). */
void ad_trust_plan(Ad *ad);
/* Does carried slot k of the for body `body` flow through a chain of
 * single-use instructions, each accepted by link(ad, use, operand position,
 * the value used), into the yield at position k, used nowhere else (no
 * nested region reads a value of the chain)?  Then marks the chain's values
 * in ad->chain (only then).  Linear accumulators (ad_validate.c) and
 * self-feeding counters (ad_tape.c) are such chains. */
bool ad_carried_chain(Ad *ad, const Block *body, int k, bool (*link)(Ad *, const Inst *, int, ValId));
/* Is the store at position k of b overwritten on every lane by a later
 * unmasked store in b through the same pointer value? */
bool ad_store_overwritten(const Block *b, int k);
/* Can pointer v derive from parameter p (a candidate of its provenance)? */
bool ad_root_has(const Ad *ad, ValId v, int p);

/* ad_libm.c: dy/da_k of a libdevice op from the primal operands pa and
 * result py, emitted into b of f; 0 where y does not depend on a_k. */
ValId ad_libm_partial(Func *f, Block *b, Loc loc, const Inst *in, int k, const ValId *pa, ValId py);

/* ------------------------------------------------------------------ */
/* write/gemm.c: the GEMM form                                        */
/* ------------------------------------------------------------------ */

/* Gives bw (ad_backward's, verified) a GEMM plan for the n input gradients
 * params[slot[j]] (names[j]) when its pattern holds.  Returns NULL when it
 * did (P->gemm set) or when d holds a kad bug; else why not (P unchanged). */
const char *ad_gemm(Arena *a, Program *P, const int *slot, const char *const *names, int n, Diags *d);

/* ------------------------------------------------------------------ */
/* write/gather.c, write/scatter.c: gathers and scattered sites       */
/* ------------------------------------------------------------------ */

enum { GATHER_SITES_MAX = 16 };
/* Can the gradient of the input x whose gradient param is bw->params[slot]
 * be gathered (bw: ad_backward's, simplified, its sites for x top-level
 * atomic_adds)?  NULL when it can, with *out its gather kernel (out->flag:
 * 0 always, 1 under out->cond, a condition on the kernel's grid in out->acc's
 * symbols), else why not. */
const char *ad_gather_check(Arena *a, const Program *P, int slot, const char *name, GatherIn *out);
/* Gives bw (the final backward, of the same contract: its sites for x may
 * lie in a folded loop) the gather kernel gi of ad_gather_check: every
 * atomic_add into d_x is removed, or, when gi->cond, wrapped as
 * `if flag: pass else: atomic_add` with flag (a bw i1 param, a FuncFlag of
 * bw) given gi's condition.  False, bw unchanged, when flag does not fit. */
bool ad_gather(Arena *a, Program *P, const GatherIn *gi, ValId flag);
/* The sites of ad_strip_sites: the atomic_adds of b (regions included) through a
 * pointer der marks (der gets the pointers computed from marked ones, in program
 * order, a loop's carried pointer from a marked init), whose sattr is mark when mark
 * is not NULL.  keep: every other store, atomic_add and barrier is removed, the
 * sites stay; else the sites are removed, or wrapped in `if flag: pass else: site`
 * when flag != 0.  *n counts the sites. */
typedef struct StripSites {
    ValId flag;
    const char *mark;
    bool keep;
} StripSites;
void ad_strip_sites(Func *bw, Block *b, uint8_t *der, const StripSites *how, int *n);

/* write/scatter.c: scattered sites in a kernel of their own (docs/AD.md, "Scattered sites").
 * The sattr of the atomic_adds adj_load makes for them. */
#define AD_SCATTER_MARK "kad_scatter"
/* Does b (regions included) hold an atomic_add marked AD_SCATTER_MARK? */
bool ad_has_scatter(const Block *b);
/* Moves bw's marked atomic_adds into one kernel per input gradient (params[slot],
 * nfwd <= slot < plan_nargs), a pruned copy of bw keeping only them and what they
 * need, launched after bw on the forward's grid (Program.gather, GatherIn.scatter).
 * bw must be a plain backward (no fold, GEMM form, gather, flags or tapes), and the
 * copies must read nothing a backward kernel writes.  False, bw unchanged, when
 * that does not hold: then the caller builds the backward without scattered sites. */
bool ad_scatter_split(Arena *a, Program *P, int nfwd);

#endif
