/* ad_libm.c -- the derivatives of the libdevice ops (ops.h, KAD_LIBM_OPS),
 * shared by both modes.
 *
 * ad_libm_partial builds, in the block being emitted, dy/da_k of one
 * elementwise op from the primal operands and result: reverse mode
 * (adj_rule) gives d * partial to operand k, forward mode (tan_rule) sums
 * t_k * partial.  One case per op, neighbours together, so the calculus of
 * each function reads in a few lines.  Functions libdevice lacks are built
 * from IR ops: digamma (lgamma's and tgamma's derivative) by the recurrence
 * to x >= 6, the asymptotic series there and the reflection formula below
 * 1/2; the Bessel functions' derivatives from the functions of the
 * neighbouring orders.  The *_round and fast_* ops take the rules of the
 * exact operation at round to nearest.
 *
 * Requires: the primal operands pa[] and result py are values of f (the
 * backward or jvp function) visible in b.  Returns 0 for an operand the
 * result does not depend on differentiably (integer operands, logb/ilogb).
 */
#include <math.h>

#include "base/base.h"
#include "ir/ir.h"
#include "ad/ad_int.h"

#define LM_PI 3.14159265358979323846
#define LM_LN2 0.69314718055994530942
#define LM_LN10 2.30258509299404568402
#define LM_2_SQRTPI 1.12837916709551257390 /* 2/sqrt(pi) */
#define LM_SQRT1_2 0.70710678118654752440

typedef struct Lb {
    Func *f;
    Block *b;
    Loc loc;
} Lb;

static Type ty(Lb *l, ValId v) { return l->f->vals.v[v].ty; }
static ValId u1(Lb *l, OpKind op, ValId x) { return ir_op1(l->f, l->b, op, ty(l, x), x, l->loc); }
static ValId u2(Lb *l, OpKind op, ValId x, ValId y) { return ir_op2(l->f, l->b, op, ty(l, x), x, y, l->loc); }
static ValId kc(Lb *l, ValId like, double v) { return ir_const_float(l->f, l->b, ty(l, like), v, l->loc); }
static ValId cmp(Lb *l, OpKind op, ValId x, ValId y)
{
    return ir_op2(l->f, l->b, op, type_with_dtype(ty(l, x), DT_I1), x, y, l->loc);
}
static ValId sel(Lb *l, ValId c, ValId x, ValId y) { return ir_op3(l->f, l->b, OP_WHERE, ty(l, x), c, x, y, l->loc); }

#define MUL(x, z) u2(l, OP_MUL, (x), (z))
#define DIV(x, z) u2(l, OP_DIV, (x), (z))
#define ADD(x, z) u2(l, OP_ADD, (x), (z))
#define SUB(x, z) u2(l, OP_SUB, (x), (z))
#define NEG(x) u1(l, OP_NEG, (x))

/* digamma(x) = d/dx lgamma(x): for x < 1/2 the reflection
 * psi(x) = psi(1-x) - pi/tan(pi x); then psi(z) = psi(z+6) - sum_{k<6} 1/(z+k)
 * and, at w = z+6 >= 6, ln w - 1/(2w) - sum B_2j/(2j w^2j) to w^-12 (the
 * next term is below 1e-11 there). */
static ValId digamma(Lb *l, ValId x)
{
    ValId half = kc(l, x, 0.5), one = kc(l, x, 1.0);
    ValId refl = cmp(l, OP_LT, x, half);
    ValId z = sel(l, refl, SUB(one, x), x);
    ValId acc = kc(l, x, 0.0), w = z;
    for (int k = 0; k < 6; k++) {
        acc = ADD(acc, DIV(one, w));
        w = ADD(w, one);
    }
    ValId w2 = DIV(one, MUL(w, w));
    static const double c[6] = {1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760};
    ValId s = kc(l, x, c[5]);
    for (int k = 4; k >= 0; k--)
        s = ADD(kc(l, x, c[k]), MUL(s, w2));
    ValId psi = SUB(SUB(u1(l, OP_LOG, w), DIV(half, w)), ADD(MUL(s, w2), acc));
    ValId pix = MUL(kc(l, x, LM_PI), x);
    return sel(l, refl, SUB(psi, DIV(kc(l, x, LM_PI), u1(l, OP_TAN, pix))), psi);
}

/* f1(x) - f2(x)/x with its limit `at0` at x == 0 (J1', I1'). */
static ValId minus_over_x(Lb *l, ValId f1, ValId f2, ValId x, double at0)
{
    ValId zero = cmp(l, OP_EQ, x, kc(l, x, 0.0));
    ValId xs = sel(l, zero, kc(l, x, 1.0), x);
    return sel(l, zero, kc(l, x, at0), SUB(f1, DIV(f2, xs)));
}

/* d/dx Z_n(x) = (Z_{n-1}(x) - Z_{n+1}(x))/2 for Z = jn/yn (op), Z_{-1} = -Z_1. */
static ValId bessel_n(Lb *l, OpKind op, ValId n, ValId x)
{
    Type nt = ty(l, n), ft = ty(l, x);
    ValId i1 = ir_const_int(l->f, l->b, nt, 1, l->loc), i0 = ir_const_int(l->f, l->b, nt, 0, l->loc);
    ValId n0 = ir_op2(l->f, l->b, OP_EQ, type_with_dtype(nt, DT_I1), n, i0, l->loc);
    ValId m = ir_op3(l->f, l->b, OP_WHERE, nt, n0, i1, ir_op2(l->f, l->b, OP_SUB, nt, n, i1, l->loc), l->loc);
    ValId lo = ir_op2(l->f, l->b, op, ft, m, x, l->loc);
    lo = sel(l, n0, NEG(lo), lo);
    ValId hi = ir_op2(l->f, l->b, op, ft, ir_op2(l->f, l->b, OP_ADD, nt, n, i1, l->loc), x, l->loc);
    return MUL(SUB(lo, hi), kc(l, x, 0.5));
}

ValId ad_libm_partial(Func *f, Block *b, Loc loc, const Inst *in, int k, const ValId *pa, ValId py)
{
    Lb lb = {f, b, loc}, *l = &lb;
    ValId x = pa[0], y = py;
    if (k == libm_int_operand(in->op) || op_info[in->op].diff != 'D')
        return 0;
    switch ((OpKind)in->op) {
    case OP_ASINH: return u1(l, OP_RSQRT, ADD(MUL(x, x), kc(l, x, 1.0)));
    case OP_ACOSH: return u1(l, OP_RSQRT, SUB(MUL(x, x), kc(l, x, 1.0)));
    case OP_ATANH: return DIV(kc(l, x, 1.0), SUB(kc(l, x, 1.0), MUL(x, x)));
    case OP_CBRT: return DIV(kc(l, x, 1.0 / 3), MUL(y, y));
    case OP_RCBRT: return MUL(kc(l, x, -1.0 / 3), MUL(MUL(y, y), MUL(y, y)));
    case OP_EXP10: case OP_FAST_EXP10: return MUL(y, kc(l, x, LM_LN10));
    case OP_LOG10: case OP_FAST_LOG10: return DIV(kc(l, x, 1.0 / LM_LN10), x);
    case OP_SINPI: return MUL(kc(l, x, LM_PI), u1(l, OP_COSPI, x));
    case OP_COSPI: return MUL(kc(l, x, -LM_PI), u1(l, OP_SINPI, x));
    case OP_ERFC: return MUL(kc(l, x, -LM_2_SQRTPI), u1(l, OP_EXP, NEG(MUL(x, x))));
    case OP_ERFCX: return SUB(MUL(MUL(kc(l, x, 2.0), x), y), kc(l, x, LM_2_SQRTPI));
    case OP_ERFINV: return MUL(kc(l, x, 1.0 / LM_2_SQRTPI), u1(l, OP_EXP, MUL(y, y)));
    case OP_ERFCINV: return MUL(kc(l, x, -1.0 / LM_2_SQRTPI), u1(l, OP_EXP, MUL(y, y)));
    case OP_NORMCDF: return MUL(kc(l, x, 0.5 * LM_2_SQRTPI * LM_SQRT1_2), u1(l, OP_EXP, MUL(MUL(x, x), kc(l, x, -0.5))));
    case OP_NORMCDFINV: return MUL(kc(l, x, 2.0 / (LM_2_SQRTPI * LM_SQRT1_2)), u1(l, OP_EXP, MUL(MUL(y, y), kc(l, x, 0.5))));
    case OP_LGAMMA: return digamma(l, x);
    case OP_TGAMMA: return MUL(y, digamma(l, x));
    case OP_J0: return NEG(u1(l, OP_J1, x));
    case OP_Y0: return NEG(u1(l, OP_Y1, x));
    case OP_J1: return minus_over_x(l, u1(l, OP_J0, x), y, x, 0.5);
    case OP_Y1: return SUB(u1(l, OP_Y0, x), DIV(y, x));
    case OP_I0: return u1(l, OP_I1, x);
    case OP_I1: return minus_over_x(l, u1(l, OP_I0, x), y, x, 0.5);
    case OP_SATURATE: { /* 1 inside (0, 1), 0 outside */
        ValId in01 = ir_op2(f, b, OP_AND, type_with_dtype(ty(l, x), DT_I1), cmp(l, OP_GT, x, kc(l, x, 0.0)),
                            cmp(l, OP_LT, x, kc(l, x, 1.0)), loc);
        return sel(l, in01, kc(l, x, 1.0), kc(l, x, 0.0));
    }
    case OP_RSQRT_RN: return MUL(kc(l, x, -0.5), MUL(y, MUL(y, y)));
    case OP_HYPOT: case OP_NORM3D: return DIV(pa[k], y);
    case OP_RHYPOT: case OP_RNORM3D: return NEG(MUL(pa[k], MUL(y, MUL(y, y))));
    case OP_FDIM: { /* max(a - b, 0) */
        ValId gt = cmp(l, OP_GT, pa[0], pa[1]);
        return sel(l, gt, kc(l, x, k ? -1.0 : 1.0), kc(l, x, 0.0));
    }
    case OP_COPYSIGN: /* |a| sign(b): sign(a) sign(b) to a, nothing to b */
        if (k)
            return kc(l, x, 0.0);
        return MUL(u2(l, OP_COPYSIGN, kc(l, x, 1.0), pa[0]), u2(l, OP_COPYSIGN, kc(l, x, 1.0), pa[1]));
    case OP_REMAINDER: /* a - rint(a/b)*b */
        return k ? NEG(u1(l, OP_RINT, DIV(pa[0], pa[1]))) : kc(l, x, 1.0);
    case OP_LDEXP: /* x*2^n: 2^n, exactly */
        return ir_op2(f, b, OP_LDEXP, ty(l, x), kc(l, x, 1.0), pa[1], loc);
    case OP_POWI: { /* n x^(n-1), 0 for n == 0 */
        Type nt = ty(l, pa[1]);
        ValId one = ir_const_int(f, b, nt, 1, loc);
        ValId pw = ir_op2(f, b, OP_POWI, ty(l, x), x, ir_op2(f, b, OP_SUB, nt, pa[1], one, loc), loc);
        ValId nf = ir_op1(f, b, OP_CAST, ty(l, x), pa[1], loc);
        ValId z = kc(l, x, 0.0);
        return sel(l, cmp(l, OP_EQ, nf, z), z, MUL(nf, pw));
    }
    case OP_JN: case OP_YN: return bessel_n(l, (OpKind)in->op, pa[0], pa[1]);
    case OP_FAST_SIN: return u1(l, OP_COS, x);
    case OP_FAST_COS: return NEG(u1(l, OP_SIN, x));
    case OP_FAST_TAN: return ADD(kc(l, x, 1.0), MUL(y, y));
    case OP_FAST_LOG2: return DIV(kc(l, x, 1.0 / LM_LN2), x);
    case OP_FAST_POW: /* b a^(b-1), y log(a) */
        if (k)
            return MUL(y, u1(l, OP_LOG, pa[0]));
        return MUL(pa[1], u2(l, OP_POW, pa[0], SUB(pa[1], kc(l, x, 1.0))));
    case OP_FAST_DIV: case OP_DIV_ROUND: /* 1/b, -y/b */
        return k ? NEG(DIV(y, pa[1])) : DIV(kc(l, x, 1.0), pa[1]);
    case OP_ADD_ROUND: return kc(l, x, 1.0);
    case OP_SUB_ROUND: return kc(l, x, k ? -1.0 : 1.0);
    case OP_MUL_ROUND: return pa[1 - k];
    case OP_SQRT_ROUND: return DIV(kc(l, x, 0.5), y);
    case OP_RCP_ROUND: return NEG(MUL(y, y));
    case OP_FMA_ROUND: return k == 2 ? kc(l, x, 1.0) : pa[1 - k];
    default:
        die("ad_libm_partial: no rule for %s", op_info[in->op].name);
    }
}
