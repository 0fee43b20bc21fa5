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
 * tape_rev.c emits the stores and the reverse loop; plan/tape.c is the
 * host's side (the trip count bounded and printed, the tape's size, the
 * revolve schedule, the tape's description).
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

#include "base/base.h"
#include "ir/ir.h"
#include "plan/plan.h"
#include "ad/ad_int.h"

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
        for (int i = 0; i < f->nparams; i++)
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

/* Whether carried value c is an int or a pointer (recomputed when affine; an int of <= 32 bits taped
 * otherwise, see tape_record). */
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
        if (t.dt == DT_PTR || dtype_bits((Dtype)t.dt) > 32) {
            diag_error(ad->d, in->loc,
                       "loop-carried %s '%s' of a loop whose reverse sweep reads a tape (for '%s'): kad "
                       "recomputes such a value only when each iteration advances it by the same amount "
                       "(p += step, step loop-invariant), and records integers of at most 32 bits (a "
                       "float64 holds them exactly), not %s (compute it from the loop variable, or make "
                       "it an int)",
                       t.dt == DT_PTR ? "pointer" : "integer", name_of(ad, c, in->res[k]), first,
                       t.dt == DT_PTR ? "pointers" : dtype_name((Dtype)t.dt));
            return false;
        }
        tl->dt = DT_F64; /* an int of <= 32 bits (a counter advanced only by some iterations): exact in f64 */
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
    (void)rep; /* its report names the carried values, a store the iterations order only generically */
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
