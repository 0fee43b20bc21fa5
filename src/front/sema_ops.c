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
 * Requires: L->f and L->b set by sema.c; sema_builtins.c for the names of
 * builtins (builtin_user_name) and tensor methods (builtin_is_method).
 * Guarantees: no output and no global state; all memory from L->a.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kad_int.h"

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
static SVal sval_str(const char *s) { return sval_const((ConstVal){.kind = CK_STR, .s = s}); }
SVal sval_dtype(Dtype dt) { return sval_const((ConstVal){.kind = CK_DTYPE, .dt = dt}); }
/* A pointer dtype (x_ptr.dtype): dt = DT_PTR, the pointee in .i. */
static SVal sval_ptr_dtype(Dtype elem)
{
    return sval_const((ConstVal){.kind = CK_DTYPE, .dt = DT_PTR, .i = elem});
}

/* Triton's type of a tile (`x.type`): block_type(dtype, shape); with
 * of_block, a block pointer's: pointer_type(block_type(t.elem, shape)). */
static SVal sval_block_type(Type t, bool of_block)
{
    ConstVal c = {.kind = CK_DTYPE, .dt = t.dt, .i = t.elem, .brank = t.rank, .of_block = of_block};
    memcpy(c.bshape, t.shape, sizeof c.bshape);
    return sval_const(c);
}

/* The elements' dtype of a block type, else x itself. */
static SVal dtype_unblock(SVal x)
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

static SVal sval_method(Lower *L, SVal self, const char *name)
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
static Dtype const_dtype(ConstVal c)
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
/* Constant folding with Python semantics                              */
/* ------------------------------------------------------------------ */

bool const_truthy(ConstVal c)
{
    switch (c.kind) {
    case CK_NONE: return false;
    case CK_INT:
    case CK_BOOL: return c.i != 0;
    case CK_FLOAT: return c.f != 0.0;
    case CK_STR: return c.s && c.s[0];
    case CK_DTYPE: return true;
    }
    return true;
}

bool sval_truthy(SVal x)
{
    if (x.kind == SV_TUPLE)
        return x.n > 0;
    if (x.kind == SV_CONST)
        return const_truthy(x.c);
    return x.kind != SV_NONE;
}

static const char *const binop_sym[] = {"+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "@"};
static const char *const cmp_sym[] = {"<", "<=", ">", ">=", "==", "!=", "is", "is not", "in", "not in"};

SVal ops_overflow(Lower *L, const char *op, Loc loc)
{
    return ops_fail(L, loc, "integer overflow in constexpr '%s' (kad's constexpr ints are 64-bit)", op);
}

/* Python's float floor division and modulo (CPython's float_divmod). */
static void py_fdivmod(double a, double b, double *fdiv, double *fmod_)
{
    double mod = fmod(a, b), div = (a - mod) / b;
    if (mod != 0.0) {
        if ((b < 0) != (mod < 0)) {
            mod += b;
            div -= 1.0;
        }
    } else {
        mod = copysign(0.0, b);
    }
    double fl;
    if (div != 0.0) {
        fl = floor(div);
        if (div - fl > 0.5)
            fl += 1.0;
    } else {
        fl = copysign(0.0, a / b);
    }
    *fdiv = fl;
    *fmod_ = mod;
}

static SVal fold_int(Lower *L, BinOp op, int64_t a, int64_t b, bool both_bool, Loc loc)
{
    const char *sym = binop_sym[op];
    int64_t r;
    switch (op) {
    case BO_ADD: if (__builtin_add_overflow(a, b, &r)) return ops_overflow(L, sym, loc); return sval_int(r);
    case BO_SUB: if (__builtin_sub_overflow(a, b, &r)) return ops_overflow(L, sym, loc); return sval_int(r);
    case BO_MUL: if (__builtin_mul_overflow(a, b, &r)) return ops_overflow(L, sym, loc); return sval_int(r);
    case BO_DIV:
        if (b == 0)
            return ops_fail(L, loc, "division by zero in constexpr '/'");
        return sval_float((double)a / (double)b);
    case BO_FLOORDIV:
    case BO_MOD: {
        if (b == 0)
            return ops_fail(L, loc, "integer division or modulo by zero in constexpr '%s'", sym);
        if (a == INT64_MIN && b == -1)
            return op == BO_MOD ? sval_int(0) : ops_overflow(L, sym, loc);
        int64_t q = a / b, m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) {
            q -= 1;
            m += b;
        }
        return sval_int(op == BO_MOD ? m : q);
    }
    case BO_POW: {
        if (b < 0) {
            if (a == 0)
                return ops_fail(L, loc, "0 cannot be raised to a negative power");
            return sval_float(pow((double)a, (double)b));
        }
        int64_t acc = 1, base = a;
        while (b) {
            if (b & 1)
                if (__builtin_mul_overflow(acc, base, &acc))
                    return ops_overflow(L, sym, loc);
            b >>= 1;
            if (b && __builtin_mul_overflow(base, base, &base))
                return ops_overflow(L, sym, loc);
        }
        return sval_int(acc);
    }
    case BO_LSHIFT:
        if (b < 0)
            return ops_fail(L, loc, "negative shift count in constexpr '<<'");
        if (a == 0)
            return sval_int(0);
        if (b >= 63 || ((a << b) >> b) != a)
            return ops_overflow(L, sym, loc);
        return sval_int(a << b);
    case BO_RSHIFT:
        if (b < 0)
            return ops_fail(L, loc, "negative shift count in constexpr '>>'");
        if (b >= 63)
            return sval_int(a < 0 ? -1 : 0);
        return sval_int(a >= 0 ? a >> b : ~(~a >> b)); /* floor, as Python */
    case BO_BITAND: return both_bool ? sval_bool(a & b) : sval_int(a & b);
    case BO_BITOR: return both_bool ? sval_bool(a | b) : sval_int(a | b);
    case BO_BITXOR: return both_bool ? sval_bool(a ^ b) : sval_int(a ^ b);
    case BO_MATMUL: break;
    }
    return ops_fail(L, loc, "unsupported operand types for '%s': int and int", sym);
}

static SVal fold_float(Lower *L, BinOp op, double a, double b, Loc loc)
{
    const char *sym = binop_sym[op];
    double q, m;
    switch (op) {
    case BO_ADD: return sval_float(a + b);
    case BO_SUB: return sval_float(a - b);
    case BO_MUL: return sval_float(a * b);
    case BO_DIV:
        if (b == 0.0)
            return ops_fail(L, loc, "float division by zero in constexpr '/'");
        return sval_float(a / b);
    case BO_FLOORDIV:
    case BO_MOD:
        if (b == 0.0)
            return ops_fail(L, loc, "float division or modulo by zero in constexpr '%s'", sym);
        py_fdivmod(a, b, &q, &m);
        return sval_float(op == BO_MOD ? m : q);
    case BO_POW: {
        if (a == 0.0 && b < 0.0)
            return ops_fail(L, loc, "0.0 cannot be raised to a negative power");
        if (a < 0.0 && b != floor(b) && isfinite(b))
            return ops_fail(L, loc, "a negative constexpr raised to a fractional power is complex in Python");
        double r = pow(a, b);
        if (isinf(r) && isfinite(a) && isfinite(b))
            return ops_fail(L, loc, "constexpr float '**' overflows");
        return sval_float(r);
    }
    default: break;
    }
    return ops_fail(L, loc, "unsupported operand types for '%s': float and float", sym);
}

static SVal fold_binop(Lower *L, BinOp op, SVal x, SVal y, Loc loc)
{
    const char *sym = binop_sym[op];
    /* tuples: + concatenates, * by an int repeats (shapes: [1] * N) */
    if (x.kind == SV_TUPLE && y.kind == SV_TUPLE && op == BO_ADD) {
        SVal *e = arena_alloc(L->a, sizeof *e * (size_t)(x.n + y.n + 1));
        memcpy(e, x.elts, sizeof *e * (size_t)x.n);
        memcpy(e + x.n, y.elts, sizeof *e * (size_t)y.n);
        return sval_tuple(L, e, x.n + y.n);
    }
    if (op == BO_MUL && ((x.kind == SV_TUPLE && sval_is_int(y)) || (y.kind == SV_TUPLE && sval_is_int(x)))) {
        SVal t = x.kind == SV_TUPLE ? x : y;
        int64_t k = x.kind == SV_TUPLE ? y.c.i : x.c.i;
        if (k < 0)
            k = 0;
        if ((int64_t)t.n * k > 4096)
            return ops_fail(L, loc, "constexpr tuple repetition is too long");
        SVal *e = arena_alloc(L->a, sizeof *e * (size_t)(t.n * k + 1));
        for (int64_t i = 0; i < k; i++)
            memcpy(e + i * t.n, t.elts, sizeof *e * (size_t)t.n);
        return sval_tuple(L, e, (int)(t.n * k));
    }
    if (x.kind == SV_CONST && y.kind == SV_CONST && x.c.kind == CK_STR && y.c.kind == CK_STR && op == BO_ADD)
        return sval_str(arena_printf(L->a, "%s%s", x.c.s, y.c.s));
    if (!sval_is_num(x) || !sval_is_num(y))
        return ops_fail(L, loc, "unsupported operand types for '%s': %s and %s", sym, ops_describe(L, x),
                        ops_describe(L, y));
    if (x.c.kind == CK_FLOAT || y.c.kind == CK_FLOAT) {
        if (op >= BO_LSHIFT)
            return ops_fail(L, loc, "unsupported operand types for '%s': %s and %s", sym, ops_describe(L, x),
                            ops_describe(L, y));
        return fold_float(L, op, const_as_double(x.c), const_as_double(y.c), loc);
    }
    return fold_int(L, op, x.c.i, y.c.i, x.c.kind == CK_BOOL && y.c.kind == CK_BOOL, loc);
}

/* Equality of constants (Python ==): numbers by value, strings, dtypes. */
static bool const_eq(ConstVal a, ConstVal b, bool *comparable)
{
    *comparable = true;
    bool an = a.kind == CK_INT || a.kind == CK_BOOL || a.kind == CK_FLOAT;
    bool bn = b.kind == CK_INT || b.kind == CK_BOOL || b.kind == CK_FLOAT;
    if (an && bn) {
        if (a.kind != CK_FLOAT && b.kind != CK_FLOAT)
            return a.i == b.i;
        return const_as_double(a) == const_as_double(b);
    }
    if (a.kind != b.kind)
        return false;
    switch (a.kind) {
    case CK_NONE: return true;
    case CK_STR: return strcmp(a.s, b.s) == 0;
    case CK_DTYPE:
        return a.dt == b.dt && (a.dt != DT_PTR || a.i == b.i) && a.brank == b.brank && a.of_block == b.of_block &&
               !memcmp(a.bshape, b.bshape, sizeof a.bshape);
    default: break;
    }
    *comparable = false;
    return false;
}

static bool sval_eq(SVal a, SVal b, bool *comparable)
{
    *comparable = true;
    if (sval_is_none(a) || sval_is_none(b))
        return sval_is_none(a) && sval_is_none(b);
    if (a.kind == SV_TUPLE || b.kind == SV_TUPLE) {
        if (a.kind != b.kind || a.n != b.n)
            return false;
        for (int i = 0; i < a.n; i++)
            if (!sval_eq(a.elts[i], b.elts[i], comparable))
                return false;
        return true;
    }
    if (a.kind == SV_CONST && b.kind == SV_CONST)
        return const_eq(a.c, b.c, comparable);
    *comparable = false;
    return false;
}

SVal ops_fold_compare(Lower *L, CmpOp op, SVal x, SVal y, Loc loc)
{
    bool ok;
    switch (op) {
    case CO_EQ:
    case CO_NE:
    case CO_IS:
    case CO_ISNOT: {
        bool eq = sval_eq(x, y, &ok);
        if (!ok && op != CO_IS && op != CO_ISNOT)
            return ops_fail(L, loc, "cannot compare %s and %s with '%s'", ops_describe(L, x),
                            ops_describe(L, y), cmp_sym[op]);
        return sval_bool((op == CO_EQ || op == CO_IS) ? eq : !eq);
    }
    case CO_IN:
    case CO_NOTIN: {
        bool found = false;
        if (y.kind == SV_TUPLE) {
            for (int i = 0; i < y.n && !found; i++)
                found = sval_eq(x, y.elts[i], &ok);
        } else if (y.kind == SV_CONST && y.c.kind == CK_STR && x.kind == SV_CONST && x.c.kind == CK_STR) {
            found = strstr(y.c.s, x.c.s) != NULL;
        } else {
            return ops_fail(L, loc, "'%s' needs a constexpr tuple or string on the right, got %s",
                            cmp_sym[op], ops_describe(L, y));
        }
        return sval_bool(op == CO_IN ? found : !found);
    }
    default: break;
    }
    int c;
    if (sval_is_num(x) && sval_is_num(y)) {
        if (x.c.kind != CK_FLOAT && y.c.kind != CK_FLOAT)
            c = x.c.i < y.c.i ? -1 : x.c.i > y.c.i;
        else {
            double a = const_as_double(x.c), b = const_as_double(y.c);
            if (isnan(a) || isnan(b))
                return sval_bool(false);
            c = a < b ? -1 : a > b;
        }
    } else if (x.kind == SV_CONST && y.kind == SV_CONST && x.c.kind == CK_STR && y.c.kind == CK_STR) {
        c = strcmp(x.c.s, y.c.s);
    } else {
        return ops_fail(L, loc, "cannot compare %s and %s with '%s'", ops_describe(L, x), ops_describe(L, y),
                        cmp_sym[op]);
    }
    switch (op) {
    case CO_LT: return sval_bool(c < 0);
    case CO_LE: return sval_bool(c <= 0);
    case CO_GT: return sval_bool(c > 0);
    default: return sval_bool(c >= 0);
    }
}

/* ------------------------------------------------------------------ */
/* Operands: Python numbers and runtime values, unified Triton's way   */
/* ------------------------------------------------------------------ */

/* (Opnd is declared in kad_int.h: sema_builtins.c makes masks of them.) */

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

static bool opnd_shape(Lower *L, const Opnd *a, const Opnd *b, int *rank, int32_t *shape, const char *op,
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
static bool materialize_pair(Lower *L, const Opnd *a, const Opnd *b, Dtype dt, const char *op, Loc loc,
                             ValId *va, ValId *vb)
{
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (dt == DT_VOID || !opnd_shape(L, a, b, &rank, shape, op, loc))
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
    return materialize_pair(L, &a, &b, ops_unify_dtype(L, &a, &b, divmod, op, loc), op, loc, vx, vy);
}


/* ------------------------------------------------------------------ */
/* Binary operators on values                                          */
/* ------------------------------------------------------------------ */

/* ptr + int, int + ptr, ptr - int -> addptr. */
static SVal pointer_arith(Lower *L, BinOp op, SVal x, SVal y, const char *ctx, Loc loc)
{
    const char *sym = binop_sym[op];
    Opnd a, b;
    if (!ops_opnd(L, x, false, &a, ctx, loc) || !ops_opnd(L, y, false, &b, ctx, loc))
        return sval_error();
    bool pa = a.ty.dt == DT_PTR, pb = b.ty.dt == DT_PTR;
    if (op != BO_ADD && op != BO_SUB)
        return ops_fail(L, loc,
                        "unsupported operand types for '%s': %s and %s (pointers only support + and - "
                        "of integer offsets)", sym, ops_tystr(L, a.ty), ops_tystr(L, b.ty));
    if (pa && pb)
        return ops_fail(L, loc, op == BO_ADD ? "cannot add two pointers (%s and %s)"
                                             : "pointer difference is not supported (%s - %s)",
                        ops_tystr(L, a.ty), ops_tystr(L, b.ty));
    if (op == BO_SUB && pb)
        return ops_fail(L, loc, "cannot subtract a pointer from %s", ops_tystr(L, a.ty));
    Opnd *p = pa ? &a : &b, *o = pa ? &b : &a;
    if (!dtype_is_int((Dtype)o->ty.dt))
        return ops_fail(L, loc, "pointer offsets must be integers, got %s in '%s'", ops_tystr(L, o->ty), sym);
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!opnd_shape(L, &a, &b, &rank, shape, ctx, loc))
        return sval_error();
    Dtype odt = (Dtype)o->ty.dt;
    if (op == BO_SUB && ops_unsigned(odt) && !o->is_const)
        return ops_fail(L, loc, "subtracting an unsigned offset (%s) from a pointer is not supported; cast "
                        "the offset to a signed type", ops_tystr(L, o->ty));
    if (op == BO_SUB && o->is_const) {
        if (o->c.i == INT64_MIN)
            return ops_overflow(L, sym, loc);
        o->c.i = -o->c.i;
        odt = const_dtype(o->c);
    }
    /* addptr treats offsets as signed: widen unsigned ones (as Triton). */
    if (ops_unsigned(odt) && dtype_bits(odt) < 64)
        odt = DT_I64;
    ValId pv = ops_materialize(L, p, DT_PTR, rank, shape, loc);
    ValId ov = ops_materialize(L, o, odt, rank, shape, loc);
    if (!pv || !ov)
        return sval_error();
    if (op == BO_SUB && !o->is_const) /* constants were negated above */
        ov = ops_emit1(L, OP_NEG, ops_type(L, ov), ov, loc);
    return sval_value(ops_emit2(L, OP_ADDPTR, ops_type(L, pv), pv, ov, loc));
}

static SVal binop_values(Lower *L, BinOp op, SVal x, SVal y, Loc loc)
{
    const char *sym = binop_sym[op];
    char ctx[16];
    snprintf(ctx, sizeof ctx, "'%s'", sym);
    if (op == BO_MATMUL)
        return ops_fail(L, loc, "'@' is not supported on tiles; use tl.dot(a, b)");
    if ((x.kind == SV_VALUE && ops_type(L, x.v).dt == DT_PTR) ||
        (y.kind == SV_VALUE && ops_type(L, y.v).dt == DT_PTR))
        return pointer_arith(L, op, x, y, ctx, loc);
    Opnd a, b;
    if (!ops_opnd(L, x, true, &a, ctx, loc) || !ops_opnd(L, y, true, &b, ctx, loc))
        return sval_error();
    bool divmod = op == BO_DIV || op == BO_FLOORDIV || op == BO_MOD;
    Dtype dt = ops_unify_dtype(L, &a, &b, divmod, ctx, loc);
    if (dt == DT_VOID)
        return sval_error();
    /* Triton's __rshift__/__rrshift__ pick ashr or lshr by the tensor
     * operand's dtype before promotion. */
    Dtype shifted = (Dtype)(a.is_const ? b.ty.dt : a.ty.dt);
    switch (op) {
    case BO_DIV:
        if (dtype_is_int(dt))
            dt = DT_F32; /* int / int is fp32 true division */
        break;
    case BO_FLOORDIV:
        if (dtype_is_float(dt))
            return ops_fail(L, loc, "'//' is not supported on floating-point tiles (Triton only has integer "
                            "floor division); use tl.floor(a / b)");
        break;
    case BO_POW:
        if (!dtype_is_float(dt))
            return ops_fail(L, loc, "'**' on integer tiles is not supported (Triton has no integer power); "
                            "cast to a float type or use a constexpr exponent loop");
        break;
    case BO_LSHIFT:
    case BO_RSHIFT:
    case BO_BITAND:
    case BO_BITOR:
    case BO_BITXOR:
        if (!dtype_is_int(dt))
            return ops_fail(L, loc, "bitwise '%s' requires integer operands, got %s and %s", sym,
                            a.is_const ? ops_describe(L, x) : ops_tystr(L, a.ty),
                            b.is_const ? ops_describe(L, y) : ops_tystr(L, b.ty));
        if (op == BO_RSHIFT && ops_unsigned(shifted) != ops_unsigned(dt))
            return ops_fail(L, loc, "'>>' of %s by %s: the operands promote to %s, which changes the shift's "
                            "signedness; cast them to one type first",
                            ops_tystr(L, a.ty), ops_tystr(L, b.ty), dtype_name(dt));
        break;
    default: break;
    }
    ValId va, vb;
    if (!materialize_pair(L, &a, &b, dt, ctx, loc, &va, &vb))
        return sval_error();
    static const OpKind ops[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_DIV, OP_REM, OP_POW,
                                 OP_SHL, OP_SHR, OP_AND, OP_OR, OP_XOR};
    return sval_value(ops_emit2(L, ops[op], ops_type(L, va), va, vb, loc));
}

/* ------------------------------------------------------------------ */
/* The interface (kad_int.h, "sema_ops.c")                             */
/* ------------------------------------------------------------------ */

/* Attributes of a dtype constant. */
static SVal dtype_attr(Lower *L, SVal x, const char *name, Loc loc)
{
    Dtype dt = x.c.dt;
    if (x.c.brank) {
        /* block_type: element_ty and scalar are the elements' dtype, shape
         * and numel the tile's; a block pointer's pointer_type: element_ty
         * is the block_type, scalar the pointer_type itself (Triton's) */
        if (x.c.of_block) {
            if (strcmp(name, "element_ty") == 0) {
                SVal b = x;
                b.c.dt = (Dtype)x.c.i;
                b.c.i = 0;
                b.c.of_block = false;
                return b;
            }
            if (strcmp(name, "scalar") == 0)
                return x;
            if (strcmp(name, "is_ptr") == 0 || strcmp(name, "is_block") == 0)
                return sval_method(L, x, name);
            return ops_fail(L, loc, "%s has no attribute '%s' in kad", ops_describe(L, x), name);
        }
        if (strcmp(name, "element_ty") == 0 || strcmp(name, "scalar") == 0)
            return dtype_unblock(x);
        if (strcmp(name, "shape") == 0 || strcmp(name, "numel") == 0) {
            SVal e[KAD_MAX_RANK];
            int64_t numel = 1;
            for (int i = 0; i < x.c.brank; i++) {
                e[i] = sval_int(x.c.bshape[i]);
                numel *= x.c.bshape[i];
            }
            return name[0] == 's' ? sval_tuple(L, e, x.c.brank) : sval_int(numel);
        }
        if (strcmp(name, "is_block") == 0)
            return sval_method(L, x, name);
        return ops_fail(L, loc, "%s has no attribute '%s' in kad", ops_describe(L, x), name);
    }
    if (strcmp(name, "element_ty") == 0) {
        if (dt != DT_PTR)
            return ops_fail(L, loc, "%s has no attribute 'element_ty' (it is not a pointer type)",
                            ops_describe(L, x));
        return sval_dtype((Dtype)x.c.i);
    }
    if (strcmp(name, "scalar") == 0)
        return x;
    if (strcmp(name, "primitive_bitwidth") == 0)
        return sval_int(dtype_bits(dt));
    if (strcmp(name, "int_bitwidth") == 0 && dtype_is_int(dt))
        return sval_int(dtype_bits(dt));
    if (strcmp(name, "name") == 0) {
        /* Triton's dtype.name: "fp32", "bf16" for floats, "int32", "uint8" for ints */
        if (dt != DT_PTR && dt != DT_VOID)
            return sval_str(dtype_is_float(dt) ? dtype_name(dt) : dtype_triton_name(dt));
    }
    if (strncmp(name, "is_", 3) == 0)
        return sval_method(L, x, name);
    return ops_fail(L, loc, "%s has no attribute '%s' in kad", ops_describe(L, x), name);
}

SVal lower_attr(Lower *L, SVal x, const char *name, Loc loc)
{
    switch (x.kind) {
    case SV_ERROR: return x;
    case SV_MODULE: return lower_global(L, arena_printf(L->a, "%s.%s", x.qual, name), loc);
    case SV_CONST:
        if (x.c.kind == CK_DTYPE)
            return dtype_attr(L, x, name, loc);
        break;
    case SV_VALUE: {
        Type t = ops_type(L, x.v);
        if (strcmp(name, "dtype") == 0 || (strcmp(name, "type") == 0 && t.rank == 0))
            return t.dt == DT_PTR ? sval_ptr_dtype((Dtype)t.elem) : sval_dtype((Dtype)t.dt);
        if (strcmp(name, "type") == 0)
            return sval_block_type(t, false);
        if (strcmp(name, "shape") == 0) {
            SVal e[KAD_MAX_RANK];
            for (int i = 0; i < t.rank; i++)
                e[i] = sval_int(t.shape[i]);
            return sval_tuple(L, e, t.rank);
        }
        if (strcmp(name, "numel") == 0)
            return sval_int(type_numel(t));
        if (strcmp(name, "T") == 0) {
            if (t.rank != 2)
                return ops_fail(L, loc, "'.T' requires a 2-D tile, got %s", ops_tystr(L, t));
            return sval_value(ops_permute(L, x.v, (const int32_t[]){1, 0}, loc));
        }
        if (builtin_is_method(name))
            return sval_method(L, x, name);
        return ops_fail(L, loc, "'x.%s' (attribute of a %s tensor) is not supported by kad yet", name,
                        ops_tystr(L, t));
    }
    case SV_BLOCKPTR:
        if (sval_is_tensor_desc(x)) {
            if (strcmp(name, "load") == 0 || strcmp(name, "store") == 0)
                return sval_method(L, x, name);
            if (strcmp(name, "block_shape") == 0)
                return x.elts[BP_BLOCK];
            if (strcmp(name, "shape") == 0)
                return x.elts[BP_SHAPE];
            if (strcmp(name, "strides") == 0)
                return x.elts[BP_STRIDES];
            if (strcmp(name, "dtype") == 0)
                return sval_dtype((Dtype)ops_type(L, x.elts[BP_BASE].v).elem);
            if (!strncmp(name, "atomic_", 7) || !strcmp(name, "gather") || !strcmp(name, "scatter"))
                return ops_fail(L, loc, "'desc.%s' (tensor descriptor %s) is not supported by kad yet", name,
                                name[0] == 'a' ? "reductions" : "gathers and scatters");
            break;
        }
        if (strcmp(name, "advance") == 0)
            return sval_method(L, x, name);
        if (strcmp(name, "dtype") == 0 || strcmp(name, "type") == 0) {
            /* Triton's pointer_type(block_type(elem, block_shape)) */
            Type t = {.dt = DT_PTR, .elem = ops_type(L, x.elts[BP_BASE].v).elem};
            const SVal *bs = &x.elts[BP_BLOCK];
            t.rank = bs->kind == SV_TUPLE && bs->n <= KAD_MAX_RANK ? bs->n : 0;
            for (int i = 0; i < t.rank; i++)
                t.shape[i] = bs->elts[i].kind == SV_CONST ? (int32_t)bs->elts[i].c.i : 0;
            return sval_block_type(t, true);
        }
        break;
    default: break;
    }
    return ops_fail(L, loc, "%s has no attribute '%s'", ops_describe(L, x), name);
}

SVal lower_binop(Lower *L, BinOp op, SVal x, SVal y, Loc loc)
{
    if (x.kind == SV_ERROR || y.kind == SV_ERROR)
        return sval_error();
    if (x.kind == SV_VALUE || y.kind == SV_VALUE)
        return binop_values(L, op, x, y, loc);
    return fold_binop(L, op, x, y, loc);
}

SVal lower_unop(Lower *L, UnOp op, SVal x, Loc loc)
{
    if (x.kind == SV_ERROR)
        return x;
    if (op == UO_NOT && x.kind != SV_VALUE)
        return sval_bool(!sval_truthy(x));
    if (x.kind == SV_CONST && sval_is_num(x)) {
        switch (op) {
        case UO_POS: return x.c.kind == CK_BOOL ? sval_int(x.c.i) : x;
        case UO_NEG:
            if (x.c.kind == CK_FLOAT)
                return sval_float(-x.c.f);
            if (x.c.i == INT64_MIN)
                return ops_overflow(L, "-", loc);
            return sval_int(-x.c.i);
        case UO_INVERT:
            if (x.c.kind == CK_FLOAT)
                return ops_fail(L, loc, "bad operand type for unary '~': float");
            return sval_int(~x.c.i);
        default: break;
        }
    }
    if (x.kind != SV_VALUE) {
        static const char *const sym[] = {"-", "+", "~", "not"};
        return ops_fail(L, loc, "bad operand type for unary '%s': %s", sym[op], ops_describe(L, x));
    }
    Type t = ops_type(L, x.v);
    switch (op) {
    case UO_POS: return x;
    case UO_NEG:
        if (t.dt == DT_PTR)
            return ops_fail(L, loc, "cannot negate a pointer (%s)", ops_tystr(L, t));
        if (dtype_is_fp8((Dtype)t.dt))
            return ops_fail(L, loc, "'-' on %s values is computed in fp8 by Triton, which kad does not model; "
                            "convert with .to(tl.float32) first", dtype_name((Dtype)t.dt));
        return sval_value(ops_emit1(L, OP_NEG, t, x.v, loc));
    case UO_INVERT:
        if (!dtype_is_int((Dtype)t.dt))
            return ops_fail(L, loc, "'~' requires an integer or boolean tile, got %s", ops_tystr(L, t));
        return sval_value(ops_emit1(L, OP_NOT, t, x.v, loc));
    case UO_NOT:
        if (t.dt != DT_I1)
            return ops_fail(L, loc,
                            "'not' requires a boolean (i1) value, got %s; compare explicitly (x == 0)",
                            ops_tystr(L, t));
        return sval_value(ops_emit1(L, OP_NOT, t, x.v, loc));
    }
    return sval_error();
}

SVal lower_compare(Lower *L, CmpOp op, SVal x, SVal y, Loc loc)
{
    if (x.kind == SV_ERROR || y.kind == SV_ERROR)
        return sval_error();
    if (x.kind != SV_VALUE && y.kind != SV_VALUE)
        return ops_fold_compare(L, op, x, y, loc);
    if (op == CO_IS || op == CO_ISNOT) {
        /* a tensor is never None (nor any constant) */
        if (sval_is_none(x) || sval_is_none(y) || x.kind != y.kind)
            return sval_bool(op == CO_ISNOT);
        return ops_fail(L, loc, "'%s' between tensors is not supported", cmp_sym[op]);
    }
    if (op == CO_IN || op == CO_NOTIN)
        return ops_fail(L, loc, "'%s' is not supported on tensors", cmp_sym[op]);
    char ctx[16];
    snprintf(ctx, sizeof ctx, "'%s'", cmp_sym[op]);
    Opnd a, b;
    if (!ops_opnd(L, x, false, &a, ctx, loc) || !ops_opnd(L, y, false, &b, ctx, loc))
        return sval_error();
    if (a.ty.dt == DT_PTR || b.ty.dt == DT_PTR)
        return ops_fail(L, loc, "comparing pointers is not supported by kad yet (%s %s %s)",
                        ops_tystr(L, a.ty), cmp_sym[op], ops_tystr(L, b.ty));
    ValId va, vb;
    if (!materialize_pair(L, &a, &b, ops_unify_dtype(L, &a, &b, false, ctx, loc), ctx, loc, &va, &vb))
        return sval_error();
    static const OpKind ops[] = {OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE};
    Type t = ops_type(L, va);
    return sval_value(ops_emit2(L, ops[op], type_tile(DT_I1, t.rank, t.shape), va, vb, loc));
}

SVal lower_boolop(Lower *L, BoolOpKind op, SVal x, SVal y, Loc loc)
{
    if (x.kind == SV_ERROR || y.kind == SV_ERROR)
        return sval_error();
    bool is_and = op == BL_AND;
    if (x.kind != SV_VALUE && y.kind != SV_VALUE) /* Python: returns an operand */
        return (sval_truthy(x) == is_and) ? y : x;
    /* A constant operand decides or drops out, as in Triton's visit_BoolOp. */
    if (x.kind != SV_VALUE || y.kind != SV_VALUE) {
        SVal k = x.kind == SV_VALUE ? y : x, v = x.kind == SV_VALUE ? x : y;
        if (k.kind == SV_TUPLE || k.kind == SV_CONST || sval_is_none(k)) {
            if (sval_truthy(k) != is_and)
                return sval_bool(!is_and);
            if (ops_type(L, v.v).dt != DT_I1)
                return ops_fail(L, loc, "'%s' requires boolean (i1) operands, got %s; use a comparison",
                                is_and ? "and" : "or", ops_tystr(L, ops_type(L, v.v)));
            return v;
        }
        return ops_fail(L, loc, "'%s' of %s and %s is not supported", is_and ? "and" : "or",
                        ops_describe(L, x), ops_describe(L, y));
    }
    Type tx = ops_type(L, x.v), ty = ops_type(L, y.v);
    if (tx.dt != DT_I1 || ty.dt != DT_I1)
        return ops_fail(L, loc,
                        "'%s' requires boolean (i1) operands, got %s and %s; use a comparison or '%s'",
                        is_and ? "and" : "or", ops_tystr(L, tx), ops_tystr(L, ty), is_and ? "&" : "|");
    ValId a, b;
    if (!ops_unify2(L, x, y, false, false, is_and ? "'and'" : "'or'", loc, &a, &b))
        return sval_error();
    return sval_value(ops_emit2(L, is_and ? OP_AND : OP_OR, ops_type(L, a), a, b, loc));
}

SVal lower_subscript(Lower *L, SVal x, const SVal *idx, int n, Loc loc)
{
    if (x.kind == SV_ERROR)
        return x;
    for (int i = 0; i < n; i++)
        if (idx[i].kind == SV_ERROR)
            return sval_error();
    if (x.kind == SV_TUPLE) {
        if (n != 1)
            return ops_fail(L, loc, "tuples take exactly one index, got %d", n);
        if (idx[0].kind == SV_SLICE)
            return x;
        if (!sval_is_int(idx[0]))
            return ops_fail(L, loc, "tuple indices must be constexpr ints, got %s", ops_describe(L, idx[0]));
        int64_t i = idx[0].c.i;
        if (i < 0)
            i += x.n;
        if (i < 0 || i >= x.n)
            return ops_fail(L, loc, "tuple index %lld is out of range for a tuple of %d elements",
                            (long long)idx[0].c.i, x.n);
        return x.elts[i];
    }
    if (x.kind != SV_VALUE)
        return ops_fail(L, loc, "%s is not subscriptable", ops_describe(L, x));
    /* Triton's tensor.__getitem__: None inserts an axis at its position;
     * ':' keeps an axis. */
    Type t = ops_type(L, x.v);
    int kept = 0, added = 0;
    for (int i = 0; i < n; i++) {
        if (sval_is_none(idx[i]))
            added++;
        else if (idx[i].kind == SV_SLICE)
            kept++;
        else
            return ops_fail(L, loc, "tile indexing supports only None and ':', got %s",
                            ops_describe(L, idx[i]));
    }
    if (kept > t.rank)
        return ops_fail(L, loc, "too many indices for %s: %d ':' for %d axes", ops_tystr(L, t), kept, t.rank);
    if (t.rank + added > KAD_MAX_RANK)
        return ops_fail(L, loc, "indexing would give a tile of rank %d (kad allows up to %d axes)",
                        t.rank + added, KAD_MAX_RANK);
    ValId v = x.v;
    for (int i = 0; i < n; i++)
        if (sval_is_none(idx[i]))
            v = ops_expand_dims(L, v, i, loc);
    return sval_value(v);
}

ValId lower_value(Lower *L, SVal x, Loc loc)
{
    if (x.kind == SV_ERROR)
        return 0;
    if (x.kind == SV_VALUE)
        return x.v;
    if (sval_is_num(x))
        return ops_emit_const(L, x.c, type_scalar(const_dtype(x.c)), loc);
    diag_error(L->d, loc, "expected a tensor or scalar, got %s", ops_describe(L, x));
    return 0;
}

ValId lower_convert(Lower *L, ValId v, Type ty, Loc loc)
{
    if (!v)
        return 0;
    Type t = ops_type(L, v);
    if (type_eq(t, ty))
        return v;
    if (t.dt == DT_PTR || ty.dt == DT_PTR) {
        if (t.dt != ty.dt || t.elem != ty.elem) {
            diag_error(L->d, loc, "cannot convert a value of type %s to %s", ops_tystr(L, t),
                       ops_tystr(L, ty));
            return 0;
        }
    }
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (t.rank > ty.rank || !ops_bcast_shape(t.rank, t.shape, ty.rank, ty.shape, &rank, shape) ||
        !type_same_shape(ty, type_with_shape(ty, rank, shape))) {
        diag_error(L->d, loc, "cannot convert a value of type %s to %s", ops_tystr(L, t), ops_tystr(L, ty));
        return 0;
    }
    if (ty.dt != DT_PTR)
        v = ops_cast(L, v, (Dtype)ty.dt, loc);
    return ops_bcast_to(L, v, ty.rank, ty.shape, loc);
}

bool lower_truth(Lower *L, SVal x, bool *is_const, bool *cval, ValId *v, Loc loc)
{
    *is_const = false, *cval = false, *v = 0;
    if (x.kind == SV_ERROR)
        return false;
    if (x.kind != SV_VALUE) {
        if (x.kind == SV_SLICE) {
            diag_error(L->d, loc, "a slice cannot be a condition");
            return false;
        }
        *is_const = true;
        *cval = sval_truthy(x);
        return true;
    }
    Type t = ops_type(L, x.v);
    if (t.rank != 0) {
        diag_error(L->d, loc, "condition must be a scalar, got %s", ops_tystr(L, t));
        return false;
    }
    if (t.dt == DT_PTR) {
        diag_error(L->d, loc, "a pointer cannot be a condition");
        return false;
    }
    *v = ops_cast(L, x.v, DT_I1, loc);
    return true;
}

/* Python's repr of a float: the shortest digits that read back, fixed
 * notation for exponents in [-4, 16), else scientific with 2+ digit exponent. */
static void repr_float(Buf *b, double f)
{
    if (isnan(f)) {
        buf_puts(b, "nan");
        return;
    }
    if (isinf(f)) {
        buf_puts(b, f < 0 ? "-inf" : "inf");
        return;
    }
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f)
            break;
    }
    /* tmp: [-]d[.ddd]e[+-]xx */
    const char *p = tmp;
    if (*p == '-') {
        buf_putc(b, '-');
        p++;
    }
    char digits[24];
    int nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = 0;
    int e = atoi(p + 1);
    if (e >= -4 && e < 16) {
        if (e < 0) {
            buf_puts(b, "0.");
            for (int i = 0; i < -e - 1; i++)
                buf_putc(b, '0');
            buf_puts(b, digits);
        } else {
            for (int i = 0; i <= e; i++)
                buf_putc(b, i < nd ? digits[i] : '0');
            buf_putc(b, '.');
            if (nd > e + 1)
                buf_puts(b, digits + e + 1);
            else
                buf_putc(b, '0');
        }
        return;
    }
    buf_putc(b, digits[0]);
    if (nd > 1) {
        buf_putc(b, '.');
        buf_puts(b, digits + 1);
    }
    buf_printf(b, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
}

const char *const_repr(Arena *a, ConstVal c)
{
    Buf b = {.a = a};
    switch (c.kind) {
    case CK_NONE: return "None";
    case CK_INT: buf_printf(&b, "%lld", (long long)c.i); break;
    case CK_BOOL: return c.i ? "True" : "False";
    case CK_FLOAT: repr_float(&b, c.f); break;
    case CK_STR:
        buf_putc(&b, '\'');
        for (const char *s = c.s ? c.s : ""; *s; s++) {
            if (*s == '\'' || *s == '\\')
                buf_putc(&b, '\\');
            if (*s == '\n')
                buf_puts(&b, "\\n");
            else
                buf_putc(&b, *s);
        }
        buf_putc(&b, '\'');
        break;
    case CK_DTYPE:
        if (c.brank) {
            /* Triton's str of a block_type: <[16, 16], fp32> */
            buf_puts(&b, c.of_block ? "pointer<<[" : "<[");
            for (int k = 0; k < c.brank; k++)
                buf_printf(&b, "%s%d", k ? ", " : "", (int)c.bshape[k]);
            Dtype e = c.of_block ? (Dtype)c.i : c.dt;
            if (!c.of_block && c.dt == DT_PTR)
                buf_printf(&b, "], pointer<%s>>", dtype_name((Dtype)c.i));
            else
                buf_printf(&b, "], %s>%s", dtype_name(e), c.of_block ? ">" : "");
        } else if (c.dt == DT_PTR)
            buf_printf(&b, "tl.pointer_type(tl.%s)", dtype_triton_name((Dtype)c.i));
        else
            buf_printf(&b, "tl.%s", dtype_triton_name(c.dt));
        break;
    }
    return buf_str(&b);
}

/* ------------------------------------------------------------------ */
/* f-string fields: str(), repr() and format() of constants            */
/* ------------------------------------------------------------------ */

/* str() of a Triton dtype: "int32", "fp32", "pointer<fp16>". */
static void dtype_str(Buf *b, Dtype dt, Dtype elem)
{
    if (dt == DT_PTR) {
        buf_puts(b, "pointer<");
        dtype_str(b, elem, DT_VOID);
        buf_putc(b, '>');
    } else {
        buf_puts(b, dtype_is_float(dt) ? dtype_name(dt) : dtype_triton_name(dt));
    }
}

/* Python's repr of a str: single quotes unless the text has ' and no ". */
static void repr_str(Buf *b, const char *s, bool ascii)
{
    char q = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
    buf_putc(b, q);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == (unsigned char)q || c == '\\')
            buf_printf(b, "\\%c", c);
        else if (c == '\n')
            buf_puts(b, "\\n");
        else if (c == '\r')
            buf_puts(b, "\\r");
        else if (c == '\t')
            buf_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7F || (ascii && c >= 0x80))
            buf_printf(b, "\\x%02x", c);
        else
            buf_putc(b, (char)c);
    }
    buf_putc(b, q);
}

static const char *const_text(Arena *a, ConstVal c, char conv)
{
    Buf b = {.a = a};
    switch (c.kind) {
    case CK_STR:
        if (conv == 'r' || conv == 'a')
            repr_str(&b, c.s ? c.s : "", conv == 'a');
        else
            buf_puts(&b, c.s ? c.s : "");
        break;
    case CK_DTYPE:
        if (conv && conv != 's' && c.dt != DT_PTR)
            buf_printf(&b, "triton.language.%s", dtype_triton_name(c.dt));
        else
            dtype_str(&b, c.dt, (Dtype)c.i);
        break;
    default: return const_repr(a, c); /* None, bool, int, float: str == repr */
    }
    return buf_str(&b);
}

/* Inserts sep every `every` digits of the run of digits [s, s+n). */
static void put_grouped(Buf *b, const char *s, int n, char sep, int every)
{
    for (int k = 0; k < n; k++) {
        buf_putc(b, s[k]);
        if (sep && (n - 1 - k) % every == 0 && k != n - 1)
            buf_putc(b, sep);
    }
}

/* Python's format(c, spec) after the conversion conv (0, 's', 'r', 'a').
 * NULL with *err set when the spec does not apply (Python's ValueError or
 * TypeError) or uses what kad does not format. */
const char *const_format(Arena *a, ConstVal c, char conv, const char *spec, const char **err)
{
    *err = NULL;
    if (conv) {
        c = (ConstVal){.kind = CK_STR, .s = const_text(a, c, conv)};
    }
    if (!*spec)
        return const_text(a, c, 0);
    /* [[fill]align][sign][z][#][0][width][grouping][.precision][type] */
    const char *p = spec;
    char fill = ' ', align = 0, sign = 0, group = 0, type = 0;
    bool alt = false;
    int width = -1, prec = -1;
    if (p[0] && p[1] && strchr("<>=^", p[1])) {
        fill = p[0];
        align = p[1];
        p += 2;
    } else if (*p && strchr("<>=^", *p)) {
        align = *p++;
    }
    if (*p && strchr("+- ", *p))
        sign = *p++;
    if (*p == 'z')
        p++;
    if (*p == '#') {
        alt = true;
        p++;
    }
    if (*p == '0') {
        if (!align) {
            fill = '0';
            align = '=';
        }
        p++;
    }
    while (*p >= '0' && *p <= '9')
        width = (width < 0 ? 0 : width) * 10 + (*p++ - '0');
    if (*p == ',' || *p == '_')
        group = *p++;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9')) {
            *err = "format specifier missing precision";
            return NULL;
        }
        prec = 0;
        while (*p >= '0' && *p <= '9')
            prec = prec * 10 + (*p++ - '0');
    }
    if (*p)
        type = *p++;
    if (*p || width > 10000 || prec > 1000) {
        *err = "invalid format specifier";
        return NULL;
    }
    Buf body = {.a = a};
    const char *prefix = "";
    bool neg = false, numeric = true;
    ConstKind k = c.kind;
    if (k == CK_BOOL)
        k = CK_INT; /* bool.__format__ with a spec is int's */
    if (k == CK_STR && (!type || type == 's')) {
        if (sign || alt || group || align == '=') {
            *err = "sign, '#', grouping and '=' alignment are not allowed with a string";
            return NULL;
        }
        numeric = false;
        const char *s = c.s ? c.s : "";
        size_t n = strlen(s);
        if (prec >= 0) { /* at most prec characters (UTF-8 aware) */
            size_t cut = 0;
            for (int chars = 0; cut < n && chars < prec; chars++)
                do
                    cut++;
                while (cut < n && ((unsigned char)s[cut] & 0xC0) == 0x80);
            n = cut;
        }
        buf_printf(&body, "%.*s", (int)n, s);
    } else if (k == CK_INT && (!type || strchr("dboxXn", type))) {
        if (prec >= 0) {
            *err = "precision not allowed in integer format specifier";
            return NULL;
        }
        neg = c.i < 0;
        uint64_t u = neg ? (uint64_t)0 - (uint64_t)c.i : (uint64_t)c.i;
        int base = type == 'b' ? 2 : type == 'o' ? 8 : (type == 'x' || type == 'X') ? 16 : 10;
        char digits[80];
        int nd = 0;
        do {
            int dg = (int)(u % (uint64_t)base);
            digits[nd++] = (char)(dg < 10 ? '0' + dg : (type == 'X' ? 'A' : 'a') + dg - 10);
            u /= (uint64_t)base;
        } while (u);
        if (alt && base != 10)
            prefix = base == 2 ? "0b" : base == 8 ? "0o" : type == 'X' ? "0X" : "0x";
        int every = base == 10 ? 3 : 4, lead = (neg || sign ? 1 : 0) + (int)strlen(prefix);
        if (group && fill == '0' && align == '=') /* zero padding is grouped too */
            while (nd < 79 && lead + nd + (nd - 1) / every < width)
                digits[nd++] = '0';
        char rev[80];
        for (int i = 0; i < nd; i++)
            rev[i] = digits[nd - 1 - i];
        if (group == ',' && base != 10) {
            *err = "cannot specify ',' with this format type";
            return NULL;
        }
        put_grouped(&body, rev, nd, group, every);
    } else if ((k == CK_INT || k == CK_FLOAT) && (!type || strchr("eEfFgG%n", type))) {
        double f = k == CK_INT ? (double)c.i : c.f;
        neg = signbit(f) && !isnan(f);
        double af = fabs(f);
        char t = type == 'n' ? 'g' : type;
        char tmp[1200];
        if (!t && prec < 0) {
            Buf r = {.a = a};
            repr_float(&r, af);
            snprintf(tmp, sizeof tmp, "%s", buf_str(&r));
        } else if (!t) { /* like 'g', but a fixed-point result keeps a '.0' */
            snprintf(tmp, sizeof tmp, "%.*g", prec ? prec : 1, af);
            if (isfinite(af) && !strpbrk(tmp, ".e"))
                strcat(tmp, ".0");
        } else if (t == '%') {
            snprintf(tmp, sizeof tmp, "%.*f%%", prec < 0 ? 6 : prec, af * 100);
        } else {
            char f2[16];
            snprintf(f2, sizeof f2, "%%%s.*%c", alt ? "#" : "", t);
            snprintf(tmp, sizeof tmp, f2, prec < 0 ? 6 : prec, af);
        }
        int nd = 0;
        while (tmp[nd] >= '0' && tmp[nd] <= '9')
            nd++;
        const char *rest = tmp + nd;
        if (group && fill == '0' && align == '=') /* zero padding is grouped too */
            for (int lead = (int)strlen(rest) + (neg || sign ? 1 : 0); nd < 400 && lead + nd + (nd - 1) / 3 < width;)
                memmove(tmp + 1, tmp, strlen(tmp) + 1), tmp[0] = '0', nd++;
        put_grouped(&body, tmp, nd, group, 3);
        buf_puts(&body, tmp + nd);
    } else {
        *err = arena_printf(a, "unknown format code '%c' for a value of this type", type ? type : ' ');
        if (c.kind == CK_NONE || c.kind == CK_DTYPE)
            *err = "this value takes no format spec (only '{x}', '{x!r}' or '{x!s}')";
        return NULL;
    }
    const char *sgn = neg ? "-" : sign == '+' ? "+" : sign == ' ' ? " " : "";
    const char *text = buf_str(&body);
    int len = (int)strlen(sgn) + (int)strlen(prefix);
    for (const char *s = text; *s; s++)
        len += ((unsigned char)*s & 0xC0) != 0x80;
    int pad = width > len ? width - len : 0;
    if (!align)
        align = numeric ? '>' : '<';
    Buf out = {.a = a};
    int left = align == '<' ? 0 : align == '^' ? pad / 2 : pad;
    if (align != '=')
        for (int i = 0; i < left; i++)
            buf_putc(&out, fill);
    buf_puts(&out, sgn);
    buf_puts(&out, prefix);
    if (align == '=')
        for (int i = 0; i < pad; i++)
            buf_putc(&out, fill);
    buf_puts(&out, text);
    if (align != '=')
        for (int i = 0; i < pad - left; i++)
            buf_putc(&out, fill);
    return buf_str(&out);
}
