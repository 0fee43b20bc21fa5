/* tape.c: a Program's tapes on the host.
 *
 * Job: what the host does with the plan data of a backward's tapes
 * (Program.tapes, FuncTape; planned by ad_tape.c): a trip count
 * (TapeExpr) bounded over a launch's programs and printed as Python for
 * the launcher, the elements a tape needs for a launch (tape_elems: what
 * plan_run allocates; the launcher prints the same sums), binomial
 * checkpointing's schedule (revolve_plan, revolve_fit: a launch's plan,
 * tape_revolve_of, written into the tape's head), and each tape's
 * description for the header and `kad grad --report`.  These read only
 * a Program's data, so that the plan stage runs and describes a backward
 * without calling the AD that made it.
 *
 * Requires: a Program whose tapes ad_tape.c planned (or plan_parse read).
 * Keeps: everything (evaluations and descriptions only). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "plan/plan.h"

/* ------------------------------------------------------------------ */
/* Trip counts, sizes and descriptions                                 */
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
