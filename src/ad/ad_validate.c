/* ad_validate.c -- the analysis's refusals and loop-store proofs.
 *
 * Job: stage 4 of ad_analyze (ad_analysis.c): every construct reverse mode
 * cannot differentiate exactly is refused with an error at the
 * instruction's Loc (stores to inputs, loads from outputs, ambiguous
 * pointers, stores that may overwrite each other, non-linear loop-carried
 * values, ops without a rule, ...).  Stores to one output at several sites
 * are accepted only where the last write is known (the branches of one
 * `if`, one block storing through the same pointer value), stores in loops
 * only where their addresses are proven disjoint across iterations
 * (check_loop_store: affine in the induction variable, or launch guards
 * the launcher checks), and in-place loads only where the matching store
 * follows.  Also the loop helpers the tapes use (ad_carried_chain,
 * ad_mark_defs) and ad_store_overwritten.
 *
 * Requires: the facts of stages 2 and 3.  Guarantees: no error reported
 * means every active value has a rule and every output element's last write
 * is known; fills Ad.guards, the loops to reverse and the store facts.
 */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "ad/ad.h"
#include "ad/ad_int.h"

/* ------------------------------------------------------------------ */
/* 4. Validation                                                       */
/* ------------------------------------------------------------------ */


static int uses_in(const Block *body, ValId v, const Inst **use, int *pos)
{
    int n = 0;
    for (int i = 0; i < body->insts.n; i++) {
        const Inst *in = &body->insts.v[i];
        for (int j = 0; j < in->nargs; j++)
            if (in->args[j] == v) {
                n++;
                *use = in;
                *pos = j;
            }
        for (int r = 0; r < in->nregions; r++)
            if (ir_block_uses(in->regions[r], v))
                return -1;
    }
    return n;
}

/* cur's two uses, when they are a link t = link(cur, x) and w = where(m, t, cur) (or where(m,
 * cur, t)), t used only there: w = cur + where(m, x, 0), the same link (the per-thread lowering's
 * masked loop bodies: `s += a[i]` under the lanes' mask).  The where's adjoint gives cur the lanes
 * off and t the lanes on, which the link passes to cur: cur's adjoint is w's in every iteration. */
static const Inst *masked_update(Ad *ad, const Block *body, ValId cur, bool (*link)(Ad *, const Inst *, int, ValId))
{
    const Inst *l = NULL, *w = NULL;
    int lpos = -1;
    for (int i = 0; i < body->insts.n; i++) {
        const Inst *in = &body->insts.v[i];
        for (int j = 0; j < in->nargs; j++) {
            if (in->args[j] != cur)
                continue;
            if (in->op == OP_WHERE && j > 0 && in->args[0] != cur && !w)
                w = in;
            else if (!l) {
                l = in;
                lpos = j;
            } else
                return NULL;
        }
    }
    if (!l || !w || l->nres != 1 || l->nregions || !link(ad, l, lpos, cur))
        return NULL;
    ValId t = l->res[0];
    int tpos = w->args[1] == cur ? 2 : 1;
    if (w->args[tpos] != t || w->args[3 - tpos] != cur || !type_eq(fw_ty(ad, w->res[0]), fw_ty(ad, cur)))
        return NULL;
    const Inst *u = NULL;
    int upos = -1;
    if (uses_in(body, t, &u, &upos) != 1 || u != w)
        return NULL;
    return w;
}

bool ad_carried_chain(Ad *ad, const Block *body, int k, bool (*link)(Ad *, const Inst *, int, ValId))
{
    ValId cur = body->params[1 + k];
    ValId marks[64];
    int nmarks = 0;
    for (;;) {
        const Inst *use = NULL;
        int nuse = 0, pos = -1;
        for (int i = 0; i < body->insts.n; i++) {
            const Inst *in = &body->insts.v[i];
            for (int j = 0; j < in->nargs; j++)
                if (in->args[j] == cur) {
                    nuse++;
                    use = in;
                    pos = j;
                }
            for (int r = 0; r < in->nregions; r++)
                if (ir_block_uses(in->regions[r], cur))
                    return false;
        }
        if (nuse == 2) { /* a masked update where(m, cur + x, cur): the lanes off keep cur */
            const Inst *w = masked_update(ad, body, cur, link);
            if (!w || nmarks + 2 > (int)(sizeof marks / sizeof marks[0]))
                return false;
            marks[nmarks++] = w->args[w->args[1] == cur ? 2 : 1];
            marks[nmarks++] = w->res[0];
            cur = w->res[0];
            continue;
        }
        if (nuse != 1)
            return false;
        if (use->op == OP_YIELD) {
            if (pos != k)
                return false;
            for (int i = 0; i < nmarks; i++) /* marked only when the whole chain is accepted */
                ad->chain[marks[i]] = 1;
            return true;
        }
        if (!link(ad, use, pos, cur) || nmarks == (int)(sizeof marks / sizeof marks[0]))
            return false;
        marks[nmarks++] = use->res[0];
        cur = use->res[0];
    }
}

/* A link of a linear accumulator's chain: add (either side), sub (left
 * side), dot/fma (accumulator operand), keeping the carried type.  Then the
 * accumulator's adjoint is the same in every iteration and the other
 * operands of the chain cannot depend on it. */
static bool linear_link(Ad *ad, const Inst *use, int pos, ValId cur)
{
    switch (use->op) {
    case OP_ADD:
        break;
    case OP_SUB:
        if (pos != 0)
            return false;
        break;
    case OP_DOT:
    case OP_FMA:
        if (pos != 2)
            return false;
        break;
    default:
        return false;
    }
    return type_eq(fw_ty(ad, use->res[0]), fw_ty(ad, cur));
}

static bool has_rule(OpKind op)
{
    return op_info[op].diff == 'D'; /* 'N': differentiable, no rule yet */
}

/* Stamps every value defined in b (regions included) with id. */
void ad_mark_defs(Ad *ad, const Block *b, int id)
{
    for (int i = 0; i < b->nparams; i++)
        ad->stamp[b->params[i]] = id;
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nres; k++)
            ad->stamp[in->res[k]] = id;
        for (int r = 0; r < in->nregions; r++)
            ad_mark_defs(ad, in->regions[r], id);
    }
}

/* Offsets as civ * iv + [lo, hi] (same_address_lanes below uses it with no
 * loop: every lane's offset, scalars counting 0).  Stores in loops are
 * proven by access.c (check_loop_store). */
typedef struct Aff {
    int64_t civ, lo, hi;
} Aff;

#define AFF_LIMIT ((int64_t)1 << 40) /* beyond this, give up (no overflow) */

/* The integer constant v (through broadcasts), if it is one. */
static bool const_int(const Ad *ad, ValId v, int64_t *k)
{
    for (const Inst *in = ad->def[v]; in; in = ad->def[in->args[0]]) {
        if (in->op == OP_CONST && !is_float(fw_ty(ad, v))) {
            *k = in->ival;
            return true;
        }
        if (in->op != OP_BROADCAST && in->op != OP_EXPAND_DIMS)
            return false;
    }
    return false;
}

/* v as an Aff.  A scalar not defined in the loop (stamp != id) is the
 * same in every iteration and on every lane: it shifts the whole range and
 * counts as 0.  Every other value is derived from its definition: a tile
 * defined outside the loop is invariant too (civ 0) but its lanes differ. */
static bool aff_of(const Ad *ad, ValId v, ValId iv, int id, Aff *out, int depth)
{
    *out = (Aff){0, 0, 0};
    if (v == iv) {
        out->civ = 1;
        return true;
    }
    if (ad->stamp[v] != id && fw_ty(ad, v).rank == 0)
        return true;
    const Inst *in = ad->def[v];
    if (!in || depth > 64)
        return false; /* carried values: unknown */
    Aff a, b;
    int64_t k;
    switch (in->op) {
    case OP_CONST:
        return true;
    case OP_ARANGE:
        out->lo = in->ival;
        out->hi = in->ival + fw_ty(ad, v).shape[0] - 1;
        return true;
    case OP_BROADCAST:
    case OP_EXPAND_DIMS:
    case OP_RESHAPE:
    case OP_MULTIPLE_OF:
    case OP_MAX_CONTIGUOUS:
        return aff_of(ad, in->args[0], iv, id, out, depth + 1);
    case OP_CAST:
        if (dtype_is_float((Dtype)fw_ty(ad, in->args[0]).dt) ||
            dtype_bits((Dtype)fw_ty(ad, v).dt) < dtype_bits((Dtype)fw_ty(ad, in->args[0]).dt))
            return false;
        return aff_of(ad, in->args[0], iv, id, out, depth + 1);
    case OP_ADD:
    case OP_ADDPTR:
    case OP_SUB:
        if (!aff_of(ad, in->args[0], iv, id, &a, depth + 1) || !aff_of(ad, in->args[1], iv, id, &b, depth + 1))
            return false;
        if (in->op == OP_SUB)
            *out = (Aff){a.civ - b.civ, a.lo - b.hi, a.hi - b.lo};
        else
            *out = (Aff){a.civ + b.civ, a.lo + b.lo, a.hi + b.hi};
        break;
    case OP_MUL:
        if (const_int(ad, in->args[1], &k) && aff_of(ad, in->args[0], iv, id, &a, depth + 1)) {
        } else if (const_int(ad, in->args[0], &k) && aff_of(ad, in->args[1], iv, id, &a, depth + 1)) {
        } else {
            return false;
        }
        if (k > AFF_LIMIT || k < -AFF_LIMIT)
            return false;
        *out = (Aff){a.civ * k, k >= 0 ? a.lo * k : a.hi * k, k >= 0 ? a.hi * k : a.lo * k};
        break;
    default:
        return false;
    }
    return out->civ < AFF_LIMIT && out->civ > -AFF_LIMIT && out->lo > -AFF_LIMIT && out->hi < AFF_LIMIT;
}

/* A store to an output inside loops (access.c): the adjoint reads d_out
 * at the store's address once per iteration, which is right as it stands
 * only when no two iterations of the enclosing loops write one element.
 * Lanes the address does not depend on are not varied: one iteration
 * writing an element from several lanes is the forward's own race (the
 * one-writer check, ad_race.c).  A proof that needs a runtime condition
 * the host can evaluate becomes a guard of the backward (ad->guards).
 * Otherwise the iterations may write one element several times (a running
 * state written out every iteration, or under `if i == last`): the output
 * keeps the last write.  The loop's verdict, once per store. */
typedef enum { LS_DISTINCT, LS_GUARDED, LS_REPEATS } LoopStore;

static LoopStore loop_store_kind(Ad *ad, const Inst *st, AccResult *out)
{
    if (!ad->vacc)
        ad->vacc = access_analyze(ad->a, ad->fw);
    AccResult r = access_injective(ad->vacc, st, ACC_VARY_LOOPS | ACC_VARY_LANES | ACC_SKIP_UNUSED_LANES);
    if (out)
        *out = r;
    if (r.v == ACC_PROVEN)
        return LS_DISTINCT;
    if (r.v == ACC_PROVEN_IF && access_cond_python(ad->vacc, r.cond) && access_cond_host(ad->vacc, r.cond, "a", "g"))
        return LS_GUARDED;
    return LS_REPEATS;
}

/* The loops around st must run their adjoints backwards over the iterations: st's writes are
 * ordered by the iterations (a store writing one element in several, or two store sites that
 * meet), and the reverse sweep finds the last write by reading and clearing each store's
 * gradient in reverse order.  Counted (Ad.nrev): each enclosing loop, validated before its tape
 * is planned, puts itself on a tape when its body added one. */
static void need_reverse(Ad *ad, const Inst *st)
{
    ad->nrev++;
    ad->rev_store = st;
}

static void check_loop_store(Ad *ad, const Inst *st, ValId p)
{
    AccResult r;
    LoopStore k = loop_store_kind(ad, st, &r);
    Access *acc = ad->vacc;
    if (k == LS_DISTINCT)
        return;
    if (k == LS_GUARDED && ad->root[p] > 0 && !ad->varstep_loops && access_cond_param_product(acc, r.cond))
        k = LS_REPEATS; /* the last-write sweep (tapes of loops of constant steps, whiles) is right for
                         * every launch: no guard that would refuse most */
    if (k == LS_GUARDED) {
        FuncGuard g = {acc, r.cond, st->loc,
                       arena_printf(ad->a, "store to output '%s' inside a loop: the backward is right only when "
                                           "the iterations write distinct elements, which needs %s; this launch "
                                           "breaks it",
                                    an_root_name(ad, p), access_cond_python(acc, r.cond))};
        vec_push(ad->a, ad->guards, g);
        return;
    }
    int root = ad->root[p];
    if (root > 0) {
        /* the last write wins: the enclosing loops' adjoints run backwards (their tapes, planned
         * after their bodies: need_reverse), and the stores read and clear their gradient */
        ad->cleared[root - 1] = 1;
        need_reverse(ad, st);
        return;
    }
    const char *why = r.v == ACC_PROVEN_IF
                          ? arena_printf(ad->a, "only when %s holds", access_cond_python(acc, r.cond)
                                                                          ? access_cond_python(acc, r.cond)
                                                                          : "a condition on runtime values")
                          : r.why;
    diag_error(ad->d, st->loc,
               "store to output '%s' inside a loop, through a pointer selected among several buffers: "
               "kad cannot prove that the iterations write distinct addresses (%s)",
               an_root_name(ad, p), why);
}

/* Does every lane of the pointer tile p hold the same address?  Then a
 * store through it writes one element BLOCK times, and the adjoint would
 * read that element's gradient once per lane.  Proof: p's offsets as an
 * Aff over no loop (every value derived, scalars counting 0) have lo == hi:
 * y_ptr broadcast, y_ptr + offs * 0, y_ptr + tl.zeros(...).  The range is
 * an over-approximation, so a failed proof never refuses a store. */
static bool same_address_lanes(Ad *ad, ValId p)
{
    if (type_numel(fw_ty(ad, p)) <= 1)
        return false;
    Aff a;
    int id = ++ad->gen; /* stamps no value: nothing is "in the loop" */
    return aff_of(ad, p, 0, id, &a, 0) && a.lo == a.hi;
}

/* v is the same on every lane: a scalar, a constant, a scalar broadcast. */
static bool lane_uniform(const Ad *ad, ValId v)
{
    if (type_numel(fw_ty(ad, v)) <= 1)
        return true;
    const Inst *in = ad->def[v];
    return in && (in->op == OP_CONST || (in->op == OP_BROADCAST && type_numel(fw_ty(ad, in->args[0])) <= 1));
}

/* v differs on every lane of a 1-D tile: the lanes' arange, through integer casts that keep it
 * (not narrower than 32 bits) and the addition of a uniform value. */
static bool lane_distinct(const Ad *ad, ValId v, int depth)
{
    const Inst *in = ad->def[v];
    if (!in || depth > 8 || fw_ty(ad, v).rank != 1)
        return false;
    switch (in->op) {
    case OP_ARANGE:
        return true;
    case OP_CAST: {
        Dtype t = (Dtype)fw_ty(ad, v).dt;
        return dtype_is_int(t) && dtype_bits(t) >= 32 && lane_distinct(ad, in->args[0], depth + 1);
    }
    case OP_ADD:
    case OP_SUB:
        return (lane_uniform(ad, in->args[1]) && lane_distinct(ad, in->args[0], depth + 1)) ||
               (in->op == OP_ADD && lane_uniform(ad, in->args[0]) && lane_distinct(ad, in->args[1], depth + 1));
    default:
        return false;
    }
}

/* The mask m is true on at most one lane: `lane == u` (threadIdx.x == 0) for u the same on every
 * lane, possibly and-ed with anything. */
static bool one_lane_mask(const Ad *ad, ValId m, int depth)
{
    const Inst *in = ad->def[m];
    if (!in || depth > 8)
        return false;
    if (in->op == OP_AND)
        return one_lane_mask(ad, in->args[0], depth + 1) || one_lane_mask(ad, in->args[1], depth + 1);
    if (in->op != OP_EQ)
        return false;
    return (lane_distinct(ad, in->args[0], 0) && lane_uniform(ad, in->args[1])) ||
           (lane_distinct(ad, in->args[1], 0) && lane_uniform(ad, in->args[0]));
}

/* Are two stores mutually exclusive: in different branches of one `if`? */
static bool sites_exclusive(const StoreSite *x, const StoreSite *y)
{
    for (int k = 0; k < x->npath && k < y->npath; k++) {
        if (x->path[k].inst != y->path[k].inst)
            return false;
        if (x->path[k].region != y->path[k].region)
            return true;
    }
    return false;
}

/* Do two stores through one parameter never write the same element in the
 * whole launch?  Then neither overwrites the other, and each store's
 * adjoint reads its own elements of the output gradient (rotary embeddings
 * store a row's two halves through two tl.stores; a reverse tile walk
 * stores its masked first tile before the loop over the others).  Proof:
 * in one program they touch disjoint elements (access_disjoint; for stores
 * in loops access_disjoint_all, over every iteration of both), and no two
 * programs share an element of their union (access_private over every grid
 * axis).  That each store's own iterations write distinct elements is
 * check_loop_store's. */
static bool sites_disjoint(Ad *ad, const StoreSite *x, const StoreSite *y)
{
    if (x->root <= 0 || x->root != y->root)
        return false;
    Access *A = access_analyze(ad->a, ad->fw);
    if (access_base(A, x->store) != x->root - 1 || access_base(A, y->store) != x->root - 1)
        return false;
    /* within a program, proven outright (a condition there, `n <= 0` when the masks are the
     * same, would only turn this refusal into one at every launch); across programs, possibly
     * under a condition on the strides */
    if ((x->loop_depth || y->loop_depth ? access_disjoint_all(A, x->store, y->store)
                                         : access_disjoint(A, x->store, y->store)).v != ACC_PROVEN)
        return false;
    const Inst *both[2] = {x->store, y->store};
    AccResult r[2] = {{ACC_PROVEN, NULL, NULL}, access_private(A, both, 2, 7)};
    for (int i = 0; i < 2; i++)
        if (r[i].v != ACC_PROVEN &&
            (r[i].v != ACC_PROVEN_IF || !access_cond_python(A, r[i].cond) || !access_cond_host(A, r[i].cond, "a", "g")))
            return false;
    /* under runtime conditions: launch guards (the launcher and the interpreter refuse a
     * launch that breaks one) */
    for (int i = 0; i < 2; i++)
        if (r[i].v == ACC_PROVEN_IF) {
            const char *root = ad->fw->vals.v[ad->fw->params[x->root - 1]].name;
            FuncGuard g = {A, r[i].cond, y->store->loc,
                           arena_printf(ad->a, "stores to output '%s' at lines %d and %d: the backward is right only "
                                               "when they never write one element, which needs %s; this launch "
                                               "breaks it",
                                        root ? root : "?", x->store->loc.line, y->store->loc.line,
                                        access_cond_python(A, r[i].cond))};
            vec_push(ad->a, ad->guards, g);
        }
    return true;
}

/* Does the later of two stores overwrite the earlier one exactly where it
 * writes: the same block (both run, in program order, in the same
 * iteration) and the same pointer value (the same addresses, lane by
 * lane)?  Then the output keeps the later store's lanes, and the earlier
 * store's value reaches it only on the lanes the later one masks off
 * (adj_store).  Equal addresses computed by different values are not
 * recognised: they might as well differ, and the last write would be
 * unknown. */
static bool sites_overwrite(const StoreSite *x, const StoreSite *y)
{
    return x->block == y->block && x->store->args[0] == y->store->args[0];
}

bool ad_store_overwritten(const Block *b, int k)
{
    const Inst *st = &b->insts.v[k];
    for (int j = k + 1; j < b->insts.n; j++) {
        const Inst *o = &b->insts.v[j];
        if (o->op == OP_STORE && o->args[0] == st->args[0] && !(o->flags & IF_HAS_MASK))
            return true;
    }
    return false;
}

/* A store or atomic into buffer root r among insts [from, to) of b, in
 * their regions too: the first one, or NULL. */
static const Inst *store_into(const Ad *ad, const Block *b, int from, int to, int r)
{
    for (int j = from; j < to; j++) {
        const Inst *o = &b->insts.v[j];
        if (op_writes_memory(o->op) && ad->root[o->args[0]] == r)
            return o;
        for (int k = 0; k < o->nregions; k++) {
            const Inst *s = store_into(ad, o->regions[k], 0, o->regions[k]->insts.n, r);
            if (s)
                return s;
        }
    }
    return NULL;
}

/* Are a and b the same value: one ValId, or results of the same pure
 * instruction (op, attributes, type) on the same values, recursively?  A
 * pointer recomputed inside an `if` region (`x_ptr + offs` written again
 * there) is then the pointer computed outside it. */
static bool same_value(const Ad *ad, ValId a, ValId b, int depth)
{
    if (a == b)
        return true;
    if (!a || !b || depth > 32)
        return false;
    const Inst *x = ad->def[a], *y = ad->def[b];
    if (!x || !y || x->op != y->op || !op_info[x->op].pure || x->nregions || y->nregions || x->nres != 1 ||
        y->nres != 1 || x->flags != y->flags || x->ival != y->ival || x->nargs != y->nargs ||
        x->nints != y->nints || memcmp(&x->fval, &y->fval, sizeof x->fval) ||
        memcmp(x->ints, y->ints, sizeof x->ints[0] * (size_t)x->nints) || (x->sattr != NULL) != (y->sattr != NULL) ||
        (x->sattr && strcmp(x->sattr, y->sattr)) || !type_eq(ad->fw->vals.v[a].ty, ad->fw->vals.v[b].ty))
        return false;
    for (int k = 0; k < x->nargs; k++)
        if (!same_value(ad, x->args[k], y->args[k], depth + 1))
            return false;
    return true;
}

/* A store through pointer p under mask m (or none) at the top level of b
 * after index i: it runs whenever instruction i does.  exact: the same
 * ValIds (the load's block), else the same values (an enclosing block). */
static bool matching_store_after(const Ad *ad, const Block *b, int i, ValId p, ValId m, bool exact)
{
    for (int j = i + 1; j < b->insts.n; j++) {
        const Inst *o = &b->insts.v[j];
        if (o->op != OP_STORE)
            continue;
        bool same_p = exact ? o->args[0] == p : same_value(ad, o->args[0], p, 0);
        bool same_m = !(o->flags & IF_HAS_MASK) || (exact ? o->args[2] == m : same_value(ad, o->args[2], m, 0));
        if (same_p && same_m)
            return true;
    }
    return false;
}

/* A load from a buffer updated in place must read the value before the
 * launch: the backward recomputes it from the buffer the caller passes,
 * which holds that value.  Sufficient condition (docs/AD.md, "In-place
 * buffers"): a later store goes through the same pointer value under the
 * same mask (or none) whenever the load runs -- in the load's block, or,
 * for a load in a region of runtime `if`s (no loop between), in an
 * enclosing block after that `if` -- and no store into the buffer comes
 * before the load (in its block, the blocks enclosing it, or their earlier
 * regions).  Then each element the load reads is written by the same lane
 * of the same program, after the read; any other writer of it would race
 * with that store in the forward.  Atomics into the buffer are refused:
 * their order decides what a load reads. */
static void validate_inplace_load(Ad *ad, const Block *b, int i, const BlockPos *up)
{
    const Inst *ld = &b->insts.v[i];
    ValId p = ld->args[0], m = ld->flags & IF_HAS_MASK ? ld->args[1] : 0;
    int r = ad->root[p];
    if (ad->first_atomic[r - 1]) {
        diag_error(ad->d, ld->loc,
                   "load from '%s', which the kernel updates in place and also atomically adds to "
                   "(line %d): what the load reads depends on the order of the programs",
                   an_root_name(ad, p), ad->first_atomic[r - 1]->loc.line);
        return;
    }
    /* stores before the load, on the way out to the block of the matching store */
    const Block *cb = b;
    int ci = i;
    const BlockPos *pos = up;
    for (;;) {
        const Inst *o = store_into(ad, cb, 0, ci, r);
        if (o) {
            diag_error(ad->d, ld->loc,
                       "the kernel reads an element of '%s' after writing it (line %d): kad "
                       "differentiates in-place updates only where every load reads the value "
                       "before the launch",
                       an_root_name(ad, p), o->loc.line);
            return;
        }
        if (matching_store_after(ad, cb, ci, p, m, cb == b))
            return;
        if (!pos || pos->b->insts.v[pos->i].op != OP_IF)
            break;
        cb = pos->b;
        ci = pos->i;
        pos = pos->up;
    }
    diag_error(ad->d, ld->loc,
               "load from '%s', which the kernel updates in place: kad cannot prove that it reads "
               "the value before the launch (the kernel might read an element after writing it "
               "through another lane or program); it can when a later tl.store writes through the "
               "same pointer value, under the same mask or none, in the load's block or, for a load "
               "inside runtime `if`s, after them in a block enclosing them",
               an_root_name(ad, p));
}

/* Do roots x and y share a candidate parameter? */
static bool roots_meet(const Ad *ad, int x, int y)
{
    for (int p = 0; p < ad->fw->nparams; p++)
        if (an_root_has(ad, x, p) && an_root_has(ad, y, p))
            return true;
    return false;
}

/* A load, store or atomic_add through a pointer selected among several
 * parameters (docs/AD.md, "Pointers selected among parameters"): the
 * checks of a single parameter apply to every candidate, and the
 * differentiated ones must share one role (the shadow is the same
 * selection over their gradients; the lanes of a candidate without one
 * are masked off).  In-place buffers are refused: their loads are proven
 * to read the pre-launch value through their own stores.  False after an
 * error. */
static bool validate_set_access(Ad *ad, const Inst *in)
{
    ValId p = in->args[0];
    const char *what = in->op == OP_LOAD ? "load" : in->op == OP_STORE ? "store" : "atomic_add";
    const char *names = an_root_name(ad, p);
    int role = AD_ROLE_NONE;
    Type pt = fw_ty(ad, p);
    for (int q = 0; q < ad->fw->nparams; q++) {
        if (!ad_root_has(ad, p, q))
            continue;
        int rq = ad->role[q];
        const char *why = NULL;
        if (rq == AD_ROLE_INOUT)
            why = "is updated in place (named both as an input and as an output); kad differentiates "
                  "the loads of an in-place buffer only through pointers derived from it alone";
        else if (in->op == OP_LOAD && rq == AD_ROLE_OUT)
            why = "is a differentiated output, which must only be written";
        else if (in->op == OP_LOAD && rq == AD_ROLE_NONE && ad->stored[q])
            why = "is also written by the kernel: the backward kernel drops stores, so this load "
                  "would read different data";
        else if (in->op != OP_LOAD && rq == AD_ROLE_IN)
            why = "is a differentiated input, which must only be read";
        else if (rq != AD_ROLE_NONE && role != AD_ROLE_NONE && rq != role)
            why = "does not share the role of the other differentiated candidates";
        else if (fw_ty(ad, ad->fw->params[q]).elem != pt.elem)
            why = "has another element type";
        if (why) {
            diag_error(ad->d, in->loc, "cannot differentiate a %s through a pointer selected among '%s': '%s' %s",
                       what, names, an_param_name(ad, q), why);
            return false;
        }
        if (rq != AD_ROLE_NONE)
            role = rq;
    }
    return true;
}

/* A pointer selected among differentiated and non-differentiated
 * parameters carries, next to its shadow, which lanes have one (Ad.vm);
 * region ops do not carry that mask: such a pointer must not be an `if`'s
 * result or a loop-carried value.  vs: the values carrying in's slots. */
static void validate_carried(Ad *ad, const Inst *in, const ValId *vs)
{
    for (int k = 0; k < in->nres; k++) {
        ValId v = vs[k];
        int r = ad->root[v];
        if (r > ROOT_SET(0) || ad_root_role(ad, v) == AD_ROLE_NONE)
            continue;
        for (int q = 0; q < ad->fw->nparams; q++)
            if (an_root_has(ad, r, q) && ad->role[q] == AD_ROLE_NONE) {
                diag_error(ad->d, in->loc,
                           "pointer '%s' is selected among '%s', of which '%s' is not differentiated, and "
                           "carried out of this %s: not supported (select it with tl.where where it is used)",
                           an_display(ad, v, in->res[k]), an_root_name(ad, v), an_param_name(ad, q),
                           in->op == OP_IF ? "`if`" : "loop");
                break;
            }
    }
}


/* path/npath: the enclosing ifs (for StoreSite); loop: the innermost
 * enclosing loop, loop_depth: how many loops enclose b. */
void validate_block(Ad *ad, const Block *b, int loop_depth, const Inst *loop, const IfStep *path,
                    int npath, SiteVec *sites, const BlockPos *up)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        OpKind op = (OpKind)in->op;
        BlockPos here = {b, i, up};
        switch (op) {
        case OP_LOAD: {
            ValId p = in->args[0];
            int r = ad->root[p];
            /* NaN lanes meet zero adjoints in the backward's products and sums (0 * NaN) */
            if ((in->flags & IF_HAS_OTHER) && ad->useful[in->res[0]] && an_nan_const(ad, in->args[2]))
                diag_error(ad->d, in->loc,
                           "cannot differentiate through a load whose masked-off lanes are NaN "
                           "(other=nan, padding_option=\"nan\"): the backward would multiply their "
                           "zero adjoints by NaN; use other=0 or padding_option=\"zero\"");
            if (r == ROOT_AMBIG)
                diag_error(ad->d, in->loc,
                           "cannot differentiate a load through a pointer of ambiguous provenance "
                           "(read from memory, or converted)");
            else if (r <= ROOT_SET(0))
                validate_set_access(ad, in);
            else if (r > 0 && ad->role[r - 1] == AD_ROLE_OUT)
                diag_error(ad->d, in->loc,
                           "load from output '%s': a differentiated output must only be written (a "
                           "buffer the kernel updates in place is named both as an input and as an "
                           "output)",
                           an_root_name(ad, p));
            else if (r > 0 && ad->role[r - 1] == AD_ROLE_INOUT)
                validate_inplace_load(ad, b, i, up);
            else if (r > 0 && ad->stored[r - 1] && ad->role[r - 1] == AD_ROLE_NONE)
                diag_error(ad->d, in->loc,
                           "load from '%s', which the kernel also writes: the backward kernel drops "
                           "stores, so this load would read different data",
                           an_root_name(ad, p));
            break;
        }
        case OP_STORE:
        case OP_ATOMIC_ADD:
        case OP_ATOMIC_MAX:
        case OP_ATOMIC_MIN:
        case OP_ATOMIC_XCHG: {
            ValId p = in->args[0];
            int r = ad->root[p];
            const char *what = op_info[op].name;
            if (r == ROOT_AMBIG) {
                diag_error(ad->d, in->loc,
                           "cannot differentiate a %s through a pointer of ambiguous provenance "
                           "(read from memory, or converted)", what);
                break;
            }
            if (r <= ROOT_SET(0) && !validate_set_access(ad, in))
                break;
            int role = ad_root_role(ad, p);
            if (role == AD_ROLE_IN) {
                diag_error(ad->d, in->loc, "%s to differentiated input '%s': inputs must only be read",
                           what, an_root_name(ad, p));
            } else if (ad_role_writes(role) && op != OP_STORE && op != OP_ATOMIC_ADD) {
                /* out = max(out, v) over every program: the gradient reaches the value that won,
                 * which only the final contents of the output tell */
                diag_error(ad->d, in->loc,
                           "%s into differentiated output '%s': the gradient would reach the one value "
                           "(of every program's) that the output kept; not supported. An amax or a "
                           "counter is usually not differentiated: leave '%s' out of outputs=[...] "
                           "(its writes then stay in the forward and are dropped from the backward)",
                           what, an_root_name(ad, p), an_root_name(ad, p));
            } else if (ad_role_writes(role) && op == OP_ATOMIC_ADD) {
                /* out += v is linear: dv = d_out at the same addresses, from any
                 * site, iteration or program.  Mixed with a store, the order of
                 * the writes would decide what reaches the output. */
                const Inst *st = NULL;
                for (int q = 0; q < ad->fw->nparams && !st; q++)
                    if (an_root_has(ad, r, q) && ad_role_writes(ad->role[q]))
                        st = ad->first_store[q];
                if (st)
                    diag_error(ad->d, in->loc,
                               "output '%s' is both stored (line %d) and atomically added to; not "
                               "supported (the gradient would depend on the order of the writes)",
                               an_root_name(ad, p), st->loc.line);
                if (ad->nuses[in->res[0]] > 0)
                    diag_error(ad->d, in->loc,
                               "the result of atomic_add on output '%s' is used: the old value depends "
                               "on the order of the programs and cannot be differentiated",
                               an_root_name(ad, p));
            } else if (ad_role_writes(role)) {
                StoreSite site = {in, b, r, path, npath, loop_depth};
                for (int k = 0; k < sites->n; k++) {
                    const StoreSite *o = &sites->v[k];
                    if (!roots_meet(ad, o->root, r) || sites_overwrite(o, &site) ||
                        (!o->loop_depth && !loop_depth && sites_exclusive(o, &site)) ||
                        sites_disjoint(ad, o, &site))
                        continue;
                    if (r > 0 && o->root == r) {
                        /* the later store wins where they meet, whatever their addresses: the
                         * backward's reverse sweep reads each store's gradient and clears it
                         * (adj_store), so the earlier store then reads zeros there.  In loops,
                         * the loops around the later store run backwards, so that its
                         * iterations and the earlier store's in a loop they share are visited
                         * last write first (a loop around the earlier store alone needs that
                         * only if its own iterations repeat an element: check_loop_store) */
                        ad->cleared[r - 1] = 1;
                        if (loop_depth || o->loop_depth)
                            need_reverse(ad, in);
                        continue;
                    }
                    diag_error(ad->d, in->loc,
                               "output '%s' is stored at more than one site (first at line %d), in "
                               "loops, and kad cannot tell which write is the last (it can for stores "
                               "outside loops, stores in loops that provably never write one element, "
                               "and stores through the same pointer value in one block)",
                               an_root_name(ad, p), o->store->loc.line);
                    break;
                }
                vec_push(ad->a, *sites, site);
                if (loop_depth > 0)
                    check_loop_store(ad, in, p);
                if (same_address_lanes(ad, p) && !(in->nargs > 2 && one_lane_mask(ad, in->args[2], 0)))
                    diag_error(ad->d, in->loc,
                               "every lane of this store writes the same address of output '%s'; "
                               "store a scalar instead", an_root_name(ad, p));
            } else if (op != OP_STORE && ad->nuses[in->res[0]] > 0) {
                diag_error(ad->d, in->loc,
                           "the result of %s is used: the backward kernel drops atomics on "
                           "scratch buffers, so it cannot recompute it", what);
            }
            break;
        }
        case OP_BITCAST:
            if (ad->varied[in->args[0]] && ad->useful[in->res[0]])
                diag_error(ad->d, in->loc, "cannot differentiate through 'bitcast' of a differentiated value");
            break;
        case OP_FOR: {
            const Block *r = in->regions[0];
            validate_carried(ad, in, r->params + 1);
            /* linear accumulators keep the forward-running adjoint loop; any
             * other differentiated carried value puts the loop on a tape */
            uint8_t *lin = arena_alloc(ad->a, (size_t)in->nres + 1);
            bool tape = false;
            for (int k = 0; k < in->nres; k++) {
                ValId c = r->params[1 + k];
                if (ad_active(ad, c) || ad_active(ad, in->res[k])) {
                    lin[k] = ad_carried_chain(ad, r, k, linear_link);
                    tape |= !lin[k];
                }
            }
            /* a store under it whose writes the iterations order (need_reverse): the reverse
             * sweep visits the iterations backwards, on a tape; planned after the body (at the
             * loop's place in the tapes' order) */
            int at = ad->tapes.n, nrev = ad->nrev;
            int64_t step = 0;
            bool varstep = !const_int(ad, in->args[2], &step); /* its reverse tape is not supported */
            ad->varstep_loops += varstep;
            validate_block(ad, r, loop_depth + 1, in, path, npath, sites, &here);
            ad->varstep_loops -= varstep;
            if (tape || ad->nrev > nrev)
                ad_tape_plan(ad, in, lin, ad->nrev > nrev ? ad->rev_store : NULL, at);
            break;
        }
        case OP_WHILE: {
            const Block *c = in->regions[0];
            validate_carried(ad, in, c->params);
            /* any differentiated carried value puts a `while` on a tape (its adjoint loop runs
             * backwards over the iterations the primal sweep counted) */
            bool tape = false;
            for (int k = 0; k < in->nres; k++)
                tape |= ad_active(ad, c->params[k]) || ad_active(ad, in->regions[1]->params[k]) ||
                        ad_active(ad, in->res[k]);
            int at = ad->tapes.n, nrev = ad->nrev;
            validate_block(ad, c, loop_depth + 1, NULL, path, npath, sites, &here); /* no stores in a condition */
            validate_block(ad, in->regions[1], loop_depth + 1, in, path, npath, sites, &here);
            if (tape || ad->nrev > nrev)
                ad_tape_plan_while(ad, in, ad->nrev > nrev ? ad->rev_store : NULL, at);
            break;
        }
        case OP_IF:
            validate_carried(ad, in, in->res);
            for (int r = 0; r < 2; r++) {
                IfStep *np = arena_alloc(ad->a, sizeof *np * (size_t)(npath + 1));
                if (npath)
                    memcpy(np, path, sizeof *np * (size_t)npath);
                np[npath] = (IfStep){in, r};
                validate_block(ad, in->regions[r], loop_depth, loop, np, npath + 1, sites, &here);
            }
            break;
        case OP_CUSTOM_JVP: {
            /* operand 0 is the helper's automatic result unless the helper also has a vjp rule
             * (sema puts its custom_vjp right before); the automatic adjoint would disagree with the
             * jvp rule */
            bool vjp = false;
            for (int j = i - 1; j >= 0 && !vjp; j--)
                vjp = b->insts.v[j].op == OP_CUSTOM_VJP && b->insts.v[j].res[0] == in->args[0];
            if (!vjp && ad_active(ad, in->res[0]))
                diag_error(ad->d, in->loc, "this helper call has a custom jvp rule (@kad.jvp_of) but no vjp rule: "
                           "reverse mode needs a @kad.vjp_of rule for the helper (its automatic adjoint would "
                           "disagree with the jvp rule)");
            break;
        }
        case OP_SCAN: {
            bool act = false;
            for (int k = 0; k < in->nres; k++)
                act = act || ad_active(ad, in->res[k]);
            if (!act || ad_scan_kind(ad->fw, in) != SCAN_OTHER)
                break;
            const Block *r = in->regions[0]; /* the general rule: the combine's adjoint rules, lane by lane */
            for (int j = 0; j + 1 < r->insts.n; j++) {
                const Inst *c = &r->insts.v[j];
                OpKind cop = (OpKind)c->op;
                if (c->nres != 1 || !ad_active(ad, c->res[0]) || !op_differentiable(cop))
                    continue;
                if (!has_rule(cop) || (!op_info[cop].elementwise && cop != OP_CONST))
                    diag_error(ad->d, c->loc, "cannot differentiate this tl.associative_scan: its combine "
                               "function uses '%s', for which kad has no elementwise adjoint rule (the scan's "
                               "gradient differentiates the combine function)", op_info[cop].name);
            }
            break;
        }
        case OP_REDUCE: {
            bool act = false;
            for (int k = 0; k < in->nres; k++)
                act = act || ad_active(ad, in->res[k]);
            const Block *r = in->regions[0];
            for (int j = 0; act && j + 1 < r->insts.n; j++) {
                const Inst *c = &r->insts.v[j];
                OpKind cop = (OpKind)c->op;
                if (c->nres != 1 || !ad_active(ad, c->res[0]))
                    continue;
                if (!op_differentiable(cop))
                    continue;
                if (!has_rule(cop) || (!op_info[cop].elementwise && cop != OP_CONST))
                    diag_error(ad->d, c->loc, "cannot differentiate this tl.reduce: its combine function uses "
                               "'%s', for which kad has no elementwise adjoint rule (the reduce's gradient "
                               "differentiates the combine function)", op_info[cop].name);
            }
            break;
        }
        default:
            if ((op == OP_GATHER || op == OP_SORT) && ad_active(ad, in->res[0]) &&
                fw_ty(ad, in->args[0]).rank >= KAD_MAX_RANK)
                diag_error(ad->d, in->loc, "cannot differentiate '%s' of a rank-%d tile: its adjoint works on a "
                           "tile with one more axis and kad's tiles have at most %d", op_info[op].name,
                           KAD_MAX_RANK, KAD_MAX_RANK);
            if (op_differentiable(op) && !has_rule(op) && in->nres == 1 && ad_active(ad, in->res[0]))
                diag_error(ad->d, in->loc, "no adjoint rule for '%s'", op_info[op].name);
            break;
        }
    }
}

