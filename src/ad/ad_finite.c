/* ad_finite.c -- which forward values may be non-finite, and which partial
 * derivatives therefore need a strong zero (docs/AD.md, "Untaken branches:
 * exact zeros").
 *
 * `tl.where(x > 0, tl.sqrt(x), x)` at x = -1: the where gives the untaken
 * sqrt an adjoint of exactly 0, and sqrt's rule 0 * 0.5/sqrt(-1) is NaN.
 * The true derivative is 1.  A *strong zero* fixes it: an op's contribution
 * is exactly 0 where the incoming adjoint (forward mode: the tangent) is
 * exactly 0, whatever the local derivative.  It costs a compare and a
 * select per element, so both modes emit it only where the local
 * derivative may be non-finite, which this file decides:
 *
 *   ad_value_facts: per value, what is KNOWN (VK_* bits below; 0 = nothing):
 *     a forward walk, loops and the combine regions of scans and reduces to
 *     a fixpoint.  Arithmetic on finite operands is taken to be finite (an
 *     overflow of `a * b` is not modelled); the ops that leave the finite
 *     range on finite input (exp, log, sqrt, division, casts to 16 or 8
 *     bits, ...) say so.
 *   ad_partial_unsafe: per op and operand, may that operand's partial
 *     derivative be non-finite?  The one table a new op's rule extends.
 *
 * Assumption (documented): data loaded from memory and scalar parameters
 * are finite, and a max reduction has a finite lane (x - max(x) is <= 0 or
 * -inf; for a row of only -inf the forward's own result is NaN).
 */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "ad/ad_int.h"

typedef struct Vk {
    Arena *a;
    const Func *f;
    uint8_t *k;        /* by ValId: VK_* */
    const Inst **def;  /* by ValId: defining instruction, NULL for params */
    bool changed;
} Vk;

static uint8_t of(const Vk *s, ValId v) { return s->k[v]; }

static bool is_fp(const Func *f, ValId v)
{
    Type t = f->vals.v[v].ty;
    return t.dt != DT_PTR && dtype_is_float((Dtype)t.dt);
}

static uint8_t const_facts(double c)
{
    uint8_t k = 0;
    if (!isnan(c))
        k |= VK_NONAN;
    if (isfinite(c))
        k |= VK_FINITE;
    else if (c < 0)
        k |= VK_NOHI;
    if (c != 0 && !isnan(c))
        k |= VK_NZ;
    if (c >= 0)
        k |= VK_NN;
    if (c <= 0)
        k |= VK_LE0;
    return k;
}

/* v's defining instruction, NULL for params and region params. */
static const Inst *def_of(const Vk *s, ValId v) { return v < s->f->vals.n ? s->def[v] : NULL; }

/* Is r = max(a, axis) (a rank-1 `a` reduced to a scalar, or any axis)? */
static bool max_of(const Vk *s, ValId r, ValId a, int *axis)
{
    const Inst *d = def_of(s, r);
    if (!d || d->op != OP_MAX || d->args[0] != a)
        return false;
    *axis = (int)d->ival;
    return true;
}

/* Is b, a tile of a's shape, max(a) along one axis broadcast back along it
 * (keep_dims, or expand_dims at that axis, or a scalar max of a rank-1 a)?
 * Then *axis is that axis. */
static bool max_back(const Vk *s, ValId b, ValId a, int *axis)
{
    const Inst *d = def_of(s, b);
    if (!d || d->op != OP_BROADCAST)
        return false;
    ValId r = d->args[0];
    const Inst *e = def_of(s, r);
    if (e && e->op == OP_EXPAND_DIMS)
        return max_of(s, e->args[0], a, axis) && *axis == (int)e->ival;
    if (!max_of(s, r, a, axis))
        return false;
    return (e->flags & IF_KEEP_DIMS) || s->f->vals.v[a].ty.rank == 1;
}

/* Is every lane of b >= the same lane of a (a scalar b: >= every lane of
 * a)?  a itself, the max of a broadcast back, a maximum with either side
 * dominating, a scalar broadcast that dominates all of a. */
static bool dominates(const Vk *s, ValId b, ValId a, int depth)
{
    int axis;
    if (b == a)
        return true;
    if (depth > 8)
        return false;
    const Inst *d = def_of(s, b);
    if (!d)
        return false;
    if (d->op == OP_MAXIMUM)
        return dominates(s, d->args[0], a, depth + 1) || dominates(s, d->args[1], a, depth + 1);
    if (d->op == OP_MAX && d->args[0] == a && s->f->vals.v[a].ty.rank == 1)
        return true; /* a scalar: the max of all of a */
    if (d->op == OP_BROADCAST && s->f->vals.v[d->args[0]].ty.rank == 0)
        return dominates(s, d->args[0], a, depth + 1);
    return max_back(s, b, a, &axis);
}

/* Is v = sum(exp(a - max(a)), axis) over the axis of that max?  The lane
 * holding the max adds exp(0) = 1, so v >= 1. */
static bool sum_of_shifted_exp(const Vk *s, const Inst *sum)
{
    const Inst *x = def_of(s, sum->args[0]);
    if (!x || (x->op != OP_EXP && x->op != OP_EXP2))
        return false;
    const Inst *z = def_of(s, x->args[0]);
    int axis;
    return z && z->op == OP_SUB && max_back(s, z->args[1], z->args[0], &axis) && axis == (int)sum->ival;
}

#define HAS(v, bits) ((of(s, (v)) & (bits)) == (bits))

/* The facts of in's first result from its operands' (elementwise ops,
 * reductions, shape ops); region ops are walk()'s. */
static uint8_t inst_facts(const Vk *s, const Inst *in)
{
    const Func *f = s->f;
    ValId a = in->nargs > 0 ? in->args[0] : 0, b = in->nargs > 1 ? in->args[1] : 0;
    uint8_t ka = in->nargs > 0 ? of(s, a) : 0, kb = in->nargs > 1 ? of(s, b) : 0;
    uint8_t sign = 0; /* NN / LE0 of sums and products */
    switch ((OpKind)in->op) {
    case OP_CONST:
        return is_fp(f, in->res[0]) ? const_facts(in->fval) : VK_ALL_INT;
    case OP_LOAD: {
        uint8_t k = VK_FINITE; /* data in memory: finite */
        if ((in->flags & IF_HAS_OTHER) && in->nargs > 2)
            k &= of(s, in->args[2]);
        return k;
    }
    case OP_ADD:
        sign = ka & kb & (VK_NN | VK_LE0);
        if ((ka & kb & VK_NN) && ((ka | kb) & VK_NZ))
            sign |= VK_NZ; /* positive + nonnegative */
        if ((ka & kb & VK_LE0) && ((ka | kb) & VK_NZ))
            sign |= VK_NZ;
        return (ka & kb & (VK_FINITE)) | sign;
    case OP_SUB: {
        uint8_t k = (ka & kb & VK_FIN) | ((ka & VK_NOHI) && (kb & VK_FIN) ? VK_NOHI | VK_NONAN : 0);
        if ((ka & VK_NN) && (kb & VK_LE0))
            k |= VK_NN;
        if ((ka & VK_LE0) && (kb & VK_NN))
            k |= VK_LE0;
        if (dominates(s, b, a, 0)) /* x - max(x) */
            k |= VK_LE0 | (ka & (VK_NOHI | VK_NONAN));
        return k;
    }
    case OP_MUL:
    case OP_FMA: {
        uint8_t k = ka & kb & VK_FIN ? VK_FINITE : 0;
        if (a == b || ((ka & kb & VK_NN) || (ka & kb & VK_LE0)))
            sign = VK_NN;
        else if (((ka & VK_NN) && (kb & VK_LE0)) || ((ka & VK_LE0) && (kb & VK_NN)))
            sign = VK_LE0;
        if (in->op == OP_FMA) { /* a*b + c */
            uint8_t kc = of(s, in->args[2]);
            return (k & kc & VK_FINITE) | (sign & kc & (VK_NN | VK_LE0));
        }
        return k | sign;
    }
    case OP_DIV: {
        uint8_t k = (ka & VK_FIN) && HAS(b, VK_FIN | VK_NZ) ? VK_FINITE : 0;
        if ((ka & kb & VK_NN) || (ka & kb & VK_LE0))
            k |= VK_NN;
        return k;
    }
    case OP_REM:
        return (ka & VK_FIN) && HAS(b, VK_FIN | VK_NZ) ? VK_FINITE : 0;
    case OP_MAXIMUM:
        return (ka & kb & (VK_FINITE | VK_NZ | VK_LE0)) | ((ka | kb) & VK_NN);
    case OP_MINIMUM:
        return (ka & kb & (VK_FINITE | VK_NZ | VK_NN)) | ((ka | kb) & VK_LE0);
    case OP_WHERE:
        return of(s, in->args[1]) & of(s, in->args[2]);
    case OP_NEG:
        return (ka & (VK_FIN | VK_NZ | VK_NONAN)) | ((ka & VK_FIN) ? VK_NOHI : 0) | ((ka & VK_NN) ? VK_LE0 : 0) |
               ((ka & VK_LE0) ? VK_NN : 0);
    case OP_ABS:
        return (ka & (VK_FIN | VK_NZ | VK_NONAN)) | ((ka & VK_FIN) ? VK_NOHI : 0) | VK_NN;
    case OP_FLOOR:
    case OP_CEIL:
    case OP_TRUNC:
    case OP_RINT:
        return ka & (VK_FINITE | VK_NN | VK_LE0);
    case OP_EXP:
    case OP_EXP2: /* exp(x) of x <= 0 lies in [0, 1]; otherwise it may overflow */
        return (ka & VK_NOHI) && (ka & VK_LE0) ? VK_FINITE | VK_NN : VK_NN | (ka & VK_NONAN);
    case OP_EXPM1:
        return (ka & VK_NOHI) && (ka & VK_LE0) ? VK_FINITE | VK_LE0 : ka & VK_NONAN;
    case OP_LOG:
    case OP_LOG2:
        return HAS(a, VK_FIN | VK_NN | VK_NZ) ? VK_FINITE : 0;
    case OP_LOG1P:
        return HAS(a, VK_FIN | VK_NN) ? VK_FINITE | VK_NN : 0;
    case OP_SQRT:
        return (HAS(a, VK_FIN | VK_NN) ? VK_FINITE : 0) | (HAS(a, VK_NONAN | VK_NN) ? VK_NONAN : 0) |
               (ka & VK_NZ) | VK_NN;
    case OP_RSQRT:
        return (HAS(a, VK_FIN | VK_NN | VK_NZ) ? VK_FINITE | VK_NZ : 0) | VK_NN;
    case OP_SIGMOID:
        return (ka & VK_NONAN ? VK_FINITE : 0) | VK_NN;
    case OP_TANH: /* finite at +-inf */
    case OP_ATAN:
    case OP_ERF:
        return ka & VK_NONAN ? VK_FINITE : 0;
    case OP_SIN:
    case OP_COS:
        return ka & VK_FIN ? VK_FINITE : 0;
    case OP_ATAN2:
        return ka & kb & VK_FIN ? VK_FINITE : 0;
    case OP_COSH:
        return VK_NN;
    case OP_CAST: {
        Dtype to = (Dtype)f->vals.v[in->res[0]].ty.dt;
        if (!is_fp(f, in->res[0]))
            return VK_ALL_INT;
        if (!is_fp(f, a))
            return dtype_bits(to) >= 32 ? VK_FINITE : 0; /* an int of any size fits fp32 */
        Dtype from = (Dtype)f->vals.v[a].ty.dt;
        if (dtype_bits(to) >= dtype_bits(from) && to != DT_BF16)
            return ka; /* widening: exact */
        if (to == DT_BF16 && from != DT_F64)
            return ka & ~VK_NZ; /* fp32's exponent range: rounding may underflow, overflow is fp32's own */
        return ka & (VK_NN | VK_LE0 | VK_NONAN); /* may overflow to inf, underflow to 0 */
    }
    case OP_BROADCAST:
    case OP_EXPAND_DIMS:
    case OP_RESHAPE:
    case OP_PERMUTE:
    case OP_SPLIT:
    case OP_FLIP:
    case OP_GATHER:
    case OP_SORT:
    case OP_MAX:
    case OP_MIN:
    case OP_STOP_GRADIENT:
    case OP_CUSTOM_VJP:
    case OP_CUSTOM_JVP:
    case OP_MULTIPLE_OF:
    case OP_MAX_CONTIGUOUS:
        return ka;
    case OP_JOIN:
        return ka & kb;
    case OP_SUM:
    case OP_CUMSUM:
        return (ka & (VK_FINITE | VK_NN | VK_LE0)) | (HAS(a, VK_NN | VK_NONAN) ? VK_NONAN : 0) |
               (in->op == OP_SUM && sum_of_shifted_exp(s, in) ? VK_NZ : 0);
    case OP_CUMPROD:
        return ka & VK_NN;
    case OP_DOT:
        return ka & kb & of(s, in->args[2]) & VK_FIN ? VK_FINITE : 0;
    case OP_RAND:
        return VK_FINITE | VK_NN;
    case OP_RANDN:
        return VK_FINITE;
    default:
        return 0;
    }
}

static void set(Vk *s, ValId v, uint8_t k)
{
    if (!is_fp(s->f, v))
        k = VK_ALL_INT; /* integers, booleans, pointers: finite */
    if (k & VK_FIN)
        k |= VK_FINITE;
    if (k & VK_NOHI)
        k |= VK_NONAN;
    if (s->k[v] != k) {
        s->k[v] = k;
        s->changed = true;
    }
}

static void walk(Vk *s, const Block *b);

/* A region's params start with facts init[] (per carried slot; `halves`:
 * a combine region's two halves of params, the running values and the
 * next element's, get the slot's facts both), the region is walked and
 * each slot's facts meet those of its yield until nothing changes: a
 * descending chain from init, so the facts hold by induction.  Returns
 * the final facts per slot (the region op's results). */
static uint8_t *walk_carried(Vk *s, const Block *r, int lead, const uint8_t *init, int n, int halves)
{
    uint8_t *cur = arena_alloc(s->a, (size_t)n + 1);
    memcpy(cur, init, (size_t)n);
    for (int round = 0; round < 16; round++) {
        for (int h = 0; h < halves; h++)
            for (int i = 0; i < n && lead + h * n + i < r->nparams; i++)
                set(s, r->params[lead + h * n + i], cur[i]);
        for (int i = 0; i < lead && i < r->nparams; i++)
            set(s, r->params[i], 0);
        walk(s, r);
        const Inst *y = ad_block_term(r);
        bool same = true;
        for (int i = 0; i < n; i++) {
            uint8_t k = init[i] & (y && i < y->nargs ? of(s, y->args[i]) : 0);
            same &= k == cur[i];
            cur[i] = k;
        }
        if (same)
            return cur;
    }
    memset(cur, 0, (size_t)n); /* no fixpoint (cannot happen: 5 bits descend): nothing known */
    return cur;
}

static void walk(Vk *s, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nres; r++)
            s->def[in->res[r]] = in;
        switch ((OpKind)in->op) {
        case OP_FOR:
        case OP_SCAN:
        case OP_REDUCE: {
            int lead = in->op == OP_FOR ? 3 : 0, n = in->nargs - lead;
            uint8_t *init = arena_alloc(s->a, (size_t)n + 1);
            for (int k = 0; k < n; k++)
                init[k] = of(s, in->args[lead + k]);
            uint8_t *fin = walk_carried(s, in->regions[0], in->op == OP_FOR, init, n, in->op == OP_FOR ? 1 : 2);
            for (int r = 0; r < in->nres; r++)
                set(s, in->res[r], r < n ? fin[r] : 0);
            break;
        }
        case OP_IF: {
            walk(s, in->regions[0]);
            walk(s, in->regions[1]);
            const Inst *t = ad_block_term(in->regions[0]), *e = ad_block_term(in->regions[1]);
            for (int r = 0; r < in->nres; r++)
                set(s, in->res[r], t && e && r < t->nargs && r < e->nargs ? of(s, t->args[r]) & of(s, e->args[r]) : 0);
            break;
        }
        case OP_WHILE: /* nothing known about its carried values */
            for (int g = 0; g < in->nregions; g++) {
                for (int p = 0; p < in->regions[g]->nparams; p++)
                    set(s, in->regions[g]->params[p], 0);
                walk(s, in->regions[g]);
            }
            for (int r = 0; r < in->nres; r++)
                set(s, in->res[r], 0);
            break;
        default:
            for (int r = 0; r < in->nres; r++)
                set(s, in->res[r], r == 0 ? inst_facts(s, in) : 0);
            for (int g = 0; g < in->nregions; g++) /* custom rules' bodies */
                walk(s, in->regions[g]);
        }
    }
}

AdFinite ad_value_facts(Arena *a, const Func *f)
{
    Vk s = {a, f, arena_alloc(a, (size_t)f->vals.n + 1), arena_alloc(a, sizeof(const Inst *) * ((size_t)f->vals.n + 1)), false};
    for (int i = 0; i < f->nparams; i++)
        set(&s, f->params[i], VK_FINITE); /* scalar parameters: finite */
    walk(&s, f->body);
    return (AdFinite){s.k, f->vals.n};
}

static uint8_t facts(const AdFinite *fi, ValId v) { return v > 0 && v < fi->n ? fi->k[v] : 0; }

bool ad_partial_unsafe(const AdFinite *fi, const Inst *in, int k)
{
    if (!fi || !fi->k)
        return false; /* strong zeros off (the testing aid AD_MUTATE_STRONG_ZERO) */
#define FACTS(v) facts(fi, (v))
#define IS(v, bits) ((FACTS(v) & (bits)) == (bits))
    ValId a = in->args[0], b = in->nargs > 1 ? in->args[1] : 0, y = in->res[0];
    switch ((OpKind)in->op) {
    /* the partial of operand k, as the rules in rules_rev.c (adj_rule) and rules_fwd.c (tan_rule) compute it */
    case OP_MUL: /* b, a */
        return !IS(in->args[1 - k], VK_FIN);
    case OP_FMA: /* b, a, 1 */
        return k < 2 && !IS(in->args[1 - k], VK_FIN);
    case OP_DIV: /* 1/b, -y/b */
        return !IS(b, VK_FIN | VK_NZ) || (k == 1 && !IS(a, VK_FIN));
    case OP_REM: /* 1, -trunc(a/b) */
        return k == 1 && (!IS(b, VK_FIN | VK_NZ) || !IS(a, VK_FIN));
    case OP_ATAN2: /* b/(a^2+b^2), -a/(a^2+b^2) */
        return !IS(a, VK_FIN) || !IS(b, VK_FIN) || !((FACTS(a) | FACTS(b)) & VK_NZ);
    case OP_EXP:     /* y */
    case OP_EXP2:    /* y ln2 */
    case OP_EXPM1:   /* y + 1 */
    case OP_RSQRT:   /* -0.5 y^3 */
    case OP_SIGMOID: /* y (1 - y) */
    case OP_TANH:    /* 1 - y^2 */
    case OP_TAN:     /* 1 + y^2 */
        return !IS(y, VK_FIN);
    case OP_SQRT: /* 0.5/y */
        return !IS(y, VK_FIN | VK_NZ);
    case OP_LOG:  /* 1/x */
    case OP_LOG2: /* 1/(x ln2) */
        return !IS(a, VK_FIN | VK_NZ);
    case OP_LOG1P: /* 1/(1+x) */
        return !IS(a, VK_FIN | VK_NN);
    case OP_SIN: /* cos x */
    case OP_COS: /* -sin x */
        return !IS(a, VK_FIN);
    case OP_ATAN: /* 1/(1+x^2): 0 at +-inf */
    case OP_ERF:  /* 2/sqrt(pi) exp(-x^2) */
        return !IS(a, VK_NONAN);
    case OP_POW:  /* b a^(b-1), y log a */
    case OP_SINH: /* cosh x: overflows */
    case OP_COSH:
    case OP_ASIN: /* 1/sqrt(1-x^2) */
    case OP_ACOS:
        return true;
    default: /* libdevice's other functions (ad_libm.c): but for the bounded ones, like pow */
        if (op_is_libm(in->op))
            return in->op != OP_SATURATE && in->op != OP_COPYSIGN && in->op != OP_FDIM;
        /* linear ops, selections (where, maximum, abs), casts, shapes, reductions: never */
        return false;
    }
#undef FACTS
#undef IS
}
