/* sema_ops.c -- typing and lowering of every operation on specialization
 * values: Python operators, comparisons, `and`/`or`, subscripts,
 * attributes, conversions and constant folding; and the value toolkit that
 * sema_builtins.c (the tl.* / tl.math.* / libdevice / Python builtins)
 * lowers its calls with: SVal construction, Triton's dtype promotion,
 * broadcasting, materialization of operands, emission helpers.
 *
 * The job.  sema.c walks statements and hands each operation to this file
 * (calls to sema_builtins.c) with already-evaluated operands (SVal).
 * Constexpr operands are folded here with Python semantics; runtime
 * operands are typed with Triton's semantics (triton/language/semantic.py,
 * core.py) and lowered to IR instructions appended to L->b.
 *
 * Invariants this file keeps (and sema_builtins.c inherits by lowering
 * through the ops_* helpers):
 *  - The IR it emits is explicit: elementwise ops only ever see operands of
 *    one identical type.  Every dtype change is an IR `cast` (or `ne 0` for
 *    a conversion to i1, as Triton does), every shape change a `broadcast`,
 *    `expand_dims` or `reshape`.  Casts are emitted only when dtypes differ,
 *    broadcasts only when shapes differ.
 *  - A constant that meets a tile becomes one `const` of the final tile type
 *    (no const + cast + broadcast chains).
 *  - Python numbers combined with runtime values are "weakly typed" exactly
 *    as in Triton's computation_type_impl: a number of the same or lower
 *    kind (bool < int < float) than the value does not take part in the
 *    promotion (x_fp16 * 2.0 stays fp16).  Comparisons are not weakly
 *    typed: Triton converts the number to a tensor first (x_fp16 < 0.5
 *    compares in fp32).
 *  - A float `const` holds the exact value of the Python number; its dtype
 *    rounds it where it is used (the interpreter, the emitted Triton), as
 *    Triton's builder does.  Only a number that Triton first makes an fp32
 *    tensor and then casts to fp64 is rounded to fp32 here.
 *  - Every user error is reported once, at the Loc given by sema.c, naming
 *    the construct in the user's terms; the function then returns SV_ERROR
 *    (or ValId 0).  SV_ERROR operands propagate without a new message.
 *
 * The files: this one holds the value toolkit (SVal construction and
 * description, Triton's dtype rules, emission helpers, operands unified
 * Triton's way); constant folding and the text of constants are
 * sema_const.c's, the operators and the rest of the lower_* interface
 * sema_operators.c's (front.h).
 *
 * Requires: L->f and L->b set by sema.c; sema_builtins.c for the names of
 * builtins (builtin_user_name) and tensor methods (builtin_is_method).
 * Guarantees: no output and no global state; all memory from L->a.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/triton.h"
#include "front/front.h"

/* ------------------------------------------------------------------ */
/* SVal construction and description                                   */
/* ------------------------------------------------------------------ */

SVal sval_error(void) { return (SVal){.kind = SV_ERROR}; }
SVal sval_none(void) { return (SVal){.kind = SV_NONE}; }
SVal sval_value(ValId v) { return v ? (SVal){.kind = SV_VALUE, .v = v} : sval_error(); }

static SVal sval_const(ConstVal c)
{
    SVal s = {.kind = SV_CONST};
    s.c = c;
    return s;
}
SVal sval_int(int64_t i) { return sval_const((ConstVal){.kind = CK_INT, .i = i}); }
SVal sval_float(double f) { return sval_const((ConstVal){.kind = CK_FLOAT, .f = f}); }
SVal sval_bool(bool b) { return sval_const((ConstVal){.kind = CK_BOOL, .i = b}); }
SVal sval_str(const char *s) { return sval_const((ConstVal){.kind = CK_STR, .s = s}); }
SVal sval_dtype(Dtype dt) { return sval_const((ConstVal){.kind = CK_DTYPE, .dt = dt}); }
/* A pointer dtype (x_ptr.dtype): dt = DT_PTR, the pointee in .i. */
SVal sval_ptr_dtype(Dtype elem)
{
    return sval_const((ConstVal){.kind = CK_DTYPE, .dt = DT_PTR, .i = elem});
}

/* Triton's type of a tile (`x.type`): block_type(dtype, shape); with
 * of_block, a block pointer's: pointer_type(block_type(t.elem, shape)). */
SVal sval_block_type(Type t, bool of_block)
{
    ConstVal c = {.kind = CK_DTYPE, .dt = t.dt, .i = t.elem, .brank = t.rank, .of_block = of_block};
    memcpy(c.bshape, t.shape, sizeof c.bshape);
    return sval_const(c);
}

/* The elements' dtype of a block type, else x itself. */
SVal sema_dtype_unblock(SVal x)
{
    x.c.brank = 0;
    memset(x.c.bshape, 0, sizeof x.c.bshape);
    return x;
}

SVal sval_tuple(Lower *L, const SVal *elts, int n)
{
    SVal s = {.kind = SV_TUPLE, .n = n};
    s.elts = arena_alloc(L->a, sizeof *s.elts * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        s.elts[i] = elts[i];
    return s;
}

SVal sval_method(Lower *L, SVal self, const char *name)
{
    SVal s = {.kind = SV_METHOD, .n = 1, .qual = arena_strdup(L->a, name)};
    s.elts = arena_alloc(L->a, sizeof *s.elts);
    s.elts[0] = self;
    return s;
}

bool sval_is_none(SVal x) { return x.kind == SV_NONE || (x.kind == SV_CONST && x.c.kind == CK_NONE); }
bool sval_is_num(SVal x)
{
    return x.kind == SV_CONST && (x.c.kind == CK_INT || x.c.kind == CK_FLOAT || x.c.kind == CK_BOOL);
}
bool sval_is_int(SVal x) { return x.kind == SV_CONST && (x.c.kind == CK_INT || x.c.kind == CK_BOOL); }

Type ops_type(Lower *L, ValId v) { return ir_type(L->f, v); }

const char *ops_tystr(Lower *L, Type t)
{
    Buf b = {.a = L->a};
    type_print(&b, t);
    return buf_str(&b);
}

const char *ops_shapestr(Lower *L, int rank, const int32_t *shape)
{
    Buf b = {.a = L->a};
    buf_putc(&b, '[');
    for (int i = 0; i < rank; i++)
        buf_printf(&b, i ? ",%d" : "%d", (int)shape[i]);
    buf_putc(&b, ']');
    return buf_str(&b);
}

/* A short description of an operand for messages. */
const char *ops_describe(Lower *L, SVal x)
{
    switch (x.kind) {
    case SV_VALUE: return ops_tystr(L, ops_type(L, x.v));
    case SV_NONE: return "None";
    case SV_CONST:
        switch (x.c.kind) {
        case CK_NONE: return "None";
        case CK_INT: return arena_printf(L->a, "constexpr int %s", const_repr(L->a, x.c));
        case CK_FLOAT: return arena_printf(L->a, "constexpr float %s", const_repr(L->a, x.c));
        case CK_BOOL: return arena_printf(L->a, "constexpr bool %s", const_repr(L->a, x.c));
        case CK_STR: return arena_printf(L->a, "constexpr str %s", const_repr(L->a, x.c));
        case CK_DTYPE: return arena_printf(L->a, "dtype %s", const_repr(L->a, x.c));
        }
        return "constexpr";
    case SV_TUPLE: return "a tuple";
    case SV_SLICE: return "a slice";
    case SV_MODULE: return arena_printf(L->a, "module '%s'", builtin_user_name(L->a, x.qual));
    case SV_BUILTIN: return arena_printf(L->a, "function '%s'", builtin_user_name(L->a, x.qual));
    case SV_FUNC: return arena_printf(L->a, "function '%s'", x.fn ? x.fn->name : "?");
    case SV_METHOD: return arena_printf(L->a, "method '%s'", x.qual);
    case SV_BLOCKPTR: return sval_is_tensor_desc(x) ? "a tensor descriptor" : "a block pointer";
    case SV_ERROR: break;
    }
    return "an invalid value";
}

SVal ops_fail(Lower *L, Loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_verror(L->d, loc, fmt, ap);
    va_end(ap);
    return sval_error();
}

/* ------------------------------------------------------------------ */
/* Dtype rules (Triton's)                                             */
/* ------------------------------------------------------------------ */

/* Triton's is_int_unsigned: u8..u64 and int1 (kad's table agrees). */
bool ops_unsigned(Dtype d) { return dtype_is_int(d) && !dtype_is_signed(d); }
/* Triton's "kind": bool < integral < floating. */
static int dt_kind(Dtype d) { return d == DT_I1 ? 0 : dtype_is_float(d) ? 2 : 1; }

/* integer_promote_impl: C's usual arithmetic conversions. */
static Dtype int_promote(Dtype a, Dtype b)
{
    int ab = dtype_bits(a), bb = dtype_bits(b);
    bool au = ops_unsigned(a), bu = ops_unsigned(b);
    if (au == bu)
        return ab > bb ? a : b;
    if (au)
        return ab >= bb ? a : b;
    return bb >= ab ? b : a;
}

/* computation_type_impl.  weak_a/weak_b: the operand is a Python number.
 * Returns DT_VOID after reporting an error. */
static Dtype computation_type(Lower *L, Dtype a, bool weak_a, Dtype b, bool weak_b, bool divmod,
                              const char *op, Loc loc)
{
    if (weak_a != weak_b) {
        Dtype s = weak_a ? a : b, t = weak_a ? b : a;
        if (dt_kind(s) <= dt_kind(t)) {
            if (divmod && (t == DT_F16 || t == DT_BF16))
                return DT_F32;
            if (dtype_is_fp8(t) && strcmp(op, "tl.where") != 0) {
                diag_error(L->d, loc,
                           "%s on %s values is computed in fp8 by Triton, which kad does not model; "
                           "convert the operands with .to(tl.float32) first",
                           op, dtype_name(t));
                return DT_VOID;
            }
            return t;
        }
    }
    if (a == DT_F64 || b == DT_F64)
        return DT_F64;
    if (a == DT_F32 || b == DT_F32)
        return DT_F32;
    if (a == DT_F16 || b == DT_F16)
        return divmod ? DT_F32 : DT_F16;
    if (a == DT_BF16 && b == DT_BF16)
        return divmod ? DT_F32 : DT_BF16;
    if (a == DT_BF16 || b == DT_BF16)
        return DT_F32;
    if (dtype_is_fp8(a) || dtype_is_fp8(b)) {
        /* Triton: different fp8 types meet in fp16, an fp8 type with
         * itself stays; with an integer it is an error. */
        if (!dtype_is_fp8(a) || !dtype_is_fp8(b)) {
            diag_error(L->d, loc, "%s: unexpected types %s and %s", op, dtype_name(a), dtype_name(b));
            return DT_VOID;
        }
        if (a == b && strcmp(op, "tl.where") != 0) {
            diag_error(L->d, loc,
                       "%s on %s values is computed in fp8 by Triton, which kad does not model; "
                       "convert the operands with .to(tl.float32) first",
                       op, dtype_name(a));
            return DT_VOID;
        }
        return a == b ? a : DT_F16;
    }
    if (divmod && ops_unsigned(a) != ops_unsigned(b)) {
        diag_error(L->d, loc,
                   "cannot use %s with %s and %s because they have different signedness; cast "
                   "them to the same signedness",
                   op, dtype_name(a), dtype_name(b));
        return DT_VOID;
    }
    return int_promote(a, b);
}

/* Triton's to_tensor_type for a Python number. */
Dtype const_dtype(ConstVal c)
{
    if (c.kind == CK_BOOL)
        return DT_I1;
    if (c.kind == CK_INT) {
        if (c.i >= INT32_MIN && c.i <= INT32_MAX)
            return DT_I32;
        if (c.i >= 0 && c.i <= (int64_t)UINT32_MAX)
            return DT_U32;
        return DT_I64;
    }
    double a = fabs(c.f);
    if (isinf(a) || a == 0.0 || isnan(c.f) || (a >= 0x1p-126 && a <= 0x1.fffffep127))
        return DT_F32;
    return DT_F64;
}

double const_as_double(ConstVal c) { return c.kind == CK_FLOAT ? c.f : (double)c.i; }

static bool int_range(Dtype d, int64_t *lo, int64_t *hi)
{
    int bits = dtype_bits(d);
    if (d == DT_I1) {
        *lo = 0, *hi = 1;
    } else if (ops_unsigned(d)) {
        *lo = 0;
        *hi = bits >= 63 ? INT64_MAX : ((int64_t)1 << bits) - 1;
    } else {
        *lo = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
        *hi = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Emission helpers                                                    */
/* ------------------------------------------------------------------ */

ValId ops_emit1(Lower *L, OpKind op, Type ty, ValId x, Loc loc) { return ir_op1(L->f, L->b, op, ty, x, loc); }
ValId ops_emit2(Lower *L, OpKind op, Type ty, ValId x, ValId y, Loc loc)
{
    return ir_op2(L->f, L->b, op, ty, x, y, loc);
}

/* A single-operand op with an integer attribute (axis, start) and flags. */
ValId ops_emit_attr(Lower *L, OpKind op, Type ty, ValId x, int64_t ival, int flags, Loc loc)
{
    Inst *in = ir_emit(L->f, L->b, op, x ? &x : NULL, x ? 1 : 0, &ty, 1, loc);
    in->ival = ival;
    in->flags = (uint16_t)(in->flags | flags);
    return in->res[0];
}

/* Converts constant c to dtype dt (value semantics of Triton's constant
 * materialization).  Errors (not representable) are reported at loc. */
static bool const_for(Lower *L, ConstVal c, Dtype dt, int64_t *iv, double *fv, Loc loc)
{
    *iv = 0, *fv = 0;
    if (c.kind != CK_INT && c.kind != CK_BOOL && c.kind != CK_FLOAT) {
        diag_error(L->d, loc, "expected a number, got %s", const_repr(L->a, c));
        return false;
    }
    if (dtype_is_float(dt)) {
        /* The exact value: the const's dtype rounds it where it is used. */
        *fv = const_as_double(c);
        return true;
    }
    if (dt == DT_I1) {
        *iv = c.kind == CK_FLOAT ? c.f != 0.0 : c.i != 0;
        return true;
    }
    if (c.kind == CK_FLOAT) {
        double t = trunc(c.f);
        int64_t lo, hi;
        int_range(dt, &lo, &hi);
        if (isnan(c.f) || t < (double)lo || t > (double)hi) {
            diag_error(L->d, loc, "float constant %s does not fit in %s", const_repr(L->a, c),
                       dtype_name(dt));
            return false;
        }
        *iv = (int64_t)t;
        return true;
    }
    *iv = dtype_wrap(dt, (uint64_t)c.i); /* as an integer cast of a constant does */
    return true;
}

ValId ops_emit_const(Lower *L, ConstVal c, Type ty, Loc loc)
{
    int64_t iv;
    double fv;
    if (!const_for(L, c, (Dtype)ty.dt, &iv, &fv, loc))
        return 0;
    if (dtype_is_float((Dtype)ty.dt))
        return ir_const_float(L->f, L->b, ty, fv, loc);
    return ir_const_int(L->f, L->b, ty, iv, loc);
}

ValId ops_emit_zero(Lower *L, Type ty, Loc loc)
{
    if (dtype_is_float((Dtype)ty.dt))
        return ir_const_float(L->f, L->b, ty, 0.0, loc);
    return ir_const_int(L->f, L->b, ty, 0, loc);
}

/* Converts v to dtype dt (not pointers).  To i1 is `ne 0`, like Triton. */
ValId ops_cast(Lower *L, ValId v, Dtype dt, Loc loc)
{
    Type t = ops_type(L, v);
    if (t.dt == dt)
        return v;
    ASSERT(t.dt != DT_PTR && dt != DT_PTR);
    if (dt == DT_I1)
        return ops_emit2(L, OP_NE, type_with_dtype(t, DT_I1), v, ops_emit_zero(L, t, loc), loc);
    return ops_emit1(L, OP_CAST, type_with_dtype(t, dt), v, loc);
}

/* The numpy/Triton broadcast of two shapes (lower rank: axes prepended). */
bool ops_bcast_shape(int ra, const int32_t *a, int rb, const int32_t *b, int *rank, int32_t *out)
{
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int32_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return false;
        out[i] = da == 1 ? db : da;
    }
    *rank = r;
    return true;
}

/* Inserts a size-1 axis at position axis (0..rank; the caller checked the
 * result's rank). */
ValId ops_expand_dims(Lower *L, ValId v, int axis, Loc loc)
{
    Type t = ops_type(L, v);
    int32_t shape[KAD_MAX_RANK];
    for (int k = 0, j = 0; k <= t.rank; k++)
        shape[k] = k == axis ? 1 : t.shape[j++];
    return ops_emit_attr(L, OP_EXPAND_DIMS, type_with_shape(t, t.rank + 1, shape), v, axis, 0, loc);
}

/* Broadcasts v to the shape (the caller checked compatibility): rank-0 ->
 * broadcast; lower rank -> expand_dims at 0, then broadcast of size-1 axes. */
ValId ops_bcast_to(Lower *L, ValId v, int rank, const int32_t *shape, Loc loc)
{
    Type t = ops_type(L, v), want = type_with_shape(t, rank, shape);
    if (type_same_shape(t, want))
        return v;
    if (t.rank > 0) {
        for (int r = t.rank; r < rank; r++)
            v = ops_expand_dims(L, v, 0, loc);
        if (type_same_shape(ops_type(L, v), want))
            return v;
    }
    return ops_emit1(L, OP_BROADCAST, want, v, loc);
}

/* Permutes the axes of v: axis i of the result is axis perm[i] of v (perm
 * is a permutation of 0..rank-1, checked by the caller). */
ValId ops_permute(Lower *L, ValId v, const int32_t *perm, Loc loc)
{
    Type t = ops_type(L, v);
    int32_t shape[KAD_MAX_RANK] = {0};
    for (int i = 0; i < t.rank; i++)
        shape[i] = t.shape[perm[i]];
    Type rt = type_with_shape(t, t.rank, shape);
    Inst *in = ir_emit(L->f, L->b, OP_PERMUTE, &v, 1, &rt, 1, loc);
    for (int i = 0; i < t.rank; i++)
        in->ints[i] = perm[i];
    in->nints = t.rank;
    return in->res[0];
}

/* ------------------------------------------------------------------ */
/* Operands: Python numbers and runtime values, unified Triton's way   */
/* ------------------------------------------------------------------ */

/* (Opnd is declared in front.h: sema_builtins.c makes masks of them.) */

/* Makes an operand of a number or a value; anything else is an error
 * naming ctx ("'+'", "tl.where"). */
bool ops_opnd(Lower *L, SVal x, bool weak, Opnd *o, const char *ctx, Loc loc)
{
    memset(o, 0, sizeof *o);
    if (x.kind == SV_VALUE) {
        o->v = x.v;
        o->ty = ops_type(L, x.v);
        return true;
    }
    if (sval_is_num(x)) {
        o->is_const = true;
        o->weak = weak;
        o->c = x.c;
        o->ty = type_scalar(const_dtype(x.c));
        return true;
    }
    diag_error(L->d, loc, "%s expects a tensor or a number, got %s", ctx, ops_describe(L, x));
    return false;
}

/* Two operands of a builtin or operator.  Two numbers given to a builtin
 * are both converted to tensors first (neither is weak then). */
bool ops_opnd_pair(Lower *L, SVal x, SVal y, bool weak, Opnd *a, Opnd *b, const char *ctx, Loc loc)
{
    if (sval_is_num(x) && sval_is_num(y))
        weak = false;
    return ops_opnd(L, x, weak, a, ctx, loc) && ops_opnd(L, y, weak, b, ctx, loc);
}

/* Materializes o with dtype dt and the given shape. */
ValId ops_materialize(Lower *L, const Opnd *o, Dtype dt, int rank, const int32_t *shape, Loc loc)
{
    if (o->is_const) {
        Type t = dt == DT_PTR ? type_ptr((Dtype)o->ty.elem, rank, shape) : type_tile(dt, rank, shape);
        ConstVal c = o->c;
        /* A number Triton turned into an fp32 tensor first, then cast to
         * fp64 (x_fp64 < 0.1), holds the fp32 value. */
        if (!o->weak && c.kind == CK_FLOAT && o->ty.dt == DT_F32 && dt == DT_F64)
            c.f = (double)(float)c.f;
        return ops_emit_const(L, c, t, loc);
    }
    ValId v = o->v;
    if (dt != DT_PTR)
        v = ops_cast(L, v, dt, loc);
    return ops_bcast_to(L, v, rank, shape, loc);
}

/* The common dtype of two numeric operands (binary_op_type_checking_impl,
 * with its range checks of weak integer scalars). */
Dtype ops_unify_dtype(Lower *L, const Opnd *a, const Opnd *b, bool divmod, const char *op, Loc loc)
{
    if (a->ty.dt == DT_PTR || b->ty.dt == DT_PTR) {
        diag_error(L->d, loc, "%s does not accept pointers, got %s and %s", op, ops_tystr(L, a->ty),
                   ops_tystr(L, b->ty));
        return DT_VOID;
    }
    Dtype r = computation_type(L, (Dtype)a->ty.dt, a->weak, (Dtype)b->ty.dt, b->weak, divmod, op, loc);
    if (r == DT_VOID || !dtype_is_int(r))
        return r;
    const Opnd *s[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        if (!s[i]->is_const || !s[i]->weak || s[i]->c.kind == CK_FLOAT)
            continue;
        int64_t lo, hi, v = s[i]->c.i;
        int_range(r, &lo, &hi);
        if (v < 0 && ops_unsigned(r)) {
            diag_error(L->d, loc,
                       "cannot combine the negative constant %lld with an unsigned %s tensor in %s; "
                       "cast one of them explicitly",
                       (long long)v, dtype_name(r), op);
            return DT_VOID;
        }
        if (r != DT_I1 && (v < lo || v > hi)) {
            diag_error(L->d, loc, "constant %lld is out of range for %s in %s (Triton keeps the "
                       "tensor's type); cast the tensor first",
                       (long long)v, dtype_name(r), op);
            return DT_VOID;
        }
    }
    return r;
}

bool sema_opnd_shape(Lower *L, const Opnd *a, const Opnd *b, int *rank, int32_t *shape, const char *op,
                     Loc loc)
{
    if (ops_bcast_shape(a->ty.rank, a->ty.shape, b->ty.rank, b->ty.shape, rank, shape))
        return true;
    diag_error(L->d, loc, "cannot broadcast shapes %s and %s in %s", ops_shapestr(L, a->ty.rank, a->ty.shape),
               ops_shapestr(L, b->ty.rank, b->ty.shape), op);
    return false;
}

/* Materializes a and b as dtype dt (DT_VOID: an error was reported) at
 * their broadcast shape. */
bool sema_materialize_pair(Lower *L, const Opnd *a, const Opnd *b, Dtype dt, const char *op, Loc loc,
                           ValId *va, ValId *vb)
{
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (dt == DT_VOID || !sema_opnd_shape(L, a, b, &rank, shape, op, loc))
        return false;
    *va = ops_materialize(L, a, dt, rank, shape, loc);
    *vb = ops_materialize(L, b, dt, rank, shape, loc);
    return *va && *vb;
}

/* Unifies two numeric operands: common dtype and broadcast shape, both
 * materialized.  weak: Python numbers are weakly typed. */
bool ops_unify2(Lower *L, SVal x, SVal y, bool weak, bool divmod, const char *op, Loc loc, ValId *vx,
                ValId *vy)
{
    Opnd a, b;
    if (!ops_opnd_pair(L, x, y, weak, &a, &b, op, loc))
        return false;
    return sema_materialize_pair(L, &a, &b, ops_unify_dtype(L, &a, &b, divmod, op, loc), op, loc, vx, vy);
}

