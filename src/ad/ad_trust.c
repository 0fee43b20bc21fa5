/* ad_trust.c -- forward values a trusted backward loads from the buffers the forward stored them in.
 *
 * Job: the backward recomputes the forward in registers (sweep_rev.c), because
 * it cannot know that an output buffer still holds what the forward wrote.
 * Under autograd it can: the package keeps the outputs and checks their
 * version counters before the backward (python/kad/autograd.py).  With
 * AdSpec.trusted (KAD_GRAD_TRUSTED, `kad grad --trusted`) the backward
 * loads such values instead of recomputing them (docs/AD.md, "Trusted saved
 * outputs"):
 *
 *   - a statistic (TRUST_STAT): a value v stored, unmasked and as it is,
 *     by the one store into its buffer (a norm's mean or rstd): its primal
 *     is load(p); the reduction that computed it becomes dead code where
 *     nothing else needs it.  `1 / b` and `1 / sqrt(u)` take their
 *     derivatives from the loaded result (-d*y*y into b, -d*y^3/2 into u),
 *     so b and u need no recomputation either.
 *   - softmax (TRUST_SOFTMAX): y = e / s (or e * (1 / s)) with e = exp(w)
 *     (exp2: w scaled by ln 2), s = sum(e) along one axis broadcast back
 *     along it, stored as it is: its primal is load(p, m, other=0) and its
 *     adjoint dw = c * y * (dy - sum(dy * y)), so max, exp and sum are not
 *     recomputed.
 *   - log-softmax (TRUST_LOGSOFTMAX): y = z - log(s), s = sum(exp(z)): its
 *     primal is load(p, m, other=-inf) and dz = dy - exp(y) * sum(dy).
 *   - either stored through one cast to a narrower float (a bf16 or fp16
 *     output): the load returns y rounded to that type, cast back; the
 *     rule then reads the rounded y, as PyTorch's own softmax backward reads
 *     its narrow saved output (TrustVal.narrow).
 *
 * Exactness.  Where the store's mask holds, the load returns the stored
 * value, the forward's own (rounded to the buffer's type for a narrow
 * softmax output: the one place a trusted backward reads a value that is
 * not the forward's exactly) (the store must be the only write into that
 * buffer, outside loops, of a pure output or a scratch buffer, with one
 * writer per element across the grid: the race check for differentiated
 * outputs, access_injective for scratch).  Off the mask the loaded value
 * is `other`; the softmax forms require that the exponent is -inf there
 * (it comes from a load under the same mask with other=-inf, through float
 * casts, products with positive constants and subtractions of a row
 * value), so the true y is 0 (softmax) or -inf (log-softmax): the load's
 * `other` exactly.  The idiom's intermediates (e, s, log s and their
 * broadcasts) may have no other use, and y none but its store, so their
 * adjoints are all the rule's.  Anything else keeps the recomputation.
 */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "ad/ad_int.h"

static const Inst *def_of(const Ad *ad, ValId v) { return v > 0 && v < ad->nvals ? ad->def[v] : NULL; }

static bool one_use(const Ad *ad, ValId v) { return ad->nuses[v] == 1; }

static bool const_is(const Ad *ad, ValId v, double x)
{
    const Inst *d = def_of(ad, v);
    if (d && d->op == OP_BROADCAST)
        d = def_of(ad, d->args[0]);
    return d && d->op == OP_CONST && dtype_is_float((Dtype)ad->fw->vals.v[d->res[0]].ty.dt) && d->fval == x;
}

static bool const_pos(const Ad *ad, ValId v)
{
    const Inst *d = def_of(ad, v);
    if (d && d->op == OP_BROADCAST)
        d = def_of(ad, d->args[0]);
    return d && d->op == OP_CONST && dtype_is_float((Dtype)ad->fw->vals.v[d->res[0]].ty.dt) && d->fval > 0 &&
           isfinite(d->fval);
}

/* v's source through a broadcast back along `axis` (broadcast, after expand_dims at axis when the
 * reduction dropped it), each step of one use; 0 when v is not such a broadcast. */
static ValId bcast_src(const Ad *ad, ValId v, int axis, bool keep)
{
    const Inst *b = def_of(ad, v);
    if (!b || b->op != OP_BROADCAST || !one_use(ad, v))
        return 0;
    ValId s = b->args[0];
    const Inst *x = def_of(ad, s);
    if (x && x->op == OP_EXPAND_DIMS && !keep) {
        if (x->ival != axis || !one_use(ad, s))
            return 0;
        return x->args[0];
    }
    if (!keep && ad->fw->vals.v[s].ty.rank != 0)
        return 0;
    return s;
}

/* Whether w is -inf wherever the mask m is false: a load under m with other=-inf, through float
 * casts, products with positive constants and subtractions of a broadcast (a row value). */
static bool neg_inf_off(const Ad *ad, ValId w, ValId m, int depth)
{
    const Inst *d = def_of(ad, w);
    if (!d || depth > 8)
        return false;
    switch (d->op) {
    case OP_CAST:
        return dtype_is_float((Dtype)ad->fw->vals.v[d->args[0]].ty.dt) && neg_inf_off(ad, d->args[0], m, depth + 1);
    case OP_MUL:
        return (const_pos(ad, d->args[1]) && neg_inf_off(ad, d->args[0], m, depth + 1)) ||
               (const_pos(ad, d->args[0]) && neg_inf_off(ad, d->args[1], m, depth + 1));
    case OP_SUB: {
        const Inst *b = def_of(ad, d->args[1]);
        return b && b->op == OP_BROADCAST && neg_inf_off(ad, d->args[0], m, depth + 1);
    }
    case OP_LOAD:
        return (d->flags & IF_HAS_MASK) && (d->flags & IF_HAS_OTHER) && d->args[1] == m &&
               const_is(ad, d->args[2], -INFINITY);
    default:
        return false;
    }
}

/* How many writes (stores, atomics) and loads anywhere in b go through parameter p. */
static void count_access(const Ad *ad, const Block *b, int p, int *w, int *r)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nregions; k++)
            count_access(ad, in->regions[k], p, w, r);
        if (!op_writes_memory(in->op) && in->op != OP_LOAD)
            continue;
        int root = ad->root[in->args[0]];
        if (root < 0) /* a pointer of several or unknown params: may be p */
            (*w)++, (*r)++;
        else if (root == p + 1)
            (*(in->op == OP_LOAD ? r : w))++;
    }
}

/* Whether the buffer st writes holds, after the forward, exactly what st stored on each element it
 * wrote: st is the one write into it (nothing reads it), of a pure output or a scratch buffer,
 * its elements written by one lane of one program each. */
static bool kept(Ad *ad, const Inst *st)
{
    int p = ad->root[st->args[0]] - 1;
    if (p < 0 || (ad->role[p] != AD_ROLE_OUT && ad->role[p] != AD_ROLE_NONE))
        return false;
    if (st->flags & IF_DESC)
        return false;
    int nw = 0, nr = 0;
    count_access(ad, ad->fw->body, p, &nw, &nr);
    if (nw != 1 || nr != 0)
        return false;
    if (ad->role[p] == AD_ROLE_OUT) /* one writer per element: refused otherwise (ad_race.c) */
        return true;
    if (!ad->acc)
        ad->acc = access_analyze(ad->a, ad->fw);
    if (access_base(ad->acc, st) != p)
        return false;
    AccResult r = access_injective(ad->acc, st, ACC_VARY_PIDS | ACC_VARY_LANES);
    if (r.v == ACC_PROVEN)
        return true;
    const char *py = r.v == ACC_PROVEN_IF ? access_cond_python(ad->acc, r.cond) : NULL;
    if (!py || !access_cond_host(ad->acc, r.cond, "a", "g"))
        return false;
    /* one program per element under a condition on the launch (the grid's other axes of one
     * program): a guard of the backward, as for stores in loops */
    const char *name = ad->fw->vals.v[ad->fw->params[p]].name;
    FuncGuard g = {ad->acc, r.cond, st->loc,
                   arena_printf(ad->a, "the trusted backward loads '%s' as the forward stored it, which needs "
                                       "one writer per element: %s; this launch breaks it (use the backward "
                                       "built without trusted outputs, which recomputes it)",
                                name ? name : "?", py)};
    vec_push(ad->a, ad->guards, g);
    return true;
}

static TrustVal *trust_new(Ad *ad, int kind, ValId v, const Inst *st, const Block *b)
{
    TrustVal *t = arena_alloc(ad->a, sizeof *t);
    t->kind = kind;
    t->v = v;
    t->store = st;
    t->block = b;
    t->scale = 1.0;
    t->other = 0.0;
    return t;
}

/* y = e / bcast(s) or e * bcast(1 / s), s = sum(e, axis), e = exp(w) or exp2(w). */
static TrustVal *softmax_of(Ad *ad, ValId y, const Inst *st, const Block *b)
{
    const Inst *q = def_of(ad, y);
    if (!q || (q->op != OP_DIV && q->op != OP_MUL))
        return NULL;
    ValId e = q->args[0];
    const Inst *ei = def_of(ad, e);
    if (!ei || (ei->op != OP_EXP && ei->op != OP_EXP2) || ad->nuses[e] != 2)
        return NULL;
    for (int i = 0; i < b->insts.n; i++) { /* e's other use: its sum */
        const Inst *s = &b->insts.v[i];
        if (s->op != OP_SUM || s->args[0] != e || !one_use(ad, s->res[0]))
            continue;
        int axis = (int)s->ival;
        bool keep = (s->flags & IF_KEEP_DIMS) != 0;
        ValId src = bcast_src(ad, q->args[1], axis, keep);
        if (!src)
            return NULL;
        if (q->op == OP_MUL) { /* e * (1 / s) */
            const Inst *r = def_of(ad, src);
            if (!r || r->op != OP_DIV || !const_is(ad, r->args[0], 1.0) || !one_use(ad, src))
                return NULL;
            src = r->args[1];
        }
        if (src != s->res[0])
            return NULL;
        TrustVal *t = trust_new(ad, TRUST_SOFTMAX, y, st, b);
        t->w = ei->args[0];
        t->axis = axis;
        t->keep = keep;
        t->scale = ei->op == OP_EXP2 ? 0.69314718055994530942 : 1.0;
        return t;
    }
    return NULL;
}

/* y = z - bcast(log(s)), s = sum(exp(z), axis). */
static TrustVal *log_softmax_of(Ad *ad, ValId y, const Inst *st, const Block *b)
{
    const Inst *q = def_of(ad, y);
    if (!q || q->op != OP_SUB)
        return NULL;
    ValId z = q->args[0];
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *s = &b->insts.v[i];
        if (s->op != OP_SUM || !one_use(ad, s->res[0]))
            continue;
        const Inst *ei = def_of(ad, s->args[0]);
        if (!ei || ei->op != OP_EXP || ei->args[0] != z || !one_use(ad, s->args[0]))
            continue;
        int axis = (int)s->ival;
        bool keep = (s->flags & IF_KEEP_DIMS) != 0;
        ValId l = bcast_src(ad, q->args[1], axis, keep);
        const Inst *li = def_of(ad, l);
        if (!li || li->op != OP_LOG || li->args[0] != s->res[0] || !one_use(ad, l))
            return NULL;
        TrustVal *t = trust_new(ad, TRUST_LOGSOFTMAX, y, st, b);
        t->w = z;
        t->axis = axis;
        t->keep = keep;
        t->other = -INFINITY;
        return t;
    }
    return NULL;
}

/* Where a softmax rule's adjoint goes (TRUST_SOFTMAX, TRUST_LOGSOFTMAX): the exponent t->w, or,
 * where w = (a - bcast(r)) * c with r any row value broadcast along the reduced axis and each step
 * used only on the way to the idiom, a (with the product by c in t->scale): softmax(w) and
 * log-softmax(w) do not change when a row value is subtracted from w, so r's adjoint is exactly
 * zero and the backward needs neither r (the row max) nor w. */
static void shift_target(Ad *ad, TrustVal *t)
{
    ValId w = t->w;
    int uses = t->kind == TRUST_LOGSOFTMAX ? 2 : 1;
    for (int depth = 0; depth < 4; depth++) {
        const Inst *d = def_of(ad, w);
        if (!d || ad->nuses[w] != uses)
            return;
        uses = 1;
        if (d->op == OP_MUL && (const_pos(ad, d->args[0]) || const_pos(ad, d->args[1]))) {
            int k = const_pos(ad, d->args[1]) ? 1 : 0;
            const Inst *c = def_of(ad, d->args[k]);
            if (c->op == OP_BROADCAST)
                c = def_of(ad, c->args[0]);
            t->scale *= ad->fw->vals.v[c->res[0]].ty.dt == DT_F32 ? (double)(float)c->fval : c->fval;
            w = d->args[1 - k];
            continue;
        }
        if (d->op == OP_SUB && bcast_src(ad, d->args[1], t->axis, t->keep)) {
            t->w = d->args[0];
            t->shifted = true;
            return;
        }
        return;
    }
}

/* The values of b (and of the `if` regions in it, not of loops) the trusted backward loads. */
static void plan_block(Ad *ad, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *st = &b->insts.v[i];
        if (st->op == OP_IF)
            for (int k = 0; k < st->nregions; k++)
                plan_block(ad, st->regions[k]);
        if (st->op != OP_STORE)
            continue;
        ValId v = st->args[1];
        const Inst *d = def_of(ad, v);
        /* a softmax stored through a cast to a narrower float (bf16, fp16 outputs): y itself, whose
         * load then returns it rounded to the buffer's type */
        int narrow = 0;
        if (d && d->op == OP_CAST && d->nres == 1 && one_use(ad, v)) {
            Dtype to = (Dtype)ad->fw->vals.v[v].ty.dt, from = (Dtype)ad->fw->vals.v[d->args[0]].ty.dt;
            if (dtype_is_float(to) && dtype_is_float(from) && dtype_bits(to) < dtype_bits(from) &&
                ad->fw->vals.v[st->args[0]].ty.elem == to) {
                narrow = to;
                v = d->args[0];
                d = def_of(ad, v);
            }
        }
        Type vt = ad->fw->vals.v[v].ty;
        if (!d || d->nres != 1 || d->nregions || !dtype_is_float((Dtype)vt.dt) || op_writes_memory(d->op) ||
            d->op == OP_LOAD || d->op == OP_CONST || ad->trust[v])
            continue;
        /* the value as it is: the buffer's element type is v's (no rounding between), or v rounded
         * by one cast, for the softmax forms only (below) */
        if (!narrow && ad->fw->vals.v[st->args[0]].ty.elem != vt.dt)
            continue;
        bool masked = (st->flags & IF_HAS_MASK) != 0;
        ValId m = masked ? st->args[2] : 0;
        TrustVal *t = NULL;
        if (ad_active(ad, v) && one_use(ad, v)) {
            t = softmax_of(ad, v, st, b);
            if (!t)
                t = log_softmax_of(ad, v, st, b);
            if (t && masked && !neg_inf_off(ad, t->w, m, 0))
                t = NULL;
            if (t) {
                double scale = t->scale;
                shift_target(ad, t);
                if (!t->shifted) /* the products by constants only count on the way to a shift */
                    t->scale = scale;
            }
        }
        if (t)
            t->narrow = narrow;
        if (!t && !narrow && !masked && vt.rank == 0) { /* a statistic: per row, a scalar */
            t = trust_new(ad, TRUST_STAT, v, st, b);
            if (d->op == OP_DIV && const_is(ad, d->args[0], 1.0)) {
                const Inst *sq = def_of(ad, d->args[1]);
                if (sq && sq->op == OP_SQRT && one_use(ad, d->args[1])) {
                    t->kind = TRUST_RSQRT;
                    t->w = sq->args[0];
                } else {
                    t->kind = TRUST_RECIP;
                    t->w = d->args[1];
                }
            } else if (d->op == OP_RSQRT) {
                t->kind = TRUST_RSQRT;
                t->w = d->args[0];
            }
        }
        /* the store must keep the value for the backward: checked (a launch guard added where it
         * needs one) only for a value the backward would load */
        if (t && kept(ad, st)) {
            t->mask = m;
            ad->trust[v] = t;
        }
    }
}

void ad_trust_plan(Ad *ad)
{
    ad->trust = NULL;
    if (!ad->spec->trusted)
        return;
    ad->trust = arena_alloc(ad->a, sizeof(TrustVal *) * (size_t)ad->nvals);
    plan_block(ad, ad->fw->body);
}
