/* pass.c -- IR passes, run by name (pass_run; `kad opt --pass NAME`).
 *
 * Every pass takes a verified Func and leaves a verified Func; it rewrites
 * f in place (instruction arrays are rebuilt in f's arena, values keep
 * their ValIds, so no use-lists need patching).  Scratch data lives in an
 * arena of the pass, freed when it returns.
 *
 *   verify    ir_verify.
 *   dce       removes unused instructions without effects.
 *   simplify  folds constants, inlines `if` on a constant condition, CSE,
 *             exact algebraic identities, then dce.
 *
 * Passes never change what a kernel computes in the interpreter's
 * as-written mode (IM_AS_WRITTEN): float folding is limited to operations
 * whose double result rounded to the dtype is exactly what a correctly
 * rounded op of that dtype gives.  (In IM_F64 mode the interpreter would
 * have computed a folded fp32/fp16 constant expression in double; the
 * folded value is the as-written one.)
 */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"

/* ------------------------------------------------------------------ */
/* Shared helpers                                                      */
/* ------------------------------------------------------------------ */

/* Scratch arena of a pass; falls back to f's arena without memory. */
static Arena *scratch_new(Func *f)
{
    Arena *a = arena_new(0);
    return a ? a : f->a;
}

static void scratch_free(Func *f, Arena *a)
{
    if (a != f->a)
        arena_free(a);
}

/* ------------------------------------------------------------------ */
/* dce                                                                 */
/* ------------------------------------------------------------------ */

/* dce -- removes instructions whose results are unused and that have no
 * effect: pure ops, loads (reading memory has no effect; an unused load
 * that would fault is removed too, as Triton does), and for/if whose
 * regions hold no effect.  Kept always: store, atomic_add, assert, while
 * (it might not terminate; pass_dce's whiles_terminate drops that reason when
 * the caller knows every while terminates), yield, condition, and control flow containing
 * any of them.
 * Requires: a verified Func.  Keeps: everything else, order, ValIds.
 * Breaks: nothing (removed values are simply no longer defined). */

typedef struct Dce {
    int *uses; /* by ValId: number of operand uses in live instructions */
    bool changed;
    bool whiles_terminate; /* a while without effects and uses may go */
} Dce;

static void count_uses(Dce *c, const Block *b, int delta)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nargs; k++)
            c->uses[in->args[k]] += delta;
        for (int r = 0; r < in->nregions; r++)
            count_uses(c, in->regions[r], delta);
    }
}

static bool has_effect(const Dce *c, const Inst *in)
{
    switch ((OpKind)in->op) {
    case OP_STORE: case OP_ATOMIC_ADD: case OP_ATOMIC_MAX: case OP_ATOMIC_MIN: case OP_ATOMIC_XCHG:
    case OP_ASSERT: case OP_BARRIER:
        return true;
    case OP_WHILE:
        if (!c->whiles_terminate)
            return true;
        break;
    default:
        break;
    }
    for (int r = 0; r < in->nregions; r++) {
        const Block *b = in->regions[r];
        for (int i = 0; i < b->insts.n; i++)
            if (has_effect(c, &b->insts.v[i]))
                return true;
    }
    return false;
}

static bool removable(const Dce *c, const Inst *in)
{
    if (in->op == OP_YIELD || in->op == OP_CONDITION || has_effect(c, in))
        return false;
    if (!op_info[in->op].pure && in->op != OP_LOAD && in->op != OP_FOR && in->op != OP_IF &&
        in->op != OP_WHILE) /* a while gets here only when whiles_terminate */
        return false;
    for (int i = 0; i < in->nres; i++)
        if (c->uses[in->res[i]] > 0)
            return false;
    return true;
}

/* Walks b backwards (uses before definitions: the reverse of the text
 * order), so one sweep removes whole chains of dead values. */
static void dce_block(Dce *c, Block *b)
{
    int ndead = 0;
    for (int i = b->insts.n - 1; i >= 0; i--) {
        Inst *in = &b->insts.v[i];
        for (int r = in->nregions - 1; r >= 0; r--)
            dce_block(c, in->regions[r]);
        if (removable(c, in)) {
            for (int k = 0; k < in->nargs; k++)
                c->uses[in->args[k]]--;
            for (int r = 0; r < in->nregions; r++)
                count_uses(c, in->regions[r], -1);
            in->op = OP_COUNT; /* marked; compacted below */
            ndead++;
        }
    }
    if (!ndead)
        return;
    int n = 0;
    for (int i = 0; i < b->insts.n; i++)
        if (b->insts.v[i].op != OP_COUNT)
            b->insts.v[n++] = b->insts.v[i];
    b->insts.n = n;
    c->changed = true;
}

bool pass_dce(Func *f, bool whiles_terminate)
{
    Arena *a = scratch_new(f);
    Dce c = {.uses = arena_alloc(a, (size_t)f->vals.n * sizeof(int)), .whiles_terminate = whiles_terminate};
    count_uses(&c, f->body, 1);
    do {
        c.changed = false;
        dce_block(&c, f->body);
    } while (c.changed);
    scratch_free(f, a);
    return true;
}

/* ------------------------------------------------------------------ */
/* simplify: constant arithmetic                                       */
/* ------------------------------------------------------------------ */

/* A known constant (all lanes equal). */
typedef struct CVal {
    bool known;
    int64_t i; /* integer dtypes: the value, normalized by dtype_wrap() */
    double x;  /* float dtypes: the value, already rounded to the dtype */
} CVal;

static bool lt_int(Dtype dt, int64_t a, int64_t b)
{
    return dtype_is_signed(dt) ? a < b : (uint64_t)a < (uint64_t)b;
}

/* Folds an integer op on constants.  false: not folded (division by zero,
 * overflowing division, shift out of range, unsupported op). */
static bool fold_int(OpKind op, Dtype dt, const CVal *a, const CVal *b, int64_t *out)
{
    uint64_t x = (uint64_t)a->i, y = b ? (uint64_t)b->i : 0;
    int bits = dtype_bits(dt);
    bool sgn = dtype_is_signed(dt);
    switch (op) {
    case OP_ADD: *out = dtype_wrap(dt, x + y); return true;
    case OP_SUB: *out = dtype_wrap(dt, x - y); return true;
    case OP_MUL: *out = dtype_wrap(dt, x * y); return true;
    case OP_DIV: case OP_REM:
        if (b->i == 0)
            return false;
        if (sgn) {
            int64_t min = bits >= 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
            if (a->i == min && b->i == -1)
                return false; /* overflows: undefined on the device */
            *out = dtype_wrap(dt, (uint64_t)(op == OP_DIV ? a->i / b->i : a->i % b->i));
        } else {
            *out = dtype_wrap(dt, op == OP_DIV ? x / y : x % y);
        }
        return true;
    case OP_MAXIMUM: *out = lt_int(dt, a->i, b->i) ? b->i : a->i; return true;
    case OP_MINIMUM: *out = lt_int(dt, b->i, a->i) ? b->i : a->i; return true;
    case OP_NEG: *out = dtype_wrap(dt, 0 - x); return true;
    case OP_ABS: *out = sgn && a->i < 0 ? dtype_wrap(dt, 0 - x) : a->i; return true;
    case OP_AND: *out = dtype_wrap(dt, x & y); return true;
    case OP_OR: *out = dtype_wrap(dt, x | y); return true;
    case OP_XOR: *out = dtype_wrap(dt, x ^ y); return true;
    case OP_NOT: *out = dtype_wrap(dt, ~x); return true;
    case OP_SHL: case OP_SHR:
        if (b->i < 0 || b->i >= bits)
            return false; /* undefined on the device */
        if (op == OP_SHL)
            *out = dtype_wrap(dt, x << y);
        else if (sgn && a->i < 0)
            *out = dtype_wrap(dt, ~(~x >> y)); /* arithmetic shift */
        else
            *out = dtype_wrap(dt, x >> y);
        return true;
    case OP_UMULHI:
        if (bits != 32)
            return false;
        *out = dtype_wrap(dt, ((x & 0xffffffffu) * (y & 0xffffffffu)) >> 32);
        return true;
    default:
        return false;
    }
}

/* Folds a float op whose correctly rounded result in the dtype equals the
 * double result rounded to the dtype.  Transcendental functions are not
 * folded: their last bit depends on the math library. */
static bool fold_float(OpKind op, Dtype dt, const CVal *a, const CVal *b, double *out)
{
    double x = a->x, y = b ? b->x : 0, r;
    switch (op) {
    case OP_ADD: r = x + y; break;
    case OP_SUB: r = x - y; break;
    case OP_MUL: r = x * y; break;
    case OP_DIV: r = x / y; break;
    case OP_REM: r = fmod(x, y); break;
    case OP_NEG: r = -x; break;
    case OP_ABS: r = fabs(x); break;
    case OP_SQRT: r = sqrt(x); break;
    case OP_FLOOR: r = floor(x); break;
    case OP_CEIL: r = ceil(x); break;
    case OP_TRUNC: r = trunc(x); break;
    case OP_RINT: r = nearbyint(x); break;
    case OP_MAXIMUM: case OP_MINIMUM:
        if (isnan(x) || isnan(y) || (x == 0 && y == 0))
            return false; /* NaN propagation and the sign of zero are the device's choice */
        r = (op == OP_MAXIMUM) == (x > y) ? x : y;
        break;
    default:
        return false;
    }
    *out = dtype_round(dt, r);
    return true;
}

/* Comparison of two constants of dtype dt (ints or floats). */
static bool fold_cmp(OpKind op, Dtype dt, const CVal *a, const CVal *b, int64_t *out)
{
    bool lt, eq, unordered = false;
    if (dtype_is_float(dt)) {
        unordered = isnan(a->x) || isnan(b->x);
        lt = a->x < b->x;
        eq = a->x == b->x;
    } else {
        lt = lt_int(dt, a->i, b->i);
        eq = a->i == b->i;
    }
    bool r;
    switch (op) {
    case OP_LT: r = lt; break;
    case OP_LE: r = lt || eq; break;
    case OP_GT: r = !lt && !eq && !unordered; break;
    case OP_GE: r = !lt && !unordered; break;
    case OP_EQ: r = eq; break;
    case OP_NE: r = !eq; break;
    default: return false;
    }
    *out = r;
    return true;
}

/* Value conversion of a constant from dtype s to dtype d. */
static bool fold_cast(Dtype s, Dtype d, const CVal *a, CVal *out)
{
    bool sf = dtype_is_float(s), df = dtype_is_float(d);
    if (s == DT_PTR || d == DT_PTR)
        return false;
    if (!sf && !df) {
        /* to i1 is a truth test (x != 0), not a wrap */
        out->i = d == DT_I1 ? a->i != 0 : dtype_wrap(d, (uint64_t)a->i);
    } else if (!sf && df) {
        bool uns = !dtype_is_signed(s);
        double v = uns ? (double)(uint64_t)a->i : (double)a->i;
        if (fabs(v) > 9007199254740992.0) /* 2^53: the double is already rounded */
            return false;
        out->x = dtype_round(d, v);
    } else if (sf && !df) {
        double t = trunc(a->x);
        if (isnan(a->x) || d == DT_I1)
            return false;
        /* only in range: out of range the device saturates or wraps by width */
        int bits = dtype_bits(d);
        double lo = dtype_is_signed(d) ? -ldexp(1.0, bits - 1) : 0.0;
        double hi = dtype_is_signed(d) ? ldexp(1.0, bits - 1) : ldexp(1.0, bits);
        if (!(t >= lo && t < hi))
            return false;
        out->i = t < 0 ? (int64_t)t : dtype_wrap(d, (uint64_t)t);
    } else {
        out->x = dtype_round(d, a->x);
    }
    out->known = true;
    return true;
}

/* ------------------------------------------------------------------ */
/* simplify: the walk                                                  */
/* ------------------------------------------------------------------ */

/* simplify -- one forward walk over the regions, rebuilding each block:
 *   - operands are renamed through `repl` (values proven equal to others);
 *   - ops whose operands are all constants (splats included) become
 *     `const` in place (same result ValId): integer ops with the dtype's
 *     wrap-around, C division (never by zero), floats as fold_float says,
 *     comparisons, casts, and shape ops (broadcast, reshape, permute,
 *     expand_dims) of a constant;
 *   - `where` with a constant condition and `if` on a constant condition
 *     (the taken region is inlined, its yield becomes the results);
 *   - exact identities: x+0, 0+x, x-0, x*1, 1*x, x/1, x|0, x^0, x<<0, x>>0
 *     and x*0 -> 0, x&0 -> 0 on ints; x*1.0, 1.0*x, x/1.0, x-0.0 on floats
 *     (x+0.0 is not exact: -0.0 + 0.0 is +0.0);
 *   - CSE: a pure op equal (op, operands, attributes, result type) to one
 *     earlier in the same or an enclosing region is replaced by it; so is
 *     a load, when no instruction that may write memory (store, atomic,
 *     barrier, a region holding one; for a loop's body, the whole loop)
 *     comes between the two;
 *   then dce.
 * Requires: a verified Func.  Keeps: verified, ValIds of the survivors,
 * order.  Breaks: value names of replaced values (uses now print the
 * replacement's name). */

typedef struct CseEnt {
    uint32_t hash;
    int next;       /* next entry of the bucket, -1 */
    uint32_t epoch; /* a load's: S.epoch when it was recorded */
    Inst in;        /* a copy: op, flags, args, attributes, the result */
} CseEnt;

typedef struct S {
    Func *f;
    Arena *a; /* scratch */
    ValId *repl;
    CVal *cv;
    Vec(CseEnt) cse;
    int *buckets;
    uint32_t nbuckets; /* power of two */
    uint32_t epoch;    /* bumped at every instruction that may write memory: loads match within one */
    uint8_t *bop;      /* by ValId: the op of an i1 `and` or `not`, a `where` or a float `add` kept (0:
                        * another) */
    ValId (*barg)[3];  /* ... and its (renamed) operands */
} S;

static ValId rep(S *s, ValId v)
{
    while (s->repl[v])
        v = s->repl[v];
    return v;
}

static Type tyv(S *s, ValId v) { return s->f->vals.v[v].ty; }

/* Turns in into `const` of its result type. */
static void make_const(S *s, Inst *in, CVal c)
{
    in->op = OP_CONST;
    in->nargs = 0;
    in->args = NULL;
    in->flags = 0;
    in->nints = 0;
    in->sattr = NULL;
    if (dtype_is_float((Dtype)tyv(s, in->res[0]).dt)) {
        in->ival = 0;
        in->fval = c.x;
    } else {
        in->ival = c.i;
        in->fval = 0;
    }
}

static bool is_const_eq(S *s, ValId v, double x)
{
    const CVal *c = &s->cv[v];
    if (!c->known)
        return false;
    Type t = tyv(s, v);
    if (dtype_is_float((Dtype)t.dt))
        return c->x == x && !signbit(c->x) == !signbit(x);
    return dtype_is_int((Dtype)t.dt) && (double)c->i == x;
}

/* where(c, 0.0, x) + where(c, x, 0.0) in either order, c and x the same and 0.0 the literal +0.0: x
 * (then the caller adds 0.0; IEEE addition commutes, so either branch is x + 0.0 exactly), or 0.  The
 * adjoint of a value carried through `where(c, v + t, v)` (a masked loop, `continue`). */
static ValId where_pair(S *s, ValId x, ValId y)
{
    if (s->bop[x] != OP_WHERE || s->bop[y] != OP_WHERE || s->barg[x][0] != s->barg[y][0])
        return 0;
    ValId a1 = s->barg[x][1], a2 = s->barg[x][2], b1 = s->barg[y][1], b2 = s->barg[y][2];
    if (is_const_eq(s, a1, 0) && is_const_eq(s, b2, 0) && a2 == b1)
        return a2;
    if (is_const_eq(s, a2, 0) && is_const_eq(s, b1, 0) && a1 == b2)
        return a1;
    return 0;
}

/* or(and(a, not b), and(a, b)), the operands of either `and` in either order: a (a masked loop's
 * lanes after a `continue`, those that took it or-ed with those that did not), or 0. */
static ValId absorb(S *s, ValId x, ValId y)
{
    if (s->bop[x] != OP_AND || s->bop[y] != OP_AND)
        return 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            ValId a = s->barg[x][i], p = s->barg[x][1 - i], q = s->barg[y][1 - j];
            if (a != s->barg[y][j])
                continue;
            if ((s->bop[p] == OP_NOT && s->barg[p][0] == q) || (s->bop[q] == OP_NOT && s->barg[q][0] == p))
                return a;
        }
    return 0;
}

/* Exact identities of a binary op: the value it equals, or 0; *zero set
 * when the result is the constant 0 (ints only). */
static ValId identity(S *s, const Inst *in, bool *zero)
{
    *zero = false;
    if (in->nargs != 2 || in->nres != 1)
        return 0;
    ValId x = in->args[0], y = in->args[1];
    Type t = tyv(s, in->res[0]);
    bool fl = dtype_is_float((Dtype)t.dt), in_ = dtype_is_int((Dtype)t.dt);
    if (!type_eq(tyv(s, x), t) || !type_eq(tyv(s, y), t))
        return 0;
    switch ((OpKind)in->op) {
    case OP_ADD:
        if (in_ && is_const_eq(s, y, 0)) return x;
        if (in_ && is_const_eq(s, x, 0)) return y;
        break;
    case OP_SUB:
        if ((in_ || fl) && is_const_eq(s, y, 0)) return x; /* x - (+0.0) == x, also for -0.0 */
        break;
    case OP_MUL:
        if ((in_ || fl) && is_const_eq(s, y, 1)) return x;
        if ((in_ || fl) && is_const_eq(s, x, 1)) return y;
        if (in_ && (is_const_eq(s, y, 0) || is_const_eq(s, x, 0))) *zero = true;
        break;
    case OP_DIV:
        if ((in_ || fl) && is_const_eq(s, y, 1)) return x;
        break;
    case OP_OR: case OP_XOR: case OP_SHL: case OP_SHR:
        if (in_ && is_const_eq(s, y, 0)) return x;
        if (in_ && (in->op == OP_OR || in->op == OP_XOR) && is_const_eq(s, x, 0)) return y;
        break;
    case OP_AND:
        if (in_ && (is_const_eq(s, y, 0) || is_const_eq(s, x, 0))) *zero = true;
        break;
    default:
        break;
    }
    if ((in->op == OP_AND || in->op == OP_OR) && in_ && x == y) /* x & x, x | x */
        return x;
    if (in->op == OP_OR && t.dt == DT_I1)
        return absorb(s, x, y);
    if (in->op == OP_ADD && fl && is_const_eq(s, y, 0) && s->bop[x] == OP_ADD && is_const_eq(s, s->barg[x][1], 0))
        return x; /* (x + 0.0) + 0.0: x + 0.0 is x but -0.0 made +0.0, and adding 0.0 again changes nothing */
    return 0;
}

/* Tries to fold in (operands renamed) into a constant. */
static void try_fold(S *s, Inst *in)
{
    OpKind op = (OpKind)in->op;
    if (in->nres != 1 || in->nregions || !op_info[op].pure || op == OP_CONST || in->nargs == 0)
        return;
    for (int i = 0; i < in->nargs; i++)
        if (!s->cv[in->args[i]].known)
            return;
    Type rt = tyv(s, in->res[0]);
    Dtype rd = (Dtype)rt.dt, ad = (Dtype)tyv(s, in->args[0]).dt;
    const CVal *a = &s->cv[in->args[0]];
    const CVal *b = in->nargs > 1 ? &s->cv[in->args[1]] : NULL;
    CVal r = {.known = true};
    switch (op) {
    case OP_BROADCAST: case OP_RESHAPE: case OP_PERMUTE: case OP_EXPAND_DIMS:
    case OP_MULTIPLE_OF: case OP_MAX_CONTIGUOUS:
        if (op == OP_MULTIPLE_OF || op == OP_MAX_CONTIGUOUS)
            return; /* hints are kept for the emitter */
        r = *a;
        break;
    case OP_CAST:
        if (!fold_cast(ad, rd, a, &r))
            return;
        break;
    case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE:
        if (!fold_cmp(op, ad, a, b, &r.i))
            return;
        break;
    case OP_ISNAN: case OP_ISINF:
        if (!dtype_is_float(ad))
            return;
        r.i = op == OP_ISNAN ? isnan(a->x) != 0 : isinf(a->x) != 0;
        break;
    default:
        if (!op_info[op].elementwise || in->nargs > 2)
            return;
        if (dtype_is_float(rd)) {
            if (!fold_float(op, rd, a, b, &r.x))
                return;
        } else if (dtype_is_int(rd)) {
            if (!fold_int(op, rd, a, b, &r.i))
                return;
        } else {
            return;
        }
        break;
    }
    make_const(s, in, r);
}

static uint32_t inst_hash(S *s, const Inst *in)
{
    uint32_t h = 2166136261u;
#define MIX(v) (h = (h ^ (uint32_t)(v)) * 16777619u)
    MIX(in->op);
    MIX(in->flags);
    MIX(in->nargs);
    for (int i = 0; i < in->nargs; i++)
        MIX(in->args[i]);
    MIX(in->ival);
    MIX(in->ival >> 32);
    uint64_t fb;
    memcpy(&fb, &in->fval, sizeof fb);
    MIX(fb);
    MIX(fb >> 32);
    for (int i = 0; i < in->nints; i++)
        MIX(in->ints[i]);
    Type t = tyv(s, in->res[0]);
    MIX(t.dt);
    MIX(t.elem);
    MIX(t.rank);
    for (int i = 0; i < t.rank; i++)
        MIX(t.shape[i]);
#undef MIX
    return h;
}

static bool inst_same(S *s, const Inst *a, const Inst *b)
{
    if (a->op != b->op || a->flags != b->flags || a->nargs != b->nargs || a->ival != b->ival ||
        memcmp(&a->fval, &b->fval, sizeof a->fval) || a->nints != b->nints)
        return false;
    for (int i = 0; i < a->nargs; i++)
        if (a->args[i] != b->args[i])
            return false;
    for (int i = 0; i < a->nints; i++)
        if (a->ints[i] != b->ints[i])
            return false;
    if ((a->sattr == NULL) != (b->sattr == NULL) || (a->sattr && strcmp(a->sattr, b->sattr)))
        return false;
    return type_eq(tyv(s, a->res[0]), tyv(s, b->res[0]));
}

/* The result of an equal instruction seen before in scope, or 0 (then in
 * is recorded). */
static ValId cse(S *s, const Inst *in)
{
    bool load = in->op == OP_LOAD;
    if ((!op_info[in->op].pure && !load) || in->nres != 1 || in->nregions)
        return 0;
    uint32_t h = inst_hash(s, in);
    uint32_t k = h & (s->nbuckets - 1);
    for (int e = s->buckets[k]; e >= 0; e = s->cse.v[e].next)
        if (s->cse.v[e].hash == h && (!load || s->cse.v[e].epoch == s->epoch) && inst_same(s, &s->cse.v[e].in, in))
            return s->cse.v[e].in.res[0];
    CseEnt ent = {h, s->buckets[k], s->epoch, *in};
    vec_push(s->a, s->cse, ent);
    s->buckets[k] = s->cse.n - 1;
    return 0;
}

/* Forgets the CSE entries recorded since mark (leaving a region).  The
 * entries are a stack and each one heads its bucket when popped. */
static void cse_pop(S *s, int mark)
{
    while (s->cse.n > mark) {
        CseEnt *e = &s->cse.v[--s->cse.n];
        s->buckets[e->hash & (s->nbuckets - 1)] = e->next;
    }
}

static void simplify_block(S *s, Block *b);

/* Simplifies region r in its own CSE scope. */
static void simplify_region(S *s, Block *r)
{
    int mark = s->cse.n;
    simplify_block(s, r);
    cse_pop(s, mark);
}

/* Simplifies a scan's or reduce's combine region, which must stay closed: CSE sees
 * none of the enclosing regions' values. */
static void simplify_closed_region(S *s, Block *r)
{
    size_t bytes = s->nbuckets * sizeof *s->buckets;
    int *saved = arena_alloc(s->a, bytes);
    memcpy(saved, s->buckets, bytes);
    memset(s->buckets, 0xff, bytes); /* -1: empty */
    simplify_region(s, r);
    memcpy(s->buckets, saved, bytes);
}

static void simplify_block(S *s, Block *b)
{
    int nold;
    Inst *old = ir_block_detach(b, &nold);
    for (int i = 0; i < nold; i++) {
        Inst in = old[i];
        for (int k = 0; k < in.nargs; k++)
            in.args[k] = rep(s, in.args[k]);
        OpKind op = (OpKind)in.op;

        /* if on a constant condition: inline the taken region */
        if (op == OP_IF && s->cv[in.args[0]].known) {
            Block *taken = in.regions[s->cv[in.args[0]].i ? 0 : 1];
            simplify_block(s, taken); /* its values now live in b's scope */
            for (int k = 0; k + 1 < taken->insts.n; k++)
                vec_push(s->f->a, b->insts, taken->insts.v[k]);
            const Inst *y = &taken->insts.v[taken->insts.n - 1];
            for (int k = 0; k < in.nres && k < y->nargs; k++)
                s->repl[in.res[k]] = rep(s, y->args[k]);
            continue;
        }
        /* loads: a loop whose body writes memory sees none of the loads before it (an
         * iteration's load follows the last one's writes); after any writer, no load before
         * it is reused */
        bool writes = ir_inst_writes(&in);
        if (writes && (op == OP_FOR || op == OP_WHILE))
            s->epoch++;
        if (op == OP_SCAN || op == OP_REDUCE)
            simplify_closed_region(s, in.regions[0]);
        else
            for (int r = 0; r < in.nregions; r++)
                simplify_region(s, in.regions[r]);
        if (writes)
            s->epoch++;

        /* where with a constant condition, or equal branches */
        if (op == OP_WHERE && (s->cv[in.args[0]].known || in.args[1] == in.args[2])) {
            ValId pick = in.args[1] == in.args[2] || s->cv[in.args[0]].i ? in.args[1] : in.args[2];
            s->repl[in.res[0]] = pick;
            continue;
        }
        /* where(c, 0.0, x) + where(c, x, 0.0): x + 0.0 */
        if (in.op == OP_ADD && in.nres == 1 && dtype_is_float((Dtype)tyv(s, in.res[0]).dt)) {
            ValId x = where_pair(s, in.args[0], in.args[1]);
            Type t = tyv(s, in.res[0]);
            ValId z = !x ? 0 : is_const_eq(s, s->barg[in.args[0]][1], 0) ? s->barg[in.args[0]][1] : s->barg[in.args[0]][2];
            if (x && type_eq(tyv(s, x), t) && type_eq(tyv(s, z), t))
                in.args[0] = x, in.args[1] = z;
        }
        try_fold(s, &in);
        bool zero;
        ValId same = in.op == OP_CONST ? 0 : identity(s, &in, &zero);
        if (same) {
            s->repl[in.res[0]] = same;
            continue;
        }
        if (in.op != OP_CONST && zero)
            make_const(s, &in, (CVal){.known = true});
        ValId prev = cse(s, &in);
        if (prev) {
            s->repl[in.res[0]] = prev;
            continue;
        }
        if (in.op == OP_CONST) {
            Type t = tyv(s, in.res[0]);
            CVal c = {.known = true};
            if (dtype_is_float((Dtype)t.dt))
                c.x = dtype_round((Dtype)t.dt, in.fval);
            else
                c.i = dtype_wrap((Dtype)t.dt, (uint64_t)in.ival);
            s->cv[in.res[0]] = c;
        }
        bool kept = (in.op == OP_AND || in.op == OP_NOT) && in.nres == 1 && tyv(s, in.res[0]).dt == DT_I1;
        kept |= (in.op == OP_WHERE || (in.op == OP_ADD && dtype_is_float((Dtype)tyv(s, in.res[0]).dt))) &&
                in.nres == 1;
        if (kept) {
            s->bop[in.res[0]] = (uint8_t)in.op;
            for (int k = 0; k < 3; k++)
                s->barg[in.res[0]][k] = k < in.nargs ? in.args[k] : 0;
        }
        vec_push(s->f->a, b->insts, in);
    }
}

static bool pass_simplify(Func *f)
{
    Arena *a = scratch_new(f);
    S s = {.f = f, .a = a};
    s.repl = arena_alloc(a, (size_t)f->vals.n * sizeof *s.repl);
    s.cv = arena_alloc(a, (size_t)f->vals.n * sizeof *s.cv);
    s.bop = arena_alloc(a, (size_t)f->vals.n);
    s.barg = arena_alloc(a, (size_t)f->vals.n * sizeof *s.barg);
    s.nbuckets = 1024;
    while (s.nbuckets < (uint32_t)f->vals.n)
        s.nbuckets *= 2;
    s.buckets = arena_alloc(a, s.nbuckets * sizeof *s.buckets);
    memset(s.buckets, 0xff, s.nbuckets * sizeof *s.buckets); /* -1: empty */
    simplify_block(&s, f->body);
    scratch_free(f, a);
    return pass_dce(f, false);
}

/* ------------------------------------------------------------------ */
/* Adjoint dots on 16-bit tiles (pass_narrow_dots)                     */
/* ------------------------------------------------------------------ */

typedef struct Narrow {
    Func *f;
    uint8_t *grad;       /* by ValId: depends on data read through the gradients' params */
    const Inst **def;    /* by ValId (nv entries: the values before the pass) */
    int nv;
    bool changed;
    int n;
} Narrow;

/* Marks what depends on the gradients' params (pointers, loads through
 * them, and anything computed from those; loop results and carried values
 * from their yields). */
static void narrow_taint(Narrow *n, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nres; r++)
            n->def[in->res[r]] = in;
        for (int r = 0; r < in->nregions; r++)
            narrow_taint(n, in->regions[r]);
        bool t = false;
        for (int k = 0; k < in->nargs; k++)
            t = t || n->grad[in->args[k]];
        for (int r = 0; r < in->nregions && !t; r++) { /* a region's yield feeds the results */
            const Block *rb = in->regions[r];
            const Inst *y = rb->insts.n ? &rb->insts.v[rb->insts.n - 1] : NULL;
            for (int k = 0; y && y->op == OP_YIELD && k < y->nargs; k++)
                t = t || n->grad[y->args[k]];
        }
        if (!t)
            continue;
        for (int r = 0; r < in->nres; r++)
            if (!n->grad[in->res[r]])
                n->grad[in->res[r]] = 1, n->changed = true;
        for (int r = 0; in->op == OP_FOR && r < in->nregions; r++)
            for (int k = 1; k < in->regions[r]->nparams; k++)
                if (!n->grad[in->regions[r]->params[k]])
                    n->grad[in->regions[r]->params[k]] = 1, n->changed = true;
    }
}

static void narrow_block(Narrow *n, Block *b)
{
    int nold;
    Inst *old = ir_block_detach(b, &nold);
    for (int i = 0; i < nold; i++) {
        Inst in = old[i];
        for (int r = 0; r < in.nregions; r++)
            narrow_block(n, in.regions[r]);
        const Inst *pa, *pb;
        ValId sa = in.op == OP_DOT ? ir_widened16(n->f, n->def, n->nv, in.args[0], &pa) : 0;
        ValId sb = sa ? ir_widened16(n->f, n->def, n->nv, in.args[1], &pb) : 0;
        if (sb && n->grad[in.res[0]] && ir_type(n->f, in.res[0]).dt == DT_F32 &&
            ir_type(n->f, sa).dt == ir_type(n->f, sb).dt) {
            /* the same permutes, on the 16-bit tiles */
            in.args[0] = pa ? ir_permute_as(n->f, b, n->f, pa, sa) : sa;
            in.args[1] = pb ? ir_permute_as(n->f, b, n->f, pb, sb) : sb;
            in.ival = DP_DEFAULT; /* input_precision concerns fp32 operands only */
            n->n++;
        }
        vec_push(n->f->a, b->insts, in);
    }
}

int pass_narrow_dots(Func *f, int first)
{
    Arena *a = scratch_new(f);
    Narrow n = {.f = f, .nv = f->vals.n};
    n.grad = arena_alloc(a, (size_t)f->vals.n + 1);
    n.def = arena_alloc(a, sizeof *n.def * ((size_t)f->vals.n + 1));
    for (int i = first; i < f->nparams; i++)
        n.grad[f->params[i]] = 1;
    for (int round = 0; round < 64; round++) {
        n.changed = false;
        narrow_taint(&n, f->body);
        if (!n.changed)
            break;
    }
    narrow_block(&n, f->body);
    scratch_free(f, a);
    return n.n;
}

/* ------------------------------------------------------------------ */
/* By name                                                             */
/* ------------------------------------------------------------------ */

static const char *pass_names(void) { return "simplify, dce, verify"; }

bool pass_run(Func *f, const char *name, Diags *d)
{
    if (!name) {
        diag_error(d, (Loc){0}, "no pass named");
        return false;
    }
    if (!strcmp(name, "verify"))
        return ir_verify(f, d);
    if (!strcmp(name, "dce"))
        return pass_dce(f, false);
    if (!strcmp(name, "simplify"))
        return pass_simplify(f);
    diag_error(d, (Loc){0}, "unknown pass '%s' (passes: %s)", name, pass_names());
    return false;
}

