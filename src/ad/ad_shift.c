/* ad_shift.c -- the analysis's shift invariance: adjoints that are zero exactly.
 *
 * Job: stage 3 of ad_analyze (ad_analysis.c).  Finds the maxima and minima
 * the outputs provably do not depend on (softmax's exp(x - m) / sum(exp(x -
 * m)) with m = max(x), a running max of an online softmax loop) and pins
 * them: they leave the useful set, so they get no adjoint instead of the
 * rounding noise an exactly-zero adjoint would compute.
 *
 * Requires: the facts of stage 2 (roles, roots, varied, useful).
 * Guarantees: only clears Ad.useful (and sets Ad.pinned); refuses nothing.
 */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "ad/autodiff.h"
#include "ad/ad.h"
#include "ad/ad_int.h"

/* ------------------------------------------------------------------ */
/* 3. Shift-invariant maxima: adjoints that are zero exactly           */
/* ------------------------------------------------------------------ */

/* A numerically stable softmax computes exp(x - m) / sum(exp(x - m)) with
 * m = max(x): the result does not depend on m at all, so m's adjoint is
 * zero in exact arithmetic, and the rounding noise kad would compute for
 * it (a sum over the row, the max's tie mask) is better left out.
 *
 * The proof treats m as a free scalar and gives every value a class
 * saying how it depends on m, c = e^m:
 *   SH_NONE  not at all          SH_ZERO  the constant 0 (any SH_MUL too)
 *   SH_ADD k v0 + k*m            SH_MUL k v0 * c^k
 *   SH_ANY   some other way
 * with v0 independent of m.  The rules below are identities of exact
 * arithmetic (k integer, m one number per program, c > 0): x - m is
 * SH_ADD -1, exp turns SH_ADD k into SH_MUL k, a sum keeps SH_MUL k, a
 * quotient of SH_MUL k by SH_MUL k is SH_NONE, log(SH_MUL k) is SH_ADD k
 * (logsumexp: m + log(sum(exp(x - m))) is SH_NONE).  m is shift-invariant
 * when every stored value, pointer and mask of a differentiated output is
 * SH_NONE or SH_ZERO and no dependent value enters control flow.  Then
 * m and every value that depends on the inputs only through m get no
 * adjoint; the others' adjoints are the partial derivatives with m held
 * fixed, which is the gradient, since the outputs do not depend on m. */
enum { SH_NONE, SH_ZERO, SH_ADD, SH_MUL, SH_ANY };
typedef struct Sh {
    uint8_t kind; /* SH_* */
    int32_t k;    /* SH_ADD: m's coefficient; SH_MUL: c's power */
} Sh;

#define SH_LIMIT (1 << 20) /* beyond this, SH_ANY (no overflow) */

static Sh sh_mk(int kind, int64_t k)
{
    if ((kind == SH_ADD || kind == SH_MUL) && k == 0)
        return (Sh){SH_NONE, 0};
    if (k > SH_LIMIT || k < -SH_LIMIT)
        return (Sh){SH_ANY, 0};
    return (Sh){(uint8_t)kind, (int32_t)k};
}

static bool sh_dep(Sh x) { return x.kind == SH_ADD || x.kind == SH_MUL || x.kind == SH_ANY; }

/* x as v0 + k*m (SH_NONE and SH_ZERO: k = 0). */
static bool sh_as_add(Sh x, int64_t *k)
{
    *k = x.kind == SH_ADD ? x.k : 0;
    return x.kind == SH_NONE || x.kind == SH_ZERO || x.kind == SH_ADD;
}

/* x as v0 * c^k (SH_NONE and SH_ZERO: k = 0). */
static bool sh_as_mul(Sh x, int64_t *k)
{
    *k = x.kind == SH_MUL ? x.k : 0;
    return x.kind == SH_NONE || x.kind == SH_ZERO || x.kind == SH_MUL;
}

/* The class shared by two values combined lane by lane without changing
 * their dependence on m (select, maximum): equal classes; 0 joins
 * any SH_MUL (max(0, v0*c^k) = c^k * max(0, v0)). */
static Sh sh_same(Sh x, Sh y)
{
    if (x.kind == SH_ZERO && y.kind != SH_ADD && y.kind != SH_ANY)
        return y;
    if (y.kind == SH_ZERO && x.kind != SH_ADD && x.kind != SH_ANY)
        return x;
    if (x.kind == y.kind && x.k == y.k && x.kind != SH_ANY)
        return x;
    return (Sh){SH_ANY, 0};
}

/* x + sign*y. */
static Sh sh_add(Sh x, Sh y, int sign)
{
    int64_t a, b;
    if (sh_as_add(x, &a) && sh_as_add(y, &b))
        return sh_mk(SH_ADD, a + sign * b);
    return sh_same(x, y); /* v0*c^k + w0*c^k */
}

/* x * y (sign 1) or x / y (sign -1). */
static Sh sh_mul(Sh x, Sh y, int sign)
{
    int64_t a, b;
    if (sh_as_mul(x, &a) && sh_as_mul(y, &b))
        return sh_mk(SH_MUL, a + sign * b);
    return (Sh){SH_ANY, 0};
}

/* Is v the float constant 0 (through broadcasts)? */
static bool zero_const(const Ad *ad, ValId v)
{
    const Inst *in = ad->def[v];
    while (in && (in->op == OP_BROADCAST || in->op == OP_EXPAND_DIMS))
        in = ad->def[in->args[0]];
    return in && in->op == OP_CONST && is_float(fw_ty(ad, in->res[0])) && in->fval == 0.0;
}

/* Is v a float NaN constant (through broadcasts)? */
bool an_nan_const(const Ad *ad, ValId v)
{
    const Inst *in = ad->def[v];
    while (in && (in->op == OP_BROADCAST || in->op == OP_EXPAND_DIMS))
        in = ad->def[in->args[0]];
    return in && in->op == OP_CONST && is_float(fw_ty(ad, in->res[0])) && isnan(in->fval);
}

/* The class of the result of `in` from its operands' classes. */
static Sh sh_rule(const Ad *ad, const Inst *in, const Sh *cls)
{
    Sh x = cls[in->args[0]];
    Sh y = in->nargs > 1 ? cls[in->args[1]] : (Sh){SH_NONE, 0};
    Sh z = in->nargs > 2 ? cls[in->args[2]] : (Sh){SH_NONE, 0};
    int64_t k;
    switch ((OpKind)in->op) {
    case OP_BROADCAST:
    case OP_EXPAND_DIMS:
    case OP_RESHAPE:
    case OP_PERMUTE:
    case OP_MAX: /* max(v0 + k*m) = max(v0) + k*m; max(v0*c^k) = max(v0)*c^k */
    case OP_MIN:
        return x;
    case OP_CAST: /* a float conversion is the identity in exact arithmetic */
        if (is_float(fw_ty(ad, in->args[0])) && is_float(fw_ty(ad, in->res[0])))
            return x;
        break;
    case OP_NEG:
        return x.kind == SH_ADD ? sh_mk(SH_ADD, -(int64_t)x.k) : x;
    case OP_ADD:
        return sh_add(x, y, 1);
    case OP_SUB:
        return sh_add(x, y, -1);
    case OP_MUL:
        return sh_mul(x, y, 1);
    case OP_DIV:
        return sh_mul(x, y, -1);
    case OP_FMA: /* a*b + c, and a@b + acc */
    case OP_DOT:
        return sh_add(sh_mul(x, y, 1), z, 1);
    case OP_MAXIMUM:
    case OP_MINIMUM:
        return sh_same(x, y);
    case OP_WHERE:
        return sh_dep(x) ? (Sh){SH_ANY, 0} : sh_same(y, z);
    case OP_SUM: /* sums of v0*c^k are c^k times the sum */
    case OP_CUMSUM:
        if (x.kind != SH_ADD)
            return x;
        break;
    case OP_EXP:
        if (sh_as_add(x, &k))
            return sh_mk(SH_MUL, k);
        break;
    case OP_LOG:
        if (sh_as_mul(x, &k))
            return sh_mk(SH_ADD, k);
        break;
    default:
        break;
    }
    for (int i = 0; i < in->nargs; i++)
        if (sh_dep(cls[in->args[i]]))
            return (Sh){SH_ANY, 0};
    return (Sh){SH_NONE, 0};
}

static bool sh_block(const Ad *ad, const Block *b, ValId m, Sh *cls, bool carries);

/* Does b (or a region nested in it) define v? */
static bool block_defines(const Block *b, ValId v)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nres; k++)
            if (in->res[k] == v)
                return true;
        for (int r = 0; r < in->nregions; r++)
            if (block_defines(in->regions[r], v))
                return true;
    }
    return false;
}

/* A `for` loop whose bounds do not depend on m: each carried value's class
 * is a fixpoint of the body, its start's class joined with its yield's
 * (a running sum of exp(x - m) starting at 0 is SH_MUL -1 on every
 * iteration, by induction); its results get those classes, and m itself
 * when it is one of them (a running max) SH_ADD 1.  A loop whose body
 * defines m has one m per iteration, not one number: no value that depends
 * on it may be carried to the next iteration (the proof shifts them all
 * by one amount). */
static bool sh_for(const Ad *ad, const Inst *in, ValId m, Sh *cls)
{
    for (int k = 0; k < 3; k++)
        if (sh_dep(cls[in->args[k]]))
            return false;
    const Block *body = in->regions[0];
    const Inst *y = ad_block_term(body);
    bool inside = block_defines(body, m);
    for (int i = 0; i < in->nres; i++)
        cls[body->params[1 + i]] = cls[in->args[3 + i]];
    for (int round = 0; round < 4; round++) {
        if (!sh_block(ad, body, m, cls, !inside))
            return false;
        bool same = true;
        for (int i = 0; i < in->nres; i++) {
            Sh p = cls[body->params[1 + i]], j = sh_same(p, cls[y->args[i]]);
            if (j.kind != p.kind || j.k != p.k) {
                cls[body->params[1 + i]] = j;
                same = false;
            }
        }
        if (same) {
            for (int i = 0; i < in->nres; i++)
                cls[in->res[i]] = in->res[i] == m ? (Sh){SH_ADD, 1} : cls[body->params[1 + i]];
            return true;
        }
    }
    return false;
}

/* Classes of b's values with m free; false when m might reach an output
 * (see above).  carries: b is a `for` body, whose yield may carry values
 * that depend on m (sh_for checks their classes). */
static bool sh_block(const Ad *ad, const Block *b, ValId m, Sh *cls, bool carries)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        bool dep = false;
        for (int k = 0; k < in->nargs; k++)
            dep = dep || sh_dep(cls[in->args[k]]);
        switch (in->op) {
        case OP_FOR:
            if (!sh_for(ad, in, m, cls))
                return false;
            continue;
        case OP_IF:
        case OP_WHILE:
            if (dep)
                return false;
            for (int r = 0; r < in->nregions; r++)
                if (!sh_block(ad, in->regions[r], m, cls, false))
                    return false;
            continue;
        case OP_YIELD:
            if (dep && !carries)
                return false;
            continue;
        case OP_CONDITION:
            if (dep)
                return false;
            continue;
        case OP_STORE:
        case OP_ATOMIC_ADD: /* scratch stores are dropped; inputs are refused */
        case OP_ATOMIC_MAX:
        case OP_ATOMIC_MIN:
        case OP_ATOMIC_XCHG:
            if (dep && (ad->root[in->args[0]] == ROOT_AMBIG || ad_root_role(ad, in->args[0]) != AD_ROLE_NONE) &&
                !(in->op == OP_STORE && ad_store_overwritten(b, i)))
                return false;
            continue;
        default:
            break;
        }
        if (in->nres != 1)
            continue;
        ValId r = in->res[0];
        if (r == m)
            cls[r] = (Sh){SH_ADD, 1};
        else if (dep)
            cls[r] = sh_rule(ad, in, cls);
        else if (in->op == OP_CONST && zero_const(ad, r))
            cls[r] = (Sh){SH_ZERO, 0};
        else if ((in->op == OP_BROADCAST || in->op == OP_EXPAND_DIMS) && cls[in->args[0]].kind == SH_ZERO)
            cls[r] = cls[in->args[0]];
    }
    return true;
}

/* Marks in `only` the values that depend on the inputs only through m:
 * m, and results of differentiable ops whose varied operands all are
 * marked (loads are never: they read the inputs). */
static void through_only(const Ad *ad, const Block *b, ValId m, uint8_t *only)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nregions; r++)
            through_only(ad, in->regions[r], m, only);
        if (in->nres != 1 || !op_differentiable(in->op))
            continue;
        bool some = false, all = true;
        for (int k = 0; k < in->nargs; k++) {
            ValId a = in->args[k];
            some = some || only[a];
            all = all && (only[a] || !ad->varied[a]);
        }
        only[in->res[0]] = in->res[0] == m || (some && all);
    }
}

/* Is res[i] of `for` in a running max or min alone: a scalar yielded as
 * maximum(m, y) or minimum(m, y) (either order) of its carried m, which
 * nothing else uses, and used by nothing but that yield?  (An online
 * softmax's first loop after gauge_rewrite.)  Its chain is then pinned
 * with it: it only feeds the result. */
static bool running_extreme(const Ad *ad, const Inst *in, int i)
{
    const Block *body = in->regions[0];
    ValId p = body->params[1 + i], n = ad_block_term(body)->args[i];
    const Inst *e = ad->def[n];
    return e && (e->op == OP_MAXIMUM || e->op == OP_MINIMUM) && (e->args[0] == p || e->args[1] == p) &&
           e->args[0] != e->args[1] && ad->nuses[p] == 1 && ad->nuses[n] == 1 &&
           type_numel(fw_ty(ad, in->res[i])) == 1;
}

/* Pins m (and for a loop's running extreme its carried chain) and what
 * depends on the inputs only through it, when the outputs provably do not
 * depend on m (AD_MUTATE_MAX_DROP, tests only: without the proof). */
static void try_drop(Ad *ad, ValId m, const Inst *loop, int slot)
{
    if (!ad_active(ad, m) || (ad->pinned && ad->pinned[m]))
        return;
    Sh *cls = arena_alloc(ad->a, sizeof *cls * (size_t)ad->nvals);
    if (ad->spec->mutate != AD_MUTATE_MAX_DROP && !sh_block(ad, ad->fw->body, m, cls, false))
        return;
    uint8_t *only = arena_alloc(ad->a, (size_t)ad->nvals);
    only[m] = 1; /* (a loop's result is no op's through_only marks) */
    through_only(ad, ad->fw->body, m, only);
    if (!ad->pinned)
        ad->pinned = arena_alloc(ad->a, (size_t)ad->nvals);
    for (int v = 0; v < ad->nvals; v++)
        ad->pinned[v] |= only[v];
    if (loop) {
        ad->pinned[loop->regions[0]->params[1 + slot]] = 1;
        ad->pinned[ad_block_term(loop->regions[0])->args[slot]] = 1;
    }
}

/* Finds the shift-invariant maxima and minima in b: scalar max/min
 * reductions and loops' running extremes (try_drop). */
static void find_shift_invariant(Ad *ad, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nregions; r++)
            find_shift_invariant(ad, in->regions[r]);
        if ((in->op == OP_MAX || in->op == OP_MIN) && type_numel(fw_ty(ad, in->res[0])) == 1)
            try_drop(ad, in->res[0], NULL, 0);
        for (int k = 0; in->op == OP_FOR && k < in->nres; k++)
            if (running_extreme(ad, in, k))
                try_drop(ad, in->res[k], in, k);
    }
}

/* Takes the shift-invariant maxima out of the adjoint: usefulness is
 * recomputed with them pinned, so that the values only they used (a
 * running max's loop) need no adjoint either. */
void drop_shift_invariant(Ad *ad)
{
    find_shift_invariant(ad, ad->fw->body);
    if (!ad->pinned)
        return;
    memset(ad->useful, 0, (size_t)ad->nvals);
    for (int round = 0; round < 1000; round++) {
        ad->changed = false;
        an_useful_block(ad, ad->fw->body);
        if (!ad->changed)
            break;
    }
}

