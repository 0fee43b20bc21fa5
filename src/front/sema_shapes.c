/* sema_shapes.c -- the builtins that move elements without computing:
 * tl.permute / trans, reshape / view / ravel, broadcast_to / broadcast,
 * expand_dims, and Triton 3.6's join, split, interleave, flip, gather,
 * sort, topk and histogram.
 *
 * Shapes are checked as Triton's block_type checks them (check_shape in
 * sema_builtins.c); a shape kad cannot follow is a located error, not a
 * guess.
 *
 * Requires: front.h.  Guarantees: one located error, then SV_ERROR.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/front.h"

/* Builtins: shapes                                                    */
/* ------------------------------------------------------------------ */

/* tl.permute(x, dims) and tl.trans(x, dims=()) (aux 1: no dims swaps the
 * two axes). */
SVal b_permute(Call *c)
{
    Lower *L = c->L;
    ValId x = arg_tile(c, 0);
    if (!x)
        return sval_error();
    SVal dims = sema_unwrap_iterable(c->has[1] ? c->a[1] : sval_tuple(L, NULL, 0));
    if (c->def->aux && dims.kind == SV_TUPLE && dims.n == 0) { /* trans(): swap the two axes */
        SVal d[2] = {sval_int(1), sval_int(0)};
        dims = sval_tuple(L, d, 2);
    }
    Type t = ops_type(L, x);
    int64_t d[KAD_MAX_RANK + 1];
    int n;
    if (!sema_int_list(c, dims, false, d, KAD_MAX_RANK, &n, "the dims"))
        return sval_error();
    if (n != t.rank)
        return ops_fail(L, c->loc, "%s: %d dims given for a tile of rank %d (%s)", c->fname, n, t.rank,
                        ops_tystr(L, t));
    bool seen[KAD_MAX_RANK] = {0};
    int32_t perm[KAD_MAX_RANK];
    for (int i = 0; i < n; i++) {
        if (d[i] < 0 || d[i] >= n || seen[d[i]])
            return ops_fail(L, c->loc, "%s: dims must be a permutation of 0..%d", c->fname, n - 1);
        seen[d[i]] = true;
        perm[i] = (int32_t)d[i];
    }
    return sval_value(ops_permute(L, x, perm, c->loc));
}

static SVal reshape(Call *c, ValId x, SVal shp)
{
    Lower *L = c->L;
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!arg_shape(c, sema_unwrap_iterable(shp), &rank, shape))
        return sval_error();
    Type t = ops_type(L, x);
    if (rank == 0)
        return ops_fail(L, c->loc, "%s: the shape must not be empty", c->fname);
    Type rt = type_with_shape(t, rank, shape);
    if (type_numel(rt) != type_numel(t))
        return ops_fail(L, c->loc, "%s cannot change the number of elements: %s to %s", c->fname,
                        ops_tystr(L, t), ops_shapestr(L, rank, shape));
    if (type_same_shape(t, rt))
        return sval_value(x);
    return sval_value(ops_emit1(L, OP_RESHAPE, rt, x, c->loc));
}

SVal b_reshape(Call *c)
{
    ValId x = arg_tile(c, 0);
    bool reorder;
    if (!x || !arg_bool(c, 2, false, &reorder))
        return sval_error();
    if (!c->has[1])
        return ops_fail(c->L, c->loc, "%s() missing required argument 'shape'", c->fname);
    return reshape(c, x, c->a[1]);
}

SVal b_ravel(Call *c)
{
    ValId x = arg_tile(c, 0);
    bool reorder;
    if (!x || !arg_bool(c, 1, false, &reorder))
        return sval_error();
    SVal n = sval_int(type_numel(ops_type(c->L, x)));
    return reshape(c, x, sval_tuple(c->L, &n, 1));
}

SVal b_broadcast_to(Call *c)
{
    Lower *L = c->L;
    ValId x = sema_to_value(L, c->a[0], c->fname, c->loc);
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!x || !c->has[1] || !arg_shape(c, sema_unwrap_iterable(c->a[1]), &rank, shape))
        return x && !c->has[1] ? ops_fail(L, c->loc, "%s() missing required argument 'shape'", c->fname)
                               : sval_error();
    Type t = ops_type(L, x);
    if (t.rank > 0) {
        if (t.rank != rank)
            return ops_fail(L, c->loc,
                            "%s: cannot broadcast %s to %s: the ranks differ (tl.broadcast_to does "
                            "not add axes)", c->fname, ops_tystr(L, t), ops_shapestr(L, rank, shape));
        for (int i = 0; i < rank; i++)
            if (t.shape[i] != shape[i] && t.shape[i] != 1)
                return ops_fail(L, c->loc, "%s: cannot broadcast %s to %s", c->fname, ops_tystr(L, t),
                                ops_shapestr(L, rank, shape));
    }
    return sval_value(ops_bcast_to(L, x, rank, shape, c->loc));
}

SVal b_broadcast(Call *c)
{
    Lower *L = c->L;
    ValId x = sema_to_value(L, c->a[0], c->fname, c->loc);
    ValId y = x ? sema_to_value(L, c->a[1], c->fname, c->loc) : 0;
    if (!x || !y)
        return sval_error();
    Type tx = ops_type(L, x), ty = ops_type(L, y);
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!ops_bcast_shape(tx.rank, tx.shape, ty.rank, ty.shape, &rank, shape))
        return ops_fail(L, c->loc, "cannot broadcast shapes %s and %s in %s",
                        ops_shapestr(L, tx.rank, tx.shape), ops_shapestr(L, ty.rank, ty.shape), c->fname);
    SVal two[2] = {sval_value(ops_bcast_to(L, x, rank, shape, c->loc)),
                   sval_value(ops_bcast_to(L, y, rank, shape, c->loc))};
    return sval_tuple(L, two, 2);
}

SVal b_expand_dims(Call *c)
{
    Lower *L = c->L;
    ValId x = sema_to_value(L, c->a[0], c->fname, c->loc);
    if (!x)
        return sval_error();
    int64_t ax[KAD_MAX_RANK + 1];
    int n;
    if (!sema_int_list(c, c->a[1], true, ax, KAD_MAX_RANK, &n, "the axis"))
        return sval_error();
    Type t = ops_type(L, x);
    int nd = t.rank + n;
    if (nd > KAD_MAX_RANK)
        return ops_fail(L, c->loc, "%s: the result would have rank %d (kad allows up to %d axes)", c->fname,
                        nd, KAD_MAX_RANK);
    int axes[KAD_MAX_RANK];
    for (int i = 0; i < n; i++) {
        if (!sema_wrap_axis(c, ax[i], nd, &axes[i]))
            return sval_error();
        for (int j = 0; j < i; j++)
            if (axes[j] == axes[i])
                return ops_fail(L, c->loc, "%s: duplicate axis %d", c->fname, axes[i]);
    }
    for (int i = 0; i < n; i++) /* insert in increasing order */
        for (int j = i + 1; j < n; j++)
            if (axes[j] < axes[i]) {
                int s = axes[i];
                axes[i] = axes[j], axes[j] = s;
            }
    for (int i = 0; i < n; i++)
        x = ops_expand_dims(L, x, axes[i], c->loc);
    return sval_value(x);
}

/* ------------------------------------------------------------------ */
/* Builtins: join, split, interleave, flip, gather, sort, topk,         */
/* histogram (Triton 3.6's core.py and standard.py)                     */
/* ------------------------------------------------------------------ */

/* Operand i as a runtime value that is not a pointer (kad's AD does not
 * follow pointers through these ops). */
static ValId arg_data(Call *c, int i)
{
    ValId x = arg_tile(c, i);
    if (x && ops_type(c->L, x).dt == DT_PTR) {
        diag_error(c->L->d, c->loc, "%s of pointers is not supported by kad", c->fname);
        return 0;
    }
    return x;
}

/* join(a, b): a and b broadcast to one shape, joined in a new last axis. */
static ValId join2(Call *c, ValId a, ValId b)
{
    Lower *L = c->L;
    Type ta = ops_type(L, a), tb = ops_type(L, b);
    if (ta.dt != tb.dt) {
        diag_error(L->d, c->loc, "%s: the operands must have one dtype, got %s and %s", c->fname,
                   ops_tystr(L, ta), ops_tystr(L, tb));
        return 0;
    }
    int rank;
    int32_t shape[KAD_MAX_RANK + 1];
    if (!ops_bcast_shape(ta.rank, ta.shape, tb.rank, tb.shape, &rank, shape)) {
        diag_error(L->d, c->loc, "%s: cannot broadcast %s and %s", c->fname, ops_tystr(L, ta), ops_tystr(L, tb));
        return 0;
    }
    if (rank == KAD_MAX_RANK) {
        diag_error(L->d, c->loc, "%s: the result would have rank %d; kad's tiles have at most %d axes", c->fname,
                   rank + 1, KAD_MAX_RANK);
        return 0;
    }
    a = ops_bcast_to(L, a, rank, shape, c->loc);
    b = ops_bcast_to(L, b, rank, shape, c->loc);
    shape[rank] = 2;
    return ops_emit2(L, OP_JOIN, type_with_shape(ta, rank + 1, shape), a, b, c->loc);
}

SVal b_join(Call *c)
{
    ValId a = arg_data(c, 0), b = a ? arg_data(c, 1) : 0;
    ValId r = a && b ? join2(c, a, b) : 0;
    return r ? sval_value(r) : sval_error();
}

/* tl.interleave(a, b): join, then the last two axes merged (Triton's
 * standard.py); two scalars give the joined [2]. */
SVal b_interleave(Call *c)
{
    ValId a = arg_data(c, 0), b = a ? arg_data(c, 1) : 0;
    ValId j = a && b ? join2(c, a, b) : 0;
    if (!j)
        return sval_error();
    Type t = ops_type(c->L, j);
    if (t.rank == 1)
        return sval_value(j);
    int32_t sh[KAD_MAX_RANK];
    memcpy(sh, t.shape, sizeof sh);
    sh[t.rank - 2] *= 2;
    return sval_value(ops_emit1(c->L, OP_RESHAPE, type_with_shape(t, t.rank - 1, sh), j, c->loc));
}

/* tl.split(a): the two halves of a last axis of size 2 (scalars from a [2]). */
SVal b_split(Call *c)
{
    Lower *L = c->L;
    ValId x = arg_data(c, 0);
    if (!x)
        return sval_error();
    Type t = ops_type(L, x);
    if (t.rank == 0 || t.shape[t.rank - 1] != 2)
        return ops_fail(L, c->loc, "%s needs a tile whose last axis has size 2, got %s", c->fname,
                        ops_tystr(L, t));
    Type rt = type_with_shape(t, t.rank - 1, t.shape);
    SVal two[2];
    for (int h = 0; h < 2; h++)
        two[h] = sval_value(ops_emit_attr(L, OP_SPLIT, rt, x, h, 0, c->loc));
    return sval_tuple(L, two, 2);
}

/* tl.flip(x, dim): Triton 3.6 needs dim (its static_assert compares it
 * with ints, which fails on None) and a power-of-two axis. */
SVal b_flip(Call *c)
{
    Lower *L = c->L;
    ValId x = arg_data(c, 0);
    if (!x)
        return sval_error();
    Type t = ops_type(L, x);
    if (sema_absent(c, 1))
        return ops_fail(L, c->loc, "%s: 'dim' must be given (Triton 3.6's tl.flip fails without it)", c->fname);
    int64_t d;
    int axis;
    if (!arg_int(c, 1, &d))
        return sval_error();
    if (t.rank == 0)
        return ops_fail(L, c->loc, "%s requires a tile, got the scalar %s", c->fname, ops_tystr(L, t));
    if (!sema_wrap_axis(c, d, t.rank, &axis))
        return sval_error();
    if (t.dt == DT_I1)
        return ops_fail(L, c->loc, "%s of int1 is not supported (Triton 3.6 bitcasts to an integer of the "
                        "element's width)", c->fname);
    return sval_value(ops_emit_attr(L, OP_FLIP, t, x, axis, 0, c->loc));
}

/* tl.gather(src, index, axis): the index an integer tile of src's rank,
 * equal to it on every other axis; the result has the index's shape. */
SVal b_gather(Call *c)
{
    Lower *L = c->L;
    ValId src = arg_data(c, 0), idx = src ? arg_data(c, 1) : 0;
    int64_t a;
    if (!idx || !arg_int(c, 2, &a))
        return sval_error();
    Type st = ops_type(L, src), it = ops_type(L, idx);
    if (!dtype_is_int((Dtype)it.dt))
        return ops_fail(L, c->loc, "%s: index must be an integer tensor, got %s", c->fname, ops_tystr(L, it));
    if (it.rank != st.rank)
        return ops_fail(L, c->loc, "%s: source and index tensors must have the same rank, got %s and %s",
                        c->fname, ops_tystr(L, st), ops_tystr(L, it));
    int axis;
    if (st.rank == 0)
        return ops_fail(L, c->loc, "%s requires tiles, got the scalar %s", c->fname, ops_tystr(L, st));
    if (!sema_wrap_axis(c, a, st.rank, &axis))
        return sval_error();
    for (int d = 0; d < st.rank; d++)
        if (d != axis && st.shape[d] != it.shape[d])
            return ops_fail(L, c->loc, "%s: index axis %d must match the source's (%s and %s)", c->fname, d,
                            ops_tystr(L, st), ops_tystr(L, it));
    Inst *in = ir_emit(L->f, L->b, OP_GATHER, (ValId[]){src, idx}, 2,
                       (Type[]){type_with_shape(st, it.rank, it.shape)}, 1, c->loc);
    in->ival = axis;
    return sval_value(in->res[0]);
}

/* tl.sort(x, dim=None, descending=False) and tl.topk(x, k, dim=None)
 * (aux 1): along the last axis only (Triton 3.6 asserts it; dim=-1 fails
 * its check too); topk keeps the 2**floor(log2(k)) largest, descending. */
SVal b_sort(Call *c)
{
    Lower *L = c->L;
    bool topk = c->def->aux == 1;
    ValId x = arg_data(c, 0);
    if (!x)
        return sval_error();
    Type t = ops_type(L, x);
    if (t.rank == 0)
        return ops_fail(L, c->loc, "%s requires a tile, got the scalar %s", c->fname, ops_tystr(L, t));
    int di = topk ? 2 : 1;
    int64_t dim = t.rank - 1, k = t.shape[t.rank - 1];
    if (!sema_absent(c, di) && !arg_int(c, di, &dim))
        return sval_error();
    if (dim != t.rank - 1)
        return ops_fail(L, c->loc, "%s: only minor dimension is currently supported (dim must be None or %d, "
                        "got %lld)", c->fname, t.rank - 1, (long long)dim);
    bool desc = topk;
    if (!topk && !arg_bool(c, 2, false, &desc))
        return sval_error();
    if (topk) {
        int64_t kk;
        if (!arg_int(c, 1, &kk))
            return sval_error();
        if (kk < 1 || kk > k)
            return ops_fail(L, c->loc, "%s: k must be between 1 and the last axis (%lld), got %lld", c->fname,
                            (long long)k, (long long)kk);
        for (k = 1; k * 2 <= kk; k *= 2) /* Triton's _log2 rounds down */
            ;
    }
    if (t.dt == DT_I1)
        return ops_fail(L, c->loc, "%s of int1 is not supported", c->fname);
    int32_t sh[KAD_MAX_RANK];
    memcpy(sh, t.shape, sizeof sh);
    sh[t.rank - 1] = (int32_t)k;
    return sval_value(ops_emit_attr(L, OP_SORT, type_with_shape(t, t.rank, sh), x, k, desc ? IF_REVERSE : 0,
                                    c->loc));
}

/* tl.histogram(input, num_bins, mask=None): i32[num_bins] counts of a
 * rank-1 integer tile's values. */
SVal b_histogram(Call *c)
{
    Lower *L = c->L;
    ValId x = arg_data(c, 0);
    int64_t nb;
    if (!x || !arg_int(c, 1, &nb))
        return sval_error();
    Type t = ops_type(L, x);
    if (t.rank != 1)
        return ops_fail(L, c->loc, "%s only supports 1D input, got %s", c->fname, ops_tystr(L, t));
    if (!dtype_is_int((Dtype)t.dt))
        return ops_fail(L, c->loc, "%s only supports integer input, got %s", c->fname, ops_tystr(L, t));
    if (nb < 1 || nb > 1048576 || (nb & (nb - 1)))
        return ops_fail(L, c->loc, "%s: num_bins must be a power of two between 1 and 1048576, got %lld", c->fname,
                        (long long)nb);
    ValId args[2] = {x, 0};
    int n = 1;
    if (!sema_absent(c, 2)) {
        ValId m = sema_to_value(L, c->a[2], c->fname, c->loc);
        if (!m)
            return sval_error();
        Type mt = ops_type(L, m);
        if (mt.dt != DT_I1)
            return ops_fail(L, c->loc, "%s: Mask must have boolean scalar type, got %s", c->fname,
                            ops_tystr(L, mt));
        if (mt.rank > 1 || (mt.rank == 1 && mt.shape[0] != 1 && mt.shape[0] != t.shape[0]))
            return ops_fail(L, c->loc, "%s: cannot broadcast the mask %s to %s", c->fname, ops_tystr(L, mt),
                            ops_tystr(L, t));
        args[n++] = ops_bcast_to(L, m, 1, t.shape, c->loc);
    }
    int32_t nb32 = (int32_t)nb;
    Inst *in = ir_emit(L->f, L->b, OP_HISTOGRAM, args, n, (Type[]){type_tile(DT_I32, 1, &nb32)}, 1, c->loc);
    in->ival = nb;
    return sval_value(in->res[0]);
}

