/* kad.c -- the public API (include/kad.h) and the pipeline.
 *
 * kad_specialize is the one straight-line function that runs the stages in
 * order: parse (at kad_add_source), sema, verify, simplify, verify.  Each
 * entry point sets the arena's out-of-memory jump so that exhaustion
 * becomes an error instead of a crash.
 */
#include <stdlib.h>
#include <string.h>

#include "../include/kad.h"
#include "base/base.h"
#include "ir/ir.h"
#include "front/cuda.h"
#include "front/triton.h"
#include "analysis/analysis.h"
#include "plan/plan.h"
#include "ad/autodiff.h"
#include "emit/emit_cuda.h"
#include "emit/emit_triton.h"
#include "check/check.h"

struct kad_ctx {
    Arena *a;
    Diags d;
    Vec(Module *) mods;
    int64_t while_cap, tape_budget; /* kad_set_tape_options */
    Vec(struct CuUnit *) cuda; /* kad_add_cuda_source */
    Vec(const char *) cuda_dirs; /* kad_add_cuda_include_dir */
};

struct kad_kernel {
    kad_ctx *c;
    Program *p; /* the kernel and, for a backward, its host steps (a kernel alone: one launch) */
    Func *f;    /* p->main */
    const char *ir; /* cached text; reset when a pass changes f */
    const char *race_out;   /* the outputs race was planned for (NULL: none yet) */
    const RacePlan *race;   /* race_plan(f, race_out) */
};

/* Default byte limit of a context's arena: generous, but a bound. */
#define CTX_ARENA_LIMIT ((size_t)4 << 30)

kad_ctx *kad_ctx_new(void)
{
    Arena *a = arena_new(CTX_ARENA_LIMIT);
    if (!a)
        return NULL;
    jmp_buf oom;
    arena_set_oom(a, &oom);
    if (setjmp(oom)) {
        arena_free(a);
        return NULL;
    }
    kad_ctx *c = arena_alloc(a, sizeof *c);
    c->a = a;
    diag_init(&c->d, a);
    arena_set_oom(a, NULL);
    return c;
}

void kad_ctx_free(kad_ctx *c)
{
    if (c)
        arena_free(c->a);
}

const char *kad_version(void) { return KAD_VERSION; }

/* Brackets an API call: on arena exhaustion, control returns to the
 * setjmp with a nonzero value and the call reports an error. */
#define API_BEGIN(c, failval)                                           \
    jmp_buf oom_;                                                       \
    arena_set_oom((c)->a, &oom_);                                       \
    if (setjmp(oom_)) {                                                 \
        arena_set_oom((c)->a, NULL);                                    \
        (c)->d.nerrors++;                                               \
        return failval;                                                 \
    }
#define API_END(c) arena_set_oom((c)->a, NULL)

/* The base name of a path without its directory. */
static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Parses text and adds it as module modname (NULL: the file's stem). */
static int add_module(kad_ctx *c, const char *modname, const char *filename, const char *text)
{
    API_BEGIN(c, -1);
    const char *file = arena_strdup(c->a, filename);
    const char *copy = arena_strdup(c->a, text);
    diag_add_source(&c->d, file, copy);
    int before = c->d.nerrors;
    Module *m = parse_module_lazy(c->a, &c->d, file, copy);
    bool ok = m && c->d.nerrors == before;
    if (ok) {
        const char *base = base_name(file);
        m->is_pkg = modname && !strcmp(base, "__init__.py");
        if (modname) {
            m->name = arena_strdup(c->a, modname);
        } else {
            const char *dot = strrchr(base, '.');
            m->name = dot ? arena_strndup(c->a, base, (size_t)(dot - base)) : base;
        }
        /* a module added again under its name replaces the earlier one */
        int k = 0;
        while (k < c->mods.n && !(modname && !strcmp(c->mods.v[k]->name, modname)))
            k++;
        if (k < c->mods.n)
            c->mods.v[k] = m;
        else
            vec_push(c->a, c->mods, m);
    }
    API_END(c);
    return ok ? 0 : -1;
}

int kad_add_source(kad_ctx *c, const char *filename, const char *text)
{
    return add_module(c, NULL, filename, text);
}

static kad_kernel *kernel_new(kad_ctx *c, Program *p)
{
    kad_kernel *k = arena_alloc(c->a, sizeof *k);
    k->c = c;
    k->p = p;
    k->f = p->main;
    return k;
}

/* A kernel alone as a Program: one launch. */
static kad_kernel *kernel_of(kad_ctx *c, Func *f)
{
    Program *p = plan_new(c->a, f);
    plan_steps(p);
    return kernel_new(c, p);
}

/* The rest of the pipeline for a kernel a front end lowered (either front end): the IR verified,
 * simplified (unless KAD_NO_SIMPLIFY), verified again, as a kernel of one launch.  NULL after
 * errors in c->d. */
static kad_kernel *lowered(kad_ctx *c, Func *f, unsigned flags)
{
#ifdef KAD_CHECKED
    if (!ir_verify(f, &c->d))
        return NULL;
#endif
    if (!(flags & KAD_NO_SIMPLIFY) && !pass_run(f, "simplify", &c->d))
        return NULL;
#ifdef KAD_CHECKED
    if (!ir_verify(f, &c->d))
        return NULL;
#endif
    return kernel_of(c, f);
}

kad_kernel *kad_specialize(kad_ctx *c, const char *kernel, const char *sig, unsigned flags)
{
    API_BEGIN(c, NULL);
    kad_kernel *k = NULL;
    Signature s = {0};
    diag_add_source(&c->d, "<sig>", arena_strdup(c->a, sig ? sig : ""));
    if (!sig_parse(c->a, &c->d, sig ? sig : "", &s))
        goto out;
    SemaOptions opt = {.unroll_const_loops = (flags & KAD_UNROLL_CONST_LOOPS) != 0};
    Func *f = sema_kernel(c->a, &c->d, c->mods.v, c->mods.n, kernel, &s, &opt);
    k = f ? lowered(c, f, flags) : NULL;
out:
    API_END(c);
    return k;
}

kad_kernel *kad_parse_ir(kad_ctx *c, const char *filename, const char *text)
{
    API_BEGIN(c, NULL);
    kad_kernel *k = NULL;
    const char *file = arena_strdup(c->a, filename);
    const char *copy = arena_strdup(c->a, text);
    diag_add_source(&c->d, file, copy);
    Program *p = plan_parse(c->a, &c->d, file, copy);
    bool ok = p && ir_verify(p->main, &c->d);
    int n = ok ? plan_companions(p, NULL) : 0;
    const Func **ks = arena_alloc(c->a, sizeof *ks * (size_t)(n + 1));
    if (ok)
        plan_companions(p, ks);
    for (int i = 0; ok && i < n; i++)
        ok = ir_verify(ks[i], &c->d);
    if (ok)
        k = kernel_new(c, p);
    API_END(c);
    return k;
}

int kad_run_pass(kad_kernel *k, const char *pass)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, -1);
    bool ok = pass_run(k->f, pass, &c->d);
#ifdef KAD_CHECKED
    ok = ok && ir_verify(k->f, &c->d);
#endif
    k->ir = NULL;
    API_END(c);
    return ok ? 0 : -1;
}

const char *kad_kernel_ir(kad_kernel *k)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, "");
    if (!k->ir)
        k->ir = plan_to_string(c->a, k->p);
    API_END(c);
    return k->ir;
}

const char *kad_kernel_trusted(kad_kernel *k) { return k && k->p->trusted ? k->p->trusted : ""; }

int kad_kernel_nparams(const kad_kernel *k) { return plan_nargs(k->p); }

const char *kad_kernel_param_name(const kad_kernel *k, int i)
{
    if (i < 0 || i >= plan_nargs(k->p))
        return NULL;
    const char *n = k->f->vals.v[k->f->params[i]].name;
    return n ? n : "";
}

const char *kad_kernel_param_type(const kad_kernel *k, int i)
{
    if (i < 0 || i >= plan_nargs(k->p))
        return NULL;
    kad_ctx *c = k->c;
    API_BEGIN(c, NULL);
    Buf b = {.a = c->a};
    type_print(&b, ir_type(k->f, k->f->params[i]));
    API_END(c);
    return buf_str(&b);
}

int kad_run(kad_kernel *k, const int64_t grid[3], const kad_arg *args, int nargs, int mode)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, -1);
    int rc = -1;
    if (nargs != plan_nargs(k->p)) {
        diag_error(&c->d, k->f->loc, "kernel '%s' takes %d runtime arguments, %d given", k->f->name,
                   plan_nargs(k->p), nargs);
        goto out;
    }
    if (mode != KAD_RUN_AS_WRITTEN && mode != KAD_RUN_F64) {
        diag_error(&c->d, k->f->loc, "unknown interpreter mode %d", mode);
        goto out;
    }
    InterpArg *ia = arena_alloc(c->a, sizeof *ia * (size_t)(nargs ? nargs : 1));
    for (int i = 0; i < nargs; i++)
        ia[i] = (InterpArg){args[i].data, args[i].nbytes, args[i].i, args[i].f};
    if (plan_run(k->p, grid, ia, nargs, mode == KAD_RUN_F64 ? IM_F64 : IM_AS_WRITTEN, &c->d))
        rc = 0;
out:
    API_END(c);
    return rc;
}

const char *kad_diagnostics(kad_ctx *c)
{
    API_BEGIN(c, "error: out of memory\n");
    const char *s = diag_render(&c->d);
    API_END(c);
    return s;
}

void kad_clear_diagnostics(kad_ctx *c)
{
    c->d.list.n = 0;
    c->d.nerrors = 0;
}

/* ---- Reverse-mode AD ---- */

/* The AdSpec of comma-separated name lists (with c's tape options). */
static AdSpec ad_spec(const kad_ctx *c, Arena *a, const char *wrt, const char *out)
{
    AdSpec spec = {0};
    spec.while_cap = c->while_cap;
    spec.tape_budget = c->tape_budget;
    const char **w, **o;
    spec.nwrt = ad_split_names(a, wrt ? wrt : "", &w);
    spec.nouts = ad_split_names(a, out ? out : "", &o);
    spec.wrt = w;
    spec.outs = o;
    return spec;
}

kad_kernel *kad_grad(kad_kernel *k, const char *wrt, const char *out) { return kad_grad_ex(k, wrt, out, 0); }

/* The forward AD differentiates for flags: with KAD_GRAD_SAVED, k's with
 * the kad_saved parameter, the plan in spec->save; NULL after a diagnostic
 * when k has nothing to save. */
static const Func *grad_forward(kad_ctx *c, kad_kernel *k, unsigned flags, AdSpec *spec)
{
    if (!(flags & KAD_GRAD_SAVED))
        return k->f;
    const SavePlan *p = save_plan(c->a, k->f);
    if (!p) {
        diag_error(&c->d, k->f->loc, "'%s' has no loop results to save: its backward recomputes everything "
                                     "(build it without KAD_GRAD_SAVED)", k->f->name);
        return NULL;
    }
    spec->save = p;
    return save_kernel(c->a, k->f, p, false);
}

kad_kernel *kad_grad_ex(kad_kernel *k, const char *wrt, const char *out, unsigned flags)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, NULL);
    kad_kernel *g = NULL;
    AdSpec spec = ad_spec(c, c->a, wrt, out);
    spec.atomics = (flags & KAD_GRAD_ATOMICS) != 0;
    spec.trusted = (flags & KAD_GRAD_TRUSTED) != 0;
    const Func *fw = grad_forward(c, k, flags, &spec);
    Program *p = fw ? ad_backward(c->a, &c->d, fw, &spec) : NULL;
    if (p)
        g = kernel_new(c, p);
    API_END(c);
    return g;
}

const char *kad_check(kad_kernel *k, const kad_check_opts *o, int *passed)
{
    kad_ctx *c = k->c;
    *passed = 0;
    API_BEGIN(c, NULL);
    AdSpec spec = ad_spec(c, c->a, o->wrt, o->out);
    CheckConfig cfg = {
        .grid = {o->grid[0], o->grid[1] ? o->grid[1] : 1, o->grid[2] ? o->grid[2] : 1},
        .shapes = o->shapes, .args = o->args, .ranges = o->ranges, .seed = o->seed,
        .directions = o->directions, .elem_limit = o->elem_limit, .rtol = o->rtol,
        .mutate = o->mutate, .saved = o->saved != 0,
    };
    bool ok = false;
    const char *rep = check_gradients(c->a, &c->d, k->f, &spec, &cfg, &ok);
    *passed = ok;
    API_END(c);
    return rep;
}

const char *kad_kernel_triton(kad_kernel *k)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, NULL);
    Buf b = {.a = c->a};
    bool ok = emit_triton(&b, k->f, NULL, &c->d);
    API_END(c);
    return ok ? buf_str(&b) : NULL;
}

/* ---- The backward module ---- */

_Static_assert((int)KAD_ACCESS_LOAD == (int)AD_ACCESS_LOAD && (int)KAD_ACCESS_STORE == (int)AD_ACCESS_STORE,
               "access bits");

const char *kad_kernel_range_hints(const kad_kernel *k)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, "");
    Buf b = {.a = c->a};
    for (int i = 0; i < k->f->hints.n; i++) {
        const RangeHint *h = &k->f->hints.v[i];
        buf_printf(&b, "%s%s=%lld:%lld", i ? "," : "", h->name, (long long)h->lo, (long long)h->hi);
    }
    API_END(c);
    return buf_str(&b);
}

int kad_kernel_param_access(kad_kernel *k, int i)
{
    if (i < 0 || i >= k->f->nparams)
        return -1;
    kad_ctx *c = k->c;
    API_BEGIN(c, -1);
    int acc = ad_param_access(c->a, k->f, i);
    API_END(c);
    return acc;
}

const char *kad_grad_module(kad_kernel *k, const char *wrt, const char *out)
{
    return kad_grad_module_ex(k, wrt, out, 0);
}

const char *kad_grad_module_ex(kad_kernel *k, const char *wrt, const char *out, unsigned flags)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, NULL);
    const char *text = NULL;
    AdSpec spec = ad_spec(c, c->a, wrt, out);
    spec.atomics = (flags & KAD_GRAD_ATOMICS) != 0;
    spec.trusted = (flags & KAD_GRAD_TRUSTED) != 0;
    spec.grad_write = arena_alloc(c->a, sizeof *spec.grad_write * (size_t)(spec.nwrt + 1));
    spec.grad_when = arena_alloc(c->a, sizeof *spec.grad_when * (size_t)(spec.nwrt + 1));
    spec.grad_rmw = arena_alloc(c->a, sizeof *spec.grad_rmw * (size_t)(spec.nwrt + 1));
    spec.grad_first = arena_alloc(c->a, sizeof *spec.grad_first * (size_t)(spec.nwrt + 1));
    const Func *fw = grad_forward(c, k, flags, &spec);
    Program *bw = fw ? ad_backward(c->a, &c->d, fw, &spec) : NULL;
    Buf b = {.a = c->a};
    if (bw && emit_triton_backward(&b, fw, bw, &spec, (flags & KAD_GRAD_KERNELS_ONLY) != 0, &c->d))
        text = buf_str(&b);
    API_END(c);
    return text;
}

int kad_check_launch(kad_kernel *k, const int64_t grid[3], const int64_t *iargs, int n)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, -1);
    int np = k->f->nparams;
    int64_t *ia = arena_alloc(c->a, sizeof *ia * (size_t)(np + 1));
    for (int i = 0; i < n && i < np; i++)
        ia[i] = iargs[i];
    int rc = func_guards_hold(k->p->guards.v, k->p->guards.n, ia, grid, &c->d) ? 0 : -1;
    API_END(c);
    return rc;
}

/* ---- One writer per element (ad_race.c) ---- */

/* k's race plan for the outputs out, kept for the last out asked. */
static const RacePlan *race_of(kad_kernel *k, const char *out)
{
    if (!k->race_out || strcmp(k->race_out, out)) {
        AdSpec spec = ad_spec(k->c, k->c->a, "", out);
        k->race = race_plan(k->c->a, k->f, &spec);
        k->race_out = arena_strdup(k->c->a, out);
#ifdef KAD_CHECKED
        if (k->race && k->race->kernel && !ir_verify(k->race->kernel, &k->c->d))
            diag_note(&k->c->d, k->f->loc, "kad bug: the one-writer check kernel of '%s' is invalid", k->f->name);
#endif
    }
    return k->race;
}

int kad_race_check(kad_kernel *k, const char *out, const int64_t grid[3], const kad_arg *args, int nargs, int mode)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, -1);
    int rc = 0;
    const RacePlan *p = race_of(k, out ? out : "");
    if (p) {
        InterpArg *ia = arena_alloc(c->a, sizeof *ia * (size_t)(nargs ? nargs : 1));
        for (int i = 0; i < nargs; i++)
            ia[i] = (InterpArg){args[i].data, args[i].nbytes, args[i].i, args[i].f};
        if (!race_run(k->f, p, grid, ia, nargs, mode == KAD_RUN_F64 ? IM_F64 : IM_AS_WRITTEN, &c->d))
            rc = -1;
    }
    API_END(c);
    return rc;
}

const char *kad_race_module(kad_kernel *k, const char *out)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, NULL);
    const char *text = "";
    const RacePlan *p = race_of(k, out ? out : "");
    if (p) {
        Buf b = {.a = c->a};
        text = emit_triton_race(&b, k->f, p, &c->d) ? buf_str(&b) : NULL;
    }
    API_END(c);
    return text;
}

/* ---- Saved loop results ---- */

long long kad_save_slot(kad_kernel *k)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, -1);
    const SavePlan *p = save_plan(c->a, k->f);
    API_END(c);
    return p ? p->slot : 0;
}

/* The saving forward of k and its plan; NULL after a diagnostic. */
static Func *saving(kad_ctx *c, kad_kernel *k, const SavePlan **pp)
{
    const SavePlan *p = save_plan(c->a, k->f);
    if (!p) {
        diag_error(&c->d, k->f->loc, "'%s' has no loop results to save", k->f->name);
        return NULL;
    }
    *pp = p;
    Func *sv = save_kernel(c->a, k->f, p, true);
    return ir_verify(sv, &c->d) ? sv : NULL;
}

kad_kernel *kad_save_forward(kad_kernel *k)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, NULL);
    const SavePlan *p;
    Func *sv = saving(c, k, &p);
    kad_kernel *g = sv ? kernel_of(c, sv) : NULL;
    API_END(c);
    return g;
}

const char *kad_save_module(kad_kernel *k)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, NULL);
    const char *text = NULL;
    const SavePlan *p;
    Func *sv = saving(c, k, &p);
    Buf b = {.a = c->a};
    if (sv && emit_triton_saving(&b, k->f, sv, p->slot, &c->d))
        text = buf_str(&b);
    API_END(c);
    return text;
}

const char *kad_grad_source(kad_ctx *c, const char *kernel, const char *sig, const char *wrt,
                            const char *out, unsigned flags)
{
    kad_kernel *k = kad_specialize(c, kernel, sig, flags);
    return k ? kad_grad_module(k, wrt, out) : NULL;
}

/* ---- Forward mode ---- */

kad_kernel *kad_jvp(kad_kernel *k, const char *wrt, const char *out)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, NULL);
    kad_kernel *g = NULL;
    AdSpec spec = ad_spec(c, c->a, wrt, out);
    Func *f = ad_forward(c->a, &c->d, k->f, &spec);
    if (f)
        g = kernel_of(c, f);
    API_END(c);
    return g;
}

const char *kad_jvp_module(kad_kernel *k, const char *wrt, const char *out)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, NULL);
    const char *text = NULL;
    AdSpec spec = ad_spec(c, c->a, wrt, out);
    Func *jv = ad_forward(c->a, &c->d, k->f, &spec);
    Buf b = {.a = c->a};
    if (jv && emit_triton_jvp(&b, k->f, jv, &spec, &c->d))
        text = buf_str(&b);
    API_END(c);
    return text;
}

/* ---- CUDA C (docs/EMIT.md, "CUDA C") ---- */

const char *kad_kernel_cuda(kad_kernel *k, int hip)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, NULL);
    Buf b = {.a = c->a};
    EmitCudaOpts o = {.hip = hip != 0};
    bool ok = emit_cuda_module(&b, c->a, &c->d, k->f, &o);
    API_END(c);
    return ok ? buf_str(&b) : NULL;
}

const char *kad_grad_module_cuda(kad_kernel *k, const char *wrt, const char *out, unsigned flags, int hip)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, NULL);
    const char *text = NULL;
    AdSpec spec = ad_spec(c, c->a, wrt, out);
    spec.atomics = (flags & KAD_GRAD_ATOMICS) != 0;
    spec.grad_write = arena_alloc(c->a, sizeof *spec.grad_write * (size_t)(spec.nwrt + 1));
    spec.grad_when = arena_alloc(c->a, sizeof *spec.grad_when * (size_t)(spec.nwrt + 1));
    spec.grad_rmw = arena_alloc(c->a, sizeof *spec.grad_rmw * (size_t)(spec.nwrt + 1));
    spec.grad_first = arena_alloc(c->a, sizeof *spec.grad_first * (size_t)(spec.nwrt + 1));
    const Func *fw = grad_forward(c, k, flags, &spec);
    if (fw) /* a fold's zeroing loop one element per thread of the module's blocks */
        spec.fold_zero_block = emit_cuda_lane_count(fw);
    Program *bw = fw ? ad_backward(c->a, &c->d, fw, &spec) : NULL;
    Buf b = {.a = c->a};
    EmitCudaOpts o = {.hip = hip != 0};
    if (bw && emit_cuda_backward(&b, c->a, &c->d, fw, bw, &spec, &o))
        text = buf_str(&b);
    API_END(c);
    return text;
}

const char *kad_jvp_module_cuda(kad_kernel *k, const char *wrt, const char *out, int hip)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, NULL);
    const char *text = NULL;
    AdSpec spec = ad_spec(c, c->a, wrt, out);
    Func *jv = ad_forward(c->a, &c->d, k->f, &spec);
    Buf b = {.a = c->a};
    EmitCudaOpts o = {.hip = hip != 0};
    if (jv && emit_cuda_jvp(&b, c->a, &c->d, k->f, jv, &spec, &o))
        text = buf_str(&b);
    API_END(c);
    return text;
}

/* ---- Named modules (docs/LANGUAGE.md, "Imports") ---- */

int kad_add_module(kad_ctx *c, const char *modname, const char *filename, const char *text)
{
    if (!modname || !*modname)
        return add_module(c, NULL, filename, text);
    return add_module(c, modname, filename, text);
}

static Module *module_named(kad_ctx *c, const char *modname)
{
    for (int i = c->mods.n - 1; i >= 0; i--)
        if (!strcmp(c->mods.v[i]->name, modname))
            return c->mods.v[i];
    return NULL;
}

int kad_set_global(kad_ctx *c, const char *modname, const char *name, const char *value)
{
    API_BEGIN(c, -1);
    int rc = -1;
    const char *file = arena_printf(c->a, "<host value of %s.%s>", modname, name);
    const char *text = arena_printf(c->a, "%s = %s\n", name, value);
    diag_add_source(&c->d, file, text);
    Module *m = module_named(c, modname);
    Loc loc = {file, 1, 1};
    if (!m) {
        diag_error(&c->d, loc, "kad_set_global: no module '%s' was added", modname);
        goto out;
    }
    int before = c->d.nerrors;
    Module *v = parse_module(c->a, &c->d, file, text);
    if (c->d.nerrors != before)
        goto out;
    if (!v || v->globals.n != 1 || strcmp(v->globals.v[0].name, name)) {
        diag_error(&c->d, loc, "kad_set_global: '%s' is not a value kad can read", value);
        goto out;
    }
    for (int k = 0; k < m->host.n; k++)
        if (!strcmp(m->host.v[k].name, name)) {
            m->host.v[k] = v->globals.v[0];
            rc = 0;
            goto out;
        }
    vec_push(c->a, m->host, v->globals.v[0]);
    rc = 0;
out:
    API_END(c);
    return rc;
}

const char *kad_module_imports(kad_ctx *c, const char *modname)
{
    API_BEGIN(c, NULL);
    const char *res = NULL;
    Module *m = module_named(c, modname);
    if (m) {
        Buf b = {.a = c->a};
        Vec(const char *) seen = {0};
        for (int i = 0; i < m->imports.n; i++) {
            const char *abs = sema_abs_name(c->a, m, m->imports.v[i].qual);
            if (!abs)
                continue;
            /* every prefix: importing a.b.c imports a and a.b too */
            for (const char *p = abs;; p++) {
                if (*p == '.' || !*p) {
                    const char *pre = arena_strndup(c->a, abs, (size_t)(p - abs));
                    int k = 0;
                    while (k < seen.n && strcmp(seen.v[k], pre))
                        k++;
                    if (k == seen.n) {
                        vec_push(c->a, seen, pre);
                        buf_printf(&b, "%s\n", pre);
                    }
                }
                if (!*p)
                    break;
            }
        }
        res = buf_str(&b);
    }
    API_END(c);
    return res;
}

/* ---- Determinism audit ---- */

const char *kad_audit(kad_kernel *k)
{
    kad_ctx *c = k->c;
    API_BEGIN(c, NULL);
    const char *text = audit_report(c->a, k->f);
    API_END(c);
    return text;
}

int kad_set_tape_options(kad_ctx *c, long long while_cap, long long tape_budget)
{
    if (while_cap < 0 || while_cap > INT32_MAX || tape_budget < 0)
        return -1;
    c->while_cap = while_cap;
    c->tape_budget = tape_budget;
    return 0;
}

const char *kad_tape_report(kad_kernel *g)
{
    kad_ctx *c = g->c;
    API_BEGIN(c, NULL);
    const char *text = tape_report(c->a, g->p);
    API_END(c);
    return text;
}

/* ---- CUDA C / HIP kernels ---- */

int kad_add_cuda_include_dir(kad_ctx *c, const char *dir)
{
    API_BEGIN(c, -1);
    vec_push(c->a, c->cuda_dirs, arena_strdup(c->a, dir));
    API_END(c);
    return 0;
}

int kad_add_cuda_source(kad_ctx *c, const char *filename, const char *text)
{
    API_BEGIN(c, -1);
    const char *file = arena_strdup(c->a, filename);
    const char *copy = arena_strdup(c->a, text);
    diag_add_source(&c->d, file, copy);
    int before = c->d.nerrors, n = 0;
    CuTok *toks = cu_lex(c->a, &c->d, file, copy, c->cuda_dirs.v, c->cuda_dirs.n, &n);
    CuUnit *u = c->d.nerrors == before ? cu_parse(c->a, &c->d, file, toks, n) : NULL;
    bool ok = u && c->d.nerrors == before;
    if (ok)
        vec_push(c->a, c->cuda, u);
    API_END(c);
    return ok ? 0 : -1;
}

/* The same stages as kad_specialize's after the front end (lowered). */
kad_kernel *kad_specialize_cuda(kad_ctx *c, const char *kernel, const char *targs, const int block[3],
                                unsigned flags)
{
    API_BEGIN(c, NULL);
    CuSpec spec = {.targs = targs && *targs ? arena_strdup(c->a, targs) : NULL};
    for (int i = 0; i < 3; i++)
        spec.block[i] = block ? block[i] : 1;
    Func *f = cu_lower(c->a, &c->d, c->cuda.v, c->cuda.n, kernel, &spec);
    kad_kernel *k = f ? lowered(c, f, flags) : NULL;
    API_END(c);
    return k;
}
