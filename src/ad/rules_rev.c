/* rules_rev.c -- reverse mode's derivative rules (adjoints).
 *
 * Job: adj_rule, every adjoint rule one case per op, neighbours together
 * (its forward-mode twin, tan_rule, is in rules_fwd.c), and what the rules
 * share: accumulating an adjoint (accum), the structural zeros of untaken
 * branches (strong_zero, zm_*), the adjoints of gather, sort, cumprod and
 * the extrema, the reduces and scans with combine regions (adj_reduce,
 * adj_scan).  The reverse sweep (sweep_rev.c) calls them instruction by
 * instruction, backwards, with the primals of the current scope in Ad.pm.
 *
 * Requires: ad_analyze's facts (only active values get adjoints; every
 * active op has a rule, validate_block refused the rest).  Guarantees: code
 * appended to Em.b only; Ad.adj updated for the operands of the instruction.
 * Adjoints of fp16/bf16 values are carried in fp32 (adt()).
 */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "ad/autodiff.h"
#include "ad/ad.h"
#include "ad/ad_int.h"

/* ------------------------------------------------------------------ */
/* Adjoint sweep                                                       */
/* ------------------------------------------------------------------ */


/* adj[v] += c (c cast to v's adjoint dtype); only active values. */
/* Ad.zm (strong_zero, below): v's structural zeros, 0 when none are known. */
static ValId zm_of(const Ad *ad, ValId v) { return v > 0 && v < ad->zm.n ? ad->zm.v[v] : 0; }

/* Whether v's structural zeros include a selection's (a where's untaken side: carried through
 * reductions, where a whole row may take no branch) rather than only a store's masked-off lanes
 * (not carried through them: a row with no live lane has no gradient to lose). */
static bool zm_sel(const Ad *ad, ValId v) { return v > 0 && v < ad->zsel.n && ad->zsel.v[v]; }

void zm_set(Ad *ad, ValId v, ValId m, bool sel)
{
    while (ad->zm.n <= v) {
        vec_push(ad->a, ad->zm, 0);
        vec_push(ad->a, ad->zsel, 0);
    }
    ad->zm.v[v] = m;
    ad->zsel.v[v] = sel;
}

void accum(Em *e, ValId v, ValId c)
{
    Ad *ad = e->ad;
    if (!ad_active(ad, v) || !c)
        return;
    Type t = adt(fty(ad, v));
    ValId zc = zm_of(ad, c);
    c = ecast(e, c, (Dtype)t.dt);
    ASSERT(type_eq(bty(ad, c), t));
    bool sc = zm_sel(ad, c);
    if (zc)
        zm_set(ad, c, zc, sc);
    if (!ad->adj[v]) {
        ad->adj[v] = c;
    } else {
        ValId zo = zm_of(ad, ad->adj[v]);
        ad->adj[v] = e2(e, OP_ADD, ad->adj[v], c);
        if (zo && zc) /* zero where both are */
            zm_set(ad, ad->adj[v], zo == zc ? zo : e2(e, OP_AND, zo, zc), sc || zm_sel(ad, ad->adj[v]));
    }
    name_after(ad, ad->adj[v], "d", v);
}



/* The adjoint of src in y = gather(src, index, axis a): a scatter-add of d
 * into src's shape without atomics, as a one-hot compare and a sum over a
 * tile of index's shape with src's axis length n inserted at a+1:
 * dsrc[.., j, ..] = sum_i (index[.., i, ..] == j) * d[.., i, ..]
 * (numel(index) * n lanes; deterministic: a fixed order of additions). */
static ValId gather_adjoint(Em *e, const Inst *in, ValId d)
{
    Ad *ad = e->ad;
    int a = (int)in->ival;
    int32_t n = fty(ad, in->args[0]).shape[a];
    ValId ie = ewiden(e, P0(ad, in->args[1]), a + 1, n);
    ValId eq = ecmp(e, OP_EQ, ie, eiota(e, bty(ad, ie), a + 1, (Dtype)bty(ad, ie).dt));
    ValId de = ewiden(e, d, a + 1, n);
    return ereduce(e, OP_SUM, ewhere(e, eq, de, ec(e, de, 0.0)), a, false);
}

/* The adjoint of x in y = sort(x) along the last axis (the first k kept):
 * each lane of x takes the adjoint of the position it was sorted to, its
 * stable rank among its row, rank[j] = #{l : x[l] before x[j]} +
 * #{l < j : x[l] == x[j]} (a compare over a [.., n, n] tile and a sum);
 * equal values get distinct ranks, so the adjoint is a permutation of d
 * (a valid gradient at ties, where sort is not differentiable).  NaNs
 * would give no order: the backward asserts there are none. */
static ValId sort_adjoint(Em *e, const Inst *in, ValId d)
{
    Ad *ad = e->ad;
    ValId x = P0(ad, in->args[0]);
    Type xt = bty(ad, x);
    int r = xt.rank;
    int32_t n = xt.shape[r - 1], k = (int32_t)in->ival;
    ValId rank = esort_rank(e, x, in->flags, "the backward of tl.sort/tl.topk needs values without NaN");
    ValId idx = rank;
    if (k < n)
        idx = e2(e, OP_MINIMUM, rank, ir_const_int(ad->bw, e->b, bty(ad, rank), k - 1, e->loc));
    Type gt = type_with_shape(bty(ad, d), r, xt.shape);
    Inst *g = ir_emit(ad->bw, e->b, OP_GATHER, (ValId[]){d, idx}, 2, &gt, 1, e->loc);
    g->ival = r - 1;
    if (k == n)
        return g->res[0];
    ValId kept = ecmp(e, OP_LT, rank, ir_const_int(ad->bw, e->b, bty(ad, rank), k, e->loc));
    return ewhere(e, kept, g->res[0], ec(e, g->res[0], 0.0));
}

/* ---- Structural zeros (docs/AD.md, "Untaken branches: exact zeros") ----
 * Ad.zm marks, per backward value, the lanes where an adjoint is 0 because no gradient
 * reaches them: a tl.where's untaken side, the lanes a maximum did not pick, a store's
 * masked-off lanes.  It follows the adjoint through elementwise rules (give) and sums of
 * contributions (accum: the lanes zero in both).  A zero that arithmetic produced (dy / inf)
 * is not structural: there the product with a non-finite partial stays NaN, as it should. */

/* The structural zeros of unbroadcast(d, xt) from d's, z: the lanes where every lane summed is
 * zero (min over the summed axes). */
static ValId zm_unbroadcast(Em *e, ValId z, Type xt)
{
    Type zt = bty(e->ad, z);
    ValId m = ecast(e, z, DT_I32);
    if (xt.rank == 0) {
        while (bty(e->ad, m).rank > 0)
            m = ereduce(e, OP_MIN, m, 0, false);
    } else {
        for (int i = 0; i < xt.rank; i++)
            if (xt.shape[i] == 1 && zt.shape[i] != 1)
                m = ereduce(e, OP_MIN, m, i, true);
    }
    return ecmp(e, OP_NE, m, ir_const_int(e->ad->bw, e->b, bty(e->ad, m), 0, e->loc));
}

/* The lanes of z1 or z2 (0: none). */
static ValId zm_or(Em *e, ValId z1, ValId z2)
{
    return !z1 ? z2 : !z2 || z1 == z2 ? z1 : e2(e, OP_OR, z1, z2);
}

/* d on the lanes where c is take, 0 elsewhere: where(c, d, 0) or where(c, 0, d), with
 * its structural zeros (the other lanes, and d's). */
ValId eselect(Em *e, ValId c, ValId d, bool take)
{
    ValId z = ec(e, d, 0.0), r = take ? ewhere(e, c, d, z) : ewhere(e, c, z, d);
    zm_set(e->ad, r, zm_or(e, take ? e1(e, OP_NOT, c) : c, zm_of(e->ad, d)), true);
    return r;
}

/* Operand k's contribution x made exactly 0 on the lanes where no gradient reaches the
 * result (zm of its adjoint d), when ad_partial_unsafe says the partial may be non-finite
 * (a branch tl.where does not take: d = 0 there, the partial inf or NaN):
 * where(zm, 0, x).  Elsewhere x unchanged, bit for bit; no code where the partial is
 * finite or no lane is known to get nothing.  A contribution already guarded (x is c[j]:
 * x * x) is not guarded twice. */
static ValId strong_zero(Em *e, const Inst *in, const ValId *c, int k, ValId x)
{
    Ad *ad = e->ad;
    ValId d = ad->adj[in->res[0]], zm = zm_of(ad, d);
    if (!zm || !ad_partial_unsafe(&ad->fin, in, k))
        return x;
    for (int j = 0; j < in->nargs; j++)
        if (c[j] == x)
            return x;
    ASSERT(type_eq(bty(ad, d), bty(ad, x)));
    return ewhere(e, zm, ec(e, x, 0.0), x);
}

/* Hands operand k's contribution x to accum(), or, when the same value is
 * also operand j != k, keeps it in c[k]: merge_contribs() adds those up so
 * that the value's adjoint gets one term (x * x gives (d * x) * 2).  The
 * contribution gets its strong zero first (strong_zero). */
static void give(Em *e, const Inst *in, ValId *c, int k, ValId x)
{
    Ad *ad = e->ad;
    ValId d = ad->adj[in->res[0]];
    x = strong_zero(e, in, c, k, x);
    /* an elementwise rule's contribution is 0 where its adjoint is (guarded, or a finite
     * partial times 0) */
    if (!zm_of(ad, x) && zm_of(ad, d) && op_info[in->op].elementwise && type_same_shape(bty(ad, x), bty(ad, d)))
        zm_set(ad, x, zm_of(ad, d), zm_sel(ad, d));
    for (int j = 0; j < in->nargs; j++)
        if (j != k && in->args[j] == in->args[k]) {
            c[k] = x;
            return;
        }
    accum(e, in->args[k], x);
}

static void merge_contribs(Em *e, const Inst *in, ValId *c)
{
    for (int k = 1; k < in->nargs; k++)
        for (int j = 0; j < k && c[k]; j++)
            if (c[j] && in->args[j] == in->args[k]) {
                c[j] = c[j] == c[k] ? e2(e, OP_MUL, c[j], ec(e, c[j], 2.0)) : e2(e, OP_ADD, c[j], c[k]);
                c[k] = 0;
            }
    for (int k = 0; k < in->nargs; k++)
        if (c[k])
            accum(e, in->args[k], c[k]);
}

/* ---- scans (docs/AD.md, "Scans") ---- */

/* A combine region's body: p holds the 2n params (the running values, then
 * the next element's); writes the n yielded values to y. */
typedef void (*CombineFn)(Em *e, const ValId *p, ValId *y);

/* A scan over xs (backward values of one shape) along axis with the
 * combine region body() builds; returns its results. */
static ValId *escan(Em *e, const ValId *xs, int n, int axis, bool rev, CombineFn body, const char *const *names)
{
    Func *f = e->ad->bw;
    Type rt[4] = {{0}};
    ASSERT(n <= 4);
    for (int i = 0; i < n; i++)
        rt[i] = bty(e->ad, xs[i]);
    Inst *in = ir_emit(f, e->b, OP_SCAN, xs, n, rt, n, e->loc);
    in->ival = axis;
    in->flags = rev ? IF_REVERSE : 0;
    ValId *res = in->res;
    Block *rb = ir_inst_add_region(f, in);
    ValId p[8], y[4];
    for (int i = 0; i < 2 * n; i++)
        p[i] = ir_block_param_add(f, rb, type_with_shape(rt[i % n], 0, NULL), names[i], e->loc);
    Em re = em_rev(e->ad, rb, e->loc);
    body(&re, p, y);
    ir_emit(f, rb, OP_YIELD, y, n, NULL, 0, e->loc);
    return res;
}

/* (a1, b1) then (a2, b2): (a1*a2, a2*b1 + b2) */
static void combine_linrec(Em *e, const ValId *p, ValId *y)
{
    y[0] = e2(e, OP_MUL, p[0], p[2]);
    y[1] = e2(e, OP_ADD, e2(e, OP_MUL, p[2], p[1]), p[3]);
}

/* (last, prev, count): the segment's last value, the one before it (the
 * fill while the segment has one element) and its length. */
static void combine_shift(Em *e, const ValId *p, ValId *y)
{
    Func *f = e->ad->bw;
    ValId two = ir_const_int(f, e->b, bty(e->ad, p[2]), 2, e->loc);
    y[0] = p[3];
    y[1] = ewhere(e, ecmp(e, OP_GE, p[5], two), p[4], p[0]);
    y[2] = e2(e, OP_ADD, p[2], p[5]);
}

/* (key, sum): the key of the segment's last element and the sum of the
 * values of its trailing run of that key (keys monotone along the scan). */
static void combine_segsum(Em *e, const ValId *p, ValId *y)
{
    y[0] = p[2];
    y[1] = e2(e, OP_ADD, p[3], ewhere(e, ecmp(e, OP_EQ, p[0], p[2]), p[1], ec(e, p[1], 0.0)));
}

/* x shifted by one along axis in the direction of a scan with `rev`: lane t
 * gets x[t-1] (rev: x[t+1]), the first lane in that direction `fill`.
 * Exact: values are only selected. */
static ValId eshift(Em *e, ValId x, int axis, bool rev, double fill)
{
    Type t = bty(e->ad, x);
    ValId xs[3] = {x, ec(e, x, fill), ir_const_int(e->ad->bw, e->b, type_with_dtype(t, DT_I32), 1, e->loc)};
    static const char *const names[] = {"last1", "prev1", "n1", "last2", "prev2", "n2"};
    return escan(e, xs, 3, axis, rev, combine_shift, names)[1];
}

/* g[s] = sum over t at or after s (in the direction of rev) of
 * d[t] * prod of a[r] for r strictly after s up to t: a linear recurrence
 * run against the direction of rev, with the coefficients shifted by one. */
static ValId suffix_linrec(Em *e, ValId a, ValId d, int axis, bool rev)
{
    ValId xs[2] = {eshift(e, a, axis, !rev, 0.0), d};
    static const char *const names[] = {"a1", "b1", "a2", "b2"};
    return escan(e, xs, 2, axis, !rev, combine_linrec, names)[1];
}

/* The adjoint of y = cumprod(x) (direction rev): dx[s] = (product of the x
 * before s) * g[s], with g as above: exact with zeros, no division. */
static ValId cumprod_adjoint(Em *e, ValId x, ValId y, ValId d, int axis, bool rev)
{
    return e2(e, OP_MUL, eshift(e, y, axis, rev, 1.0), suffix_linrec(e, x, d, axis, rev));
}

/* The adjoint of x in y = max or min of x along axis (keep: keep_dims), d
 * the adjoint of y: lanes equal to the result share d evenly (PyTorch's
 * amax/amin). */
static ValId extremum_adjoint(Em *e, ValId fx, ValId fy, ValId d, int axis, bool keep)
{
    Ad *ad = e->ad;
    Type xt = fty(ad, fx);
    ValId x = P(e, fx);
    ValId yb = bcast_back(e, P(e, fy), xt, axis, keep);
    ValId db = bcast_back(e, d, xt, axis, keep);
    ValId m = ecmp(e, OP_EQ, x, yb);
    ValId cnt = ereduce(e, OP_SUM, ecast(e, m, (Dtype)bty(ad, d).dt), axis, true);
    ValId cb = bcast_back(e, cnt, xt, axis, true);
    return ewhere(e, m, e2(e, OP_DIV, db, cb), ec(e, db, 0.0));
}

/* Every adjoint rule, one case per op, neighbours together (tan_rule in
 * rules_fwd.c has forward mode's in the same order).  d is the
 * adjoint of the result y; GIVE(k, x) adds x to operand k's adjoint
 * (inactive operands ignore it; ACT() saves emitting code for them). */
/* v is the float constant 1 (through broadcasts) */
static bool float_one(const Ad *ad, ValId v)
{
    for (const Inst *in = ad->def[v]; in; in = ad->def[in->args[0]]) {
        if (in->op == OP_CONST)
            return is_float(fw_ty(ad, v)) && in->fval == 1.0;
        if (in->op != OP_BROADCAST && in->op != OP_EXPAND_DIMS)
            return false;
    }
    return false;
}

void adj_rule(Em *e, const Inst *in)
{
    Ad *ad = e->ad;
    ValId y = in->res[0], d = ad->adj[y];
    if (!d || !ad_active(ad, y))
        return;
    ValId a0 = in->args[0], a1 = in->nargs > 1 ? in->args[1] : 0, a2 = in->nargs > 2 ? in->args[2] : 0;
    ValId c[3] = {0, 0, 0}; /* contributions to repeated operands (give) */
    ASSERT(in->nargs <= 3);
#define ACT(v) ad_active(ad, (v))
#define GIVE(k, x) give(e, in, c, (k), (x))
#define K(v) ec(e, d, (v))
    switch ((OpKind)in->op) {
    /* arithmetic */
    case OP_ADD:
        GIVE(0, d);
        GIVE(1, d);
        break;
    case OP_SUB:
        GIVE(0, d);
        if (ACT(a1))
            GIVE(1, NEG(d));
        break;
    case OP_MUL:
        if (ACT(a0))
            GIVE(0, MUL(d, P(e, ad->spec->mutate == AD_MUTATE_MUL ? a0 : a1)));
        if (ACT(a1))
            GIVE(1, a1 == a0 && c[0] ? c[0] : MUL(d, P(e, a0)));
        break;
    case OP_DIV: /* y = a/b: da = d/b, db = -d*y/b; y = 1/b (a sigmoid's): db = -d*y*y, no division */
        if (ACT(a0))
            GIVE(0, DIV(d, P(e, a1)));
        if (ACT(a1))
            GIVE(1, float_one(ad, a0) ? NEG(MUL(MUL(d, P(e, y)), P(e, y))) : NEG(DIV(MUL(d, P(e, y)), P(e, a1))));
        break;
    case OP_REM: /* float fmod: y = a - trunc(a/b)*b */
        GIVE(0, d);
        if (ACT(a1))
            GIVE(1, NEG(MUL(d, e1(e, OP_TRUNC, DIV(P(e, a0), P(e, a1))))));
        break;
    case OP_POW: /* da = d*b*a^(b-1), db = d*y*log(a) */
        if (ACT(a0))
            GIVE(0, MUL(MUL(d, P(e, a1)), e2(e, OP_POW, P(e, a0), SUB(P(e, a1), K(1.0)))));
        if (ACT(a1))
            GIVE(1, MUL(MUL(d, P(e, y)), e1(e, OP_LOG, P(e, a0))));
        break;
    case OP_MAXIMUM: /* ties: the whole gradient to the first operand */
    case OP_MINIMUM: {
        ValId m = ecmp(e, in->op == OP_MAXIMUM ? OP_GE : OP_LE, P(e, a0), P(e, a1));
        if (ACT(a0))
            GIVE(0, eselect(e, m, d, true));
        if (ACT(a1))
            GIVE(1, eselect(e, m, d, false));
        break;
    }
    case OP_ATAN2: { /* atan2(a, b): da = d*b/(a^2+b^2), db = -d*a/(a^2+b^2) */
        ValId pa = P(e, a0), pb = P(e, a1);
        ValId r = ADD(MUL(pa, pa), MUL(pb, pb));
        if (ACT(a0))
            GIVE(0, DIV(MUL(d, pb), r));
        if (ACT(a1))
            GIVE(1, NEG(DIV(MUL(d, pa), r)));
        break;
    }
    case OP_NEG:
        GIVE(0, NEG(d));
        break;
    case OP_ABS: { /* sign(x)*d, 0 at x == 0 (PyTorch's convention) */
        ValId x = P(e, a0), z = K(0.0);
        GIVE(0, ewhere(e, ecmp(e, OP_GT, x, z), d, ewhere(e, ecmp(e, OP_LT, x, z), NEG(d), z)));
        break;
    }
    case OP_FMA: /* a*b + c */
        if (ACT(a0))
            GIVE(0, MUL(d, P(e, a1)));
        if (ACT(a1))
            GIVE(1, a1 == a0 && c[0] ? c[0] : MUL(d, P(e, a0)));
        GIVE(2, d);
        break;
    case OP_WHERE: { /* the condition gets nothing; each side its lanes */
        bool swap = ad->spec->mutate == AD_MUTATE_WHERE;
        if (ACT(a1))
            GIVE(1, eselect(e, P0(ad, a0), d, !swap));
        if (ACT(a2))
            GIVE(2, eselect(e, P0(ad, a0), d, swap));
        break;
    }
    case OP_CAST: /* the adjoint cast back (accum converts to the operand's adjoint dtype) */
        GIVE(0, d);
        break;
    /* elementwise math: y = f(x) */
    case OP_EXP:
        GIVE(0, MUL(d, P(e, ad->spec->mutate == AD_MUTATE_EXP ? a0 : y)));
        break;
    case OP_EXP2:
        GIVE(0, MUL(MUL(d, P(e, y)), K(AD_LN2)));
        break;
    case OP_EXPM1:
        GIVE(0, MUL(d, ADD(P(e, y), K(1.0))));
        break;
    case OP_LOG:
        GIVE(0, DIV(d, P(e, a0)));
        break;
    case OP_LOG2:
        GIVE(0, DIV(d, MUL(P(e, a0), K(AD_LN2))));
        break;
    case OP_LOG1P:
        GIVE(0, DIV(d, ADD(P(e, a0), K(1.0))));
        break;
    case OP_SQRT:
        GIVE(0, DIV(MUL(d, K(0.5)), P(e, y)));
        break;
    case OP_RSQRT: { /* -0.5*d*y^3 */
        ValId py = P(e, y);
        GIVE(0, MUL(MUL(d, K(-0.5)), MUL(py, MUL(py, py))));
        break;
    }
    case OP_SIGMOID: {
        ValId py = P(e, y);
        GIVE(0, MUL(d, MUL(py, SUB(K(1.0), py))));
        break;
    }
    case OP_SIN:
        GIVE(0, MUL(d, e1(e, OP_COS, P(e, a0))));
        break;
    case OP_COS:
        GIVE(0, NEG(MUL(d, e1(e, OP_SIN, P(e, a0)))));
        break;
    case OP_TAN: {
        ValId py = P(e, y);
        GIVE(0, MUL(d, ADD(K(1.0), MUL(py, py))));
        break;
    }
    case OP_ASIN:
    case OP_ACOS: { /* +-d/sqrt(1-x^2) */
        ValId x = P(e, a0);
        ValId g = MUL(d, e1(e, OP_RSQRT, SUB(K(1.0), MUL(x, x))));
        GIVE(0, in->op == OP_ASIN ? g : NEG(g));
        break;
    }
    case OP_ATAN: {
        ValId x = P(e, a0);
        GIVE(0, DIV(d, ADD(K(1.0), MUL(x, x))));
        break;
    }
    case OP_SINH:
        GIVE(0, MUL(d, e1(e, OP_COSH, P(e, a0))));
        break;
    case OP_COSH:
        GIVE(0, MUL(d, e1(e, OP_SINH, P(e, a0))));
        break;
    case OP_TANH: {
        ValId py = P(e, y);
        GIVE(0, MUL(d, SUB(K(1.0), MUL(py, py))));
        break;
    }
    case OP_ERF: { /* d * 2/sqrt(pi) * exp(-x^2) */
        ValId x = P(e, a0);
        GIVE(0, MUL(MUL(d, K(AD_2_SQRTPI)), e1(e, OP_EXP, NEG(MUL(x, x)))));
        break;
    }
    /* shape ops */
    case OP_BROADCAST: { /* zero where every lane summed is (a branch no lane of a row takes) */
        ValId r = unbroadcast(e, d, adt(fty(ad, a0)));
        if (zm_sel(ad, d))
            zm_set(ad, r, zm_unbroadcast(e, zm_of(ad, d), fty(ad, a0)), true);
        GIVE(0, r);
        break;
    }
    case OP_EXPAND_DIMS:
    case OP_RESHAPE: {
        ValId r = eshape(e, OP_RESHAPE, d, adt(fty(ad, a0)), 0);
        if (zm_of(ad, d))
            zm_set(ad, r, eshape(e, OP_RESHAPE, zm_of(ad, d), type_with_dtype(fty(ad, a0), DT_I1), 0),
                   zm_sel(ad, d));
        GIVE(0, r);
        break;
    }
    case OP_PERMUTE: {
        int32_t inv[KAD_MAX_RANK];
        for (int i = 0; i < in->nints; i++)
            inv[in->ints[i]] = i;
        GIVE(0, epermute(e, d, inv));
        break;
    }
    case OP_JOIN: {
        Type t = bty(ad, d);
        for (int k = 0; k < 2; k++)
            if (ACT(in->args[k]))
                GIVE(k, eshape(e, OP_SPLIT, d, type_with_shape(t, t.rank - 1, t.shape), k));
        break;
    }
    case OP_SPLIT: {
        Type t = bty(ad, d);
        int32_t sh[KAD_MAX_RANK];
        memcpy(sh, t.shape, sizeof sh);
        sh[t.rank] = 2;
        int h = (int)in->ival;
        /* the other half's split already gave join(d', 0) (or join(0, d')) as the whole adjoint
         * of x in this block: one join(d', d) replaces it instead of adding a second join */
        const Inst *j = ad->adj[a0] ? ir_block_def(e->b, ad->adj[a0]) : NULL;
        const Inst *z0 = j && j->op == OP_JOIN ? ir_block_def(e->b, j->args[h]) : NULL;
        if (z0 && z0->op == OP_CONST && z0->fval == 0.0 && type_eq(bty(ad, j->args[1 - h]), t)) {
            ValId other = j->args[1 - h];
            ad->adj[a0] = ir_op2(ad->bw, e->b, OP_JOIN, type_with_shape(t, t.rank + 1, sh), h ? other : d,
                                 h ? d : other, e->loc);
            name_after(ad, ad->adj[a0], "d", a0);
            break;
        }
        ValId z = K(0.0);
        GIVE(0, ir_op2(ad->bw, e->b, OP_JOIN, type_with_shape(t, t.rank + 1, sh), h ? z : d, h ? d : z, e->loc));
        break;
    }
    case OP_CUSTOM_JVP: /* the tangent rule is forward mode's: the adjoint goes to operand 0 */
        GIVE(0, d);
        break;
    case OP_FLIP:
        GIVE(0, eshape(e, OP_FLIP, d, bty(ad, d), in->ival));
        break;
    case OP_GATHER:
        GIVE(0, gather_adjoint(e, in, d));
        break;
    case OP_SORT:
        GIVE(0, sort_adjoint(e, in, d));
        break;
    /* reductions and scans */
    case OP_SUM: {
        ValId r = bcast_back(e, d, fty(ad, a0), (int)in->ival, in->flags & IF_KEEP_DIMS);
        if (zm_of(ad, d))
            zm_set(ad, r, bcast_back(e, zm_of(ad, d), fty(ad, a0), (int)in->ival, in->flags & IF_KEEP_DIMS),
                   zm_sel(ad, d));
        GIVE(0, r);
        break;
    }
    case OP_MAX:
    case OP_MIN:
        if (ad->spec->mutate == AD_MUTATE_MAX)
            GIVE(0, bcast_back(e, d, fty(ad, a0), (int)in->ival, in->flags & IF_KEEP_DIMS));
        else
            GIVE(0, extremum_adjoint(e, a0, y, d, (int)in->ival, in->flags & IF_KEEP_DIMS));
        break;
    case OP_CUMSUM: {
        Inst *ni = ir_emit(ad->bw, e->b, OP_CUMSUM, &d, 1, (Type[]){bty(ad, d)}, 1, e->loc);
        ni->ival = in->ival;
        ni->flags = (uint16_t)((in->flags & IF_REVERSE) ^ (ad->spec->mutate == AD_MUTATE_CUMSUM ? 0 : IF_REVERSE));
        GIVE(0, ni->res[0]);
        break;
    }
    case OP_CUMPROD:
        GIVE(0, cumprod_adjoint(e, P(e, a0), P(e, y), d, (int)in->ival, in->flags & IF_REVERSE));
        break;
    case OP_DOT: { /* y = a@b + acc: da = d@b^T, db = a^T@d, dacc = d */
        /* ^T swaps the last two axes; a leading batch axis (3-D dot) stays */
        int32_t tr[KAD_MAX_RANK];
        int rank = fty(ad, a0).rank;
        for (int i = 0; i < rank; i++)
            tr[i] = i;
        tr[rank - 2] = rank - 1;
        tr[rank - 1] = rank - 2;
        Type at = adt(fty(ad, a0)), bt = adt(fty(ad, a1));
        at.dt = bt.dt = bty(ad, d).dt;
        if (ACT(a0)) {
            ValId z = ezero(e, at);
            ValId r = ir_op3(ad->bw, e->b, OP_DOT, at, d, epermute(e, P(e, a1), tr), z, e->loc);
            e->b->insts.v[e->b->insts.n - 1].ival = in->ival;
            GIVE(0, r);
        }
        if (ACT(a1)) {
            ValId z = ezero(e, bt);
            ValId r = ir_op3(ad->bw, e->b, OP_DOT, bt, epermute(e, P(e, a0), tr), d, z, e->loc);
            e->b->insts.v[e->b->insts.n - 1].ival = in->ival;
            GIVE(1, r);
        }
        GIVE(2, d);
        break;
    }
#define LIBM_CASE(en, ...) case en:
    KAD_LIBM_OPS(LIBM_CASE)
#undef LIBM_CASE
    { /* libdevice functions: d * dy/da_k (src/ad/ad_libm.c) */
        ValId pa[3] = {0, 0, 0};
        for (int k = 0; k < in->nargs; k++)
            pa[k] = P(e, in->args[k]);
        for (int k = 0; k < in->nargs; k++)
            if (ACT(in->args[k])) {
                ValId p = ad_libm_partial(ad->bw, e->b, e->loc, in, k, pa, P(e, y));
                if (p && ad->spec->mutate == AD_MUTATE_LIBM)
                    p = MUL(p, K(2.0));
                if (p)
                    GIVE(k, MUL(d, p));
            }
        break;
    }
    default:
        /* validate_block refused every active op without a rule */
        die("no adjoint rule for '%s'", op_info[in->op].name);
    }
    merge_contribs(e, in, c);
#undef ACT
#undef GIVE
#undef K
}

/* i32 tile of shape t holding each lane's index along axis. */
static ValId axis_index(Em *e, Type t, int axis)
{
    Func *f = e->ad->bw;
    int32_t len = t.shape[axis], sh[KAD_MAX_RANK];
    Inst *ar = ir_emit(f, e->b, OP_ARANGE, NULL, 0, (Type[]){type_tile(DT_I32, 1, &len)}, 1, e->loc);
    ar->ival = 0;
    ValId v = ar->res[0];
    if (t.rank > 1) {
        for (int i = 0; i < t.rank; i++)
            sh[i] = i == axis ? len : 1;
        v = eshape(e, OP_RESHAPE, v, type_tile(DT_I32, t.rank, sh), 0);
    }
    return eshape(e, OP_BROADCAST, v, type_with_dtype(t, DT_I32), 0);
}

/* ---- reduces with a combine function (docs/AD.md, "Reduces") ---- */

/* An inclusive scan of the primal values xs with in's combine region
 * copied; swap: the region's two halves of params exchanged, f(b, a), so
 * that a reverse scan folds each element in front of the ones after it. */
static ValId *combine_scan(Em *e, const Inst *in, const ValId *xs, bool rev, bool swap)
{
    Ad *ad = e->ad;
    Func *f = ad->bw;
    const Block *fr = in->regions[0];
    int n = in->nargs;
    Type *rt = arena_alloc(ad->a, sizeof *rt * (size_t)n);
    for (int i = 0; i < n; i++)
        rt[i] = bty(ad, xs[i]);
    Inst *ni = ir_emit(f, e->b, OP_SCAN, xs, n, rt, n, e->loc);
    ni->ival = in->ival;
    ni->flags = rev ? IF_REVERSE : 0;
    ValId *res = ni->res;
    Block *rb = ir_inst_add_region(f, ni);
    ValId *m = arena_alloc(ad->a, sizeof *m * (size_t)ad->fw->vals.n);
    ValId *np = arena_alloc(ad->a, sizeof *np * (size_t)(2 * n));
    for (int i = 0; i < 2 * n; i++)
        np[i] = ir_block_param_add(f, rb, fty(ad, fr->params[i]), fname(ad, fr->params[i]), e->loc);
    for (int i = 0; i < 2 * n; i++)
        m[fr->params[i]] = np[swap ? (i + n) % (2 * n) : i];
    copy_combine_body(ad, rb, fr, m, &e->loc);
    return res;
}

/* x shifted by one along axis (rev: lane t gets x[t+1], else x[t-1]); the
 * first lane in that direction keeps its own value (any dtype). */
static ValId shift_any(Em *e, ValId x, int axis, bool rev)
{
    Type t = bty(e->ad, x);
    ValId xs[3] = {x, x, ir_const_int(e->ad->bw, e->b, type_with_dtype(t, DT_I32), 1, e->loc)};
    static const char *const names[] = {"last1", "prev1", "n1", "last2", "prev2", "n2"};
    return escan(e, xs, 3, axis, rev, combine_shift, names)[1];
}

/* The combine region applied lane by lane to tiles: params 0..n-1 get a,
 * n..2n-1 get b (the region's values typed as tiles: ad->lanes, set by the caller);
 * pm maps each region value to its tile. */
static void apply_combine(Em *e, const Inst *in, const ValId *a, const ValId *b)
{
    Ad *ad = e->ad;
    const Block *fr = in->regions[0];
    int n = in->nargs;
    for (int i = 0; i < n; i++) {
        ad->pm[fr->params[i]] = a[i];
        ad->pm[fr->params[n + i]] = b[i];
    }
    for (int k = 0; k + 1 < fr->insts.n; k++) {
        const Inst *c = &fr->insts.v[k];
        ValId *args = arena_alloc(ad->a, sizeof *args * (size_t)(c->nargs + 1));
        for (int j = 0; j < c->nargs; j++)
            args[j] = ad->pm[c->args[j]];
        ad->pm[c->res[0]] = emit_like(ad, e->b, c, args)->res[0];
    }
}

/* The adjoints of the combine's params 0..n-1 (first) or n..2n-1 from
 * the seeds on its yields, through the primal tiles pm holds: the region's
 * instructions walked backwards with adj_rule.  Missing adjoints: zeros
 * shaped like zero_like[i]. */
static void vjp_combine(Em *e, const Inst *in, const ValId *seed, bool first, const ValId *zero_like, ValId *out)
{
    Ad *ad = e->ad;
    const Block *fr = in->regions[0];
    const Inst *y = ad_block_term(fr);
    int n = in->nargs;
    for (int i = 0; i < fr->nparams; i++)
        ad->adj[fr->params[i]] = 0;
    for (int k = 0; k < fr->insts.n; k++)
        if (fr->insts.v[k].nres == 1)
            ad->adj[fr->insts.v[k].res[0]] = 0;
    for (int i = 0; i < n; i++)
        if (seed[i])
            accum(e, y->args[i], seed[i]);
    for (int k = fr->insts.n - 2; k >= 0; k--) {
        const Inst *c = &fr->insts.v[k];
        if (op_differentiable((OpKind)c->op) && c->nres == 1)
            adj_rule(e, c);
    }
    for (int i = 0; i < n; i++) {
        ValId d = ad->adj[fr->params[first ? i : n + i]];
        out[i] = d ? d : (zero_like[i] ? ec(e, zero_like[i], 0.0) : 0);
    }
}

/* The adjoint of r = reduce(x, f) along axis: for lane i, with P_i the
 * reduction of the lanes before it and S_i of those after it,
 * r = f(f(P_i, x_i), S_i) (f associative), so dx_i is the VJP of
 * x -> f(f(P_i, x), S_i) at x_i applied to dr; the first lane has no P
 * and the last no S (selected away).  P and S are inclusive scans with f
 * shifted by one lane.  A sum combine is a broadcast; a tl.maximum or
 * tl.minimum combine has tl.max's rule (ties share dr evenly). */
/* A combine region fr's params and single results (*rv, the count returned), marked in ad->lanes
 * to be typed as tiles of xt while the region is applied and differentiated lane by lane. */
static int region_lanes(Ad *ad, const Block *fr, Type xt, ValId **rv_out)
{
    int nv = 0;
    ValId *rv = arena_alloc(ad->a, sizeof *rv * (size_t)(fr->nparams + fr->insts.n));
    uint8_t *lanes = arena_alloc(ad->a, (size_t)ad->fw->vals.n);
    for (int i = 0; i < fr->nparams; i++)
        rv[nv++] = fr->params[i];
    for (int k = 0; k < fr->insts.n; k++)
        if (fr->insts.v[k].nres == 1)
            rv[nv++] = fr->insts.v[k].res[0];
    for (int i = 0; i < nv; i++)
        lanes[rv[i]] = 1;
    ad->lanes = lanes;
    ad->lane_ty = xt;
    *rv_out = rv;
    return nv;
}

void adj_reduce(Em *e, const Inst *in)
{
    Ad *ad = e->ad;
    int n = in->nargs, axis = (int)in->ival;
    const Block *fr = in->regions[0];
    const Inst *fy = ad_block_term(fr);
    bool any = false, act = false;
    for (int k = 0; k < n; k++) {
        any |= ad->adj[in->res[k]] && ad_active(ad, in->res[k]);
        act |= ad_active(ad, in->args[k]);
    }
    if (!any || !act)
        return;
    Type xt = fty(ad, in->args[0]);
    const Inst *c0 = &fr->insts.v[0];
    bool two = n == 1 && fr->insts.n == 2 && fy->args[0] == c0->res[0] &&
               ((c0->args[0] == fr->params[0] && c0->args[1] == fr->params[1]) ||
                (c0->args[0] == fr->params[1] && c0->args[1] == fr->params[0]));
    if (two && c0->op == OP_ADD) { /* a sum: broadcast */
        accum(e, in->args[0], bcast_back(e, ad->adj[in->res[0]], xt, axis, false));
        return;
    }
    if (two && (c0->op == OP_MAXIMUM || c0->op == OP_MINIMUM)) { /* tl.max / tl.min's rule */
        accum(e, in->args[0], extremum_adjoint(e, in->args[0], in->res[0], ad->adj[in->res[0]], axis, false));
        return;
    }
    ValId *x = arena_alloc(ad->a, sizeof *x * (size_t)n), *P = arena_alloc(ad->a, sizeof *P * (size_t)n);
    ValId *S = arena_alloc(ad->a, sizeof *S * (size_t)n), *db = arena_alloc(ad->a, sizeof *db * (size_t)n);
    ValId *Z = arena_alloc(ad->a, sizeof *Z * (size_t)n), *dZ = arena_alloc(ad->a, sizeof *dZ * (size_t)n);
    ValId *dx = arena_alloc(ad->a, sizeof *dx * (size_t)n);
    for (int k = 0; k < n; k++)
        x[k] = P0(ad, in->args[k]);
    ValId *incl = combine_scan(e, in, x, false, false), *rincl = combine_scan(e, in, x, true, true);
    for (int k = 0; k < n; k++) {
        P[k] = shift_any(e, incl[k], axis, false);
        S[k] = shift_any(e, rincl[k], axis, true);
        ValId d = ad_active(ad, in->res[k]) ? ad->adj[in->res[k]] : 0;
        db[k] = d ? bcast_back(e, d, type_with_dtype(xt, (Dtype)adt(fty(ad, in->args[k])).dt), axis, false) : 0;
    }
    ValId idx = axis_index(e, xt, axis);
    ValId first = ecmp(e, OP_EQ, idx, ir_const_int(ad->bw, e->b, bty(ad, idx), 0, e->loc));
    ValId last = ecmp(e, OP_EQ, idx, ir_const_int(ad->bw, e->b, bty(ad, idx), xt.shape[axis] - 1, e->loc));
    /* the region's values typed as tiles of x's shape (fty) while it is
     * applied and differentiated lane by lane */
    ValId *rv;
    int nv = region_lanes(ad, fr, xt, &rv);
    ValId *pin = arena_alloc(ad->a, sizeof *pin * (size_t)nv);
    apply_combine(e, in, P, x); /* Z = f(P, x) */
    for (int i = 0; i < nv; i++)
        pin[i] = ad->pm[rv[i]];
    for (int k = 0; k < n; k++)
        Z[k] = ewhere(e, first, x[k], ad->pm[fy->args[k]]);
    apply_combine(e, in, Z, S); /* f(Z, S) */
    vjp_combine(e, in, db, true, db, dZ);
    for (int k = 0; k < n; k++) /* the last lane: dZ = dr (zero for a slot without one) */
        if (dZ[k])
            dZ[k] = ewhere(e, last, db[k] ? db[k] : ec(e, dZ[k], 0.0), dZ[k]);
    for (int i = 0; i < nv; i++)
        ad->pm[rv[i]] = pin[i];
    vjp_combine(e, in, dZ, false, dZ, dx);
    ad->lanes = NULL;
    for (int i = 0; i < nv; i++) {
        ad->pm[rv[i]] = 0;
        ad->adj[rv[i]] = 0;
    }
    for (int k = 0; k < n; k++)
        if (dx[k] && ad_active(ad, in->args[k]))
            accum(e, in->args[k], ewhere(e, first, dZ[k] ? dZ[k] : ec(e, dx[k], 0.0), dx[k]));
}

/* A selection scan's source positions: the forward's scan again, its
 * combine region copied, with an i32 slot per selected float slot k that
 * active[k] marks, choosing its index where the region chooses the value
 * (ad_scan_select).  src[k]: the position along the axis each result of
 * slot k was taken from. */
static void select_sources(Em *e, const Inst *in, const bool *active, ValId idx, ValId *src)
{
    Ad *ad = e->ad;
    Func *f = ad->bw;
    const Block *fr = in->regions[0];
    const Inst *fy = ad_block_term(fr);
    int n = in->nargs, m = 0;
    int *slot = arena_alloc(ad->a, sizeof *slot * (size_t)n);
    for (int k = 0; k < n; k++)
        slot[k] = active[k] ? m++ : -1;
    ValId *xs = arena_alloc(ad->a, sizeof *xs * (size_t)(n + m));
    Type *rt = arena_alloc(ad->a, sizeof *rt * (size_t)(n + m));
    for (int i = 0; i < n + m; i++) {
        xs[i] = i < n ? P0(ad, in->args[i]) : idx;
        rt[i] = bty(ad, xs[i]);
    }
    Inst *ni = ir_emit(f, e->b, OP_SCAN, xs, n + m, rt, n + m, e->loc);
    ni->ival = in->ival;
    ni->flags = in->flags;
    ValId *res = ni->res;
    Block *rb = ir_inst_add_region(f, ni);
    ValId *map = arena_alloc(ad->a, sizeof *map * (size_t)ad->fw->vals.n);
    ValId *ip = arena_alloc(ad->a, sizeof *ip * (size_t)(2 * m + 1));
    Type i32 = type_tile(DT_I32, 0, NULL);
    for (int h = 0; h < 2; h++) {
        for (int i = 0; i < n; i++) {
            ValId p = fr->params[h * n + i];
            map[p] = ir_block_param_add(f, rb, fty(ad, p), fname(ad, p), e->loc);
        }
        for (int j = 0; j < m; j++)
            ip[h * m + j] = ir_block_param_add(f, rb, i32, h ? "at2" : "at1", e->loc);
    }
    for (int i = 0; i + 1 < fr->insts.n; i++) {
        const Inst *c = &fr->insts.v[i];
        ValId *args = arena_alloc(ad->a, sizeof *args * (size_t)(c->nargs + 1));
        for (int j = 0; j < c->nargs; j++)
            args[j] = map[c->args[j]];
        Inst *nc = emit_like(ad, rb, c, args);
        if (c->nres == 1)
            map[c->res[0]] = nc->res[0];
    }
    ValId *ys = arena_alloc(ad->a, sizeof *ys * (size_t)(n + m));
    for (int i = 0; i < n; i++)
        ys[i] = map[fy->args[i]];
    for (int k = 0; k < n; k++) {
        if (slot[k] < 0)
            continue;
        ValId c;
        bool run;
        bool sel = ad_scan_select(in, k, &c, &run);
        ASSERT(sel);
        (void)sel;
        ValId a1 = ip[slot[k]], a2 = ip[m + slot[k]];
        ys[n + slot[k]] = ir_op3(f, rb, OP_WHERE, i32, map[c], run ? a1 : a2, run ? a2 : a1, e->loc);
    }
    ir_emit(f, rb, OP_YIELD, ys, n + m, NULL, 0, e->loc);
    for (int k = 0; k < n; k++)
        src[k] = slot[k] < 0 ? 0 : res[n + slot[k]];
}

/* The scan of the affine maps mu -> A mu + b on m-vectors (A: m*m slots,
 * row-major, then b: m slots; xs holds them), along axis in direction rev:
 * (A1, b1) then (A2, b2) is (A2 A1, A2 b1 + b2), the later map applied
 * after; returns the b results (m of them) in out. */
static void affine_scan(Em *e, const ValId *xs, int m, int axis, bool rev, ValId *out)
{
    Ad *ad = e->ad;
    Func *f = ad->bw;
    int n = m * m + m;
    Type *rt = arena_alloc(ad->a, sizeof *rt * (size_t)n);
    for (int i = 0; i < n; i++)
        rt[i] = bty(ad, xs[i]);
    Inst *ni = ir_emit(f, e->b, OP_SCAN, xs, n, rt, n, e->loc);
    ni->ival = axis;
    ni->flags = rev ? IF_REVERSE : 0;
    ValId *res = ni->res;
    Block *rb = ir_inst_add_region(f, ni);
    ValId *p = arena_alloc(ad->a, sizeof *p * (size_t)(2 * n)), *y = arena_alloc(ad->a, sizeof *y * (size_t)n);
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < n; i++) {
            const char *nm = i < m * m ? arena_printf(ad->a, "A%d_%d%d", h + 1, i / m, i % m)
                                       : arena_printf(ad->a, "b%d_%d", h + 1, i - m * m);
            p[h * n + i] = ir_block_param_add(f, rb, type_with_shape(rt[i], 0, NULL), nm, e->loc);
        }
    const ValId *A1 = p, *b1 = p + m * m, *A2 = p + n, *b2 = p + n + m * m;
    Em re = em_rev(ad, rb, e->loc);
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < m; j++) { /* (A2 A1)[i][j] = sum over l of A2[i][l] A1[l][j] */
            ValId s = e2(&re, OP_MUL, A2[i * m], A1[j]);
            for (int l = 1; l < m; l++)
                s = e2(&re, OP_ADD, s, e2(&re, OP_MUL, A2[i * m + l], A1[l * m + j]));
            y[i * m + j] = s;
        }
        ValId s = b2[i]; /* (A2 b1 + b2)[i] */
        for (int l = 0; l < m; l++)
            s = e2(&re, OP_ADD, s, e2(&re, OP_MUL, A2[i * m + l], b1[l]));
        y[m * m + i] = s;
    }
    ir_emit(f, rb, OP_YIELD, y, n, NULL, 0, e->loc);
    for (int i = 0; i < m; i++)
        out[i] = res[m * m + i];
}

/* The adjoint of an inclusive scan with any combine f (docs/AD.md, "Scans",
 * the general rule): y[t] = f(y[t-1], x[t]) (rev: y[t+1]), y at the first
 * lane x itself.  With J_a(t), J_b(t) the Jacobians of f's two halves at
 * (y[t-1], x[t]) over the m float slots, lambda[t] = dy[t] +
 * J_a(t+1)^T lambda[t+1] and dx[t] = J_b(t)^T lambda[t] (the first lane:
 * lambda).  mu[t] = J_a(t)^T lambda[t] satisfies the affine recurrence
 * mu[t] = J_a(t)^T mu[t+1] + J_a(t)^T dy[t] run the other way (an
 * affine_scan with J_a^T unshifted), and lambda = dy + shift(mu). */
static void adj_scan_general(Em *e, const Inst *in)
{
    Ad *ad = e->ad;
    int n = in->nargs, axis = (int)in->ival, m = 0;
    bool rev = in->flags & IF_REVERSE;
    const Block *fr = in->regions[0];
    bool any = false, act = false;
    int *fl = arena_alloc(ad->a, sizeof *fl * (size_t)n); /* float slot k's index among the m, or -1 */
    for (int k = 0; k < n; k++) {
        bool isf = dtype_is_float((Dtype)fty(ad, in->res[k]).dt);
        fl[k] = isf ? m++ : -1;
        any |= isf && ad->adj[in->res[k]] && ad_active(ad, in->res[k]);
        act |= isf && ad_active(ad, in->args[k]);
    }
    if (!any || !act)
        return;
    Type xt = fty(ad, in->args[0]);
    ValId *x = arena_alloc(ad->a, sizeof *x * (size_t)n), *prev = arena_alloc(ad->a, sizeof *prev * (size_t)n);
    ValId *dy = arena_alloc(ad->a, sizeof *dy * (size_t)n), *zl = arena_alloc(ad->a, sizeof *zl * (size_t)n);
    ValId *seed = arena_alloc(ad->a, sizeof *seed * (size_t)n), *out = arena_alloc(ad->a, sizeof *out * (size_t)n);
    ValId *lam = arena_alloc(ad->a, sizeof *lam * (size_t)n), *dx = arena_alloc(ad->a, sizeof *dx * (size_t)n);
    ValId *xs = arena_alloc(ad->a, sizeof *xs * (size_t)(m * m + m)), *mu = arena_alloc(ad->a, sizeof *mu * (size_t)m);
    for (int k = 0; k < n; k++) {
        x[k] = P0(ad, in->args[k]);
        prev[k] = shift_any(e, P0(ad, in->res[k]), axis, rev);
        dy[k] = fl[k] >= 0 && ad_active(ad, in->res[k]) ? ad->adj[in->res[k]] : 0;
        zl[k] = fl[k] >= 0 ? ezero(e, type_with_dtype(xt, (Dtype)adt(fty(ad, in->args[k])).dt)) : 0;
        if (dy[k] && bty(ad, dy[k]).dt != bty(ad, zl[k]).dt)
            dy[k] = ecast(e, dy[k], (Dtype)bty(ad, zl[k]).dt);
    }
    Dtype jdt = DT_F32; /* the affine scan's one dtype: fp64 when a slot's adjoint is */
    for (int k = 0; k < n; k++)
        if (zl[k] && bty(ad, zl[k]).dt == DT_F64)
            jdt = DT_F64;
    ValId idx = axis_index(e, xt, axis);
    ValId first = ecmp(e, OP_EQ, idx, ir_const_int(ad->bw, e->b, bty(ad, idx), rev ? xt.shape[axis] - 1 : 0, e->loc));
    /* the region's values typed as tiles of x's shape while it is applied
     * and differentiated lane by lane (as adj_reduce) */
    ValId *rv;
    int nv = region_lanes(ad, fr, xt, &rv);
    ValId *pin = arena_alloc(ad->a, sizeof *pin * (size_t)nv);
    apply_combine(e, in, prev, x); /* f(y[t-1], x[t]): the primal values the Jacobians are taken at */
    for (int i = 0; i < nv; i++)
        pin[i] = ad->pm[rv[i]];
    /* J_a^T: column l is the VJP of the first half with the unit seed on slot l */
    for (int l = 0; l < n; l++) {
        if (fl[l] < 0)
            continue;
        for (int k = 0; k < n; k++)
            seed[k] = k == l ? ir_const_float(ad->bw, e->b, bty(ad, zl[k]), 1.0, e->loc) : 0;
        for (int i = 0; i < nv; i++)
            ad->pm[rv[i]] = pin[i];
        vjp_combine(e, in, seed, true, zl, out);
        for (int i = 0; i < n; i++)
            if (fl[i] >= 0)
                xs[ad->spec->mutate == AD_MUTATE_SCAN_JAC ? fl[l] * m + fl[i] : fl[i] * m + fl[l]] = ecast(e, out[i], jdt);
    }
    for (int i = 0; i < nv; i++)
        ad->pm[rv[i]] = pin[i];
    vjp_combine(e, in, dy, true, zl, out); /* J_a^T dy */
    for (int i = 0; i < n; i++)
        if (fl[i] >= 0)
            xs[m * m + fl[i]] = ecast(e, out[i], jdt);
    affine_scan(e, xs, m, axis, !rev, mu);
    for (int k = 0; k < n; k++) {
        lam[k] = 0;
        if (fl[k] < 0)
            continue;
        ValId s = ecast(e, eshift(e, mu[fl[k]], axis, !rev, 0.0), (Dtype)bty(ad, zl[k]).dt); /* mu[t+1] (rev: mu[t-1]); the last lane 0 */
        lam[k] = dy[k] ? e2(e, OP_ADD, dy[k], s) : s;
    }
    for (int i = 0; i < nv; i++)
        ad->pm[rv[i]] = pin[i];
    vjp_combine(e, in, lam, false, zl, dx); /* J_b^T lambda */
    ad->lanes = NULL;
    for (int i = 0; i < nv; i++) {
        ad->pm[rv[i]] = 0;
        ad->adj[rv[i]] = 0;
    }
    for (int k = 0; k < n; k++)
        if (fl[k] >= 0 && ad_active(ad, in->args[k]))
            accum(e, in->args[k], ewhere(e, first, lam[k], dx[k]));
}

/* The adjoint of a scan: a rule per combine function AD recognizes, the
 * general rule for any other (validated: elementwise adjoint rules only). */
void adj_scan(Em *e, const Inst *in)
{
    Ad *ad = e->ad;
    int axis = (int)in->ival;
    bool rev = in->flags & IF_REVERSE;
    switch (ad_scan_kind(ad->fw, in)) {
    case SCAN_SUM: { /* each input reaches every later output: a cumsum the other way */
        ValId d = ad->adj[in->res[0]];
        if (!d || !ad_active(ad, in->args[0]))
            return;
        Inst *ni = ir_emit(ad->bw, e->b, OP_CUMSUM, &d, 1, (Type[]){bty(ad, d)}, 1, e->loc);
        ni->ival = axis;
        ni->flags = rev ? 0 : IF_REVERSE;
        accum(e, in->args[0], ni->res[0]);
        return;
    }
    case SCAN_MAX:
    case SCAN_MIN: {
        /* y[t] is the x of the first position (in the scan's direction) holding
         * the running extremum: the lane whose x beats the previous y; it gets
         * the adjoints of its run of equal y, summed by a segmented scan the
         * other way */
        ValId d = ad->adj[in->res[0]];
        if (!d || !ad_active(ad, in->args[0]))
            return;
        bool mx = ad_scan_kind(ad->fw, in) == SCAN_MAX;
        ValId x = P(e, in->args[0]), y = P(e, in->res[0]);
        ValId prev = eshift(e, y, axis, rev, mx ? -INFINITY : INFINITY);
        ValId first = ecmp(e, mx ? OP_GT : OP_LT, x, prev);
        ValId xs[2] = {y, d};
        static const char *const names[] = {"key1", "sum1", "key2", "sum2"};
        ValId run = escan(e, xs, 2, axis, !rev, combine_segsum, names)[1];
        accum(e, in->args[0], ewhere(e, first, run, ec(e, d, 0.0)));
        return;
    }
    case SCAN_SELECT: {
        /* each result is the input at its source position; a source's
         * positions form one run (it starts at the source itself): the run's
         * adjoints summed by a segmented scan the other way go to the lane
         * that is its own source */
        int n = in->nargs;
        bool *act = arena_alloc(ad->a, (size_t)n);
        bool any = false;
        for (int k = 0; k < n; k++) {
            act[k] = ad->adj[in->res[k]] && ad_active(ad, in->args[k]);
            any |= act[k];
        }
        if (!any)
            return;
        ValId idx = axis_index(e, fty(ad, in->args[0]), axis);
        ValId *src = arena_alloc(ad->a, sizeof *src * (size_t)n);
        select_sources(e, in, act, idx, src);
        for (int k = 0; k < n; k++) {
            if (!act[k])
                continue;
            ValId d = ad->adj[in->res[k]];
            static const char *const names[] = {"key1", "sum1", "key2", "sum2"};
            ValId xs[2] = {src[k], d};
            ValId run = escan(e, xs, 2, axis, !rev, combine_segsum, names)[1];
            accum(e, in->args[k], ewhere(e, ecmp(e, OP_EQ, src[k], idx), run, ec(e, d, 0.0)));
        }
        return;
    }
    case SCAN_LINREC: {
        /* h[t] = a[t]*h[t-1] + b[t] (rev: h[t+1]); A[t] = prod a up to t */
        ValId a = in->args[0], b = in->args[1];
        ValId dA = ad->adj[in->res[0]], dh = ad->adj[in->res[1]];
        if (dh && (ad_active(ad, a) || ad_active(ad, b))) {
            ValId g = suffix_linrec(e, P(e, a), dh, axis, rev);
            accum(e, b, g);
            if (ad_active(ad, a))
                accum(e, a, e2(e, OP_MUL, g, eshift(e, P(e, in->res[1]), axis, rev, 0.0)));
        }
        if (dA && ad_active(ad, a))
            accum(e, a, cumprod_adjoint(e, P(e, a), P(e, in->res[0]), dA, axis, rev));
        return;
    }
    default: /* any other combine function (validated: elementwise rules only) */
        adj_scan_general(e, in);
        return;
    }
}

