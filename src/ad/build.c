/* build.c -- the IR builders of both AD modes' rules.
 *
 * Job: one definition of each small builder the derivative rules emit code
 * with (a unary or binary op, a compare, a where, a float constant shaped
 * like a value, a cast, a reduction, a shape op, a broadcast back from a
 * reduction and its adjoint, a widened axis, an iota, sort's stable rank),
 * for reverse mode (rules_rev.c, sweep_rev.c, tape_rev.c) and forward mode
 * (rules_fwd.c, sweep_fwd.c) alike.  Each emits into Em.b of Em.g at Em.loc,
 * an operand's type being its type in Em.g (ad.h).
 *
 * Requires: operands defined in Em.g.  Guarantees: only appends
 * instructions to Em.b; reads no mode's state.
 */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "ad/ad.h"

ValId e1(Em *e, OpKind op, ValId x)
{
    return ir_op1(e->g, e->b, op, ety(e, x), x, e->loc);
}
ValId e2(Em *e, OpKind op, ValId x, ValId y)
{
    return ir_op2(e->g, e->b, op, ety(e, x), x, y, e->loc);
}
ValId ecmp(Em *e, OpKind op, ValId x, ValId y)
{
    return ir_op2(e->g, e->b, op, type_with_dtype(ety(e, x), DT_I1), x, y, e->loc);
}
ValId ewhere(Em *e, ValId c, ValId x, ValId y)
{
    return ir_op3(e->g, e->b, OP_WHERE, ety(e, x), c, x, y, e->loc);
}
/* A float constant shaped like x. */
ValId ec(Em *e, ValId like, double v)
{
    return ir_const_float(e->g, e->b, ety(e, like), v, e->loc);
}
ValId ezero(Em *e, Type t) { return ir_const_float(e->g, e->b, t, 0.0, e->loc); }
ValId ecast(Em *e, ValId x, Dtype dt)
{
    if (ety(e, x).dt == dt)
        return x;
    return ir_op1(e->g, e->b, OP_CAST, type_with_dtype(ety(e, x), dt), x, e->loc);
}
ValId ereduce(Em *e, OpKind op, ValId x, int axis, bool keep)
{
    Type t = ety(e, x);
    int32_t sh[KAD_MAX_RANK];
    int n = 0;
    for (int i = 0; i < t.rank; i++)
        if (i != axis)
            sh[n++] = t.shape[i];
        else if (keep)
            sh[n++] = 1;
    Inst *in = ir_emit(e->g, e->b, op, &x, 1, (Type[]){type_with_shape(t, n, sh)}, 1, e->loc);
    in->ival = axis;
    in->flags = keep ? IF_KEEP_DIMS : 0;
    return in->res[0];
}
ValId eshape(Em *e, OpKind op, ValId x, Type to, int64_t ival)
{
    Inst *in = ir_emit(e->g, e->b, op, &x, 1, &to, 1, e->loc);
    in->ival = ival;
    return in->res[0];
}
ValId epermute(Em *e, ValId x, const int32_t *perm)
{
    Type t = ety(e, x);
    int32_t sh[KAD_MAX_RANK];
    for (int i = 0; i < t.rank; i++)
        sh[i] = t.shape[perm[i]];
    Inst *in = ir_emit(e->g, e->b, OP_PERMUTE, &x, 1, (Type[]){type_with_shape(t, t.rank, sh)}, 1,
                       e->loc);
    memcpy(in->ints, perm, sizeof(int32_t) * (size_t)t.rank);
    in->nints = t.rank;
    return in->res[0];
}


/* A reduction's value (or adjoint) r broadcast back to x's shape xt. */
ValId bcast_back(Em *e, ValId r, Type xt, int axis, bool keep)
{
    Type rt = ety(e, r);
    xt.dt = rt.dt;
    if (!keep && xt.rank > 1) {
        Type et = rt;
        et.rank = xt.rank;
        for (int i = 0; i < xt.rank; i++)
            et.shape[i] = i == axis ? 1 : xt.shape[i];
        r = eshape(e, OP_EXPAND_DIMS, r, et, axis);
    }
    return eshape(e, OP_BROADCAST, r, xt, 0);
}

/* The adjoint of a broadcast from xt: sum over the broadcast axes. */
ValId unbroadcast(Em *e, ValId d, Type xt)
{
    if (xt.rank == 0) {
        while (ety(e, d).rank > 0)
            d = ereduce(e, OP_SUM, d, 0, false);
        return d;
    }
    for (int i = 0; i < xt.rank; i++)
        if (xt.shape[i] == 1 && ety(e, d).shape[i] != 1)
            d = ereduce(e, OP_SUM, d, i, true);
    return d;
}

/* x with a new axis `at` of size n (broadcast), the other axes as x's. */
ValId ewiden(Em *e, ValId x, int at, int32_t n)
{
    Type t = ety(e, x);
    int32_t one[KAD_MAX_RANK], sh[KAD_MAX_RANK];
    for (int k = 0, j = 0; k <= t.rank; k++) {
        one[k] = k == at ? 1 : t.shape[j];
        sh[k] = k == at ? n : t.shape[j];
        j += k != at;
    }
    x = eshape(e, OP_EXPAND_DIMS, x, type_with_shape(t, t.rank + 1, one), at);
    return eshape(e, OP_BROADCAST, x, type_with_shape(t, t.rank + 1, sh), 0);
}

/* arange(0, n) of dtype dt along axis `at` of a tile of type like. */
ValId eiota(Em *e, Type like, int at, Dtype dt)
{
    int32_t n = like.shape[at], one[KAD_MAX_RANK];
    Inst *ar = ir_emit(e->g, e->b, OP_ARANGE, NULL, 0, (Type[]){type_tile(DT_I32, 1, &n)}, 1, e->loc);
    ValId v = ecast(e, ar->res[0], dt);
    for (int k = 0; k < like.rank; k++)
        one[k] = k == at ? n : 1;
    v = eshape(e, OP_RESHAPE, v, type_tile(dt, like.rank, one), 0);
    return eshape(e, OP_BROADCAST, v, type_with_dtype(like, dt), 0);
}

/* The stable rank of each lane of x along its last axis, for sort and topk
 * (IF_REVERSE in flags: descending): rank[j] = #{l : x[l] before x[j]} +
 * #{l < j : x[l] == x[j]}, an i32 tile of x's shape, so that equal values
 * get distinct ranks (a compare over a [.., n, n] tile and a sum).  NaNs
 * would give no order: it asserts first that there are none (nan_msg). */
ValId esort_rank(Em *e, ValId x, unsigned flags, const char *nan_msg)
{
    Type xt = ety(e, x);
    int r = xt.rank;
    int32_t n = xt.shape[r - 1];
    Inst *as = ir_emit(e->g, e->b, OP_ASSERT, (ValId[]){ecmp(e, OP_EQ, x, x)}, 1, NULL, 0, e->loc);
    as->sattr = nan_msg;
    ValId xj = ewiden(e, x, r, n), xl = ewiden(e, x, r - 1, n); /* [.., j, l] */
    ValId before = ecmp(e, flags & IF_REVERSE ? OP_GT : OP_LT, xl, xj);
    Type tt = ety(e, xj);
    ValId lj = ecmp(e, OP_LT, eiota(e, tt, r, DT_I32), eiota(e, tt, r - 1, DT_I32));
    ValId tie = e2(e, OP_AND, ecmp(e, OP_EQ, xl, xj), lj);
    return ereduce(e, OP_SUM, ecast(e, e2(e, OP_OR, before, tie), DT_I32), r, false);
}
