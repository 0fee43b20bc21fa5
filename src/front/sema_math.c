/* sema_math.c -- the builtins that compute: elementwise tl.* (where,
 * maximum/minimum, clamp, exp ... erf, fma, umulhi, fdiv, div_rn, sigmoid,
 * cdiv), reductions and scans (sum, max/min with indices, argmax/argmin,
 * cumsum/cumprod, associative_scan, softmax), tl.dot, and the libdevice
 * functions (b_libdevice, b_libdevice_int; b_refuse for the names kad
 * knows and refuses).
 *
 * Each handler checks its operands' dtypes as Triton does (math on fp32 and
 * fp64 only, with the *_rn and fast_* variants fp32 only; dot's input
 * precisions and accumulators) before lowering through the ops_* helpers.
 *
 * Requires: front.h (Call, the argument helpers, the aux flags MF_* and
 * LD_* that the tables set).  Guarantees: one located error, then SV_ERROR.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/triton.h"
#include "front/front.h"

/* ------------------------------------------------------------------ */
/* Builtins: elementwise                                               */
/* ------------------------------------------------------------------ */

SVal b_where(Call *c)
{
    Lower *L = c->L;
    Opnd k, a, b;
    SVal cond = c->a[0];
    if (cond.kind == SV_CONST && cond.c.kind == CK_BOOL) {
        memset(&k, 0, sizeof k);
        k.is_const = true, k.c = cond.c, k.ty = type_scalar(DT_I1);
    } else if (!ops_opnd(L, cond, false, &k, "tl.where condition", c->loc)) {
        return sval_error();
    }
    if (k.ty.dt == DT_PTR)
        return ops_fail(L, c->loc, "tl.where: the condition must be boolean, got %s", ops_tystr(L, k.ty));
    if (!ops_opnd_pair(L, c->a[1], c->a[2], true, &a, &b, "tl.where", c->loc))
        return sval_error();
    Dtype dt;
    if (a.ty.dt == DT_PTR || b.ty.dt == DT_PTR) {
        if (a.ty.dt != b.ty.dt || a.ty.elem != b.ty.elem)
            return ops_fail(L, c->loc, "tl.where: cannot select between %s and %s", ops_tystr(L, a.ty),
                            ops_tystr(L, b.ty));
        dt = DT_PTR;
    } else {
        dt = ops_unify_dtype(L, &a, &b, false, "tl.where", c->loc);
    }
    if (dt == DT_VOID)
        return sval_error();
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!ops_bcast_shape(a.ty.rank, a.ty.shape, b.ty.rank, b.ty.shape, &rank, shape) ||
        !ops_bcast_shape(rank, shape, k.ty.rank, k.ty.shape, &rank, shape))
        return ops_fail(L, c->loc, "tl.where: cannot broadcast shapes %s, %s and %s",
                        ops_shapestr(L, k.ty.rank, k.ty.shape), ops_shapestr(L, a.ty.rank, a.ty.shape),
                        ops_shapestr(L, b.ty.rank, b.ty.shape));
    ValId vk = ops_materialize(L, &k, DT_I1, rank, shape, c->loc);
    ValId va = ops_materialize(L, &a, dt, rank, shape, c->loc);
    ValId vb = ops_materialize(L, &b, dt, rank, shape, c->loc);
    if (!vk || !va || !vb)
        return sval_error();
    return sval_value(ir_op3(L->f, L->b, OP_WHERE, ops_type(L, va), vk, va, vb, c->loc));
}

/* PropagateNan.NONE is what kad's maximum/minimum implement. */
static bool check_propagate_nan(Call *c, int i)
{
    if (sema_absent(c, i))
        return true;
    SVal x = c->a[i];
    if (x.kind == SV_BUILTIN && strcmp(x.qual, "triton.language.PropagateNan.NONE") == 0)
        return true;
    if (x.kind == SV_BUILTIN && strcmp(x.qual, "triton.language.PropagateNan.ALL") == 0)
        diag_error(c->L->d, c->loc, "%s: propagate_nan=tl.PropagateNan.ALL is not supported by kad yet",
                   c->fname);
    else
        diag_error(c->L->d, c->loc, "%s: propagate_nan must be tl.PropagateNan.NONE or ALL, got %s",
                   c->fname, ops_describe(c->L, x));
    return false;
}

SVal b_minmax2(Call *c)
{
    Lower *L = c->L;
    ValId x, y;
    if (!check_propagate_nan(c, 2) || !ops_unify2(L, c->a[0], c->a[1], true, false, c->fname, c->loc, &x, &y))
        return sval_error();
    return sval_value(ops_emit2(L, (OpKind)c->def->aux, ops_type(L, x), x, y, c->loc));
}

SVal b_clamp(Call *c)
{
    Lower *L = c->L;
    ValId lo, hi, x, lo2, x2, hi2;
    if (!check_propagate_nan(c, 3))
        return sval_error();
    /* Triton's order: unify(min, max), then x with min, then x with max. */
    if (!ops_unify2(L, c->a[1], c->a[2], true, false, c->fname, c->loc, &lo, &hi) ||
        !ops_unify2(L, c->a[0], sval_value(lo), true, false, c->fname, c->loc, &x, &lo2) ||
        !ops_unify2(L, sval_value(x), sval_value(hi), true, false, c->fname, c->loc, &x2, &hi2) ||
        !ops_unify2(L, sval_value(x2), sval_value(lo2), true, false, c->fname, c->loc, &x2, &lo2))
        return sval_error();
    Type t = ops_type(L, x2);
    if (!dtype_is_float((Dtype)t.dt))
        return ops_fail(L, c->loc, "tl.clamp only supports floating-point tiles, got %s", ops_tystr(L, t));
    ValId r = ops_emit2(L, OP_MAXIMUM, t, x2, lo2, c->loc);
    return sval_value(ops_emit2(L, OP_MINIMUM, t, r, hi2, c->loc));
}

/* Float-only math: Triton's _check_dtype(["fp32", "fp64"]) (fp32 only for
 * the *_rn variants and libdevice's fast_* functions; int32 and int64 too
 * for libdevice.abs). */
static bool check_math_dtype(Call *c, Type t, bool fp32_only, bool int_ok)
{
    Dtype dt = (Dtype)t.dt;
    if (dt == DT_F32 || (dt == DT_F64 && !fp32_only) || (int_ok && (dt == DT_I32 || dt == DT_I64)))
        return true;
    diag_error(c->L->d, c->loc, "%s expects %s, got %s%s", c->fname,
               fp32_only ? "fp32" : int_ok ? "fp32, fp64, int32 or int64" : "fp32 or fp64",
               ops_tystr(c->L, t), dt == DT_F16 || dt == DT_BF16 ? " (cast with .to(tl.float32) first)" : "");
    return false;
}

/* x as a value whose dtype check_math_dtype accepts. */
static ValId math_operand(Call *c, SVal x, bool fp32_only)
{
    ValId v = sema_to_value(c->L, x, c->fname, c->loc);
    return v && check_math_dtype(c, ops_type(c->L, v), fp32_only, false) ? v : 0;
}

SVal b_math1(Call *c)
{
    ValId x = math_operand(c, c->a[0], (c->def->aux & MF_FP32_ONLY) != 0);
    if (!x)
        return sval_error();
    return sval_value(ops_emit1(c->L, (OpKind)(c->def->aux & 0xffff), ops_type(c->L, x), x, c->loc));
}

SVal b_abs(Call *c)
{
    Lower *L = c->L;
    ValId x = sema_to_value(L, c->a[0], c->fname, c->loc);
    if (!x)
        return sval_error();
    Type t = ops_type(L, x);
    if (t.dt == DT_PTR)
        return ops_fail(L, c->loc, "%s does not accept pointers", c->fname);
    if (ops_unsigned((Dtype)t.dt))
        return sval_value(x); /* a no-op, as in Triton */
    return sval_value(ops_emit1(L, OP_ABS, t, x, c->loc));
}

/* Unifies n operands pairwise as tensors (numbers are converted to tensors
 * first, as Triton's builtins do; then binary_op_type_legalization). */
static bool unify_n(Call *c, const SVal *in, int n, ValId *out)
{
    Lower *L = c->L;
    if (n == 1)
        return (out[0] = sema_to_value(L, in[0], c->fname, c->loc)) != 0;
    SVal cur[3];
    for (int i = 0; i < n; i++)
        cur[i] = in[i];
    for (int round = 0; round < 2; round++)
        for (int i = 1; i < n; i++) {
            if (!ops_unify2(L, cur[0], cur[i], false, false, c->fname, c->loc, &out[0], &out[i]))
                return false;
            cur[0] = sval_value(out[0]), cur[i] = sval_value(out[i]);
        }
    return true;
}

SVal b_fma(Call *c)
{
    ValId v[3];
    if (!unify_n(c, c->a, 3, v))
        return sval_error();
    Type t = ops_type(c->L, v[0]);
    if (!dtype_is_float((Dtype)t.dt))
        return ops_fail(c->L, c->loc, "%s expects floating-point operands, got %s", c->fname,
                        ops_tystr(c->L, t));
    return sval_value(ir_op3(c->L->f, c->L->b, OP_FMA, t, v[0], v[1], v[2], c->loc));
}

SVal b_umulhi(Call *c)
{
    Lower *L = c->L;
    for (int i = 0; i < 2; i++)
        if (c->a[i].kind == SV_VALUE) {
            Dtype dt = (Dtype)ops_type(L, c->a[i].v).dt;
            if (dt != DT_I32 && dt != DT_I64 && dt != DT_U32 && dt != DT_U64)
                return ops_fail(L, c->loc, "tl.umulhi expects int32, int64, uint32 or uint64, got %s",
                                ops_describe(L, c->a[i]));
        }
    ValId v[2];
    if (!unify_n(c, c->a, 2, v))
        return sval_error();
    return sval_value(ops_emit2(L, OP_UMULHI, ops_type(L, v[0]), v[0], v[1], c->loc));
}

SVal b_fdiv(Call *c)
{
    Lower *L = c->L;
    bool ieee;
    if (!arg_bool(c, 2, false, &ieee))
        return sval_error();
    ValId x = sema_to_value(L, c->a[0], c->fname, c->loc), y = sema_to_value(L, c->a[1], c->fname, c->loc);
    if (!x || !y)
        return sval_error();
    Type tx = ops_type(L, x), ty = ops_type(L, y);
    if (!dtype_is_float((Dtype)tx.dt) || !dtype_is_float((Dtype)ty.dt))
        return ops_fail(L, c->loc, "both operands of %s must be floating-point, got %s and %s", c->fname,
                        ops_tystr(L, tx), ops_tystr(L, ty));
    if (tx.dt != ty.dt)
        return ops_fail(L, c->loc, "%s does not promote: the operands are %s and %s", c->fname,
                        ops_tystr(L, tx), ops_tystr(L, ty));
    if (!ops_unify2(L, sval_value(x), sval_value(y), false, true, c->fname, c->loc, &x, &y))
        return sval_error();
    return sval_value(ops_emit2(L, OP_DIV, ops_type(L, x), x, y, c->loc));
}

SVal b_div_rn(Call *c)
{
    ValId v[2];
    for (int i = 0; i < 2; i++)
        if (c->a[i].kind == SV_VALUE && ops_type(c->L, c->a[i].v).dt != DT_F32 &&
            !(c->def->aux && ops_type(c->L, c->a[i].v).dt == DT_F64))
            return ops_fail(c->L, c->loc, "%s expects %s, got %s", c->fname,
                            c->def->aux ? "fp32 or fp64" : "fp32", ops_describe(c->L, c->a[i]));
    if (!unify_n(c, c->a, 2, v))
        return sval_error();
    if (!dtype_is_float((Dtype)ops_type(c->L, v[0]).dt))
        return ops_fail(c->L, c->loc, "%s expects floating-point operands", c->fname);
    return sval_value(ops_emit2(c->L, OP_DIV, ops_type(c->L, v[0]), v[0], v[1], c->loc));
}

SVal b_sigmoid(Call *c)
{
    ValId x = math_operand(c, c->a[0], false);
    return x ? sval_value(ops_emit1(c->L, OP_SIGMOID, ops_type(c->L, x), x, c->loc)) : sval_error();
}

SVal b_cdiv(Call *c)
{
    Lower *L = c->L;
    SVal x = c->a[0], d = c->a[1];
    if (sval_is_int(x) && sval_is_int(d)) {
        if (d.c.i == 0)
            return ops_fail(L, c->loc, "%s: division by zero", c->fname);
    }
    /* (x + div - 1) // div, with the operators' own rules (folds constants). */
    SVal t = lower_binop(L, BO_ADD, x, d, c->loc);
    t = lower_binop(L, BO_SUB, t, sval_int(1), c->loc);
    return lower_binop(L, BO_FLOORDIV, t, d, c->loc);
}

/* ------------------------------------------------------------------ */
/* Builtins: reductions and scans                                      */
/* ------------------------------------------------------------------ */

/* Reduces x along axis (absent: all axes) with op; keep_dims as Triton. */
static ValId reduce(Call *c, OpKind op, ValId x, SVal axis_sv, bool keep_dims)
{
    Lower *L = c->L;
    Type t = ops_type(L, x);
    if (t.rank == 0) {
        diag_error(L->d, c->loc, "%s requires a tile, got the scalar %s", c->fname, ops_tystr(L, t));
        return 0;
    }
    int rank = t.rank, axis;
    bool all = sval_is_none(axis_sv) || axis_sv.kind == SV_ERROR;
    if (all) {
        if (t.rank > 1) {
            int32_t n = (int32_t)type_numel(t);
            t = type_with_shape(t, 1, &n);
            x = ops_emit1(L, OP_RESHAPE, t, x, c->loc);
        }
        axis = 0;
    } else {
        if (!sval_is_int(axis_sv)) {
            diag_error(L->d, c->loc, "%s: 'axis' must be a constexpr int or None, got %s", c->fname,
                       ops_describe(L, axis_sv));
            return 0;
        }
        if (!sema_wrap_axis(c, axis_sv.c.i, t.rank, &axis))
            return 0;
    }
    int32_t shape[KAD_MAX_RANK];
    int n = 0;
    for (int i = 0; i < t.rank; i++)
        if (i != axis)
            shape[n++] = t.shape[i];
        else if (keep_dims)
            shape[n++] = 1;
    Dtype rdt = (op == OP_ARGMAX || op == OP_ARGMIN) ? DT_I32 : (Dtype)t.dt;
    ValId r = ops_emit_attr(L, op, type_tile(rdt, n, shape), x, axis, keep_dims ? IF_KEEP_DIMS : 0, c->loc);
    if (all && keep_dims && rank > 1) {
        int32_t ones[KAD_MAX_RANK] = {1, 1, 1, 1};
        r = ops_emit1(L, OP_RESHAPE, type_tile(rdt, rank, ones), r, c->loc);
    }
    return r;
}

static ValId reduce_operand(Call *c)
{
    ValId x = arg_tile(c, 0);
    if (x && ops_type(c->L, x).dt == DT_PTR) {
        diag_error(c->L->d, c->loc, "%s does not accept pointers", c->fname);
        return 0;
    }
    return x;
}

/* Triton's _pick_sum_dtype: ints narrower than 32 bits sum in (u)int32. */
static Dtype sum_dtype(Dtype dt)
{
    if (dtype_is_int(dt) && dtype_bits(dt) < 32)
        return ops_unsigned(dt) ? DT_U32 : DT_I32;
    return dt;
}

SVal b_sum(Call *c)
{
    ValId x = reduce_operand(c);
    bool keep;
    if (!x || !arg_bool(c, 2, false, &keep))
        return sval_error();
    Dtype dt = sum_dtype((Dtype)ops_type(c->L, x).dt);
    if (!sema_absent(c, 3) && !arg_dtype(c, 3, &dt, NULL))
        return sval_error();
    if (dtype_is_fp8(dt))
        return ops_fail(c->L, c->loc, "%s: a sum of %s values is computed in fp8 by Triton, which kad does not "
                        "model; pass dtype=tl.float32 or convert first", c->fname, dtype_name(dt));
    x = ops_cast(c->L, x, dt, c->loc);
    ValId r = reduce(c, OP_SUM, x, c->has[1] ? c->a[1] : sval_none(), keep);
    return r ? sval_value(r) : sval_error();
}

/* The dtype tl.max / tl.min reduce in (Triton's core.max): bf16 in fp32;
 * without return_indices, types narrower than 32 bits in fp32 / int32. */
static Dtype max_dtype(Dtype dt, bool ret_idx)
{
    if (dt == DT_BF16)
        dt = DT_F32;
    if (!ret_idx && dtype_bits(dt) < 32)
        dt = dtype_is_float(dt) ? DT_F32 : DT_I32;
    return dt;
}

/* tl.max / tl.min (aux: OP_MAX or OP_MIN), with return_indices. */
SVal b_maxmin(Call *c)
{
    Lower *L = c->L;
    ValId x = reduce_operand(c);
    bool ret_idx, tie_left, keep;
    if (!x || !arg_bool(c, 2, false, &ret_idx) || !arg_bool(c, 3, true, &tie_left) ||
        !arg_bool(c, 4, false, &keep))
        return sval_error();
    x = ops_cast(L, x, max_dtype((Dtype)ops_type(L, x).dt, ret_idx), c->loc);
    SVal axis = c->has[1] ? c->a[1] : sval_none();
    ValId r = reduce(c, (OpKind)c->def->aux, x, axis, keep);
    if (!r)
        return sval_error();
    if (!ret_idx)
        return sval_value(r);
    ValId i = reduce(c, c->def->aux == OP_MAX ? OP_ARGMAX : OP_ARGMIN, x, axis, keep);
    if (!i)
        return sval_error();
    SVal two[2] = {sval_value(r), sval_value(i)};
    return sval_tuple(L, two, 2);
}

SVal b_argmaxmin(Call *c)
{
    ValId x = reduce_operand(c);
    bool tie_left, keep;
    if (!x || !arg_bool(c, 2, true, &tie_left) || !arg_bool(c, 3, false, &keep))
        return sval_error();
    if (ops_type(c->L, x).dt == DT_BF16)
        x = ops_cast(c->L, x, DT_F32, c->loc);
    ValId r = reduce(c, (OpKind)c->def->aux, x, c->a[1], keep);
    return r ? sval_value(r) : sval_error();
}

SVal b_scan(Call *c)
{
    Lower *L = c->L;
    ValId x = reduce_operand(c);
    bool rev;
    if (!x || !arg_bool(c, 2, false, &rev))
        return sval_error();
    Type t = ops_type(L, x);
    if (t.rank == 0)
        return ops_fail(L, c->loc, "%s requires a tile, got the scalar %s", c->fname, ops_tystr(L, t));
    Dtype dt = (Dtype)t.dt;
    if (dt == DT_BF16)
        dt = DT_F32;
    if (c->def->aux == OP_CUMSUM) {
        dt = sum_dtype(dt);
        if (!sema_absent(c, 3) && !arg_dtype(c, 3, &dt, NULL))
            return sval_error();
    }
    if (dtype_is_fp8(dt))
        return ops_fail(L, c->loc, "%s of %s values is computed in fp8 by Triton, which kad does not model; "
                        "convert with .to(tl.float32) first", c->fname, dtype_name(dt));
    int64_t a = 0;
    int axis;
    if (!sema_absent(c, 1) && !arg_int(c, 1, &a))
        return sval_error();
    if (!sema_wrap_axis(c, a, t.rank, &axis))
        return sval_error();
    x = ops_cast(L, x, dt, c->loc);
    return sval_value(ops_emit_attr(L, (OpKind)c->def->aux, ops_type(L, x), x, axis, rev ? IF_REVERSE : 0,
                                    c->loc));
}

SVal b_assoc_scan(Call *c)
{
    return ops_fail(c->L, c->loc, "%s: combine_fn must be a @triton.jit function", c->fname);
}

SVal b_softmax(Call *c)
{
    Lower *L = c->L;
    ValId x = reduce_operand(c);
    bool keep, ieee;
    if (!x || !arg_bool(c, 2, false, &keep) || !arg_bool(c, 3, false, &ieee))
        return sval_error();
    SVal dim = sema_absent(c, 1) ? sval_int(0) : c->a[1];
    /* Triton's definition: z = x - max(x, dim); num = exp(z); num / sum(num, dim) */
    Dtype mdt = max_dtype((Dtype)ops_type(L, x).dt, false);
    ValId m = reduce(c, OP_MAX, ops_cast(L, x, mdt, c->loc), dim, keep);
    if (!m)
        return sval_error();
    SVal z = lower_binop(L, BO_SUB, sval_value(x), sval_value(m), c->loc);
    if (z.kind == SV_ERROR)
        return z;
    ValId e = math_operand(c, z, false);
    if (!e)
        return sval_error();
    ValId num = ops_emit1(L, OP_EXP, ops_type(L, e), e, c->loc);
    ValId den = reduce(c, OP_SUM, ops_cast(L, num, sum_dtype((Dtype)ops_type(L, num).dt), c->loc), dim, keep);
    ValId q, r;
    if (!den || !ops_unify2(L, sval_value(num), sval_value(den), false, true, c->fname, c->loc, &q, &r))
        return sval_error();
    return sval_value(ops_emit2(L, OP_DIV, ops_type(L, q), q, r, c->loc));
}

/* ------------------------------------------------------------------ */
/* Builtins: dot                                                       */
/* ------------------------------------------------------------------ */

SVal b_dot(Call *c)
{
    Lower *L = c->L;
    ValId a = arg_tile(c, 0), b = a ? arg_tile(c, 1) : 0;
    if (!a || !b)
        return sval_error();
    Type ta = ops_type(L, a), tb = ops_type(L, b);
    if (ta.rank != tb.rank || (ta.rank != 2 && ta.rank != 3))
        return ops_fail(L, c->loc, "tl.dot requires 2-D or 3-D tiles, got %s and %s", ops_tystr(L, ta),
                        ops_tystr(L, tb));
    Dtype dt = (Dtype)ta.dt;
    if (dt != DT_I8 && dt != DT_U8 && dt != DT_F16 && dt != DT_BF16 && dt != DT_F32 && dt != DT_F64)
        return ops_fail(L, c->loc, "tl.dot does not support %s operands", ops_tystr(L, ta));
    if (ta.dt != tb.dt)
        return ops_fail(L, c->loc, "tl.dot operands must have the same dtype, got %s and %s",
                        ops_tystr(L, ta), ops_tystr(L, tb));
    int r = ta.rank;
    if (ta.shape[r - 1] != tb.shape[r - 2])
        return ops_fail(L, c->loc, "tl.dot: the inner dimensions of %s and %s do not match", ops_tystr(L, ta),
                        ops_tystr(L, tb));
    if (r == 3 && ta.shape[0] != tb.shape[0])
        return ops_fail(L, c->loc, "tl.dot: the batch dimensions of %s and %s do not match", ops_tystr(L, ta),
                        ops_tystr(L, tb));
    /* precision */
    int prec = DP_DEFAULT;
    if (!sema_absent(c, 3)) {
        const char *s;
        if (!arg_str(c, 3, "", &s))
            return sval_error();
        if (strcmp(s, "tf32") == 0)
            prec = DP_TF32;
        else if (strcmp(s, "tf32x3") == 0)
            prec = DP_TF32X3;
        else if (strcmp(s, "ieee") == 0)
            prec = DP_IEEE;
        else
            return ops_fail(L, c->loc, "tl.dot: input_precision must be 'tf32', 'tf32x3' or 'ieee', got '%s'",
                            s);
    }
    if (!sema_absent(c, 4)) {
        bool tf32;
        if (!sema_absent(c, 3))
            return ops_fail(L, c->loc, "tl.dot: only one of input_precision and allow_tf32 may be given");
        if (!arg_bool(c, 4, true, &tf32))
            return sval_error();
        prec = tf32 ? DP_TF32 : DP_IEEE;
    }
    if (dt != DT_F32)
        prec = DP_DEFAULT; /* the precision only concerns fp32 inputs */
    if (!sema_absent(c, 5)) {
        int64_t k;
        if (!arg_int(c, 5, &k))
            return sval_error();
    }
    Dtype out = DT_F32;
    if (!sema_absent(c, 6) && !arg_dtype(c, 6, &out, NULL))
        return sval_error();
    Dtype rdt;
    if (dtype_is_int(dt)) {
        if (dt != DT_I8)
            return ops_fail(L, c->loc, "tl.dot: only int8 integer operands are supported");
        rdt = DT_I32;
    } else if (out == DT_BF16) {
        return ops_fail(L, c->loc, "tl.dot: out_dtype=tl.bfloat16 is not supported; use tl.float32 and cast");
    } else if (dt == DT_F32 || dt == DT_BF16) {
        rdt = DT_F32;
    } else if (dt == DT_F64) {
        rdt = DT_F64;
    } else {
        if (out != DT_F16 && out != DT_F32)
            return ops_fail(L, c->loc,
                            "tl.dot: out_dtype must be tl.float32 or tl.float16 for fp16 operands");
        rdt = out;
    }
    int32_t shape[3];
    if (r == 3)
        shape[0] = ta.shape[0];
    shape[r - 2] = ta.shape[r - 2];
    shape[r - 1] = tb.shape[r - 1];
    Type rt = type_tile(rdt, r, shape);
    ValId acc;
    if (sema_absent(c, 2)) {
        acc = ops_emit_zero(L, rt, c->loc);
    } else {
        acc = arg_tile(c, 2);
        if (!acc)
            return sval_error();
        if (!type_eq(ops_type(L, acc), rt))
            return ops_fail(L, c->loc, "tl.dot: the accumulator must be %s, got %s", ops_tystr(L, rt),
                            ops_tystr(L, ops_type(L, acc)));
        /* Triton asserts acc's dtype == out_dtype (default float32), also for fp64 and int8. */
        if (rt.dt != out)
            return ops_fail(L, c->loc,
                            "tl.dot: an accumulator of dtype %s needs out_dtype=tl.%s (Triton requires "
                            "acc's dtype to equal out_dtype, which defaults to tl.float32)",
                            dtype_name(rdt), dtype_triton_name(rdt));
    }
    ValId args[3] = {a, b, acc};
    Inst *in = ir_emit(L->f, L->b, OP_DOT, args, 3, &rt, 1, c->loc);
    in->ival = prec;
    return sval_value(in->res[0]);
}

/* ------------------------------------------------------------------ */
/* libdevice                                                           */
/* ------------------------------------------------------------------ */

/* libdevice functions of a float and an int32 (ldexp, scalbn, pow with an
 * int32 exponent; jn and yn take the int first): the float is fp32 or
 * fp64, the int int32 (Triton's dispatch tables), both broadcast to one
 * shape.  pow with a float exponent is b_libdevice's. */
SVal b_libdevice_int(Call *c)
{
    Lower *L = c->L;
    int op = c->def->aux & 0xffff, ni = libm_int_operand(op);
    ValId v[2];
    for (int k = 0; k < 2; k++)
        if (!(v[k] = sema_to_value(L, c->a[k], c->fname, c->loc)))
            return sval_error();
    Type ti = ops_type(L, v[ni]), tf = ops_type(L, v[1 - ni]);
    if (op == OP_POWI && ti.dt != DT_I32 && !dtype_is_float((Dtype)ti.dt))
        return ops_fail(L, c->loc, "%s expects an fp32/fp64 or int32 exponent, got %s", c->fname, ops_tystr(L, ti));
    if (op == OP_POWI && ti.dt != DT_I32) { /* a float exponent: __nv_pow */
        if (!unify_n(c, c->a, 2, v))
            return sval_error();
        Type t = ops_type(L, v[0]);
        if (!check_math_dtype(c, t, false, false))
            return sval_error();
        return sval_value(ops_emit2(L, OP_POW, t, v[0], v[1], c->loc));
    }
    if (!check_math_dtype(c, tf, false, false))
        return sval_error();
    if (ti.dt != DT_I32)
        return ops_fail(L, c->loc, "%s expects an int32 %s, got %s", c->fname, ni ? "second argument" : "first argument",
                        ops_tystr(L, ti));
    Type big = tf.rank >= ti.rank ? tf : ti;
    for (int k = 0; k < 2; k++) {
        Type tk = ops_type(L, v[k]);
        if (!type_same_shape(tk, big))
            v[k] = ops_bcast_to(L, v[k], big.rank, big.shape, c->loc);
        if (!v[k])
            return sval_error();
    }
    return sval_value(ops_emit2(L, (OpKind)op, type_with_shape(tf, big.rank, big.shape), v[0], v[1], c->loc));
}

/* libdevice functions: arguments are converted to tensors; one dtype tuple
 * of fp32 or fp64 (a mismatch is promoted, as extern_elementwise does). */
SVal b_libdevice(Call *c)
{
    Lower *L = c->L;
    int n = c->np, aux = c->def->aux;
    int op = aux & 0xffff;
    ValId v[3];
    if (!unify_n(c, c->a, n, v))
        return sval_error();
    Type t = ops_type(L, v[0]);
    if (!check_math_dtype(c, t, (aux & MF_FP32_ONLY) != 0, (aux & LD_INT_OK) != 0))
        return sval_error();
    ValId r;
    if (op == OP_ILOGB) {
        r = ops_emit1(L, OP_ILOGB, type_with_dtype(t, DT_I32), v[0], c->loc);
    } else if (op_is_libm(op)) { /* one op, its rounding mode (the *_round ops) in ival */
        Inst *in = ir_emit(L->f, L->b, (OpKind)op, v, n, &t, 1, c->loc);
        in->ival = (aux >> LD_ROUND_SHIFT) & 3;
        r = in->res[0];
    } else if (op == LD_ISFIN) {
        Type bt = type_with_dtype(t, DT_I1);
        ValId a = ops_emit1(L, OP_ISNAN, bt, v[0], c->loc), b = ops_emit1(L, OP_ISINF, bt, v[0], c->loc);
        r = ops_emit1(L, OP_NOT, bt, ops_emit2(L, OP_OR, bt, a, b, c->loc), c->loc);
    } else if (n == 1) {
        Type rt = (op == OP_ISNAN || op == OP_ISINF) ? type_with_dtype(t, DT_I1) : t;
        r = ops_emit1(L, (OpKind)op, rt, v[0], c->loc);
    } else if (n == 2) {
        r = ops_emit2(L, (OpKind)op, t, v[0], v[1], c->loc);
    } else {
        r = ir_op3(L->f, L->b, (OpKind)op, t, v[0], v[1], v[2], c->loc);
    }
    if (aux & LD_I32_RESULT)
        r = ops_cast(L, r, DT_I32, c->loc);
    return sval_value(r);
}

SVal b_refuse(Call *c)
{
    static const struct { const char *name, *why; } why[] = {
        {"round", "rounds half away from zero, which kad's IR cannot express yet (libdevice.rint rounds "
                  "half to even)"},
        {"signbit", "is not supported by kad yet"},
        {"norm4d", "takes four operands; kad's elementwise ops take at most three (use libdevice.norm3d, or "
                   "tl.sqrt of the sum of squares)"},
        {"rnorm4d", "takes four operands; kad's elementwise ops take at most three (use libdevice.rnorm3d, or "
                    "tl.rsqrt of the sum of squares)"},
        {"nextafter", "is not supported by kad yet: a step to the neighbouring float, piecewise constant in "
                      "its second operand, with no useful derivative"},
        {"tanh", "does not exist in triton.language; use libdevice.tanh"},
        {"fabs", "does not exist in Triton's libdevice; use libdevice.abs or tl.abs"},
        {"fmax", "does not exist in Triton's libdevice; use tl.maximum"},
        {"fmin", "does not exist in Triton's libdevice; use tl.minimum"},
    };
    for (size_t i = 0; i < sizeof why / sizeof why[0]; i++)
        if (strcmp(c->def->name, why[i].name) == 0)
            return ops_fail(c->L, c->loc, "'%s' %s", c->fname, why[i].why);
    return ops_fail(c->L, c->loc, "'%s' is not supported by kad yet", c->fname);
}

/* ------------------------------------------------------------------ */
