/* verify.c -- the IR verifier.
 *
 * Job: decide whether a Func is well formed, so that every later stage
 * (passes, AD, interpreter, emitters) may rely on the invariants below
 * instead of re-checking them.  Runs after every stage in checked builds.
 *
 * Checks:
 *   - operand/result/region counts from the op table (variadic ops per op);
 *   - the typing rule of every op (see docs/IR.md, "Ops"): dtypes, shapes,
 *     attributes (axis ranges, permutations, precision, const ranges);
 *   - structure: each region of for/if/while ends with its terminator
 *     (yield; condition for a while's cond region); terminators appear
 *     nowhere else; yields and region params match the results and inits;
 *   - definitions: every value is defined once, every use sees a
 *     definition before it in the same or an enclosing region (region
 *     params only inside their region; results of a control-flow op only
 *     after it).
 * Requires: nothing (any Func, even garbage ValIds, is checked without a
 * crash).  Guarantees: returns true iff no problem was found; each problem
 * is an error at the instruction's Loc, prefixed "IR verifier: ", naming
 * the op and the values the way ir_print does.  Checking continues after an
 * error (at the next instruction) to report several problems at once.
 */
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"

/* Definition state of a value during the walk. */
enum { VS_UNDEF, VS_LIVE, VS_DEAD };

typedef struct V {
    const Func *f;
    Diags *d;
    Arena *a;          /* scratch */
    const char **names; /* printed names, by ValId */
    uint8_t *state;     /* VS_*, by ValId */
    Vec(ValId) scope;   /* values defined in the open regions, innermost last */
    bool ok;
} V;

static const char *vname(V *v, ValId x)
{
    if (x > 0 && x < v->f->vals.n && v->names[x])
        return arena_printf(v->a, "%%%s", v->names[x]);
    return arena_printf(v->a, "%%?%d", (int)x);
}

static const char *tstr(V *v, Type t)
{
    Buf b = {.a = v->a};
    type_print(&b, t);
    return buf_str(&b);
}

/* Reports a problem of instruction in. */
static void err(V *v, const Inst *in, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = arena_vprintf(v->a, fmt, ap);
    va_end(ap);
    diag_error(v->d, in->loc, "IR verifier: '%s': %s",
               in->op < OP_COUNT ? op_info[in->op].name : "?", msg);
    v->ok = false;
}

static Type ty(V *v, ValId x) { return v->f->vals.v[x].ty; }

static bool type_valid(Type t)
{
    if (t.dt == DT_VOID || t.dt >= DT_COUNT || t.rank > KAD_MAX_RANK)
        return false;
    if (t.dt == DT_PTR ? (t.elem == DT_VOID || t.elem >= DT_PTR) : t.elem != DT_VOID)
        return false;
    for (int i = 0; i < t.rank; i++)
        if (t.shape[i] <= 0)
            return false;
    return true;
}

static bool is_num(Type t) { return t.dt != DT_PTR && t.dt != DT_VOID; }
static bool is_int(Type t) { return dtype_is_int((Dtype)t.dt); }
static bool is_float(Type t) { return dtype_is_float((Dtype)t.dt); }
static bool is_scalar_int(Type t) { return t.rank == 0 && is_int(t) && t.dt != DT_I1; }
static bool is_i1(Type t) { return t.dt == DT_I1; }

/* Defines x (a result or region param).  Its type must be valid and it
 * must not be defined already. */
static void define(V *v, const Inst *in, ValId x, const char *what)
{
    if (x <= 0 || x >= v->f->vals.n) {
        diag_error(v->d, in ? in->loc : v->f->loc, "IR verifier: %s %d is not a value", what, (int)x);
        v->ok = false;
        return;
    }
    Loc loc = in ? in->loc : v->f->vals.v[x].loc;
    if (v->state[x] != VS_UNDEF) {
        diag_error(v->d, loc, "IR verifier: %s is defined more than once", vname(v, x));
        v->ok = false;
        return;
    }
    if (!type_valid(ty(v, x))) {
        diag_error(v->d, loc, "IR verifier: %s has an invalid type", vname(v, x));
        v->ok = false;
    }
    v->state[x] = VS_LIVE;
    vec_push(v->a, v->scope, x);
}

/* Checks that the operands are defined and visible here.  false: do not
 * look at their types. */
static bool check_uses(V *v, const Inst *in)
{
    for (int i = 0; i < in->nargs; i++) {
        ValId x = in->args[i];
        if (x <= 0 || x >= v->f->vals.n) {
            err(v, in, "operand %d is not a value (%d)", i + 1, (int)x);
            return false;
        }
        if (v->state[x] == VS_UNDEF) {
            err(v, in, "use of %s before its definition", vname(v, x));
            return false;
        }
        if (v->state[x] == VS_DEAD) {
            err(v, in, "use of %s outside the region that defines it", vname(v, x));
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Typing rules of the ops without regions                             */
/* ------------------------------------------------------------------ */

static bool int_fits(Dtype dt, int64_t x)
{
    int bits = dtype_bits(dt);
    if (dt == DT_I1)
        return x == 0 || x == 1;
    if (bits == 64)
        return true; /* u64 values above INT64_MAX are stored as their bit pattern */
    if (dtype_is_signed(dt))
        return x >= -((int64_t)1 << (bits - 1)) && x < ((int64_t)1 << (bits - 1));
    return x >= 0 && x < ((int64_t)1 << bits);
}

/* Result shape of a reduction of t over axis. */
static Type reduced(Type t, int axis, bool keep, Dtype dt)
{
    int32_t sh[KAD_MAX_RANK];
    int r = 0;
    for (int i = 0; i < t.rank; i++) {
        if (i != axis)
            sh[r++] = t.shape[i];
        else if (keep)
            sh[r++] = 1;
    }
    return type_tile(dt, r, sh);
}

/* load/store/atomic_add: pointer, value, mask, other and the flags. */
static void check_memory(V *v, const Inst *in, Type *rt)
{
    OpKind op = (OpKind)in->op;
    int nfixed = op == OP_LOAD ? 1 : 2;
    bool mask = in->flags & IF_HAS_MASK, other = in->flags & IF_HAS_OTHER;
    if (other && (op != OP_LOAD || !mask)) {
        err(v, in, "'other' needs a mask and is only an operand of load");
        return;
    }
    int at = nfixed + mask + other, r = 0;
    if (in->flags & IF_DESC) {
        r = ty(v, in->args[0]).rank;
        if (op_is_atomic(op) || r < 1) {
            err(v, in, "only a load or store of a pointer tile may come from a tensor descriptor");
            return;
        }
    }
    if (in->nargs != at + 3 * r) {
        err(v, in, "expected %d operands for these flags, got %d", at + 3 * r, in->nargs);
        return;
    }
    if (op != OP_STORE && in->nres != 1) {
        err(v, in, "expected 1 result, got %d", in->nres);
        return;
    }
    Type p = ty(v, in->args[0]);
    if (p.dt != DT_PTR) {
        err(v, in, "the first operand must be a pointer (tile), got %s", tstr(v, p));
        return;
    }
    Type val = type_with_shape(type_scalar((Dtype)p.elem), p.rank, p.shape);
    if (op != OP_LOAD && !type_eq(ty(v, in->args[1]), val)) {
        err(v, in, "the value must be %s (the pointee with the pointer's shape), got %s", tstr(v, val),
            tstr(v, ty(v, in->args[1])));
        return;
    }
    if (rt && !type_eq(*rt, val)) {
        err(v, in, "the result must be %s (the pointee with the pointer's shape), got %s", tstr(v, val),
            tstr(v, *rt));
        return;
    }
    if (mask) {
        Type m = ty(v, in->args[nfixed]);
        if (!is_i1(m) || !type_same_shape(m, p)) {
            err(v, in, "the mask must be i1 of the pointer's shape, got %s", tstr(v, m));
            return;
        }
    }
    if (other && !type_eq(ty(v, in->args[2]), val)) {
        err(v, in, "'other' must have the result type %s, got %s", tstr(v, val), tstr(v, ty(v, in->args[2])));
        return;
    }
    /* a tensor descriptor's operands (ir.h, ir_desc_at): base, shape[r], strides[r - 1], offsets[r] */
    for (int k = 0; k < 3 * r; k++) {
        Type t = ty(v, in->args[at + k]);
        if (k == 0 ? t.dt != DT_PTR || t.rank != 0 || t.elem != p.elem
                   : t.rank != 0 || !dtype_is_int((Dtype)t.dt) || t.dt == DT_I1 || (k > 2 * r - 1 && t.dt != DT_I32)) {
            err(v, in, "descriptor operand %d must be %s, got %s", k,
                k == 0 ? "a scalar pointer to the pointee" : k > 2 * r - 1 ? "an i32 offset" : "an integer scalar",
                tstr(v, t));
            return;
        }
    }
}

static void check_dot(V *v, const Inst *in, Type r)
{
    Type a = ty(v, in->args[0]), b = ty(v, in->args[1]), c = ty(v, in->args[2]);
    if (in->ival < DP_DEFAULT || in->ival > DP_IEEE) {
        err(v, in, "invalid precision %lld", (long long)in->ival);
        return;
    }
    if (!is_num(a) || a.dt != b.dt) {
        err(v, in, "operands a and b must be numeric of one dtype, got %s and %s", tstr(v, a), tstr(v, b));
        return;
    }
    if (!is_num(c) || !type_eq(c, r)) {
        err(v, in, "the accumulator and the result must have one numeric type, got %s and %s", tstr(v, c),
            tstr(v, r));
        return;
    }
    int n = a.rank;
    bool ok = (n == 2 || n == 3) && b.rank == n && c.rank == n;
    if (ok && n == 3)
        ok = a.shape[0] == b.shape[0] && a.shape[0] == c.shape[0];
    if (ok)
        ok = a.shape[n - 1] == b.shape[n - 2] && c.shape[n - 2] == a.shape[n - 2] &&
             c.shape[n - 1] == b.shape[n - 1];
    if (!ok)
        err(v, in, "shapes must be a[M,K], b[K,N], acc[M,N] (or batched [B,M,K]), got %s, %s, %s", tstr(v, a),
            tstr(v, b), tstr(v, c));
}

/* Flags each op may carry. */
static uint16_t allowed_flags(OpKind op)
{
    switch (op) {
    case OP_LOAD: return IF_HAS_MASK | IF_HAS_OTHER | IF_DESC;
    case OP_STORE: return IF_HAS_MASK | IF_DESC;
    case OP_ATOMIC_ADD: case OP_ATOMIC_MAX: case OP_ATOMIC_MIN: case OP_ATOMIC_XCHG: return IF_HAS_MASK;
    case OP_SUM: case OP_MAX: case OP_MIN: case OP_ARGMAX: case OP_ARGMIN: return IF_KEEP_DIMS;
    case OP_CUMSUM: case OP_CUMPROD: case OP_SCAN: case OP_SORT: return IF_REVERSE;
    default: return 0;
    }
}

/* The typing rule of op (operands are defined; counts were checked). */
static void check_types(V *v, const Inst *in)
{
    OpKind op = (OpKind)in->op;
    Type r = in->nres == 1 ? ty(v, in->res[0]) : (Type){0};
    Type x = in->nargs > 0 ? ty(v, in->args[0]) : (Type){0};
    Type y = in->nargs > 1 ? ty(v, in->args[1]) : (Type){0};
    Type z = in->nargs > 2 ? ty(v, in->args[2]) : (Type){0};
    if (in->flags & ~allowed_flags(op)) {
        err(v, in, "flags 0x%x are not valid for this op", (unsigned)in->flags);
        return;
    }
    switch (op) {
    case OP_CONST:
        if (!is_num(r))
            err(v, in, "result must be numeric, got %s", tstr(v, r));
        else if (is_int(r) && !int_fits((Dtype)r.dt, in->ival))
            err(v, in, "value %lld does not fit %s", (long long)in->ival, dtype_name((Dtype)r.dt));
        break;
    case OP_PROGRAM_ID: case OP_NUM_PROGRAMS:
        if (in->ival < 0 || in->ival > 2)
            err(v, in, "axis must be 0, 1 or 2, got %lld", (long long)in->ival);
        else if (!type_eq(r, type_scalar(DT_I32)))
            err(v, in, "result must be i32, got %s", tstr(v, r));
        break;
    case OP_ARANGE:
        if (r.dt != DT_I32 || r.rank != 1)
            err(v, in, "result must be a rank-1 i32 tile, got %s", tstr(v, r));
        else if (in->ival < INT32_MIN || in->ival > INT32_MAX || in->ival + r.shape[0] - 1 > INT32_MAX)
            err(v, in, "start %lld with %d elements exceeds i32", (long long)in->ival, (int)r.shape[0]);
        break;
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_REM: case OP_MAXIMUM: case OP_MINIMUM:
    case OP_POW: case OP_ATAN2: case OP_AND: case OP_OR: case OP_XOR: case OP_SHL: case OP_SHR:
    case OP_UMULHI:
        if (!type_eq(x, y) || !type_eq(x, r)) {
            err(v, in, "operands and result must have one type, got %s, %s -> %s", tstr(v, x), tstr(v, y),
                tstr(v, r));
        } else if (!is_num(x)) {
            err(v, in, "operands must be numeric, got %s", tstr(v, x));
        } else if ((op == OP_POW || op == OP_ATAN2) && !is_float(x)) {
            err(v, in, "operands must be floats, got %s", tstr(v, x));
        } else if (op >= OP_AND && op <= OP_UMULHI && !is_int(x)) {
            err(v, in, "operands must be integers, got %s", tstr(v, x));
        }
        break;
    case OP_NEG: case OP_ABS: case OP_NOT:
        if (!type_eq(x, r))
            err(v, in, "operand and result must have one type, got %s -> %s", tstr(v, x), tstr(v, r));
        else if (!is_num(x))
            err(v, in, "operand must be numeric, got %s", tstr(v, x));
        else if (op == OP_NOT && !is_int(x))
            err(v, in, "operand must be an integer or i1, got %s", tstr(v, x));
        break;
    case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE:
        if (!type_eq(x, y))
            err(v, in, "operands must have one type, got %s and %s", tstr(v, x), tstr(v, y));
        else if (!is_i1(r) || !type_same_shape(r, x))
            err(v, in, "result must be i1 of the operands' shape, got %s", tstr(v, r));
        break;
    case OP_ISNAN: case OP_ISINF:
        if (!is_float(x))
            err(v, in, "operand must be a float, got %s", tstr(v, x));
        else if (!is_i1(r) || !type_same_shape(r, x))
            err(v, in, "result must be i1 of the operand's shape, got %s", tstr(v, r));
        break;
    case OP_EXP: case OP_EXP2: case OP_EXPM1: case OP_LOG: case OP_LOG2: case OP_LOG1P: case OP_SQRT:
    case OP_RSQRT: case OP_SIGMOID: case OP_SIN: case OP_COS: case OP_TAN: case OP_ASIN: case OP_ACOS:
    case OP_ATAN: case OP_SINH: case OP_COSH: case OP_TANH: case OP_ERF: case OP_FLOOR: case OP_CEIL:
    case OP_TRUNC: case OP_RINT:
        if (!type_eq(x, r))
            err(v, in, "operand and result must have one type, got %s -> %s", tstr(v, x), tstr(v, r));
        else if (!is_float(x))
            err(v, in, "operand must be a float, got %s", tstr(v, x));
        break;
#define LIBM_CASE(en, ...) case en:
    KAD_LIBM_OPS(LIBM_CASE)
#undef LIBM_CASE
    { /* libdevice functions: float operands of the result's type (ilogb: i32), one i32 operand for some */
        int ni = libm_int_operand(op);
        Type ft = ni == 0 ? y : x;
        bool ok = is_float(ft) && (op == OP_ILOGB ? r.dt == DT_I32 && type_same_shape(r, ft) : type_eq(ft, r));
        for (int k = 0; ok && k < in->nargs; k++) {
            Type tk = ty(v, in->args[k]);
            ok = k == ni ? tk.dt == DT_I32 && type_same_shape(tk, ft) : type_eq(tk, ft);
        }
        if (!ok)
            err(v, in, "expected float operands of one type%s and a result of their type, got %s -> %s",
                ni >= 0 ? " (one i32 of their shape)" : "", tstr(v, x), tstr(v, r));
        if ((op == OP_ADD_ROUND || op == OP_SUB_ROUND || op == OP_MUL_ROUND || op == OP_DIV_ROUND ||
             op == OP_SQRT_ROUND || op == OP_RCP_ROUND || op == OP_FMA_ROUND) && (in->ival < 0 || in->ival > 3))
            err(v, in, "rounding must be 0..3, got %lld", (long long)in->ival);
        break;
    }
    case OP_FMA:
        if (!type_eq(x, y) || !type_eq(x, z) || !type_eq(x, r))
            err(v, in, "operands and result must have one type, got %s, %s, %s -> %s", tstr(v, x), tstr(v, y),
                tstr(v, z), tstr(v, r));
        else if (!is_float(x))
            err(v, in, "operands must be floats, got %s", tstr(v, x));
        break;
    case OP_WHERE:
        if (!is_i1(x))
            err(v, in, "the condition must be i1, got %s", tstr(v, x));
        else if (!type_eq(y, z) || !type_eq(y, r))
            err(v, in, "both values and the result must have one type, got %s, %s -> %s", tstr(v, y),
                tstr(v, z), tstr(v, r));
        else if (!type_same_shape(x, y))
            err(v, in, "the condition must have the values' shape, got %s and %s", tstr(v, x), tstr(v, y));
        break;
    case OP_CAST:
        if (!type_same_shape(x, r))
            err(v, in, "cast keeps the shape, got %s -> %s", tstr(v, x), tstr(v, r));
        else if ((x.dt == DT_PTR || r.dt == DT_PTR) &&
                 !((x.dt == DT_PTR && (r.dt == DT_I64 || r.dt == DT_U64)) ||
                   (r.dt == DT_PTR && (x.dt == DT_I64 || x.dt == DT_U64))))
            err(v, in, "pointers cast only to and from i64/u64 (bitcast converts pointers), got %s -> %s",
                tstr(v, x), tstr(v, r));
        break;
    case OP_BITCAST:
        if (!type_same_shape(x, r))
            err(v, in, "bitcast keeps the shape, got %s -> %s", tstr(v, x), tstr(v, r));
        else if ((x.dt == DT_PTR) != (r.dt == DT_PTR) || dtype_bits((Dtype)x.dt) != dtype_bits((Dtype)r.dt))
            err(v, in, "bitcast needs two dtypes of one width, or two pointers, got %s -> %s", tstr(v, x),
                tstr(v, r));
        break;
    case OP_STOP_GRADIENT:
        if (!type_eq(x, r))
            err(v, in, "operand and result must have one type, got %s -> %s", tstr(v, x), tstr(v, r));
        break;
    case OP_CUSTOM_VJP: {
        if (in->nargs < 1 || !is_float(x) || !type_eq(x, r)) {
            err(v, in, "operand 1 and the result must have one float type, got %s -> %s", tstr(v, x), tstr(v, r));
            break;
        }
        if (in->ival < 0 || in->ival >= v->f->rules.n) {
            err(v, in, "rule %lld does not exist (the function has %d)", (long long)in->ival, v->f->rules.n);
            break;
        }
        const Block *rb = v->f->rules.v[in->ival];
        if (rb->nparams != in->nargs) {
            err(v, in, "rule %lld must have %d parameters (the arguments, then the adjoint), got %d",
                (long long)in->ival, in->nargs, rb->nparams);
            break;
        }
        int nf = 0;
        for (int i = 0; i < in->nargs; i++) {
            ValId p = rb->params[i];
            Type want = i + 1 < in->nargs ? ty(v, in->args[i + 1]) : r;
            if (i + 1 == in->nargs && (want.dt == DT_F16 || want.dt == DT_BF16))
                want.dt = DT_F32; /* adjoints of fp16/bf16 values are fp32 */
            if (p <= 0 || p >= v->f->vals.n || !type_eq(ty(v, p), want)) {
                err(v, in, "parameter %d of rule %lld must be %s", i + 1, (long long)in->ival, tstr(v, want));
                break;
            }
            nf += i + 1 < in->nargs && is_float(want);
        }
        const Inst *yi = rb->insts.n ? &rb->insts.v[rb->insts.n - 1] : NULL;
        if (!yi || yi->op != OP_YIELD)
            break; /* reported with the rule */
        if (yi->nargs != nf) {
            err(v, in, "rule %lld must yield one adjoint per float operand (%d), got %d", (long long)in->ival, nf,
                yi->nargs);
            break;
        }
        for (int i = 1, k = 0; i < in->nargs; i++) {
            Type want = ty(v, in->args[i]);
            if (!is_float(want))
                continue;
            if (want.dt == DT_F16 || want.dt == DT_BF16)
                want.dt = DT_F32;
            ValId a = yi->args[k++];
            if (a <= 0 || a >= v->f->vals.n || !type_eq(ty(v, a), want))
                err(v, in, "adjoint %d yielded by rule %lld must be %s", k, (long long)in->ival, tstr(v, want));
        }
        break;
    }
    case OP_CUSTOM_JVP: {
        if (in->nargs < 1 || !is_float(x) || !type_eq(x, r)) {
            err(v, in, "operand 1 and the result must have one float type, got %s -> %s", tstr(v, x), tstr(v, r));
            break;
        }
        if (in->ival < 0 || in->ival >= v->f->rules.n) {
            err(v, in, "rule %lld does not exist (the function has %d)", (long long)in->ival, v->f->rules.n);
            break;
        }
        const Block *rb = v->f->rules.v[in->ival];
        int nf = 0;
        for (int i = 1; i < in->nargs; i++)
            nf += is_float(ty(v, in->args[i]));
        if (rb->nparams != in->nargs - 1 + nf) {
            err(v, in, "rule %lld must have %d parameters (the arguments, then the float ones' tangents), got %d",
                (long long)in->ival, in->nargs - 1 + nf, rb->nparams);
            break;
        }
        for (int i = 1, k = in->nargs - 1; i < in->nargs; i++) {
            Type want = ty(v, in->args[i]);
            ValId p = rb->params[i - 1], q = is_float(want) ? rb->params[k++] : 0;
            if (p <= 0 || p >= v->f->vals.n || !type_eq(ty(v, p), want) ||
                (q && (q >= v->f->vals.n || !type_eq(ty(v, q), want)))) {
                err(v, in, "parameter %d of rule %lld (and its tangent) must be %s", i, (long long)in->ival,
                    tstr(v, want));
                break;
            }
        }
        const Inst *yi = rb->insts.n ? &rb->insts.v[rb->insts.n - 1] : NULL;
        if (!yi || yi->op != OP_YIELD)
            break; /* reported with the rule */
        if (yi->nargs != 1 || yi->args[0] <= 0 || yi->args[0] >= v->f->vals.n || !type_eq(ty(v, yi->args[0]), r))
            err(v, in, "rule %lld must yield one tangent of type %s", (long long)in->ival, tstr(v, r));
        break;
    }
    case OP_MULTIPLE_OF: case OP_MAX_CONTIGUOUS:
        if (!type_eq(x, r)) {
            err(v, in, "operand and result must have one type, got %s -> %s", tstr(v, x), tstr(v, r));
        } else if (in->nints < 1 || (in->nints != 1 && in->nints != x.rank)) {
            err(v, in, "needs 1 value or one per axis (%d), got %d", x.rank, in->nints);
        } else {
            for (int i = 0; i < in->nints; i++)
                if (in->ints[i] <= 0) {
                    err(v, in, "values must be positive, got %d", (int)in->ints[i]);
                    break;
                }
        }
        break;
    case OP_BROADCAST: {
        bool ok = x.dt == r.dt && x.elem == r.elem;
        if (ok && x.rank != 0) {
            ok = x.rank == r.rank;
            for (int i = 0; ok && i < x.rank; i++)
                ok = x.shape[i] == r.shape[i] || x.shape[i] == 1;
        }
        if (!ok)
            err(v, in, "cannot broadcast %s to %s (needs a scalar, or one rank with size-1 axes expanding)",
                tstr(v, x), tstr(v, r));
        break;
    }
    case OP_EXPAND_DIMS: {
        if (in->ival < 0 || in->ival > x.rank || x.rank == KAD_MAX_RANK) {
            err(v, in, "axis %lld out of range for %s", (long long)in->ival, tstr(v, x));
            break;
        }
        int32_t sh[KAD_MAX_RANK];
        int n = 0;
        for (int i = 0; i <= x.rank; i++) {
            if (i == in->ival)
                sh[n++] = 1;
            if (i < x.rank)
                sh[n++] = x.shape[i];
        }
        if (!type_eq(r, type_with_shape(x, n, sh)))
            err(v, in, "result must be %s, got %s", tstr(v, type_with_shape(x, n, sh)), tstr(v, r));
        break;
    }
    case OP_RESHAPE:
        if (x.dt != r.dt || x.elem != r.elem || type_numel(x) != type_numel(r))
            err(v, in, "reshape keeps the dtype and the number of elements, got %s -> %s", tstr(v, x),
                tstr(v, r));
        break;
    case OP_PERMUTE: {
        bool seen[KAD_MAX_RANK] = {0};
        bool ok = in->nints == x.rank;
        int32_t sh[KAD_MAX_RANK];
        for (int i = 0; ok && i < x.rank; i++) {
            int pi = in->ints[i];
            ok = pi >= 0 && pi < x.rank && !seen[pi];
            if (ok) {
                seen[pi] = true;
                sh[i] = x.shape[pi];
            }
        }
        if (!ok)
            err(v, in, "perm must be a permutation of the %d axes of %s", x.rank, tstr(v, x));
        else if (!type_eq(r, type_with_shape(x, x.rank, sh)))
            err(v, in, "result must be %s, got %s", tstr(v, type_with_shape(x, x.rank, sh)), tstr(v, r));
        break;
    }
    case OP_SUM: case OP_MAX: case OP_MIN: case OP_ARGMAX: case OP_ARGMIN: {
        if (!is_num(x)) {
            err(v, in, "operand must be numeric, got %s", tstr(v, x));
            break;
        }
        if (in->ival < 0 || in->ival >= x.rank) {
            err(v, in, "axis %lld out of range for %s", (long long)in->ival, tstr(v, x));
            break;
        }
        Dtype dt = op == OP_ARGMAX || op == OP_ARGMIN ? DT_I32 : (Dtype)x.dt;
        Type want = reduced(x, (int)in->ival, in->flags & IF_KEEP_DIMS, dt);
        if (!type_eq(r, want))
            err(v, in, "result must be %s, got %s", tstr(v, want), tstr(v, r));
        break;
    }
    case OP_CUMSUM: case OP_CUMPROD:
        if (!is_num(x))
            err(v, in, "operand must be numeric, got %s", tstr(v, x));
        else if (in->ival < 0 || in->ival >= x.rank)
            err(v, in, "axis %lld out of range for %s", (long long)in->ival, tstr(v, x));
        else if (!type_eq(x, r))
            err(v, in, "result must be %s, got %s", tstr(v, x), tstr(v, r));
        break;
    case OP_DOT:
        check_dot(v, in, r);
        break;
    case OP_RAND: case OP_RANDN: case OP_RANDINT: {
        Dtype want = op == OP_RANDINT ? DT_U32 : DT_F32;
        if (!is_scalar_int(x))
            err(v, in, "the seed must be an integer scalar, got %s", tstr(v, x));
        else if (!is_int(y) || is_i1(y))
            err(v, in, "the offsets must be integers, got %s", tstr(v, y));
        else if (r.dt != want || !type_same_shape(r, y))
            err(v, in, "result must be %s of the offsets' shape, got %s", dtype_name(want), tstr(v, r));
        break;
    }
    case OP_ADDPTR:
        if (x.dt != DT_PTR)
            err(v, in, "the first operand must be a pointer (tile), got %s", tstr(v, x));
        else if (!is_int(y) || is_i1(y) || !type_same_shape(x, y))
            err(v, in, "the offset must be an integer tile of the pointer's shape, got %s and %s", tstr(v, x),
                tstr(v, y));
        else if (!type_eq(x, r))
            err(v, in, "result must be %s, got %s", tstr(v, x), tstr(v, r));
        break;
    case OP_LOAD: case OP_ATOMIC_ADD: case OP_ATOMIC_MAX: case OP_ATOMIC_MIN: case OP_ATOMIC_XCHG:
        check_memory(v, in, &r);
        break;
    case OP_STORE:
        check_memory(v, in, NULL);
        break;
    case OP_JOIN: {
        int32_t sh[KAD_MAX_RANK];
        memcpy(sh, x.shape, sizeof sh);
        sh[x.rank < KAD_MAX_RANK ? x.rank : 0] = 2;
        if (x.dt == DT_PTR || !type_eq(x, y) || x.rank == KAD_MAX_RANK)
            err(v, in, "operands must be two non-pointer values of one type and rank < %d, got %s and %s",
                KAD_MAX_RANK, tstr(v, x), tstr(v, y));
        else if (!type_eq(r, type_with_shape(x, x.rank + 1, sh)))
            err(v, in, "result must be %s, got %s", tstr(v, type_with_shape(x, x.rank + 1, sh)), tstr(v, r));
        break;
    }
    case OP_SPLIT:
        if (x.dt == DT_PTR || x.rank == 0 || x.shape[x.rank - 1] != 2)
            err(v, in, "operand must be a non-pointer tile whose last axis is 2, got %s", tstr(v, x));
        else if (in->ival != 0 && in->ival != 1)
            err(v, in, "half must be 0 or 1 (the result is x[..., half]), got %lld", (long long)in->ival);
        else if (!type_eq(r, type_with_shape(x, x.rank - 1, x.shape)))
            err(v, in, "result must be %s, got %s", tstr(v, type_with_shape(x, x.rank - 1, x.shape)), tstr(v, r));
        break;
    case OP_FLIP:
        if (x.dt == DT_PTR || in->ival < 0 || in->ival >= x.rank)
            err(v, in, "axis %lld out of range for %s (or a pointer tile)", (long long)in->ival, tstr(v, x));
        else if (!type_eq(x, r))
            err(v, in, "result must be %s, got %s", tstr(v, x), tstr(v, r));
        break;
    case OP_GATHER: {
        bool ok = x.dt != DT_PTR && is_int(y) && !is_i1(y) && x.rank == y.rank && in->ival >= 0 &&
                  in->ival < x.rank;
        for (int i = 0; ok && i < x.rank; i++)
            ok = i == in->ival || x.shape[i] == y.shape[i];
        if (!ok)
            err(v, in, "expected a source, an integer index of its rank with equal axes but axis %lld, got %s "
                "and %s", (long long)in->ival, tstr(v, x), tstr(v, y));
        else if (r.dt != x.dt || !type_same_shape(r, y))
            err(v, in, "result must be %s, got %s", tstr(v, type_with_shape(x, y.rank, y.shape)), tstr(v, r));
        break;
    }
    case OP_SORT: {
        int32_t sh[KAD_MAX_RANK];
        memcpy(sh, x.shape, sizeof sh);
        if (!is_num(x) || x.rank == 0 || in->ival < 1 || in->ival > x.shape[x.rank - 1]) {
            err(v, in, "expected a numeric tile and 1 <= k <= its last axis, got %s, k = %lld", tstr(v, x),
                (long long)in->ival);
            break;
        }
        sh[x.rank - 1] = (int32_t)in->ival;
        if (!type_eq(r, type_with_shape(x, x.rank, sh)))
            err(v, in, "result must be %s, got %s", tstr(v, type_with_shape(x, x.rank, sh)), tstr(v, r));
        break;
    }
    case OP_HISTOGRAM: {
        int32_t nb = (int32_t)in->ival;
        if (!is_int(x) || is_i1(x) || x.rank != 1)
            err(v, in, "the input must be an integer tile of rank 1, got %s", tstr(v, x));
        else if (in->nargs == 2 && (!is_i1(y) || !type_same_shape(x, y)))
            err(v, in, "the mask must be i1 of the input's shape, got %s", tstr(v, y));
        else if (in->ival < 1 || in->ival > (1 << 20) || !type_eq(r, type_tile(DT_I32, 1, &nb)))
            err(v, in, "result must be i32[bins] with 1 <= bins, got %s, bins = %lld", tstr(v, r),
                (long long)in->ival);
        break;
    }
    case OP_ASSERT:
        if (!is_i1(x))
            err(v, in, "the condition must be i1, got %s", tstr(v, x));
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------------ */
/* Regions                                                             */
/* ------------------------------------------------------------------ */

static void check_block(V *v, const Block *b, OpKind term, int depth, const Inst *parent);

/* Defines the params of region b, which must have the given types. */
static void region_params(V *v, const Inst *in, const Block *b, const Type *tys, int n, const char *what)
{
    for (int i = 0; i < b->nparams; i++) /* even if they are wrong: uses inside stay quiet */
        define(v, in, b->params[i], "region parameter");
    if (b->nparams != n) {
        err(v, in, "the %s region must have %d parameter%s, got %d", what, n, n == 1 ? "" : "s", b->nparams);
        return;
    }
    for (int i = 0; i < n; i++) {
        ValId p = b->params[i];
        if (p > 0 && p < v->f->vals.n && !type_eq(ty(v, p), tys[i]))
            err(v, in, "parameter %s of the %s region must be %s, got %s", vname(v, p), what, tstr(v, tys[i]),
                tstr(v, ty(v, p)));
    }
}

/* The region's terminator must yield values of the given types. */
static void region_yields(V *v, const Inst *in, const Block *b, const Type *tys, int n, const char *what)
{
    if (!b->insts.n || b->insts.v[b->insts.n - 1].op != OP_YIELD)
        return; /* reported by check_block */
    const Inst *y = &b->insts.v[b->insts.n - 1];
    if (y->nargs != n) {
        err(v, y, "the %s region of '%s' must yield %d value%s, got %d", what, op_info[in->op].name, n,
            n == 1 ? "" : "s", y->nargs);
        return;
    }
    for (int i = 0; i < n; i++) {
        ValId x = y->args[i];
        if (x > 0 && x < v->f->vals.n && !type_eq(ty(v, x), tys[i]))
            err(v, y, "value %d yielded by the %s region of '%s' must be %s, got %s", i + 1, what,
                op_info[in->op].name, tstr(v, tys[i]), tstr(v, ty(v, x)));
    }
}

/* Walks region b with its params already defined, then hides them. */
static void walk_region(V *v, const Inst *parent, const Block *b, int mark, OpKind term, int depth)
{
    check_block(v, b, term, depth + 1, parent);
    while (v->scope.n > mark) {
        ValId x = v->scope.v[--v->scope.n];
        v->state[x] = VS_DEAD;
    }
}

/* Whether x is a param of b or a result of one of b's instructions. */
static bool defined_in(const Block *b, ValId x)
{
    for (int i = 0; i < b->nparams; i++)
        if (b->params[i] == x)
            return true;
    for (int i = 0; i < b->insts.n; i++)
        for (int k = 0; k < b->insts.v[i].nres; k++)
            if (b->insts.v[i].res[k] == x)
                return true;
    return false;
}

/* scan: n operands of one shape (rank >= 1, no pointers), results of their
 * types, a closed combine region of 2n scalar params yielding n scalars.
 * reduce: the same with the results' shapes the operands' less the axis. */
static void check_scan(V *v, const Inst *in, int depth)
{
    int n = in->nargs;
    const char *on = op_info[in->op].name;
    Block *r0 = in->regions[0];
    if (n < 1 || in->nres != n) {
        err(v, in, "must have as many results as operands (at least one), got %d and %d", in->nres, n);
        return;
    }
    if (in->op == OP_REDUCE && n > 16) {
        err(v, in, "has %d operands, at most 16", n);
        return;
    }
    Type x0 = ty(v, in->args[0]);
    Type *ptys = arena_alloc(v->a, (size_t)(2 * n) * sizeof *ptys);
    for (int i = 0; i < n; i++) {
        Type x = ty(v, in->args[i]);
        if (!is_num(x) || x.rank < 1 || !type_same_shape(x, x0))
            err(v, in, "operands must be numeric tiles of one shape, got %s and %s", tstr(v, x0), tstr(v, x));
        ptys[i] = ptys[n + i] = type_with_shape(x, 0, NULL);
    }
    if (in->ival < 0 || in->ival >= x0.rank) {
        err(v, in, "axis %lld out of range for %s", (long long)in->ival, tstr(v, x0));
        return;
    }
    for (int i = 0; i < n; i++) {
        Type x = ty(v, in->args[i]);
        if (in->op == OP_REDUCE) { /* the axis removed */
            int32_t sh[KAD_MAX_RANK];
            for (int k = 0, j = 0; k < x.rank; k++)
                if (k != in->ival)
                    sh[j++] = x.shape[k];
            x = type_with_shape(x, x.rank - 1, sh);
        }
        if (!type_eq(x, ty(v, in->res[i])))
            err(v, in, "result %d must be %s, got %s", i + 1, tstr(v, x), tstr(v, ty(v, in->res[i])));
    }
    int mark = v->scope.n;
    region_params(v, in, r0, ptys, 2 * n, "combine");
    walk_region(v, in, r0, mark, OP_YIELD, depth);
    region_yields(v, in, r0, ptys, n, "combine");
    for (int i = 0; i < r0->insts.n; i++) {
        const Inst *c = &r0->insts.v[i];
        if (c->op != OP_YIELD && (!op_info[c->op].pure || c->nregions || c->op == OP_RAND || c->op == OP_RANDN ||
                                  c->op == OP_RANDINT || c->op == OP_PROGRAM_ID || c->op == OP_NUM_PROGRAMS)) {
            err(v, c, "is not allowed in the combine region of '%s' (pure operations on its values only)", on);
            continue;
        }
        for (int k = 0; k < c->nargs; k++)
            if (!defined_in(r0, c->args[k]))
                err(v, c, "the combine region of '%s' may read only its parameters and its own values, "
                    "not %s", on, vname(v, c->args[k]));
    }
}

static void check_control(V *v, const Inst *in, int depth)
{
    if (in->op == OP_SCAN || in->op == OP_REDUCE) {
        check_scan(v, in, depth);
        return;
    }
    OpKind op = (OpKind)in->op;
    Type *rtys = arena_alloc(v->a, (size_t)(in->nres + 1) * sizeof *rtys);
    for (int i = 0; i < in->nres; i++)
        rtys[i] = ty(v, in->res[i]);
    Block *r0 = in->regions[0];
    if (op == OP_FOR) {
        int n = in->nargs - 3;
        Type lb = ty(v, in->args[0]);
        if (!is_scalar_int(lb) || !type_eq(lb, ty(v, in->args[1])) || !type_eq(lb, ty(v, in->args[2])))
            err(v, in, "lb, ub and step must be integer scalars of one type, got %s, %s, %s", tstr(v, lb),
                tstr(v, ty(v, in->args[1])), tstr(v, ty(v, in->args[2])));
        if (in->nres != n) {
            err(v, in, "must have one result per iter_arg (%d), got %d", n, in->nres);
            return;
        }
        Type *ptys = arena_alloc(v->a, (size_t)(n + 1) * sizeof *ptys);
        ptys[0] = lb;
        for (int i = 0; i < n; i++) {
            ptys[i + 1] = ty(v, in->args[3 + i]);
            if (!type_eq(ptys[i + 1], rtys[i]))
                err(v, in, "iter_arg %d is %s but result %s is %s", i + 1, tstr(v, ptys[i + 1]),
                    vname(v, in->res[i]), tstr(v, rtys[i]));
        }
        int mark = v->scope.n;
        region_params(v, in, r0, ptys, n + 1, "body");
        walk_region(v, in, r0, mark, OP_YIELD, depth);
        region_yields(v, in, r0, rtys, n, "body");
    } else if (op == OP_IF) {
        Type c = ty(v, in->args[0]);
        if (!is_i1(c) || c.rank != 0)
            err(v, in, "the condition must be an i1 scalar, got %s", tstr(v, c));
        for (int k = 0; k < 2; k++) {
            const char *what = k ? "else" : "then";
            int mark = v->scope.n;
            region_params(v, in, in->regions[k], NULL, 0, what);
            walk_region(v, in, in->regions[k], mark, OP_YIELD, depth);
            region_yields(v, in, in->regions[k], rtys, in->nres, what);
        }
    } else { /* OP_WHILE */
        int n = in->nargs;
        Type *ctys = arena_alloc(v->a, (size_t)(n + 1) * sizeof *ctys);
        for (int i = 0; i < n; i++)
            ctys[i] = ty(v, in->args[i]);
        if (in->nres != n) {
            err(v, in, "must have one result per carried value (%d), got %d", n, in->nres);
            return;
        }
        for (int i = 0; i < n; i++)
            if (!type_eq(ctys[i], rtys[i]))
                err(v, in, "carried value %d is %s but result %s is %s", i + 1, tstr(v, ctys[i]),
                    vname(v, in->res[i]), tstr(v, rtys[i]));
        int mark = v->scope.n;
        region_params(v, in, r0, ctys, n, "cond");
        walk_region(v, in, r0, mark, OP_CONDITION, depth);
        mark = v->scope.n;
        region_params(v, in, in->regions[1], ctys, n, "body");
        walk_region(v, in, in->regions[1], mark, OP_YIELD, depth);
        region_yields(v, in, in->regions[1], ctys, n, "body");
    }
}

static void check_inst(V *v, const Inst *in, int depth)
{
    if (in->op >= OP_COUNT) {
        diag_error(v->d, in->loc, "IR verifier: unknown op %d", (int)in->op);
        v->ok = false;
        return;
    }
    const OpInfo *oi = &op_info[in->op];
    OpKind op = (OpKind)in->op;
    bool counts_ok = true;
    if (oi->nargs >= 0 && in->nargs != oi->nargs) {
        err(v, in, "takes %d operand%s, got %d", oi->nargs, oi->nargs == 1 ? "" : "s", in->nargs);
        counts_ok = false;
    } else if (oi->nres >= 0 && in->nres != oi->nres) {
        err(v, in, "has %d result%s, got %d", oi->nres, oi->nres == 1 ? "" : "s", in->nres);
        counts_ok = false;
    } else if (in->nregions != oi->nregions) {
        err(v, in, "has %d region%s, got %d", oi->nregions, oi->nregions == 1 ? "" : "s", in->nregions);
        counts_ok = false;
    } else if (op == OP_FOR && in->nargs < 3) {
        err(v, in, "takes lb, ub, step and the iter_args, got %d operands", in->nargs);
        counts_ok = false;
    } else if (op == OP_HISTOGRAM && (in->nargs < 1 || in->nargs > 2)) {
        err(v, in, "takes the input and an optional mask, got %d operands", in->nargs);
        counts_ok = false;
    } else if ((op == OP_LOAD && in->nargs < 1) || (op_writes_memory(op) && in->nargs < 2)) {
        err(v, in, "too few operands (%d)", in->nargs);
        counts_ok = false;
    } else if ((in->nargs && !in->args) || (in->nres && !in->res) || (in->nregions && !in->regions)) {
        err(v, in, "operand, result or region array missing");
        counts_ok = false;
    }
    for (int i = 0; counts_ok && i < in->nregions; i++)
        if (!in->regions[i]) {
            err(v, in, "region %d missing", i);
            counts_ok = false;
        }
    bool uses_ok = counts_ok && check_uses(v, in);
    /* results must be valid ids before their types are looked at */
    for (int i = 0; uses_ok && i < in->nres; i++)
        if (in->res[i] <= 0 || in->res[i] >= v->f->vals.n) {
            err(v, in, "result %d is not a value (%d)", i + 1, (int)in->res[i]);
            uses_ok = false;
        }
    if (uses_ok) {
        if (op == OP_FOR || op == OP_IF || op == OP_WHILE || op == OP_SCAN || op == OP_REDUCE) {
            if (depth > 1000)
                err(v, in, "regions nested too deeply");
            else
                check_control(v, in, depth);
        } else if (op == OP_CONDITION) {
            Type c = ty(v, in->args[0]);
            if (!is_i1(c) || c.rank != 0)
                err(v, in, "the condition must be an i1 scalar, got %s", tstr(v, c));
        } else if (op != OP_YIELD) {
            check_types(v, in);
        }
    }
    if (counts_ok)
        for (int i = 0; i < in->nres; i++)
            define(v, in, in->res[i], "result");
}

/* Checks the instructions of b, a region of parent; term is the terminator
 * b must end with (OP_COUNT: none, for the kernel body). */
static void check_block(V *v, const Block *b, OpKind term, int depth, const Inst *parent)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        bool is_term = in->op == OP_YIELD || in->op == OP_CONDITION;
        if (is_term && (in->op != term || i != b->insts.n - 1)) {
            if (term == OP_COUNT)
                err(v, in, "a terminator cannot appear in the kernel body");
            else if (i != b->insts.n - 1)
                err(v, in, "a terminator must be the last instruction of its region");
            else
                err(v, in, "this region must end with '%s'", op_info[term].name);
            continue;
        }
        check_inst(v, in, depth);
    }
    if (term != OP_COUNT && (!b->insts.n || b->insts.v[b->insts.n - 1].op != term)) {
        if (!b->insts.n) {
            err(v, parent, "a region is empty: it must end with '%s'", op_info[term].name);
        } else if (b->insts.v[b->insts.n - 1].op != OP_YIELD && b->insts.v[b->insts.n - 1].op != OP_CONDITION) {
            err(v, &b->insts.v[b->insts.n - 1], "the region must end with '%s' after this instruction",
                op_info[term].name);
        }
    }
}

bool ir_verify(const Func *f, Diags *d)
{
    Arena *a = arena_new(0);
    if (!a)
        a = f->a; /* no memory for a scratch arena: use the function's */
    V v = {.f = f, .d = d, .a = a, .ok = true};
    if (f->vals.n < 1) {
        diag_error(d, f->loc, "IR verifier: the function has no value table");
        if (a != f->a)
            arena_free(a);
        return false;
    }
    v.names = ir_names(a, f);
    v.state = arena_alloc(a, (size_t)f->vals.n);
    for (int i = 0; i < f->nparams; i++) {
        ValId p = f->params[i];
        define(&v, NULL, p, "kernel parameter");
        if (p > 0 && p < f->vals.n && ty(&v, p).rank != 0) {
            diag_error(d, f->vals.v[p].loc, "IR verifier: kernel parameter %s must be a scalar, got %s",
                       vname(&v, p), tstr(&v, ty(&v, p)));
            v.ok = false;
        }
    }
    if (!f->body) {
        diag_error(d, f->loc, "IR verifier: the function has no body");
        v.ok = false;
    } else {
        check_block(&v, f->body, OP_COUNT, 0, NULL);
    }
    /* custom_vjp's and custom_jvp's rules: each sees only its own parameters and values */
    for (int r = 0; r < f->rules.n; r++) {
        for (int i = 1; i < f->vals.n; i++)
            if (v.state[i] == VS_LIVE)
                v.state[i] = VS_DEAD;
        const Block *rb = f->rules.v[r];
        for (int i = 0; i < rb->nparams; i++)
            define(&v, NULL, rb->params[i], "rule parameter");
        if (!rb->insts.n || rb->insts.v[rb->insts.n - 1].op != OP_YIELD) {
            diag_error(d, rb->insts.n ? rb->insts.v[rb->insts.n - 1].loc : f->loc,
                       "IR verifier: rule %d must end with 'yield'", r);
            v.ok = false;
        }
        check_block(&v, rb, rb->insts.n ? OP_YIELD : OP_COUNT, 1, NULL);
    }
    if (a != f->a)
        arena_free(a);
    return v.ok;
}
