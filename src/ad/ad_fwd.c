/* ad_fwd.c -- forward-mode automatic differentiation (JVP) of the tile IR.
 *
 * Job: from a forward kernel `fwd` and the names of its differentiated
 * inputs and outputs (AdSpec, as for reverse mode), build ONE kernel that
 * computes the primal outputs and their tangents in one pass
 * (docs/AD.md, "Forward mode"):
 *
 *   kernel @k_jvp(<fwd params>, %t_x_ptr..., %t_y_ptr...) {
 *     <fwd's body, every instruction followed by its tangent>
 *   }
 *
 * Each pointer into a buffer with a tangent (an input in wrt, an output in
 * outs, one buffer for a name in both) gets a shadow pointer into the
 * tangent buffer (the same address arithmetic replayed on t_<param>), so a
 * load reads the tangent with the load's own offsets and mask, a store
 * writes it with the store's, an atomic_add adds it with the atomic's.
 * Tangents have their primal's dtype; a value without a tangent (ints,
 * comparisons, values not depending on an input) has tangent zero and
 * gets no code.  Loops and `if`s carry the tangents (and shadows) of their
 * carried values and results as extra carried values and results: forward
 * mode needs no tape.
 *
 * Stages of ad_forward:
 *   1. facts (mark_block, to a fixpoint over loops): pointer provenance,
 *      which floats have tangents, which pointers have shadows;
 *   2. emission (emit_block): a copy of each instruction, then its tangent
 *      rule (tan_rule, one case per op) or shadow; refusals are located
 *      errors at the instruction.
 *
 * Requires: a verified fwd.  Guarantees: a new Func in `a` that verifies,
 * or NULL with located errors; fwd is unchanged.
 */
#include <string.h>

#include "kad_int.h"

#define AD_LN2 0.69314718055994530942
#define AD_2_SQRTPI 1.12837916709551257390

enum { R_NONE = 0, R_UNKNOWN = -1, R_MANY = -2 };

typedef struct Fd {
    Arena *a;
    Diags *d;
    const Func *fw;
    const AdSpec *spec;
    int nvals, np;
    int *role;     /* by param index: AD_ROLE_* */
    int *root;     /* by ValId (pointers): param + 1, R_UNKNOWN, R_MANY, R_NONE */
    uint8_t *tv;   /* by ValId: a float with a tangent */
    uint8_t *sv;   /* by ValId: a pointer with a shadow */
    int *nuses;    /* by ValId */
    int *jcov;     /* by ValId: uses as operand 0 of a custom_jvp (whose rule gives the tangent) */
    bool changed;
    Func *jv;
    ValId *pm, *tm, *sm; /* by ValId: primal copy, tangent (0: zero), shadow */
    AdFinite fin;        /* which partials need a strong zero (ad_finite.c) */
    int errors;
} Fd;

static Type fty(const Fd *f, ValId v) { return f->fw->vals.v[v].ty; }
static const char *fname(const Fd *f, ValId v) { return f->fw->vals.v[v].name; }
static bool is_float(Type t) { return t.dt != DT_PTR && dtype_is_float((Dtype)t.dt); }

/* ------------------------------------------------------------------ */
/* 1. Facts                                                            */
/* ------------------------------------------------------------------ */

static void set8(Fd *f, uint8_t *arr, ValId v, bool on)
{
    if (on && !arr[v]) {
        arr[v] = 1;
        f->changed = true;
    }
}

static void join_root(Fd *f, ValId v, int r)
{
    int o = f->root[v];
    int n = o == R_NONE ? r : r == R_NONE || r == o ? o : (o == R_UNKNOWN || r == R_UNKNOWN) ? R_UNKNOWN : R_MANY;
    if (n != o) {
        f->root[v] = n;
        f->changed = true;
    }
}

/* to takes from's facts (a carried value, a result). */
static void flow(Fd *f, ValId to, ValId from)
{
    set8(f, f->tv, to, f->tv[from] && is_float(fty(f, to)));
    set8(f, f->sv, to, f->sv[from]);
    if (fty(f, to).dt == DT_PTR)
        join_root(f, to, f->root[from]);
}

static void mark_block(Fd *f, const Block *b);

static void mark_inst(Fd *f, const Inst *in)
{
    int op = in->op;
    switch (op) {
    case OP_FOR:
    case OP_WHILE: {
        int nfix = op == OP_FOR ? 3 : 0, lead = op == OP_FOR ? 1 : 0;
        for (int r = 0; r < in->nregions; r++) {
            const Block *reg = in->regions[r];
            for (int k = 0; k < in->nres; k++)
                flow(f, reg->params[lead + k], in->args[nfix + k]);
        }
        for (int r = 0; r < in->nregions; r++)
            mark_block(f, in->regions[r]);
        const Block *body = in->regions[op == OP_FOR ? 0 : 1];
        const Inst *y = ad_block_term(body);
        for (int k = 0; k < in->nres; k++)
            for (int r = 0; r < in->nregions; r++)
                flow(f, in->regions[r]->params[lead + k], y->args[k]);
        for (int k = 0; k < in->nres; k++)
            flow(f, in->res[k], in->regions[0]->params[lead + k]);
        return;
    }
    case OP_IF:
        for (int r = 0; r < 2; r++) {
            mark_block(f, in->regions[r]);
            const Inst *y = ad_block_term(in->regions[r]);
            for (int k = 0; k < in->nres; k++)
                flow(f, in->res[k], y->args[k]);
        }
        return;
    case OP_LOAD: {
        ValId r = in->res[0];
        if (fty(f, r).dt == DT_PTR) {
            join_root(f, r, R_UNKNOWN);
            return;
        }
        bool other = in->nargs > 2 && f->tv[in->args[2]];
        set8(f, f->tv, r, is_float(fty(f, r)) && (f->sv[in->args[0]] || other));
        return;
    }
    case OP_SCAN:
    case OP_REDUCE: { /* a float slot has a tangent when its input has one or the combine region's
                     * result for it does (from the slots with tangents; to the fixpoint), in the
                     * result and both halves of the region's params */
        const Block *reg = in->regions[0];
        const Inst *y = ad_block_term(reg);
        for (int k = 0; k < in->nres; k++) {
            bool on = is_float(fty(f, in->res[k])) && (f->tv[in->args[k]] || f->tv[y->args[k]]);
            set8(f, f->tv, in->res[k], on);
            set8(f, f->tv, reg->params[k], on);
            set8(f, f->tv, reg->params[in->nres + k], on);
        }
        mark_block(f, reg);
        return;
    }
    case OP_STORE:
    case OP_ATOMIC_ADD:
    case OP_ATOMIC_MAX:
    case OP_ATOMIC_MIN:
    case OP_ATOMIC_XCHG:
    case OP_YIELD:
    case OP_CONDITION:
    case OP_ASSERT:
    case OP_BARRIER:
        return;
    default:
        break;
    }
    if (in->nres != 1)
        return;
    ValId r = in->res[0];
    Type rt = fty(f, r);
    if (rt.dt == DT_PTR) {
        if (op == OP_BITCAST && fty(f, in->args[0]).dt != DT_PTR) {
            join_root(f, r, R_UNKNOWN);
            return;
        }
        for (int k = 0; k < in->nargs; k++)
            if (fty(f, in->args[k]).dt == DT_PTR) {
                join_root(f, r, op == OP_BITCAST ? R_UNKNOWN : f->root[in->args[k]]);
                set8(f, f->sv, r, op != OP_BITCAST && f->sv[in->args[k]]);
            }
        return;
    }
    char diff = op_info[op].diff;
    if (!is_float(rt) || (diff != 'D' && diff != 'N'))
        return;
    for (int k = 0; k < in->nargs; k++)
        set8(f, f->tv, r, f->tv[in->args[k]]);
}

static void mark_block(Fd *f, const Block *b)
{
    for (int k = 0; k < b->insts.n; k++)
        mark_inst(f, &b->insts.v[k]);
}

static void count_uses(Fd *f, const Block *b)
{
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        for (int j = 0; j < in->nargs; j++)
            f->nuses[in->args[j]]++;
        if (in->op == OP_CUSTOM_JVP)
            f->jcov[in->args[0]]++;
        for (int r = 0; r < in->nregions; r++)
            count_uses(f, in->regions[r]);
    }
}

/* Resolves spec's names to roles (errors at the kernel or the parameter). */
static bool assign_roles(Fd *f)
{
    const Func *fw = f->fw;
    bool ok = true;
    for (int pass = 0; pass < 2; pass++) {
        const char *const *names = pass ? f->spec->outs : f->spec->wrt;
        int n = pass ? f->spec->nouts : f->spec->nwrt;
        for (int i = 0; i < n; i++) {
            int found = -1;
            for (int p = 0; p < fw->nparams; p++) {
                const char *pn = fname(f, fw->params[p]);
                if (pn && !strcmp(pn, names[i]))
                    found = p;
            }
            if (found < 0) {
                diag_error(f->d, fw->loc, "kernel '%s' has no runtime parameter '%s' (to differentiate %s)",
                           fw->name, names[i], pass ? "as an output" : "with respect to");
                ok = false;
                continue;
            }
            Type t = fty(f, fw->params[found]);
            if (t.dt != DT_PTR || !dtype_is_float((Dtype)t.elem)) {
                diag_error(f->d, fw->vals.v[fw->params[found]].loc,
                           "'%s' is not a pointer to floating-point data: it cannot be differentiated", names[i]);
                ok = false;
                continue;
            }
            if (pass && f->role[found] == AD_ROLE_IN) {
                f->role[found] = AD_ROLE_INOUT;
                continue;
            }
            if (f->role[found] != AD_ROLE_NONE) {
                diag_error(f->d, fw->vals.v[fw->params[found]].loc, "'%s' is named twice as %s", names[i],
                           pass ? "an output" : "an input");
                ok = false;
                continue;
            }
            f->role[found] = pass ? AD_ROLE_OUT : AD_ROLE_IN;
        }
    }
    if (ok && !f->spec->nouts) {
        diag_error(f->d, fw->loc, "no differentiated output given");
        ok = false;
    }
    if (ok && !f->spec->nwrt) {
        diag_error(f->d, fw->loc, "no differentiated input given");
        ok = false;
    }
    return ok;
}

/* ------------------------------------------------------------------ */
/* 2. Emission                                                         */
/* ------------------------------------------------------------------ */

typedef struct Em {
    Fd *f;
    Block *b;
    Loc loc;
} Em;

static Type jty(const Em *e, ValId v) { return e->f->jv->vals.v[v].ty; }

static void name_after(Fd *f, ValId jv, const char *prefix, ValId fv)
{
    const char *n = fv ? fname(f, fv) : NULL;
    if (!jv || f->jv->vals.v[jv].name || !n)
        return;
    f->jv->vals.v[jv].name = arena_printf(f->a, "%s%s", prefix, n);
}

static void fail(Fd *f, Loc loc, const char *fmt, const char *arg)
{
    diag_error(f->d, loc, fmt, arg ? arg : "?");
    f->errors++;
}

static ValId P(const Fd *f, ValId v)
{
    ASSERT(v > 0 && f->pm[v] > 0);
    return f->pm[v];
}

static ValId e1(Em *e, OpKind op, ValId x) { return ir_op1(e->f->jv, e->b, op, jty(e, x), x, e->loc); }
static ValId e2(Em *e, OpKind op, ValId x, ValId y) { return ir_op2(e->f->jv, e->b, op, jty(e, x), x, y, e->loc); }
static ValId ecmp(Em *e, OpKind op, ValId x, ValId y)
{
    return ir_op2(e->f->jv, e->b, op, type_with_dtype(jty(e, x), DT_I1), x, y, e->loc);
}
static ValId ewhere(Em *e, ValId c, ValId x, ValId y)
{
    return ir_op3(e->f->jv, e->b, OP_WHERE, jty(e, x), c, x, y, e->loc);
}
static ValId ec(Em *e, ValId like, double v) { return ir_const_float(e->f->jv, e->b, jty(e, like), v, e->loc); }
static ValId ezero(Em *e, Type t) { return ir_const_float(e->f->jv, e->b, t, 0.0, e->loc); }

/* fw value v's tangent, or a zero of its type. */
static ValId TZ(Em *e, ValId v)
{
    return e->f->tm[v] ? e->f->tm[v] : ezero(e, fty(e->f, v));
}
static ValId tadd(Em *e, ValId x, ValId y) { return !x ? y : !y ? x : e2(e, OP_ADD, x, y); }

/* A copy of `in` with other operands and result type rt. */
static Inst *emit_like(Em *e, const Inst *in, const ValId *args, int nargs, Type rt)
{
    Inst *ni = ir_emit(e->f->jv, e->b, (OpKind)in->op, args, nargs, &rt, in->nres ? 1 : 0, e->loc);
    ir_inst_copy_attrs(ni, in);
    return ni;
}

/* A reduction's value r broadcast back to x's shape xt (reductions). */
static ValId bcast_back(Em *e, ValId r, Type xt, int axis, bool keep)
{
    Type rt = jty(e, r);
    xt.dt = rt.dt;
    if (!keep && xt.rank > 1) {
        Type et = rt;
        et.rank = xt.rank;
        for (int i = 0; i < xt.rank; i++)
            et.shape[i] = i == axis ? 1 : xt.shape[i];
        Inst *in = ir_emit(e->f->jv, e->b, OP_EXPAND_DIMS, &r, 1, &et, 1, e->loc);
        in->ival = axis;
        r = in->res[0];
    }
    return ir_op1(e->f->jv, e->b, OP_BROADCAST, xt, r, e->loc);
}

static ValId eshape(Em *e, OpKind op, ValId x, Type t, int64_t ival)
{
    Inst *in = ir_emit(e->f->jv, e->b, op, &x, 1, &t, 1, e->loc);
    in->ival = ival;
    return in->res[0];
}

/* x with a new axis of length n inserted at `at` (x broadcast along it). */
static ValId ewiden(Em *e, ValId x, int at, int32_t n)
{
    Type t = jty(e, x);
    int32_t one[KAD_MAX_RANK], sh[KAD_MAX_RANK];
    for (int k = 0, j = 0; k <= t.rank; k++) {
        one[k] = k == at ? 1 : t.shape[j];
        sh[k] = k == at ? n : t.shape[j];
        j += k != at;
    }
    x = eshape(e, OP_EXPAND_DIMS, x, type_with_shape(t, t.rank + 1, one), at);
    return eshape(e, OP_BROADCAST, x, type_with_shape(t, t.rank + 1, sh), 0);
}

/* An i32 tile of type like's shape holding each lane's index along axis at. */
static ValId eiota(Em *e, Type like, int at)
{
    int32_t n = like.shape[at], one[KAD_MAX_RANK];
    Inst *ar = ir_emit(e->f->jv, e->b, OP_ARANGE, NULL, 0, (Type[]){type_tile(DT_I32, 1, &n)}, 1, e->loc);
    ar->ival = 0;
    ValId v = ar->res[0];
    for (int k = 0; k < like.rank; k++)
        one[k] = k == at ? n : 1;
    v = eshape(e, OP_RESHAPE, v, type_tile(DT_I32, like.rank, one), 0);
    return eshape(e, OP_BROADCAST, v, type_with_dtype(like, DT_I32), 0);
}

static ValId esum(Em *e, ValId x, int axis, Type rt)
{
    return eshape(e, OP_SUM, x, rt, axis);
}

/* y shifted by one lane along axis in the direction of a scan with `rev`:
 * lane s gets y[s-1] (rev: y[s+1]), the first lane in that direction
 * `fill`.  A gather (exact: values are only selected), so that reverse
 * mode can differentiate it (second derivatives). */
static ValId eshift(Em *e, ValId y, int axis, bool rev, double fill)
{
    Fd *f = e->f;
    Type t = jty(e, y), it = type_with_dtype(t, DT_I32);
    int32_t n = t.shape[axis];
    ValId iv = eiota(e, t, axis);
    ValId edge = ir_const_int(f->jv, e->b, it, rev ? n - 1 : 0, e->loc);
    ValId first = ir_op2(f->jv, e->b, OP_EQ, type_with_dtype(t, DT_I1), iv, edge, e->loc);
    ValId one = ir_const_int(f->jv, e->b, it, 1, e->loc);
    ValId idx = ir_op2(f->jv, e->b, rev ? OP_ADD : OP_SUB, it, iv, one, e->loc);
    idx = ir_op3(f->jv, e->b, OP_WHERE, it, first, iv, idx, e->loc);
    Inst *g = ir_emit(f->jv, e->b, OP_GATHER, (ValId[]){y, idx}, 2, &t, 1, e->loc);
    g->ival = axis;
    return ewhere(e, first, ec(e, y, fill), g->res[0]);
}

/* The tangent of y = cumprod(x): ty[s] = x[s]*ty[s-1] + tx[s]*y[s-1], the
 * first-order linear recurrence scan (a1*a2, a2*b1 + b2) over (x, tx *
 * y shifted by one): exact at zeros (no division), and made of ops reverse
 * mode differentiates (the recurrence is one of the scans it recognizes), so
 * that reverse over forward gives cumprod's second derivatives. */
static ValId cumprod_tangent(Em *e, const Inst *in, ValId x, ValId tx)
{
    Fd *f = e->f;
    int axis = (int)in->ival;
    bool rev = in->flags & IF_REVERSE;
    Type t = jty(e, x), s = type_with_shape(t, 0, NULL);
    ValId xs[2] = {x, e2(e, OP_MUL, tx, eshift(e, P(f, in->res[0]), axis, rev, 1.0))};
    Type rt[2] = {t, t};
    Inst *ni = ir_emit(f->jv, e->b, OP_SCAN, xs, 2, rt, 2, e->loc);
    ni->ival = axis;
    ni->flags = in->flags & IF_REVERSE;
    int idx = e->b->insts.n - 1;
    Block *rb = ir_inst_add_region(f->jv, ni);
    static const char *const names[4] = {"a1", "b1", "a2", "b2"};
    ValId p[4];
    for (int i = 0; i < 4; i++)
        p[i] = ir_block_param_add(f->jv, rb, s, names[i], e->loc);
    Em er = {f, rb, e->loc};
    ValId ya = e2(&er, OP_MUL, p[0], p[2]);
    ValId yb = e2(&er, OP_ADD, e2(&er, OP_MUL, p[2], p[1]), p[3]);
    ir_emit(f->jv, rb, OP_YIELD, (ValId[]){ya, yb}, 2, NULL, 0, e->loc);
    return e->b->insts.v[idx].res[1];
}

/* The tangent of y = sort(x) (or its first k: topk): the tangents follow
 * the values.  Element j of x goes to position rank[j] = #{l: x[l] before
 * x[j]} + #{l < j: x[l] == x[j]} (ties keep their order, as reverse mode's
 * adjoint does), so ty[i] = sum_j (rank[j] == i) tx[j]. */
static ValId sort_tangent(Em *e, const Inst *in, ValId x, ValId tx, Type yt)
{
    Fd *f = e->f;
    Type xt = jty(e, x);
    int r = xt.rank;
    int32_t n = xt.shape[r - 1], k = yt.shape[r - 1];
    Inst *as = ir_emit(f->jv, e->b, OP_ASSERT, (ValId[]){ecmp(e, OP_EQ, x, x)}, 1, NULL, 0, e->loc);
    as->sattr = "the tangent of tl.sort/tl.topk needs values without NaN";
    ValId xj = ewiden(e, x, r, n), xl = ewiden(e, x, r - 1, n); /* [.., j, l] */
    ValId before = ecmp(e, in->flags & IF_REVERSE ? OP_GT : OP_LT, xl, xj);
    Type tt = jty(e, xj);
    ValId lj = ecmp(e, OP_LT, eiota(e, tt, r), eiota(e, tt, r - 1));
    ValId tie = e2(e, OP_AND, ecmp(e, OP_EQ, xl, xj), lj);
    ValId bef = ir_op1(f->jv, e->b, OP_CAST, type_with_dtype(tt, DT_I32), e2(e, OP_OR, before, tie), e->loc);
    ValId rank = esum(e, bef, r, type_with_dtype(xt, DT_I32)); /* [.., j] */
    ValId rw = ewiden(e, rank, r - 1, k), tw = ewiden(e, tx, r - 1, k); /* [.., i, j] */
    ValId hit = ecmp(e, OP_EQ, rw, eiota(e, jty(e, rw), r - 1));
    ValId sel = ewhere(e, hit, tw, ezero(e, jty(e, tw)));
    return esum(e, sel, r, yt);
}

static void emit_block(Fd *f, const Block *fb, Block *jb);

/* The tangent of a custom_jvp's result: its rule's body (Func.rules) here,
 * its parameters bound to the arguments' primals, then the float
 * arguments' tangents; what it yields is the tangent.  Operand 0's own
 * tangent (the helper's automatic one) is not used. */
static ValId jvp_rule_tangent(Em *e, const Inst *in)
{
    Fd *f = e->f;
    const Block *rb = f->fw->rules.v[in->ival];
    for (int i = 1, k = in->nargs - 1; i < in->nargs; i++) {
        f->pm[rb->params[i - 1]] = P(f, in->args[i]);
        if (is_float(fty(f, in->args[i])))
            f->pm[rb->params[k++]] = TZ(e, in->args[i]);
    }
    emit_block(f, rb, e->b);
    if (f->errors)
        return 0;
    return P(f, ad_block_term(rb)->args[0]);
}

/* Operand k's tangent term x (t * the partial, t = tk) made exactly 0 where
 * t is exactly 0, when ad_partial_unsafe says the partial may be non-finite:
 * where(t == 0, 0, x); x unchanged elsewhere, and no code where the partial
 * is finite (reverse mode's strong_zero, docs/AD.md). */
static ValId strong_zero(Em *e, const Inst *in, int k, ValId t, ValId x)
{
    if (!t || !x || !ad_partial_unsafe(&e->f->fin, in, k))
        return x;
    return ewhere(e, ecmp(e, OP_EQ, t, ec(e, t, 0.0)), ec(e, x, 0.0), x);
}

/* The tangent of in's result y (tv[y] set): one case per op.  t0..t2 are
 * the operands' tangents (0: zero), a0..a2 their primal copies; SZ(k, x)
 * gives operand k's term x its strong zero. */
static ValId tan_rule(Em *e, const Inst *in)
{
    Fd *f = e->f;
    ValId y = in->res[0], py = P(f, y);
    Type yt = fty(f, y);
    ValId a[3] = {0, 0, 0}, t[3] = {0, 0, 0};
    for (int k = 0; k < in->nargs && k < 3; k++) {
        a[k] = P(f, in->args[k]);
        t[k] = f->tm[in->args[k]];
    }
#define MUL(x, z) e2(e, OP_MUL, (x), (z))
#define DIV(x, z) e2(e, OP_DIV, (x), (z))
#define ADD(x, z) e2(e, OP_ADD, (x), (z))
#define SUB(x, z) e2(e, OP_SUB, (x), (z))
#define NEG(x) e1(e, OP_NEG, (x))
#define K(v) ec(e, py, (v))
#define T0 (t[0] ? t[0] : ezero(e, yt))
#define SZ(k, x) strong_zero(e, in, (k), t[k], (x))
    switch ((OpKind)in->op) {
    case OP_ADD:
        return tadd(e, t[0], t[1]);
    case OP_SUB:
        return !t[1] ? t[0] : !t[0] ? NEG(t[1]) : SUB(t[0], t[1]);
    case OP_MUL:
        return tadd(e, t[0] ? SZ(0, MUL(t[0], a[1])) : 0, t[1] ? SZ(1, MUL(a[0], t[1])) : 0);
    case OP_DIV: { /* (ta - y*tb)/b; strong zero: of y*tb, then of the quotient where ta - y*tb is 0 */
        ValId n = t[1] ? SUB(T0, SZ(1, MUL(py, t[1]))) : t[0];
        ValId q = DIV(n, a[1]);
        return ad_partial_unsafe(&f->fin, in, 0) ? ewhere(e, ecmp(e, OP_EQ, n, K(0.0)), K(0.0), q) : q;
    }
    case OP_REM: /* float fmod: y = a - trunc(a/b)*b */
        return !t[1] ? t[0] : SUB(T0, SZ(1, MUL(e1(e, OP_TRUNC, DIV(a[0], a[1])), t[1])));
    case OP_POW: /* ta*b*a^(b-1) + tb*y*log(a) */
        return tadd(e, t[0] ? SZ(0, MUL(MUL(t[0], a[1]), e2(e, OP_POW, a[0], SUB(a[1], K(1.0))))) : 0,
                    t[1] ? SZ(1, MUL(MUL(t[1], py), e1(e, OP_LOG, a[0]))) : 0);
    case OP_MAXIMUM: /* ties: the first operand's (as reverse mode) */
    case OP_MINIMUM: {
        ValId m = ecmp(e, in->op == OP_MAXIMUM ? OP_GE : OP_LE, a[0], a[1]);
        return ewhere(e, m, TZ(e, in->args[0]), TZ(e, in->args[1]));
    }
    case OP_ATAN2: { /* (ta*b - tb*a)/(a^2+b^2) */
        ValId r = ADD(MUL(a[0], a[0]), MUL(a[1], a[1]));
        ValId n = !t[1] ? MUL(t[0], a[1]) : !t[0] ? NEG(MUL(t[1], a[0])) : SUB(MUL(t[0], a[1]), MUL(t[1], a[0]));
        ValId q = DIV(n, r); /* strong zero where n is 0 (r may be 0) */
        return ad_partial_unsafe(&f->fin, in, 0) ? ewhere(e, ecmp(e, OP_EQ, n, K(0.0)), K(0.0), q) : q;
    }
    case OP_NEG:
        return NEG(t[0]);
    case OP_ABS: {
        ValId z = K(0.0);
        return ewhere(e, ecmp(e, OP_GT, a[0], z), t[0], ewhere(e, ecmp(e, OP_LT, a[0], z), NEG(t[0]), z));
    }
    case OP_FMA: /* a*b + c */
        return tadd(e, tadd(e, t[0] ? SZ(0, MUL(t[0], a[1])) : 0, t[1] ? SZ(1, MUL(a[0], t[1])) : 0), t[2]);
    case OP_WHERE:
        return ewhere(e, a[0], TZ(e, in->args[1]), TZ(e, in->args[2]));
    case OP_CAST:
        return t[0] ? ir_op1(f->jv, e->b, OP_CAST, yt, t[0], e->loc) : 0;
    case OP_EXP:
        return SZ(0, MUL(t[0], py));
    case OP_EXP2:
        return SZ(0, MUL(MUL(t[0], py), K(AD_LN2)));
    case OP_EXPM1:
        return SZ(0, MUL(t[0], ADD(py, K(1.0))));
    case OP_LOG:
        return SZ(0, DIV(t[0], a[0]));
    case OP_LOG2:
        return SZ(0, DIV(t[0], MUL(a[0], K(AD_LN2))));
    case OP_LOG1P:
        return SZ(0, DIV(t[0], ADD(a[0], K(1.0))));
    case OP_SQRT:
        return SZ(0, DIV(MUL(t[0], K(0.5)), py));
    case OP_RSQRT:
        return SZ(0, MUL(MUL(t[0], K(-0.5)), MUL(py, MUL(py, py))));
    case OP_SIGMOID:
        return SZ(0, MUL(t[0], MUL(py, SUB(K(1.0), py))));
    case OP_SIN:
        return SZ(0, MUL(t[0], e1(e, OP_COS, a[0])));
    case OP_COS:
        return SZ(0, NEG(MUL(t[0], e1(e, OP_SIN, a[0]))));
    case OP_TAN:
        return SZ(0, MUL(t[0], ADD(K(1.0), MUL(py, py))));
    case OP_ASIN:
    case OP_ACOS: {
        ValId g = MUL(t[0], e1(e, OP_RSQRT, SUB(K(1.0), MUL(a[0], a[0]))));
        return SZ(0, in->op == OP_ASIN ? g : NEG(g));
    }
    case OP_ATAN:
        return SZ(0, DIV(t[0], ADD(K(1.0), MUL(a[0], a[0]))));
    case OP_SINH:
        return SZ(0, MUL(t[0], e1(e, OP_COSH, a[0])));
    case OP_COSH:
        return SZ(0, MUL(t[0], e1(e, OP_SINH, a[0])));
    case OP_TANH:
        return SZ(0, MUL(t[0], SUB(K(1.0), MUL(py, py))));
    case OP_ERF:
        return SZ(0, MUL(MUL(t[0], K(AD_2_SQRTPI)), e1(e, OP_EXP, NEG(MUL(a[0], a[0])))));
    /* linear ops: the same op on the tangent */
    case OP_BROADCAST:
    case OP_EXPAND_DIMS:
    case OP_RESHAPE:
    case OP_PERMUTE:
    case OP_SUM:
    case OP_CUMSUM:
    case OP_SPLIT:
    case OP_FLIP:
        return emit_like(e, in, &t[0], 1, yt)->res[0];
    case OP_JOIN: { /* linear in both halves */
        ValId tj[2] = {t[0] ? t[0] : ezero(e, fty(f, in->args[0])), t[1] ? t[1] : ezero(e, fty(f, in->args[1]))};
        return emit_like(e, in, tj, 2, yt)->res[0];
    }
    case OP_GATHER: { /* linear in src; the index has no tangent */
        ValId tg[2] = {T0, a[1]};
        return emit_like(e, in, tg, 2, yt)->res[0];
    }
    case OP_MAX:
    case OP_MIN: { /* lanes equal to the result share evenly (reverse mode's rule) */
        int axis = (int)in->ival;
        bool keep = in->flags & IF_KEEP_DIMS;
        Type xt = fty(f, in->args[0]);
        ValId m = ecmp(e, OP_EQ, a[0], bcast_back(e, py, xt, axis, keep));
        ValId one = ir_op1(f->jv, e->b, OP_CAST, type_with_dtype(xt, (Dtype)yt.dt), m, e->loc);
        Inst *ci = emit_like(e, in, &one, 1, yt);
        ci->op = OP_SUM;
        ValId cnt = ci->res[0];
        ValId sel = ewhere(e, m, t[0], ezero(e, jty(e, t[0])));
        Inst *si = emit_like(e, in, &sel, 1, yt);
        si->op = OP_SUM;
        return DIV(si->res[0], cnt);
    }
    case OP_DOT: { /* t = ta@b + a@tb + tacc */
        ValId r = TZ(e, in->args[2]);
        if (t[0]) {
            r = ir_op3(f->jv, e->b, OP_DOT, yt, t[0], a[1], r, e->loc);
            e->b->insts.v[e->b->insts.n - 1].ival = in->ival;
        }
        if (t[1]) {
            r = ir_op3(f->jv, e->b, OP_DOT, yt, a[0], t[1], r, e->loc);
            e->b->insts.v[e->b->insts.n - 1].ival = in->ival;
        }
        return r;
    }
    case OP_CUMPROD:
        return cumprod_tangent(e, in, a[0], T0);
    case OP_SORT:
        return sort_tangent(e, in, a[0], T0, yt);
    case OP_STOP_GRADIENT:
        return 0; /* no tangent: kad.nondiff / kad_stop_gradient */
    case OP_CUSTOM_VJP:
        if (f->nuses[y] == f->jcov[y])
            return 0; /* the helper's jvp rule gives the tangent (custom_jvp) */
        /* the helper's own body would give its automatic tangent, which the rule replaced (e.g. a
         * straight-through estimator): the JVP would disagree with the VJP */
        fail(f, in->loc, "forward mode: this helper call has a custom vjp rule (@kad.vjp_of) but no jvp rule: "
                         "forward mode needs a @kad.jvp_of rule for the helper (its automatic tangent would "
                         "disagree with the vjp rule)%s", "");
        return 0;
    case OP_CUSTOM_JVP:
        return jvp_rule_tangent(e, in);
#define LIBM_CASE(en, ...) case en:
    KAD_LIBM_OPS(LIBM_CASE)
#undef LIBM_CASE
    { /* libdevice functions: sum of t_k * dy/da_k (src/ad/ad_libm.c) */
        ValId r = 0;
        for (int k = 0; k < in->nargs; k++)
            if (t[k]) {
                ValId p = ad_libm_partial(f->jv, e->b, e->loc, in, k, a, py);
                if (p)
                    r = tadd(e, r, MUL(t[k], p));
            }
        return r;
    }
    default:
        fail(f, in->loc, "forward mode: no tangent rule for '%s'", op_info[in->op].name);
        return 0;
    }
#undef MUL
#undef DIV
#undef ADD
#undef SUB
#undef NEG
#undef K
#undef T0
#undef SZ
}

/* The slots of a region op: primal carried values, then the tangents of
 * those tv marks, then the shadows of those sv marks. */
typedef struct Lay {
    int n;
    bool *t, *s;
} Lay;

static Lay layout(Fd *f, const ValId *carriers, int n)
{
    Lay l = {n, arena_alloc(f->a, (size_t)n + 1), arena_alloc(f->a, (size_t)n + 1)};
    for (int i = 0; i < n; i++) {
        l.t[i] = f->tv[carriers[i]];
        l.s[i] = f->sv[carriers[i]];
    }
    return l;
}

/* Appends the values of fw values vs (n = l.n) in l's layout to args. */
static int lay_args(Em *e, const Lay *l, const ValId *vs, ValId *args, int na, Loc loc)
{
    Fd *f = e->f;
    for (int i = 0; i < l->n; i++)
        args[na++] = P(f, vs[i]);
    for (int i = 0; i < l->n; i++)
        if (l->t[i])
            args[na++] = TZ(e, vs[i]);
    for (int i = 0; i < l->n; i++)
        if (l->s[i]) {
            if (!f->sm[vs[i]]) {
                fail(f, loc, "forward mode: a carried pointer '%s' points into a buffer with a tangent on "
                               "some paths only", fname(f, vs[i]));
                args[na++] = P(f, vs[i]);
            } else {
                args[na++] = f->sm[vs[i]];
            }
        }
    return na;
}

static int lay_types(const Fd *f, const Lay *l, const ValId *vs, Type *tys)
{
    int n = 0;
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < l->n; i++)
            if (pass == 0 || (pass == 1 ? l->t[i] : l->s[i]))
                tys[n++] = fty(f, vs[i]);
    return n;
}

/* Region parameters mirroring fr's (nlead leading ones, then l's layout). */
static void lay_params(Fd *f, Block *reg, const Block *fr, int nlead, const Lay *l)
{
    for (int i = 0; i < nlead + l->n; i++) {
        ValId p = fr->params[i];
        f->pm[p] = ir_block_param_add(f->jv, reg, fty(f, p), fname(f, p), f->fw->vals.v[p].loc);
    }
    for (int pass = 1; pass < 3; pass++)
        for (int i = 0; i < l->n; i++) {
            ValId p = fr->params[nlead + i];
            if (pass == 1 ? !l->t[i] : !l->s[i])
                continue;
            const char *n = fname(f, p);
            ValId q = ir_block_param_add(f->jv, reg, fty(f, p), n ? arena_printf(f->a, "t_%s", n) : NULL,
                                         f->fw->vals.v[p].loc);
            (pass == 1 ? f->tm : f->sm)[p] = q;
        }
}

static void lay_results(Fd *f, const Inst *in, const Inst *ni, const Lay *l)
{
    int j = l->n;
    for (int i = 0; i < l->n; i++) {
        f->pm[in->res[i]] = ni->res[i];
        name_after(f, ni->res[i], "", in->res[i]);
    }
    for (int pass = 1; pass < 3; pass++)
        for (int i = 0; i < l->n; i++)
            if (pass == 1 ? l->t[i] : l->s[i]) {
                (pass == 1 ? f->tm : f->sm)[in->res[i]] = ni->res[j];
                name_after(f, ni->res[j++], "t_", in->res[i]);
            }
}

static void region_op(Em *e, const Inst *in)
{
    Fd *f = e->f;
    int n = in->nres, nfix = in->op == OP_FOR ? 3 : in->op == OP_IF ? 1 : 0, lead = in->op == OP_FOR ? 1 : 0;
    const ValId *carr = in->op == OP_IF ? in->res : in->regions[0]->params + lead;
    Lay l = layout(f, carr, n);
    ValId *args = arena_alloc(f->a, sizeof(ValId) * (size_t)(nfix + 3 * n + 1));
    Type *tys = arena_alloc(f->a, sizeof(Type) * (size_t)(3 * n + 1));
    int na = 0;
    for (int i = 0; i < nfix; i++)
        args[na++] = P(f, in->args[i]);
    if (in->op != OP_IF)
        na = lay_args(e, &l, in->args + nfix, args, na, in->loc);
    int nt = lay_types(f, &l, in->res, tys);
    ir_emit(f->jv, e->b, (OpKind)in->op, args, na, tys, nt, in->loc);
    int idx = e->b->insts.n - 1;
    Inst *ni = &e->b->insts.v[idx];
    if (in->op == OP_FOR && in->nints == LH_N) {
        memcpy(ni->ints, in->ints, sizeof(int32_t) * LH_N);
        ni->nints = LH_N;
    }
    for (int r = 0; r < in->nregions; r++) {
        Block *reg = ir_inst_add_region(f->jv, &e->b->insts.v[idx]);
        const Block *fr = in->regions[r];
        if (in->op != OP_IF)
            lay_params(f, reg, fr, lead, &l);
        emit_block(f, fr, reg);
        const Inst *term = ad_block_term(fr);
        Em er = {f, reg, term->loc};
        if (term->op == OP_CONDITION) {
            ValId c = P(f, term->args[0]);
            ir_emit(f->jv, reg, OP_CONDITION, &c, 1, NULL, 0, term->loc);
        } else {
            ValId *ya = arena_alloc(f->a, sizeof(ValId) * (size_t)(3 * n + 1));
            int ny = lay_args(&er, &l, term->args, ya, 0, term->loc);
            ir_emit(f->jv, reg, OP_YIELD, ya, ny, NULL, 0, term->loc);
        }
    }
    lay_results(f, in, &e->b->insts.v[idx], &l);
}

/* A scan (or a tl.reduce, the same with the axis removed) over dual
 * numbers: the forward's scan with a tangent slot per
 * float slot with a tangent, its combine region differentiated in forward
 * mode: the tangent of f((a, ta), (b, tb)) is J_a f ta + J_b f tb, and the
 * dual combine is associative when f is.  Slots: the n primal ones, then
 * the tangents; region params: the running values (primal, tangents), then
 * the next element's in the same order. */
static void scan_op(Em *e, const Inst *in)
{
    Fd *f = e->f;
    int n = in->nres, m = 0;
    bool *t = arena_alloc(f->a, (size_t)n + 1);
    for (int k = 0; k < n; k++)
        m += t[k] = f->tv[in->res[k]];
    int N = n + m;
    ValId *xs = arena_alloc(f->a, sizeof *xs * (size_t)(N + 1));
    Type *rt = arena_alloc(f->a, sizeof *rt * (size_t)(N + 1));
    for (int pass = 0, j = 0; pass < 2; pass++)
        for (int k = 0; k < n; k++)
            if (!pass || t[k]) {
                xs[j] = pass ? TZ(e, in->args[k]) : P(f, in->args[k]);
                rt[j++] = fty(f, in->res[k]);
            }
    Inst *ni = ir_emit(f->jv, e->b, (OpKind)in->op, xs, N, rt, N, in->loc);
    ni->ival = in->ival;
    ni->flags = in->flags;
    int idx = e->b->insts.n - 1;
    Block *reg = ir_inst_add_region(f->jv, ni);
    const Block *fr = in->regions[0];
    for (int h = 0; h < 2; h++)
        for (int pass = 0; pass < 2; pass++)
            for (int k = 0; k < n; k++) {
                ValId p = fr->params[h * n + k];
                if (!pass) {
                    f->pm[p] = ir_block_param_add(f->jv, reg, fty(f, p), fname(f, p), f->fw->vals.v[p].loc);
                } else if (t[k]) {
                    const char *nm = fname(f, p);
                    f->tm[p] = ir_block_param_add(f->jv, reg, fty(f, p), nm ? arena_printf(f->a, "t_%s", nm) : NULL,
                                                  f->fw->vals.v[p].loc);
                }
            }
    emit_block(f, fr, reg);
    if (f->errors)
        return;
    const Inst *term = ad_block_term(fr);
    Em er = {f, reg, term->loc};
    ValId *ys = arena_alloc(f->a, sizeof *ys * (size_t)(N + 1));
    for (int pass = 0, j = 0; pass < 2; pass++)
        for (int k = 0; k < n; k++)
            if (!pass || t[k])
                ys[j++] = pass ? TZ(&er, term->args[k]) : P(f, term->args[k]);
    ir_emit(f->jv, reg, OP_YIELD, ys, N, NULL, 0, term->loc);
    const Inst *si = &e->b->insts.v[idx];
    for (int k = 0, j = n; k < n; k++) {
        f->pm[in->res[k]] = si->res[k];
        name_after(f, si->res[k], "", in->res[k]);
        if (t[k]) {
            f->tm[in->res[k]] = si->res[j];
            name_after(f, si->res[j++], "t_", in->res[k]);
        }
    }
}

/* The root parameter's name of pointer v, for messages. */
static const char *root_name(const Fd *f, ValId v)
{
    int r = f->root[v];
    return r > 0 ? fname(f, f->fw->params[r - 1]) : "a pointer kad cannot trace to one parameter";
}

/* A store or atomic of a value with a tangent into a buffer without one:
 * fine for scratch the kernel never reads, else the tangent would be lost. */
static void check_dropped(Fd *f, const Inst *in)
{
    ValId p = in->args[0], v = in->args[1];
    if (!f->tv[v])
        return;
    int r = f->root[p];
    if (r > 0 && !(ad_param_access(f->a, f->fw, r - 1) & AD_ACCESS_LOAD))
        return;
    fail(f, in->loc,
           "forward mode: a value with a tangent is stored into '%s', which the kernel also reads (or whose "
           "provenance is unknown) and which has no tangent: name it in both --wrt and --out",
           root_name(f, p));
}

static void emit_inst(Fd *f, Block *jb, const Inst *in)
{
    Em e0 = {f, jb, in->loc}, *e = &e0;
    switch (in->op) {
    case OP_FOR:
    case OP_IF:
    case OP_WHILE:
        region_op(e, in);
        return;
    case OP_SCAN:
    case OP_REDUCE:
        scan_op(e, in);
        return;
    case OP_YIELD:
    case OP_CONDITION:
        return; /* the region op writes the terminators */
    default:
        break;
    }
    if (in->op == OP_CUSTOM_VJP || in->op == OP_CUSTOM_JVP) { /* identities (the rules are AD's): no copy */
        f->pm[in->res[0]] = P(f, in->args[0]);
        if (f->tv[in->res[0]]) {
            ValId t = tan_rule(e, in);
            f->tm[in->res[0]] = t;
            name_after(f, t, "t_", in->res[0]);
        }
        return;
    }
    ValId *args = arena_alloc(f->a, sizeof(ValId) * (size_t)(in->nargs + 1));
    for (int k = 0; k < in->nargs; k++)
        args[k] = P(f, in->args[k]);
    Inst *ni = emit_like(e, in, args, in->nargs, in->nres ? fty(f, in->res[0]) : type_scalar(DT_VOID));
    ValId r = in->nres ? ni->res[0] : 0;
    if (r) {
        f->pm[in->res[0]] = r;
        name_after(f, r, "", in->res[0]);
    }
    ValId fp = in->nargs ? in->args[0] : 0;
    switch (in->op) {
    case OP_LOAD: {
        ValId fr = in->res[0];
        if (fty(f, fr).dt != DT_PTR && is_float(fty(f, fr)) && f->root[fp] == R_UNKNOWN && !f->sv[fp]) {
            fail(f, in->loc, "forward mode: a float load through %s: its tangent is unknown", root_name(f, fp));
            return;
        }
        if (!f->tv[fr])
            return;
        ValId t;
        if (f->sv[fp]) {
            if (!f->sm[fp]) {
                fail(f, in->loc, "forward mode: the load's pointer reaches '%s' (with a tangent) on some lanes "
                                   "or paths only", root_name(f, fp));
                return;
            }
            ValId ta[3] = {f->sm[fp], in->nargs > 1 ? args[1] : 0, in->nargs > 2 ? TZ(e, in->args[2]) : 0};
            /* pointer form: the tangent buffer gets no descriptor (IF_DESC operands dropped) */
            Inst *tl = emit_like(e, in, ta, ir_desc_at(in), fty(f, fr));
            tl->flags &= (uint16_t)~IF_DESC;
            t = tl->res[0];
        } else { /* only `other` has a tangent */
            t = ewhere(e, args[1], ezero(e, fty(f, fr)), f->tm[in->args[2]]);
        }
        f->tm[fr] = t;
        name_after(f, t, "t_", fr);
        return;
    }
    case OP_STORE:
    case OP_ATOMIC_ADD:
    case OP_ATOMIC_MAX:
    case OP_ATOMIC_MIN:
    case OP_ATOMIC_XCHG: {
        if (f->sv[fp] && in->op != OP_STORE && in->op != OP_ATOMIC_ADD) {
            fail(f, in->loc, arena_printf(f->a, "forward mode: %s into '%%s', which has a tangent: the tangent "
                                               "would be that of the value the output kept; not supported",
                                               op_info[in->op].name), root_name(f, fp));
            return;
        }
        if (in->op == OP_ATOMIC_ADD && f->sv[fp] && f->nuses[in->res[0]]) {
            fail(f, in->loc, "forward mode: the old value an atomic_add into '%s' returns is used", root_name(f, fp));
            return;
        }
        if (!f->sv[fp]) {
            check_dropped(f, in);
            return;
        }
        if (!f->sm[fp]) {
            fail(f, in->loc, "forward mode: the pointer reaches '%s' (with a tangent) on some lanes or paths only",
                   root_name(f, fp));
            return;
        }
        ValId ta[3] = {f->sm[fp], TZ(e, in->args[1]), in->nargs > 2 ? args[2] : 0};
        emit_like(e, in, ta, ir_desc_at(in), in->nres ? fty(f, in->res[0]) : type_scalar(DT_VOID))->flags &=
            (uint16_t)~IF_DESC;
        return;
    }
    default:
        break;
    }
    if (!r)
        return;
    ValId fr = in->res[0];
    if (f->sv[fr]) { /* a pointer into a buffer with a tangent: its shadow */
        ValId *sa = arena_alloc(f->a, sizeof(ValId) * (size_t)(in->nargs + 1));
        for (int k = 0; k < in->nargs; k++) {
            ValId v = in->args[k];
            sa[k] = args[k];
            if (fty(f, v).dt == DT_PTR) {
                if (!f->sm[v]) {
                    fail(f, in->loc, "forward mode: selects between a pointer into '%s' (with a tangent) and one "
                                       "without", root_name(f, fr));
                    return;
                }
                sa[k] = f->sm[v];
            }
        }
        ValId s = emit_like(e, in, sa, in->nargs, fty(f, fr))->res[0];
        f->sm[fr] = s;
        name_after(f, s, "t_", fr);
        return;
    }
    if (!f->tv[fr])
        return;
    if (op_info[in->op].diff == 'N') {
        fail(f, in->loc, "forward mode: no tangent rule for '%s'", op_info[in->op].name);
        return;
    }
    ValId t = tan_rule(e, in);
    f->tm[fr] = t;
    name_after(f, t, "t_", fr);
}

static void emit_block(Fd *f, const Block *fb, Block *jb)
{
    for (int k = 0; k < fb->insts.n && !f->errors; k++)
        emit_inst(f, jb, &fb->insts.v[k]);
}

/* The jvp kernel of fwd: params = fwd's, then t_<x> per input (in-place
 * names among them), then t_<y> per output, in fwd's parameter order. */
static Func *ad_jvp_raw(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec)
{
    Fd f0 = {.a = a, .d = d, .fw = fwd, .spec = spec}, *f = &f0;
    int nv = f->nvals = fwd->vals.n, np = f->np = fwd->nparams;
    if (spec->mutate != AD_MUTATE_STRONG_ZERO)
        f->fin = ad_value_facts(a, fwd);
    f->role = arena_alloc(a, sizeof(int) * (size_t)(np + 1));
    f->root = arena_alloc(a, sizeof(int) * (size_t)nv);
    f->tv = arena_alloc(a, (size_t)nv);
    f->sv = arena_alloc(a, (size_t)nv);
    f->nuses = arena_alloc(a, sizeof(int) * (size_t)nv);
    f->jcov = arena_alloc(a, sizeof(int) * (size_t)nv);
    f->pm = arena_alloc(a, sizeof(ValId) * (size_t)nv);
    f->tm = arena_alloc(a, sizeof(ValId) * (size_t)nv);
    f->sm = arena_alloc(a, sizeof(ValId) * (size_t)nv);
    if (!assign_roles(f))
        return NULL;
    for (int i = 0; i < np; i++) {
        ValId p = fwd->params[i];
        if (fty(f, p).dt == DT_PTR)
            f->root[p] = i + 1;
        f->sv[p] = f->role[i] != AD_ROLE_NONE;
    }
    count_uses(f, fwd->body);
    do {
        f->changed = false;
        mark_block(f, fwd->body);
    } while (f->changed);

    Func *jv = f->jv = ir_func_new(a, arena_printf(a, "%s_jvp", fwd->name), fwd->loc);
    for (int i = 0; i < np; i++) {
        ValId p = fwd->params[i];
        f->pm[p] = ir_param_add(jv, fty(f, p), fname(f, p), fwd->vals.v[p].loc);
    }
    jv->ranges = fwd->ranges; /* the forward's parameters come first, in order */
    jv->ranges.cap = jv->ranges.n; /* a push copies */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < np; i++)
            if (pass ? f->role[i] == AD_ROLE_OUT : ad_role_reads(f->role[i])) {
                ValId p = fwd->params[i];
                f->sm[p] = ir_param_add(jv, fty(f, p), arena_printf(a, "t_%s", fname(f, p)), fwd->vals.v[p].loc);
            }
    for (int i = 0; i < fwd->consts.n; i++)
        vec_push(a, jv->consts, fwd->consts.v[i]);
    emit_block(f, fwd->body, jv->body);
    return f->errors ? NULL : jv;
}

Func *ad_forward(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec)
{
    Func *jv = ad_jvp_raw(a, d, fwd, spec);
    if (!jv)
        return NULL;
    bool ok = ir_verify(jv, d) && pass_run(jv, "simplify", d) && ir_verify(jv, d);
    if (!ok) {
        diag_note(d, fwd->loc, "kad bug: the jvp kernel of '%s' is invalid", fwd->name);
        return NULL;
    }
    return jv;
}
