/* rules_fwd.c -- forward mode's derivative rules (tangents).
 *
 * Job: tan_rule, every tangent rule one case per op (its reverse-mode twin,
 * adj_rule, is in rules_rev.c), with the tangents of cumprod (a linear
 * recurrence scan), sort and topk (the tangents follow the values by stable
 * rank), a custom_jvp's rule body, and the strong zeros of partials that
 * would be inf or NaN where their tangent is zero (ad_finite.c).  The
 * forward sweep (sweep_fwd.c) calls tan_rule after copying each instruction.
 *
 * Requires: Fd's facts (which values have tangents).  Guarantees: the
 * tangent of the instruction's result, in its primal's dtype, or 0 for zero;
 * refusals are located errors (fd_fail).
 */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "ad/ad.h"
#include "ad/ad_int.h"


/* fw value v's tangent, or a zero of its type. */
ValId TZ(Em *e, ValId v)
{
    return e->f->tm[v] ? e->f->tm[v] : ezero(e, fd_ty(e->f, v));
}
static ValId tadd(Em *e, ValId x, ValId y) { return !x ? y : !y ? x : e2(e, OP_ADD, x, y); }

static ValId esum(Em *e, ValId x, int axis, Type rt)
{
    return eshape(e, OP_SUM, x, rt, axis);
}

/* y shifted by one lane along axis in the direction of a scan with `rev`:
 * lane s gets y[s-1] (rev: y[s+1]), the first lane in that direction
 * `fill`.  A gather (exact: values are only selected), so that reverse
 * mode can differentiate it (second derivatives). */
static ValId eshift(Em *e, ValId y, int axis, bool rev, double fill)
{
    Fd *f = e->f;
    Type t = ety(e, y), it = type_with_dtype(t, DT_I32);
    int32_t n = t.shape[axis];
    ValId iv = eiota(e, t, axis, DT_I32);
    ValId edge = ir_const_int(f->jv, e->b, it, rev ? n - 1 : 0, e->loc);
    ValId first = ir_op2(f->jv, e->b, OP_EQ, type_with_dtype(t, DT_I1), iv, edge, e->loc);
    ValId one = ir_const_int(f->jv, e->b, it, 1, e->loc);
    ValId idx = ir_op2(f->jv, e->b, rev ? OP_ADD : OP_SUB, it, iv, one, e->loc);
    idx = ir_op3(f->jv, e->b, OP_WHERE, it, first, iv, idx, e->loc);
    Inst *g = ir_emit(f->jv, e->b, OP_GATHER, (ValId[]){y, idx}, 2, &t, 1, e->loc);
    g->ival = axis;
    return ewhere(e, first, ec(e, y, fill), g->res[0]);
}

/* The tangent of y = cumprod(x): ty[s] = x[s]*ty[s-1] + tx[s]*y[s-1], the
 * first-order linear recurrence scan (a1*a2, a2*b1 + b2) over (x, tx *
 * y shifted by one): exact at zeros (no division), and made of ops reverse
 * mode differentiates (the recurrence is one of the scans it recognizes), so
 * that reverse over forward gives cumprod's second derivatives. */
static ValId cumprod_tangent(Em *e, const Inst *in, ValId x, ValId tx)
{
    Fd *f = e->f;
    int axis = (int)in->ival;
    bool rev = in->flags & IF_REVERSE;
    Type t = ety(e, x), s = type_with_shape(t, 0, NULL);
    ValId xs[2] = {x, e2(e, OP_MUL, tx, eshift(e, PF(f, in->res[0]), axis, rev, 1.0))};
    Type rt[2] = {t, t};
    Inst *ni = ir_emit(f->jv, e->b, OP_SCAN, xs, 2, rt, 2, e->loc);
    ni->ival = axis;
    ni->flags = in->flags & IF_REVERSE;
    int idx = e->b->insts.n - 1;
    Block *rb = ir_inst_add_region(f->jv, ni);
    static const char *const names[4] = {"a1", "b1", "a2", "b2"};
    ValId p[4];
    for (int i = 0; i < 4; i++)
        p[i] = ir_block_param_add(f->jv, rb, s, names[i], e->loc);
    Em er = em_fwd(f, rb, e->loc);
    ValId ya = e2(&er, OP_MUL, p[0], p[2]);
    ValId yb = e2(&er, OP_ADD, e2(&er, OP_MUL, p[2], p[1]), p[3]);
    ir_emit(f->jv, rb, OP_YIELD, (ValId[]){ya, yb}, 2, NULL, 0, e->loc);
    return e->b->insts.v[idx].res[1];
}

/* The tangent of y = sort(x) (or its first k: topk): the tangents follow
 * the values.  Element j of x goes to position rank[j] = #{l: x[l] before
 * x[j]} + #{l < j: x[l] == x[j]} (ties keep their order, as reverse mode's
 * adjoint does), so ty[i] = sum_j (rank[j] == i) tx[j]. */
static ValId sort_tangent(Em *e, const Inst *in, ValId x, ValId tx, Type yt)
{
    int r = ety(e, x).rank;
    int32_t k = yt.shape[r - 1];
    ValId rank = esort_rank(e, x, in->flags, "the tangent of tl.sort/tl.topk needs values without NaN"); /* [.., j] */
    ValId rw = ewiden(e, rank, r - 1, k), tw = ewiden(e, tx, r - 1, k); /* [.., i, j] */
    ValId hit = ecmp(e, OP_EQ, rw, eiota(e, ety(e, rw), r - 1, DT_I32));
    ValId sel = ewhere(e, hit, tw, ezero(e, ety(e, tw)));
    return esum(e, sel, r, yt);
}


/* The tangent of a custom_jvp's result: its rule's body (Func.rules) here,
 * its parameters bound to the arguments' primals, then the float
 * arguments' tangents; what it yields is the tangent.  Operand 0's own
 * tangent (the helper's automatic one) is not used. */
static ValId jvp_rule_tangent(Em *e, const Inst *in)
{
    Fd *f = e->f;
    const Block *rb = f->fw->rules.v[in->ival];
    for (int i = 1, k = in->nargs - 1; i < in->nargs; i++) {
        f->pm[rb->params[i - 1]] = PF(f, in->args[i]);
        if (is_float(fd_ty(f, in->args[i])))
            f->pm[rb->params[k++]] = TZ(e, in->args[i]);
    }
    emit_block(f, rb, e->b);
    if (f->errors)
        return 0;
    return PF(f, ad_block_term(rb)->args[0]);
}

/* Operand k's tangent term x (t * the partial, t = tk) made exactly 0 where
 * t is exactly 0, when ad_partial_unsafe says the partial may be non-finite:
 * where(t == 0, 0, x); x unchanged elsewhere, and no code where the partial
 * is finite (reverse mode's strong_zero, docs/AD.md). */
static ValId strong_zero(Em *e, const Inst *in, int k, ValId t, ValId x)
{
    if (!t || !x || !ad_partial_unsafe(&e->f->fin, in, k))
        return x;
    return ewhere(e, ecmp(e, OP_EQ, t, ec(e, t, 0.0)), ec(e, x, 0.0), x);
}

/* The tangent of in's result y (tv[y] set): one case per op, in adj_rule's
 * order (rules_rev.c), so that an op's two rules read side by side; then the
 * ops reverse mode handles outside adj_rule (stop_gradient, custom_vjp) and
 * the libdevice functions.  t0..t2 are the operands' tangents (0: zero),
 * a0..a2 their primal copies; SZ(k, x) gives operand k's term x its strong
 * zero. */
ValId tan_rule(Em *e, const Inst *in)
{
    Fd *f = e->f;
    ValId y = in->res[0], py = PF(f, y);
    Type yt = fd_ty(f, y);
    ValId a[3] = {0, 0, 0}, t[3] = {0, 0, 0};
    for (int k = 0; k < in->nargs && k < 3; k++) {
        a[k] = PF(f, in->args[k]);
        t[k] = f->tm[in->args[k]];
    }
#define K(v) ec(e, py, (v))
#define T0 (t[0] ? t[0] : ezero(e, yt))
#define SZ(k, x) strong_zero(e, in, (k), t[k], (x))
    switch ((OpKind)in->op) {
    case OP_ADD:
        return tadd(e, t[0], t[1]);
    case OP_SUB:
        return !t[1] ? t[0] : !t[0] ? NEG(t[1]) : SUB(t[0], t[1]);
    case OP_MUL:
        return tadd(e, t[0] ? SZ(0, MUL(t[0], a[1])) : 0, t[1] ? SZ(1, MUL(a[0], t[1])) : 0);
    case OP_DIV: { /* (ta - y*tb)/b; strong zero: of y*tb, then of the quotient where ta - y*tb is 0 */
        ValId n = t[1] ? SUB(T0, SZ(1, MUL(py, t[1]))) : t[0];
        ValId q = DIV(n, a[1]);
        return ad_partial_unsafe(&f->fin, in, 0) ? ewhere(e, ecmp(e, OP_EQ, n, K(0.0)), K(0.0), q) : q;
    }
    case OP_REM: /* float fmod: y = a - trunc(a/b)*b */
        return !t[1] ? t[0] : SUB(T0, SZ(1, MUL(e1(e, OP_TRUNC, DIV(a[0], a[1])), t[1])));
    case OP_POW: /* ta*b*a^(b-1) + tb*y*log(a) */
        return tadd(e, t[0] ? SZ(0, MUL(MUL(t[0], a[1]), e2(e, OP_POW, a[0], SUB(a[1], K(1.0))))) : 0,
                    t[1] ? SZ(1, MUL(MUL(t[1], py), e1(e, OP_LOG, a[0]))) : 0);
    case OP_MAXIMUM: /* ties: the first operand's (as reverse mode) */
    case OP_MINIMUM: {
        ValId m = ecmp(e, in->op == OP_MAXIMUM ? OP_GE : OP_LE, a[0], a[1]);
        return ewhere(e, m, TZ(e, in->args[0]), TZ(e, in->args[1]));
    }
    case OP_ATAN2: { /* (ta*b - tb*a)/(a^2+b^2) */
        ValId r = ADD(MUL(a[0], a[0]), MUL(a[1], a[1]));
        ValId n = !t[1] ? MUL(t[0], a[1]) : !t[0] ? NEG(MUL(t[1], a[0])) : SUB(MUL(t[0], a[1]), MUL(t[1], a[0]));
        ValId q = DIV(n, r); /* strong zero where n is 0 (r may be 0) */
        return ad_partial_unsafe(&f->fin, in, 0) ? ewhere(e, ecmp(e, OP_EQ, n, K(0.0)), K(0.0), q) : q;
    }
    case OP_NEG:
        return NEG(t[0]);
    case OP_ABS: {
        ValId z = K(0.0);
        return ewhere(e, ecmp(e, OP_GT, a[0], z), t[0], ewhere(e, ecmp(e, OP_LT, a[0], z), NEG(t[0]), z));
    }
    case OP_FMA: /* a*b + c */
        return tadd(e, tadd(e, t[0] ? SZ(0, MUL(t[0], a[1])) : 0, t[1] ? SZ(1, MUL(a[0], t[1])) : 0), t[2]);
    case OP_WHERE:
        return ewhere(e, a[0], TZ(e, in->args[1]), TZ(e, in->args[2]));
    case OP_CAST:
        return t[0] ? ir_op1(f->jv, e->b, OP_CAST, yt, t[0], e->loc) : 0;
    case OP_EXP:
        return SZ(0, MUL(t[0], py));
    case OP_EXP2:
        return SZ(0, MUL(MUL(t[0], py), K(AD_LN2)));
    case OP_EXPM1:
        return SZ(0, MUL(t[0], ADD(py, K(1.0))));
    case OP_LOG:
        return SZ(0, DIV(t[0], a[0]));
    case OP_LOG2:
        return SZ(0, DIV(t[0], MUL(a[0], K(AD_LN2))));
    case OP_LOG1P:
        return SZ(0, DIV(t[0], ADD(a[0], K(1.0))));
    case OP_SQRT:
        return SZ(0, DIV(MUL(t[0], K(0.5)), py));
    case OP_RSQRT:
        return SZ(0, MUL(MUL(t[0], K(-0.5)), MUL(py, MUL(py, py))));
    case OP_SIGMOID:
        return SZ(0, MUL(t[0], MUL(py, SUB(K(1.0), py))));
    case OP_SIN:
        return SZ(0, MUL(t[0], e1(e, OP_COS, a[0])));
    case OP_COS:
        return SZ(0, NEG(MUL(t[0], e1(e, OP_SIN, a[0]))));
    case OP_TAN:
        return SZ(0, MUL(t[0], ADD(K(1.0), MUL(py, py))));
    case OP_ASIN:
    case OP_ACOS: {
        ValId g = MUL(t[0], e1(e, OP_RSQRT, SUB(K(1.0), MUL(a[0], a[0]))));
        return SZ(0, in->op == OP_ASIN ? g : NEG(g));
    }
    case OP_ATAN:
        return SZ(0, DIV(t[0], ADD(K(1.0), MUL(a[0], a[0]))));
    case OP_SINH:
        return SZ(0, MUL(t[0], e1(e, OP_COSH, a[0])));
    case OP_COSH:
        return SZ(0, MUL(t[0], e1(e, OP_SINH, a[0])));
    case OP_TANH:
        return SZ(0, MUL(t[0], SUB(K(1.0), MUL(py, py))));
    case OP_ERF:
        return SZ(0, MUL(MUL(t[0], K(AD_2_SQRTPI)), e1(e, OP_EXP, NEG(MUL(a[0], a[0])))));
    /* linear ops: the same op on the tangent */
    case OP_BROADCAST:
    case OP_EXPAND_DIMS:
    case OP_RESHAPE:
    case OP_PERMUTE:
        return emit_copy(e, in, &t[0], 1, yt)->res[0];
    case OP_JOIN: { /* linear in both halves */
        ValId tj[2] = {t[0] ? t[0] : ezero(e, fd_ty(f, in->args[0])), t[1] ? t[1] : ezero(e, fd_ty(f, in->args[1]))};
        return emit_copy(e, in, tj, 2, yt)->res[0];
    }
    case OP_SPLIT: /* linear */
        return emit_copy(e, in, &t[0], 1, yt)->res[0];
    case OP_CUSTOM_JVP:
        return jvp_rule_tangent(e, in);
    case OP_FLIP:
        return emit_copy(e, in, &t[0], 1, yt)->res[0];
    case OP_GATHER: { /* linear in src; the index has no tangent */
        ValId tg[2] = {T0, a[1]};
        return emit_copy(e, in, tg, 2, yt)->res[0];
    }
    case OP_SORT:
        return sort_tangent(e, in, a[0], T0, yt);
    case OP_SUM:
        return emit_copy(e, in, &t[0], 1, yt)->res[0];
    case OP_MAX:
    case OP_MIN: { /* lanes equal to the result share evenly (reverse mode's rule) */
        int axis = (int)in->ival;
        bool keep = in->flags & IF_KEEP_DIMS;
        Type xt = fd_ty(f, in->args[0]);
        ValId m = ecmp(e, OP_EQ, a[0], bcast_back(e, py, xt, axis, keep));
        ValId one = ir_op1(f->jv, e->b, OP_CAST, type_with_dtype(xt, (Dtype)yt.dt), m, e->loc);
        Inst *ci = emit_copy(e, in, &one, 1, yt);
        ci->op = OP_SUM;
        ValId cnt = ci->res[0];
        ValId sel = ewhere(e, m, t[0], ezero(e, ety(e, t[0])));
        Inst *si = emit_copy(e, in, &sel, 1, yt);
        si->op = OP_SUM;
        return DIV(si->res[0], cnt);
    }
    case OP_CUMSUM:
        return emit_copy(e, in, &t[0], 1, yt)->res[0];
    case OP_CUMPROD:
        return cumprod_tangent(e, in, a[0], T0);
    case OP_DOT: { /* t = ta@b + a@tb + tacc */
        ValId r = TZ(e, in->args[2]);
        if (t[0]) {
            r = ir_op3(f->jv, e->b, OP_DOT, yt, t[0], a[1], r, e->loc);
            e->b->insts.v[e->b->insts.n - 1].ival = in->ival;
        }
        if (t[1]) {
            r = ir_op3(f->jv, e->b, OP_DOT, yt, a[0], t[1], r, e->loc);
            e->b->insts.v[e->b->insts.n - 1].ival = in->ival;
        }
        return r;
    }
    case OP_STOP_GRADIENT:
        return 0; /* no tangent: kad.nondiff / kad_stop_gradient */
    case OP_CUSTOM_VJP:
        if (f->nuses[y] == f->jcov[y])
            return 0; /* the helper's jvp rule gives the tangent (custom_jvp) */
        /* the helper's own body would give its automatic tangent, which the rule replaced (e.g. a
         * straight-through estimator): the JVP would disagree with the VJP */
        fd_fail(f, in->loc, "forward mode: this helper call has a custom vjp rule (@kad.vjp_of) but no jvp rule: "
                         "forward mode needs a @kad.jvp_of rule for the helper (its automatic tangent would "
                         "disagree with the vjp rule)%s", "");
        return 0;
#define LIBM_CASE(en, ...) case en:
    KAD_LIBM_OPS(LIBM_CASE)
#undef LIBM_CASE
    { /* libdevice functions: sum of t_k * dy/da_k (src/ad/ad_libm.c) */
        ValId r = 0;
        for (int k = 0; k < in->nargs; k++)
            if (t[k]) {
                ValId p = ad_libm_partial(f->jv, e->b, e->loc, in, k, a, py);
                if (p)
                    r = tadd(e, r, MUL(t[k], p));
            }
        return r;
    }
    default:
        fd_fail(f, in->loc, "forward mode: no tangent rule for '%s'", op_info[in->op].name);
        return 0;
    }
#undef K
#undef T0
#undef SZ
}
