/* libm.c -- the values of the libdevice ops (ops.h, KAD_LIBM_OPS) and the
 * names they print as.
 *
 * libm_eval is what the interpreter computes for one lane: C's <math.h>
 * where it has the function, else a float64 implementation here (erfinv,
 * erfcinv, erfcx, normcdfinv, the modified Bessel functions i0/i1).  The
 * fast_* approximations are the exact functions (the interpreter has no
 * model of the GPU's approximations).  The *_round ops round in their mode:
 * fp32 results are computed in float under fesetround, so add_rz and the
 * others give the bits the GPU gives; rn is the plain operation.
 */
#include <fenv.h>
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"

/* POSIX (XSI) Bessel functions: glibc's libm has them, C11's <math.h>
 * declares them only with _XOPEN_SOURCE. */
double j0(double);
double j1(double);
double y0(double);
double y1(double);
double jn(int, double);
double yn(int, double);

const char *const libm_rounding_names[4] = {"rn", "rz", "rd", "ru"};

bool op_is_libm(int op)
{
    switch (op) {
#define LIBM_CASE(e, ...) case e:
    KAD_LIBM_OPS(LIBM_CASE)
#undef LIBM_CASE
        return true;
    default:
        return false;
    }
}

int libm_int_operand(int op)
{
    switch (op) {
    case OP_LDEXP: case OP_POWI: return 1;
    case OP_JN: case OP_YN: return 0;
    default: return -1;
    }
}

const char *libm_name(Arena *a, int op, int64_t ival)
{
    const char *n = op_info[op].name;
    size_t len = strlen(n);
    if (op == OP_POWI)
        return "pow";
    if (len > 6 && !strcmp(n + len - 6, "_round"))
        return arena_printf(a, "%.*s_%s", (int)(len - 6), n, libm_rounding_names[ival & 3]);
    return n;
}

#define PI 3.14159265358979323846
#define SQRT2 1.41421356237309504880

/* erfinv by Newton's method on erf from Giles' single-precision
 * approximation (three steps: float64 accuracy on (-1, 1)). */
static double f_erfinv(double y)
{
    if (!(y > -1 && y < 1))
        return y == 1 ? INFINITY : y == -1 ? -INFINITY : NAN;
    double w = -log((1.0 - y) * (1.0 + y)), x;
    if (w < 5.0) {
        w -= 2.5;
        x = 2.81022636e-08;
        x = 3.43273939e-07 + x * w;
        x = -3.5233877e-06 + x * w;
        x = -4.39150654e-06 + x * w;
        x = 0.00021858087 + x * w;
        x = -0.00125372503 + x * w;
        x = -0.00417768164 + x * w;
        x = 0.246640727 + x * w;
        x = 1.50140941 + x * w;
    } else {
        w = sqrt(w) - 3.0;
        x = -0.000200214257;
        x = 0.000100950558 + x * w;
        x = 0.00134934322 + x * w;
        x = -0.00367342844 + x * w;
        x = 0.00573950773 + x * w;
        x = -0.0076224613 + x * w;
        x = 0.00943887047 + x * w;
        x = 1.00167406 + x * w;
        x = 2.83297682 + x * w;
    }
    x *= y;
    for (int i = 0; i < 4; i++)
        x -= (erf(x) - y) / (2.0 / sqrt(PI) * exp(-x * x));
    return x;
}

/* erfcinv: erfinv(1 - y) near 1, else Newton on erfc itself (relative
 * accuracy for small y, where 1 - y would lose it). */
static double f_erfcinv(double y)
{
    if (!(y > 0 && y < 2))
        return y == 0 ? INFINITY : y == 2 ? -INFINITY : NAN;
    if (y > 0.0625 && y < 1.9375)
        return f_erfinv(1.0 - y);
    bool neg = y > 1;
    double yy = neg ? 2.0 - y : y;
    double x = sqrt(-log(yy)); /* a start from the right: erfc decreases */
    for (int i = 0; i < 60; i++) {
        double dx = (erfc(x) - yy) / (-2.0 / sqrt(PI) * exp(-x * x));
        x -= dx;
        if (fabs(dx) <= 1e-17 * fabs(x))
            break;
    }
    return neg ? -x : x;
}

/* erfcx = exp(x^2) erfc(x); its asymptotic series where erfc underflows. */
static double f_erfcx(double x)
{
    if (x < 25)
        return exp(x * x) * erfc(x);
    double z = 1.0 / (2.0 * x * x), s = 1, t = 1;
    for (int k = 1; k < 8; k++) {
        t *= -(2 * k - 1) * z;
        s += t;
    }
    return s / (x * sqrt(PI));
}

/* I0 and I1 by their power series (positive terms: no cancellation). */
static double f_i01(double x, int one)
{
    double q = x * x / 4, t = one ? x / 2 : 1, s = t;
    if (!isfinite(x))
        return isnan(x) ? x : one ? x : INFINITY;
    for (int k = 1; k < 2000; k++) {
        t *= q / ((double)k * (k + one));
        s += t;
        if (fabs(t) <= 1e-17 * fabs(s) || isinf(s))
            break;
    }
    return s;
}

static double f_sinpi(double x)
{
    if (x == rint(x))
        return copysign(0.0, x);
    double r = fmod(x, 2.0);
    return sin(PI * r);
}

static double f_cospi(double x)
{
    double r = fmod(fabs(x), 2.0);
    if (r == 0.5 || r == 1.5)
        return 0.0;
    return cos(PI * r);
}

/* One operation of `op` in rounding mode `mode`; f32: in float. */
static double rounded(int op, int mode, bool f32, double a, double b, double c)
{
    static const int fe[4] = {FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD};
    int old = fegetround();
    fesetround(fe[mode & 3]);
    volatile double r = 0;
    if (f32) {
        volatile float fa = (float)a, fb = (float)b, fc = (float)c;
        switch (op) {
        case OP_ADD_ROUND: r = fa + fb; break;
        case OP_SUB_ROUND: r = fa - fb; break;
        case OP_MUL_ROUND: r = fa * fb; break;
        case OP_DIV_ROUND: r = fa / fb; break;
        case OP_SQRT_ROUND: r = sqrtf(fa); break;
        case OP_RCP_ROUND: r = 1.0f / fa; break;
        default: r = fmaf(fa, fb, fc); break;
        }
    } else {
        volatile double da = a, db = b, dc = c;
        switch (op) {
        case OP_ADD_ROUND: r = da + db; break;
        case OP_SUB_ROUND: r = da - db; break;
        case OP_MUL_ROUND: r = da * db; break;
        case OP_DIV_ROUND: r = da / db; break;
        case OP_SQRT_ROUND: r = sqrt(da); break;
        case OP_RCP_ROUND: r = 1.0 / da; break;
        default: r = fma(da, db, dc); break;
        }
    }
    fesetround(old);
    return r;
}

double libm_eval(int op, int64_t ival, bool f32, double a, double b, double c, int64_t n)
{
    switch (op) {
    case OP_ASINH: return asinh(a);
    case OP_ACOSH: return acosh(a);
    case OP_ATANH: return atanh(a);
    case OP_CBRT: return cbrt(a);
    case OP_RCBRT: return 1.0 / cbrt(a);
    case OP_EXP10: case OP_FAST_EXP10: return pow(10.0, a);
    case OP_LOG10: case OP_FAST_LOG10: return log10(a);
    case OP_SINPI: return f_sinpi(a);
    case OP_COSPI: return f_cospi(a);
    case OP_ERFC: return erfc(a);
    case OP_ERFCX: return f_erfcx(a);
    case OP_ERFINV: return f_erfinv(a);
    case OP_ERFCINV: return f_erfcinv(a);
    case OP_NORMCDF: return 0.5 * erfc(-a / SQRT2);
    case OP_NORMCDFINV: return -SQRT2 * f_erfcinv(2.0 * a);
    case OP_LGAMMA: return lgamma(a);
    case OP_TGAMMA: return tgamma(a);
    case OP_J0: return j0(a);
    case OP_J1: return j1(a);
    case OP_Y0: return y0(a);
    case OP_Y1: return y1(a);
    case OP_I0: return f_i01(a, 0);
    case OP_I1: return f_i01(a, 1);
    case OP_SATURATE: return a > 0 ? (a < 1 ? a : 1.0) : 0.0; /* NaN -> 0 */
    case OP_RSQRT_RN: return 1.0 / sqrt(a);
    case OP_LOGB: return logb(a);
    case OP_ILOGB: return a == 0 ? -INT32_MAX - 1 : isnan(a) ? -INT32_MAX - 1 : isinf(a) ? INT32_MAX : ilogb(a);
    case OP_HYPOT: return hypot(a, b);
    case OP_RHYPOT: return 1.0 / hypot(a, b);
    case OP_NORM3D: return hypot(hypot(a, b), c);
    case OP_RNORM3D: return 1.0 / hypot(hypot(a, b), c);
    case OP_FDIM: return fdim(a, b);
    case OP_COPYSIGN: return copysign(a, b);
    case OP_REMAINDER: return remainder(a, b);
    case OP_LDEXP: return ldexp(a, (int)(n < -100000 ? -100000 : n > 100000 ? 100000 : n));
    case OP_POWI: return pow(a, (double)n);
    case OP_JN: return jn((int)n, b);
    case OP_YN: return yn((int)n, b);
    case OP_FAST_SIN: return sin(a);
    case OP_FAST_COS: return cos(a);
    case OP_FAST_TAN: return tan(a);
    case OP_FAST_LOG2: return log2(a);
    case OP_FAST_POW: return pow(a, b);
    case OP_FAST_DIV: return a / b;
    case OP_ADD_ROUND: case OP_SUB_ROUND: case OP_MUL_ROUND: case OP_DIV_ROUND:
    case OP_SQRT_ROUND: case OP_RCP_ROUND: case OP_FMA_ROUND:
        return rounded(op, (int)ival, f32, a, b, c);
    default:
        die("libm_eval: not a libdevice op: %s", op_info[op].name);
    }
}
