/* run.c: runs a Program's host steps on the interpreter.
 *
 * The one runner of a backward: each step of P->steps (program.c) as the
 * launcher would do it on a GPU, each launch one interp_run of one kernel
 * on one grid.  The caller passes the contract's arguments (plan_nargs);
 * the runner makes the rest of the main kernel's: the flags, the tapes
 * (uninitialized scratch, NaN so that a read before a write shows), S of
 * a spread, a fold's partials, spans and program counts; output gradients
 * the backward clears run on private copies.  Zero-fills (STEP_ZERO) are the
 * caller's: interpreter callers pass zeroed input gradients.
 * Requires: P's steps built (plan_steps).  Keeps: the caller's buffers but
 * the gradients the backward writes. */
#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "plan/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* The folded launch and its sum kernel (write/fold.c's plan)         */
/* ------------------------------------------------------------------ */

/* Runs a folded backward with at most nfold programs along the folded axis (args: its
 * parameters before the fold's, nargs of them), then the sum kernel. */
static bool run_fold(const Program *Pg, const int64_t grid[3], const InterpArg *args, int nargs, InterpMode mode,
                     int64_t nfold, Diags *d)
{
    const Func *f = Pg->main;
    const FoldPlan *pl = Pg->fold;
    int64_t T = 1;
    for (int k = 0; k < 3; k++)
        if (pl->axes & (1u << k))
            T *= grid[k];
    if (T <= 0 || grid[0] <= 0 || grid[1] <= 0 || grid[2] <= 0)
        return true;
    if (T > INT32_MAX) {
        diag_error(d, f->loc, "the folded grid of '%s' has %lld programs: more than %d", f->name, (long long)T,
                   INT32_MAX);
        return false;
    }
    int64_t P = nfold > 0 && nfold < T ? nfold : T;
    bool alone = true; /* one program along every unfolded axis: the kernel zeroes its rows */
    for (int k = 0; k < 3; k++)
        alone = alone && ((pl->axes & (1u << k)) || grid[k] == 1);
    if (nargs != pl->nargs) {
        diag_error(d, f->loc, "kernel '%s' takes %d runtime arguments, %d given", f->name, pl->nargs, nargs);
        return false;
    }
    InterpArg *ia = calloc((size_t)f->nparams + 1, sizeof *ia);
    void **parts = calloc((size_t)pl->n + 1, sizeof *parts);
    int64_t *rows = calloc((size_t)pl->n + 1, sizeof *rows);
    bool ok = ia && parts && rows;
    if (!ok)
        diag_error(d, f->loc, "out of memory");
    for (int i = 0; ok && i < nargs; i++)
        ia[i] = args[i];
    for (int j = 0; ok && j < pl->n; j++) {
        const FoldInput *in = &pl->in[j];
        const InterpArg *g = &args[in->slot];
        int64_t esz = mode == IM_F64 && dtype_is_float(in->dt) ? 8 : dtype_bits(in->dt) / 8;
        int64_t psz = mode == IM_F64 ? 8 : dtype_bits(in->pdt) / 8;
        int64_t span = esz > 0 ? g->nbytes / esz : 0;
        rows[j] = !in->rows ? P : 1;
        if (in->rows) { /* a row per site, or one (atomics) when the flag is false */
            rows[j] = in->rows;
            for (int i = 0; in->flag && i < f->nparams; i++)
                if (f->params[i] == in->flag && i < nargs && !args[i].i)
                    rows[j] = 1;
        }
        /* as the launcher: uninitialized (NaN here, so that an element read before it is
         * written shows) where the kernel zeroes its own rows, else zero-filled */
        size_t cnt = (size_t)(rows[j] * span > 0 ? rows[j] * span : 1);
        parts[j] = alone && !in->rows ? malloc(cnt * (size_t)psz) : calloc(cnt, (size_t)psz);
        for (size_t e = 0; parts[j] && alone && !in->rows && e < cnt; e++) {
            if (psz == 8)
                ((double *)parts[j])[e] = NAN;
            else
                ((float *)parts[j])[e] = NAN;
        }
        if (!parts[j]) {
            diag_error(d, f->loc, "out of memory for the partials of d_%s", in->name);
            ok = false;
            break;
        }
        ia[in->slot] = (InterpArg){.data = parts[j], .nbytes = rows[j] * span * psz};
        ia[pl->nargs + j] = (InterpArg){.i = span};
    }
    int64_t g2[3] = {grid[0], grid[1], grid[2]};
    for (int k = 0, at = pl->nargs + pl->n; k < 3; k++)
        if (pl->axes & (1u << k)) {
            ia[at++] = (InterpArg){.i = grid[k]};
            g2[k] = k == pl->axis ? P : 1;
        }
    if (ok)
        ok = interp_run(f, g2, ia, f->nparams, mode, d);
    InterpArg *sa = ok ? calloc((size_t)pl->n * 5 + 1, sizeof *sa) : NULL;
    int64_t sg[3] = {0, 1, 1};
    if (ok && !sa) {
        diag_error(d, f->loc, "out of memory");
        ok = false;
    }
    for (int j = 0; ok && j < pl->n; j++) { /* the one sum kernel, every input's blocks */
        const InterpArg *g = &args[pl->in[j].slot];
        int64_t span = ia[pl->nargs + j].i;
        /* dense 0: the caller's d is zero-filled (or holds what to add to); its layout is unknown here */
        InterpArg one[5] = {ia[pl->in[j].slot], *g, {.i = span}, {.i = rows[j]}, {.i = 0}};
        memcpy(sa + 5 * j, one, sizeof one);
        sg[0] += (span + FOLD_SUM_BLOCK - 1) / FOLD_SUM_BLOCK;
    }
    if (ok && sg[0] > 0)
        ok = interp_run(Pg->sum, sg, sa, 5 * pl->n, mode, d);
    free(sa);
    for (int j = 0; parts && j < pl->n; j++)
        free(parts[j]);
    free(parts);
    free(rows);
    free(ia);
    return ok;
}

/* ------------------------------------------------------------------ */
/* The GEMM form (write/gemm.c's plan)                                */
/* ------------------------------------------------------------------ */

/* e at one program (pid) of a launch, with the kernel's i32 semantics
 * (truncating division); false on a division by zero or an overflow. */
static bool gemm_expr_eval(const TapeExpr *e, const int64_t *iargs, const int64_t grid[3], const int64_t pid[3],
                           int64_t *out)
{
    int64_t x = 0, y = 0;
    switch (e->op) {
    case TX_CONST: *out = e->v; return true;
    case TX_PARAM: *out = iargs[e->v]; return true;
    case TX_GRID: *out = grid[e->v]; return true;
    case TX_PID: *out = pid[e->v]; return true;
    default: break;
    }
    if (!gemm_expr_eval(e->x, iargs, grid, pid, &x) || !gemm_expr_eval(e->y, iargs, grid, pid, &y))
        return false;
    int64_t r;
    switch (e->op) {
    case TX_ADD: r = x + y; break;
    case TX_SUB: r = x - y; break;
    case TX_MUL: r = x * y; break;
    case TX_DIV: if (!y) return false; r = x / y; break;
    case TX_REM: if (!y) return false; r = x % y; break;
    case TX_MAX: r = x > y ? x : y; break;
    case TX_MIN: r = x < y ? x : y; break;
    case TX_CDIV: if (y <= 0) return false; r = (x + y - 1) / y; break;
    default: return false;
    }
    if (r < INT32_MIN || r > INT32_MAX)
        return false;
    *out = r;
    return true;
}

/* The launch's tile counts U, V and K trips; false when the programs do
 * not map one to one onto [0, U) x [0, V) (the launcher checks the same). */
static bool gemm_tiles(const GemmPlan *pl, const int64_t *iargs, const int64_t grid[3], int64_t *nu, int64_t *nv,
                       int64_t *trips)
{
    int64_t P = grid[0] * grid[1] * grid[2], U = 0, V = 0, pid[3], u, v;
    if (P <= 0 || P > (1 << 24))
        return false;
    int64_t *us = malloc(sizeof(int64_t) * (size_t)P), *vs = malloc(sizeof(int64_t) * (size_t)P);
    bool ok = us && vs;
    int64_t i = 0;
    for (pid[2] = 0; ok && pid[2] < grid[2]; pid[2]++)
        for (pid[1] = 0; ok && pid[1] < grid[1]; pid[1]++)
            for (pid[0] = 0; ok && pid[0] < grid[0]; pid[0]++, i++) {
                ok = gemm_expr_eval(pl->id[0], iargs, grid, pid, &u) && gemm_expr_eval(pl->id[1], iargs, grid, pid, &v) &&
                     u >= 0 && v >= 0;
                us[i] = u, vs[i] = v;
                U = ok && u + 1 > U ? u + 1 : U;
                V = ok && v + 1 > V ? v + 1 : V;
            }
    ok = ok && U * V == P;
    uint8_t *seen = ok ? calloc((size_t)P, 1) : NULL;
    ok = ok && seen;
    for (i = 0; ok && i < P; i++) {
        int64_t t = us[i] * V + vs[i];
        ok = !seen[t];
        seen[t] = 1;
    }
    free(seen);
    free(us);
    free(vs);
    int64_t tr = 0;
    ok = ok && gemm_expr_eval(pl->trips, iargs, grid, (int64_t[3]){0, 0, 0}, &tr);
    *nu = U, *nv = V, *trips = tr > 0 ? tr : 0;
    return ok;
}

/* Runs P's GEMM form: 1 done, 0 the launch does not allow it (the steps after it run: the
 * atomic backward), -1 an error in d. */
static int run_gemm(const Program *P, const int64_t grid[3], const InterpArg *args, int nargs, InterpMode mode,
                    Diags *d)
{
    const Func *f = P->main;
    const GemmPlan *pl = P->gemm;
    int64_t *iargs = calloc((size_t)nargs + 4, sizeof *iargs), U = 0, V = 0, T = 0;
    if (!iargs) {
        diag_error(d, f->loc, "interpreter: out of memory");
        return -1;
    }
    for (int k = 0; k < nargs; k++)
        iargs[k] = args[k].i;
    bool ok = gemm_tiles(pl, iargs, grid, &U, &V, &T);
    iargs[nargs + 1] = U, iargs[nargs + 2] = V;
    for (int i = 0; ok && i < pl->n; i++) {
        bool holds = true;
        int64_t g2[3] = {pl->op[i].own ? V : U, T, 1};
        if (pl->op[i].cond && (!access_cond_eval(pl->op[i].acc, pl->op[i].cond, iargs, g2, &holds) || !holds))
            ok = false;
    }
    free(iargs);
    if (!ok)
        return 0; /* the atomic backward */
    int64_t esz = mode == IM_F64 ? 8 : dtype_bits(pl->sdt) / 8, n = U * V * pl->tile;
    void *scratch = calloc((size_t)(n > 0 ? n : 1), (size_t)esz);
    InterpArg *ia = calloc((size_t)nargs + 4, sizeof *ia);
    bool good = scratch && ia;
    if (!good)
        diag_error(d, f->loc, "interpreter: out of memory for the dacc tiles");
    for (int k = 0; good && k < nargs; k++)
        ia[k] = args[k];
    for (int i = 0; good && i < pl->n; i++) /* elements no tile writes: zero */
        if (args[pl->op[i].slot].data)
            memset(args[pl->op[i].slot].data, 0, (size_t)args[pl->op[i].slot].nbytes);
    if (good) {
        ia[nargs] = (InterpArg){.data = scratch, .nbytes = n * esz};
        ia[nargs + 1] = (InterpArg){.i = U};
        ia[nargs + 2] = (InterpArg){.i = V};
        good = interp_run(pl->first, grid, ia, nargs + 3, mode, d);
    }
    for (int i = 0; good && i < pl->n; i++) { /* a 1-D grid: tiles x groups (GEMM_ORDER) */
        int64_t R = pl->op[i].group, g2[3] = {(pl->op[i].own ? V : U) * ((T + R - 1) / R), 1, 1};
        if (g2[0] > 0)
            good = interp_run(pl->op[i].k, g2, ia, nargs + 3, mode, d);
    }
    free(scratch);
    free(ia);
    return good ? 1 : -1;
}

/* ------------------------------------------------------------------ */
/* Tapes                                                               */
/* ------------------------------------------------------------------ */

/* The S plan_run takes for P's launch on grid: 2 when its loop runs 2 or more
 * iterations in some program, else 1 (the rewrite is what the interpreter checks;
 * the launcher picks S to fill the GPU). */
static int64_t spread_cpu(const Program *P, const int64_t *iargs, const int64_t grid[3])
{
    int64_t lo = 0, hi = 0;
    if (!P->spread || !tape_expr_bound(P->spread->trips, iargs, grid, &lo, &hi))
        return 1;
    return hi >= 2 ? 2 : 1;
}

/* Writes the plan of P's revolve tape j (revolve_plan: its rows, then RV_FIELDS elements per row) into the head of
 * its buffer (elements of esz bytes) as exact floats. */
static bool revolve_head(const Program *P, int j, const int64_t *iargs, const int64_t grid[3], void *buf,
                         int64_t esz, Diags *d)
{
    int32_t *plan = NULL;
    int64_t rows = 0;
    if (!tape_revolve_of(P, j, iargs, grid, NULL, NULL, &rows, &plan, d))
        return false;
    for (int64_t k = 0; k <= RV_FIELDS * rows; k++) {
        double v = k ? plan[k - 1] : (double)rows;
        if (esz == 8)
            ((double *)buf)[k] = v;
        else
            ((float *)buf)[k] = (float)v;
    }
    free(plan);
    return true;
}

/* ------------------------------------------------------------------ */
/* The runner                                                          */
/* ------------------------------------------------------------------ */

/* One run's state: the main kernel's arguments (the contract's, then what the steps make) and
 * the buffers the run owns. */
typedef struct Run {
    const Program *P;
    const Func *f;
    InterpMode mode;
    Diags *d;
    const int64_t *grid;
    int nc, next;     /* the contract's arguments; all of the main kernel's but the fold's */
    int64_t *iargs;   /* the contract's int arguments, by parameter index */
    InterpArg *ext;   /* next arguments */
    void **tapes;     /* by tape */
    void **priv;      /* by cleared output gradient: its private copy */
    int64_t sg[3];    /* the main launch's grid (a spread's S programs per forward program) */
} Run;

/* One step; false after an error in R->d. */
static bool run_step(Run *R, const Step *s)
{
    const Program *P = R->P;
    const Func *f = R->f;
    const int64_t *grid = R->grid;
    Diags *d = R->d;
    int nc = R->nc;
    InterpArg *ext = R->ext;
    bool empty = grid[0] <= 0 || grid[1] <= 0 || grid[2] <= 0;
    switch (s->kind) {
    case STEP_COPY: { /* output gradients the backward reads and clears: on copies, the caller's kept */
        InterpArg *g = &ext[P->cleared.v[s->j]];
        R->priv[s->j] = malloc((size_t)(g->nbytes > 0 ? g->nbytes : 1));
        if (!R->priv[s->j]) {
            diag_error(d, f->loc, "interpreter: out of memory");
            return false;
        }
        if (g->nbytes > 0)
            memcpy(R->priv[s->j], g->data, (size_t)g->nbytes);
        g->data = R->priv[s->j];
        return true;
    }
    case STEP_GUARDS: return func_guards_hold(P->guards.v, P->guards.n, R->iargs, grid, d);
    case STEP_FLAG: {
        const FuncFlag *fl = &P->flags.v[s->j];
        bool holds = true; /* cannot evaluate: false, the atomics (always right) */
        const int64_t *ga = fl->grid_add; /* a gather's condition: on its grid */
        int64_t fg[3] = {grid[0] + (ga ? ga[0] : 0), grid[1] + (ga ? ga[1] : 0), grid[2] + (ga ? ga[2] : 0)};
        for (int c = 0; c < fl->ncond && holds; c++)
            if (!access_cond_eval(fl->acc, fl->cond[c], R->iargs, fg, &holds))
                holds = false;
        ext[nc + s->j] = (InterpArg){.i = holds};
        return true;
    }
    case STEP_TAPE: { /* uninitialized scratch, sized for this launch */
        int j = s->j;
        const FuncTape *t = &P->tapes.v[j];
        int64_t n = 0;
        Type pt = ir_type(f, t->param);
        int64_t esz = R->mode == IM_F64 ? 8 : dtype_bits((Dtype)pt.elem) / 8;
        if (!tape_elems(P, j, R->iargs, grid, &n, d))
            return false;
        if (n > (INT64_MAX / 16) / esz) {
            diag_error(d, t->loc, "the tape of this loop is too large (%lld elements)", (long long)n);
            return false;
        }
        void *buf = R->tapes[j] = malloc((size_t)(n > 0 ? n * esz : 1));
        if (buf) /* NaN everywhere: a read of an element never written shows */
            memset(buf, 0xff, (size_t)(n > 0 ? n * esz : 1));
        if (buf && t->bounded) /* a `while` loop's head: the overflow flag, clear */
            memset(buf, 0, (size_t)(KAD_TAPE_HEAD * esz));
        bool ok = true;
        if (!buf) {
            diag_error(d, t->loc, "interpreter: out of memory for the tape of this loop");
            ok = false;
        }
        if (ok && t->revolve) /* the plan's head: its rows, then (kind, a, b) each */
            ok = revolve_head(P, j, R->iargs, grid, buf, esz, d);
        ext[nc + P->flags.n + j] = (InterpArg){.data = buf, .nbytes = n * esz};
        return ok;
    }
    case STEP_TAPE_BUDGET: {
        int64_t tbytes = 0, budget = 0;
        for (int j = 0; j < P->tapes.n; j++) {
            Type pt = ir_type(f, P->tapes.v[j].param);
            tbytes += ext[nc + P->flags.n + j].nbytes / (R->mode == IM_F64 ? 8 : dtype_bits((Dtype)pt.elem) / 8) *
                      (dtype_bits((Dtype)pt.elem) / 8); /* the bytes the launcher allocates */
            if (P->tapes.v[j].ckpt)
                budget = P->tapes.v[j].budget;
        }
        if (budget && tbytes > budget) {
            diag_error(d, f->loc, "this launch needs %lld bytes of tape even with checkpointing, above the tape "
                                  "budget of %lld bytes", (long long)tbytes, (long long)budget);
            return false;
        }
        return true;
    }
    case STEP_ZERO: return true; /* the interpreter's callers pass zeroed gradients */
    case STEP_SPREAD: {
        int64_t sp = spread_cpu(P, R->iargs, grid);
        ext[nc + P->flags.n + P->tapes.n] = (InterpArg){.i = sp};
        R->sg[0] *= sp;
        return true;
    }
    case STEP_LAUNCH_UNLESS_GATHERED: { /* not when every gather's flag holds */
        bool run_main = false;
        for (int j = 0; j < P->gather->n; j++)
            run_main |= P->gather->in[j].flag >= 0 && !ext[nc + P->gather->in[j].flag].i;
        if (!run_main)
            return true;
    } /* fall through */
    case STEP_LAUNCH: return interp_run(f, R->sg, ext, R->next, R->mode, d);
    case STEP_FOLD: return run_fold(P, grid, ext, R->next, R->mode, FOLD_CPU_PROGRAMS, d);
    case STEP_GATHER: {
        const GatherIn *gi = &P->gather->in[s->j];
        if (empty || (gi->flag >= 0 && !ext[nc + gi->flag].i))
            return true; /* the backward's atomics added it */
        int64_t gg[3] = {grid[0] + gi->grid_add[0], grid[1] + gi->grid_add[1], grid[2] + gi->grid_add[2]};
        return interp_run(gi->k, gg, ext, nc, R->mode, d);
    }
    case STEP_TAPE_CHECK: { /* a `while` loop's overflow flag: never a gradient from a partial tape */
        const FuncTape *t = &P->tapes.v[s->j];
        void *buf = R->tapes[s->j];
        bool over = false;
        if (t->bounded && buf) {
            Type pt = ir_type(f, t->param);
            if (R->mode == IM_F64 || pt.elem == DT_F64)
                over = *(double *)buf != 0;
            else
                over = *(float *)buf != 0;
        }
        if (over) {
            int64_t lo = 0, cap = 0;
            tape_expr_bound(t->trips, R->iargs, grid, &lo, &cap);
            diag_error(d, t->loc, "this `while` loop ran more than %lld iterations, the capacity of its tape: "
                                  "the backward's gradients are invalid (raise the capacity with --while-cap, or "
                                  "bound the loop with a counter compared with an argument)",
                       (long long)cap);
            return false;
        }
        return true;
    }
    default: return true; /* STEP_GEMM: run first, by plan_run */
    }
}

bool plan_run(const Program *P, const int64_t grid[3], const InterpArg *args, int nargs, InterpMode mode,
              Diags *d)
{
    const Func *f = P->main;
    ASSERT(P->steps.n > 0); /* plan_steps ran: every Program launches something */
    int nc = plan_nargs(P);
    if (nargs != nc) {
        diag_error(d, f->loc, "kernel '%s' takes %d runtime arguments, %d given", f->name, nc, nargs);
        return false;
    }
    if (!interp_ranges_hold(f, args, d))
        return false;
    int first = 0;
    if (P->steps.n && P->steps.v[0].kind == STEP_GEMM) { /* the GEMM form when the launch allows it */
        int r = run_gemm(P, grid, args, nargs, mode, d);
        if (r)
            return r > 0;
        first = 1;
    }
    if (P->steps.n - first == 1 && P->steps.v[first].kind == STEP_LAUNCH) /* one kernel, the caller's arguments */
        return interp_run(f, grid, args, nargs, mode, d);
    /* a backward's launch conditions, flags, tapes and spread, on the forward's grid */
    int nt = P->tapes.n;
    Run R = {.P = P, .f = f, .mode = mode, .d = d, .grid = grid, .nc = nc};
    R.next = nc + P->flags.n + nt + !!P->spread;
    R.iargs = calloc((size_t)nc + 1, sizeof *R.iargs);
    R.ext = calloc((size_t)R.next + 1, sizeof *R.ext);
    R.tapes = calloc((size_t)nt + 1, sizeof *R.tapes);
    R.priv = calloc((size_t)P->cleared.n + 1, sizeof *R.priv);
    bool ok = R.iargs && R.ext && R.tapes && R.priv;
    if (!ok)
        diag_error(d, f->loc, "interpreter: out of memory");
    for (int k = 0; ok && k < nc; k++) {
        R.iargs[k] = args[k].i;
        R.ext[k] = args[k];
    }
    for (int k = 0; k < 3; k++)
        R.sg[k] = grid[k];
    for (int i = first; ok && i < P->steps.n; i++)
        ok = run_step(&R, &P->steps.v[i]);
    for (int j = 0; R.tapes && j < nt; j++)
        free(R.tapes[j]);
    for (int k = 0; R.priv && k < P->cleared.n; k++)
        free(R.priv[k]);
    free(R.priv);
    free(R.tapes);
    free(R.iargs);
    free(R.ext);
    return ok;
}
