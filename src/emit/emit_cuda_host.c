/* emit_cuda_host.c -- CUDA C / HIP modules: header, prelude, kernel, host launcher.
 *
 * Job: wrap emit_cuda_kernel's kernel into a translation unit that compiles
 * alone (nvcc, or hipcc with EmitCudaOpts.hip) and a host function
 * `extern "C" int launch_<kernel>(grid_x, grid_y, grid_z, params..., stream)`
 * that launches it with the lane count as blockDim.x and returns the launch's
 * error code (0: cudaSuccess).  For a backward the launcher also does the
 * plan's host steps that kad prints here: it refuses a launch that breaks a
 * guard, computes the plain-store flags from the launch's arguments and grid
 * (the access analysis's conditions, printed as C), and zero-fills the input
 * gradients, and runs the kernel on a private copy of each output gradient
 * it reads and clears (STEP_COPY); a fold (STEP_FOLD) allocates the
 * partials, launches the folded grid and then a sum kernel printed here
 * (the rows added in a fixed order).  Plans with more steps (gemm, gather,
 * some tapes, spread, a fold with tapes) are refused with a located error
 * naming them.
 *
 * Requires: bwd = ad_backward(fwd, spec) (params: fwd's, spec->nouts output
 * gradients, spec->nwrt input gradients, then the flags); jv = ad_forward.
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "plan/plan.h"
#include "ad/autodiff.h"
#include "emit/emit_cuda.h"

/* The comment line between a module's kernels and its host part. */
#define CU_LAUNCHER_MARK "// ---- the launcher ---------------------------------------------------------------------------"

/* "cuda" or "hip" followed by the rest of the runtime name. */
static const char *rt(Arena *a, const EmitCudaOpts *o, const char *rest)
{
    return arena_printf(a, "%s%s", o->hip ? "hip" : "cuda", rest);
}

/* The C names of f's parameters (as emit_cuda_kernel names them: cuda_ident of the IR names). */
static const char **param_names(Arena *a, const Func *f)
{
    const char **irn = ir_names(a, f);
    const char **n = arena_alloc(a, sizeof *n * (size_t)(f->nparams + 1));
    for (int i = 0; i < f->nparams; i++) {
        const char *s = cuda_ident(a, irn[f->params[i]]);
        for (int j = 0; j < i; j++) /* as emit_cuda_kernel's fresh(): a repeated name gets _1, ... */
            if (!strcmp(n[j], s))
                s = arena_printf(a, "%s_1", s);
        n[i] = s;
    }
    return n;
}

static const char *param_type(Arena *a, const Func *f, int i, bool hip)
{
    Type t = f->vals.v[f->params[i]].ty;
    Dtype dt = t.dt == DT_PTR ? (Dtype)t.elem : (Dtype)t.dt;
    const char *s = cuda_dtype(dt, hip);
    if (!s)
        return NULL;
    return t.dt == DT_PTR ? arena_printf(a, "%s *", s) : arena_printf(a, "%s ", s);
}

/* "x_ptr=*fp32, n=i32, BLOCK=1024": the signature f was specialized for. */
static const char *sig_text(Arena *a, const Func *f, int nparams)
{
    const char **irn = ir_names(a, f);
    Buf b = {.a = a};
    for (int i = 0; i < nparams; i++) {
        buf_printf(&b, "%s%s=", i ? ", " : "", irn[f->params[i]]);
        type_print(&b, f->vals.v[f->params[i]].ty);
    }
    for (int i = 0; i < f->consts.n; i++)
        buf_printf(&b, "%s%s=%s", b.len ? ", " : "", f->consts.v[i].name, f->consts.v[i].value);
    return buf_str(&b);
}

/* Appends text as // comment lines of at most ~100 characters (continuations indented). */
static void comment(Buf *out, Arena *a, const char *text)
{
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        const char *lead = "";
        while (n > 96) { /* break at the last space before the limit */
            size_t k = 96;
            while (k > 20 && p[k] != ' ')
                k--;
            if (p[k] != ' ')
                break;
            buf_printf(out, "// %s%s\n", lead, arena_strndup(a, p, k));
            p += k + 1;
            n -= k + 1;
            lead = "    ";
        }
        buf_printf(out, "// %s%s\n", lead, arena_strndup(a, p, n));
        p += n + (nl ? 1 : 0);
    }
}

/* ---- conditions of a launch, as C ---- */

/* The launch's grid, as the conditions of the main kernel name it. */
static const char *const main_grid[3] = {"grid_x", "grid_y", "grid_z"};

/* Monomial mo of analysis A as C (int64: the first symbol cast) without its sign, its
 * coefficient's magnitude included, grid axis k printed as grid[k]; NULL when a symbol is not an
 * int parameter or the grid. */
static const char *mono_c(Arena *a, Access *A, const AccMono *mo, const char *const *names,
                          const char *const *grid)
{
    Buf t = {.a = a};
    int nsym = 0;
    long long k = (long long)mo->k, ak = k < 0 ? -k : k;
    if (ak != 1)
        buf_printf(&t, "%lldLL", ak);
    for (int s = 0; s < ACC_NSYM; s++) {
        if (!mo->s[s])
            continue;
        int prm = -1, axis = -1, kind = access_sym(A, mo->s[s], &prm, &axis);
        const char *cast = nsym || ak != 1 ? "" : "(int64_t)";
        const char *sep = t.len ? " * " : "";
        if (kind == 1)
            buf_printf(&t, "%s%s%s", sep, cast, names[prm]);
        else if (kind == 2)
            buf_printf(&t, "%s%s%s", sep, cast, grid[axis]);
        else
            return NULL;
        nsym++;
    }
    if (!nsym && ak == 1)
        buf_puts(&t, "1LL");
    return buf_str(&t);
}

/* p >= 0 of analysis A as C over the launcher's names, the terms of p moved to the side where
 * their sign is +: `(int64_t)stride >= n_cols`, `(int64_t)grid_y <= 1`; NULL as mono_c. */
static const char *ineq_c(Arena *a, Access *A, const AccPoly *p, const char *const *names,
                          const char *const *grid)
{
    Buf pos = {.a = a}, neg = {.a = a};
    bool pos_sym = false;
    for (int m = 0; m < p->n; m++) {
        const AccMono *mo = &p->m[m];
        if (!mo->k)
            continue;
        const char *t = mono_c(a, A, mo, names, grid);
        if (!t)
            return NULL;
        Buf *side = mo->k > 0 ? &pos : &neg;
        buf_printf(side, "%s%s", side->len ? " + " : "", t);
        bool sym = mo->s[0] != 0;
        if (mo->k > 0)
            pos_sym |= sym;
    }
    const char *P = pos.len ? buf_str(&pos) : "0", *N = neg.len ? buf_str(&neg) : "0";
    if (!pos_sym && neg.len)
        return arena_printf(a, "%s <= %s", N, P);
    return arena_printf(a, "%s >= %s", P, N);
}

/* What poly_c prints with. */
typedef struct PolyCtx {
    Arena *a;
    const char *const *names;
} PolyCtx;

/* Polynomial p of analysis A as C over the launcher's names and its grid (an AccPolyText; ctx a
 * PolyCtx), or NULL as mono_c. */
static const char *poly_c(void *ctx, Access *A, const AccPoly *p)
{
    const PolyCtx *pc = ctx;
    Buf b = {.a = pc->a};
    for (int m = 0; m < p->n; m++) {
        const AccMono *mo = &p->m[m];
        if (!mo->k)
            continue;
        const char *t = mono_c(pc->a, A, mo, pc->names, main_grid);
        if (!t)
            return NULL;
        buf_printf(&b, "%s%s", mo->k < 0 ? (b.len ? " - " : "-") : (b.len ? " + " : ""), t);
    }
    return b.len ? arena_printf(pc->a, "(%s)", buf_str(&b)) : "0LL";
}

/* Condition c (every clause holds; a clause: one of its polynomials >= 0) as C, over the launcher's
 * names and grid (main_grid, or a gather kernel's); NULL when it names a value the launcher does not
 * have. */
static const char *cond_c(Arena *a, Access *A, const AccCond *c, const char *const *names,
                          const char *const *grid)
{
    Buf b = {.a = a};
    if (!c->n)
        return "true";
    for (int i = 0; i < c->n; i++) {
        const AccClause *cl = &c->c[i];
        if (i)
            buf_puts(&b, " && ");
        if (cl->n > 1 && c->n > 1)
            buf_putc(&b, '(');
        for (int j = 0; j < cl->n; j++) {
            const char *p = ineq_c(a, A, &cl->p[j], names, grid);
            if (!p)
                return NULL;
            buf_printf(&b, "%s%s", j ? " || " : "", p);
        }
        if (cl->n > 1 && c->n > 1)
            buf_putc(&b, ')');
    }
    return buf_str(&b);
}

/* ---- launchers ---- */

/* Prints the launcher's signature line and its parameter checks (ranges); names: the C names of
 * the first nargs parameters of f; extra: more parameters after them ("" or ", int64_t n");
 * fold: a backward's (Program.fold), or NULL. */
static void launcher_open(Buf *out, Arena *a, const Func *f, const FoldPlan *fold, const char *lname,
                          const char *const *names, int nargs, const char *extra, const EmitCudaOpts *o)
{
    buf_printf(out, "extern \"C\" int %s(unsigned grid_x, unsigned grid_y, unsigned grid_z", lname);
    for (int i = 0; i < nargs; i++) {
        const char *ty = param_type(a, f, i, o->hip);
        for (int j = 0; fold && j < fold->n; j++) /* a folded gradient: the caller's dtype, not the partials' */
            if (fold->in[j].slot == i)
                ty = arena_printf(a, "%s *", cuda_dtype(fold->in[j].dt, o->hip));
        buf_printf(out, ",\n        %s%s", ty, names[i]);
    }
    buf_printf(out, "%s,\n        %s stream)\n{\n", extra, rt(a, o, "Stream_t"));
    for (int i = 0; i < f->ranges.n; i++) {
        const ParamRange *r = &f->ranges.v[i];
        if (r->param < nargs)
            buf_printf(out, "    if (%s < %lldLL || %s > %lldLL) // specialized for this range\n"
                            "        return (int)%s;\n",
                       names[r->param], (long long)r->lo, names[r->param], (long long)r->hi,
                       rt(a, o, "ErrorInvalidValue"));
    }
}

/* The launch of kernel kname with L threads per block and f's parameters (names), then the return. */
/* One launch statement of kname (grid: the dim3's arguments, block: blockDim.x), indented by ind. */
static void launch_stmt(Buf *out, const char *ind, const char *kname, const char *grid, int block, const char *args,
                        const EmitCudaOpts *o)
{
    if (o->hip)
        buf_printf(out, "%shipLaunchKernelGGL(%s, dim3(%s), dim3(%d), 0, stream, %s);\n", ind, kname, grid, block,
                   args);
    else
        buf_printf(out, "%s%s<<<dim3(%s), %d, 0, stream>>>(%s);\n", ind, kname, grid, block, args);
}

/* The launch of kernel kname with L threads per block and f's parameters (names), then the return.
 * grid: the launch's dim3 arguments (NULL: the forward's grid); when: NULL (always), a C condition
 * the launch is under, or "" (the kernel is not launched: a comment says so); then: launches after
 * it (each skipped once errl holds an error), post: the frees before the return. */
static void launcher_launch_grid(Buf *out, Arena *a, const Func *f, const char *kname, int L,
                                 const char *const *names, const char *grid, const char *when, const char *pre,
                                 const char *then, const char *post, const EmitCudaOpts *o)
{
    Buf args = {.a = a};
    for (int i = 0; i < f->nparams; i++)
        buf_printf(&args, "%s%s", i ? ", " : "", names[i]);
    buf_puts(out, "    if (grid_x == 0 || grid_y == 0 || grid_z == 0)\n        return 0; // no programs\n");
    buf_puts(out, pre);
    if (when && !*when)
        buf_printf(out, "    // %s has nothing left to do: the gather kernels write every input gradient\n", kname);
    else if (when)
        buf_printf(out, "    if (%s) // else the gather kernels write every input gradient\n", when);
    if (!when || *when)
        launch_stmt(out, when ? "        " : "    ", kname, grid ? grid : "grid_x, grid_y, grid_z", L,
                    buf_str(&args), o);
    if (!*post && !*then) {
        buf_printf(out, "    return (int)%s();\n}\n", rt(a, o, "GetLastError"));
        return;
    }
    buf_printf(out, "    %s errl = %s();\n%s%s    return (int)errl;\n}\n", rt(a, o, "Error_t"),
               rt(a, o, "GetLastError"), then, post);
}

static void launcher_launch_with(Buf *out, Arena *a, const Func *f, const char *kname, int L,
                                 const char *const *names, const char *pre, const char *post, const EmitCudaOpts *o)
{
    launcher_launch_grid(out, a, f, kname, L, names, NULL, NULL, pre, "", post, o);
}

static void launcher_launch(Buf *out, Arena *a, const Func *f, const char *kname, int L, const char *const *names,
                            const EmitCudaOpts *o)
{
    launcher_launch_with(out, a, f, kname, L, names, "", "", o);
}

static void header(Buf *out, Arena *a, const char *title, const Func *f, int nsig, int L, const char *more,
                   const EmitCudaOpts *o)
{
    Buf t = {.a = a};
    buf_printf(&t, "%s, generated by kad %s from the specialized IR as %s.\n", title, KAD_VERSION_STRING,
               o->hip ? "HIP" : "CUDA C");
    buf_printf(&t, "Specialized for: %s\n", sig_text(a, f, nsig));
    buf_printf(&t, "The constexprs are built into the body. One thread per lane: blockDim.x = %d, thread i holding "
                   "lane i of every tile; scalars are computed alike by every thread.\n", L);
    if (more)
        buf_puts(&t, more);
    comment(out, a, buf_str(&t));
    buf_putc(out, '\n');
}

bool emit_cuda_module(Buf *out, Arena *a, Diags *d, const Func *f, const EmitCudaOpts *o)
{
    static const EmitCudaOpts none = {0};
    o = o ? o : &none;
    Buf k = {.a = a};
    int L = 0;
    unsigned h = 0;
    if (!emit_cuda_kernel(&k, a, d, f, o, &L, &h))
        return false;
    const char *kname = cuda_ident(a, o->name ? o->name : f->name);
    header(out, a, arena_printf(a, "Kernel %s", f->name), f, f->nparams, L,
           arena_printf(a, "Launch it with launch_%s(grid_x, grid_y, grid_z, its arguments, stream), which returns "
                           "the launch's error code (0: success).\n", kname), o);
    emit_cuda_prelude(out, o, h);
    buf_puts(out, buf_str(&k));
    buf_printf(out, "\n%s\n\n", CU_LAUNCHER_MARK);
    const char **names = param_names(a, f);
    const char *lname = arena_printf(a, "launch_%s", kname);
    launcher_open(out, a, f, NULL, lname, names, f->nparams, "", o);
    launcher_launch(out, a, f, kname, L, names, o);
    return true;
}

/* Tape trip count e (a TapeExpr over the contract's int parameters and the grid) as C over the
 * launcher's names: every operation a kad_tx_* helper that sets kad_bad on a division by zero or an
 * overflow (tape_expr_bound's refusals); NULL when it names the program id (a per-program count). */
static const char *tape_c(Arena *a, const TapeExpr *e, const Func *f, const char *const *names)
{
    static const char *const fn[] = {[TX_ADD] = "add", [TX_SUB] = "sub", [TX_MUL] = "mul", [TX_DIV] = "div",
                                     [TX_REM] = "rem", [TX_MAX] = "max", [TX_MIN] = "min", [TX_CDIV] = "cdiv"};
    switch (e->op) {
    case TX_CONST: return arena_printf(a, "%lldLL", (long long)e->v);
    case TX_PARAM: return e->v >= 0 && e->v < f->nparams ? arena_printf(a, "(int64_t)%s", names[e->v]) : NULL;
    case TX_GRID: return e->v >= 0 && e->v < 3 ? arena_printf(a, "(int64_t)grid_%c", "xyz"[e->v]) : NULL;
    case TX_ADD: case TX_SUB: case TX_MUL: case TX_DIV: case TX_REM: case TX_MAX: case TX_MIN: case TX_CDIV: {
        const char *x = tape_c(a, e->x, f, names), *y = x ? tape_c(a, e->y, f, names) : NULL;
        return y ? arena_printf(a, "kad_tx_%s(%s, %s, &kad_bad)", fn[e->op], x, y) : NULL;
    }
    default: return NULL;
    }
}

/* The launcher's helpers for tape sizes (printed once, before a launcher with tapes). */
static const char CU_TAPE_HELPERS[] =
    "// Tape sizes: the trip counts' int64 arithmetic as the kernel's (truncating division); a division by\n"
    "// zero or an overflow sets *bad and the launch is refused (helpers a launch does not use are marked unused).\n"
    "__attribute__((unused)) static inline int64_t kad_tx_add(int64_t a, int64_t b, bool *bad)\n"
    "{\n    int64_t r = 0;\n    if (__builtin_add_overflow(a, b, &r))\n        *bad = true;\n    return r;\n}\n"
    "__attribute__((unused)) static inline int64_t kad_tx_sub(int64_t a, int64_t b, bool *bad)\n"
    "{\n    int64_t r = 0;\n    if (__builtin_sub_overflow(a, b, &r))\n        *bad = true;\n    return r;\n}\n"
    "__attribute__((unused)) static inline int64_t kad_tx_mul(int64_t a, int64_t b, bool *bad)\n"
    "{\n    int64_t r = 0;\n    if (__builtin_mul_overflow(a, b, &r))\n        *bad = true;\n    return r;\n}\n"
    "__attribute__((unused)) static inline int64_t kad_tx_div(int64_t a, int64_t b, bool *bad)\n"
    "{\n    if (b == 0 || (a == INT64_MIN && b == -1)) {\n        *bad = true;\n        return 0;\n    }\n"
    "    return a / b;\n}\n"
    "__attribute__((unused)) static inline int64_t kad_tx_rem(int64_t a, int64_t b, bool *bad)\n"
    "{\n    if (b == 0 || (a == INT64_MIN && b == -1)) {\n        *bad = true;\n        return 0;\n    }\n"
    "    return a % b;\n}\n"
    "__attribute__((unused)) static inline int64_t kad_tx_max(int64_t a, int64_t b, bool *bad) { return (void)bad, a > b ? a : b; }\n"
    "__attribute__((unused)) static inline int64_t kad_tx_min(int64_t a, int64_t b, bool *bad) { return (void)bad, a < b ? a : b; }\n"
    "__attribute__((unused)) static inline int64_t kad_tx_cdiv(int64_t a, int64_t b, bool *bad)\n"
    "{\n    if (b <= 0 || a < 0 || a > INT64_MAX - b) {\n        *bad = true;\n        return 0;\n    }\n"
    "    return (a + b - 1) / b;\n}\n"
    "// What a launcher returns when a `while` loop ran past the capacity of its tape (no runtime error's code):\n"
    "// the gradients would come from a partial tape, so there are none; raise the capacity (--while-cap).\n"
    "#define KAD_TAPE_OVERFLOW (-2)\n"
    "// Elements of a tape: trips (clamped at 0) per program and slot elements per iteration and program.\n"
    "static inline int64_t kad_tape_numel(int64_t trips, unsigned gx, unsigned gy, unsigned gz, int64_t slot,\n"
    "                                     bool *bad)\n"
    "{\n    int64_t n = kad_tx_mul(kad_tx_mul(kad_tx_mul(kad_tx_max(trips, 0, bad), gx, bad), gy, bad), gz, bad);\n"
    "    n = kad_tx_mul(n, slot, bad);\n    if (n > (INT64_MAX >> 4))\n        *bad = true;\n    return n;\n}\n\n";

/* ---- the fold (write/fold.c's plan, as plan_run's run_fold runs it) ---- */

enum { CU_FOLD_SUM_THREADS = 256 };

/* The fold's parameters after the flags and tapes: a span per input, then a program count per
 * folded axis (0 without a fold). */
static int fold_nparams(const FoldPlan *pl)
{
    int n = pl ? pl->n : 0;
    for (int k = 0; pl && k < 3; k++)
        n += (pl->axes >> k) & 1u;
    return n;
}

/* The sum kernel's name for input j: one kernel per pair of (partials, gradient) dtypes, the first
 * pair's `<kname>_sum`, another's suffixed with the gradient's dtype. */
static const char *fold_sum_name(Arena *a, const FoldPlan *pl, int j, const char *kname)
{
    bool same0 = pl->in[j].dt == pl->in[0].dt && pl->in[j].pdt == pl->in[0].pdt;
    return same0 ? arena_printf(a, "%s_sum", kname) : arena_printf(a, "%s_sum_%s", kname, dtype_name(pl->in[j].dt));
}

/* The fold's sum kernels: d = the rows of its partials added in the order 0, 1, ..., rows - 1, one
 * thread per element of the span (deterministic; the launcher zero-fills nothing for them, every
 * element is stored).  False after a located error (a gradient dtype without a conversion). */
static bool fold_sum_kernels(Buf *out, Arena *a, Diags *d, const Program *P, const char *kname,
                             const EmitCudaOpts *o)
{
    const Func *bwd = P->main;
    const FoldPlan *pl = P->fold;
    for (int j = 0; j < pl->n; j++) {
        const FoldInput *in = &pl->in[j];
        bool seen = false;
        for (int i = 0; i < j && !seen; i++)
            seen = pl->in[i].dt == in->dt && pl->in[i].pdt == in->pdt;
        if (seen)
            continue;
        const char *pt = cuda_dtype(in->pdt, o->hip), *dt = cuda_dtype(in->dt, o->hip), *store = NULL;
        if (in->dt == in->pdt)
            store = "acc";
        else if (in->dt == DT_F16 && in->pdt == DT_F32)
            store = "__float2half_rn(acc)";
        else if (in->dt == DT_BF16 && in->pdt == DT_F32)
            store = o->hip ? "__float2bfloat16(acc)" : "__float2bfloat16_rn(acc)";
        else if (in->pdt == DT_F32 || in->pdt == DT_F64)
            store = arena_printf(a, "(%s)acc", dt);
        if (!pt || !dt || !store) {
            diag_error(d, bwd->loc, "CUDA C emitter: the fold of the backward %s sums %s partials into a %s "
                                    "gradient, which the CUDA C sum kernel does not convert", bwd->name,
                       dtype_name(in->pdt), dtype_name(in->dt));
            return false;
        }
        buf_printf(out, "\n// %s of the fold: d = the rows of its partials (%s) added in a fixed order, row 0 first\n"
                        "// (deterministic); one thread per element of the gradient.\n",
                   fold_sum_name(a, pl, j, kname), pt);
        buf_printf(out, "extern \"C\" __global__ void __launch_bounds__(%d) %s(const %s *__restrict__ part, "
                        "%s *__restrict__ d, int64_t span, int64_t rows)\n{\n",
                   CU_FOLD_SUM_THREADS, fold_sum_name(a, pl, j, kname), pt, dt);
        buf_printf(out, "    const int64_t e = (int64_t)blockIdx.x * %d + (int64_t)threadIdx.x;\n"
                        "    if (e >= span)\n        return;\n"
                        "    %s acc = 0;\n"
                        "    for (int64_t r = 0; r < rows; r++)\n        acc += part[r * span + e];\n"
                        "    d[e] = %s;\n}\n", CU_FOLD_SUM_THREADS, pt, store);
    }
    return true;
}

/* The header's lines on the fold: how each folded gradient is summed. */
static void fold_describe(Buf *t, Arena *a, const Program *P, const char *const *names, const char *kname)
{
    const Func *bwd = P->main;
    const FoldPlan *pl = P->fold;
    for (int j = 0; j < pl->n; j++) {
        const FoldInput *in = &pl->in[j];
        const char *dn = names[in->slot], *flag = NULL;
        for (int i = 0; in->flag && i < bwd->nparams; i++)
            if (bwd->params[i] == in->flag)
                flag = names[i];
        if (!in->rows)
            buf_printf(t, "%s: deterministic, without atomics: the programs reading the same elements of %s are "
                          "folded onto kad_nfold programs (kad_fold_programs), each summing into its own row of %s "
                          "partials in program order; %s_sum adds the rows in a fixed order.\n", dn, in->name,
                       dtype_name(in->pdt), kname);
        else
            buf_printf(t, "%s: each of the %d sites reading %s stores into its own row of %s partials%s; %s_sum adds "
                          "the rows in a fixed order.\n", dn, in->rows, in->name, dtype_name(in->pdt),
                       flag ? arena_printf(a, " when %s holds (else one row, added into with atomicAdd: not "
                                              "deterministic)", flag) : "", kname);
    }
}

/* The launcher's helper choosing the folded programs (printed before a launcher that folds). */
static const char CU_FOLD_HELPER[] =
    "// The programs a folded backward runs along its folded axis: two per SM, at most half the forward's\n"
    "// programs (at least 1). The gradients' bits depend on this count, which depends on the device alone.\n"
    "static inline unsigned kad_fold_programs(int64_t programs)\n"
    "{\n"
    "    int dev = 0, sms = 0;\n"
    "    if (%sGetDevice(&dev) != %sSuccess || %sDeviceGetAttribute(&sms, %s, dev) != %sSuccess || sms < 1)\n"
    "        sms = 1;\n"
    "    int64_t p = 2 * (int64_t)sms, half = (programs + 1) / 2;\n"
    "    p = p < half ? p : half;\n"
    "    return (unsigned)(p < 1 ? 1 : p);\n"
    "}\n\n";

static void fold_helper(Buf *out, const FoldPlan *pl, const EmitCudaOpts *o)
{
    if (!pl || !pl->axes)
        return;
    const char *r = o->hip ? "hip" : "cuda";
    buf_printf(out, CU_FOLD_HELPER, r, r, r, o->hip ? "hipDeviceAttributeMultiprocessorCount"
                                                   : "cudaDevAttrMultiProcessorCount", r);
}

/* The fold's host steps (run_fold's): into pre the folded programs, the spans and the partials
 * (zero-filled: the kernel's own zeroing of its rows, when it does it, finds zeros), knames[slot]
 * the partials; *grid the folded launch's dim3; into then the sum kernels' launches, into post and
 * frees the partials' frees. */
static void fold_steps(Arena *a, const Program *P, const char *kname, const char *const *names, const char **knames,
                       const char **grid, Buf *pre, Buf *then, Buf *post, Buf *frees, const EmitCudaOpts *o)
{
    const Func *bwd = P->main;
    const FoldPlan *pl = P->fold;
    const char *inval = rt(a, o, "ErrorInvalidValue"), *ok = rt(a, o, "Success");
    Buf who = {.a = a};
    for (int j = 0; j < pl->n; j++)
        buf_printf(&who, "%s%s", j ? (j + 1 < pl->n ? ", " : " and ") : "", pl->in[j].name);
    if (pl->axes) {
        Buf T = {.a = a}, ax = {.a = a};
        for (int k = 0; k < 3; k++)
            if (pl->axes & (1u << k)) {
                buf_printf(&T, "%s(int64_t)grid_%c", T.len ? " * " : "", "xyz"[k]);
                buf_printf(&ax, "%s%c", ax.len ? ", " : "", "xyz"[k]);
            }
        buf_printf(pre, "    // the fold (deterministic sums): the forward's programs along %s are run by kad_nfold programs,\n"
                        "    // program q running q, q + kad_nfold, ... in order and summing the gradients of %s into its\n"
                        "    // own row of partials; the sum kernel adds the rows in a fixed order\n",
                   buf_str(&ax), buf_str(&who));
        buf_printf(pre, "    const int64_t kad_programs = %s;\n    if (kad_programs > INT32_MAX)\n        return (int)%s;\n",
                   buf_str(&T), inval);
        buf_puts(pre, "    const unsigned kad_nfold = kad_fold_programs(kad_programs);\n");
        for (int k = 0, at = pl->nargs + pl->n; k < 3; k++)
            if (pl->axes & (1u << k))
                buf_printf(pre, "    const int32_t %s = (int32_t)grid_%c;\n", names[at++], "xyz"[k]);
    } else {
        buf_printf(pre, "    // deterministic sums: each site adding into the gradient of %s has its own row of partials\n"
                        "    // (one row, added into with atomics, when its flag is false); the sum kernel adds the rows\n"
                        "    // in a fixed order\n", buf_str(&who));
    }
    Buf g = {.a = a};
    for (int k = 0; k < 3; k++)
        buf_printf(&g, "%s%s", k ? ", " : "",
                   !(pl->axes & (1u << k)) ? arena_printf(a, "grid_%c", "xyz"[k]) : k == pl->axis ? "kad_nfold" : "1");
    *grid = buf_str(&g);
    for (int j = 0; j < pl->n; j++) {
        const FoldInput *in = &pl->in[j];
        const char *dn = names[in->slot], *span = names[pl->nargs + j];
        const char *part = arena_printf(a, "%s_part", dn), *rows = arena_printf(a, "kad_rows_%s", cuda_ident(a, in->name));
        const char *pt = cuda_dtype(in->pdt, o->hip);
        const char *flag = NULL;
        for (int i = 0; in->flag && i < bwd->nparams; i++)
            if (bwd->params[i] == in->flag)
                flag = names[i];
        buf_printf(pre, "    const int64_t %s = %s_numel;\n", span, dn);
        if (!in->rows)
            buf_printf(pre, "    const int64_t %s = kad_nfold; // a row per folded program\n", rows);
        else if (flag)
            buf_printf(pre, "    const int64_t %s = %s ? %dLL : 1LL; // a row per site\n", rows, flag, in->rows);
        else
            buf_printf(pre, "    const int64_t %s = %dLL; // a row per site\n", rows, in->rows);
        buf_printf(pre, "    if (%s > 0 && %s > INT64_MAX / 16 / %s)\n        return (int)%s;\n", span, rows, span, inval);
        buf_printf(pre, "    %s *%s = NULL;\n", pt, part);
        buf_printf(pre, "    %s errf%d = %s((void **)&%s, (size_t)(%s * %s > 0 ? %s * %s : 1) * sizeof(%s), stream);\n",
                   rt(a, o, "Error_t"), j, rt(a, o, "MallocAsync"), part, rows, span, rows, span, pt);
        buf_printf(pre, "    if (errf%d == %s)\n        errf%d = %s(%s, 0, (size_t)(%s * %s) * sizeof(%s), stream);\n", j, ok,
                   j, rt(a, o, "MemsetAsync"), part, rows, span, pt);
        buf_printf(pre, "    if (errf%d != %s) {\n%s", j, ok, buf_str(frees));
        buf_printf(pre, "        if (%s)\n            %s(%s, stream);\n        return (int)errf%d;\n    }\n", part,
                   rt(a, o, "FreeAsync"), part, j);
        buf_printf(frees, "        %s(%s, stream);\n", rt(a, o, "FreeAsync"), part);
        buf_printf(post, "    %s(%s, stream);\n", rt(a, o, "FreeAsync"), part);
        knames[in->slot] = part;
        buf_printf(then, "    if (errl == %s && %s > 0) {\n", ok, span);
        launch_stmt(then, "        ", fold_sum_name(a, pl, j, kname),
                    arena_printf(a, "(unsigned)((%s + %d) / %d)", span, CU_FOLD_SUM_THREADS - 1, CU_FOLD_SUM_THREADS),
                    CU_FOLD_SUM_THREADS, arena_printf(a, "%s, %s, %s, %s", part, dn, span, rows), o);
        buf_printf(then, "        errl = %s();\n    }\n", rt(a, o, "GetLastError"));
    }
}

/* ---- gather kernels (Program.gather, write/gather.c) ---- */

/* The grid of a kernel launched on the forward's plus add[k] programs along axis k (NULL: none). */
static const char *const *grid_of(Arena *a, const int64_t *add)
{
    if (!add)
        return main_grid;
    const char **g = arena_alloc(a, sizeof *g * 3);
    for (int k = 0; k < 3; k++)
        g[k] = add[k] ? arena_printf(a, "(grid_%c + %lldu)", "xyz"[k], (long long)add[k]) : main_grid[k];
    return g;
}

/* The gather (and scatter) kernels of P, after the backward's, into out. */
static bool gather_kernels(Buf *out, Arena *a, Diags *d, const Program *P, const EmitCudaOpts *o, unsigned *h)
{
    for (int j = 0; j < P->gather->n; j++) {
        const Func *k = P->gather->in[j].k;
        EmitCudaOpts ko = *o;
        ko.name = cuda_ident(a, k->name);
        int L = 0;
        buf_putc(out, '\n');
        if (!emit_cuda_kernel(out, a, d, k, &ko, &L, h))
            return false;
    }
    return true;
}

/* The header's lines on the gathered input gradients; fc: the flags' conditions as C. */
static void gather_describe(Buf *t, Arena *a, const Program *P, const char *const *names, const char *const *fc,
                            int ncontract)
{
    for (int j = 0; j < P->gather->n; j++) {
        const GatherIn *gi = &P->gather->in[j];
        const char *k = cuda_ident(a, gi->k->name);
        if (gi->scatter) {
            buf_printf(t, "d_%s: the scattered sites' additions, by %s after the rest is written (atomicAdd).\n",
                       gi->name, k);
            continue;
        }
        buf_printf(t, "d_%s: gathered by %s: each element sums the %d sites that read it in a fixed order and is "
                      "stored once (deterministic, no atomics)", gi->name, k, gi->nsites);
        if (gi->flag >= 0)
            buf_printf(t, " when %s, else added with atomicAdd by the backward kernel (%s)",
                       fc[gi->flag] ? fc[gi->flag] : "never", names[ncontract + gi->flag]);
        buf_puts(t, ".\n");
    }
}

/* STEP_GATHER: each gather kernel after the backward's, on the forward's grid plus its grid_add,
 * under its flag; *when: the backward kernel's own launch condition (GatherPlan.main). */
static void gather_steps(Arena *a, const Program *P, const char *const *knames, int ncontract, const char **when,
                         Buf *then, const EmitCudaOpts *o)
{
    const GatherPlan *gp = P->gather;
    Buf all = {.a = a};
    for (int j = 0; j < gp->n; j++) {
        const GatherIn *gi = &gp->in[j];
        const char *flag = gi->flag >= 0 ? knames[ncontract + gi->flag] : NULL;
        if (flag)
            buf_printf(&all, "%s%s", all.len ? " && " : "", flag);
        Buf args = {.a = a};
        for (int i = 0; i < gi->k->nparams; i++)
            buf_printf(&args, "%s%s", i ? ", " : "", knames[i]);
        const char *const *g = grid_of(a, gi->grid_add);
        int L = emit_cuda_lane_count(gi->k);
        buf_printf(then, "    if (errl == %s%s%s) { // d_%s: %s\n", rt(a, o, "Success"), flag ? " && " : "",
                   flag ? flag : "", gi->name, gi->scatter ? "the scattered sites" : "gathered");
        launch_stmt(then, "        ", cuda_ident(a, gi->k->name), arena_printf(a, "%s, %s, %s", g[0], g[1], g[2]), L,
                    buf_str(&args), o);
        buf_printf(then, "        errl = %s();\n    }\n", rt(a, o, "GetLastError"));
    }
    *when = gp->main == 1 ? "" : gp->main == 2 ? (all.len ? arena_printf(a, "!(%s)", buf_str(&all)) : "") : NULL;
}

/* The host check of a zero-fill's cover (access_cover_c writes its calls): the C twin of
 * src/emit/py/cover.py's _kad_covers for a dense gradient of numel elements. */
static const char CU_COVER_HELPER[] =
    "// kad_covers: true only when the launch writes every element of a dense gradient of numel elements\n"
    "// (kad's access_cover.c): it writes sum(st[v] * v) for 0 <= v < ext[v] (-1: no extent) where every\n"
    "// clause sum(ca * v) < cb holds (clause i on the cn[i] variables ci) and every neg is < 0. Each\n"
    "// variable is bounded by its clauses alone; the variables of a clause on several make one dense run\n"
    "// (their mixed-radix index); the runs merged, [0, numel) must fall in one of stride 1.\n"
    "static bool kad_covers(int64_t numel, int nv, const int64_t *st, const int64_t *ext, int ncl, const int *cn,\n"
    "                       const int *ci, const int64_t *ca, const int64_t *cb, int nneg, const int64_t *neg)\n"
    "{\n"
    "    enum { M = 16 };\n"
    "    if (numel <= 0)\n"
    "        return true;\n"
    "    if (nv > M || ncl > M)\n"
    "        return false;\n"
    "    for (int i = 0; i < nneg; i++)\n"
    "        if (neg[i] >= 0)\n"
    "            return false;\n"
    "    int64_t e[M];\n"
    "    int at[M + 1], grp[M];\n"
    "    bool none[M]; /* no extent yet */\n"
    "    for (int v = 0; v < nv; v++)\n"
    "        e[v] = ext[v], grp[v] = -1, none[v] = ext[v] < 0;\n"
    "    for (int i = 0, o = 0; i < ncl; o += cn[i++]) {\n"
    "        at[i] = o;\n"
    "        if (cn[i] != 1)\n"
    "            continue;\n"
    "        if (ca[o] < 1)\n"
    "            return false;\n"
    "        int64_t b = kad_cdiv(cb[i], ca[o]);\n"
    "        e[ci[o]] = none[ci[o]] || b < e[ci[o]] ? b : e[ci[o]];\n"
    "        none[ci[o]] = false;\n"
    "    }\n"
    "    for (int v = 0; v < nv; v++)\n"
    "        if (!none[v] && e[v] <= 0)\n"
    "            return false;\n"
    "    for (int i = 0; i < ncl; i++) { /* the clauses on several variables, grouped by their set */\n"
    "        if (cn[i] == 1)\n"
    "            continue;\n"
    "        int g = grp[ci[at[i]]];\n"
    "        for (int k = 0; k < cn[i]; k++)\n"
    "            if (grp[ci[at[i] + k]] != g)\n"
    "                return false;\n"
    "        if (g >= 0) { /* the same set as clause g's? */\n"
    "            int n = 0;\n"
    "            for (int v = 0; v < nv; v++)\n"
    "                n += grp[v] == g;\n"
    "            if (n != cn[i])\n"
    "                return false;\n"
    "            continue;\n"
    "        }\n"
    "        for (int k = 0; k < cn[i]; k++)\n"
    "            grp[ci[at[i] + k]] = i;\n"
    "    }\n"
    "    for (int v = 0; v < nv; v++) { /* no extent (a grid-stride loop's counter): bounded by its group */\n"
    "        if (none[v] && grp[v] < 0)\n"
    "            return false;\n"
    "        e[v] = none[v] ? -1 : e[v];\n"
    "    }\n"
    "    return kad_covers_runs(numel, nv, st, e, grp, ncl, cn, ci, ca, cb, at);\n"
    "}\n\n";
static const char CU_COVER_RUNS[] =
    "// kad_covers' second half: the runs, merged from stride 1 up.\n"
    "static int64_t kad_cdiv(int64_t x, int64_t y) { return x / y + (x % y != 0 && x > 0); }\n"
    "static bool kad_covers_runs(int64_t numel, int nv, const int64_t *st, const int64_t *e, const int *grp, int ncl,\n"
    "                            const int *cn, const int *ci, const int64_t *ca, const int64_t *cb, const int *at)\n"
    "{\n"
    "    enum { M = 16 };\n"
    "    int64_t rs[M + M], rn[M + M];\n"
    "    int nr = 0;\n"
    "    for (int g = 0; g < ncl; g++) { /* each group: one dense run */\n"
    "        int ord[M], n = 0;\n"
    "        for (int v = 0; v < nv; v++)\n"
    "            if (grp[v] == g) {\n"
    "                int k = n++;\n"
    "                for (; k > 0 && st[ord[k - 1]] > st[v]; k--)\n"
    "                    ord[k] = ord[k - 1];\n"
    "                ord[k] = v;\n"
    "            }\n"
    "        if (!n)\n"
    "            continue;\n"
    "        int64_t s = st[ord[0]], len = 1;\n"
    "        if (s < 1)\n"
    "            return false;\n"
    "        for (int k = 0; k < n; k++) { /* len < 0: unbounded (an extent-less last variable) */\n"
    "            if (st[ord[k]] != s * len || (e[ord[k]] < 0 && k != n - 1) || e[ord[k]] > INT64_MAX / 4 / len)\n"
    "                return false;\n"
    "            len = e[ord[k]] < 0 ? -1 : len * e[ord[k]];\n"
    "        }\n"
    "        for (int i = 0; i < ncl; i++) {\n"
    "            if (cn[i] == 1 || grp[ci[at[i]]] != g)\n"
    "                continue;\n"
    "            int64_t a0 = 0;\n"
    "            for (int k = 0; k < cn[i]; k++)\n"
    "                a0 = ci[at[i] + k] == ord[0] ? ca[at[i] + k] : a0;\n"
    "            if (a0 < 1)\n"
    "                return false;\n"
    "            for (int k = 0; k < cn[i]; k++)\n"
    "                if (ca[at[i] + k] * s != a0 * st[ci[at[i] + k]])\n"
    "                    return false;\n"
    "            int64_t b = kad_cdiv(cb[i], a0);\n"
    "            len = len < 0 || b < len ? b : len;\n"
    "        }\n"
    "        if (len <= 0)\n"
    "            return false;\n"
    "        rs[nr] = s, rn[nr++] = len;\n"
    "    }\n"
    "    for (int v = 0; v < nv; v++)\n"
    "        if (grp[v] < 0)\n"
    "            rs[nr] = st[v], rn[nr++] = e[v];\n"
    "    int64_t ms = 0, mn = 0; /* the merged run of stride 1, from the runs in order of (stride, length) */\n"
    "    bool used[M + M] = {false};\n"
    "    for (bool grew = true; grew;) {\n"
    "        grew = false;\n"
    "        int best = -1;\n"
    "        for (int r = 0; r < nr; r++)\n"
    "            if (!used[r] && rs[r] >= 1 && rn[r] > 1 && rs[r] == (ms ? ms * mn : 1) &&\n"
    "                (best < 0 || rn[r] < rn[best]))\n"
    "                best = r;\n"
    "        if (best >= 0 && (ms ? rn[best] <= INT64_MAX / 4 / mn : true)) {\n"
    "            used[best] = grew = true;\n"
    "            mn = ms ? mn * rn[best] : rn[best];\n"
    "            ms = 1;\n"
    "        }\n"
    "    }\n"
    "    return numel == 1 || (ms == 1 && numel - 1 < mn);\n"
    "}\n\n";

/* Whether tape j of P is a `while` loop's (a capacity and an overflow flag in its head). */
static bool tj_bounded(const Program *P, int j) { return P->tapes.v[j].bounded; }

/* The plan pieces of P that this launcher does not print, as a refusal; true when there is none. */
static bool simple_plan(Diags *d, Arena *a, const Program *P)
{
    const Func *bwd = P->main;
    const char *what = P->gemm ? "GEMM kernels for the matmul operand gradients"
                       : P->gather && P->fold ? "gather kernels with a folded grid"
                       : P->spread ? "a loop spread over more programs"
                                      : NULL;
    for (int j = 0; !what && j < P->tapes.n; j++) {
        const FuncTape *t = &P->tapes.v[j];
        what = t->revolve || t->ckpt ? "checkpointed tapes (a tape budget)"
               : !tape_c(a, t->trips, bwd, param_names(a, bwd)) ? "tapes (scratch buffers for loops reversed backwards) "
                                                                  "whose size names the program id"
                                                                : NULL;
    }
    if (!what)
        return true;
    diag_error(d, bwd->loc, "CUDA C emitter: the backward %s needs %s, which the CUDA C launcher does not do yet; "
                            "its Triton module (`kad grad` without --emit) does", bwd->name, what);
    return false;
}

bool emit_cuda_backward(Buf *out, Arena *a, Diags *d, const Func *fwd, const Program *P, const AdSpec *spec,
                        const EmitCudaOpts *o)
{
    static const EmitCudaOpts none = {0};
    o = o ? o : &none;
    if (!simple_plan(d, a, P))
        return false;
    const Func *bwd = P->main;
    int nfwd = fwd->nparams, nouts = spec->nouts, nin = spec->nwrt, nf = P->flags.n;
    int ncontract = nfwd + nouts + nin, nt = P->tapes.n;
    int nfp = fold_nparams(P->fold);
    if (bwd->nparams != ncontract + nf + nt + nfp || (P->fold && P->fold->nargs != ncontract + nf + nt)) {
        diag_error(d, bwd->loc, "CUDA C emitter: the backward %s has %d parameters, not the forward's %d, %d "
                                "output and %d input gradients and %d flags (an input that is also an output, in "
                                "place, shares one gradient): the CUDA C launcher does not print it yet",
                   bwd->name, bwd->nparams, nfwd, nouts, nin, nf);
        return false;
    }
    for (int j = 0; j < nf; j++)
        if (P->flags.v[j].param != bwd->params[ncontract + j]) {
            diag_error(d, bwd->loc, "CUDA C emitter: the backward %s has a flag out of the launcher's order",
                       bwd->name);
            return false;
        }
    const char *kname = cuda_ident(a, arena_printf(a, "%s_bwd", fwd->name));
    EmitCudaOpts ko = *o;
    ko.name = kname;
    Buf k = {.a = a};
    int L = 0;
    unsigned h = 0;
    if (!emit_cuda_kernel(&k, a, d, bwd, &ko, &L, &h) || (P->fold && !fold_sum_kernels(&k, a, d, P, kname, o)) ||
        (P->gather && !gather_kernels(&k, a, d, P, o, &h)))
        return false;
    const char **names = param_names(a, bwd);
    for (int j = 0; P->fold && j < P->fold->n; j++) /* the caller's gradient, not the kernel's partials */
        names[P->fold->in[j].slot] = cuda_ident(a, arena_printf(a, "d_%s", P->fold->in[j].name));
    /* the launch's conditions: guards refuse it, flags choose plain stores */
    const char **gc = arena_alloc(a, sizeof *gc * (size_t)(P->guards.n + 1));
    for (int i = 0; i < P->guards.n; i++) {
        const FuncGuard *g = &P->guards.v[i];
        gc[i] = cond_c(a, g->acc, g->cond, names, main_grid);
        if (!gc[i]) {
            diag_error(d, g->loc, "CUDA C emitter: %s, under a launch condition the CUDA C launcher cannot compute "
                                  "from the arguments and the grid", g->msg);
            return false;
        }
    }
    const char **fc = arena_alloc(a, sizeof *fc * (size_t)(nf + 1));
    for (int j = 0; j < nf; j++) {
        const FuncFlag *fl = &P->flags.v[j];
        Buf all = {.a = a};
        for (int i = 0; i < fl->ncond; i++) {
            const char *one = cond_c(a, fl->acc, fl->cond[i], names, grid_of(a, fl->grid_add));
            if (!one) {
                all.len = 0;
                break;
            }
            buf_printf(&all, fl->ncond > 1 ? "%s(%s)" : "%s%s", i ? " && " : "", one);
        }
        fc[j] = all.len ? buf_str(&all) : NULL; /* NULL: atomics, always right */
    }
    /* the header: what it differentiates and how each gradient is written */
    Buf t = {.a = a};
    buf_printf(&t, "Outputs:");
    for (int i = 0; i < nouts; i++)
        buf_printf(&t, " %s (gradient read from %s)%s", spec->outs[i], names[nfwd + i], i + 1 < nouts ? "," : ".");
    buf_printf(&t, "\nInputs:");
    for (int i = 0; i < nin; i++)
        buf_printf(&t, " %s (gradient written into %s)%s", spec->wrt[i], names[nfwd + nouts + i],
                   i + 1 < nin ? "," : ".");
    buf_puts(&t, "\nEach program recomputes its part of the forward, then sweeps back. launch_");
    buf_printf(&t, "%s zero-fills each input gradient (<name>_numel elements) unless the launch provably writes "
                   "every element of it, then launches.\n", kname);
    for (int j = 0; j < nf; j++) {
        if (P->flags.v[j].grid_add)
            continue; /* a gather's: gather_describe */
        buf_printf(&t, "%s: plain stores (deterministic) when %s, else atomicAdd (the order of float additions "
                       "is not deterministic).\n", names[ncontract + j], fc[j] ? fc[j] : "never");
    }
    if (P->gather)
        gather_describe(&t, a, P, names, fc, ncontract);
    if (P->cleared.n) {
        buf_puts(&t, "The backward reads and clears");
        for (int j = 0; j < P->cleared.n; j++)
            buf_printf(&t, "%s %s", j ? "," : "", names[P->cleared.v[j]]);
        buf_printf(&t, ": launch_%s runs it on a private copy of each (<name>_numel elements), the caller's kept.\n",
                   kname);
    }
    for (int j = 0; j < nt; j++)
        buf_printf(&t, "%s\n", tape_describe(a, P, j, arena_printf(a, "launch_%s", kname)));
    if (P->fold)
        fold_describe(&t, a, P, names, kname);
    if (spec->atomics)
        buf_puts(&t, "Built with --atomics: the gradients are accumulated with atomicAdd.\n");
    else if (!nf && ir_block_has_op(bwd->body, OP_ATOMIC_ADD))
        buf_puts(&t, "Input gradients are accumulated with atomicAdd: the order of those float additions is not "
                     "deterministic, so results may differ in the last bits from run to run.\n");
    header(out, a, arena_printf(a, "Backward of kernel %s", fwd->name), fwd, nfwd, L, buf_str(&t), o);
    emit_cuda_prelude(out, o, h);
    buf_puts(out, buf_str(&k));
    buf_printf(out, "\n%s\n\n", CU_LAUNCHER_MARK);
    Buf extra = {.a = a};
    for (int i = 0; i < nin; i++)
        buf_printf(&extra, ",\n        int64_t %s_numel", names[nfwd + nouts + i]);
    for (int j = 0; j < P->cleared.n; j++)
        buf_printf(&extra, ",\n        int64_t %s_numel", names[P->cleared.v[j]]);
    /* STEP_ZERO: a gradient whose zero-fill the launch may make unneeded (its cover, under its flag) */
    const char **covt = arena_alloc(a, sizeof *covt * (size_t)(nin + 1)), **cflag = arena_alloc(a, sizeof *cflag * (size_t)(nin + 1));
    bool anycov = false;
    PolyCtx pc = {a, names};
    for (int i = 0; i < nin; i++) {
        int p = nfwd + nouts + i;
        bool folded = false;
        for (int j = 0; P->fold && j < P->fold->n; j++)
            folded |= P->fold->in[j].slot == p;
        for (int j = 0; !folded && j < P->covers.n; j++) {
            const FuncCover *fcv = &P->covers.v[j];
            if (fcv->param != bwd->params[p] || !fcv->cover)
                continue;
            int fj = -1;
            for (int q = 0; fcv->flag && q < nf; q++)
                fj = P->flags.v[q].param == fcv->flag ? q : fj;
            if (fcv->flag && (fj < 0 || !fc[fj]))
                continue; /* under a flag the launcher cannot compute: zero-filled */
            covt[i] = access_cover_c(fcv->acc, fcv->cover, arena_printf(a, "%s_numel", names[p]),
                                     arena_printf(a, "kad_cover%d", i), poly_c, &pc);
            cflag[i] = fj >= 0 ? names[ncontract + fj] : NULL;
            anycov |= covt[i] != NULL;
        }
    }
    if (nt)
        buf_puts(out, CU_TAPE_HELPERS);
    if (anycov) {
        buf_puts(out, CU_COVER_RUNS);
        buf_puts(out, CU_COVER_HELPER);
    }
    fold_helper(out, P->fold, o);
    launcher_open(out, a, bwd, P->fold, arena_printf(a, "launch_%s", kname), names, ncontract, buf_str(&extra), o);
    for (int i = 0; i < P->guards.n; i++) {
        const FuncGuard *g = &P->guards.v[i];
        char *msg = arena_strdup(a, g->msg);
        for (char *q = msg; *q; q++)
            if (*q == '\n' || *q == '\r')
                *q = ' ';
        buf_printf(out, "    if (!(%s)) // %s:%d:%d: %s\n        return (int)%s;\n", gc[i],
                   g->loc.file ? g->loc.file : "<kernel>", g->loc.line, g->loc.col, msg,
                   rt(a, o, "ErrorInvalidValue"));
    }
    if (nf)
        buf_puts(out, "    // plain stores where the access analysis proves them for this launch\n");
    for (int j = 0; j < nf; j++)
        buf_printf(out, "    const bool %s = %s;\n", names[ncontract + j], fc[j] ? fc[j] : "false");
    for (int i = 0; i < nin; i++) {
        int p = nfwd + nouts + i;
        Dtype el = (Dtype)bwd->vals.v[bwd->params[p]].ty.elem;
        for (int j = 0; P->fold && j < P->fold->n; j++) /* a folded gradient: the caller's dtype */
            if (P->fold->in[j].slot == p)
                el = P->fold->in[j].dt;
        const char *cv = covt[i];
        if (cv)
            buf_printf(out, "    // %s: zero-filled unless this launch writes every element (access_cover)\n"
                            "    bool kad_cover%d = false;\n%s%s", names[p], i, cflag[i] ? arena_printf(a, "    if (%s)\n", cflag[i]) : "",
                       cv);
        buf_printf(out, "    %s err%d = %s;\n", rt(a, o, "Error_t"), i, rt(a, o, "Success"));
        buf_printf(out, "%s    %serr%d = %s(%s, 0, (size_t)%s_numel * sizeof(%s), stream);\n",
                   cv ? arena_printf(a, "    if (!kad_cover%d)\n", i) : "", cv ? "    " : "", i,
                   rt(a, o, "MemsetAsync"), names[p], names[p], cuda_dtype(el, o->hip));
        buf_printf(out, "    if (err%d != %s)\n        return (int)err%d;\n", i, rt(a, o, "Success"), i);
    }
    Buf pre = {.a = a}, post = {.a = a}, frees = {.a = a}, then = {.a = a};
    const char **knames = names, *grid = NULL;
    if (P->cleared.n || nt || P->fold) {
        knames = arena_alloc(a, sizeof *knames * (size_t)(bwd->nparams + 1));
        for (int i = 0; i < bwd->nparams; i++)
            knames[i] = names[i];
    }
    /* STEP_TAPE: each tape allocated for this launch, uninitialized (each element written before it is read) */
    if (nt)
        buf_puts(&pre, "    // the tapes, sized for this launch (plan_run's tape_elems)\n    bool kad_bad = false;\n");
    for (int j = 0; j < nt; j++) {
        const FuncTape *tj = &P->tapes.v[j];
        if (tj->bounded)
            buf_printf(&pre, "    // tape %d is a `while` loop's: its capacity of iterations, and a head of %d elements (the overflow flag)\n",
                       j, KAD_TAPE_HEAD);
        buf_printf(&pre, "    const int64_t kad_tape%d_numel = %skad_tape_numel(%s, grid_x, grid_y, grid_z, %lldLL, &kad_bad)%s;\n",
                   j, tj->bounded ? "kad_tx_add(" : "", tape_c(a, tj->trips, bwd, names), (long long)tj->slot,
                   tj->bounded ? arena_printf(a, ", %d, &kad_bad)", KAD_TAPE_HEAD) : "");
    }
    if (nt)
        buf_printf(&pre, "    if (kad_bad) // a tape's trip count divides by zero or overflows, or the tape is too large\n"
                         "        return (int)%s;\n", rt(a, o, "ErrorInvalidValue"));
    for (int j = 0; j < nt; j++) {
        int p = ncontract + nf + j;
        Type ty = bwd->vals.v[bwd->params[p]].ty;
        const char *el = cuda_dtype((Dtype)ty.elem, o->hip), *tp = arena_printf(a, "kad_tape%d", j);
        buf_printf(&pre, "    %s *%s = NULL;\n", el, tp);
        buf_printf(&pre, "    %s errt%d = %s((void **)&%s, (size_t)(%s_numel > 0 ? %s_numel : 1) * sizeof(%s), stream);\n",
                   rt(a, o, "Error_t"), j, rt(a, o, "MallocAsync"), tp, tp, tp, el);
        if (tj_bounded(P, j)) /* a `while` loop's tape: its head (the overflow flag) cleared */
            buf_printf(&pre, "    if (errt%d == %s)\n        errt%d = %s(%s, 0, %d * sizeof(%s), stream);\n", j,
                       rt(a, o, "Success"), j, rt(a, o, "MemsetAsync"), tp, KAD_TAPE_HEAD, el);
        buf_printf(&pre, "    if (errt%d != %s) {\n%s        if (%s)\n            %s(%s, stream);\n        return (int)errt%d;\n    }\n",
                   j, rt(a, o, "Success"), buf_str(&frees), tp, rt(a, o, "FreeAsync"), tp, j);
        buf_printf(&frees, "        %s(%s, stream);\n", rt(a, o, "FreeAsync"), tp);
        buf_printf(&post, "    %s(%s, stream);\n", rt(a, o, "FreeAsync"), tp);
        knames[p] = tp;
    }
    /* STEP_COPY: each output gradient the backward reads and clears, on a private copy (plan_run's) */
    if (P->cleared.n)
        buf_puts(&pre, "    // the output gradients the backward reads and clears: on private copies, the caller's kept\n");
    for (int j = 0; j < P->cleared.n; j++) {
        int p = P->cleared.v[j];
        Type ty = bwd->vals.v[bwd->params[p]].ty;
        const char *el = cuda_dtype((Dtype)ty.elem, o->hip), *cp = arena_printf(a, "%s_copy", names[p]);
        const char *bytes = arena_printf(a, "(size_t)(%s_numel > 0 ? %s_numel : 1) * sizeof(%s)", names[p], names[p], el);
        buf_printf(&pre, "    %s *%s = NULL;\n", el, cp);
        buf_printf(&pre, "    %s errc%d = %s((void **)&%s, %s, stream);\n", rt(a, o, "Error_t"), j,
                   rt(a, o, "MallocAsync"), cp, bytes);
        buf_printf(&pre, "    if (errc%d == %s)\n        errc%d = %s(%s, %s, (size_t)%s_numel * sizeof(%s), %s, stream);\n", j,
                   rt(a, o, "Success"), j, rt(a, o, "MemcpyAsync"), cp, names[p], names[p], el,
                   rt(a, o, "MemcpyDeviceToDevice"));
        buf_printf(&pre, "    if (errc%d != %s) {\n%s", j, rt(a, o, "Success"), buf_str(&frees));
        buf_printf(&pre, "        if (%s)\n            %s(%s, stream);\n        return (int)errc%d;\n    }\n", cp,
                   rt(a, o, "FreeAsync"), cp, j);
        buf_printf(&frees, "        %s(%s, stream);\n", rt(a, o, "FreeAsync"), cp);
        buf_printf(&post, "    %s(%s, stream);\n", rt(a, o, "FreeAsync"), cp);
        knames[p] = cp;
    }
    /* STEP_TAPE_CHECK: a `while` loop that ran past its tape's capacity raised the flag in the tape's
     * head; the launcher reads it back (a synchronization) and fails the launch, never a gradient
     * from a partial tape */
    bool over = false;
    for (int j = 0; j < nt; j++) {
        if (!tj_bounded(P, j))
            continue;
        Type ty = bwd->vals.v[bwd->params[ncontract + nf + j]].ty;
        const char *el = cuda_dtype((Dtype)ty.elem, o->hip);
        if (!over)
            buf_puts(&then, "    bool kad_over = false; // a `while` loop ran past the capacity of its tape\n");
        over = true;
        buf_printf(&then, "    if (errl == %s) {\n        %s kad_flag%d = 0;\n", rt(a, o, "Success"), el, j);
        buf_printf(&then, "        errl = %s(&kad_flag%d, kad_tape%d, sizeof(%s), %s, stream);\n",
                   rt(a, o, "MemcpyAsync"), j, j, el, rt(a, o, "MemcpyDeviceToHost"));
        buf_printf(&then, "        if (errl == %s)\n            errl = %s(stream);\n", rt(a, o, "Success"),
                   rt(a, o, "StreamSynchronize"));
        buf_printf(&then, "        kad_over = kad_over || (errl == %s && kad_flag%d != 0);\n    }\n",
                   rt(a, o, "Success"), j);
    }
    /* STEP_FOLD: the partials, the folded launch, then the sum kernel */
    if (P->fold)
        fold_steps(a, P, kname, names, knames, &grid, &pre, &then, &post, &frees, o);
    if (over) /* after every free: KAD_TAPE_OVERFLOW, which no runtime error's code is */
        buf_printf(&post, "    if (errl == %s && kad_over)\n        return KAD_TAPE_OVERFLOW;\n", rt(a, o, "Success"));
    const char *when = NULL;
    if (P->gather)
        gather_steps(a, P, knames, ncontract, &when, &then, o);
    launcher_launch_grid(out, a, bwd, kname, L, knames, grid, when, pre.len ? buf_str(&pre) : "",
                         then.len ? buf_str(&then) : "", post.len ? buf_str(&post) : "", o);
    return true;
}

bool emit_cuda_jvp(Buf *out, Arena *a, Diags *d, const Func *fwd, const Func *jv, const AdSpec *spec,
                   const EmitCudaOpts *o)
{
    static const EmitCudaOpts none = {0};
    o = o ? o : &none;
    const char *kname = cuda_ident(a, arena_printf(a, "%s_jvp", fwd->name));
    EmitCudaOpts ko = *o;
    ko.name = kname;
    Buf k = {.a = a};
    int L = 0;
    unsigned h = 0;
    if (!emit_cuda_kernel(&k, a, d, jv, &ko, &L, &h))
        return false;
    Buf t = {.a = a};
    buf_puts(&t, "Tangents of inputs:");
    for (int i = 0; i < spec->nwrt; i++)
        buf_printf(&t, " %s%s", spec->wrt[i], i + 1 < spec->nwrt ? "," : ".");
    buf_puts(&t, " Tangents of outputs:");
    for (int i = 0; i < spec->nouts; i++)
        buf_printf(&t, " %s%s", spec->outs[i], i + 1 < spec->nouts ? "," : ".");
    buf_printf(&t, "\nlaunch_%s takes the forward's arguments, then the tangent buffers (each laid out like its "
                   "primal); elements the kernel does not write keep their tangent.\n", kname);
    header(out, a, arena_printf(a, "Forward-mode derivative (jvp) of kernel %s", fwd->name), fwd, fwd->nparams, L,
           buf_str(&t), o);
    emit_cuda_prelude(out, o, h);
    buf_puts(out, buf_str(&k));
    buf_printf(out, "\n%s\n\n", CU_LAUNCHER_MARK);
    const char **names = param_names(a, jv);
    launcher_open(out, a, jv, NULL, arena_printf(a, "launch_%s", kname), names, jv->nparams, "", o);
    launcher_launch(out, a, jv, kname, L, names, o);
    return true;
}
