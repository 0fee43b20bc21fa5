/* interp_ops.c -- the interpreter's operations: what one instruction does to its lanes.
 *
 * Job: the number formats (rounding to a dtype, halves and fp8, int formats and conversions, the
 * loads and stores of a buffer's elements), Philox as Triton's random.py computes it, every
 * elementwise, memory, shape, reduction, sort, dot and random operation, and interp_exec_inst, the
 * switch over them that interp.c's blocks run.  The representation, the guarantees and the
 * error convention are interp.c's (its header comment); the state is ir_int.h's Interp.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "ir/ir_int.h"
/* ------------------------------------------------------------------ */
/* Number formats                                                      */
/* ------------------------------------------------------------------ */


/* Halves use util.c's dtype_round, the one the constant folder uses too,
 * so a folded constant equals the interpreted result. */
static double round_f16(double x) { return dtype_round(DT_F16, x); }
static double round_bf16(double x) { return dtype_round(DT_BF16, x); }

/* Rounding a double to fp32 with a C cast is a single correct rounding;
 * for +, -, *, / and sqrt of operands of a narrower format, computing in
 * double first and rounding once is also correctly rounded (53 >= 2p+2). */
double interp_round_rk(int rk, double x)
{
    switch (rk) {
    case R_F32: return (double)(float)x;
    case R_F16: return round_f16(x);
    case R_BF16: return round_bf16(x);
    case R_F8E5: return dtype_round(DT_F8E5, x);
    case R_F8E4NV: return dtype_round(DT_F8E4NV, x);
    case R_F8E4B15: return dtype_round(DT_F8E4B15, x);
    default: return x;
    }
}

static void round_array(int rk, double *r, int64_t n)
{
    switch (rk) {
    case R_F32:
        for (int64_t i = 0; i < n; i++)
            r[i] = (double)(float)r[i];
        break;
    case R_F16:
        for (int64_t i = 0; i < n; i++)
            r[i] = round_f16(r[i]);
        break;
    case R_BF16:
        for (int64_t i = 0; i < n; i++)
            r[i] = round_bf16(r[i]);
        break;
    case R_NONE: break;
    default:
        for (int64_t i = 0; i < n; i++)
            r[i] = interp_round_rk(rk, r[i]);
        break;
    }
}

static double f16_decode(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

static uint16_t f16_encode(double x)
{
    double r = round_f16(x);
    uint16_t s = signbit(r) ? 0x8000 : 0;
    if (isnan(r))
        return s | 0x7e00;
    double a = fabs(r);
    if (a == INFINITY)
        return s | 0x7c00;
    if (a < 0x1p-14)
        return s | (uint16_t)(a * 0x1p24); /* subnormal: an exact integer */
    int e;
    double m = frexp(a, &e); /* m in [0.5, 1): 11 bits, exact */
    return (uint16_t)(s | (e + 14) << 10 | ((uint16_t)(m * 2048) - 1024));
}

static double bf16_decode(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t bf16_encode(double x)
{
    float f = (float)round_bf16(x); /* exact: bf16 values are floats */
    uint32_t u;
    memcpy(&u, &f, 4);
    if (isnan(f))
        return (uint16_t)((u >> 16 & 0x8000) | 0x7fc0);
    return (uint16_t)(u >> 16);
}
IntFmt interp_int_fmt(Dtype dt)
{
    int w = dtype_bits(dt);
    return (IntFmt){(uint8_t)(64 - w), !dtype_is_signed(dt)};
}

/* The bit length of m (0 for 0). */
static int bit_length(uint64_t m)
{
    int n = 0;
    while (m) {
        m >>= 1;
        n++;
    }
    return n;
}

/* m as a double rounded to odd: exact below 2^53, else the dropped bits
 * are folded into the lowest kept bit, so that one later rounding to a
 * format of at most 51 bits is the correct rounding of m. */
static double u64_to_double_odd(uint64_t m)
{
    int drop = bit_length(m) - 53;
    if (drop <= 0)
        return (double)m;
    uint64_t kept = m >> drop;
    if (m & (((uint64_t)1 << drop) - 1))
        kept |= 1;
    return ldexp((double)kept, drop);
}

/* An integer value of an int dtype converted to a float dtype. */
static double int_to_float(int64_t v, bool u64, int rk)
{
    if (rk == R_F32) /* C's int->float conversion rounds once, correctly */
        return u64 ? (double)(float)(uint64_t)v : (double)(float)v;
    if (rk == R_NONE)
        return u64 ? (double)(uint64_t)v : (double)v;
    uint64_t mag = u64 || v >= 0 ? (uint64_t)v : 0 - (uint64_t)v;
    double d = u64_to_double_odd(mag);
    return interp_round_rk(rk, !u64 && v < 0 ? -d : d);
}

/* A float converted to an int dtype: truncation toward zero, saturating
 * at the type's range, NaN -> 0 (what cvt.rzi does on the GPU); i1 is
 * x != 0 (Triton casts to bool by comparing with zero). */
static int64_t float_to_int(double x, Dtype dt)
{
    if (dt == DT_I1)
        return x != 0;
    if (isnan(x))
        return 0;
    x = trunc(x);
    if (dt == DT_U64) {
        if (x <= 0)
            return 0;
        if (x >= 0x1p64)
            return (int64_t)UINT64_MAX;
        return (int64_t)(uint64_t)x;
    }
    int w = dtype_bits(dt);
    int64_t lo, hi;
    if (dtype_is_signed(dt)) {
        hi = (int64_t)(((uint64_t)1 << (w - 1)) - 1);
        lo = -hi - 1;
    } else {
        lo = 0;
        hi = (int64_t)(((uint64_t)1 << w) - 1);
    }
    if (x <= (double)lo)
        return lo;
    if (x >= (double)hi)
        return hi;
    return (int64_t)x;
}

/* One element of dtype dt as it lies in memory (native byte order, like
 * the buffers Triton is given).  A float is rounded to dt on the way out
 * unless f64 (IM_F64 buffers hold doubles).  Loads, stores and atomics go
 * through these, and so does bitcast, which is a store in one dtype and a
 * load in another of the same width. */
static double load_float(const uint8_t *p, Dtype dt, bool f64)
{
    if (f64 || dt == DT_F64) {
        double d;
        memcpy(&d, p, 8);
        return d;
    }
    if (dt == DT_F32) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    if (dtype_is_fp8(dt))
        return fp8_decode(dt, *p);
    uint16_t h;
    memcpy(&h, p, 2);
    return dt == DT_F16 ? f16_decode(h) : bf16_decode(h);
}

static void store_float(uint8_t *p, Dtype dt, bool f64, double v)
{
    if (f64 || dt == DT_F64) {
        memcpy(p, &v, 8);
    } else if (dt == DT_F32) {
        float f = (float)v;
        memcpy(p, &f, 4);
    } else if (dtype_is_fp8(dt)) {
        *p = fp8_encode(dt, v);
    } else {
        uint16_t h = dt == DT_F16 ? f16_encode(v) : bf16_encode(v);
        memcpy(p, &h, 2);
    }
}

static int64_t load_int(const uint8_t *p, Dtype dt)
{
    switch (dt) {
    case DT_I1: return *p != 0; /* Triton stores i1 as one byte */
    case DT_I8: return (int8_t)*p;
    case DT_U8: return *p;
    case DT_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case DT_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case DT_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case DT_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { int64_t v; memcpy(&v, p, 8); return v; }
    }
}

static void store_int(uint8_t *p, Dtype dt, int64_t v)
{
    switch (dt) {
    case DT_I1: *p = v != 0; break;
    case DT_I8: case DT_U8: *p = (uint8_t)v; break;
    case DT_I16: case DT_U16: { uint16_t u = (uint16_t)v; memcpy(p, &u, 2); break; }
    case DT_I32: case DT_U32: { uint32_t u = (uint32_t)v; memcpy(p, &u, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

/* ------------------------------------------------------------------ */
/* Philox 4x32-10 / 4x64-10, as in triton/language/random.py           */
/* ------------------------------------------------------------------ */

/* Follows philox_impl, philox, randint4x, randint, uint_to_uniform_float,
 * rand, pair_uniform_to_normal and randn of triton/language/random.py
 * (Triton 3.x): the counter is (offset, 0, 0, 0); the seed, converted to
 * uint64, gives the key (low half, high half) for 32-bit offsets and
 * (seed, 0) for 64-bit offsets. */
#define PHILOX_KEY_A32 0x9E3779B9u
#define PHILOX_KEY_B32 0xBB67AE85u
#define PHILOX_ROUND_A32 0xD2511F53u
#define PHILOX_ROUND_B32 0xCD9E8D57u
#define PHILOX_KEY_A64 0x9E3779B97F4A7C15u
#define PHILOX_KEY_B64 0xBB67AE8584CAA73Bu
#define PHILOX_ROUND_A64 0xD2E7470EE14C6C93u
#define PHILOX_ROUND_B64 0xCA5A826395121157u
#define PHILOX_ROUNDS 10

static void philox32(uint32_t c[4], uint32_t k0, uint32_t k1)
{
    for (int r = 0; r < PHILOX_ROUNDS; r++) {
        uint64_t pb = (uint64_t)PHILOX_ROUND_B32 * c[2];
        uint64_t pa = (uint64_t)PHILOX_ROUND_A32 * c[0];
        c[0] = (uint32_t)(pb >> 32) ^ c[1] ^ k0;
        c[2] = (uint32_t)(pa >> 32) ^ c[3] ^ k1;
        c[1] = (uint32_t)pb;
        c[3] = (uint32_t)pa;
        k0 += PHILOX_KEY_A32;
        k1 += PHILOX_KEY_B32;
    }
}

/* The high 64 bits of the 128-bit product a*b (umulhi on 64-bit types). */
static uint64_t mulhi64(uint64_t a, uint64_t b)
{
    uint64_t al = a & 0xffffffffu, ah = a >> 32, bl = b & 0xffffffffu, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

static void philox64(uint64_t c[4], uint64_t k0, uint64_t k1)
{
    for (int r = 0; r < PHILOX_ROUNDS; r++) {
        uint64_t c0 = c[0], c2 = c[2];
        c[0] = mulhi64(PHILOX_ROUND_B64, c2) ^ c[1] ^ k0;
        c[2] = mulhi64(PHILOX_ROUND_A64, c0) ^ c[3] ^ k1;
        c[1] = PHILOX_ROUND_B64 * c2;
        c[3] = PHILOX_ROUND_A64 * c0;
        k0 += PHILOX_KEY_A64;
        k1 += PHILOX_KEY_B64;
    }
}

/* uint_to_uniform_float: the draw as a signed int, negatives folded onto
 * the non-negatives (-x-1), times a scale slightly below 2^-31 (2^-63),
 * all in fp32 as Triton computes it (int -> fp32, fp32 product). */
static float uniform32(uint32_t x)
{
    int32_t s = (int32_t)x;
    if (s < 0)
        s = (int32_t)~x; /* -s-1 without overflow */
    return (float)s * (float)4.6566127342e-10;
}

static float uniform64(uint64_t x)
{
    int64_t s = (int64_t)x;
    if (s < 0)
        s = (int64_t)~x;
    return (float)s * (float)1.0842020432385337e-19;
}

/* pair_uniform_to_normal, first output (Box-Muller), each step in fp32. */
static float uniform_pair_to_normal(float u1, float u2)
{
    u1 = u1 > (float)1.0e-7 ? u1 : (float)1.0e-7; /* tl.maximum(1.0e-7, u1) */
    float th = (float)6.283185307179586 * u2;
    float lg = (float)log((double)u1);
    float r = (float)sqrt((double)(-2.0f * lg));
    return r * (float)cos((double)th);
}
/* ------------------------------------------------------------------ */
/* Elementwise operations                                              */
/* ------------------------------------------------------------------ */

/* maxnum/minnum: a NaN operand yields the other operand (tl.maximum's
 * default PropagateNan.NONE lowers to the GPU's max.f32); +0 > -0. */
static inline double fmaxnum(double a, double b)
{
    if (isnan(a))
        return b;
    if (isnan(b))
        return a;
    if (a == b)
        return signbit(a) ? b : a;
    return a > b ? a : b;
}

static inline double fminnum(double a, double b)
{
    if (isnan(a))
        return b;
    if (isnan(b))
        return a;
    if (a == b)
        return signbit(a) ? a : b;
    return a < b ? a : b;
}

static double f_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double f_rsqrt(double x) { return 1.0 / sqrt(x); }

/* <math.h> function of each unary float math op. */
static double (*unary_fn(int op))(double)
{
    switch (op) {
    case OP_EXP: return exp;
    case OP_EXP2: return exp2;
    case OP_EXPM1: return expm1;
    case OP_LOG: return log;
    case OP_LOG2: return log2;
    case OP_LOG1P: return log1p;
    case OP_SQRT: return sqrt;
    case OP_RSQRT: return f_rsqrt;
    case OP_SIGMOID: return f_sigmoid;
    case OP_SIN: return sin;
    case OP_COS: return cos;
    case OP_TAN: return tan;
    case OP_ASIN: return asin;
    case OP_ACOS: return acos;
    case OP_ATAN: return atan;
    case OP_SINH: return sinh;
    case OP_COSH: return cosh;
    case OP_TANH: return tanh;
    case OP_ERF: return erf;
    case OP_FLOOR: return floor;
    case OP_CEIL: return ceil;
    case OP_TRUNC: return trunc;
    case OP_RINT: return nearbyint; /* half to even in the default rounding mode */
    default: return NULL;
    }
}

static void float_binop(Interp *S, const XInst *xi)
{
    const double *a = xi->x, *b = xi->y;
    double *r = xi->r;
    int64_t n = xi->n;
    switch (xi->op) {
    case OP_ADD: LOOP(n) r[i] = a[i] + b[i]; break;
    case OP_SUB: LOOP(n) r[i] = a[i] - b[i]; break;
    case OP_MUL: LOOP(n) r[i] = a[i] * b[i]; break;
    case OP_DIV: LOOP(n) r[i] = a[i] / b[i]; break;
    case OP_REM: LOOP(n) r[i] = fmod(a[i], b[i]); break;
    case OP_POW: LOOP(n) r[i] = pow(a[i], b[i]); break;
    case OP_MAXIMUM: LOOP(n) r[i] = fmaxnum(a[i], b[i]); break;
    case OP_MINIMUM: LOOP(n) r[i] = fminnum(a[i], b[i]); break;
    case OP_ATAN2: LOOP(n) r[i] = atan2(a[i], b[i]); break;
    default: interp_unsupported(S, xi);
    }
    round_array(xi->rk, r, n);
}

/* a*b+c rounded once to the result dtype: the product of two operands of
 * at most 26 significant bits is exact in double; the sum's error (TwoSum)
 * is folded into the last bit (round to odd), so that rounding the double
 * to fp32/fp16/bf16 is the correctly rounded fused result. */
static double fma_round(double a, double b, double c, int rk)
{
    if (rk == R_NONE)
        return fma(a, b, c);
    double p = a * b, s = p + c;
    double bv = s - p, err = (p - (s - bv)) + (c - bv);
    if (err != 0 && isfinite(s)) {
        uint64_t u;
        memcpy(&u, &s, 8);
        if (!(u & 1))
            s = nextafter(s, err > 0 ? INFINITY : -INFINITY);
    }
    return interp_round_rk(rk, s);
}

/* A libdevice op (ops.h, KAD_LIBM_OPS), lane by lane: libm_eval's values,
 * rounded to the result dtype; ilogb's int result. */
static void libm_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    int ni = libm_int_operand(in->op);
    const void *op3[3] = {xi->x, xi->y, xi->z};
    const double *fa[3] = {NULL, NULL, NULL};
    const int64_t *ia = ni >= 0 ? op3[ni] : NULL;
    for (int k = 0; k < in->nargs && k < 3; k++)
        if (k != ni)
            fa[k] = op3[k];
    if (!fa[ni == 0 ? 1 : 0])
        interp_unsupported(S, xi);
    bool f32 = xi->rk == R_F32;
    if (in->op == OP_ILOGB) {
        int64_t *r = xi->r;
        LOOP(xi->n) r[i] = (int64_t)libm_eval(in->op, in->ival, f32, fa[0][i], 0, 0, 0);
        return;
    }
    double *r = xi->r;
    LOOP(xi->n) r[i] = libm_eval(in->op, in->ival, f32, fa[0] ? fa[0][i] : 0, fa[1] ? fa[1][i] : 0,
                                 fa[2] ? fa[2][i] : 0, ia ? ia[i] : 0);
    round_array(xi->rk, r, xi->n);
}

static void int_binop(Interp *S, const XInst *xi)
{
    const int64_t *a = xi->x, *b = xi->y;
    int64_t *r = xi->r;
    int64_t n = xi->n;
    IntFmt F = xi->ifmt;
    bool u64 = xi->cls == C_U64;
    int w = 64 - F.sh;
    switch (xi->op) {
    case OP_ADD: LOOP(n) r[i] = iwrap((uint64_t)a[i] + (uint64_t)b[i], F); break;
    case OP_SUB: LOOP(n) r[i] = iwrap((uint64_t)a[i] - (uint64_t)b[i], F); break;
    case OP_MUL: LOOP(n) r[i] = iwrap((uint64_t)a[i] * (uint64_t)b[i], F); break;
    case OP_DIV:
    case OP_REM:
        LOOP(n) {
            if (b[i] == 0)
                interp_fail(S, xi->in->loc, interp_vtype(S, xi->in->res[0]), i, "integer %s by zero",
                            xi->op == OP_DIV ? "division" : "remainder");
            if (u64) {
                uint64_t q = (uint64_t)a[i] / (uint64_t)b[i], m = (uint64_t)a[i] % (uint64_t)b[i];
                r[i] = (int64_t)(xi->op == OP_DIV ? q : m);
            } else if (b[i] == -1) { /* INT_MIN / -1 wraps; remainder 0 */
                r[i] = xi->op == OP_DIV ? iwrap(0 - (uint64_t)a[i], F) : 0;
            } else {
                r[i] = iwrap((uint64_t)(xi->op == OP_DIV ? a[i] / b[i] : a[i] % b[i]), F);
            }
        }
        break;
    case OP_MAXIMUM:
        if (u64)
            LOOP(n) r[i] = (uint64_t)a[i] > (uint64_t)b[i] ? a[i] : b[i];
        else
            LOOP(n) r[i] = a[i] > b[i] ? a[i] : b[i];
        break;
    case OP_MINIMUM:
        if (u64)
            LOOP(n) r[i] = (uint64_t)a[i] < (uint64_t)b[i] ? a[i] : b[i];
        else
            LOOP(n) r[i] = a[i] < b[i] ? a[i] : b[i];
        break;
    case OP_AND: LOOP(n) r[i] = a[i] & b[i]; break;
    case OP_OR: LOOP(n) r[i] = a[i] | b[i]; break;
    case OP_XOR: LOOP(n) r[i] = a[i] ^ b[i]; break;
    /* Shift amounts at or beyond the width (negative ones included, read
     * as unsigned) give 0, or the sign fill for arithmetic right shifts:
     * what PTX's clamping shl/shr do. */
    case OP_SHL:
        LOOP(n) r[i] = (uint64_t)b[i] >= (uint64_t)w ? 0 : iwrap((uint64_t)a[i] << b[i], F);
        break;
    case OP_SHR:
        if (F.uns)
            LOOP(n) r[i] = (uint64_t)b[i] >= (uint64_t)w ? 0 : (int64_t)((uint64_t)a[i] >> b[i]);
        else
            LOOP(n) r[i] = (uint64_t)b[i] >= (uint64_t)w ? (a[i] < 0 ? -1 : 0) : a[i] >> b[i];
        break;
    case OP_UMULHI:
        if (w == 64) {
            LOOP(n) r[i] = (int64_t)mulhi64((uint64_t)a[i], (uint64_t)b[i]);
        } else {
            uint64_t mask = ((uint64_t)1 << w) - 1;
            LOOP(n) r[i] = iwrap((((uint64_t)a[i] & mask) * ((uint64_t)b[i] & mask)) >> w, F);
        }
        break;
    default: interp_unsupported(S, xi);
    }
}

/* Comparisons: NaN compares false except with ne (Triton's != is the
 * unordered fcmp une: !(a == b), the same as != for integers).
 * COMPARE_LANES(T) sets r[i] = a[i] op b[i] for lanes of element type T. */
#define COMPARE_LANES(T)                                        \
    do {                                                        \
        const T *a = xi->x, *b = xi->y;                         \
        switch (op) {                                           \
        case OP_LT: LOOP(n) r[i] = a[i] < b[i]; break;          \
        case OP_LE: LOOP(n) r[i] = a[i] <= b[i]; break;         \
        case OP_GT: LOOP(n) r[i] = a[i] > b[i]; break;          \
        case OP_GE: LOOP(n) r[i] = a[i] >= b[i]; break;         \
        case OP_EQ: LOOP(n) r[i] = a[i] == b[i]; break;         \
        default: LOOP(n) r[i] = !(a[i] == b[i]); break;         \
        }                                                       \
    } while (0)

static void compare(Interp *S, const XInst *xi)
{
    int64_t *r = xi->r, n = xi->n;
    int op = xi->op;
    if (xi->cls == C_FLOAT) {
        COMPARE_LANES(double);
    } else if (xi->cls == C_INT) {
        COMPARE_LANES(int64_t);
    } else if (xi->cls == C_U64) {
        COMPARE_LANES(uint64_t);
    } else {
        /* pointers: ordered by (buffer, offset) */
        const PtrLane *a = xi->x, *b = xi->y;
        LOOP(n) {
            int c = a[i].buf != b[i].buf ? (a[i].buf < b[i].buf ? -1 : 1)
                    : a[i].off != b[i].off ? (a[i].off < b[i].off ? -1 : 1) : 0;
            switch (op) {
            case OP_LT: r[i] = c < 0; break;
            case OP_LE: r[i] = c <= 0; break;
            case OP_GT: r[i] = c > 0; break;
            case OP_GE: r[i] = c >= 0; break;
            case OP_EQ: r[i] = c == 0; break;
            default: r[i] = c != 0; break;
            }
        }
    }
    (void)S;
}
#undef COMPARE_LANES

static void unary(Interp *S, const XInst *xi)
{
    int64_t n = xi->n;
    int op = xi->op;
    if (op == OP_ISNAN || op == OP_ISINF) {
        const double *a = xi->x;
        int64_t *r = xi->r;
        if (xi->cls != C_FLOAT)
            LOOP(n) r[i] = 0;
        else if (op == OP_ISNAN)
            LOOP(n) r[i] = isnan(a[i]) != 0;
        else
            LOOP(n) r[i] = isinf(a[i]) != 0;
        return;
    }
    if (xi->cls == C_FLOAT) {
        const double *a = xi->x;
        double *r = xi->r;
        if (op == OP_NEG) {
            LOOP(n) r[i] = -a[i];
        } else if (op == OP_ABS) {
            LOOP(n) r[i] = fabs(a[i]);
        } else {
            double (*fn)(double) = unary_fn(op);
            if (!fn)
                interp_unsupported(S, xi);
            LOOP(n) r[i] = fn(a[i]);
        }
        round_array(xi->rk, r, n);
        return;
    }
    if (xi->cls == C_PTR)
        interp_unsupported(S, xi);
    const int64_t *a = xi->x;
    int64_t *r = xi->r;
    IntFmt F = xi->ifmt;
    switch (op) {
    case OP_NEG: LOOP(n) r[i] = iwrap(0 - (uint64_t)a[i], F); break;
    case OP_ABS:
        if (F.uns)
            LOOP(n) r[i] = a[i];
        else
            LOOP(n) r[i] = a[i] < 0 ? iwrap(0 - (uint64_t)a[i], F) : a[i];
        break;
    case OP_NOT: LOOP(n) r[i] = iwrap(~(uint64_t)a[i], F); break;
    default: interp_unsupported(S, xi);
    }
}

/* Copies n lanes of lb bytes each. */
void interp_copy_lanes(void *dst, const void *src, int64_t n, size_t lb)
{
    if (dst != src)
        memcpy(dst, src, (size_t)n * lb);
}

static void where_op(const XInst *xi)
{
    const int64_t *c = xi->x;
    int64_t n = xi->n;
    if (xi->rdt == DT_PTR) {
        const PtrLane *a = xi->y, *b = xi->z;
        PtrLane *r = xi->r;
        LOOP(n) r[i] = c[i] ? a[i] : b[i];
    } else {
        const int64_t *a = xi->y, *b = xi->z;
        int64_t *r = xi->r;
        LOOP(n) r[i] = c[i] ? a[i] : b[i];
    }
}

static void cast_op(Interp *S, const XInst *xi)
{
    Type st = interp_vtype(S, xi->in->args[0]);
    Dtype sdt = (Dtype)st.dt, rdt = xi->rdt;
    int64_t n = xi->n;
    bool sf = dtype_is_float(sdt), rf = dtype_is_float(rdt);
    if (sdt == DT_PTR || rdt == DT_PTR) {
        if (sdt == DT_PTR && rdt == DT_PTR) {
            interp_copy_lanes(xi->r, xi->x, n, sizeof(PtrLane));
            return;
        }
        interp_unsupported(S, xi);
    }
    if (sf && rf) {
        interp_copy_lanes(xi->r, xi->x, n, 8);
        round_array(xi->rk, xi->r, n);
    } else if (!sf && rf) {
        const int64_t *a = xi->x;
        double *r = xi->r;
        bool u64 = sdt == DT_U64;
        LOOP(n) r[i] = int_to_float(a[i], u64, xi->rk);
    } else if (sf && !rf) {
        const double *a = xi->x;
        int64_t *r = xi->r;
        LOOP(n) r[i] = float_to_int(a[i], rdt);
    } else {
        const int64_t *a = xi->x;
        int64_t *r = xi->r;
        if (rdt == DT_I1)
            LOOP(n) r[i] = a[i] != 0;
        else
            LOOP(n) r[i] = iwrap((uint64_t)a[i], xi->ifmt);
    }
}

/* Same-width reinterpretation: each lane is stored in its dtype's memory
 * format and loaded back in the result's.  A float operand is thereby
 * rounded to its dtype first (a no-op in IM_AS_WRITTEN; in IM_F64 its bits
 * are those of the declared dtype). */
static void bitcast_op(Interp *S, const XInst *xi)
{
    Type st = interp_vtype(S, xi->in->args[0]);
    Dtype sdt = (Dtype)st.dt, rdt = xi->rdt;
    int64_t n = xi->n;
    if (sdt == DT_PTR || rdt == DT_PTR) {
        if (sdt == DT_PTR && rdt == DT_PTR) {
            interp_copy_lanes(xi->r, xi->x, n, sizeof(PtrLane));
            return;
        }
        interp_unsupported(S, xi);
    }
    bool sf = dtype_is_float(sdt), rf = dtype_is_float(rdt);
    LOOP(n) {
        uint8_t elem[8] = {0}; /* the lane's bytes, at most 64 bits */
        if (sf)
            store_float(elem, sdt, false, ((const double *)xi->x)[i]);
        else
            store_int(elem, sdt, ((const int64_t *)xi->x)[i]);
        if (rf)
            ((double *)xi->r)[i] = load_float(elem, rdt, false);
        else
            ((int64_t *)xi->r)[i] = load_int(elem, rdt);
    }
}

/* ------------------------------------------------------------------ */
/* Memory                                                              */
/* ------------------------------------------------------------------ */

/* Reports a failed access of lane i (cold path of lane_addr). */
static _Noreturn void access_error(Interp *S, const XInst *xi, const PtrLane *p, int64_t i,
                                   int es, const char *what)
{
    Type pt = interp_vtype(S, xi->in->args[0]);
    int64_t bi = p->buf - 1;
    if (bi < 0 || bi >= S->f->nparams || !S->bufs[bi].name)
        interp_fail(S, xi->in->loc, pt, i, "%s through an invalid pointer", what);
    const Buffer *B = &S->bufs[bi];
    int64_t off = p->off;
    if (off < 0 || off > B->nbytes - es) {
        int64_t el = off / es - (off % es < 0); /* floor division */
        interp_fail(S, xi->in->loc, pt, i, "out-of-bounds %s '%s': element %lld of %lld", what, B->name,
                    (long long)el, (long long)(B->nbytes / es));
    }
    interp_fail(S, xi->in->loc, pt, i, "misaligned %s '%s': byte offset %lld is not a multiple of %d",
                what, B->name, (long long)off, es);
}

/* The address of lane i of a pointer operand for an access of es bytes (a
 * power of two), after the bounds and alignment checks. */
static inline uint8_t *lane_addr(Interp *S, const XInst *xi, const PtrLane *p, int64_t i, int es,
                                 const char *what)
{
    uint64_t bi = (uint64_t)(p->buf - 1);
    if (bi < (uint64_t)S->f->nparams) {
        const Buffer *B = &S->bufs[bi];
        int64_t off = p->off;
        if (off >= 0 && off <= B->nbytes - es && !(off & (es - 1)) && B->name)
            return B->data + off;
    }
    access_error(S, xi, p, i, es, what);
}

/* Operand positions of the optional mask and other. */
static const int64_t *mask_of(const Interp *S, const Inst *in, int at)
{
    return (in->flags & IF_HAS_MASK) ? S->slot[in->args[at]] : NULL;
}

static void load_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    const PtrLane *p = xi->x;
    const int64_t *m = mask_of(S, in, 1);
    const int64_t *other = (in->flags & IF_HAS_OTHER) ? S->slot[in->args[m ? 2 : 1]] : NULL;
    Dtype dt = xi->rdt;
    if (dt == DT_PTR)
        interp_unsupported(S, xi);
    int es = access_size(S, dt);
    int64_t *r = xi->r; /* raw 8-byte lanes: doubles or int64 */
    bool fl = dtype_is_float(dt);
    LOOP(xi->n) {
        if (m && !m[i]) {
            r[i] = other ? other[i] : 0; /* 0 and 0.0 share their bits */
            continue;
        }
        const uint8_t *addr = lane_addr(S, xi, &p[i], i, es, "load from");
        if (fl) {
            double v = load_float(addr, dt, S->f64);
            memcpy(&r[i], &v, 8);
        } else {
            r[i] = load_int(addr, dt);
        }
    }
}

static void store_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    const PtrLane *p = xi->x;
    const int64_t *m = mask_of(S, in, 2);
    Dtype dt = (Dtype)interp_vtype(S, in->args[1]).dt;
    if (dt == DT_PTR)
        interp_unsupported(S, xi);
    int es = access_size(S, dt);
    bool fl = dtype_is_float(dt);
    LOOP(xi->n) {
        if (m && !m[i])
            continue;
        uint8_t *addr = lane_addr(S, xi, &p[i], i, es, "store to");
        if (fl)
            store_float(addr, dt, S->f64, ((const double *)xi->y)[i]);
        else
            store_int(addr, dt, ((const int64_t *)xi->y)[i]);
    }
}

/* The value an atomic of kind op leaves, from the old one and the lane's (atomic_max and
 * atomic_min compare unsigned ints as unsigned: u is true for u32/u64). */
static double atomic_float(OpKind op, double old, double v)
{
    switch (op) {
    case OP_ATOMIC_MAX: return v > old ? v : old;
    case OP_ATOMIC_MIN: return v < old ? v : old;
    case OP_ATOMIC_XCHG: return v;
    default: return old + v;
    }
}
static int64_t atomic_int(OpKind op, int64_t old, int64_t v, bool u)
{
    bool gt = u ? (uint64_t)v > (uint64_t)old : v > old, lt = u ? (uint64_t)v < (uint64_t)old : v < old;
    switch (op) {
    case OP_ATOMIC_MAX: return gt ? v : old;
    case OP_ATOMIC_MIN: return lt ? v : old;
    case OP_ATOMIC_XCHG: return v;
    default: return (int64_t)((uint64_t)old + (uint64_t)v);
    }
}

/* Lanes apply in lane order, so lanes hitting one address see each
 * other's writes.  Masked-off lanes return 0. */
static void atomic_op(Interp *S, const XInst *xi)
{
    OpKind op = (OpKind)xi->in->op;
    const Inst *in = xi->in;
    const PtrLane *p = xi->x;
    const int64_t *m = mask_of(S, in, 2);
    Dtype dt = xi->rdt;
    if (dt == DT_PTR)
        interp_unsupported(S, xi);
    int es = access_size(S, dt);
    bool fl = dtype_is_float(dt);
    int rk = interp_rk_of(S, dt);
    IntFmt F = interp_int_fmt(fl ? DT_I64 : dt);
    LOOP(xi->n) {
        if (m && !m[i]) {
            ((int64_t *)xi->r)[i] = 0;
            continue;
        }
        uint8_t *addr = lane_addr(S, xi, &p[i], i, es, op_info[op].name);
        if (fl) {
            double old = load_float(addr, dt, S->f64);
            store_float(addr, dt, S->f64, interp_round_rk(rk, atomic_float(op, old, ((const double *)xi->y)[i])));
            ((double *)xi->r)[i] = old;
        } else {
            int64_t old = load_int(addr, dt);
            int64_t nv = atomic_int(op, old, ((const int64_t *)xi->y)[i], dt == DT_U32 || dt == DT_U64);
            store_int(addr, dt, iwrap((uint64_t)nv, F));
            ((int64_t *)xi->r)[i] = old;
        }
    }
}

static void addptr_op(Interp *S, const XInst *xi)
{
    const PtrLane *p = xi->x;
    const int64_t *o = xi->y;
    PtrLane *r = xi->r;
    Type pt = interp_vtype(S, xi->in->args[0]);
    uint64_t es = (uint64_t)access_size(S, (Dtype)pt.elem);
    LOOP(xi->n) {
        r[i].buf = p[i].buf;
        r[i].off = (int64_t)((uint64_t)p[i].off + (uint64_t)o[i] * es);
    }
}

/* ------------------------------------------------------------------ */
/* Shapes, reductions, scans, dot                                      */
/* ------------------------------------------------------------------ */

/* Row-major strides (in lanes) of shape t. */
static void strides_of(Type t, int64_t st[KAD_MAX_RANK])
{
    int64_t s = 1;
    for (int k = t.rank - 1; k >= 0; k--) {
        st[k] = s;
        s *= t.shape[k];
    }
}

/* Copies a tile of result type rt lane by lane, reading source lane
 * sum(idx[k] * sst[k]) for result index idx (an odometer over rt). */
static void gather(void *dst, const void *src, Type rt, const int64_t sst[KAD_MAX_RANK], size_t lb)
{
    int64_t n = type_numel(rt);
    int64_t idx[KAD_MAX_RANK] = {0};
    int64_t so = 0;
    uint8_t *d = dst;
    const uint8_t *s = src;
    for (int64_t i = 0; i < n; i++) {
        if (lb == 8)
            ((int64_t *)dst)[i] = ((const int64_t *)src)[so];
        else
            memcpy(d + (size_t)i * lb, s + (size_t)so * lb, lb);
        for (int k = rt.rank - 1; k >= 0; k--) {
            idx[k]++;
            so += sst[k];
            if (idx[k] < rt.shape[k])
                break;
            so -= sst[k] * idx[k];
            idx[k] = 0;
        }
    }
}

static void broadcast_op(Interp *S, const XInst *xi)
{
    Type st = interp_vtype(S, xi->in->args[0]), rt = interp_vtype(S, xi->in->res[0]);
    size_t lb = interp_lane_bytes(rt);
    if (st.rank == 0 || type_numel(st) == 1) {
        if (lb == 8) {
            int64_t v = *(const int64_t *)xi->x, *r = xi->r;
            LOOP(xi->n) r[i] = v;
        } else {
            PtrLane v = *(const PtrLane *)xi->x, *r = xi->r;
            LOOP(xi->n) r[i] = v;
        }
        return;
    }
    ASSERT(st.rank == rt.rank);
    int64_t sst[KAD_MAX_RANK];
    strides_of(st, sst);
    for (int k = 0; k < st.rank; k++)
        if (st.shape[k] == 1)
            sst[k] = 0;
    gather(xi->r, xi->x, rt, sst, lb);
}

static void permute_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type st = interp_vtype(S, in->args[0]), rt = interp_vtype(S, in->res[0]);
    int64_t sst[KAD_MAX_RANK], pst[KAD_MAX_RANK];
    strides_of(st, sst);
    for (int k = 0; k < rt.rank; k++)
        pst[k] = sst[in->ints[k]]; /* result axis k is source axis perm[k] */
    gather(xi->r, xi->x, rt, pst, interp_lane_bytes(rt));
}

/* The [outer, len, inner] view of a tile around `axis`. */
void interp_axis_view(Type t, int axis, int64_t *outer, int64_t *len, int64_t *inner)
{
    *outer = *inner = 1;
    for (int k = 0; k < axis; k++)
        *outer *= t.shape[k];
    *len = t.rank ? t.shape[axis] : 1;
    for (int k = axis + 1; k < t.rank; k++)
        *inner *= t.shape[k];
}

/* sum/max/min/argmax/argmin: sequential order along the axis.  Float sums
 * accumulate in double and round once; max/min are maxnum/minnum (NaNs
 * ignored unless all lanes are NaN); argmax/argmin fold Triton's
 * _argmax_combine/_argmin_combine with tie_break_left from the first
 * index. */
static void reduce_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type st = interp_vtype(S, in->args[0]);
    int64_t O, L, I;
    interp_axis_view(st, (int)in->ival, &O, &L, &I);
    int op = xi->op;
    bool fl = xi->cls == C_FLOAT, u64 = xi->cls == C_U64;
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            int64_t base = o * L * I + i, out = o * I + i;
            if (fl) {
                const double *a = xi->x;
                double acc = a[base];
                int64_t best = 0;
                for (int64_t k = 1; k < L; k++) {
                    double v = a[base + k * I];
                    switch (op) {
                    case OP_SUM: acc += v; break;
                    case OP_MAX: acc = fmaxnum(acc, v); break;
                    case OP_MIN: acc = fminnum(acc, v); break;
                    case OP_ARGMAX: if (!(acc > v || acc == v)) { acc = v; best = k; } break;
                    case OP_ARGMIN: if (!(acc < v || acc == v)) { acc = v; best = k; } break;
                    default: interp_unsupported(S, xi);
                    }
                }
                if (op == OP_ARGMAX || op == OP_ARGMIN)
                    ((int64_t *)xi->r)[out] = best;
                else
                    ((double *)xi->r)[out] = interp_round_rk(xi->rk, acc);
            } else {
                const int64_t *a = xi->x;
                int64_t acc = a[base], best = 0;
                for (int64_t k = 1; k < L; k++) {
                    int64_t v = a[base + k * I];
                    bool gt = u64 ? (uint64_t)v > (uint64_t)acc : v > acc;
                    bool lt = u64 ? (uint64_t)v < (uint64_t)acc : v < acc;
                    switch (op) {
                    case OP_SUM: acc = (int64_t)((uint64_t)acc + (uint64_t)v); break;
                    case OP_MAX: if (gt) acc = v; break;
                    case OP_MIN: if (lt) acc = v; break;
                    case OP_ARGMAX: if (gt) { acc = v; best = k; } break;
                    case OP_ARGMIN: if (lt) { acc = v; best = k; } break;
                    default: interp_unsupported(S, xi);
                    }
                }
                ((int64_t *)xi->r)[out] =
                    op == OP_ARGMAX || op == OP_ARGMIN ? best : iwrap((uint64_t)acc, xi->ifmt);
            }
        }
}

/* Inclusive scans; the running value is kept in double (int64 for ints)
 * and each output is rounded to the dtype. */
static void scan_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type st = interp_vtype(S, in->args[0]);
    int64_t O, L, I;
    interp_axis_view(st, (int)in->ival, &O, &L, &I);
    bool rev = (in->flags & IF_REVERSE) != 0, prod = xi->op == OP_CUMPROD;
    bool fl = xi->cls == C_FLOAT;
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            double facc = prod ? 1 : 0;
            uint64_t iacc = prod ? 1 : 0;
            for (int64_t j = 0; j < L; j++) {
                int64_t k = rev ? L - 1 - j : j;
                int64_t at = o * L * I + k * I + i;
                if (fl) {
                    double v = ((const double *)xi->x)[at];
                    facc = prod ? facc * v : facc + v;
                    ((double *)xi->r)[at] = interp_round_rk(xi->rk, facc);
                } else {
                    uint64_t v = (uint64_t)((const int64_t *)xi->x)[at];
                    iacc = prod ? iacc * v : iacc + v;
                    ((int64_t *)xi->r)[at] = iwrap(iacc, xi->ifmt);
                }
            }
        }
    (void)S;
}

/* join: the two operands' lanes alternate along a new last axis of 2. */
static void join_op(const XInst *xi)
{
    const int64_t *a = xi->x, *b = xi->y;
    int64_t *r = xi->r;
    LOOP(xi->n / 2) {
        r[2 * i] = a[i];
        r[2 * i + 1] = b[i];
    }
}

/* split: lane `half` of each pair of the last axis. */
static void split_op(const XInst *xi)
{
    const int64_t *x = xi->x;
    int64_t *r = xi->r, h = xi->in->ival;
    LOOP(xi->n) r[i] = x[2 * i + h];
}

/* flip: the axis reversed. */
static void flip_op(Interp *S, const XInst *xi)
{
    int64_t O, L, I;
    interp_axis_view(interp_vtype(S, xi->in->args[0]), (int)xi->in->ival, &O, &L, &I);
    const int64_t *x = xi->x;
    int64_t *r = xi->r;
    for (int64_t o = 0; o < O; o++)
        for (int64_t k = 0; k < L; k++)
            for (int64_t i = 0; i < I; i++)
                r[(o * L + k) * I + i] = x[(o * L + L - 1 - k) * I + i];
}

/* gather: r[.., j, ..] = src[.., index[.., j, ..], ..] along the axis; an
 * index outside the source's axis is an error (Triton's result is
 * undefined there). */
static void gather_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type st = interp_vtype(S, in->args[0]), it = interp_vtype(S, in->args[1]);
    int axis = (int)in->ival;
    int64_t sst[KAD_MAX_RANK], idx[KAD_MAX_RANK] = {0};
    strides_of(st, sst);
    const int64_t *src = xi->x, *ix = xi->y;
    int64_t *r = xi->r;
    bool u64 = it.dt == DT_U64;
    for (int64_t i = 0; i < xi->n; i++) {
        int64_t v = ix[i];
        if ((u64 && (uint64_t)v >= (uint64_t)st.shape[axis]) || (!u64 && (v < 0 || v >= st.shape[axis])))
            interp_fail(S, in->loc, it, i, "gather index %lld is out of range for axis %d of size %d", (long long)v,
                        axis, (int)st.shape[axis]);
        int64_t so = v * sst[axis];
        for (int k = 0; k < st.rank; k++)
            if (k != axis)
                so += idx[k] * sst[k];
        r[i] = src[so];
        for (int k = it.rank - 1; k >= 0; k--) {
            if (++idx[k] < it.shape[k])
                break;
            idx[k] = 0;
        }
    }
}

/* Orders for sort: ascending; NaNs after every number. */
static int cmp_f64(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    if (isnan(x) || isnan(y))
        return isnan(x) - isnan(y);
    return (x > y) - (x < y);
}
static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* sort: each row of the last axis sorted (descending under IF_REVERSE), the
 * first ival values kept (tl.topk). */
static void sort_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type st = interp_vtype(S, in->args[0]);
    int64_t L = st.shape[st.rank - 1], k = in->ival, rows = type_numel(st) / L;
    bool desc = (in->flags & IF_REVERSE) != 0;
    /* a full ascending sort runs in the result; otherwise in scratch (topk) */
    int64_t *row = k == L && !desc ? NULL : arena_alloc(S->a, (size_t)L * sizeof *row);
    for (int64_t o = 0; o < rows; o++) {
        if (!row) {
            memcpy((int64_t *)xi->r + o * L, (const int64_t *)xi->x + o * L, (size_t)L * sizeof *row);
            qsort((int64_t *)xi->r + o * L, (size_t)L, sizeof *row,
                  xi->cls == C_FLOAT ? cmp_f64 : xi->cls == C_U64 ? cmp_u64 : cmp_i64);
            continue;
        }
        memcpy(row, (const int64_t *)xi->x + o * L, (size_t)L * sizeof *row);
        qsort(row, (size_t)L, sizeof *row,
              xi->cls == C_FLOAT ? cmp_f64 : xi->cls == C_U64 ? cmp_u64 : cmp_i64);
        for (int64_t j = 0; j < k; j++)
            ((int64_t *)xi->r)[o * k + j] = row[desc ? L - 1 - j : j];
    }
}

/* histogram: counts of the values 0 .. bins-1 over the (unmasked) lanes; a
 * value outside is an error (Triton's GPU result is undefined there). */
static void histogram_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type xt = interp_vtype(S, in->args[0]);
    const int64_t *x = xi->x, *m = in->nargs > 1 ? xi->y : NULL;
    int64_t *r = xi->r, nb = in->ival;
    bool u64 = xt.dt == DT_U64;
    LOOP(nb) r[i] = 0;
    LOOP(type_numel(xt)) {
        if (m && !m[i])
            continue;
        if ((u64 && (uint64_t)x[i] >= (uint64_t)nb) || (!u64 && (x[i] < 0 || x[i] >= nb)))
            interp_fail(S, in->loc, xt, i, "histogram value %lld is outside the %lld bins", (long long)x[i],
                        (long long)nb);
        r[x[i]]++;
    }
}

/* dot: a[(B,)M,K] x b[(B,)K,N] + acc[(B,)M,N].  For each output the
 * products are summed over k in order in double (exact int64 for ints),
 * then acc is added and the result rounded once to the result dtype. */
static void dot_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type at = interp_vtype(S, in->args[0]), bt = interp_vtype(S, in->args[1]);
    int r = at.rank;
    int64_t B = r == 3 ? at.shape[0] : 1;
    int64_t M = at.shape[r - 2], K = at.shape[r - 1], N = bt.shape[r - 1];
    bool fl = xi->cls == C_FLOAT;
    if (fl != dtype_is_float(xi->rdt) || interp_cls_of(bt) != xi->cls || xi->cls == C_PTR)
        interp_unsupported(S, xi);
    for (int64_t bb = 0; bb < B; bb++) {
        int64_t ao = bb * M * K, bo = bb * K * N, ro = bb * M * N;
        if (fl) {
            const double *a = (const double *)xi->x + ao, *b = (const double *)xi->y + bo;
            const double *c = (const double *)xi->z + ro;
            double *res = (double *)xi->r + ro;
            for (int64_t i = 0; i < M * N; i++)
                res[i] = 0;
            for (int64_t i = 0; i < M; i++)
                for (int64_t k = 0; k < K; k++) {
                    double aik = a[i * K + k];
                    const double *brow = b + k * N;
                    double *rrow = res + i * N;
                    for (int64_t j = 0; j < N; j++)
                        rrow[j] += aik * brow[j];
                }
            for (int64_t i = 0; i < M * N; i++)
                res[i] = interp_round_rk(xi->rk, res[i] + c[i]);
        } else {
            const int64_t *a = (const int64_t *)xi->x + ao, *b = (const int64_t *)xi->y + bo;
            const int64_t *c = (const int64_t *)xi->z + ro;
            int64_t *res = (int64_t *)xi->r + ro;
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    uint64_t s = 0;
                    for (int64_t k = 0; k < K; k++)
                        s += (uint64_t)a[i * K + k] * (uint64_t)b[k * N + j];
                    res[i * N + j] = iwrap(s + (uint64_t)c[i * N + j], xi->ifmt);
                }
        }
    }
}

/* ------------------------------------------------------------------ */
/* Random numbers                                                      */
/* ------------------------------------------------------------------ */

/* rand/randn/randint.  Values are those of Triton's fp32 computation in
 * both modes (IM_F64 included), so that dropout masks agree across modes. */
static void random_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type ot = interp_vtype(S, in->args[1]);
    int ow = dtype_bits((Dtype)ot.dt);
    if (ow != 32 && ow != 64)
        interp_fail(S, in->loc, ot, -1, "%s: offsets must be 32- or 64-bit integers, got %s",
                    op_info[in->op].name, dtype_name((Dtype)ot.dt));
    uint64_t seed = (uint64_t)*(const int64_t *)xi->x; /* seed.to(tl.uint64) */
    const int64_t *off = xi->y;
    LOOP(xi->n) {
        uint64_t r0;
        float u0, u1;
        if (ow == 32) {
            uint32_t c[4] = {(uint32_t)off[i], 0, 0, 0};
            philox32(c, (uint32_t)seed, (uint32_t)(seed >> 32));
            r0 = c[0];
            u0 = uniform32(c[0]), u1 = uniform32(c[1]);
        } else {
            uint64_t c[4] = {(uint64_t)off[i], 0, 0, 0};
            philox64(c, seed, 0);
            r0 = c[0];
            u0 = uniform64(c[0]), u1 = uniform64(c[1]);
        }
        switch (xi->op) {
        case OP_RANDINT: ((int64_t *)xi->r)[i] = iwrap(r0, xi->ifmt); break;
        case OP_RAND: ((double *)xi->r)[i] = u0; break;
        default: ((double *)xi->r)[i] = uniform_pair_to_normal(u0, u1); break;
        }
    }
}

/* ------------------------------------------------------------------ */

void interp_exec_inst(Interp *S, const XInst *xi)
{
    switch (xi->op) {
    case OP_CONST:
    case OP_ARANGE:
    case OP_NUM_PROGRAMS: break; /* filled once per run */
    case OP_PROGRAM_ID: *(int64_t *)xi->r = S->pid[xi->in->ival]; break;
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_REM: case OP_POW:
    case OP_MAXIMUM: case OP_MINIMUM: case OP_ATAN2:
    case OP_AND: case OP_OR: case OP_XOR: case OP_SHL: case OP_SHR: case OP_UMULHI:
        if (xi->cls == C_FLOAT)
            float_binop(S, xi);
        else if (xi->cls == C_PTR)
            interp_unsupported(S, xi);
        else
            int_binop(S, xi);
        break;
    case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE:
        compare(S, xi);
        break;
    case OP_FMA: {
        if (xi->cls != C_FLOAT)
            interp_unsupported(S, xi);
        const double *a = xi->x, *b = xi->y, *c = xi->z;
        double *r = xi->r;
        LOOP(xi->n) r[i] = fma_round(a[i], b[i], c[i], xi->rk);
        break;
    }
    case OP_WHERE: where_op(xi); break;
#define LIBM_CASE(en, ...) case en:
    KAD_LIBM_OPS(LIBM_CASE)
#undef LIBM_CASE
        libm_op(S, xi);
        break;
    case OP_CAST: cast_op(S, xi); break;
    case OP_BITCAST: bitcast_op(S, xi); break;
    case OP_MULTIPLE_OF:
    case OP_MAX_CONTIGUOUS:
    case OP_STOP_GRADIENT:
    case OP_CUSTOM_VJP: /* identity on operand 0 (its rule is for AD) */
    case OP_CUSTOM_JVP:
    case OP_EXPAND_DIMS:
    case OP_RESHAPE:
        interp_copy_lanes(xi->r, xi->x, xi->n, interp_lane_bytes(interp_vtype(S, xi->in->res[0])));
        break;
    case OP_BROADCAST: broadcast_op(S, xi); break;
    case OP_PERMUTE: permute_op(S, xi); break;
    case OP_SUM: case OP_MAX: case OP_MIN: case OP_ARGMAX: case OP_ARGMIN:
        reduce_op(S, xi);
        break;
    case OP_CUMSUM: case OP_CUMPROD: scan_op(S, xi); break;
    case OP_JOIN: join_op(xi); break;
    case OP_SPLIT: split_op(xi); break;
    case OP_FLIP: flip_op(S, xi); break;
    case OP_GATHER: gather_op(S, xi); break;
    case OP_SORT: sort_op(S, xi); break;
    case OP_HISTOGRAM: histogram_op(S, xi); break;
    case OP_DOT: dot_op(S, xi); break;
    case OP_RAND: case OP_RANDN: case OP_RANDINT: random_op(S, xi); break;
    case OP_ADDPTR: addptr_op(S, xi); break;
    case OP_LOAD: load_op(S, xi); break;
    case OP_STORE: store_op(S, xi); break;
    case OP_ATOMIC_ADD: case OP_ATOMIC_MAX: case OP_ATOMIC_MIN: case OP_ATOMIC_XCHG: atomic_op(S, xi); break;
    case OP_ASSERT: interp_assert_op(S, xi); break;
    case OP_BARRIER: break; /* one thread per program: accesses are already in order */
    case OP_FOR: interp_for_op(S, xi); break;
    case OP_IF: interp_if_op(S, xi); break;
    case OP_WHILE: interp_while_op(S, xi); break;
    case OP_SCAN: interp_scan_region_op(S, xi); break;
    case OP_REDUCE: interp_reduce_region_op(S, xi); break;
    default:
        if (unary_fn(xi->op) || xi->op == OP_NEG || xi->op == OP_ABS || xi->op == OP_NOT ||
            xi->op == OP_ISNAN || xi->op == OP_ISINF)
            unary(S, xi);
        else
            interp_unsupported(S, xi);
    }
}
