/* sema_convert.c -- conversions, hints and the small builtins: tl.cast
 * and x.to (with fp8's supported pairs), multiple_of / max_contiguous /
 * max_constancy, static_assert / static_print / device_assert /
 * device_print / debug_barrier, tl.rand / randn / randint, the constexpr
 * helpers (tl.constexpr, triton.next_power_of_2; range and static_range
 * outside a for loop), and the Python builtins kernels call (min, max,
 * abs, int, float, bool, len, print).
 *
 * Requires: front.h.  Guarantees: one located error, then SV_ERROR.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/triton.h"
#include "front/front.h"

/* ------------------------------------------------------------------ */
/* Builtins: conversions and hints                                     */
/* ------------------------------------------------------------------ */

/* The value conversions to or from an fp8 type that Triton's NVIDIA
 * backend implements (FpToFpOp's table; convert_custom_float8 for
 * float8e4b15): fp32, fp16 and bf16 to and from fp8e5 and fp8e4nv, fp32 and
 * fp16 to and from fp8e4b15.  A Python number (is_const) converts to any. */
static bool fp8_cast_ok(Dtype src, Dtype dt, bool is_const)
{
    Dtype other = dtype_is_fp8(src) ? dt : src, f8 = dtype_is_fp8(src) ? src : dt;
    if (is_const && !dtype_is_fp8(src))
        return true;
    if (other == DT_F32 || other == DT_F16)
        return true;
    return other == DT_BF16 && f8 != DT_F8E4B15;
}

static SVal cast_to(Call *c, SVal xs, Dtype dt, Dtype elem, bool bitcast, const char *rounding)
{
    Lower *L = c->L;
    Opnd o;
    if (!ops_opnd(L, xs, false, &o, c->fname, c->loc))
        return sval_error();
    Dtype src = (Dtype)o.ty.dt;
    if (src == DT_PTR || dt == DT_PTR) {
        if (src == DT_PTR && dt == DT_PTR && o.ty.elem == elem)
            return sval_value(o.v);
        return ops_fail(L, c->loc, "%s: casts involving pointers are not supported by kad yet (%s to %s)",
                        c->fname, ops_tystr(L, o.ty), dt == DT_PTR ? "a pointer" : dtype_name(dt));
    }
    if (rounding) {
        bool down = dtype_is_float(src) && dtype_is_float(dt) && dtype_bits(dt) < dtype_bits(src);
        if (strcmp(rounding, "rtne") != 0 && strcmp(rounding, "rtz") != 0)
            return ops_fail(L, c->loc, "%s: fp_downcast_rounding must be 'rtne' or 'rtz', got '%s'", c->fname,
                            rounding);
        if (!down)
            return ops_fail(L, c->loc,
                            "%s: fp_downcast_rounding is only valid for float downcasts, not %s to %s",
                            c->fname, dtype_name(src), dtype_name(dt));
        if (strcmp(rounding, "rtz") == 0)
            return ops_fail(L, c->loc, "%s: fp_downcast_rounding='rtz' is not supported by kad yet",
                            c->fname);
    }
    if (bitcast) {
        if (src == dt)
            return sval_value(o.is_const ? ops_materialize(L, &o, src, 0, NULL, c->loc) : o.v);
        if (dtype_bits(src) != dtype_bits(dt))
            return ops_fail(L, c->loc, "%s: cannot bitcast %s to %s: sizes differ (%d and %d bits)", c->fname,
                            dtype_name(src), dtype_name(dt), dtype_bits(src), dtype_bits(dt));
        ValId v = o.is_const ? ops_materialize(L, &o, src, 0, NULL, c->loc) : o.v;
        if (!v)
            return sval_error();
        return sval_value(ops_emit1(L, OP_BITCAST, type_with_dtype(ops_type(L, v), dt), v, c->loc));
    }
    if (src != dt && (dtype_is_fp8(src) || dtype_is_fp8(dt)) && !fp8_cast_ok(src, dt, o.is_const))
        return ops_fail(L, c->loc,
                        "%s: Triton has no conversion from %s to %s on NVIDIA GPUs (fp8 types convert "
                        "to and from fp32, fp16 and bf16; float8e4b15 to and from fp32 and fp16); "
                        "convert through tl.float32",
                        c->fname, dtype_name(src), dtype_name(dt));
    ValId v = ops_materialize(L, &o, dt, o.ty.rank, o.ty.shape, c->loc);
    return v ? sval_value(v) : sval_error();
}

/* tl.cast(x, dtype, fp_downcast_rounding=None, bitcast=False) and x.to(...) */
SVal b_cast(Call *c)
{
    Dtype dt, elem = DT_VOID;
    bool bitcast;
    const char *rounding = NULL;
    /* Triton's cast takes a block_type's scalar (x.to(y.type)), not a block
     * pointer's type */
    if (c->a[1].kind == SV_CONST && c->a[1].c.kind == CK_DTYPE && c->a[1].c.brank && !c->a[1].c.of_block) {
        c->a[1].c.brank = 0;
        memset(c->a[1].c.bshape, 0, sizeof c->a[1].c.bshape);
    }
    if (!arg_dtype(c, 1, &dt, &elem) || !arg_bool(c, 3, false, &bitcast))
        return sval_error();
    if (!sema_absent(c, 2) && !arg_str(c, 2, NULL, &rounding))
        return sval_error();
    return cast_to(c, c->a[0], dt, elem, bitcast, rounding);
}

/* multiple_of / max_contiguous (aux: the op) and max_constancy (aux 0). */
SVal b_hint(Call *c)
{
    Lower *L = c->L;
    ValId x = arg_tile(c, 0);
    int64_t v[KAD_MAX_RANK + 1];
    int n;
    if (!x || !sema_int_list(c, c->a[1], true, v, KAD_MAX_RANK, &n, "the values"))
        return sval_error();
    Type t = ops_type(L, x);
    int want = c->def->aux == OP_MULTIPLE_OF && t.rank == 0 ? 1 : t.rank;
    if (n != want)
        return ops_fail(L, c->loc, "%s: %d values given for %s (expected %d)", c->fname, n, ops_tystr(L, t),
                        want);
    for (int i = 0; i < n; i++)
        if (v[i] <= 0 || v[i] > INT32_MAX)
            return ops_fail(L, c->loc, "%s: values must be positive int32 constants, got %lld", c->fname,
                            (long long)v[i]);
    if (!c->def->aux)
        return sval_value(x); /* max_constancy: accepted and ignored */
    Inst *in = ir_emit(L->f, L->b, (OpKind)c->def->aux, &x, 1, &t, 1, c->loc);
    for (int i = 0; i < n; i++)
        in->ints[i] = (int32_t)v[i];
    in->nints = n;
    return sval_value(in->res[0]);
}

/* ------------------------------------------------------------------ */
/* Builtins: assertions, random numbers, constexpr helpers              */
/* ------------------------------------------------------------------ */

SVal b_static_assert(Call *c)
{
    const char *msg;
    if (!arg_str(c, 1, "", &msg))
        return sval_error();
    SVal x = c->a[0];
    if (x.kind == SV_VALUE)
        return ops_fail(c->L, c->loc, "tl.static_assert needs a constexpr condition, got %s",
                        ops_describe(c->L, x));
    if (!sval_truthy(x))
        return ops_fail(c->L, c->loc, "static_assert failed%s%s", *msg ? ": " : "", msg);
    return sval_none();
}

SVal b_nothing(Call *c) { (void)c; return sval_none(); }

SVal b_device_assert(Call *c)
{
    Lower *L = c->L;
    const char *msg;
    if (!arg_str(c, 1, "", &msg))
        return sval_error();
    SVal x = c->a[0];
    ValId v;
    if (x.kind == SV_CONST && x.c.kind != CK_STR && x.c.kind != CK_DTYPE) {
        if (const_truthy(x.c) && sema_absent(c, 2))
            return sval_none();
        v = ir_const_int(L->f, L->b, type_scalar(DT_I1), const_truthy(x.c), c->loc);
    } else if (x.kind == SV_VALUE && ops_type(L, x.v).dt != DT_PTR) {
        v = ops_cast(L, x.v, DT_I1, c->loc);
    } else {
        return ops_fail(L, c->loc, "tl.device_assert: the condition must be a tensor or a number, got %s",
                        ops_describe(L, x));
    }
    if (!sema_absent(c, 2)) { /* cond | ~mask */
        Opnd m;
        if (!arg_mask(c, 2, &m))
            return sval_error();
        ValId mv = m.is_const ? ops_emit_const(L, m.c, type_scalar(DT_I1), c->loc) : m.v;
        ValId nm = ops_emit1(L, OP_NOT, ops_type(L, mv), mv, c->loc), a, b;
        if (!ops_unify2(L, sval_value(v), sval_value(nm), false, false, c->fname, c->loc, &a, &b))
            return sval_error();
        v = ops_emit2(L, OP_OR, ops_type(L, a), a, b, c->loc);
    }
    Inst *in = ir_emit(L->f, L->b, OP_ASSERT, &v, 1, NULL, 0, c->loc);
    in->sattr = arena_strdup(L->a, msg);
    return sval_none();
}

SVal b_rand(Call *c)
{
    Lower *L = c->L;
    if (!sema_absent(c, 2)) {
        int64_t r;
        if (!arg_int(c, 2, &r))
            return sval_error();
        if (r != 10)
            return ops_fail(L, c->loc, "%s: only the default n_rounds=10 is supported by kad", c->fname);
    }
    ValId seed = sema_to_value(L, c->a[0], c->fname, c->loc);
    ValId off = seed ? sema_to_value(L, c->a[1], c->fname, c->loc) : 0;
    if (!seed || !off)
        return sval_error();
    Type ts = ops_type(L, seed), to = ops_type(L, off);
    if (ts.rank != 0 || !dtype_is_int((Dtype)ts.dt) || ts.dt == DT_I1)
        return ops_fail(L, c->loc, "%s: the seed must be an integer scalar, got %s", c->fname,
                        ops_tystr(L, ts));
    if (to.dt != DT_I32 && to.dt != DT_U32)
        return ops_fail(L, c->loc,
                        "%s: offsets must be int32 or uint32 (64-bit offsets are not supported by kad "
                        "yet), got %s", c->fname, ops_tystr(L, to));
    Dtype rdt = c->def->aux == OP_RANDINT ? DT_U32 : DT_F32;
    return sval_value(ops_emit2(L, (OpKind)c->def->aux, type_with_dtype(to, rdt), seed, off, c->loc));
}

SVal b_constexpr(Call *c)
{
    SVal x = c->a[0];
    if (x.kind == SV_CONST || x.kind == SV_NONE || x.kind == SV_TUPLE)
        return x;
    return ops_fail(c->L, c->loc, "tl.constexpr() needs a compile-time constant, got %s",
                    ops_describe(c->L, x));
}

SVal b_loop_only(Call *c)
{
    return ops_fail(c->L, c->loc, "%s can only be used as the iterable of a for loop", c->fname);
}

SVal b_next_pow2(Call *c)
{
    int64_t n;
    if (!arg_int(c, 0, &n))
        return sval_error();
    if (n > ((int64_t)1 << 62))
        return ops_overflow(c->L, "next_power_of_2", c->loc);
    int64_t p = 1;
    while (p < n)
        p <<= 1;
    return sval_int(p);
}

/* ------------------------------------------------------------------ */
/* Python builtins                                                     */
/* ------------------------------------------------------------------ */

SVal b_py_minmax(Call *c)
{
    Lower *L = c->L;
    bool is_max = c->def->aux == OP_MAXIMUM;
    SVal args = c->has[0] ? c->a[0] : sval_tuple(L, NULL, 0);
    if (args.n == 1 && args.elts[0].kind == SV_TUPLE)
        args = args.elts[0];
    if (args.n == 0)
        return ops_fail(L, c->loc, "%s() needs at least one argument", c->fname);
    bool all_const = true;
    for (int i = 0; i < args.n; i++)
        all_const = all_const && sval_is_num(args.elts[i]);
    if (all_const) {
        SVal best = args.elts[0];
        for (int i = 1; i < args.n; i++) {
            SVal gt = ops_fold_compare(L, is_max ? CO_GT : CO_LT, args.elts[i], best, c->loc);
            if (gt.kind == SV_ERROR)
                return gt;
            if (gt.c.i)
                best = args.elts[i];
        }
        return best;
    }
    if (args.n != 2)
        return ops_fail(L, c->loc, "%s() of tensors takes exactly two arguments (it is tl.%s)", c->fname,
                        is_max ? "maximum" : "minimum");
    ValId x, y;
    if (!ops_unify2(L, args.elts[0], args.elts[1], true, false, c->fname, c->loc, &x, &y))
        return sval_error();
    return sval_value(ops_emit2(L, (OpKind)c->def->aux, ops_type(L, x), x, y, c->loc));
}

SVal b_py_abs(Call *c)
{
    SVal x = c->a[0];
    if (x.kind == SV_CONST && x.c.kind == CK_FLOAT)
        return sval_float(fabs(x.c.f));
    if (sval_is_int(x)) {
        if (x.c.i == INT64_MIN)
            return ops_overflow(c->L, "abs", c->loc);
        return sval_int(x.c.i < 0 ? -x.c.i : x.c.i);
    }
    return b_abs(c);
}

/* int(), float(), bool() of constants (aux: the ConstKind). */
SVal b_py_conv(Call *c)
{
    SVal x = c->a[0];
    if (x.kind == SV_CONST && x.c.kind == CK_STR && c->def->aux != CK_BOOL) {
        /* float("inf"), float("-inf"), float("nan"), int("16"): Python's parsing */
        const char *s = x.c.s;
        char *end;
        while (*s == ' ' || *s == '\t')
            s++;
        if (c->def->aux == CK_FLOAT) {
            double f = strtod(s, &end);
            bool hex = strchr(s, 'x') || strchr(s, 'X');
            while (*end == ' ' || *end == '\t')
                end++;
            if (end != s && !*end && !hex)
                return sval_float(f);
        } else {
            long long i = strtoll(s, &end, 10);
            while (*end == ' ' || *end == '\t')
                end++;
            if (end != s && !*end)
                return sval_int(i);
        }
        return ops_fail(c->L, c->loc, "%s() cannot convert %s", c->fname, const_repr(c->L->a, x.c));
    }
    if (x.kind == SV_CONST && x.c.kind == CK_STR)
        return sval_bool(const_truthy(x.c));
    if (!sval_is_num(x))
        return ops_fail(c->L, c->loc, "%s() of %s is not supported; use x.to(dtype) on tensors", c->fname,
                        ops_describe(c->L, x));
    switch (c->def->aux) {
    case CK_INT:
        if (x.c.kind == CK_FLOAT) {
            if (!isfinite(x.c.f) || fabs(x.c.f) >= 9.2e18)
                return ops_fail(c->L, c->loc, "int() of %s does not fit in 64 bits",
                                const_repr(c->L->a, x.c));
            return sval_int((int64_t)trunc(x.c.f));
        }
        return sval_int(x.c.i);
    case CK_FLOAT: return sval_float(const_as_double(x.c));
    default: return sval_bool(const_truthy(x.c));
    }
}

SVal b_py_len(Call *c)
{
    SVal x = c->a[0];
    if (x.kind == SV_TUPLE)
        return sval_int(x.n);
    if (x.kind == SV_CONST && x.c.kind == CK_STR)
        return sval_int((int64_t)strlen(x.c.s));
    return ops_fail(c->L, c->loc, "len() of %s is not supported", ops_describe(c->L, x));
}

