/* ad_tape.c -- tapes for loops whose carried values are not linear.
 *
 * Job: a `for` loop carrying a value the reverse sweep needs per
 * iteration (a running max, a rescaled running sum, a recurrence
 * h = a * h + x) cannot be reversed by today's forward-running adjoint
 * loop (sweep_rev.c, linear accumulators).  Its backward instead records, in
 * the primal sweep, the carried values at the start of every iteration in
 * a scratch buffer (the tape), and runs the adjoint loop backwards,
 * reading them back (docs/AD.md, "Tapes").
 *
 * This file plans a tape (which carried values, their place in a slot,
 * the tape's dtype) and extracts the loop's trip count as an expression
 * the host evaluates from a launch (the kernel's int arguments and the
 * grid), so that the launcher and plan_run allocate exactly
 * trips * programs * slot elements: the reverse loop never reads past
 * the tape.  What cannot be sized that way is refused with the reason.
 * tape_rev.c emits the stores and the reverse loop.
 *
 *   for %i = lb to ub step S iter_args(m = m0) { ...; yield m' }
 * becomes, in the backward:
 *   for %i = lb to ub step S iter_args(m = m0) {
 *     store kad_tape + ((i - lb) / S * programs + program) * slot + off_m, m
 *     ...; yield m'
 *   }
 *   barrier
 *   for %j = 0 to cdiv(max(ub - lb, 0), S) iter_args(dm = d(result)) {
 *     t = trips - 1 - j; i = lb + t * S; m = load(tape at t)
 *     <the body recomputed from m>, <its adjoint, seeded with dm>
 *     yield d(m)
 *   }
 *   d(m0) += the loop's dm
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

static Type fty(const Ad *ad, ValId v) { return ad->fw->vals.v[v].ty; }

const TapeExpr *tape_expr_new(Arena *a, int op, int64_t v, const TapeExpr *x, const TapeExpr *y)
{
    bool y0 = y && y->op == TX_CONST && y->v == 0, y1 = y && y->op == TX_CONST && y->v == 1;
    if (((op == TX_ADD || op == TX_SUB) && y0) || ((op == TX_MUL || op == TX_DIV || op == TX_CDIV) && y1))
        return x; /* x + 0, x - 0, x * 1, x / 1 */
    if (op == TX_ADD && x->op == TX_CONST && x->v == 0)
        return y;
    TapeExpr *e = arena_alloc(a, sizeof *e);
    e->op = op;
    e->v = v;
    e->x = x;
    e->y = y;
    return e;
}

int tape_expr_op(int op)
{
    switch (op) {
    case OP_ADD: return TX_ADD;
    case OP_SUB: return TX_SUB;
    case OP_MUL: return TX_MUL;
    case OP_DIV: return TX_DIV;
    case OP_REM: return TX_REM;
    case OP_MAXIMUM: return TX_MAX;
    case OP_MINIMUM: return TX_MIN;
    default: return -1;
    }
}


const TapeExpr *tape_expr_of(Arena *a, const Func *f, const Inst *const *def, ValId v, const char **why)
{
    Type t = f->vals.v[v].ty;
    if (t.rank != 0 || t.dt == DT_PTR || dtype_is_float((Dtype)t.dt) || t.dt == DT_I1) {
        *why = "is not an integer scalar";
        return NULL;
    }
    const Inst *in = def[v];
    if (!in) {
        for (int i = 0; i < kernel_nargs(f); i++)
            if (f->params[i] == v)
                return tape_expr_new(a, TX_PARAM, i, NULL, NULL);
        *why = "depends on the variable or a carried value of an enclosing loop";
        return NULL;
    }
    int op = -1;
    switch (in->op) {
    case OP_CONST:
        return tape_expr_new(a, TX_CONST, in->ival, NULL, NULL);
    case OP_NUM_PROGRAMS:
        return tape_expr_new(a, TX_GRID, in->ival, NULL, NULL);
    case OP_PROGRAM_ID:
        return tape_expr_new(a, TX_PID, in->ival, NULL, NULL);
    case OP_LOAD:
        *why = "depends on a value loaded from memory";
        return NULL;
    case OP_CAST: {
        Type ft = f->vals.v[in->args[0]].ty;
        if (ft.dt == DT_PTR || dtype_is_float((Dtype)ft.dt) || dtype_bits((Dtype)ft.dt) > dtype_bits((Dtype)t.dt)) {
            *why = "goes through a conversion that may change its value";
            return NULL;
        }
        return tape_expr_of(a, f, def, in->args[0], why);
    }
    case OP_MULTIPLE_OF:
    case OP_MAX_CONTIGUOUS:
        return tape_expr_of(a, f, def, in->args[0], why);
    default:
        if ((op = tape_expr_op(in->op)) >= 0)
            break;
        *why = arena_printf(a, "is computed by '%s', which kad does not evaluate on the host", op_info[in->op].name);
        return NULL;
    }
    const TapeExpr *x = tape_expr_of(a, f, def, in->args[0], why);
    const TapeExpr *y = x ? tape_expr_of(a, f, def, in->args[1], why) : NULL;
    return y ? tape_expr_new(a, op, 0, x, y) : NULL;
}

static const TapeExpr *host_expr(Ad *ad, ValId v, const char **why)
{
    return tape_expr_of(ad->a, ad->fw, (const Inst *const *)ad->def, v, why);
}

/* Does b (or a region nested in it) use v? */
static bool uses(const Block *b, ValId v)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nargs; k++)
            if (in->args[k] == v && in->op != OP_YIELD)
                return true;
        for (int r = 0; r < in->nregions; r++)
            if (uses(in->regions[r], v))
                return true;
    }
    return false;
}

static bool invariant_at(Ad *ad, ValId v, int id, int depth)
{
    if (ad->stamp[v] != id)
        return true;
    const Inst *in = ad->def[v];
    if (!in || depth > 32 || !op_info[in->op].pure || in->nregions || in->op == OP_RAND ||
        in->op == OP_RANDN || in->op == OP_RANDINT)
        return false;
    for (int k = 0; k < in->nargs; k++)
        if (!invariant_at(ad, in->args[k], id, depth + 1))
            return false;
    return true;
}

bool ad_tape_invariant(Ad *ad, ValId v, int id) { return invariant_at(ad, v, id, 0); }

/* Carried slot k of loop in advances by a loop-invariant step: its next
 * value is itself (*delta = 0), c + d, d + c or c - d (ints; *neg for the
 * last), addptr(c, d) (pointers), d invariant; or (*inner, a `for` loop of the body) the
 * result of an inner loop that starts from c and advances it by d per
 * inner iteration, over bounds invariant here and a constant step: a
 * pointer walked through sub-blocks, `for j in range(NSUB): p += SUB`.
 * id: the stamp of the body's values. */
static bool affine_in(Ad *ad, const Block *body, int lead, int k, int id, ValId *delta, const Inst **inner,
                      uint8_t *neg)
{
    ValId c = body->params[lead + k], y = ad_block_term(body)->args[k];
    *delta = 0;
    *inner = NULL;
    *neg = 0;
    if (y == c)
        return true;
    const Inst *d = ad->def[y];
    if (!d || ad->stamp[y] != id)
        return false;
    if (d->op == OP_FOR) {
        int j = 0;
        while (j < d->nres && d->res[j] != y)
            j++;
        const Inst *st = ad->def[d->args[2]];
        const Inst *deeper = NULL;
        if (j == d->nres || d->args[3 + j] != c || !st || st->op != OP_CONST || st->ival == 0 ||
            st->ival == INT64_MIN || !ad_tape_invariant(ad, d->args[0], id) || !ad_tape_invariant(ad, d->args[1], id) ||
            !affine_in(ad, d->regions[0], 1, j, id, delta, &deeper, neg) || deeper || !*delta)
            return *delta = 0, false;
        *inner = d;
        return true;
    }
    if (d->op == OP_ADDPTR && d->args[0] == c && ad_tape_invariant(ad, d->args[1], id))
        *delta = d->args[1];
    else if (d->op == OP_ADD && d->args[0] == c && ad_tape_invariant(ad, d->args[1], id))
        *delta = d->args[1];
    else if (d->op == OP_ADD && d->args[1] == c && ad_tape_invariant(ad, d->args[0], id))
        *delta = d->args[0];
    else if (d->op == OP_SUB && d->args[0] == c && ad_tape_invariant(ad, d->args[1], id)) {
        *delta = d->args[1];
        *neg = 1;
    }
    return *delta != 0;
}

static bool affine_slot(Ad *ad, const Inst *in, int k, int id, ValId *delta, const Inst **inner, uint8_t *neg)
{
    return affine_in(ad, in->regions[0], 1, k, id, delta, inner, neg);
}

/* A link of a chain that only feeds its own next value (a counter `cnt +=
 * mask.to(tl.int32)` read only after the loop): single-result pure ops
 * whose results get no adjoint.  The reverse sweep never needs such a
 * carried slot (not differentiated): ad_carried_chain marks its chain in
 * ad->chain, which the adjoint loop's recompute leaves out. */
static bool self_link(Ad *ad, const Inst *use, int pos, ValId cur)
{
    (void)pos;
    (void)cur;
    return op_info[use->op].pure && !use->nregions && use->nres == 1 && !ad_active(ad, use->res[0]);
}

static const char *name_of(const Ad *ad, ValId v, ValId alt)
{
    const char *n = ad->fw->vals.v[v].name;
    if (!n && alt)
        n = ad->fw->vals.v[alt].name;
    return n ? n : arena_printf(ad->a, "#%d", (int)v);
}

/* The report's names: the recomputed carried ints/pointers, the linear accumulators. */
static void names_of(Ad *ad, TapeLoop *tl, const Block *body, int lead)
{
    Buf r = {.a = ad->a}, l = {.a = ad->a};
    for (int k = 0; k < tl->loop->nres; k++) {
        const char *nm = name_of(ad, body->params[lead + k], tl->loop->res[k]);
        if (tl->affine[k])
            buf_printf(&r, "%s%s", r.len ? ", " : "", nm);
        else if (tl->linear[k] && (ad_active(ad, body->params[lead + k]) || ad_active(ad, tl->loop->res[k])))
            buf_printf(&l, "%s%s", l.len ? ", " : "", nm);
    }
    tl->recomputed = r.len ? buf_str(&r) : NULL;
    tl->linear_names = l.len ? buf_str(&l) : NULL;
}

/* tl's per-carried-value arrays, for n carried values. */
static void tape_loop_arrays(Ad *ad, TapeLoop *tl, int n)
{
    tl->taped = arena_alloc(ad->a, (size_t)n + 1);
    tl->linear = arena_alloc(ad->a, (size_t)n + 1);
    tl->off = arena_alloc(ad->a, sizeof(int64_t) * (size_t)(n + 1));
    tl->affine = arena_alloc(ad->a, (size_t)n + 1);
    tl->delta = arena_alloc(ad->a, sizeof(ValId) * (size_t)(n + 1));
    tl->inner = arena_alloc(ad->a, sizeof(const Inst *) * (size_t)(n + 1));
    tl->neg = arena_alloc(ad->a, (size_t)n + 1);
}

/* Whether carried value c is an int or a pointer (recomputed, never taped). */
static bool tape_scalar(Ad *ad, ValId c)
{
    Type t = fty(ad, c);
    return t.dt == DT_PTR || !dtype_is_float((Dtype)t.dt);
}

/* Carried value k (c, the body's parameter) of loop `in` needs the reverse sweep: a float gets a
 * slot of tl's tape (its name added to what); an int or a pointer is recomputed from the iteration
 * number when `affine` (each iteration advances it by a loop-invariant step), else an error. */
static bool tape_record(Ad *ad, TapeLoop *tl, const Inst *in, int k, ValId c, bool affine, const char *first,
                        Buf *what)
{
    Type t = fty(ad, c);
    if (tape_scalar(ad, c)) {
        if (affine) {
            tl->affine[k] = 1; /* recomputed from the iteration number */
            return true;
        }
        diag_error(ad->d, in->loc,
                   "loop-carried %s '%s' of a loop whose reverse sweep reads a tape (for '%s'): kad "
                   "recomputes such a value only when each iteration advances it by the same amount "
                   "(p += step, step loop-invariant) and records only float values (not supported yet; "
                   "compute it from the loop variable instead)",
                   t.dt == DT_PTR ? "pointer" : "integer", name_of(ad, c, in->res[k]), first);
        return false;
    }
    if (t.dt == DT_F64)
        tl->dt = DT_F64;
    tl->taped[k] = 1;
    tl->off[k] = tl->slot;
    tl->slot += type_numel(t);
    buf_printf(what, "%s%s", what->len ? ", " : "", name_of(ad, c, in->res[k]));
    return true;
}

/* Adds tl to ad->tapes at index at: a loop is planned after its body (whose loops' tapes come
 * first), and its tape keeps its place in program order (the backward's tape parameters). */
static void tape_insert(Ad *ad, TapeLoop tl, int at)
{
    vec_push(ad->a, ad->tapes, tl);
    for (int i = ad->tapes.n - 1; i > at; i--) {
        TapeLoop t = ad->tapes.v[i];
        ad->tapes.v[i] = ad->tapes.v[i - 1];
        ad->tapes.v[i - 1] = t;
    }
}

/* Why the loop needs a tape, for its messages: a carried value that is
 * not a linear accumulator, or (rep) a store that may write one element in
 * several iterations, whose last write the reverse sweep finds by visiting
 * the iterations backwards. */
static const char *tape_reason(Ad *ad, const char *first, const Inst *rep)
{
    if (first)
        return arena_printf(ad->a, "loop-carried value '%s' is not a linear accumulator, so kad records it on a tape",
                            first);
    return arena_printf(ad->a, "the store at line %d may write one element of its output in several iterations "
                               "(the last write wins), so the backward visits the iterations backwards, on a tape",
                        rep ? rep->loc.line : 0);
}

bool ad_tape_plan(Ad *ad, const Inst *in, const uint8_t *linear, const Inst *rep, int at)
{
    const Block *body = in->regions[0];
    int n = in->nres;
    const char *first = NULL;
    for (int k = 0; k < n && !first; k++)
        if (!linear[k] && (ad_active(ad, body->params[1 + k]) || ad_active(ad, in->res[k])))
            first = name_of(ad, body->params[1 + k], in->res[k]);
    const char *why = NULL;
    const Inst *st = ad->def[in->args[2]];
    if (!st || st->op != OP_CONST || st->ival == 0 || st->ival == INT64_MIN) {
        diag_error(ad->d, in->loc, "%s, which needs a loop whose step is a constant (not supported yet)",
                   tape_reason(ad, first, rep));
        return false;
    }
    const TapeExpr *lb = host_expr(ad, in->args[0], &why);
    const TapeExpr *ub = lb ? host_expr(ad, in->args[1], &why) : NULL;
    if (!ub) {
        diag_error(ad->d, in->loc,
                   "%s sized from the loop's trip count, computed on the host from the kernel's integer arguments "
                   "and the grid; the %s bound of this loop %s (not supported yet)",
                   tape_reason(ad, first, rep), lb ? "upper" : "lower", why);
        return false;
    }
    TapeLoop tl = {.loop = in};
    tape_loop_arrays(ad, &tl, n);
    int id = ++ad->gen;
    ad_mark_defs(ad, body, id);
    tl.dt = DT_F32;
    Buf what = {.a = ad->a};
    bool ok = true;
    for (int k = 0; k < n; k++) {
        ValId c = body->params[1 + k];
        tl.linear[k] = linear[k];
        if (linear[k] || !uses(body, c))
            continue; /* a linear accumulator, or not read by the body: nothing to record */
        if (!ad_active(ad, c) && !ad_active(ad, in->res[k]) && ad_carried_chain(ad, body, k, self_link)) {
            tl.linear[k] = 1; /* only feeds itself: left out of the reverse loop like an accumulator */
            continue;
        }
        bool scalar = tape_scalar(ad, c);
        ok &= tape_record(ad, &tl, in, k, c, scalar && affine_slot(ad, in, k, id, &tl.delta[k], &tl.inner[k], &tl.neg[k]),
                          first ? first : "the last write of a store", &what);
    }
    if (!ok)
        return false;
    /* trips = cdiv(max(ub - lb, 0), step), or cdiv(max(lb - ub, 0), -step) for a negative step */
    bool down = st->ival < 0;
    const TapeExpr *span = tape_expr_new(ad->a, TX_MAX, 0, down ? tape_expr_new(ad->a, TX_SUB, 0, lb, ub) : tape_expr_new(ad->a, TX_SUB, 0, ub, lb),
                              tape_expr_new(ad->a, TX_CONST, 0, NULL, NULL));
    tl.trips = tape_expr_new(ad->a, TX_CDIV, 0, span, tape_expr_new(ad->a, TX_CONST, down ? -st->ival : st->ival, NULL, NULL));
    tl.what = what.len ? buf_str(&what) : "";
    tl.ckpt = ad->spec->tape_budget > 0; /* a budget: every taped `for` is checkpointed */
    tl.revolve = tl.ckpt && !tape_expr_has_pid(tl.trips); /* else two-level: trips differ by program */
    names_of(ad, &tl, body, 1);
    tape_insert(ad, tl, at);
    return true;
}

/* A bound of a `while` loop's trip count from its condition: a conjunct
 * `c < ub` or `c <= ub` (through `&`) with c a carried int advanced by a
 * positive constant step each iteration, ub and c's initial value
 * computed outside the loop from the kernel's int arguments and the grid.
 * Fills tl's cap_* and trips; false when there is none. */
static bool while_bound(Ad *ad, const Inst *in, TapeLoop *tl, ValId c, int id, int depth)
{
    const Inst *d = ad->def[c];
    const Block *cond = in->regions[0], *body = in->regions[1];
    if (!d || depth > 16)
        return false;
    if (d->op == OP_AND)
        return while_bound(ad, in, tl, d->args[0], id, depth + 1) ||
               while_bound(ad, in, tl, d->args[1], id, depth + 1);
    if (d->op != OP_LT && d->op != OP_LE)
        return false;
    int k = -1;
    for (int i = 0; i < cond->nparams; i++)
        if (cond->params[i] == d->args[0])
            k = i;
    const Inst *inner = NULL;
    uint8_t neg = 0;
    ValId ub = d->args[1], delta = 0;
    const char *why = NULL;
    if (k < 0 || fty(ad, ub).rank || ad->stamp[ub] == id || !affine_in(ad, body, 0, k, id, &delta, &inner, &neg) || inner || neg || !delta)
        return false;
    const Inst *sd = ad->def[delta];
    if (!sd || sd->op != OP_CONST || sd->ival <= 0 || fty(ad, cond->params[k]).dt == DT_PTR)
        return false;
    const TapeExpr *u = host_expr(ad, ub, &why);
    const TapeExpr *i0 = u ? host_expr(ad, in->args[k], &why) : NULL;
    if (!i0)
        return false;
    int64_t plus = d->op == OP_LE ? 1 : 0;
    const TapeExpr *span = tape_expr_new(ad->a, TX_SUB, 0, tape_expr_new(ad->a, TX_ADD, 0, u, tape_expr_new(ad->a, TX_CONST, plus, NULL, NULL)), i0);
    span = tape_expr_new(ad->a, TX_MAX, 0, span, tape_expr_new(ad->a, TX_CONST, 0, NULL, NULL));
    tl->trips = tape_expr_new(ad->a, TX_CDIV, 0, span, tape_expr_new(ad->a, TX_CONST, sd->ival, NULL, NULL));
    tl->cap_ub = ub;
    tl->cap_init = in->args[k];
    tl->cap_step = sd->ival;
    tl->cap_plus = plus;
    tl->bound = arena_printf(ad->a, "bounded by the condition's '%s %s ...' (a counter advanced by %lld)",
                             name_of(ad, cond->params[k], in->res[k]), d->op == OP_LT ? "<" : "<=",
                             (long long)sd->ival);
    return true;
}

bool ad_tape_plan_while(Ad *ad, const Inst *in, const Inst *rep, int at)
{
    const Block *cond = in->regions[0], *body = in->regions[1];
    int n = in->nres;
    const char *first = NULL;
    for (int k = 0; k < n && !first; k++)
        if (ad_active(ad, body->params[k]) || ad_active(ad, cond->params[k]) || ad_active(ad, in->res[k]))
            first = name_of(ad, body->params[k], in->res[k]);
    TapeLoop tl = {.loop = in, .is_while = true};
    tape_loop_arrays(ad, &tl, n);
    int id = ++ad->gen;
    ad_mark_defs(ad, cond, id);
    ad_mark_defs(ad, body, id);
    tl.dt = DT_F32;
    Buf what = {.a = ad->a};
    bool ok = true;
    for (int k = 0; k < n; k++) {
        ValId c = body->params[k];
        if (!uses(body, c))
            continue; /* not read by the body: nothing to record (the condition is not differentiated) */
        bool scalar = tape_scalar(ad, c);
        ok &= tape_record(ad, &tl, in, k, c, scalar && affine_in(ad, body, 0, k, id, &tl.delta[k], &tl.inner[k], &tl.neg[k]),
                          first ? first : "the last write of a store", &what);
    }
    if (!ok)
        return false;
    if (!tl.slot) { /* nothing read back: still a slot, so that the tape is well formed */
        tl.slot = 1;
    }
    if (!while_bound(ad, in, &tl, ad_block_term(cond)->args[0], id, 0)) {
        tl.cap_const = ad->spec->while_cap > 0 ? ad->spec->while_cap : KAD_WHILE_CAP_DEFAULT;
        tl.trips = tape_expr_new(ad->a, TX_CONST, tl.cap_const, NULL, NULL);
        tl.bound = arena_printf(ad->a, "no bound found in the condition: a capacity of %lld iterations "
                                       "(--while-cap)", (long long)tl.cap_const);
    }
    tl.what = what.len ? buf_str(&what) : "";
    names_of(ad, &tl, body, 0);
    tape_insert(ad, tl, at);
    return true;
}

TapeLoop *ad_tape_of(Ad *ad, const Inst *in)
{
    for (int i = 0; i < ad->tapes.n; i++)
        if (ad->tapes.v[i].loop == in)
            return &ad->tapes.v[i];
    return NULL;
}

/* ------------------------------------------------------------------ */
/* The host's side                                                     */
/* ------------------------------------------------------------------ */

bool tape_expr_has_pid(const TapeExpr *e)
{
    if (!e)
        return false;
    return e->op == TX_PID || tape_expr_has_pid(e->x) || tape_expr_has_pid(e->y);
}

/* The smallest and largest of four values. */
static void span4(const int64_t v[4], int64_t *lo, int64_t *hi)
{
    *lo = *hi = v[0];
    for (int i = 1; i < 4; i++) {
        *lo = v[i] < *lo ? v[i] : *lo;
        *hi = v[i] > *hi ? v[i] : *hi;
    }
}

bool tape_expr_bound(const TapeExpr *e, const int64_t *iargs, const int64_t grid[3], int64_t *lo, int64_t *hi)
{
    int64_t a0 = 0, a1 = 0, b0 = 0, b1 = 0, v[4];
    switch (e->op) {
    case TX_CONST:
        *lo = *hi = e->v;
        return true;
    case TX_PARAM:
        *lo = *hi = iargs[e->v];
        return true;
    case TX_GRID:
        *lo = *hi = grid[e->v];
        return true;
    case TX_PID:
        *lo = 0;
        *hi = grid[e->v] > 0 ? grid[e->v] - 1 : 0;
        return true;
    default:
        break;
    }
    if (!tape_expr_bound(e->x, iargs, grid, &a0, &a1) || !tape_expr_bound(e->y, iargs, grid, &b0, &b1))
        return false;
    switch (e->op) {
    case TX_ADD:
        return !__builtin_add_overflow(a0, b0, lo) && !__builtin_add_overflow(a1, b1, hi);
    case TX_SUB:
        return !__builtin_sub_overflow(a0, b1, lo) && !__builtin_sub_overflow(a1, b0, hi);
    case TX_MUL:
        if (__builtin_mul_overflow(a0, b0, &v[0]) || __builtin_mul_overflow(a0, b1, &v[1]) ||
            __builtin_mul_overflow(a1, b0, &v[2]) || __builtin_mul_overflow(a1, b1, &v[3]))
            return false;
        span4(v, lo, hi);
        return true;
    case TX_DIV: /* truncation is monotone in the real quotient: its extremes are at the corners */
        if ((b0 <= 0 && b1 >= 0) || a0 == INT64_MIN)
            return false;
        v[0] = a0 / b0, v[1] = a0 / b1, v[2] = a1 / b0, v[3] = a1 / b1;
        span4(v, lo, hi);
        return true;
    case TX_REM: { /* |x % y| < |y|, with the sign of x */
        if ((b0 <= 0 && b1 >= 0) || b0 == INT64_MIN)
            return false;
        int64_t m = (b0 < 0 ? -b0 : b0) > (b1 < 0 ? -b1 : b1) ? (b0 < 0 ? -b0 : b0) : (b1 < 0 ? -b1 : b1);
        *lo = a0 >= 0 ? 0 : -(m - 1);
        *hi = a1 <= 0 ? 0 : m - 1;
        if (a0 >= 0 && a1 < m) { /* 0 <= x < |y|: x % y = x */
            *lo = a0;
            *hi = a1;
        }
        return true;
    }
    case TX_MAX:
        *lo = a0 > b0 ? a0 : b0;
        *hi = a1 > b1 ? a1 : b1;
        return true;
    case TX_MIN:
        *lo = a0 < b0 ? a0 : b0;
        *hi = a1 < b1 ? a1 : b1;
        return true;
    case TX_CDIV: /* ceil(x / y), y > 0: increasing in x, extremes at the corners */
        if (b0 <= 0 || a0 < 0 || __builtin_add_overflow(a1, b1, &v[0]))
            return false;
        v[0] = (a0 + b0 - 1) / b0, v[1] = (a0 + b1 - 1) / b1, v[2] = (a1 + b0 - 1) / b0, v[3] = (a1 + b1 - 1) / b1;
        span4(v, lo, hi);
        return true;
    default:
        return false;
    }
}

static void host_print(Buf *b, const TapeExpr *e, const Func *f, const char *args, const char *grid)
{
    static const char *const sym[] = {[TX_ADD] = " + ", [TX_SUB] = " - ", [TX_MUL] = " * "};
    switch (e->op) {
    case TX_CONST:
        buf_printf(b, "%lld", (long long)e->v);
        return;
    case TX_PARAM: {
        const char *n = f->vals.v[f->params[e->v]].name;
        if (args)
            buf_printf(b, "%s[\"%s\"]", args, n ? n : "?");
        else
            buf_puts(b, n ? n : "?");
        return;
    }
    case TX_GRID:
        if (grid)
            buf_printf(b, "%s[%lld]", grid, (long long)e->v);
        else
            buf_printf(b, "tl.num_programs(%lld)", (long long)e->v);
        return;
    case TX_PID:
        buf_printf(b, "tl.program_id(%lld)", (long long)e->v);
        return;
    case TX_ADD:
    case TX_SUB:
    case TX_MUL:
        buf_putc(b, '(');
        host_print(b, e->x, f, args, grid);
        buf_puts(b, sym[e->op]);
        host_print(b, e->y, f, args, grid);
        buf_putc(b, ')');
        return;
    case TX_DIV: /* truncating, as the kernel divides */
    case TX_REM:
        buf_puts(b, e->op == TX_DIV ? "_kad_tdiv(" : "_kad_trem(");
        break;
    case TX_MAX:
        buf_puts(b, "max(");
        break;
    case TX_MIN:
        buf_puts(b, "min(");
        break;
    case TX_CDIV:
        buf_puts(b, "triton.cdiv(");
        break;
    default:
        buf_puts(b, "?(");
        break;
    }
    host_print(b, e->x, f, args, grid);
    buf_puts(b, ", ");
    host_print(b, e->y, f, args, grid);
    buf_putc(b, ')');
}

/* e in interval form: each node a (lo, hi) pair; helpers: kad_py_tape_interval, src/emit/py/tape.py. */
static void host_print_iv(Buf *b, const TapeExpr *e, const Func *f, const char *args, const char *grid)
{
    static const char *const fn[] = {[TX_ADD] = "add", [TX_SUB] = "sub", [TX_MUL] = "mul", [TX_DIV] = "div",
                                     [TX_REM] = "rem", [TX_MAX] = "max", [TX_MIN] = "min", [TX_CDIV] = "cdiv"};
    switch (e->op) {
    case TX_CONST:
    case TX_PARAM:
    case TX_GRID:
        buf_puts(b, "_kad_iv(");
        host_print(b, e, f, args, grid);
        buf_putc(b, ')');
        return;
    case TX_PID:
        buf_printf(b, "(0, max(%s[%lld] - 1, 0))", grid, (long long)e->v);
        return;
    default:
        buf_printf(b, "_kad_iv_%s(", fn[e->op]);
        host_print_iv(b, e->x, f, args, grid);
        buf_puts(b, ", ");
        host_print_iv(b, e->y, f, args, grid);
        buf_putc(b, ')');
        return;
    }
}

const char *tape_expr_host(Arena *a, const TapeExpr *e, const Func *f, const char *args, const char *grid)
{
    Buf b = {.a = a};
    if (grid && tape_expr_has_pid(e)) {
        host_print_iv(&b, e, f, args, grid);
        buf_puts(&b, "[1]");
    } else {
        host_print(&b, e, f, args, grid);
    }
    return buf_str(&b);
}

/* ceil(sqrt(x)), x >= 0, exactly (the kernel's tape_seg_len). */
static int64_t ceil_sqrt(int64_t x)
{
    if (x <= 1)
        return x;
    int64_t r = 1; /* the largest r with r * r <= x - 1, by bisection */
    int64_t lo = 1, hi = 3037000499; /* floor(sqrt(2**63 - 1)) */
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (mid * mid <= x - 1) {
            r = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return r + 1;
}

bool tape_elems(const Program *P, int j, const int64_t *iargs, const int64_t grid[3], int64_t *out, Diags *d)
{
    const FuncTape *t = &P->tapes.v[j];
    int64_t lo = 0, trips = 0, n = 0;
    if (!tape_expr_bound(t->trips, iargs, grid, &lo, &trips)) {
        diag_error(d, t->loc, "cannot compute the trip count of this loop for its tape (a division by zero or "
                              "an overflow)");
        return false;
    }
    if (trips < 0)
        trips = 0;
    if (t->revolve) /* the plan's head and the slots revolve_fit chose */
        return tape_revolve_of(P, j, iargs, grid, out, NULL, NULL, NULL, d);
    if (t->ckpt) /* 2 * ceil(sqrt(trips)) slots: one segment and its checkpoints */
        trips = 2 * ceil_sqrt(trips);
    if (__builtin_mul_overflow(trips, grid[0], &n) || __builtin_mul_overflow(n, grid[1], &n) ||
        __builtin_mul_overflow(n, grid[2], &n) || __builtin_mul_overflow(n, t->slot, &n) || n > (INT64_MAX >> 4) ||
        (t->bounded && __builtin_add_overflow(n, KAD_TAPE_HEAD, &n))) {
        diag_error(d, t->loc, "the tape of this loop would hold more than 2**59 elements");
        return false;
    }
    *out = n;
    return true;
}

const char *tape_describe(Arena *a, const Program *P, int j, const char *lname)
{
    const Func *f = P->main;
    const FuncTape *t = &P->tapes.v[j];
    int64_t esz = ir_type(f, t->param).elem == DT_F64 ? 8 : 4;
    Buf b = {.a = a};
    const char *trips = tape_expr_host(a, t->trips, f, NULL, NULL);
    buf_printf(&b, "Tape %d (line %d: the %sloop carrying %s, not linear accumulators): the backward records "
                   "them at the start of every iteration and runs that loop's adjoint backwards, reading them "
                   "back: %lld bytes per iteration and program, ",
               j, t->loc.line, t->bounded ? "`while` " : "", t->what && *t->what ? t->what : "values",
               (long long)(t->slot * esz));
    if (t->bounded)
        buf_printf(&b, "capacity = %s iterations (%s; the primal sweep counts the iterations each program runs "
                       "and the adjoint loop runs that many; past the capacity it raises the tape's overflow "
                       "flag and the launch fails instead of returning gradients), so (%d + %lld * capacity * "
                       "programs) * %lld bytes",
                   trips, t->bound ? t->bound : "a bound", KAD_TAPE_HEAD, (long long)t->slot, (long long)esz);
    else if (t->revolve)
        buf_printf(&b, "trips = %s, checkpointed under the tape budget of %lld bytes by binomial checkpointing "
                       "(revolve): per launch the host picks the most checkpoint slots s <= trips whose tape fits "
                       "this loop's share of the budget (an equal share per checkpointed loop) and t, the smallest "
                       "with C(s + t, s) >= trips; the tape holds the plan (1 + 5 * rows elements: rows of restore, "
                       "advance, store, reverse, which the adjoint sweep interprets in order from the loop's "
                       "initial values) and s slots per program, so (1 + 5 * rows) * %lld + %lld * s * programs "
                       "bytes",
                   trips, (long long)t->budget, (long long)esz, (long long)(t->slot * esz));
    else if (t->ckpt)
        buf_printf(&b, "trips = %s, checkpointed under the tape budget of %lld bytes: with k = ceil(sqrt(trips)), "
                       "the primal sweep records the carried values of every k-th iteration (ceil(trips / k) <= k "
                       "checkpoints) and the adjoint sweep, segment by segment backwards, recomputes the k "
                       "iterations of a segment from its checkpoint into one segment's slots, so %lld * 2 * "
                       "ceil(sqrt(trips)) * programs bytes",
                   trips, (long long)t->budget, (long long)(t->slot * esz));
    else
        buf_printf(&b, "trips = %s, so %lld * trips * programs bytes", trips, (long long)(t->slot * esz));
    buf_printf(&b, " of scratch that %s allocates.", lname);
    if (t->recomputed)
        buf_printf(&b, " Recomputed from the iteration number, not taped: %s.", t->recomputed);
    if (t->linear)
        buf_printf(&b, " Linear accumulators (constant adjoint, no tape): %s.", t->linear);
    if (t->revolve)
        buf_printf(&b, " Recompute factor at most t + 2 (the loop body runs once in the primal sweep, at most t "
                       "times per iteration in the plan's advances, once in the adjoint loop); `kad revolve TRIPS "
                       "--programs N --slot-bytes %lld --budget BYTES` and the launcher's `.revolve` list give "
                       "s, t, the rows, the iterations recomputed and the bytes of a launch.",
                   (long long)(t->slot * esz));
    else if (t->ckpt)
        buf_printf(&b, " Recompute factor 2 (the loop body runs once in the primal sweep, once more per segment "
                       "from its checkpoint, once in the adjoint loop; two-level checkpointing: the trip count "
                       "depends on the program id, so no single revolve plan serves every program).");
    else
        buf_printf(&b, " Recompute factor 1 (the loop body runs once in the primal sweep and once in the "
                       "adjoint loop; no checkpointing).");
    return buf_str(&b);
}

const char *tape_report(Arena *a, const Program *P)
{
    Buf b = {.a = a};
    buf_printf(&b, "%s: %d tape%s\n", P->main->name, P->tapes.n, P->tapes.n == 1 ? "" : "s");
    for (int j = 0; j < P->notes.n; j++)
        buf_printf(&b, "%s\n", P->notes.v[j]);
    for (int j = 0; j < P->tapes.n; j++)
        buf_printf(&b, "%s\n", tape_describe(a, P, j, "the launcher (or interp_run)"));
    return buf_str(&b);
}

/* ------------------------------------------------------------------ */
/* Revolve: binomial checkpointing under a tape budget                 */
/* ------------------------------------------------------------------ */

int64_t revolve_beta(int64_t s, int64_t t)
{
    if (s < 0 || t < 0)
        return 0;
    int64_t k = s < t ? s : t, n = s + t, b = 1; /* C(n, k), k = min(s, t): b = C(n - k + i, i) */
    for (int64_t i = 1; i <= k; i++) {
        int64_t m;
        if (__builtin_mul_overflow(b, n - k + i, &m))
            return INT64_MAX;
        b = m / i; /* exact: C(n - k + i, i) = C(n - k + i - 1, i - 1) * (n - k + i) / i */
    }
    return b;
}

int64_t revolve_reps(int64_t trips, int64_t s)
{
    int64_t t = 0, b = 1; /* b = C(s + t, t) */
    while (b < trips) {
        t++;
        int64_t m;
        if (__builtin_mul_overflow(b, s + t, &m))
            return t;
        b = m / t;
    }
    return t;
}

/* A range of the plan still to reverse: iterations p .. p + l - 1, the
 * values at iteration p in slot c, slots c .. c + s - 1 its own, each
 * iteration advanced at most t more times. */
typedef struct RvFrame {
    int64_t p, l, s, t, c;
} RvFrame;

typedef struct RvOut {
    int32_t *out;
    int64_t n, adv, cur; /* rows, iterations advanced, the registers' iteration */
    int32_t row[RV_FIELDS]; /* the row being filled */
    int phase;              /* its last field's phase (restore 0, advance 1, store 2, reverse 3), -1: empty */
} RvOut;

static void rv_flush(RvOut *o)
{
    if (o->phase < 0)
        return;
    if (o->out)
        memcpy(o->out + RV_FIELDS * o->n, o->row, sizeof o->row);
    o->n++;
    o->phase = -1;
    o->row[RV_RESTORE] = o->row[RV_STORE] = -1;
    o->row[RV_AT] = o->row[RV_ADVANCE] = o->row[RV_REVERSE] = 0;
}

/* One action (phase 0 restore slot a at iteration b, 1 advance a, 2
 * store to slot a, 3 reverse): into the row being filled when it comes
 * after that row's last action, else into a new row. */
static void rv_act(RvOut *o, int phase, int64_t a, int64_t b)
{
    if (o->phase >= phase)
        rv_flush(o);
    o->phase = phase;
    if (phase == 0) {
        o->row[RV_RESTORE] = (int32_t)a;
        o->row[RV_AT] = (int32_t)b;
        o->cur = b;
    } else if (phase == 1) {
        o->row[RV_ADVANCE] = (int32_t)a;
        o->adv += a;
        o->cur += a;
    } else if (phase == 2) {
        o->row[RV_STORE] = (int32_t)a;
    } else {
        o->row[RV_REVERSE] = 1;
    }
}

/* The registers at iteration p, restored from slot c unless they are there. */
static void rv_at(RvOut *o, int64_t p, int64_t c)
{
    if (o->cur != p)
        rv_act(o, 0, c, p);
}

int64_t revolve_plan(int64_t trips, int64_t s, int32_t *out, int64_t *advanced)
{
    RvOut o = {.out = out, .phase = -1, .row = {[RV_RESTORE] = -1, [RV_STORE] = -1}};
    if (trips <= 0 || s < 1) {
        if (advanced)
            *advanced = 0;
        return 0;
    }
    int64_t t = revolve_reps(trips, s), cap = s + t + 4;
    RvFrame *st = malloc(sizeof *st * (size_t)cap);
    if (!st)
        return -1;
    int64_t n = 0;
    rv_act(&o, 2, 0, 0); /* slot 0: the initial values */
    st[n++] = (RvFrame){0, trips, s, t, 0};
    while (n > 0) {
        RvFrame f = st[--n];
        if (f.l <= 0)
            continue;
        if (f.l == 1) { /* reverse iteration p */
            rv_at(&o, f.p, f.c);
            rv_act(&o, 3, 0, 0);
        } else if (f.s == 1) { /* one slot: advance from it to each iteration, last first (l <= t + 1) */
            for (int64_t q = f.l - 1; q >= 0; q--) {
                rv_at(&o, f.p, f.c);
                if (q)
                    rv_act(&o, 1, q, 0);
                rv_act(&o, 3, 0, 0);
            }
        } else { /* advance m, checkpoint there; the right part with s - 1 slots, then the left with t - 1 */
            int64_t right = revolve_beta(f.s - 1, f.t), m = f.l - (right < f.l - 1 ? right : f.l - 1);
            rv_at(&o, f.p, f.c);
            rv_act(&o, 1, m, 0);
            rv_act(&o, 2, f.c + 1, 0);
            st[n++] = (RvFrame){f.p, m, f.s, f.t - 1, f.c};
            st[n++] = (RvFrame){f.p + m, f.l - m, f.s - 1, f.t, f.c + 1};
        }
    }
    rv_flush(&o);
    free(st);
    if (advanced)
        *advanced = o.adv;
    return o.n;
}

bool revolve_fit(int64_t trips, int64_t programs, int64_t slot_bytes, int64_t esz, int64_t budget, int64_t *s,
                 int64_t *rows)
{
    *s = 0;
    *rows = 0;
    if (trips <= 0 || programs <= 0) /* no iteration or no program: the head alone */
        return esz <= budget;
    int64_t per = 0;
    if (__builtin_mul_overflow(programs, slot_bytes, &per) || per <= 0)
        return false;
    int64_t k = budget / per < trips ? budget / per : trips;
    while (k >= 1) {
        int64_t r = revolve_plan(trips, k, NULL, NULL), bytes = 0;
        if (r < 0)
            return false;
        if (__builtin_mul_overflow(r, RV_FIELDS * esz, &bytes) || __builtin_add_overflow(bytes, esz + k * per, &bytes))
            bytes = INT64_MAX;
        if (bytes <= budget) { /* then one more slot while it fits (the jump below may overshoot) */
            *s = k;
            *rows = r;
            while (*s < trips) {
                r = revolve_plan(trips, *s + 1, NULL, NULL);
                if (r < 0 || __builtin_mul_overflow(r, RV_FIELDS * esz, &bytes) ||
                    __builtin_add_overflow(bytes, esz + (*s + 1) * per, &bytes) || bytes > budget)
                    break;
                *rows = r;
                ++*s;
            }
            return true;
        }
        int64_t over = bytes - budget, dec = over / per + (over % per != 0);
        k = k > 1 && k - dec < 1 ? 1 : k - (dec > 1 ? dec : 1); /* never past one slot untried */
    }
    return false;
}

/* The share of the budget of each checkpointed tape of P. */
static int64_t tape_share(const Program *P)
{
    int64_t n = 0, budget = 0;
    for (int j = 0; j < P->tapes.n; j++)
        if (P->tapes.v[j].ckpt) {
            n++;
            budget = P->tapes.v[j].budget;
        }
    return n ? budget / n : 0;
}

/* The largest value a revolve tape's elements represent exactly. */
static int64_t exact_int(const Func *f, const FuncTape *t)
{
    return ir_type(f, t->param).elem == DT_F64 ? (int64_t)1 << 53 : (int64_t)1 << 24;
}

bool tape_revolve_of(const Program *P, int j, const int64_t *iargs, const int64_t grid[3], int64_t *elems,
                     int64_t *slots, int64_t *nrows, int32_t **plan, Diags *d)
{
    const Func *f = P->main;
    const FuncTape *t = &P->tapes.v[j];
    int64_t esz = ir_type(f, t->param).elem == DT_F64 ? 8 : 4, lo = 0, trips = 0, programs = 0, s = 0, rows = 0;
    if (!tape_expr_bound(t->trips, iargs, grid, &lo, &trips)) {
        diag_error(d, t->loc, "cannot compute the trip count of this loop for its tape (a division by zero or "
                              "an overflow)");
        return false;
    }
    trips = trips < 0 ? 0 : trips;
    if (__builtin_mul_overflow(grid[0], grid[1], &programs) || __builtin_mul_overflow(programs, grid[2], &programs) ||
        trips >= exact_int(f, t)) {
        diag_error(d, t->loc, "this loop runs too many iterations (%lld) for a revolve plan", (long long)trips);
        return false;
    }
    int64_t share = tape_share(P);
    if (!revolve_fit(trips, programs, t->slot * esz, esz, share, &s, &rows) || RV_FIELDS * rows >= exact_int(f, t)) {
        int64_t one = (1 + RV_FIELDS * (trips > 0 ? revolve_plan(trips, 1, NULL, NULL) : 0)) * esz + programs * t->slot * esz;
        diag_error(d, t->loc, "this launch needs %lld bytes of tape even with revolve (one checkpoint slot and the "
                              "plan), above the tape budget's share of this loop, %lld bytes",
                   (long long)one, (long long)share);
        return false;
    }
    if (elems)
        *elems = 1 + RV_FIELDS * rows + s * programs * t->slot;
    if (slots)
        *slots = s;
    if (nrows)
        *nrows = rows;
    if (plan) {
        *plan = malloc(sizeof **plan * (size_t)(RV_FIELDS * rows + 1));
        if (!*plan || revolve_plan(trips, s, *plan, NULL) != rows) {
            free(*plan);
            *plan = NULL;
            diag_error(d, t->loc, "out of memory for the revolve plan of this loop");
            return false;
        }
    }
    return true;
}
