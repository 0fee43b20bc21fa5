/* sema_ops.c -- typing and lowering of every operation on specialization
 * values: Python operators, comparisons, `and`/`or`, subscripts,
 * attributes, methods and the tl.* / tl.math.* / libdevice / Python
 * builtins that kernels call.
 *
 * The job.  sema.c walks statements and hands each operation to this file
 * with already-evaluated operands (SVal).  Constexpr operands are folded
 * here with Python semantics; runtime operands are typed with Triton's
 * semantics (triton/language/semantic.py, core.py, standard.py, math.py)
 * and lowered to IR instructions appended to L->b.
 *
 * Invariants this file keeps:
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
 * Requires: L->f and L->b set by sema.c.  Guarantees: no output and no
 * global state; all memory from L->a.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kad_int.h"

/* ------------------------------------------------------------------ */
/* SVal construction and description                                   */
/* ------------------------------------------------------------------ */

static SVal sv_error(void) { return (SVal){.kind = SV_ERROR}; }
static SVal sv_none(void) { return (SVal){.kind = SV_NONE}; }
static SVal sv_value(ValId v) { return v ? (SVal){.kind = SV_VALUE, .v = v} : sv_error(); }

static SVal sv_const(ConstVal c)
{
    SVal s = {.kind = SV_CONST};
    s.c = c;
    return s;
}
static SVal sv_int(int64_t i) { return sv_const((ConstVal){.kind = CK_INT, .i = i}); }
static SVal sv_float(double f) { return sv_const((ConstVal){.kind = CK_FLOAT, .f = f}); }
static SVal sv_bool(bool b) { return sv_const((ConstVal){.kind = CK_BOOL, .i = b}); }
static SVal sv_str(const char *s) { return sv_const((ConstVal){.kind = CK_STR, .s = s}); }
static SVal sv_dtype(Dtype dt) { return sv_const((ConstVal){.kind = CK_DTYPE, .dt = dt}); }
/* A pointer dtype (x_ptr.dtype): dt = DT_PTR, the pointee in .i. */
static SVal sv_ptr_dtype(Dtype elem)
{
    return sv_const((ConstVal){.kind = CK_DTYPE, .dt = DT_PTR, .i = elem});
}

static SVal sv_tuple(Lower *L, const SVal *elts, int n)
{
    SVal s = {.kind = SV_TUPLE, .n = n};
    s.elts = arena_alloc(L->a, sizeof *s.elts * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        s.elts[i] = elts[i];
    return s;
}

static SVal sv_builtin(Lower *L, const char *qual)
{
    return (SVal){.kind = SV_BUILTIN, .qual = arena_strdup(L->a, qual)};
}

static SVal sv_method(Lower *L, SVal self, const char *name)
{
    SVal s = {.kind = SV_METHOD, .n = 1, .qual = arena_strdup(L->a, name)};
    s.elts = arena_alloc(L->a, sizeof *s.elts);
    s.elts[0] = self;
    return s;
}

static bool is_none(SVal x) { return x.kind == SV_NONE || (x.kind == SV_CONST && x.c.kind == CK_NONE); }
static bool is_num(SVal x)
{
    return x.kind == SV_CONST && (x.c.kind == CK_INT || x.c.kind == CK_FLOAT || x.c.kind == CK_BOOL);
}
static bool is_intc(SVal x) { return x.kind == SV_CONST && (x.c.kind == CK_INT || x.c.kind == CK_BOOL); }

static Type vty(Lower *L, ValId v) { return ir_type(L->f, v); }

static const char *tystr(Lower *L, Type t)
{
    Buf b = {.a = L->a};
    type_print(&b, t);
    return buf_str(&b);
}

static const char *shapestr(Lower *L, int rank, const int32_t *shape)
{
    Buf b = {.a = L->a};
    buf_putc(&b, '[');
    for (int i = 0; i < rank; i++)
        buf_printf(&b, i ? ",%d" : "%d", (int)shape[i]);
    buf_putc(&b, ']');
    return buf_str(&b);
}

/* The name a user wrote for a qualified name: "tl.exp", "libdevice.pow". */
static const char *user_name(Arena *a, const char *qual)
{
    static const struct { const char *prefix, *shown; } map[] = {
        {"triton.language.extra.cuda.libdevice.", "libdevice."},
        {"triton.language.extra.libdevice.", "libdevice."},
        {"triton.language.math.", "tl.math."},
        {"triton.language.", "tl."},
        {"builtins.", ""},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        size_t n = strlen(map[i].prefix);
        if (strncmp(qual, map[i].prefix, n) == 0)
            return arena_printf(a, "%s%s", map[i].shown, qual + n);
    }
    if (strcmp(qual, "triton.language") == 0)
        return "tl";
    return qual;
}

/* A short description of an operand for messages. */
static const char *describe(Lower *L, SVal x)
{
    switch (x.kind) {
    case SV_VALUE: return tystr(L, vty(L, x.v));
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
    case SV_MODULE: return arena_printf(L->a, "module '%s'", user_name(L->a, x.qual));
    case SV_BUILTIN: return arena_printf(L->a, "function '%s'", user_name(L->a, x.qual));
    case SV_FUNC: return arena_printf(L->a, "function '%s'", x.fn ? x.fn->name : "?");
    case SV_METHOD: return arena_printf(L->a, "method '%s'", x.qual);
    case SV_ERROR: break;
    }
    return "an invalid value";
}

static SVal fail(Lower *L, Loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_verror(L->d, loc, fmt, ap);
    va_end(ap);
    return sv_error();
}

/* ------------------------------------------------------------------ */
/* Dtype rules (Triton's, not kad's table: Triton's int1 is unsigned)   */
/* ------------------------------------------------------------------ */

static bool dt_unsigned(Dtype d)
{
    return d == DT_I1 || d == DT_U8 || d == DT_U16 || d == DT_U32 || d == DT_U64;
}
static bool dt_int(Dtype d) { return dtype_is_int(d); }
static bool dt_float(Dtype d) { return d != DT_PTR && d != DT_VOID && dtype_is_float(d); }
/* Triton's "kind": bool < integral < floating. */
static int dt_kind(Dtype d) { return d == DT_I1 ? 0 : dt_float(d) ? 2 : 1; }

/* integer_promote_impl: C's usual arithmetic conversions. */
static Dtype int_promote(Dtype a, Dtype b)
{
    int ab = dtype_bits(a), bb = dtype_bits(b);
    bool au = dt_unsigned(a), bu = dt_unsigned(b);
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
    if (divmod && dt_unsigned(a) != dt_unsigned(b)) {
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

static double cnum_f(ConstVal c) { return c.kind == CK_FLOAT ? c.f : (double)c.i; }

static bool int_range(Dtype d, int64_t *lo, int64_t *hi)
{
    int bits = dtype_bits(d);
    if (d == DT_I1) {
        *lo = 0, *hi = 1;
    } else if (dt_unsigned(d)) {
        *lo = 0;
        *hi = bits >= 63 ? INT64_MAX : ((int64_t)1 << bits) - 1;
    } else {
        *lo = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
        *hi = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
    }
    return true;
}

/* Wraps an integer to dtype d the way an integer cast of a constant does. */
static int64_t wrap_int(int64_t v, Dtype d)
{
    int bits = dtype_bits(d);
    if (bits >= 64)
        return v;
    uint64_t m = ((uint64_t)1 << bits) - 1, u = (uint64_t)v & m;
    if (!dt_unsigned(d) && (u >> (bits - 1)))
        u |= ~m;
    return (int64_t)u;
}

/* ------------------------------------------------------------------ */
/* Emission helpers                                                    */
/* ------------------------------------------------------------------ */

static ValId emit1(Lower *L, OpKind op, Type ty, ValId x, Loc loc) { return ir_op1(L->f, L->b, op, ty, x, loc); }
static ValId emit2(Lower *L, OpKind op, Type ty, ValId x, ValId y, Loc loc)
{
    return ir_op2(L->f, L->b, op, ty, x, y, loc);
}

/* A single-operand op with an integer attribute (axis, start) and flags. */
static ValId emit_attr(Lower *L, OpKind op, Type ty, ValId x, int64_t ival, int flags, Loc loc)
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
    if (dt_float(dt)) {
        /* The exact value: the const's dtype rounds it where it is used. */
        *fv = cnum_f(c);
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
    *iv = wrap_int(c.i, dt);
    return true;
}

static ValId emit_const(Lower *L, ConstVal c, Type ty, Loc loc)
{
    int64_t iv;
    double fv;
    if (!const_for(L, c, (Dtype)ty.dt, &iv, &fv, loc))
        return 0;
    if (dt_float((Dtype)ty.dt))
        return ir_const_float(L->f, L->b, ty, fv, loc);
    return ir_const_int(L->f, L->b, ty, iv, loc);
}

static ValId emit_zero(Lower *L, Type ty, Loc loc)
{
    if (dt_float((Dtype)ty.dt))
        return ir_const_float(L->f, L->b, ty, 0.0, loc);
    return ir_const_int(L->f, L->b, ty, 0, loc);
}

/* Converts v to dtype dt (not pointers).  To i1 is `ne 0`, like Triton. */
static ValId cast_dt(Lower *L, ValId v, Dtype dt, Loc loc)
{
    Type t = vty(L, v);
    if (t.dt == dt)
        return v;
    ASSERT(t.dt != DT_PTR && dt != DT_PTR);
    if (dt == DT_I1)
        return emit2(L, OP_NE, type_with_dtype(t, DT_I1), v, emit_zero(L, t, loc), loc);
    return emit1(L, OP_CAST, type_with_dtype(t, dt), v, loc);
}

/* The numpy/Triton broadcast of two shapes (lower rank: axes prepended). */
static bool bcast_shape(int ra, const int32_t *a, int rb, const int32_t *b, int *rank, int32_t *out)
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

/* Broadcasts v to the shape (the caller checked compatibility): rank-0 ->
 * broadcast; lower rank -> expand_dims at 0, then broadcast of size-1 axes. */
static ValId bcast_to(Lower *L, ValId v, int rank, const int32_t *shape, Loc loc)
{
    Type t = vty(L, v);
    Type want = type_with_shape(t, rank, shape);
    if (type_same_shape(t, want))
        return v;
    if (t.rank > 0) {
        while (t.rank < rank) {
            int32_t s[KAD_MAX_RANK];
            s[0] = 1;
            for (int i = 0; i < t.rank; i++)
                s[i + 1] = t.shape[i];
            t = type_with_shape(t, t.rank + 1, s);
            v = emit_attr(L, OP_EXPAND_DIMS, t, v, 0, 0, loc);
        }
        if (type_same_shape(t, want))
            return v;
    }
    return emit1(L, OP_BROADCAST, want, v, loc);
}

/* Checks a tile shape the way Triton's block_type does. */
static bool check_shape(Lower *L, int rank, const int64_t *dims, Loc loc, const char *what)
{
    if (rank > KAD_MAX_RANK) {
        diag_error(L->d, loc, "%s: tiles of rank %d are not supported (kad allows up to %d axes)", what,
                   rank, KAD_MAX_RANK);
        return false;
    }
    int64_t numel = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] <= 0 || (dims[i] & (dims[i] - 1)) != 0) {
            diag_error(L->d, loc, "%s: tile dimensions must be powers of 2, got %lld", what,
                       (long long)dims[i]);
            return false;
        }
        numel *= dims[i];
        if (numel > 1048576) {
            diag_error(L->d, loc, "%s: a tile may hold at most 1048576 elements", what);
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Constant folding with Python semantics                              */
/* ------------------------------------------------------------------ */

static bool c_truthy(ConstVal c)
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

static bool sv_truthy(SVal x)
{
    if (x.kind == SV_TUPLE)
        return x.n > 0;
    if (x.kind == SV_CONST)
        return c_truthy(x.c);
    return x.kind != SV_NONE;
}

static const char *const binop_sym[] = {"+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "@"};
static const char *const cmp_sym[] = {"<", "<=", ">", ">=", "==", "!=", "is", "is not", "in", "not in"};

static SVal overflow(Lower *L, const char *op, Loc loc)
{
    return fail(L, loc, "integer overflow in constexpr '%s' (kad's constexpr ints are 64-bit)", op);
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
    case BO_ADD: if (__builtin_add_overflow(a, b, &r)) return overflow(L, sym, loc); return sv_int(r);
    case BO_SUB: if (__builtin_sub_overflow(a, b, &r)) return overflow(L, sym, loc); return sv_int(r);
    case BO_MUL: if (__builtin_mul_overflow(a, b, &r)) return overflow(L, sym, loc); return sv_int(r);
    case BO_DIV:
        if (b == 0)
            return fail(L, loc, "division by zero in constexpr '/'");
        return sv_float((double)a / (double)b);
    case BO_FLOORDIV:
    case BO_MOD: {
        if (b == 0)
            return fail(L, loc, "integer division or modulo by zero in constexpr '%s'", sym);
        if (a == INT64_MIN && b == -1)
            return op == BO_MOD ? sv_int(0) : overflow(L, sym, loc);
        int64_t q = a / b, m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) {
            q -= 1;
            m += b;
        }
        return sv_int(op == BO_MOD ? m : q);
    }
    case BO_POW: {
        if (b < 0) {
            if (a == 0)
                return fail(L, loc, "0 cannot be raised to a negative power");
            return sv_float(pow((double)a, (double)b));
        }
        int64_t acc = 1, base = a;
        while (b) {
            if (b & 1)
                if (__builtin_mul_overflow(acc, base, &acc))
                    return overflow(L, sym, loc);
            b >>= 1;
            if (b && __builtin_mul_overflow(base, base, &base))
                return overflow(L, sym, loc);
        }
        return sv_int(acc);
    }
    case BO_LSHIFT:
        if (b < 0)
            return fail(L, loc, "negative shift count in constexpr '<<'");
        if (a == 0)
            return sv_int(0);
        if (b >= 63 || ((a << b) >> b) != a)
            return overflow(L, sym, loc);
        return sv_int(a << b);
    case BO_RSHIFT:
        if (b < 0)
            return fail(L, loc, "negative shift count in constexpr '>>'");
        if (b >= 63)
            return sv_int(a < 0 ? -1 : 0);
        return sv_int(a >= 0 ? a >> b : ~(~a >> b)); /* floor, as Python */
    case BO_BITAND: return both_bool ? sv_bool(a & b) : sv_int(a & b);
    case BO_BITOR: return both_bool ? sv_bool(a | b) : sv_int(a | b);
    case BO_BITXOR: return both_bool ? sv_bool(a ^ b) : sv_int(a ^ b);
    case BO_MATMUL: break;
    }
    return fail(L, loc, "unsupported operand types for '%s': int and int", sym);
}

static SVal fold_float(Lower *L, BinOp op, double a, double b, Loc loc)
{
    const char *sym = binop_sym[op];
    double q, m;
    switch (op) {
    case BO_ADD: return sv_float(a + b);
    case BO_SUB: return sv_float(a - b);
    case BO_MUL: return sv_float(a * b);
    case BO_DIV:
        if (b == 0.0)
            return fail(L, loc, "float division by zero in constexpr '/'");
        return sv_float(a / b);
    case BO_FLOORDIV:
    case BO_MOD:
        if (b == 0.0)
            return fail(L, loc, "float division or modulo by zero in constexpr '%s'", sym);
        py_fdivmod(a, b, &q, &m);
        return sv_float(op == BO_MOD ? m : q);
    case BO_POW: {
        if (a == 0.0 && b < 0.0)
            return fail(L, loc, "0.0 cannot be raised to a negative power");
        if (a < 0.0 && b != floor(b) && isfinite(b))
            return fail(L, loc, "a negative constexpr raised to a fractional power is complex in Python");
        double r = pow(a, b);
        if (isinf(r) && isfinite(a) && isfinite(b))
            return fail(L, loc, "constexpr float '**' overflows");
        return sv_float(r);
    }
    default: break;
    }
    return fail(L, loc, "unsupported operand types for '%s': float and float", sym);
}

static SVal fold_binop(Lower *L, BinOp op, SVal x, SVal y, Loc loc)
{
    const char *sym = binop_sym[op];
    /* tuples: + concatenates, * by an int repeats (shapes: [1] * N) */
    if (x.kind == SV_TUPLE && y.kind == SV_TUPLE && op == BO_ADD) {
        SVal *e = arena_alloc(L->a, sizeof *e * (size_t)(x.n + y.n + 1));
        memcpy(e, x.elts, sizeof *e * (size_t)x.n);
        memcpy(e + x.n, y.elts, sizeof *e * (size_t)y.n);
        return sv_tuple(L, e, x.n + y.n);
    }
    if (op == BO_MUL && ((x.kind == SV_TUPLE && is_intc(y)) || (y.kind == SV_TUPLE && is_intc(x)))) {
        SVal t = x.kind == SV_TUPLE ? x : y;
        int64_t k = x.kind == SV_TUPLE ? y.c.i : x.c.i;
        if (k < 0)
            k = 0;
        if ((int64_t)t.n * k > 4096)
            return fail(L, loc, "constexpr tuple repetition is too long");
        SVal *e = arena_alloc(L->a, sizeof *e * (size_t)(t.n * k + 1));
        for (int64_t i = 0; i < k; i++)
            memcpy(e + i * t.n, t.elts, sizeof *e * (size_t)t.n);
        return sv_tuple(L, e, (int)(t.n * k));
    }
    if (x.kind == SV_CONST && y.kind == SV_CONST && x.c.kind == CK_STR && y.c.kind == CK_STR && op == BO_ADD)
        return sv_str(arena_printf(L->a, "%s%s", x.c.s, y.c.s));
    if (!is_num(x) || !is_num(y))
        return fail(L, loc, "unsupported operand types for '%s': %s and %s", sym, describe(L, x),
                    describe(L, y));
    if (x.c.kind == CK_FLOAT || y.c.kind == CK_FLOAT) {
        if (op >= BO_LSHIFT)
            return fail(L, loc, "unsupported operand types for '%s': %s and %s", sym, describe(L, x),
                        describe(L, y));
        return fold_float(L, op, cnum_f(x.c), cnum_f(y.c), loc);
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
        return cnum_f(a) == cnum_f(b);
    }
    if (a.kind != b.kind)
        return false;
    switch (a.kind) {
    case CK_NONE: return true;
    case CK_STR: return strcmp(a.s, b.s) == 0;
    case CK_DTYPE: return a.dt == b.dt && (a.dt != DT_PTR || a.i == b.i);
    default: break;
    }
    *comparable = false;
    return false;
}

static bool sv_eq(SVal a, SVal b, bool *comparable)
{
    *comparable = true;
    if (is_none(a) || is_none(b))
        return is_none(a) && is_none(b);
    if (a.kind == SV_TUPLE || b.kind == SV_TUPLE) {
        if (a.kind != b.kind || a.n != b.n)
            return false;
        for (int i = 0; i < a.n; i++)
            if (!sv_eq(a.elts[i], b.elts[i], comparable))
                return false;
        return true;
    }
    if (a.kind == SV_CONST && b.kind == SV_CONST)
        return const_eq(a.c, b.c, comparable);
    *comparable = false;
    return false;
}

static SVal fold_compare(Lower *L, CmpOp op, SVal x, SVal y, Loc loc)
{
    bool ok;
    switch (op) {
    case CO_EQ:
    case CO_NE:
    case CO_IS:
    case CO_ISNOT: {
        bool eq = sv_eq(x, y, &ok);
        if (!ok && op != CO_IS && op != CO_ISNOT)
            return fail(L, loc, "cannot compare %s and %s with '%s'", describe(L, x), describe(L, y),
                        cmp_sym[op]);
        return sv_bool((op == CO_EQ || op == CO_IS) ? eq : !eq);
    }
    case CO_IN:
    case CO_NOTIN: {
        bool found = false;
        if (y.kind == SV_TUPLE) {
            for (int i = 0; i < y.n && !found; i++)
                found = sv_eq(x, y.elts[i], &ok);
        } else if (y.kind == SV_CONST && y.c.kind == CK_STR && x.kind == SV_CONST && x.c.kind == CK_STR) {
            found = strstr(y.c.s, x.c.s) != NULL;
        } else {
            return fail(L, loc, "'%s' needs a constexpr tuple or string on the right, got %s",
                        cmp_sym[op], describe(L, y));
        }
        return sv_bool(op == CO_IN ? found : !found);
    }
    default: break;
    }
    int c;
    if (is_num(x) && is_num(y)) {
        if (x.c.kind != CK_FLOAT && y.c.kind != CK_FLOAT)
            c = x.c.i < y.c.i ? -1 : x.c.i > y.c.i;
        else {
            double a = cnum_f(x.c), b = cnum_f(y.c);
            if (isnan(a) || isnan(b))
                return sv_bool(false);
            c = a < b ? -1 : a > b;
        }
    } else if (x.kind == SV_CONST && y.kind == SV_CONST && x.c.kind == CK_STR && y.c.kind == CK_STR) {
        c = strcmp(x.c.s, y.c.s);
    } else {
        return fail(L, loc, "cannot compare %s and %s with '%s'", describe(L, x), describe(L, y),
                    cmp_sym[op]);
    }
    switch (op) {
    case CO_LT: return sv_bool(c < 0);
    case CO_LE: return sv_bool(c <= 0);
    case CO_GT: return sv_bool(c > 0);
    default: return sv_bool(c >= 0);
    }
}

/* ------------------------------------------------------------------ */
/* Operands: Python numbers and runtime values, unified Triton's way   */
/* ------------------------------------------------------------------ */

typedef struct Opnd {
    bool is_const; /* a Python number, not yet materialized */
    bool weak;     /* takes part in promotion as a Python scalar */
    ConstVal c;
    ValId v;
    Type ty;       /* for constants: Triton's to_tensor type, rank 0 */
} Opnd;

/* Makes an operand of a number or a value; anything else is an error
 * naming ctx ("'+'", "tl.where"). */
static bool opnd_of(Lower *L, SVal x, bool weak, Opnd *o, const char *ctx, Loc loc)
{
    memset(o, 0, sizeof *o);
    if (x.kind == SV_VALUE) {
        o->v = x.v;
        o->ty = vty(L, x.v);
        return true;
    }
    if (is_num(x)) {
        o->is_const = true;
        o->weak = weak;
        o->c = x.c;
        o->ty = type_scalar(const_dtype(x.c));
        return true;
    }
    diag_error(L->d, loc, "%s expects a tensor or a number, got %s", ctx, describe(L, x));
    return false;
}

/* Two operands of a builtin or operator.  Two numbers given to a builtin
 * are both converted to tensors first (neither is weak then). */
static bool opnd_pair(Lower *L, SVal x, SVal y, bool weak, Opnd *a, Opnd *b, const char *ctx, Loc loc)
{
    if (is_num(x) && is_num(y))
        weak = false;
    return opnd_of(L, x, weak, a, ctx, loc) && opnd_of(L, y, weak, b, ctx, loc);
}

/* Materializes o with dtype dt and the given shape. */
static ValId materialize(Lower *L, const Opnd *o, Dtype dt, int rank, const int32_t *shape, Loc loc)
{
    if (o->is_const) {
        Type t = dt == DT_PTR ? type_ptr((Dtype)o->ty.elem, rank, shape) : type_tile(dt, rank, shape);
        ConstVal c = o->c;
        /* A number Triton turned into an fp32 tensor first, then cast to
         * fp64 (x_fp64 < 0.1), holds the fp32 value. */
        if (!o->weak && c.kind == CK_FLOAT && o->ty.dt == DT_F32 && dt == DT_F64)
            c.f = (double)(float)c.f;
        return emit_const(L, c, t, loc);
    }
    ValId v = o->v;
    if (dt != DT_PTR)
        v = cast_dt(L, v, dt, loc);
    return bcast_to(L, v, rank, shape, loc);
}

/* The common dtype of two numeric operands (binary_op_type_checking_impl,
 * with its range checks of weak integer scalars). */
static Dtype unify_dtype(Lower *L, const Opnd *a, const Opnd *b, bool divmod, const char *op, Loc loc)
{
    if (a->ty.dt == DT_PTR || b->ty.dt == DT_PTR) {
        diag_error(L->d, loc, "%s does not accept pointers, got %s and %s", op, tystr(L, a->ty),
                   tystr(L, b->ty));
        return DT_VOID;
    }
    Dtype r = computation_type(L, (Dtype)a->ty.dt, a->weak, (Dtype)b->ty.dt, b->weak, divmod, op, loc);
    if (r == DT_VOID || !dt_int(r))
        return r;
    const Opnd *s[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        if (!s[i]->is_const || !s[i]->weak || s[i]->c.kind == CK_FLOAT)
            continue;
        int64_t lo, hi, v = s[i]->c.i;
        int_range(r, &lo, &hi);
        if (v < 0 && dt_unsigned(r)) {
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
    if (bcast_shape(a->ty.rank, a->ty.shape, b->ty.rank, b->ty.shape, rank, shape))
        return true;
    diag_error(L->d, loc, "cannot broadcast shapes %s and %s in %s", shapestr(L, a->ty.rank, a->ty.shape),
               shapestr(L, b->ty.rank, b->ty.shape), op);
    return false;
}

/* Unifies two numeric operands: common dtype and broadcast shape, both
 * materialized.  weak: Python numbers are weakly typed. */
static bool unify2(Lower *L, SVal x, SVal y, bool weak, bool divmod, const char *op, Loc loc, ValId *vx,
                   ValId *vy)
{
    Opnd a, b;
    if (!opnd_pair(L, x, y, weak, &a, &b, op, loc))
        return false;
    Dtype dt = unify_dtype(L, &a, &b, divmod, op, loc);
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (dt == DT_VOID || !opnd_shape(L, &a, &b, &rank, shape, op, loc))
        return false;
    *vx = materialize(L, &a, dt, rank, shape, loc);
    *vy = materialize(L, &b, dt, rank, shape, loc);
    return *vx && *vy;
}

/* A number or value as a value of its own type (Triton's to_tensor). */
static ValId to_value(Lower *L, SVal x, const char *ctx, Loc loc)
{
    Opnd o;
    if (!opnd_of(L, x, false, &o, ctx, loc))
        return 0;
    if (!o.is_const)
        return o.v;
    return materialize(L, &o, (Dtype)o.ty.dt, 0, NULL, loc);
}

/* ------------------------------------------------------------------ */
/* Binary operators on values                                          */
/* ------------------------------------------------------------------ */

/* ptr + int, int + ptr, ptr - int -> addptr. */
static SVal pointer_arith(Lower *L, BinOp op, SVal x, SVal y, Loc loc)
{
    const char *sym = binop_sym[op];
    char ctx[16];
    snprintf(ctx, sizeof ctx, "'%s'", sym);
    Opnd a, b;
    if (!opnd_of(L, x, false, &a, ctx, loc) || !opnd_of(L, y, false, &b, ctx, loc))
        return sv_error();
    bool pa = a.ty.dt == DT_PTR, pb = b.ty.dt == DT_PTR;
    if (op != BO_ADD && op != BO_SUB)
        return fail(L, loc, "unsupported operand types for '%s': %s and %s (pointers only support + and - "
                    "of integer offsets)", sym, tystr(L, a.ty), tystr(L, b.ty));
    if (pa && pb)
        return fail(L, loc, op == BO_ADD ? "cannot add two pointers (%s and %s)"
                                         : "pointer difference is not supported (%s - %s)",
                    tystr(L, a.ty), tystr(L, b.ty));
    if (op == BO_SUB && pb)
        return fail(L, loc, "cannot subtract a pointer from %s", tystr(L, a.ty));
    Opnd *p = pa ? &a : &b, *o = pa ? &b : &a;
    if (!dt_int((Dtype)o->ty.dt))
        return fail(L, loc, "pointer offsets must be integers, got %s in '%s'", tystr(L, o->ty), sym);
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!opnd_shape(L, &a, &b, &rank, shape, ctx, loc))
        return sv_error();
    Dtype odt = (Dtype)o->ty.dt;
    if (op == BO_SUB && dt_unsigned(odt) && !o->is_const)
        return fail(L, loc, "subtracting an unsigned offset (%s) from a pointer is not supported; cast "
                    "the offset to a signed type", tystr(L, o->ty));
    if (op == BO_SUB && o->is_const) {
        if (o->c.i == INT64_MIN)
            return overflow(L, sym, loc);
        o->c.i = -o->c.i;
        odt = const_dtype(o->c);
    }
    /* addptr treats offsets as signed: widen unsigned ones (as Triton). */
    if (dt_unsigned(odt) && dtype_bits(odt) < 64)
        odt = DT_I64;
    ValId pv = materialize(L, p, DT_PTR, rank, shape, loc);
    ValId ov = materialize(L, o, odt, rank, shape, loc);
    if (!pv || !ov)
        return sv_error();
    if (op == BO_SUB && !o->is_const) /* constants were negated above */
        ov = emit1(L, OP_NEG, vty(L, ov), ov, loc);
    return sv_value(emit2(L, OP_ADDPTR, vty(L, pv), pv, ov, loc));
}

static SVal binop_values(Lower *L, BinOp op, SVal x, SVal y, Loc loc)
{
    const char *sym = binop_sym[op];
    char ctx[16];
    snprintf(ctx, sizeof ctx, "'%s'", sym);
    if (op == BO_MATMUL)
        return fail(L, loc, "'@' is not supported on tiles; use tl.dot(a, b)");
    if ((x.kind == SV_VALUE && vty(L, x.v).dt == DT_PTR) || (y.kind == SV_VALUE && vty(L, y.v).dt == DT_PTR))
        return pointer_arith(L, op, x, y, loc);
    Opnd a, b;
    if (!opnd_of(L, x, true, &a, ctx, loc) || !opnd_of(L, y, true, &b, ctx, loc))
        return sv_error();
    bool divmod = op == BO_DIV || op == BO_FLOORDIV || op == BO_MOD;
    Dtype dt = unify_dtype(L, &a, &b, divmod, ctx, loc);
    if (dt == DT_VOID)
        return sv_error();
    /* Triton's __rshift__/__rrshift__ pick ashr or lshr by the tensor
     * operand's dtype before promotion. */
    Dtype shifted = (Dtype)(a.is_const ? b.ty.dt : a.ty.dt);
    switch (op) {
    case BO_DIV:
        if (dt_int(dt))
            dt = DT_F32; /* int / int is fp32 true division */
        break;
    case BO_FLOORDIV:
        if (dt_float(dt))
            return fail(L, loc, "'//' is not supported on floating-point tiles (Triton only has integer "
                        "floor division); use tl.floor(a / b)");
        break;
    case BO_POW:
        if (!dt_float(dt))
            return fail(L, loc, "'**' on integer tiles is not supported (Triton has no integer power); "
                        "cast to a float type or use a constexpr exponent loop");
        break;
    case BO_LSHIFT:
    case BO_RSHIFT:
    case BO_BITAND:
    case BO_BITOR:
    case BO_BITXOR:
        if (!dt_int(dt))
            return fail(L, loc, "bitwise '%s' requires integer operands, got %s and %s", sym,
                        a.is_const ? describe(L, x) : tystr(L, a.ty),
                        b.is_const ? describe(L, y) : tystr(L, b.ty));
        if (op == BO_RSHIFT && dt_unsigned(shifted) != dt_unsigned(dt))
            return fail(L, loc, "'>>' of %s by %s: the operands promote to %s, which changes the shift's "
                        "signedness; cast them to one type first",
                        tystr(L, a.ty), tystr(L, b.ty), dtype_name(dt));
        break;
    default: break;
    }
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!opnd_shape(L, &a, &b, &rank, shape, ctx, loc))
        return sv_error();
    ValId va = materialize(L, &a, dt, rank, shape, loc), vb = materialize(L, &b, dt, rank, shape, loc);
    if (!va || !vb)
        return sv_error();
    static const OpKind ops[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_DIV, OP_REM, OP_POW,
                                 OP_SHL, OP_SHR, OP_AND, OP_OR, OP_XOR};
    return sv_value(emit2(L, ops[op], vty(L, va), va, vb, loc));
}

/* ------------------------------------------------------------------ */
/* Builtin calls: argument binding                                     */
/* ------------------------------------------------------------------ */

#define MAX_PARAMS 12

typedef struct Builtin Builtin;

/* One call being lowered: the bound arguments by parameter slot. */
typedef struct Call {
    Lower *L;
    const Builtin *def;
    const char *fname; /* as the user wrote it: "tl.load", "x.to" */
    int np;
    const char *pname[MAX_PARAMS];
    SVal a[MAX_PARAMS];
    bool has[MAX_PARAMS];
    Loc loc;
} Call;

typedef SVal (*BuiltinFn)(Call *c);

struct Builtin {
    const char *name;
    BuiltinFn fn;
    /* Parameters: "x,axis=,*shape": `=` marks optional ones, `*` collects
     * the remaining positional arguments into a tuple.  NULL: the handler
     * refuses the call whatever its arguments. */
    const char *params;
    int aux; /* handler-specific: an OpKind, a flag */
};

/* Binds positional (self first when given) and keyword arguments to the
 * parameters of def.  Unknown keywords are errors naming them. */
static bool bind(Lower *L, Call *c, const Builtin *def, const char *fname, const SVal *self, const SVal *args,
                 int nargs, const char *const *kwn, const SVal *kwv, int nkw, Loc loc)
{
    memset(c, 0, sizeof *c);
    c->L = L, c->def = def, c->fname = fname, c->loc = loc;
    bool vararg[MAX_PARAMS] = {0}, optional[MAX_PARAMS] = {0};
    const char *p = def->params;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        ASSERT(c->np < MAX_PARAMS);
        if (*p == '*') {
            vararg[c->np] = optional[c->np] = true;
            p++, n--;
        }
        if (n && p[n - 1] == '=') {
            optional[c->np] = true;
            n--;
        }
        c->pname[c->np++] = arena_strndup(L->a, p, n);
        p = e ? e + 1 : p + strlen(p);
    }
    int total = nargs + (self ? 1 : 0);
    for (int i = 0; i < nargs; i++)
        if (args[i].kind == SV_ERROR)
            return false;
    for (int i = 0; i < nkw; i++)
        if (kwv[i].kind == SV_ERROR)
            return false;
    int slot = 0;
    for (int i = 0; i < total; i++) {
        SVal v = self ? (i == 0 ? *self : args[i - 1]) : args[i];
        if (slot < c->np && vararg[slot]) {
            int rest = total - i;
            SVal *e = arena_alloc(L->a, sizeof *e * (size_t)(rest + 1));
            for (int k = 0; k < rest; k++)
                e[k] = self ? (i + k == 0 ? *self : args[i + k - 1]) : args[i + k];
            c->a[slot] = sv_tuple(L, e, rest);
            c->has[slot] = true;
            slot++;
            break;
        }
        if (slot >= c->np) {
            int maxpos = c->np - (self ? 1 : 0);
            diag_error(L->d, loc, "%s() takes at most %d positional argument%s but %d %s given", fname,
                       maxpos, maxpos == 1 ? "" : "s", nargs, nargs == 1 ? "was" : "were");
            return false;
        }
        c->a[slot] = v;
        c->has[slot++] = true;
    }
    for (int k = 0; k < nkw; k++) {
        int j = 0;
        while (j < c->np && strcmp(c->pname[j], kwn[k]) != 0)
            j++;
        if (j == c->np) {
            diag_error(L->d, loc, "%s() does not support the keyword argument '%s'", fname, kwn[k]);
            return false;
        }
        if (c->has[j]) {
            diag_error(L->d, loc, "%s() got multiple values for argument '%s'", fname, kwn[k]);
            return false;
        }
        c->a[j] = kwv[k];
        c->has[j] = true;
    }
    for (int j = 0; j < c->np; j++)
        if (!c->has[j] && !optional[j]) {
            diag_error(L->d, loc, "%s() missing required argument '%s'", fname, c->pname[j]);
            return false;
        }
    return true;
}

static bool absent(Call *c, int i) { return !c->has[i] || is_none(c->a[i]); }

/* A constexpr int argument. */
static bool arg_int(Call *c, int i, int64_t *out)
{
    SVal x = c->a[i];
    if (is_intc(x)) {
        *out = x.c.i;
        return true;
    }
    diag_error(c->L->d, c->loc, "%s: '%s' must be a constexpr int, got %s", c->fname, c->pname[i],
               describe(c->L, x));
    return false;
}

static bool arg_bool(Call *c, int i, bool dflt, bool *out)
{
    *out = dflt;
    if (absent(c, i))
        return true;
    SVal x = c->a[i];
    if (x.kind == SV_CONST) {
        *out = c_truthy(x.c);
        return true;
    }
    diag_error(c->L->d, c->loc, "%s: '%s' must be a constexpr bool, got %s", c->fname, c->pname[i],
               describe(c->L, x));
    return false;
}

static bool arg_str(Call *c, int i, const char *dflt, const char **out)
{
    *out = dflt;
    if (absent(c, i))
        return true;
    SVal x = c->a[i];
    if (x.kind == SV_CONST && x.c.kind == CK_STR) {
        *out = x.c.s;
        return true;
    }
    diag_error(c->L->d, c->loc, "%s: '%s' must be a constexpr string, got %s", c->fname, c->pname[i],
               describe(c->L, x));
    return false;
}

/* A dtype argument; pointer dtypes only when allow_ptr. */
static bool arg_dtype(Call *c, int i, Dtype *out, Dtype *elem)
{
    SVal x = c->a[i];
    if (x.kind == SV_CONST && x.c.kind == CK_DTYPE) {
        *out = x.c.dt;
        if (elem)
            *elem = (Dtype)x.c.i;
        if (x.c.dt == DT_PTR && !elem) {
            diag_error(c->L->d, c->loc, "%s: pointer dtypes are not supported here", c->fname);
            return false;
        }
        return true;
    }
    diag_error(c->L->d, c->loc, "%s: '%s' must be a dtype such as tl.float32, got %s", c->fname,
               c->pname[i], describe(c->L, x));
    return false;
}

/* A tuple/list of constexpr ints (or, with allow_int, one int). */
static bool int_list(Call *c, SVal x, bool allow_int, int64_t *out, int max, int *n, const char *what)
{
    if (is_intc(x) && allow_int) {
        out[0] = x.c.i;
        *n = 1;
        return true;
    }
    if (x.kind == SV_TUPLE) {
        if (x.n > max) {
            diag_error(c->L->d, c->loc, "%s: %s has %d entries, at most %d are supported", c->fname, what,
                       x.n, max);
            return false;
        }
        for (int k = 0; k < x.n; k++) {
            if (!is_intc(x.elts[k])) {
                diag_error(c->L->d, c->loc, "%s: %s must hold constexpr ints, got %s", c->fname, what,
                           describe(c->L, x.elts[k]));
                return false;
            }
            out[k] = x.elts[k].c.i;
        }
        *n = x.n;
        return true;
    }
    diag_error(c->L->d, c->loc, "%s: %s must be a tuple or list of constexpr ints, got %s", c->fname, what,
               describe(c->L, x));
    return false;
}

/* Unwraps f(x, (a, b)) written as f(x, a, b): a vararg tuple holding one
 * tuple is that tuple (Triton's _unwrap_iterable). */
static SVal unwrap_iterable(SVal t)
{
    if (t.kind == SV_TUPLE && t.n == 1 && t.elts[0].kind == SV_TUPLE)
        return t.elts[0];
    return t;
}

/* A tile shape argument (validated like Triton's block shapes). */
static bool arg_shape(Call *c, SVal x, int *rank, int32_t *shape)
{
    int64_t d[KAD_MAX_RANK + 1];
    int n;
    if (!int_list(c, x, false, d, KAD_MAX_RANK, &n, "the shape"))
        return false;
    if (!check_shape(c->L, n, d, c->loc, c->fname))
        return false;
    for (int i = 0; i < n; i++)
        shape[i] = (int32_t)d[i];
    *rank = n;
    return true;
}

/* A runtime tile (constants are not accepted: they have no shape). */
static ValId arg_tile(Call *c, int i)
{
    SVal x = c->a[i];
    if (x.kind == SV_VALUE)
        return x.v;
    diag_error(c->L->d, c->loc, "%s: '%s' must be a tensor, got %s", c->fname, c->pname[i],
               describe(c->L, x));
    return 0;
}

/* Normalizes an axis (negative counts from the end). */
static bool wrap_axis(Call *c, int64_t axis, int rank, int *out)
{
    if (axis < -rank || axis >= rank) {
        diag_error(c->L->d, c->loc, "%s: axis %lld is out of range for a tile of rank %d", c->fname,
                   (long long)axis, rank);
        return false;
    }
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

/* ------------------------------------------------------------------ */
/* Builtins: program structure, creation, memory                        */
/* ------------------------------------------------------------------ */

static SVal b_program_id(Call *c)
{
    int64_t axis;
    if (!arg_int(c, 0, &axis))
        return sv_error();
    if (axis < 0 || axis > 2)
        return fail(c->L, c->loc, "%s axis must be 0, 1 or 2, got %lld", c->fname, (long long)axis);
    return sv_value(emit_attr(c->L, (OpKind)c->def->aux, type_scalar(DT_I32), 0, axis, 0, c->loc));
}

static SVal b_arange(Call *c)
{
    Lower *L = c->L;
    if (!is_intc(c->a[0]) || !is_intc(c->a[1])) {
        const char *d[2];
        for (int i = 0; i < 2; i++)
            d[i] = c->a[i].kind == SV_VALUE ? arena_printf(L->a, "a runtime %s", describe(L, c->a[i]))
                                            : describe(L, c->a[i]);
        return fail(L, c->loc, "tl.arange bounds must be constexpr ints, got %s and %s", d[0], d[1]);
    }
    int64_t s = c->a[0].c.i, e = c->a[1].c.i;
    if (s < INT32_MIN || s > INT32_MAX || e < INT32_MIN || e > INT32_MAX)
        return fail(L, c->loc, "tl.arange bounds must fit in int32, got %lld and %lld", (long long)s,
                    (long long)e);
    if (e <= s)
        return fail(L, c->loc, "tl.arange end must be greater than start, got %lld and %lld", (long long)s,
                    (long long)e);
    int64_t n = e - s;
    if ((n & (n - 1)) != 0)
        return fail(L, c->loc, "tl.arange range must be a power of 2, got %lld (%lld to %lld)", (long long)n,
                    (long long)s, (long long)e);
    if (!check_shape(L, 1, &n, c->loc, "tl.arange"))
        return sv_error();
    int32_t shape[1] = {(int32_t)n};
    return sv_value(emit_attr(L, OP_ARANGE, type_tile(DT_I32, 1, shape), 0, s, 0, c->loc));
}

/* A tile of dtype dt and the given shape holding v (a number or a scalar). */
static SVal fill(Call *c, SVal v, Dtype dt, int rank, const int32_t *shape)
{
    Lower *L = c->L;
    if (dt == DT_PTR || dt == DT_VOID)
        return fail(L, c->loc, "%s: cannot create a tile of pointers", c->fname);
    if (is_num(v))
        return sv_value(emit_const(L, v.c, type_tile(dt, rank, shape), c->loc));
    if (v.kind == SV_VALUE) {
        Type t = vty(L, v.v);
        if (type_numel(t) != 1 || t.dt == DT_PTR)
            return fail(L, c->loc, "%s: the fill value must be a number or a scalar, got %s", c->fname,
                        tystr(L, t));
        ValId x = cast_dt(L, v.v, dt, c->loc);
        if (vty(L, x).rank > 0)
            x = emit1(L, OP_RESHAPE, type_tile(dt, 0, NULL), x, c->loc);
        return sv_value(bcast_to(L, x, rank, shape, c->loc));
    }
    return fail(L, c->loc, "%s: the fill value must be a number or a scalar, got %s", c->fname, describe(L, v));
}

static SVal b_zeros(Call *c)
{
    int rank;
    int32_t shape[KAD_MAX_RANK];
    Dtype dt;
    if (!arg_shape(c, c->a[0], &rank, shape) || !arg_dtype(c, 1, &dt, NULL))
        return sv_error();
    return fill(c, sv_int(0), dt, rank, shape);
}

static SVal b_full(Call *c)
{
    int rank;
    int32_t shape[KAD_MAX_RANK];
    Dtype dt;
    if (!arg_shape(c, c->a[0], &rank, shape) || !arg_dtype(c, 2, &dt, NULL))
        return sv_error();
    return fill(c, c->a[1], dt, rank, shape);
}

static SVal b_zeros_like(Call *c)
{
    ValId x = arg_tile(c, 0);
    if (!x)
        return sv_error();
    Type t = vty(c->L, x);
    return fill(c, sv_int(0), (Dtype)t.dt, t.rank, t.shape);
}

static bool check_hint(Call *c, int i, const char *const *allowed)
{
    const char *s;
    if (!arg_str(c, i, "", &s))
        return false;
    if (!*s)
        return true;
    for (int k = 0; allowed[k]; k++)
        if (strcmp(s, allowed[k]) == 0)
            return true;
    diag_error(c->L->d, c->loc, "%s: unsupported %s '%s'", c->fname, c->pname[i], s);
    return false;
}

/* A pointer operand (scalar pointer or tile of pointers). */
static ValId arg_pointer(Call *c, int i)
{
    Lower *L = c->L;
    SVal p = c->a[i];
    if (p.kind == SV_VALUE && vty(L, p.v).dt == DT_PTR)
        return p.v;
    diag_error(L->d, c->loc, "%s requires a pointer or a tile of pointers, got %s", c->fname, describe(L, p));
    return 0;
}

/* A mask operand: i1 value or a bool constant. */
static bool arg_mask(Call *c, int i, Opnd *o)
{
    Lower *L = c->L;
    SVal m = c->a[i];
    if (m.kind == SV_CONST && m.c.kind == CK_BOOL) {
        memset(o, 0, sizeof *o);
        o->is_const = true;
        o->c = m.c;
        o->ty = type_scalar(DT_I1);
        return true;
    }
    if (m.kind == SV_VALUE && vty(L, m.v).dt == DT_I1) {
        memset(o, 0, sizeof *o);
        o->v = m.v;
        o->ty = vty(L, m.v);
        return true;
    }
    diag_error(L->d, c->loc, "%s: the mask must be a boolean (i1) tile or scalar, got %s", c->fname,
               describe(L, m));
    return false;
}

static SVal b_load(Call *c)
{
    static const char *const cache[] = {".ca", ".cg", ".cv", NULL};
    static const char *const evict[] = {"evict_last", "evict_first", NULL};
    Lower *L = c->L;
    ValId p = arg_pointer(c, 0);
    if (!p)
        return sv_error();
    Type pt = vty(L, p);
    bool has_mask = !absent(c, 1), has_other = !absent(c, 2);
    if (has_other && !has_mask)
        return fail(L, c->loc, "tl.load: 'other' cannot be given without 'mask'");
    if (c->has[3] && !(c->a[3].kind == SV_TUPLE && c->a[3].n == 0) && !is_none(c->a[3]))
        return fail(L, c->loc, "tl.load: 'boundary_check' is only valid with block pointers, which kad "
                    "does not support");
    const char *pad;
    if (!arg_str(c, 4, "", &pad))
        return sv_error();
    if (*pad)
        return fail(L, c->loc, "tl.load: 'padding_option' is only valid with block pointers, which kad "
                    "does not support");
    bool vol;
    if (!check_hint(c, 5, cache) || !check_hint(c, 6, evict) || !arg_bool(c, 7, false, &vol))
        return sv_error();
    Opnd m = {0}, o = {0}, po = {.v = p, .ty = pt};
    if (has_mask && !arg_mask(c, 1, &m))
        return sv_error();
    if (has_other && !opnd_of(L, c->a[2], true, &o, "tl.load 'other'", c->loc))
        return sv_error();
    if (has_other && o.ty.dt == DT_PTR)
        return fail(L, c->loc, "tl.load: 'other' must be a number or a tile of numbers");
    if (pt.rank == 0 && ((has_mask && m.ty.rank > 0) || (has_other && o.ty.rank > 0)))
        return fail(L, c->loc, "tl.load: mask and other cannot be tiles when the pointer is a scalar");
    int rank = pt.rank;
    int32_t shape[KAD_MAX_RANK];
    memcpy(shape, pt.shape, sizeof shape);
    if (has_mask && !bcast_shape(rank, shape, m.ty.rank, m.ty.shape, &rank, shape))
        return fail(L, c->loc, "tl.load: cannot broadcast the mask %s to the pointer shape %s",
                    tystr(L, m.ty), shapestr(L, pt.rank, pt.shape));
    if (has_other && !bcast_shape(rank, shape, o.ty.rank, o.ty.shape, &rank, shape))
        return fail(L, c->loc, "tl.load: cannot broadcast 'other' %s to the pointer shape %s",
                    tystr(L, o.ty), shapestr(L, pt.rank, pt.shape));
    Dtype elem = (Dtype)pt.elem;
    ValId args[3];
    int n = 0;
    args[n++] = materialize(L, &po, DT_PTR, rank, shape, c->loc);
    if (has_mask)
        args[n++] = materialize(L, &m, DT_I1, rank, shape, c->loc);
    if (has_other)
        args[n++] = materialize(L, &o, elem, rank, shape, c->loc);
    for (int i = 0; i < n; i++)
        if (!args[i])
            return sv_error();
    Type rt = type_tile(elem, rank, shape);
    Inst *in = ir_emit(L->f, L->b, OP_LOAD, args, n, &rt, 1, c->loc);
    in->flags = (uint16_t)((has_mask ? IF_HAS_MASK : 0) | (has_other ? IF_HAS_OTHER : 0));
    return sv_value(in->res[0]);
}

static SVal b_store(Call *c)
{
    static const char *const cache[] = {".wb", ".cg", ".cs", ".wt", NULL};
    static const char *const evict[] = {"evict_last", "evict_first", NULL};
    Lower *L = c->L;
    ValId p = arg_pointer(c, 0);
    if (!p)
        return sv_error();
    Type pt = vty(L, p);
    if (c->has[3] && !(c->a[3].kind == SV_TUPLE && c->a[3].n == 0) && !is_none(c->a[3]))
        return fail(L, c->loc, "tl.store: 'boundary_check' is only valid with block pointers, which kad "
                    "does not support");
    if (!check_hint(c, 4, cache) || !check_hint(c, 5, evict))
        return sv_error();
    bool has_mask = !absent(c, 2);
    Opnd v, m = {0};
    if (!opnd_of(L, c->a[1], true, &v, "tl.store value", c->loc))
        return sv_error();
    if (v.ty.dt == DT_PTR)
        return fail(L, c->loc, "tl.store: storing pointers is not supported");
    if (has_mask && !arg_mask(c, 2, &m))
        return sv_error();
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!bcast_shape(pt.rank, pt.shape, v.ty.rank, v.ty.shape, &rank, shape) ||
        !type_same_shape(pt, type_with_shape(pt, rank, shape)))
        return fail(L, c->loc, "tl.store: the value %s cannot be broadcast to the pointer shape %s",
                    tystr(L, v.ty), shapestr(L, pt.rank, pt.shape));
    if (has_mask && (!bcast_shape(pt.rank, pt.shape, m.ty.rank, m.ty.shape, &rank, shape) ||
                     !type_same_shape(pt, type_with_shape(pt, rank, shape))))
        return fail(L, c->loc, "tl.store: the mask %s cannot be broadcast to the pointer shape %s",
                    tystr(L, m.ty), shapestr(L, pt.rank, pt.shape));
    ValId args[3];
    int n = 0;
    args[n++] = p;
    args[n++] = materialize(L, &v, (Dtype)pt.elem, pt.rank, pt.shape, c->loc);
    if (has_mask)
        args[n++] = materialize(L, &m, DT_I1, pt.rank, pt.shape, c->loc);
    for (int i = 0; i < n; i++)
        if (!args[i])
            return sv_error();
    Inst *in = ir_emit(L->f, L->b, OP_STORE, args, n, NULL, 0, c->loc);
    in->flags = (uint16_t)(has_mask ? IF_HAS_MASK : 0);
    return sv_none();
}

static SVal b_atomic_add(Call *c)
{
    static const char *const sems[] = {"acquire", "release", "acq_rel", "relaxed", NULL};
    static const char *const scopes[] = {"gpu", "cta", "sys", NULL};
    Lower *L = c->L;
    ValId p = arg_pointer(c, 0);
    if (!p)
        return sv_error();
    Type pt = vty(L, p);
    Dtype elem = (Dtype)pt.elem;
    if (elem == DT_I16 || elem == DT_U16 || dtype_bits(elem) < 16)
        return fail(L, c->loc, "tl.atomic_add does not support %s", dtype_name(elem));
    if ((!absent(c, 3) && !check_hint(c, 3, sems)) || (!absent(c, 4) && !check_hint(c, 4, scopes)))
        return sv_error();
    bool has_mask = !absent(c, 2);
    Opnd v, m = {0};
    if (!opnd_of(L, c->a[1], true, &v, "tl.atomic_add value", c->loc))
        return sv_error();
    if (v.ty.dt == DT_PTR)
        return fail(L, c->loc, "tl.atomic_add: the value must be a number or a tile of numbers");
    if (has_mask && !arg_mask(c, 2, &m))
        return sv_error();
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!bcast_shape(pt.rank, pt.shape, v.ty.rank, v.ty.shape, &rank, shape) ||
        !type_same_shape(pt, type_with_shape(pt, rank, shape)))
        return fail(L, c->loc, "tl.atomic_add: the value %s cannot be broadcast to the pointer shape %s",
                    tystr(L, v.ty), shapestr(L, pt.rank, pt.shape));
    if (has_mask && (!bcast_shape(pt.rank, pt.shape, m.ty.rank, m.ty.shape, &rank, shape) ||
                     !type_same_shape(pt, type_with_shape(pt, rank, shape))))
        return fail(L, c->loc, "tl.atomic_add: the mask %s cannot be broadcast to the pointer shape %s",
                    tystr(L, m.ty), shapestr(L, pt.rank, pt.shape));
    ValId args[3];
    int n = 0;
    args[n++] = p;
    args[n++] = materialize(L, &v, elem, pt.rank, pt.shape, c->loc);
    if (has_mask)
        args[n++] = materialize(L, &m, DT_I1, pt.rank, pt.shape, c->loc);
    for (int i = 0; i < n; i++)
        if (!args[i])
            return sv_error();
    Type rt = type_tile(elem, pt.rank, pt.shape);
    Inst *in = ir_emit(L->f, L->b, OP_ATOMIC_ADD, args, n, &rt, 1, c->loc);
    in->flags = (uint16_t)(has_mask ? IF_HAS_MASK : 0);
    return sv_value(in->res[0]);
}

/* ------------------------------------------------------------------ */
/* Builtins: elementwise                                               */
/* ------------------------------------------------------------------ */

static SVal b_where(Call *c)
{
    Lower *L = c->L;
    Opnd k, a, b;
    SVal cond = c->a[0];
    if (cond.kind == SV_CONST && cond.c.kind == CK_BOOL) {
        memset(&k, 0, sizeof k);
        k.is_const = true, k.c = cond.c, k.ty = type_scalar(DT_I1);
    } else if (!opnd_of(L, cond, false, &k, "tl.where condition", c->loc)) {
        return sv_error();
    }
    if (k.ty.dt == DT_PTR)
        return fail(L, c->loc, "tl.where: the condition must be boolean, got %s", tystr(L, k.ty));
    if (!opnd_pair(L, c->a[1], c->a[2], true, &a, &b, "tl.where", c->loc))
        return sv_error();
    Dtype dt;
    if (a.ty.dt == DT_PTR || b.ty.dt == DT_PTR) {
        if (a.ty.dt != b.ty.dt || a.ty.elem != b.ty.elem)
            return fail(L, c->loc, "tl.where: cannot select between %s and %s", tystr(L, a.ty), tystr(L, b.ty));
        dt = DT_PTR;
    } else {
        dt = unify_dtype(L, &a, &b, false, "tl.where", c->loc);
    }
    if (dt == DT_VOID)
        return sv_error();
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!bcast_shape(a.ty.rank, a.ty.shape, b.ty.rank, b.ty.shape, &rank, shape) ||
        !bcast_shape(rank, shape, k.ty.rank, k.ty.shape, &rank, shape))
        return fail(L, c->loc, "tl.where: cannot broadcast shapes %s, %s and %s",
                    shapestr(L, k.ty.rank, k.ty.shape), shapestr(L, a.ty.rank, a.ty.shape),
                    shapestr(L, b.ty.rank, b.ty.shape));
    ValId vk = materialize(L, &k, DT_I1, rank, shape, c->loc);
    ValId va = materialize(L, &a, dt, rank, shape, c->loc);
    ValId vb = materialize(L, &b, dt, rank, shape, c->loc);
    if (!vk || !va || !vb)
        return sv_error();
    return sv_value(ir_op3(L->f, L->b, OP_WHERE, vty(L, va), vk, va, vb, c->loc));
}

/* PropagateNan.NONE is what kad's maximum/minimum implement. */
static bool check_propagate_nan(Call *c, int i)
{
    if (absent(c, i))
        return true;
    SVal x = c->a[i];
    if (x.kind == SV_BUILTIN && strcmp(x.qual, "triton.language.PropagateNan.NONE") == 0)
        return true;
    if (x.kind == SV_BUILTIN && strcmp(x.qual, "triton.language.PropagateNan.ALL") == 0)
        diag_error(c->L->d, c->loc, "%s: propagate_nan=tl.PropagateNan.ALL is not supported by kad yet",
                   c->fname);
    else
        diag_error(c->L->d, c->loc, "%s: propagate_nan must be tl.PropagateNan.NONE or ALL, got %s",
                   c->fname, describe(c->L, x));
    return false;
}

static SVal b_minmax2(Call *c)
{
    Lower *L = c->L;
    ValId x, y;
    if (!check_propagate_nan(c, 2) || !unify2(L, c->a[0], c->a[1], true, false, c->fname, c->loc, &x, &y))
        return sv_error();
    return sv_value(emit2(L, (OpKind)c->def->aux, vty(L, x), x, y, c->loc));
}

static SVal b_clamp(Call *c)
{
    Lower *L = c->L;
    ValId lo, hi, x, lo2, x2, hi2;
    if (!check_propagate_nan(c, 3))
        return sv_error();
    /* Triton's order: unify(min, max), then x with min, then x with max. */
    if (!unify2(L, c->a[1], c->a[2], true, false, c->fname, c->loc, &lo, &hi) ||
        !unify2(L, c->a[0], sv_value(lo), true, false, c->fname, c->loc, &x, &lo2) ||
        !unify2(L, sv_value(x), sv_value(hi), true, false, c->fname, c->loc, &x2, &hi2) ||
        !unify2(L, sv_value(x2), sv_value(lo2), true, false, c->fname, c->loc, &x2, &lo2))
        return sv_error();
    Type t = vty(L, x2);
    if (!dt_float((Dtype)t.dt))
        return fail(L, c->loc, "tl.clamp only supports floating-point tiles, got %s", tystr(L, t));
    ValId r = emit2(L, OP_MAXIMUM, t, x2, lo2, c->loc);
    return sv_value(emit2(L, OP_MINIMUM, t, r, hi2, c->loc));
}

/* Float-only math: Triton's _check_dtype(["fp32", "fp64"]) (fp32 only for
 * the *_rn variants and libdevice's fast_* functions). */
static ValId math_operand(Call *c, SVal x, bool fp32_only)
{
    Lower *L = c->L;
    ValId v = to_value(L, x, c->fname, c->loc);
    if (!v)
        return 0;
    Dtype dt = (Dtype)vty(L, v).dt;
    if (dt != DT_F32 && !(dt == DT_F64 && !fp32_only)) {
        diag_error(L->d, c->loc, "%s expects %s, got %s%s", c->fname, fp32_only ? "fp32" : "fp32 or fp64",
                   tystr(L, vty(L, v)),
                   dt == DT_F16 || dt == DT_BF16 ? " (cast with .to(tl.float32) first)" : "");
        return 0;
    }
    return v;
}

enum { MF_FP32_ONLY = 1 << 16 };

static SVal b_math1(Call *c)
{
    ValId x = math_operand(c, c->a[0], (c->def->aux & MF_FP32_ONLY) != 0);
    if (!x)
        return sv_error();
    return sv_value(emit1(c->L, (OpKind)(c->def->aux & 0xffff), vty(c->L, x), x, c->loc));
}

static SVal b_abs(Call *c)
{
    Lower *L = c->L;
    ValId x = to_value(L, c->a[0], c->fname, c->loc);
    if (!x)
        return sv_error();
    Type t = vty(L, x);
    if (t.dt == DT_PTR)
        return fail(L, c->loc, "%s does not accept pointers", c->fname);
    if (dt_unsigned((Dtype)t.dt))
        return sv_value(x); /* a no-op, as in Triton */
    return sv_value(emit1(L, OP_ABS, t, x, c->loc));
}

/* Unifies n operands pairwise as tensors (numbers are converted to tensors
 * first, as Triton's builtins do; then binary_op_type_legalization). */
static bool unify_n(Call *c, const SVal *in, int n, ValId *out)
{
    Lower *L = c->L;
    if (n == 1)
        return (out[0] = to_value(L, in[0], c->fname, c->loc)) != 0;
    SVal cur[3];
    for (int i = 0; i < n; i++)
        cur[i] = in[i];
    for (int round = 0; round < 2; round++)
        for (int i = 1; i < n; i++) {
            if (!unify2(L, cur[0], cur[i], false, false, c->fname, c->loc, &out[0], &out[i]))
                return false;
            cur[0] = sv_value(out[0]), cur[i] = sv_value(out[i]);
        }
    return true;
}

static SVal b_fma(Call *c)
{
    ValId v[3];
    if (!unify_n(c, c->a, 3, v))
        return sv_error();
    Type t = vty(c->L, v[0]);
    if (!dt_float((Dtype)t.dt))
        return fail(c->L, c->loc, "%s expects floating-point operands, got %s", c->fname, tystr(c->L, t));
    return sv_value(ir_op3(c->L->f, c->L->b, OP_FMA, t, v[0], v[1], v[2], c->loc));
}

static SVal b_umulhi(Call *c)
{
    Lower *L = c->L;
    for (int i = 0; i < 2; i++)
        if (c->a[i].kind == SV_VALUE) {
            Dtype dt = (Dtype)vty(L, c->a[i].v).dt;
            if (dt != DT_I32 && dt != DT_I64 && dt != DT_U32 && dt != DT_U64)
                return fail(L, c->loc, "tl.umulhi expects int32, int64, uint32 or uint64, got %s",
                            describe(L, c->a[i]));
        }
    ValId v[2];
    if (!unify_n(c, c->a, 2, v))
        return sv_error();
    return sv_value(emit2(L, OP_UMULHI, vty(L, v[0]), v[0], v[1], c->loc));
}

static SVal b_fdiv(Call *c)
{
    Lower *L = c->L;
    bool ieee;
    if (!arg_bool(c, 2, false, &ieee))
        return sv_error();
    ValId x = to_value(L, c->a[0], c->fname, c->loc), y = to_value(L, c->a[1], c->fname, c->loc);
    if (!x || !y)
        return sv_error();
    Type tx = vty(L, x), ty = vty(L, y);
    if (!dt_float((Dtype)tx.dt) || !dt_float((Dtype)ty.dt))
        return fail(L, c->loc, "both operands of %s must be floating-point, got %s and %s", c->fname,
                    tystr(L, tx), tystr(L, ty));
    if (tx.dt != ty.dt)
        return fail(L, c->loc, "%s does not promote: the operands are %s and %s", c->fname, tystr(L, tx),
                    tystr(L, ty));
    if (!unify2(L, sv_value(x), sv_value(y), false, true, c->fname, c->loc, &x, &y))
        return sv_error();
    return sv_value(emit2(L, OP_DIV, vty(L, x), x, y, c->loc));
}

static SVal b_div_rn(Call *c)
{
    ValId v[2];
    for (int i = 0; i < 2; i++)
        if (c->a[i].kind == SV_VALUE && vty(c->L, c->a[i].v).dt != DT_F32 &&
            !(c->def->aux && vty(c->L, c->a[i].v).dt == DT_F64))
            return fail(c->L, c->loc, "%s expects %s, got %s", c->fname, c->def->aux ? "fp32 or fp64" : "fp32",
                        describe(c->L, c->a[i]));
    if (!unify_n(c, c->a, 2, v))
        return sv_error();
    if (!dt_float((Dtype)vty(c->L, v[0]).dt))
        return fail(c->L, c->loc, "%s expects floating-point operands", c->fname);
    return sv_value(emit2(c->L, OP_DIV, vty(c->L, v[0]), v[0], v[1], c->loc));
}

static SVal b_sigmoid(Call *c)
{
    ValId x = math_operand(c, c->a[0], false);
    return x ? sv_value(emit1(c->L, OP_SIGMOID, vty(c->L, x), x, c->loc)) : sv_error();
}

static SVal b_cdiv(Call *c)
{
    Lower *L = c->L;
    SVal x = c->a[0], d = c->a[1];
    if (is_intc(x) && is_intc(d)) {
        if (d.c.i == 0)
            return fail(L, c->loc, "%s: division by zero", c->fname);
    }
    /* (x + div - 1) // div, with the operators' own rules (folds constants). */
    SVal t = lower_binop(L, BO_ADD, x, d, c->loc);
    t = lower_binop(L, BO_SUB, t, sv_int(1), c->loc);
    return lower_binop(L, BO_FLOORDIV, t, d, c->loc);
}

/* ------------------------------------------------------------------ */
/* Builtins: reductions and scans                                      */
/* ------------------------------------------------------------------ */

/* Reduces x along axis (absent: all axes) with op; keep_dims as Triton. */
static ValId reduce(Call *c, OpKind op, ValId x, SVal axis_sv, bool keep_dims)
{
    Lower *L = c->L;
    Type t = vty(L, x);
    if (t.rank == 0) {
        diag_error(L->d, c->loc, "%s requires a tile, got the scalar %s", c->fname, tystr(L, t));
        return 0;
    }
    int rank = t.rank, axis;
    bool all = is_none(axis_sv) || axis_sv.kind == SV_ERROR;
    if (all) {
        if (t.rank > 1) {
            int32_t n = (int32_t)type_numel(t);
            t = type_with_shape(t, 1, &n);
            x = emit1(L, OP_RESHAPE, t, x, c->loc);
        }
        axis = 0;
    } else {
        if (!is_intc(axis_sv)) {
            diag_error(L->d, c->loc, "%s: 'axis' must be a constexpr int or None, got %s", c->fname,
                       describe(L, axis_sv));
            return 0;
        }
        if (!wrap_axis(c, axis_sv.c.i, t.rank, &axis))
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
    ValId r = emit_attr(L, op, type_tile(rdt, n, shape), x, axis, keep_dims ? IF_KEEP_DIMS : 0, c->loc);
    if (all && keep_dims && rank > 1) {
        int32_t ones[KAD_MAX_RANK] = {1, 1, 1, 1};
        r = emit1(L, OP_RESHAPE, type_tile(rdt, rank, ones), r, c->loc);
    }
    return r;
}

static ValId reduce_operand(Call *c)
{
    ValId x = arg_tile(c, 0);
    if (x && vty(c->L, x).dt == DT_PTR) {
        diag_error(c->L->d, c->loc, "%s does not accept pointers", c->fname);
        return 0;
    }
    return x;
}

/* Triton's _pick_sum_dtype: ints narrower than 32 bits sum in (u)int32. */
static Dtype sum_dtype(Dtype dt)
{
    if (dt_int(dt) && dtype_bits(dt) < 32)
        return dt_unsigned(dt) ? DT_U32 : DT_I32;
    return dt;
}

static SVal b_sum(Call *c)
{
    ValId x = reduce_operand(c);
    bool keep;
    if (!x || !arg_bool(c, 2, false, &keep))
        return sv_error();
    Dtype dt = sum_dtype((Dtype)vty(c->L, x).dt);
    if (!absent(c, 3) && !arg_dtype(c, 3, &dt, NULL))
        return sv_error();
    x = cast_dt(c->L, x, dt, c->loc);
    ValId r = reduce(c, OP_SUM, x, c->has[1] ? c->a[1] : sv_none(), keep);
    return r ? sv_value(r) : sv_error();
}

/* tl.max / tl.min (aux: OP_MAX or OP_MIN), with return_indices. */
static SVal b_maxmin(Call *c)
{
    Lower *L = c->L;
    ValId x = reduce_operand(c);
    bool ret_idx, tie_left, keep;
    if (!x || !arg_bool(c, 2, false, &ret_idx) || !arg_bool(c, 3, true, &tie_left) || !arg_bool(c, 4, false, &keep))
        return sv_error();
    Dtype dt = (Dtype)vty(L, x).dt;
    if (dt == DT_BF16)
        dt = DT_F32;
    if (!ret_idx && dtype_bits(dt) < 32)
        dt = dt_float(dt) ? DT_F32 : DT_I32;
    x = cast_dt(L, x, dt, c->loc);
    SVal axis = c->has[1] ? c->a[1] : sv_none();
    ValId r = reduce(c, (OpKind)c->def->aux, x, axis, keep);
    if (!r)
        return sv_error();
    if (!ret_idx)
        return sv_value(r);
    ValId i = reduce(c, c->def->aux == OP_MAX ? OP_ARGMAX : OP_ARGMIN, x, axis, keep);
    if (!i)
        return sv_error();
    SVal two[2] = {sv_value(r), sv_value(i)};
    return sv_tuple(L, two, 2);
}

static SVal b_argmaxmin(Call *c)
{
    ValId x = reduce_operand(c);
    bool tie_left, keep;
    if (!x || !arg_bool(c, 2, true, &tie_left) || !arg_bool(c, 3, false, &keep))
        return sv_error();
    if (vty(c->L, x).dt == DT_BF16)
        x = cast_dt(c->L, x, DT_F32, c->loc);
    ValId r = reduce(c, (OpKind)c->def->aux, x, c->a[1], keep);
    return r ? sv_value(r) : sv_error();
}

static SVal b_scan(Call *c)
{
    Lower *L = c->L;
    ValId x = reduce_operand(c);
    bool rev;
    if (!x || !arg_bool(c, 2, false, &rev))
        return sv_error();
    Type t = vty(L, x);
    if (t.rank == 0)
        return fail(L, c->loc, "%s requires a tile, got the scalar %s", c->fname, tystr(L, t));
    Dtype dt = (Dtype)t.dt;
    if (dt == DT_BF16)
        dt = DT_F32;
    if (c->def->aux == OP_CUMSUM) {
        dt = sum_dtype(dt);
        if (!absent(c, 3) && !arg_dtype(c, 3, &dt, NULL))
            return sv_error();
    }
    int64_t a = 0;
    int axis;
    if (!absent(c, 1) && !arg_int(c, 1, &a))
        return sv_error();
    if (!wrap_axis(c, a, t.rank, &axis))
        return sv_error();
    x = cast_dt(L, x, dt, c->loc);
    return sv_value(emit_attr(L, (OpKind)c->def->aux, vty(L, x), x, axis, rev ? IF_REVERSE : 0, c->loc));
}

static SVal b_softmax(Call *c)
{
    Lower *L = c->L;
    ValId x = reduce_operand(c);
    bool keep, ieee;
    if (!x || !arg_bool(c, 2, false, &keep) || !arg_bool(c, 3, false, &ieee))
        return sv_error();
    SVal dim = absent(c, 1) ? sv_int(0) : c->a[1];
    /* Triton's definition: z = x - max(x, dim); num = exp(z); num / sum(num, dim) */
    Dtype dt = (Dtype)vty(L, x).dt;
    if (dt == DT_BF16)
        dt = DT_F32;
    if (dtype_bits(dt) < 32)
        dt = dt_float(dt) ? DT_F32 : DT_I32;
    ValId m = reduce(c, OP_MAX, cast_dt(L, x, dt, c->loc), dim, keep);
    if (!m)
        return sv_error();
    SVal z = lower_binop(L, BO_SUB, sv_value(x), sv_value(m), c->loc);
    if (z.kind == SV_ERROR)
        return z;
    ValId e = math_operand(c, z, false);
    if (!e)
        return sv_error();
    ValId num = emit1(L, OP_EXP, vty(L, e), e, c->loc);
    ValId den = reduce(c, OP_SUM, cast_dt(L, num, sum_dtype((Dtype)vty(L, num).dt), c->loc), dim, keep);
    ValId q, r;
    if (!den || !unify2(L, sv_value(num), sv_value(den), false, true, c->fname, c->loc, &q, &r))
        return sv_error();
    return sv_value(emit2(L, OP_DIV, vty(L, q), q, r, c->loc));
}

/* ------------------------------------------------------------------ */
/* Builtins: dot                                                       */
/* ------------------------------------------------------------------ */

static SVal b_dot(Call *c)
{
    Lower *L = c->L;
    ValId a = arg_tile(c, 0), b = a ? arg_tile(c, 1) : 0;
    if (!a || !b)
        return sv_error();
    Type ta = vty(L, a), tb = vty(L, b);
    if (ta.rank != tb.rank || (ta.rank != 2 && ta.rank != 3))
        return fail(L, c->loc, "tl.dot requires 2-D or 3-D tiles, got %s and %s", tystr(L, ta), tystr(L, tb));
    Dtype dt = (Dtype)ta.dt;
    if (dt != DT_I8 && dt != DT_U8 && dt != DT_F16 && dt != DT_BF16 && dt != DT_F32 && dt != DT_F64)
        return fail(L, c->loc, "tl.dot does not support %s operands", tystr(L, ta));
    if (ta.dt != tb.dt)
        return fail(L, c->loc, "tl.dot operands must have the same dtype, got %s and %s", tystr(L, ta),
                    tystr(L, tb));
    int r = ta.rank;
    if (ta.shape[r - 1] != tb.shape[r - 2])
        return fail(L, c->loc, "tl.dot: the inner dimensions of %s and %s do not match", tystr(L, ta),
                    tystr(L, tb));
    if (r == 3 && ta.shape[0] != tb.shape[0])
        return fail(L, c->loc, "tl.dot: the batch dimensions of %s and %s do not match", tystr(L, ta),
                    tystr(L, tb));
    /* precision */
    int prec = DP_DEFAULT;
    if (!absent(c, 3)) {
        const char *s;
        if (!arg_str(c, 3, "", &s))
            return sv_error();
        if (strcmp(s, "tf32") == 0)
            prec = DP_TF32;
        else if (strcmp(s, "tf32x3") == 0)
            prec = DP_TF32X3;
        else if (strcmp(s, "ieee") == 0)
            prec = DP_IEEE;
        else
            return fail(L, c->loc, "tl.dot: input_precision must be 'tf32', 'tf32x3' or 'ieee', got '%s'", s);
    }
    if (!absent(c, 4)) {
        bool tf32;
        if (!absent(c, 3))
            return fail(L, c->loc, "tl.dot: only one of input_precision and allow_tf32 may be given");
        if (!arg_bool(c, 4, true, &tf32))
            return sv_error();
        prec = tf32 ? DP_TF32 : DP_IEEE;
    }
    if (dt != DT_F32)
        prec = DP_DEFAULT; /* the precision only concerns fp32 inputs */
    if (!absent(c, 5)) {
        int64_t k;
        if (!arg_int(c, 5, &k))
            return sv_error();
    }
    Dtype out = DT_F32;
    if (!absent(c, 6) && !arg_dtype(c, 6, &out, NULL))
        return sv_error();
    Dtype rdt;
    if (dt_int(dt)) {
        if (dt != DT_I8)
            return fail(L, c->loc, "tl.dot: only int8 integer operands are supported");
        rdt = DT_I32;
    } else if (out == DT_BF16) {
        return fail(L, c->loc, "tl.dot: out_dtype=tl.bfloat16 is not supported; use tl.float32 and cast");
    } else if (dt == DT_F32 || dt == DT_BF16) {
        rdt = DT_F32;
    } else if (dt == DT_F64) {
        rdt = DT_F64;
    } else {
        if (out != DT_F16 && out != DT_F32)
            return fail(L, c->loc, "tl.dot: out_dtype must be tl.float32 or tl.float16 for fp16 operands");
        rdt = out;
    }
    int32_t shape[3];
    if (r == 3)
        shape[0] = ta.shape[0];
    shape[r - 2] = ta.shape[r - 2];
    shape[r - 1] = tb.shape[r - 1];
    Type rt = type_tile(rdt, r, shape);
    ValId acc;
    if (absent(c, 2)) {
        acc = emit_zero(L, rt, c->loc);
    } else {
        acc = arg_tile(c, 2);
        if (!acc)
            return sv_error();
        if (!type_eq(vty(L, acc), rt))
            return fail(L, c->loc, "tl.dot: the accumulator must be %s, got %s", tystr(L, rt),
                        tystr(L, vty(L, acc)));
    }
    ValId args[3] = {a, b, acc};
    Inst *in = ir_emit(L->f, L->b, OP_DOT, args, 3, &rt, 1, c->loc);
    in->ival = prec;
    return sv_value(in->res[0]);
}

/* ------------------------------------------------------------------ */
/* Builtins: shapes                                                    */
/* ------------------------------------------------------------------ */

static SVal permute(Call *c, ValId x, SVal dims)
{
    Lower *L = c->L;
    Type t = vty(L, x);
    int64_t d[KAD_MAX_RANK + 1];
    int n;
    if (!int_list(c, dims, false, d, KAD_MAX_RANK, &n, "the dims"))
        return sv_error();
    if (n != t.rank)
        return fail(L, c->loc, "%s: %d dims given for a tile of rank %d (%s)", c->fname, n, t.rank, tystr(L, t));
    bool seen[KAD_MAX_RANK] = {0};
    for (int i = 0; i < n; i++) {
        if (d[i] < 0 || d[i] >= n || seen[d[i]])
            return fail(L, c->loc, "%s: dims must be a permutation of 0..%d", c->fname, n - 1);
        seen[d[i]] = true;
    }
    int32_t shape[KAD_MAX_RANK];
    for (int i = 0; i < n; i++)
        shape[i] = t.shape[d[i]];
    Inst *in = ir_emit(L->f, L->b, OP_PERMUTE, &x, 1, (Type[]){type_with_shape(t, n, shape)}, 1, c->loc);
    for (int i = 0; i < n; i++)
        in->ints[i] = (int32_t)d[i];
    in->nints = n;
    return sv_value(in->res[0]);
}

static SVal b_permute(Call *c)
{
    ValId x = arg_tile(c, 0);
    if (!x)
        return sv_error();
    SVal dims = unwrap_iterable(c->has[1] ? c->a[1] : sv_tuple(c->L, NULL, 0));
    if (c->def->aux && dims.kind == SV_TUPLE && dims.n == 0) { /* trans(): swap the two axes */
        SVal d[2] = {sv_int(1), sv_int(0)};
        dims = sv_tuple(c->L, d, 2);
    }
    return permute(c, x, dims);
}

static SVal reshape(Call *c, ValId x, SVal shp)
{
    Lower *L = c->L;
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!arg_shape(c, unwrap_iterable(shp), &rank, shape))
        return sv_error();
    Type t = vty(L, x);
    if (rank == 0)
        return fail(L, c->loc, "%s: the shape must not be empty", c->fname);
    Type rt = type_with_shape(t, rank, shape);
    if (type_numel(rt) != type_numel(t))
        return fail(L, c->loc, "%s cannot change the number of elements: %s to %s", c->fname, tystr(L, t),
                    shapestr(L, rank, shape));
    if (type_same_shape(t, rt))
        return sv_value(x);
    return sv_value(emit1(L, OP_RESHAPE, rt, x, c->loc));
}

static SVal b_reshape(Call *c)
{
    ValId x = arg_tile(c, 0);
    bool reorder;
    if (!x || !arg_bool(c, 2, false, &reorder))
        return sv_error();
    if (!c->has[1])
        return fail(c->L, c->loc, "%s() missing required argument 'shape'", c->fname);
    return reshape(c, x, c->a[1]);
}

static SVal b_ravel(Call *c)
{
    ValId x = arg_tile(c, 0);
    bool reorder;
    if (!x || !arg_bool(c, 1, false, &reorder))
        return sv_error();
    SVal n = sv_int(type_numel(vty(c->L, x)));
    return reshape(c, x, sv_tuple(c->L, &n, 1));
}

static SVal b_broadcast_to(Call *c)
{
    Lower *L = c->L;
    ValId x = to_value(L, c->a[0], c->fname, c->loc);
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!x || !c->has[1] || !arg_shape(c, unwrap_iterable(c->a[1]), &rank, shape))
        return x && !c->has[1] ? fail(L, c->loc, "%s() missing required argument 'shape'", c->fname) : sv_error();
    Type t = vty(L, x);
    if (t.rank > 0) {
        if (t.rank != rank)
            return fail(L, c->loc, "%s: cannot broadcast %s to %s: the ranks differ (tl.broadcast_to does "
                        "not add axes)", c->fname, tystr(L, t), shapestr(L, rank, shape));
        for (int i = 0; i < rank; i++)
            if (t.shape[i] != shape[i] && t.shape[i] != 1)
                return fail(L, c->loc, "%s: cannot broadcast %s to %s", c->fname, tystr(L, t),
                            shapestr(L, rank, shape));
    }
    return sv_value(bcast_to(L, x, rank, shape, c->loc));
}

static SVal b_broadcast(Call *c)
{
    Lower *L = c->L;
    ValId x = to_value(L, c->a[0], c->fname, c->loc), y = x ? to_value(L, c->a[1], c->fname, c->loc) : 0;
    if (!x || !y)
        return sv_error();
    Type tx = vty(L, x), ty = vty(L, y);
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!bcast_shape(tx.rank, tx.shape, ty.rank, ty.shape, &rank, shape))
        return fail(L, c->loc, "cannot broadcast shapes %s and %s in %s", shapestr(L, tx.rank, tx.shape),
                    shapestr(L, ty.rank, ty.shape), c->fname);
    SVal two[2] = {sv_value(bcast_to(L, x, rank, shape, c->loc)), sv_value(bcast_to(L, y, rank, shape, c->loc))};
    return sv_tuple(L, two, 2);
}

static SVal b_expand_dims(Call *c)
{
    Lower *L = c->L;
    ValId x = to_value(L, c->a[0], c->fname, c->loc);
    if (!x)
        return sv_error();
    int64_t ax[KAD_MAX_RANK + 1];
    int n;
    if (!int_list(c, c->a[1], true, ax, KAD_MAX_RANK, &n, "the axis"))
        return sv_error();
    Type t = vty(L, x);
    int nd = t.rank + n;
    if (nd > KAD_MAX_RANK)
        return fail(L, c->loc, "%s: the result would have rank %d (kad allows up to %d axes)", c->fname, nd,
                    KAD_MAX_RANK);
    int axes[KAD_MAX_RANK];
    for (int i = 0; i < n; i++) {
        if (!wrap_axis(c, ax[i], nd, &axes[i]))
            return sv_error();
        for (int j = 0; j < i; j++)
            if (axes[j] == axes[i])
                return fail(L, c->loc, "%s: duplicate axis %d", c->fname, axes[i]);
    }
    for (int i = 0; i < n; i++) /* insert in increasing order */
        for (int j = i + 1; j < n; j++)
            if (axes[j] < axes[i]) {
                int s = axes[i];
                axes[i] = axes[j], axes[j] = s;
            }
    for (int i = 0; i < n; i++) {
        Type cur = vty(L, x);
        int32_t shape[KAD_MAX_RANK];
        for (int k = 0, j = 0; k <= cur.rank; k++)
            shape[k] = k == axes[i] ? 1 : cur.shape[j++];
        x = emit_attr(L, OP_EXPAND_DIMS, type_with_shape(cur, cur.rank + 1, shape), x, axes[i], 0, c->loc);
    }
    return sv_value(x);
}

/* ------------------------------------------------------------------ */
/* Builtins: conversions and hints                                     */
/* ------------------------------------------------------------------ */

static SVal cast_to(Call *c, SVal xs, Dtype dt, Dtype elem, bool bitcast, const char *rounding)
{
    Lower *L = c->L;
    Opnd o;
    if (!opnd_of(L, xs, false, &o, c->fname, c->loc))
        return sv_error();
    Dtype src = (Dtype)o.ty.dt;
    if (src == DT_PTR || dt == DT_PTR) {
        if (src == DT_PTR && dt == DT_PTR && o.ty.elem == elem)
            return sv_value(o.v);
        return fail(L, c->loc, "%s: casts involving pointers are not supported by kad yet (%s to %s)",
                    c->fname, tystr(L, o.ty), dt == DT_PTR ? "a pointer" : dtype_name(dt));
    }
    if (rounding) {
        bool down = dt_float(src) && dt_float(dt) && dtype_bits(dt) < dtype_bits(src);
        if (strcmp(rounding, "rtne") != 0 && strcmp(rounding, "rtz") != 0)
            return fail(L, c->loc, "%s: fp_downcast_rounding must be 'rtne' or 'rtz', got '%s'", c->fname,
                        rounding);
        if (!down)
            return fail(L, c->loc, "%s: fp_downcast_rounding is only valid for float downcasts, not %s to %s",
                        c->fname, dtype_name(src), dtype_name(dt));
        if (strcmp(rounding, "rtz") == 0)
            return fail(L, c->loc, "%s: fp_downcast_rounding='rtz' is not supported by kad yet", c->fname);
    }
    if (bitcast) {
        if (src == dt)
            return sv_value(o.is_const ? materialize(L, &o, src, 0, NULL, c->loc) : o.v);
        if (dtype_bits(src) != dtype_bits(dt))
            return fail(L, c->loc, "%s: cannot bitcast %s to %s: sizes differ (%d and %d bits)", c->fname,
                        dtype_name(src), dtype_name(dt), dtype_bits(src), dtype_bits(dt));
        ValId v = o.is_const ? materialize(L, &o, src, 0, NULL, c->loc) : o.v;
        return v ? sv_value(emit1(L, OP_BITCAST, type_with_dtype(vty(L, v), dt), v, c->loc)) : sv_error();
    }
    ValId v = materialize(L, &o, dt, o.ty.rank, o.ty.shape, c->loc);
    return v ? sv_value(v) : sv_error();
}

/* tl.cast(x, dtype, fp_downcast_rounding=None, bitcast=False) and x.to(...) */
static SVal b_cast(Call *c)
{
    Dtype dt, elem = DT_VOID;
    bool bitcast;
    const char *rounding = NULL;
    if (!arg_dtype(c, 1, &dt, &elem) || !arg_bool(c, 3, false, &bitcast))
        return sv_error();
    if (!absent(c, 2) && !arg_str(c, 2, NULL, &rounding))
        return sv_error();
    return cast_to(c, c->a[0], dt, elem, bitcast, rounding);
}

/* multiple_of / max_contiguous (aux: the op) and max_constancy (aux 0). */
static SVal b_hint(Call *c)
{
    Lower *L = c->L;
    ValId x = arg_tile(c, 0);
    int64_t v[KAD_MAX_RANK + 1];
    int n;
    if (!x || !int_list(c, c->a[1], true, v, KAD_MAX_RANK, &n, "the values"))
        return sv_error();
    Type t = vty(L, x);
    int want = c->def->aux == OP_MULTIPLE_OF && t.rank == 0 ? 1 : t.rank;
    if (n != want)
        return fail(L, c->loc, "%s: %d values given for %s (expected %d)", c->fname, n, tystr(L, t), want);
    for (int i = 0; i < n; i++)
        if (v[i] <= 0 || v[i] > INT32_MAX)
            return fail(L, c->loc, "%s: values must be positive int32 constants, got %lld", c->fname,
                        (long long)v[i]);
    if (!c->def->aux)
        return sv_value(x); /* max_constancy: accepted and ignored */
    Inst *in = ir_emit(L->f, L->b, (OpKind)c->def->aux, &x, 1, &t, 1, c->loc);
    for (int i = 0; i < n; i++)
        in->ints[i] = (int32_t)v[i];
    in->nints = n;
    return sv_value(in->res[0]);
}

/* ------------------------------------------------------------------ */
/* Builtins: assertions, random numbers, constexpr helpers              */
/* ------------------------------------------------------------------ */

static SVal b_static_assert(Call *c)
{
    const char *msg;
    if (!arg_str(c, 1, "", &msg))
        return sv_error();
    SVal x = c->a[0];
    if (x.kind == SV_VALUE)
        return fail(c->L, c->loc, "tl.static_assert needs a constexpr condition, got %s", describe(c->L, x));
    if (!sv_truthy(x))
        return fail(c->L, c->loc, "static_assert failed%s%s", *msg ? ": " : "", msg);
    return sv_none();
}

static SVal b_nothing(Call *c) { (void)c; return sv_none(); }

static SVal b_device_assert(Call *c)
{
    Lower *L = c->L;
    const char *msg;
    if (!arg_str(c, 1, "", &msg))
        return sv_error();
    SVal x = c->a[0];
    ValId v;
    if (x.kind == SV_CONST && x.c.kind != CK_STR && x.c.kind != CK_DTYPE) {
        if (c_truthy(x.c) && absent(c, 2))
            return sv_none();
        v = ir_const_int(L->f, L->b, type_scalar(DT_I1), c_truthy(x.c), c->loc);
    } else if (x.kind == SV_VALUE && vty(L, x.v).dt != DT_PTR) {
        v = cast_dt(L, x.v, DT_I1, c->loc);
    } else {
        return fail(L, c->loc, "tl.device_assert: the condition must be a tensor or a number, got %s",
                    describe(L, x));
    }
    if (!absent(c, 2)) { /* cond | ~mask */
        Opnd m;
        if (!arg_mask(c, 2, &m))
            return sv_error();
        ValId mv = m.is_const ? emit_const(L, m.c, type_scalar(DT_I1), c->loc) : m.v;
        ValId nm = emit1(L, OP_NOT, vty(L, mv), mv, c->loc), a, b;
        if (!unify2(L, sv_value(v), sv_value(nm), false, false, c->fname, c->loc, &a, &b))
            return sv_error();
        v = emit2(L, OP_OR, vty(L, a), a, b, c->loc);
    }
    Inst *in = ir_emit(L->f, L->b, OP_ASSERT, &v, 1, NULL, 0, c->loc);
    in->sattr = arena_strdup(L->a, msg);
    return sv_none();
}

static SVal b_rand(Call *c)
{
    Lower *L = c->L;
    if (!absent(c, 2)) {
        int64_t r;
        if (!arg_int(c, 2, &r))
            return sv_error();
        if (r != 10)
            return fail(L, c->loc, "%s: only the default n_rounds=10 is supported by kad", c->fname);
    }
    ValId seed = to_value(L, c->a[0], c->fname, c->loc), off = seed ? to_value(L, c->a[1], c->fname, c->loc) : 0;
    if (!seed || !off)
        return sv_error();
    Type ts = vty(L, seed), to = vty(L, off);
    if (ts.rank != 0 || !dt_int((Dtype)ts.dt) || ts.dt == DT_I1)
        return fail(L, c->loc, "%s: the seed must be an integer scalar, got %s", c->fname, tystr(L, ts));
    if (to.dt != DT_I32 && to.dt != DT_U32)
        return fail(L, c->loc, "%s: offsets must be int32 or uint32 (64-bit offsets are not supported by kad "
                    "yet), got %s", c->fname, tystr(L, to));
    Dtype rdt = c->def->aux == OP_RANDINT ? DT_U32 : DT_F32;
    return sv_value(emit2(L, (OpKind)c->def->aux, type_with_dtype(to, rdt), seed, off, c->loc));
}

static SVal b_constexpr(Call *c)
{
    SVal x = c->a[0];
    if (x.kind == SV_CONST || x.kind == SV_NONE || x.kind == SV_TUPLE)
        return x;
    return fail(c->L, c->loc, "tl.constexpr() needs a compile-time constant, got %s", describe(c->L, x));
}

static SVal b_loop_only(Call *c)
{
    return fail(c->L, c->loc, "%s can only be used as the iterable of a for loop", c->fname);
}

static SVal b_block_ptr(Call *c)
{
    return fail(c->L, c->loc, "block pointers (%s) are not supported by kad; use tiles of pointers "
                "(ptr + offsets) instead", c->fname);
}

static SVal b_next_pow2(Call *c)
{
    int64_t n;
    if (!arg_int(c, 0, &n))
        return sv_error();
    if (n > ((int64_t)1 << 62))
        return overflow(c->L, "next_power_of_2", c->loc);
    int64_t p = 1;
    while (p < n)
        p <<= 1;
    return sv_int(p);
}

/* ------------------------------------------------------------------ */
/* libdevice                                                           */
/* ------------------------------------------------------------------ */

enum {
    LD_ISFIN = OP_COUNT + 1, /* isfinited / finitef: not (isnan or isinf) */
    LD_LOG10,                /* log(x) / ln(10) */
    LD_I32_RESULT = 1 << 17, /* libdevice returns int32 (isnan, isinf) */
    LD_INT_OK = 1 << 18,     /* also accepts int32/int64 (abs) */
};

/* libdevice functions: arguments are converted to tensors; one dtype tuple
 * of fp32 or fp64 (a mismatch is promoted, as extern_elementwise does). */
static SVal b_libdevice(Call *c)
{
    Lower *L = c->L;
    int n = c->np, aux = c->def->aux;
    int op = aux & 0xffff;
    ValId v[3];
    if (!unify_n(c, c->a, n, v))
        return sv_error();
    Type t = vty(L, v[0]);
    Dtype dt = (Dtype)t.dt;
    bool ok = dt == DT_F32 || (dt == DT_F64 && !(aux & MF_FP32_ONLY)) ||
              ((aux & LD_INT_OK) && (dt == DT_I32 || dt == DT_I64));
    if (!ok)
        return fail(L, c->loc, "%s expects %s, got %s%s", c->fname,
                    aux & MF_FP32_ONLY ? "fp32" : (aux & LD_INT_OK) ? "fp32, fp64, int32 or int64" : "fp32 or fp64",
                    tystr(L, t), dt == DT_F16 || dt == DT_BF16 ? " (cast with .to(tl.float32) first)" : "");
    ValId r;
    if (op == LD_ISFIN) {
        Type bt = type_with_dtype(t, DT_I1);
        ValId a = emit1(L, OP_ISNAN, bt, v[0], c->loc), b = emit1(L, OP_ISINF, bt, v[0], c->loc);
        r = emit1(L, OP_NOT, bt, emit2(L, OP_OR, bt, a, b, c->loc), c->loc);
    } else if (op == LD_LOG10) {
        ValId lg = emit1(L, OP_LOG, t, v[0], c->loc);
        r = emit2(L, OP_DIV, t, lg, ir_const_float(L->f, L->b, t, log(10.0), c->loc), c->loc);
    } else if (op == OP_ABS && dt_int(dt)) {
        r = emit1(L, OP_ABS, t, v[0], c->loc);
    } else if (n == 1) {
        Type rt = (op == OP_ISNAN || op == OP_ISINF) ? type_with_dtype(t, DT_I1) : t;
        r = emit1(L, (OpKind)op, rt, v[0], c->loc);
    } else if (n == 2) {
        r = emit2(L, (OpKind)op, t, v[0], v[1], c->loc);
    } else {
        r = ir_op3(L->f, L->b, (OpKind)op, t, v[0], v[1], v[2], c->loc);
    }
    if (aux & LD_I32_RESULT)
        r = cast_dt(L, r, DT_I32, c->loc);
    return sv_value(r);
}

static SVal b_refuse(Call *c)
{
    static const struct { const char *name, *why; } why[] = {
        {"round", "rounds half away from zero, which kad's IR cannot express yet (libdevice.rint rounds "
                  "half to even)"},
        {"signbit", "is not supported by kad yet"},
        {"tanh", "does not exist in triton.language; use libdevice.tanh"},
    };
    for (size_t i = 0; i < sizeof why / sizeof why[0]; i++)
        if (strcmp(c->def->name, why[i].name) == 0)
            return fail(c->L, c->loc, "'%s' %s", c->fname, why[i].why);
    return fail(c->L, c->loc, "'%s' is not supported by kad yet", c->fname);
}

/* ------------------------------------------------------------------ */
/* Python builtins                                                     */
/* ------------------------------------------------------------------ */

static SVal b_py_minmax(Call *c)
{
    Lower *L = c->L;
    bool is_max = c->def->aux == OP_MAXIMUM;
    SVal args = c->has[0] ? c->a[0] : sv_tuple(L, NULL, 0);
    if (args.n == 1 && args.elts[0].kind == SV_TUPLE)
        args = args.elts[0];
    if (args.n == 0)
        return fail(L, c->loc, "%s() needs at least one argument", c->fname);
    bool all_const = true;
    for (int i = 0; i < args.n; i++)
        all_const = all_const && is_num(args.elts[i]);
    if (all_const) {
        SVal best = args.elts[0];
        for (int i = 1; i < args.n; i++) {
            SVal gt = fold_compare(L, is_max ? CO_GT : CO_LT, args.elts[i], best, c->loc);
            if (gt.kind == SV_ERROR)
                return gt;
            if (gt.c.i)
                best = args.elts[i];
        }
        return best;
    }
    if (args.n != 2)
        return fail(L, c->loc, "%s() of tensors takes exactly two arguments (it is tl.%s)", c->fname,
                    is_max ? "maximum" : "minimum");
    ValId x, y;
    if (!unify2(L, args.elts[0], args.elts[1], true, false, c->fname, c->loc, &x, &y))
        return sv_error();
    return sv_value(emit2(L, (OpKind)c->def->aux, vty(L, x), x, y, c->loc));
}

static SVal b_py_abs(Call *c)
{
    SVal x = c->a[0];
    if (x.kind == SV_CONST && x.c.kind == CK_FLOAT)
        return sv_float(fabs(x.c.f));
    if (is_intc(x)) {
        if (x.c.i == INT64_MIN)
            return overflow(c->L, "abs", c->loc);
        return sv_int(x.c.i < 0 ? -x.c.i : x.c.i);
    }
    return b_abs(c);
}

/* int(), float(), bool() of constants (aux: the ConstKind). */
static SVal b_py_conv(Call *c)
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
                return sv_float(f);
        } else {
            long long i = strtoll(s, &end, 10);
            while (*end == ' ' || *end == '\t')
                end++;
            if (end != s && !*end)
                return sv_int(i);
        }
        return fail(c->L, c->loc, "%s() cannot convert %s", c->fname, const_repr(c->L->a, x.c));
    }
    if (x.kind == SV_CONST && x.c.kind == CK_STR)
        return sv_bool(c_truthy(x.c));
    if (!is_num(x))
        return fail(c->L, c->loc, "%s() of %s is not supported; use x.to(dtype) on tensors", c->fname,
                    describe(c->L, x));
    switch (c->def->aux) {
    case CK_INT:
        if (x.c.kind == CK_FLOAT) {
            if (!isfinite(x.c.f) || fabs(x.c.f) >= 9.2e18)
                return fail(c->L, c->loc, "int() of %s does not fit in 64 bits", const_repr(c->L->a, x.c));
            return sv_int((int64_t)trunc(x.c.f));
        }
        return sv_int(x.c.i);
    case CK_FLOAT: return sv_float(cnum_f(x.c));
    default: return sv_bool(c_truthy(x.c));
    }
}

static SVal b_py_len(Call *c)
{
    SVal x = c->a[0];
    if (x.kind == SV_TUPLE)
        return sv_int(x.n);
    if (x.kind == SV_CONST && x.c.kind == CK_STR)
        return sv_int((int64_t)strlen(x.c.s));
    return fail(c->L, c->loc, "len() of %s is not supported", describe(c->L, x));
}

/* ------------------------------------------------------------------ */
/* Builtin tables                                                      */
/* ------------------------------------------------------------------ */

static const Builtin tl_builtins[] = {
    {"program_id", b_program_id, "axis", OP_PROGRAM_ID},
    {"num_programs", b_program_id, "axis", OP_NUM_PROGRAMS},
    {"arange", b_arange, "start,end", 0},
    {"zeros", b_zeros, "shape,dtype", 0},
    {"zeros_like", b_zeros_like, "input", 0},
    {"full", b_full, "shape,value,dtype", 0},
    {"load", b_load, "pointer,mask=,other=,boundary_check=,padding_option=,cache_modifier=,eviction_policy=,volatile=", 0},
    {"store", b_store, "pointer,value,mask=,boundary_check=,cache_modifier=,eviction_policy=", 0},
    {"atomic_add", b_atomic_add, "pointer,val,mask=,sem=,scope=", 0},
    {"where", b_where, "condition,x,y", 0},
    {"maximum", b_minmax2, "x,y,propagate_nan=", OP_MAXIMUM},
    {"minimum", b_minmax2, "x,y,propagate_nan=", OP_MINIMUM},
    {"clamp", b_clamp, "x,min,max,propagate_nan=", 0},
    {"exp", b_math1, "x", OP_EXP},
    {"exp2", b_math1, "x", OP_EXP2},
    {"log", b_math1, "x", OP_LOG},
    {"log2", b_math1, "x", OP_LOG2},
    {"sqrt", b_math1, "x", OP_SQRT},
    {"sqrt_rn", b_math1, "x", OP_SQRT | MF_FP32_ONLY},
    {"rsqrt", b_math1, "x", OP_RSQRT},
    {"sin", b_math1, "x", OP_SIN},
    {"cos", b_math1, "x", OP_COS},
    {"erf", b_math1, "x", OP_ERF},
    {"floor", b_math1, "x", OP_FLOOR},
    {"ceil", b_math1, "x", OP_CEIL},
    {"abs", b_abs, "x", 0},
    {"sigmoid", b_sigmoid, "x", 0},
    {"fma", b_fma, "x,y,z", 0},
    {"cdiv", b_cdiv, "x,div", 0},
    {"umulhi", b_umulhi, "x,y", 0},
    {"fdiv", b_fdiv, "x,y,ieee_rounding=", 0},
    {"div_rn", b_div_rn, "x,y", 0},
    {"sum", b_sum, "input,axis=,keep_dims=,dtype=", 0},
    {"max", b_maxmin, "input,axis=,return_indices=,return_indices_tie_break_left=,keep_dims=", OP_MAX},
    {"min", b_maxmin, "input,axis=,return_indices=,return_indices_tie_break_left=,keep_dims=", OP_MIN},
    {"argmax", b_argmaxmin, "input,axis,tie_break_left=,keep_dims=", OP_ARGMAX},
    {"argmin", b_argmaxmin, "input,axis,tie_break_left=,keep_dims=", OP_ARGMIN},
    {"cumsum", b_scan, "input,axis=,reverse=,dtype=", OP_CUMSUM},
    {"cumprod", b_scan, "input,axis=,reverse=", OP_CUMPROD},
    {"softmax", b_softmax, "x,dim=,keep_dims=,ieee_rounding=", 0},
    {"dot", b_dot, "input,other,acc=,input_precision=,allow_tf32=,max_num_imprecise_acc=,out_dtype=", 0},
    {"trans", b_permute, "input,*dims", 1},
    {"permute", b_permute, "input,*dims", 0},
    {"reshape", b_reshape, "input,*shape,can_reorder=", 0},
    {"view", b_reshape, "input,*shape", 0},
    {"ravel", b_ravel, "x,can_reorder=", 0},
    {"broadcast_to", b_broadcast_to, "input,*shape", 0},
    {"broadcast", b_broadcast, "input,other", 0},
    {"expand_dims", b_expand_dims, "input,axis", 0},
    {"cast", b_cast, "input,dtype,fp_downcast_rounding=,bitcast=", 0},
    {"multiple_of", b_hint, "input,values", OP_MULTIPLE_OF},
    {"max_contiguous", b_hint, "input,values", OP_MAX_CONTIGUOUS},
    {"max_constancy", b_hint, "input,values", 0},
    {"static_assert", b_static_assert, "cond,msg=", 0},
    {"static_print", b_nothing, "*values", 0},
    {"device_assert", b_device_assert, "cond,msg=,mask=", 0},
    {"debug_barrier", b_nothing, "", 0},
    {"rand", b_rand, "seed,offset,n_rounds=", OP_RAND},
    {"randn", b_rand, "seed,offset,n_rounds=", OP_RANDN},
    {"randint", b_rand, "seed,offset,n_rounds=", OP_RANDINT},
    {"constexpr", b_constexpr, "value", 0},
    {"static_range", b_loop_only, NULL, 0},
    {"range", b_loop_only, NULL, 0},
    {"make_block_ptr", b_block_ptr, NULL, 0},
    {"advance", b_block_ptr, NULL, 0},
    {"tanh", b_refuse, NULL, 0},
    {NULL, NULL, NULL, 0},
};

/* tl.math: the math functions of tl, plus max/min as elementwise ops. */
static const Builtin math_builtins[] = {
    {"exp", b_math1, "x", OP_EXP},
    {"exp2", b_math1, "x", OP_EXP2},
    {"log", b_math1, "x", OP_LOG},
    {"log2", b_math1, "x", OP_LOG2},
    {"sqrt", b_math1, "x", OP_SQRT},
    {"sqrt_rn", b_math1, "x", OP_SQRT | MF_FP32_ONLY},
    {"rsqrt", b_math1, "x", OP_RSQRT},
    {"sin", b_math1, "x", OP_SIN},
    {"cos", b_math1, "x", OP_COS},
    {"erf", b_math1, "x", OP_ERF},
    {"floor", b_math1, "x", OP_FLOOR},
    {"ceil", b_math1, "x", OP_CEIL},
    {"abs", b_abs, "x", 0},
    {"fma", b_fma, "x,y,z", 0},
    {"umulhi", b_umulhi, "x,y", 0},
    {"fdiv", b_fdiv, "x,y,ieee_rounding=", 0},
    {"div_rn", b_div_rn, "x,y", 0},
    {"max", b_minmax2, "x,y,propagate_nan=", OP_MAXIMUM},
    {"min", b_minmax2, "x,y,propagate_nan=", OP_MINIMUM},
    {"clamp", b_clamp, "x,min,max,propagate_nan=", 0},
    {"cdiv", b_cdiv, "x,div", 0},
    {"sigmoid", b_sigmoid, "x", 0},
    {"softmax", b_softmax, "x,dim=,keep_dims=,ieee_rounding=", 0},
    {NULL, NULL, NULL, 0},
};

static const Builtin libdevice_builtins[] = {
    {"exp", b_libdevice, "arg0", OP_EXP},
    {"exp2", b_libdevice, "arg0", OP_EXP2},
    {"expm1", b_libdevice, "arg0", OP_EXPM1},
    {"log", b_libdevice, "arg0", OP_LOG},
    {"log2", b_libdevice, "arg0", OP_LOG2},
    {"log1p", b_libdevice, "arg0", OP_LOG1P},
    {"log10", b_libdevice, "arg0", LD_LOG10},
    {"sqrt", b_libdevice, "arg0", OP_SQRT},
    {"sqrt_rn", b_libdevice, "arg0", OP_SQRT},
    {"rsqrt", b_libdevice, "arg0", OP_RSQRT},
    {"tanh", b_libdevice, "arg0", OP_TANH},
    {"sinh", b_libdevice, "arg0", OP_SINH},
    {"cosh", b_libdevice, "arg0", OP_COSH},
    {"tan", b_libdevice, "arg0", OP_TAN},
    {"sin", b_libdevice, "arg0", OP_SIN},
    {"cos", b_libdevice, "arg0", OP_COS},
    {"asin", b_libdevice, "arg0", OP_ASIN},
    {"acos", b_libdevice, "arg0", OP_ACOS},
    {"atan", b_libdevice, "arg0", OP_ATAN},
    {"erf", b_libdevice, "arg0", OP_ERF},
    {"floor", b_libdevice, "arg0", OP_FLOOR},
    {"ceil", b_libdevice, "arg0", OP_CEIL},
    {"trunc", b_libdevice, "arg0", OP_TRUNC},
    {"rint", b_libdevice, "arg0", OP_RINT},
    {"nearbyint", b_libdevice, "arg0", OP_RINT},
    {"fabs", b_libdevice, "arg0", OP_ABS},
    {"abs", b_libdevice, "arg0", OP_ABS | LD_INT_OK},
    {"isnan", b_libdevice, "arg0", OP_ISNAN | LD_I32_RESULT},
    {"isinf", b_libdevice, "arg0", OP_ISINF | LD_I32_RESULT},
    {"isfinited", b_libdevice, "arg0", LD_ISFIN | LD_I32_RESULT},
    {"finitef", b_libdevice, "arg0", LD_ISFIN | LD_I32_RESULT | MF_FP32_ONLY},
    {"fast_expf", b_libdevice, "arg0", OP_EXP | MF_FP32_ONLY},
    {"fast_logf", b_libdevice, "arg0", OP_LOG | MF_FP32_ONLY},
    {"pow", b_libdevice, "arg0,arg1", OP_POW},
    {"atan2", b_libdevice, "arg0,arg1", OP_ATAN2},
    {"fmax", b_libdevice, "arg0,arg1", OP_MAXIMUM},
    {"fmin", b_libdevice, "arg0,arg1", OP_MINIMUM},
    {"div_rn", b_libdevice, "arg0,arg1", OP_DIV},
    {"fma", b_libdevice, "arg0,arg1,arg2", OP_FMA},
    {"round", b_refuse, NULL, 0},
    {"signbit", b_refuse, NULL, 0},
    {NULL, NULL, NULL, 0},
};

static const Builtin triton_builtins[] = {
    {"cdiv", b_cdiv, "x,div", 0},
    {"next_power_of_2", b_next_pow2, "n", 0},
    {NULL, NULL, NULL, 0},
};

static const Builtin py_builtins[] = {
    {"min", b_py_minmax, "*args", OP_MINIMUM},
    {"max", b_py_minmax, "*args", OP_MAXIMUM},
    {"abs", b_py_abs, "x", 0},
    {"int", b_py_conv, "x", CK_INT},
    {"float", b_py_conv, "x", CK_FLOAT},
    {"bool", b_py_conv, "x", CK_BOOL},
    {"len", b_py_len, "x", 0},
    {"print", b_nothing, "*args", 0},
    {"range", b_loop_only, NULL, 0},
    {NULL, NULL, NULL, 0},
};

/* Tensor methods: x.NAME(...) is tl.NAME(x, ...). */
static const char *const tensor_methods[] = {
    "reshape", "view", "broadcast_to", "expand_dims", "trans", "permute", "sum", "max", "min",
    "argmax", "argmin", "cumsum", "cumprod", "softmax", "sigmoid", "exp", "exp2", "log", "log2",
    "cos", "sin", "sqrt", "sqrt_rn", "rsqrt", "abs", "erf", "floor", "ceil", "cdiv", "ravel",
    "cast", NULL,
};

static const Builtin to_method = {"to", b_cast, "input,dtype,fp_downcast_rounding=,bitcast=", 0};

static const Builtin *find_in(const Builtin *tab, const char *name)
{
    for (; tab->name; tab++)
        if (strcmp(tab->name, name) == 0)
            return tab;
    return NULL;
}

/* Namespaces kad knows, and the table of each. */
static const struct {
    const char *prefix; /* with the trailing dot */
    const Builtin *tab;
} namespaces[] = {
    {"triton.language.extra.cuda.libdevice.", libdevice_builtins},
    {"triton.language.extra.libdevice.", libdevice_builtins},
    {"triton.language.math.", math_builtins},
    {"triton.language.", tl_builtins},
    {"triton.", triton_builtins},
    {"builtins.", py_builtins},
};

static const char *const module_names[] = {
    "triton", "triton.language", "triton.language.math", "triton.language.extra",
    "triton.language.extra.cuda", "triton.language.extra.libdevice",
    "triton.language.extra.cuda.libdevice", "triton.language.PropagateNan", NULL,
};

/* The builtin a qualified name denotes, or NULL. */
static const Builtin *find_builtin(const char *qual)
{
    for (size_t i = 0; i < sizeof namespaces / sizeof namespaces[0]; i++) {
        size_t n = strlen(namespaces[i].prefix);
        if (strncmp(qual, namespaces[i].prefix, n) == 0) {
            const char *rest = qual + n;
            return strchr(rest, '.') ? NULL : find_in(namespaces[i].tab, rest);
        }
    }
    return NULL;
}

static Dtype dtype_by_triton_name(const char *s)
{
    for (int t = DT_I1; t < DT_PTR; t++)
        if (strcmp(dtype_triton_name((Dtype)t), s) == 0)
            return (Dtype)t;
    return DT_VOID;
}

/* ------------------------------------------------------------------ */
/* The interface (kad_int.h, "sema_ops.c")                             */
/* ------------------------------------------------------------------ */

SVal lower_global(Lower *L, const char *qual, Loc loc)
{
    for (int i = 0; module_names[i]; i++)
        if (strcmp(qual, module_names[i]) == 0)
            return (SVal){.kind = SV_MODULE, .qual = arena_strdup(L->a, qual)};
    if (strcmp(qual, "triton.language.PropagateNan.NONE") == 0 ||
        strcmp(qual, "triton.language.PropagateNan.ALL") == 0 || strcmp(qual, "triton.jit") == 0)
        return sv_builtin(L, qual);
    const char *tl = "triton.language.";
    if (strncmp(qual, tl, strlen(tl)) == 0 && !strchr(qual + strlen(tl), '.')) {
        const char *name = qual + strlen(tl);
        Dtype dt = dtype_by_triton_name(name);
        if (dt != DT_VOID)
            return sv_dtype(dt);
        if (strncmp(name, "float8", 6) == 0 || strcmp(name, "void") == 0)
            return fail(L, loc, "'tl.%s' is not supported by kad yet", name);
        if (strcmp(name, "pointer_type") == 0)
            return fail(L, loc, "'tl.pointer_type' is not supported by kad yet");
    }
    if (find_builtin(qual))
        return sv_builtin(L, qual);
    return fail(L, loc, "'%s' is not supported by kad yet", user_name(L->a, qual));
}

/* Attributes of a dtype constant. */
static SVal dtype_attr(Lower *L, SVal x, const char *name, Loc loc)
{
    Dtype dt = x.c.dt;
    if (strcmp(name, "element_ty") == 0) {
        if (dt != DT_PTR)
            return fail(L, loc, "%s has no attribute 'element_ty' (it is not a pointer type)", describe(L, x));
        return sv_dtype((Dtype)x.c.i);
    }
    if (strcmp(name, "scalar") == 0)
        return x;
    if (strcmp(name, "primitive_bitwidth") == 0)
        return sv_int(dtype_bits(dt));
    if (strcmp(name, "int_bitwidth") == 0 && dt_int(dt))
        return sv_int(dtype_bits(dt));
    if (strcmp(name, "name") == 0) {
        static const char *const tn[DT_COUNT] = {
            [DT_I1] = "int1", [DT_I8] = "int8", [DT_U8] = "uint8", [DT_I16] = "int16", [DT_U16] = "uint16",
            [DT_I32] = "int32", [DT_U32] = "uint32", [DT_I64] = "int64", [DT_U64] = "uint64",
            [DT_F16] = "fp16", [DT_BF16] = "bf16", [DT_F32] = "fp32", [DT_F64] = "fp64"};
        if (dt != DT_PTR && tn[dt])
            return sv_str(tn[dt]);
    }
    if (strncmp(name, "is_", 3) == 0)
        return sv_method(L, x, name);
    return fail(L, loc, "%s has no attribute '%s' in kad", describe(L, x), name);
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
        Type t = vty(L, x.v);
        if (strcmp(name, "dtype") == 0 || (strcmp(name, "type") == 0 && t.rank == 0))
            return t.dt == DT_PTR ? sv_ptr_dtype((Dtype)t.elem) : sv_dtype((Dtype)t.dt);
        if (strcmp(name, "type") == 0)
            return fail(L, loc, "'.type' of a tile is not supported by kad; use '.dtype'");
        if (strcmp(name, "shape") == 0) {
            SVal e[KAD_MAX_RANK];
            for (int i = 0; i < t.rank; i++)
                e[i] = sv_int(t.shape[i]);
            return sv_tuple(L, e, t.rank);
        }
        if (strcmp(name, "numel") == 0)
            return sv_int(type_numel(t));
        if (strcmp(name, "T") == 0) {
            if (t.rank != 2)
                return fail(L, loc, "'.T' requires a 2-D tile, got %s", tystr(L, t));
            Call c = {.L = L, .fname = "x.T", .loc = loc};
            SVal d[2] = {sv_int(1), sv_int(0)};
            return permute(&c, x.v, sv_tuple(L, d, 2));
        }
        if (strcmp(name, "to") == 0)
            return sv_method(L, x, name);
        for (int i = 0; tensor_methods[i]; i++)
            if (strcmp(tensor_methods[i], name) == 0)
                return sv_method(L, x, name);
        return fail(L, loc, "'x.%s' (attribute of a %s tensor) is not supported by kad yet", name, tystr(L, t));
    }
    default: break;
    }
    return fail(L, loc, "%s has no attribute '%s'", describe(L, x), name);
}

/* Methods of dtype constants: is_floating(), is_int(), ... */
static SVal dtype_method(Lower *L, SVal self, const char *name, int nargs, int nkw, Loc loc)
{
    Dtype d = self.c.dt;
    if (nargs || nkw)
        return fail(L, loc, "dtype.%s() takes no arguments", name);
    static const struct { const char *name; int what; } m[] = {
        {"is_floating", 0}, {"is_int", 1}, {"is_int_signed", 2}, {"is_int_unsigned", 3}, {"is_ptr", 4},
        {"is_bool", 5}, {"is_standard_floating", 0}, {"is_fp16", 10 + DT_F16}, {"is_bf16", 10 + DT_BF16},
        {"is_fp32", 10 + DT_F32}, {"is_fp64", 10 + DT_F64}, {"is_int1", 10 + DT_I1}, {"is_int8", 10 + DT_I8},
        {"is_int16", 10 + DT_I16}, {"is_int32", 10 + DT_I32}, {"is_int64", 10 + DT_I64},
        {"is_uint8", 10 + DT_U8}, {"is_uint16", 10 + DT_U16}, {"is_uint32", 10 + DT_U32},
        {"is_uint64", 10 + DT_U64},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        if (strcmp(m[i].name, name) != 0)
            continue;
        switch (m[i].what) {
        case 0: return sv_bool(dt_float(d));
        case 1: return sv_bool(dt_int(d));
        case 2: return sv_bool(dt_int(d) && !dt_unsigned(d));
        case 3: return sv_bool(dt_int(d) && dt_unsigned(d));
        case 4: return sv_bool(d == DT_PTR);
        case 5: return sv_bool(d == DT_I1);
        default: return sv_bool((int)d == m[i].what - 10);
        }
    }
    return fail(L, loc, "dtype.%s() is not supported by kad yet", name);
}

SVal lower_call(Lower *L, SVal fn, const SVal *args, int nargs, const char *const *kwnames, const SVal *kwvals,
                int nkw, Loc loc)
{
    if (fn.kind == SV_ERROR)
        return fn;
    const Builtin *def = NULL;
    const SVal *self = NULL;
    const char *fname;
    if (fn.kind == SV_BUILTIN) {
        def = find_builtin(fn.qual);
        fname = user_name(L->a, fn.qual);
        if (!def)
            return fail(L, loc, "'%s' is not callable here", fname);
    } else if (fn.kind == SV_METHOD) {
        SVal s = fn.elts[0];
        if (s.kind == SV_CONST && s.c.kind == CK_DTYPE)
            return dtype_method(L, s, fn.qual, nargs, nkw, loc);
        self = &fn.elts[0];
        fname = arena_printf(L->a, "x.%s", fn.qual);
        def = strcmp(fn.qual, "to") == 0 ? &to_method : find_in(tl_builtins, fn.qual);
        ASSERT(def);
        if (!def)
            return fail(L, loc, "'%s' is not supported by kad yet", fname);
    } else {
        return fail(L, loc, "%s is not callable", describe(L, fn));
    }
    Call c;
    if (!def->params) {
        c = (Call){.L = L, .def = def, .fname = fname, .loc = loc};
        return def->fn(&c);
    }
    if (!bind(L, &c, def, fname, self, args, nargs, kwnames, kwvals, nkw, loc))
        return sv_error();
    for (int i = 0; i < c.np; i++)
        if (c.has[i] && c.a[i].kind == SV_ERROR)
            return sv_error();
    return def->fn(&c);
}

SVal lower_binop(Lower *L, BinOp op, SVal x, SVal y, Loc loc)
{
    if (x.kind == SV_ERROR || y.kind == SV_ERROR)
        return sv_error();
    if (x.kind == SV_VALUE || y.kind == SV_VALUE)
        return binop_values(L, op, x, y, loc);
    return fold_binop(L, op, x, y, loc);
}

SVal lower_unop(Lower *L, UnOp op, SVal x, Loc loc)
{
    if (x.kind == SV_ERROR)
        return x;
    if (op == UO_NOT && x.kind != SV_VALUE)
        return sv_bool(!sv_truthy(x));
    if (x.kind == SV_CONST && is_num(x)) {
        switch (op) {
        case UO_POS: return x.c.kind == CK_BOOL ? sv_int(x.c.i) : x;
        case UO_NEG:
            if (x.c.kind == CK_FLOAT)
                return sv_float(-x.c.f);
            if (x.c.i == INT64_MIN)
                return overflow(L, "-", loc);
            return sv_int(-x.c.i);
        case UO_INVERT:
            if (x.c.kind == CK_FLOAT)
                return fail(L, loc, "bad operand type for unary '~': float");
            return sv_int(~x.c.i);
        default: break;
        }
    }
    if (x.kind != SV_VALUE) {
        static const char *const sym[] = {"-", "+", "~", "not"};
        return fail(L, loc, "bad operand type for unary '%s': %s", sym[op], describe(L, x));
    }
    Type t = vty(L, x.v);
    switch (op) {
    case UO_POS: return x;
    case UO_NEG:
        if (t.dt == DT_PTR)
            return fail(L, loc, "cannot negate a pointer (%s)", tystr(L, t));
        return sv_value(emit1(L, OP_NEG, t, x.v, loc));
    case UO_INVERT:
        if (!dt_int((Dtype)t.dt))
            return fail(L, loc, "'~' requires an integer or boolean tile, got %s", tystr(L, t));
        return sv_value(emit1(L, OP_NOT, t, x.v, loc));
    case UO_NOT:
        if (t.dt != DT_I1)
            return fail(L, loc, "'not' requires a boolean (i1) value, got %s; compare explicitly (x == 0)",
                        tystr(L, t));
        return sv_value(emit1(L, OP_NOT, t, x.v, loc));
    }
    return sv_error();
}

SVal lower_compare(Lower *L, CmpOp op, SVal x, SVal y, Loc loc)
{
    if (x.kind == SV_ERROR || y.kind == SV_ERROR)
        return sv_error();
    if (x.kind != SV_VALUE && y.kind != SV_VALUE)
        return fold_compare(L, op, x, y, loc);
    if (op == CO_IS || op == CO_ISNOT) {
        /* a tensor is never None (nor any constant) */
        if (is_none(x) || is_none(y) || x.kind != y.kind)
            return sv_bool(op == CO_ISNOT);
        return fail(L, loc, "'%s' between tensors is not supported", cmp_sym[op]);
    }
    if (op == CO_IN || op == CO_NOTIN)
        return fail(L, loc, "'%s' is not supported on tensors", cmp_sym[op]);
    char ctx[16];
    snprintf(ctx, sizeof ctx, "'%s'", cmp_sym[op]);
    Opnd a, b;
    if (!opnd_of(L, x, false, &a, ctx, loc) || !opnd_of(L, y, false, &b, ctx, loc))
        return sv_error();
    if (a.ty.dt == DT_PTR || b.ty.dt == DT_PTR)
        return fail(L, loc, "comparing pointers is not supported by kad yet (%s %s %s)", tystr(L, a.ty),
                    cmp_sym[op], tystr(L, b.ty));
    Dtype dt = unify_dtype(L, &a, &b, false, ctx, loc);
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (dt == DT_VOID || !opnd_shape(L, &a, &b, &rank, shape, ctx, loc))
        return sv_error();
    ValId va = materialize(L, &a, dt, rank, shape, loc), vb = materialize(L, &b, dt, rank, shape, loc);
    if (!va || !vb)
        return sv_error();
    static const OpKind ops[] = {OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE};
    return sv_value(emit2(L, ops[op], type_tile(DT_I1, rank, shape), va, vb, loc));
}

SVal lower_boolop(Lower *L, BoolOpKind op, SVal x, SVal y, Loc loc)
{
    if (x.kind == SV_ERROR || y.kind == SV_ERROR)
        return sv_error();
    bool is_and = op == BL_AND;
    if (x.kind != SV_VALUE && y.kind != SV_VALUE) /* Python: returns an operand */
        return (sv_truthy(x) == is_and) ? y : x;
    /* A constant operand decides or drops out, as in Triton's visit_BoolOp. */
    if (x.kind != SV_VALUE || y.kind != SV_VALUE) {
        SVal k = x.kind == SV_VALUE ? y : x, v = x.kind == SV_VALUE ? x : y;
        if (k.kind == SV_TUPLE || k.kind == SV_CONST || is_none(k)) {
            if (sv_truthy(k) != is_and)
                return sv_bool(!is_and);
            if (vty(L, v.v).dt != DT_I1)
                return fail(L, loc, "'%s' requires boolean (i1) operands, got %s; use a comparison",
                            is_and ? "and" : "or", tystr(L, vty(L, v.v)));
            return v;
        }
        return fail(L, loc, "'%s' of %s and %s is not supported", is_and ? "and" : "or", describe(L, x),
                    describe(L, y));
    }
    Type tx = vty(L, x.v), ty = vty(L, y.v);
    if (tx.dt != DT_I1 || ty.dt != DT_I1)
        return fail(L, loc, "'%s' requires boolean (i1) operands, got %s and %s; use a comparison or '%s'",
                    is_and ? "and" : "or", tystr(L, tx), tystr(L, ty), is_and ? "&" : "|");
    ValId a, b;
    if (!unify2(L, x, y, false, false, is_and ? "'and'" : "'or'", loc, &a, &b))
        return sv_error();
    return sv_value(emit2(L, is_and ? OP_AND : OP_OR, vty(L, a), a, b, loc));
}

SVal lower_subscript(Lower *L, SVal x, const SVal *idx, int n, Loc loc)
{
    if (x.kind == SV_ERROR)
        return x;
    for (int i = 0; i < n; i++)
        if (idx[i].kind == SV_ERROR)
            return sv_error();
    if (x.kind == SV_TUPLE) {
        if (n != 1)
            return fail(L, loc, "tuples take exactly one index, got %d", n);
        if (idx[0].kind == SV_SLICE)
            return x;
        if (!is_intc(idx[0]))
            return fail(L, loc, "tuple indices must be constexpr ints, got %s", describe(L, idx[0]));
        int64_t i = idx[0].c.i;
        if (i < 0)
            i += x.n;
        if (i < 0 || i >= x.n)
            return fail(L, loc, "tuple index %lld is out of range for a tuple of %d elements",
                        (long long)idx[0].c.i, x.n);
        return x.elts[i];
    }
    if (x.kind != SV_VALUE)
        return fail(L, loc, "%s is not subscriptable", describe(L, x));
    /* Triton's tensor.__getitem__: None inserts an axis at its position;
     * ':' keeps an axis. */
    Type t = vty(L, x.v);
    int kept = 0, added = 0;
    for (int i = 0; i < n; i++) {
        if (is_none(idx[i]))
            added++;
        else if (idx[i].kind == SV_SLICE)
            kept++;
        else
            return fail(L, loc, "tile indexing supports only None and ':', got %s", describe(L, idx[i]));
    }
    if (kept > t.rank)
        return fail(L, loc, "too many indices for %s: %d ':' for %d axes", tystr(L, t), kept, t.rank);
    if (t.rank + added > KAD_MAX_RANK)
        return fail(L, loc, "indexing would give a tile of rank %d (kad allows up to %d axes)", t.rank + added,
                    KAD_MAX_RANK);
    ValId v = x.v;
    for (int i = 0; i < n; i++) {
        if (!is_none(idx[i]))
            continue;
        Type cur = vty(L, v);
        int32_t shape[KAD_MAX_RANK];
        for (int k = 0, j = 0; k <= cur.rank; k++)
            shape[k] = k == i ? 1 : cur.shape[j++];
        v = emit_attr(L, OP_EXPAND_DIMS, type_with_shape(cur, cur.rank + 1, shape), v, i, 0, loc);
    }
    return sv_value(v);
}

ValId lower_value(Lower *L, SVal x, Loc loc)
{
    if (x.kind == SV_ERROR)
        return 0;
    if (x.kind == SV_VALUE)
        return x.v;
    if (is_num(x))
        return emit_const(L, x.c, type_scalar(const_dtype(x.c)), loc);
    diag_error(L->d, loc, "expected a tensor or scalar, got %s", describe(L, x));
    return 0;
}

ValId lower_convert(Lower *L, ValId v, Type ty, Loc loc)
{
    if (!v)
        return 0;
    Type t = vty(L, v);
    if (type_eq(t, ty))
        return v;
    if (t.dt == DT_PTR || ty.dt == DT_PTR) {
        if (t.dt != ty.dt || t.elem != ty.elem) {
            diag_error(L->d, loc, "cannot convert a value of type %s to %s", tystr(L, t), tystr(L, ty));
            return 0;
        }
    }
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (t.rank > ty.rank || !bcast_shape(t.rank, t.shape, ty.rank, ty.shape, &rank, shape) ||
        !type_same_shape(ty, type_with_shape(ty, rank, shape))) {
        diag_error(L->d, loc, "cannot convert a value of type %s to %s", tystr(L, t), tystr(L, ty));
        return 0;
    }
    if (ty.dt != DT_PTR)
        v = cast_dt(L, v, (Dtype)ty.dt, loc);
    return bcast_to(L, v, ty.rank, ty.shape, loc);
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
        *cval = sv_truthy(x);
        return true;
    }
    Type t = vty(L, x.v);
    if (t.rank != 0) {
        diag_error(L->d, loc, "condition must be a scalar, got %s", tystr(L, t));
        return false;
    }
    if (t.dt == DT_PTR) {
        diag_error(L->d, loc, "a pointer cannot be a condition");
        return false;
    }
    *v = cast_dt(L, x.v, DT_I1, loc);
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
        if (c.dt == DT_PTR)
            buf_printf(&b, "tl.pointer_type(tl.%s)", dtype_triton_name((Dtype)c.i));
        else
            buf_printf(&b, "tl.%s", dtype_triton_name(c.dt));
        break;
    }
    return buf_str(&b);
}
