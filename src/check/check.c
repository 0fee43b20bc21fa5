/* check.c -- the gradient checker: AD against float64 finite differences.
 *
 * Job: the independent reference for reverse mode (sweep_rev.c).  For a forward kernel and
 * an AdSpec it builds the backward kernel, then on the interpreter in
 * float64 (IM_F64: every float buffer holds doubles, nothing is rounded):
 *
 *   x   random inputs (seeded; uniform in [-1, 1] or a given range),
 *   dy  random output cotangents, uniform in [-1, 1],
 *   dx  = backward(x, dy)                       (the AD gradient),
 *   for K random directions u per input:  <dx, u>  vs
 *       sum_j (y_j(x + h u) - y_j(x - h u)) * dy_j / 2h,
 *   per element (inputs of <= elem_limit elements): dx_j vs the same with
 *       u = e_j.
 *
 * The difference y(x+hu) - y(x-hu) is taken per output element before the
 * dot product with dy, so outputs the perturbation does not reach cancel
 * exactly and do not add rounding noise.  h = 1e-6 * max|x| (at least
 * 1e-6): float64 central differences then err by about 1e-10 relative
 * (truncation h^2, rounding eps/h), far below the tolerance CHECK_RTOL =
 * 1e-6, while a wrong rule errs by O(1).  Errors are relative to the norm
 * (docs/AD.md, "The checker"):
 *   direction:  |<dx,u> - fd| / max(|dx|_2 |u|_2, |fd|)
 *   elements:   max_j |dx_j - fd_j| / max(max_j |fd_j|, max_j |dx_j|)
 * Both are 0 when the gradients are both exactly zero.
 *
 * It also checks the backward's contract: it must not write the forward's
 * buffers nor the output gradients.  A buffer updated in place (named in
 * wrt and out) is both: its random start is perturbed, its final contents
 * are an output, and its d_ buffer (the cotangent on entry) holds the
 * gradient of the start on exit.
 *
 * Requires: a verified forward Func; a complete configuration (element
 * count of every pointer param, value of every scalar param).  Guarantees:
 * deterministic for a seed; reports, never prints.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "plan/plan.h"
#include "ad/autodiff.h"
#include "check/check.h"

/* splitmix64: small, seedable, good enough for test inputs. */
typedef struct Rng {
    uint64_t s;
} Rng;

static uint64_t rng_next(Rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_uniform(Rng *r, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0));
}

/* One parameter of the forward kernel and its buffers. */
typedef struct CParam {
    const char *name;
    Type ty;
    bool is_ptr, is_float; /* is_float: float scalar, or pointer to floats */
    int role;              /* 0 other, 1 differentiated input, 2 differentiated output, 3 both (in place) */
    int64_t n;             /* pointer: element count */
    int64_t dims[8];       /* pointer: the --shape's dimensions (ndims of them) */
    int ndims;
    bool has_range;
    double lo, hi;         /* input distribution */
    int64_t ival;          /* scalar value */
    double fval;
    bool has_value;
    size_t nbytes;         /* pointer: bytes of one buffer in IM_F64 */
    void *base;            /* pointer: contents before every run */
    void *work;            /* pointer: the buffer the runs use */
    double *dy;            /* output: the cotangent */
    double *yp, *ym;       /* output: y(x + hu), y(x - hu) */
    double *grad;          /* input or output: the backward's gradient buffer */
} CParam;

typedef struct Chk {
    Arena *a;
    Diags *d;
    const Func *fw, *bw;
    const Program *bp; /* the backward (bw its main kernel) */
    const CheckConfig *cfg;
    CParam *p;
    int np;
    InterpArg *fargs, *bargs;
    bool failed_run;
} Chk;

/* ------------------------------------------------------------------ */
/* Configuration strings                                               */
/* ------------------------------------------------------------------ */

/* The parameter named name[0..n); a '.' in the name matches a '_' of the parameter's (a struct
 * passed by value is one parameter per member, "p_scale", which the source spells p.scale). */
static int find_param(Chk *c, const char *name, size_t n)
{
    for (int i = 0; i < c->np; i++) {
        const char *pn = c->p[i].name;
        bool same = strlen(pn) == n;
        for (size_t k = 0; same && k < n; k++)
            same = pn[k] == name[k] || (name[k] == '.' && pn[k] == '_');
        if (same)
            return i;
    }
    return -1;
}

/* key=value[,key=value]...; calls fn for each pair.  what names the
 * option in messages ("shape"); errors are located in the string. */
typedef bool (*KvFn)(Chk *c, CParam *p, const char *val, size_t n, Loc loc);

static bool parse_kv(Chk *c, const char *what, const char *s, KvFn fn)
{
    if (!s || !*s)
        return true;
    const char *file = arena_printf(c->a, "<%s>", what);
    diag_add_source(c->d, file, arena_strdup(c->a, s));
    bool ok = true;
    const char *q = s;
    while (*q) {
        const char *e = strchr(q, ',');
        if (!e)
            e = q + strlen(q);
        while (q < e && *q == ' ')
            q++;
        Loc loc = {file, 1, (int)(q - s) + 1};
        const char *eq = memchr(q, '=', (size_t)(e - q));
        if (e > q) {
            int i = eq ? find_param(c, q, (size_t)(eq - q)) : -1;
            if (!eq)
                diag_error(c->d, loc, "expected NAME=VALUE in the %s list", what);
            else if (i < 0)
                diag_error(c->d, loc, "kernel '%s' has no runtime parameter '%.*s'", c->fw->name,
                           (int)(eq - q), q);
            if (!eq || i < 0 || !fn(c, &c->p[i], eq + 1, (size_t)(e - eq - 1), loc))
                ok = false;
        }
        q = *e ? e + 1 : e;
    }
    return ok;
}

/* "64x128" -> 8192 */
static bool kv_shape(Chk *c, CParam *p, const char *v, size_t n, Loc loc)
{
    if (!p->is_ptr) {
        diag_error(c->d, loc, "'%s' is not a pointer parameter: give scalars with --arg", p->name);
        return false;
    }
    char *s = arena_strndup(c->a, v, n), *end;
    int64_t total = 1;
    p->ndims = 0;
    for (char *q = s;;) {
        long long k = strtoll(q, &end, 10);
        if (end == q || k <= 0 || total > ((int64_t)1 << 40) / k) {
            diag_error(c->d, loc, "bad element count '%s' for '%s' (expected e.g. 64x128)", s, p->name);
            return false;
        }
        total *= k;
        if (p->ndims < 8)
            p->dims[p->ndims] = k;
        p->ndims++;
        if (*end == 'x' || *end == 'X')
            q = end + 1;
        else if (!*end)
            break;
        else {
            diag_error(c->d, loc, "bad element count '%s' for '%s' (expected e.g. 64x128)", s, p->name);
            return false;
        }
    }
    p->n = total;
    return true;
}

static bool kv_arg(Chk *c, CParam *p, const char *v, size_t n, Loc loc)
{
    if (p->is_ptr) {
        diag_error(c->d, loc, "'%s' is a pointer parameter: give its element count with --shape", p->name);
        return false;
    }
    char *s = arena_strndup(c->a, v, n), *end;
    if (p->is_float) {
        p->fval = strtod(s, &end);
    } else if (!strcmp(s, "True") || !strcmp(s, "False")) {
        p->ival = s[0] == 'T';
        end = s + strlen(s);
    } else {
        p->ival = strtoll(s, &end, 0);
    }
    if (end == s || *end) {
        diag_error(c->d, loc, "bad value '%s' for scalar '%s'", s, p->name);
        return false;
    }
    p->has_value = true;
    return true;
}

/* "lo:hi" */
static bool kv_range(Chk *c, CParam *p, const char *v, size_t n, Loc loc)
{
    char *s = arena_strndup(c->a, v, n), *end, *end2 = NULL;
    double lo = strtod(s, &end), hi = 0;
    bool ok = end != s && *end == ':';
    if (ok) {
        hi = strtod(end + 1, &end2);
        ok = end2 != end + 1 && !*end2 && lo <= hi && p->is_ptr;
    }
    if (!ok) {
        diag_error(c->d, loc, "bad input range '%s' for '%s' (expected LO:HI for a pointer parameter)", s,
                   p->name);
        return false;
    }
    p->has_range = true;
    p->lo = lo;
    p->hi = hi;
    return true;
}

/* ------------------------------------------------------------------ */
/* Runs                                                                */
/* ------------------------------------------------------------------ */

/* Copies every forward buffer's base contents into its working buffer. */
static void reset(Chk *c)
{
    for (int i = 0; i < c->np; i++)
        if (c->p[i].is_ptr)
            memcpy(c->p[i].work, c->p[i].base, c->p[i].nbytes);
}

static bool run(Chk *c, const Func *f, const InterpArg *args)
{
    if (interp_run(f, c->cfg->grid, args, f->nparams, IM_F64, c->d))
        return true;
    c->failed_run = true;
    return false;
}

/* The backward's run: its Program's steps. */
static bool run_backward(Chk *c, const InterpArg *args)
{
    if (plan_run(c->bp, c->cfg->grid, args, plan_nargs(c->bp), IM_F64, c->d))
        return true;
    c->failed_run = true;
    return false;
}

/* The directional derivative of <y, dy> along u (or along e_j when u is
 * NULL) for input k, by central differences with step h. */
static bool fd(Chk *c, int k, const double *u, int64_t j, double h, double *out)
{
    CParam *in = &c->p[k];
    for (int s = 0; s < 2; s++) {
        reset(c);
        double *w = in->work;
        const double *b = in->base;
        double step = s == 0 ? h : -h;
        if (u) {
            for (int64_t i = 0; i < in->n; i++)
                w[i] = b[i] + step * u[i];
        } else {
            w[j] = b[j] + step;
        }
        if (!run(c, c->fw, c->fargs))
            return false;
        for (int i = 0; i < c->np; i++)
            if (c->p[i].role >= 2)
                memcpy(s == 0 ? c->p[i].yp : c->p[i].ym, c->p[i].work, c->p[i].nbytes);
    }
    double sum = 0;
    for (int i = 0; i < c->np; i++) {
        const CParam *o = &c->p[i];
        if (o->role >= 2)
            for (int64_t q = 0; q < o->n; q++)
                sum += (o->yp[q] - o->ym[q]) * o->dy[q];
    }
    *out = sum / (2 * h);
    return true;
}

/* max that keeps a NaN (so that a NaN error fails the check) */
static double worse(double a, double b) { return (b > a || b != b) ? b : a; }

/* |num| / den, 0 when both are 0 */
static double rel(double num, double den)
{
    num = fabs(num);
    return num == 0 ? 0 : num / den;
}

/* ------------------------------------------------------------------ */
/* Entry point                                                         */
/* ------------------------------------------------------------------ */

static bool setup(Chk *c, const AdSpec *spec)
{
    const Func *f = c->fw;
    const CheckConfig *cfg = c->cfg;
    c->np = f->nparams;
    c->p = arena_alloc(c->a, sizeof *c->p * (size_t)(c->np + 1));
    for (int i = 0; i < c->np; i++) {
        CParam *p = &c->p[i];
        const Value *v = &f->vals.v[f->params[i]];
        p->name = v->name ? v->name : "";
        p->ty = v->ty;
        p->is_ptr = v->ty.dt == DT_PTR;
        p->is_float = dtype_is_float((Dtype)(p->is_ptr ? v->ty.elem : v->ty.dt));
        for (int k = 0; k < spec->nwrt; k++)
            if (!strcmp(spec->wrt[k], p->name))
                p->role = 1;
        for (int k = 0; k < spec->nouts; k++)
            if (!strcmp(spec->outs[k], p->name))
                p->role = p->role == 1 ? 3 : 2;
    }
    bool ok = parse_kv(c, "shape", cfg->shapes, kv_shape);
    ok = parse_kv(c, "arg", cfg->args, kv_arg) && ok;
    ok = parse_kv(c, "range", cfg->ranges, kv_range) && ok;
    if (cfg->grid[0] < 1 || cfg->grid[1] < 1 || cfg->grid[2] < 1) {
        diag_error(c->d, f->loc, "the grid must have at least one program in every dimension");
        ok = false;
    }
    for (int i = 0; i < c->np; i++) { /* a tensor accessor's NAME_size<k> / NAME_stride<k>: from NAME's --shape */
        CParam *p = &c->p[i];
        for (int j = 0; j < c->np && !p->is_ptr && !p->has_value; j++) {
            const CParam *q = &c->p[j];
            size_t ln = strlen(q->name);
            if (!q->is_ptr || !q->ndims || q->ndims > 8 || strncmp(p->name, q->name, ln) || p->name[ln] != '_')
                continue;
            const char *rest = p->name + ln + 1, *num = NULL;
            bool stride = !strncmp(rest, "stride", 6);
            if (!strncmp(rest, "size", 4))
                num = rest + 4;
            else if (stride)
                num = rest + 6;
            if (!num || *num < '0' || *num > '9' || num[1])
                continue;
            int k = *num - '0';
            if (k >= q->ndims)
                continue;
            int64_t v = stride ? 1 : q->dims[k];
            for (int m = k + 1; stride && m < q->ndims; m++)
                v *= q->dims[m];
            p->ival = v;
            p->fval = (double)v;
            p->has_value = true;
        }
    }
    for (int i = 0; i < c->np; i++) {
        CParam *p = &c->p[i];
        Loc loc = f->vals.v[f->params[i]].loc;
        if (p->is_ptr && !p->n) {
            diag_error(c->d, loc, "no element count for pointer parameter '%s' (e.g. --shape %s=1024)",
                       p->name, p->name);
            ok = false;
        } else if (!p->is_ptr && !p->has_value) {
            diag_error(c->d, loc, "no value for scalar parameter '%s' (e.g. --arg %s=1)", p->name, p->name);
            ok = false;
        }
    }
    if (!ok)
        return false;

    /* Buffers: float pointees hold doubles in IM_F64, ints keep their width. */
    Rng rng = {cfg->seed ? cfg->seed : 1};
    c->fargs = arena_alloc(c->a, sizeof *c->fargs * (size_t)(c->np + 1));
    for (int i = 0; i < c->np; i++) {
        CParam *p = &c->p[i];
        InterpArg *ia = &c->fargs[i];
        if (!p->is_ptr) {
            ia->i = p->ival;
            ia->f = p->fval;
            continue;
        }
        int eb = p->is_float ? 8 : dtype_bytes((Dtype)p->ty.elem);
        p->nbytes = (size_t)p->n * (size_t)eb;
        p->base = arena_alloc(c->a, p->nbytes);
        p->work = arena_alloc(c->a, p->nbytes);
        p->grad = arena_alloc(c->a, p->nbytes);
        ia->data = p->work;
        ia->nbytes = (int64_t)p->nbytes;
        double lo = p->has_range ? p->lo : -1, hi = p->has_range ? p->hi : 1;
        if (p->role >= 2) {
            /* outputs start at zero (in-place buffers at random values, below);
             * their cotangent is random */
            p->dy = arena_alloc(c->a, p->nbytes);
            p->yp = arena_alloc(c->a, p->nbytes);
            p->ym = arena_alloc(c->a, p->nbytes);
            for (int64_t k = 0; k < p->n; k++)
                p->dy[k] = rng_uniform(&rng, -1, 1);
        }
        if (p->role == 2) {
            /* zero */
        } else if (p->is_float) {
            double *b = p->base;
            for (int64_t k = 0; k < p->n; k++)
                b[k] = rng_uniform(&rng, lo, hi);
        } else if (p->has_range) {
            /* integer data (indices): uniform integers in [lo, hi] */
            for (int64_t k = 0; k < p->n; k++) {
                int64_t x = (int64_t)floor(rng_uniform(&rng, lo, hi + 1));
                x = x > (int64_t)hi ? (int64_t)hi : x;
                memcpy((char *)p->base + k * eb, &x, (size_t)eb); /* little-endian truncation */
            }
        }
    }
    return true;
}

const char *check_gradients(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec,
                            const CheckConfig *cfg, bool *passed)
{
    *passed = false;
    Chk c0 = {.a = a, .d = d, .fw = fwd, .cfg = cfg}, *c = &c0;
    /* Testing aid: cfg->mutate = "exp" (mul, max, where, cumsum) breaks one
     * adjoint rule, so that tests can prove this checker fails on it.  The
     * CLI sets it from KAD_TEST_MUTATE; the library reads no environment. */
    AdSpec mspec = *spec;
    const char *mut = cfg->mutate;
    if (mut && *mut) {
        mspec.mutate = ad_mutation_by_name(mut);
        if (mspec.mutate < 0) {
            diag_error(d, fwd->loc, "unknown KAD_TEST_MUTATE '%s' (none, exp, mul, max, where, cumsum, max_drop, tape, libm, strong_zero, scan_jac)", mut);
            return NULL;
        }
        spec = &mspec;
    }
    /* saved: the backward of the saving forward, whose kad_saved buffer it runs first */
    const SavePlan *plan = cfg->saved ? save_plan(a, fwd) : NULL;
    if (cfg->saved && !plan) {
        diag_error(d, fwd->loc, "'%s' has no loop results to save: its backward recomputes everything (check it "
                                "without --saved)", fwd->name);
        return NULL;
    }
    if (plan) {
        mspec = *spec;
        mspec.save = plan;
        spec = &mspec;
    }
    const Program *bp = c->bp = ad_backward(a, d, plan ? save_kernel(a, fwd, plan, false) : fwd, spec);
    const Func *bw = c->bw = bp ? bp->main : NULL;
    if (!bw)
        return NULL;
    if (!setup(c, spec))
        return NULL;
    /* one writer per element of the outputs (ad_race.c), on the check's inputs */
    const RacePlan *race = race_plan(a, fwd, spec);
    if (race && !race_run(fwd, race, cfg->grid, c->fargs, c->np, IM_F64, d))
        return NULL;

    /* The backward run: forward buffers (then the saved buffer), then d_<name> gradient buffers. */
    int nb = c->np + (plan != NULL);
    c->bargs = arena_alloc(a, sizeof *c->bargs * (size_t)(bw->nparams + 1));
    memcpy(c->bargs, c->fargs, sizeof *c->bargs * (size_t)c->np);
    if (plan) { /* the saving forward fills it (fp32 elements held as doubles in IM_F64) */
        int64_t progs = cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
        size_t nbytes = (size_t)(progs * plan->slot) * sizeof(double);
        c->bargs[c->np] = (InterpArg){.data = arena_alloc(a, nbytes), .nbytes = (int64_t)nbytes};
        const Func *sv = save_kernel(a, fwd, plan, true);
        InterpArg *sargs = arena_alloc(a, sizeof *sargs * (size_t)(nb + 1));
        memcpy(sargs, c->bargs, sizeof *sargs * (size_t)nb);
        reset(c);
        if (!run(c, sv, sargs))
            return NULL;
    }
    for (int i = nb; i < plan_nargs(bp); i++) {
        const char *bn = bw->vals.v[bw->params[i]].name;
        for (int j = 0; bp->fold && j < bp->fold->n; j++)
            if (bp->fold->in[j].slot == i) /* the partials, in d_<x>'s place */
                bn = arena_printf(a, "d_%s", bp->fold->in[j].name);
        int k = bn && !strncmp(bn, "d_", 2) ? find_param(c, bn + 2, strlen(bn + 2)) : -1;
        ASSERT(k >= 0 && c->p[k].role);
        CParam *p = &c->p[k];
        if (p->role >= 2) /* in place (3): the backward turns it into the old value's gradient */
            memcpy(p->grad, p->dy, p->nbytes);
        else
            memset(p->grad, 0, p->nbytes);
        c->bargs[i] = (InterpArg){.data = p->grad, .nbytes = (int64_t)p->nbytes};
    }
    reset(c);
    if (!run_backward(c, c->bargs))
        return NULL;

    Buf rep = {.a = a};
    bool ok = true;
    if (spec->mutate)
        buf_printf(&rep, "note: adjoint rule mutated on purpose (KAD_TEST_MUTATE=%s)\n", mut);
    if (plan)
        buf_printf(&rep, "note: the backward of the saving forward (%lld saved elements per program)\n",
                   (long long)plan->slot);
    /* The contract: the backward writes only the input gradients. */
    for (int i = 0; i < c->np; i++) {
        CParam *p = &c->p[i];
        if (p->is_ptr && memcmp(p->work, p->base, p->nbytes)) {
            buf_printf(&rep, "%s: the backward kernel wrote this forward buffer: FAIL\n", p->name);
            ok = false;
        }
        if (p->role == 2 && memcmp(p->grad, p->dy, p->nbytes)) {
            buf_printf(&rep, "d_%s: the backward kernel wrote this output gradient: FAIL\n", p->name);
            ok = false;
        }
    }

    double rtol = cfg->rtol > 0 ? cfg->rtol : CHECK_RTOL;
    int ndir = cfg->directions > 0 ? cfg->directions : 4;
    int64_t limit = cfg->elem_limit ? cfg->elem_limit : 4096;
    Rng rng = {(cfg->seed ? cfg->seed : 1) ^ 0x5DEECE66Dull};
    for (int k = 0; k < c->np; k++) {
        CParam *p = &c->p[k];
        if (p->role != 1 && p->role != 3)
            continue;
        const double *g = p->grad, *x = p->base;
        double gnorm = 0, xmax = 0;
        for (int64_t j = 0; j < p->n; j++) {
            gnorm += g[j] * g[j];
            xmax = worse(xmax, fabs(x[j]));
        }
        gnorm = sqrt(gnorm);
        double h = 1e-6 * (xmax > 1e-6 ? xmax : 1e-6);

        double *u = arena_alloc(a, sizeof *u * (size_t)p->n);
        double dir_err = 0;
        for (int t = 0; t < ndir; t++) {
            double unorm = 0, lhs = 0, rhs;
            for (int64_t j = 0; j < p->n; j++) {
                u[j] = rng_uniform(&rng, -1, 1);
                unorm += u[j] * u[j];
                lhs += g[j] * u[j];
            }
            if (!fd(c, k, u, 0, h, &rhs))
                return NULL;
            double den = gnorm * sqrt(unorm);
            dir_err = worse(dir_err, rel(lhs - rhs, den > fabs(rhs) ? den : fabs(rhs)));
        }
        bool pk = dir_err <= rtol;
        buf_printf(&rep, "%s: %lld elements, |grad| %.3e, h %.1e: %d directions max rel err %.2e",
                   p->name, (long long)p->n, gnorm, h, ndir, dir_err);
        if (limit > 0 && p->n <= limit) {
            double abs_err = 0, gmax = 0, fmax = 0;
            for (int64_t j = 0; j < p->n; j++) {
                double fj;
                if (!fd(c, k, NULL, j, h, &fj))
                    return NULL;
                abs_err = worse(abs_err, fabs(g[j] - fj));
                gmax = worse(gmax, fabs(g[j]));
                fmax = worse(fmax, fabs(fj));
            }
            double el_err = rel(abs_err, gmax > fmax ? gmax : fmax);
            if (abs_err != abs_err)
                el_err = abs_err;
            pk = pk && el_err <= rtol;
            buf_printf(&rep, "; elements max abs err %.2e, max rel err %.2e", abs_err, el_err);
        } else {
            if (limit > 0)
                buf_printf(&rep, "; per-element check skipped (more than %lld elements)", (long long)limit);
            else
                buf_puts(&rep, "; per-element check off");
        }
        buf_printf(&rep, ": %s\n", pk ? "PASS" : "FAIL");
        ok = ok && pk;
    }
    buf_printf(&rep, "%s (rtol %.0e)\n", ok ? "PASS" : "FAIL", rtol);
    *passed = ok;
    return buf_str(&rep);
}
