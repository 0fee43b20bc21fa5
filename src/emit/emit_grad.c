/* emit_grad.c -- the backward module of `kad grad` (docs/GRAD.md).
 *
 * Job: wrap a backward (ad_backward's Program) into the module that
 * callers rely on: a header comment (kernel, signature, inputs, outputs,
 * kad version, how each input gradient is written), the @triton.jit <kernel>_bwd printed by
 * emit_triton in backward mode (the forward def's parameter order, then the
 * gradient pointers; sections "recompute the forward" / "reverse sweep"),
 * its companion kernels, and the host function launch_<kernel>_bwd(grid,
 * *args, num_warps=None, num_stages=None, **constexprs) that checks its
 * arguments and does the Program's host steps (src/plan/plan.h) in their
 * order: the flags, guards and zero-fills (per launch key in _kad_plan, or
 * inline), the tapes, the fold's partials or the GEMM form, the launches.
 *
 * Requires: bwd = ad_backward(fwd, spec), so bwd's main parameters are fwd's
 * runtime parameters, then spec->nouts output gradients, then spec->nwrt
 * input gradients, and its constexprs are fwd's.  Guarantees: the module
 * is deterministic; the launcher rejects constexpr values other than the
 * specialized ones (the body has them built in), so no launch computes
 * something other than what the header says.
 *
 * Files: this one prints the modules (the header comment, the kernels, the
 * launch and race checks) and holds the entry points; emit_grad_plan.c the
 * launcher (emit_print_launcher) and its plan per launch key; emit_grad_launch.c
 * the launches it prints, their defaults and kad_tune's facts; emit_grad.h
 * what they share.  The Python helpers the modules print verbatim are
 * src/emit/py/launch.py's sections (py/embed.h).
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "plan/plan.h"
#include "ad/autodiff.h"
#include "emit/emit_triton.h"
#include "emit/emit_grad.h"
#include "emit/py/embed.h"

/* The comment line between a backward module's kernels and its host part (docs/GRAD.md). */
#define KAD_LAUNCHER_MARK "# ---- the launcher --------------------------------------------------------------------------------"


/* name as a Python identifier: other characters become '_' (IR names may
 * hold '.'), a leading digit gets a 'k'. */
const char *emit_ident(Arena *a, const char *name)
{
    const char *n = name && *name ? name : "kernel";
    char *s = arena_alloc(a, strlen(n) + 2), *q = s;
    if (*n >= '0' && *n <= '9')
        *q++ = 'k';
    for (; *n; n++) {
        unsigned char c = (unsigned char)*n;
        bool ok = c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        *q++ = ok ? (char)c : '_';
    }
    return s;
}

/* The one sum kernel of a folded backward (every shared gradient's rows)
 * in the module of backward kernel kname. */
const char *emit_sum_name(Arena *a, const char *kname)
{
    return arena_printf(a, "%s_sum", kname);
}


/* Notes on the cost of the adjoints of float tl.gather and tl.sort/topk in
 * b (regions included), one line of text per instruction. */
static void shape_notes(Arena *a, const Func *f, const Block *b, Buf *t)
{
    for (int i = 0; b && i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nregions; r++)
            shape_notes(a, f, in->regions[r], t);
        if ((in->op != OP_GATHER && in->op != OP_SORT) || !dtype_is_float((Dtype)ir_type(f, in->res[0]).dt))
            continue;
        Type x = ir_type(f, in->args[0]);
        if (in->op == OP_GATHER) {
            Type ix = ir_type(f, in->args[1]);
            buf_printf(t, "The adjoint of tl.gather (line %d) is a scatter-add into a zero tile of the source's "
                          "shape written without atomics (deterministic): a one-hot compare of the index with "
                          "each source position and a sum, over %lld x %d lanes per program.\n",
                       in->loc.line, (long long)type_numel(ix), (int)x.shape[in->ival]);
        } else {
            int32_t n = x.shape[x.rank - 1];
            buf_printf(t, "The adjoint of tl.%s (line %d) ranks each row by comparing all pairs of its %d values "
                          "(%lld x %d lanes per program; ties get distinct ranks, NaNs are asserted absent) and "
                          "gathers the output gradient by rank.\n",
                       in->ival == n ? "sort" : "topk", in->loc.line, (int)n, (long long)type_numel(x), (int)n);
        }
    }
}

/* Appends text wrapped at spaces to lines of at most width characters,
 * continuation lines starting with cont; the first line starts at col. */
void emit_wrap(Buf *b, const char *text, size_t width, const char *cont, size_t col)
{
    const char *p = text;
    bool first = true;
    while (*p) {
        const char *sp = strchr(p, ' ');
        size_t n = sp ? (size_t)(sp - p) : strlen(p);
        if (!first && col + 1 + n > width) {
            buf_printf(b, "\n%s", cont);
            col = strlen(cont);
        } else if (!first) {
            buf_putc(b, ' ');
            col++;
        }
        first = false;
        for (size_t i = 0; i < n; i++)
            buf_putc(b, p[i]);
        col += n;
        p += n;
        while (*p == ' ')
            p++;
    }
}

/* "a, b and c" of names[0..n) (each with prefix). */
static const char *name_list(Arena *a, const char *const *names, int n, const char *prefix)
{
    Buf b = {.a = a};
    for (int i = 0; i < n; i++)
        buf_printf(&b, "%s%s%s", i == 0 ? "" : i == n - 1 ? " and " : ", ", prefix, names[i]);
    return buf_str(&b);
}

/* The header's note on an input whose first site stores (grad_first). */
static const char *first_note(const AdSpec *spec, int i)
{
    return spec->grad_first && spec->grad_first[i]
               ? " (the site the backward reaches first stores its gradient without reading: no site "
                 "has written its elements before)"
               : "";
}

/* A gather's launch condition (FuncFlag j of P) as Triton would write it. */
static const char *flag_python(Arena *a, const Program *P, int j)
{
    const FuncFlag *fl = &P->flags.v[j];
    Buf b = {.a = a};
    for (int c = 0; c < fl->ncond; c++) {
        const char *one = access_cond_python(fl->acc, fl->cond[c]);
        buf_printf(&b, fl->ncond > 1 ? "%s(%s)" : "%s%s", c ? " and " : "", one ? one : "its condition");
    }
    return b.len ? buf_str(&b) : "its condition";
}

/* The module comment of a backward module. */
/* A ranged parameter's range as the signature spells it ("[1:4096]"). */
static void print_range(Buf *b, const Func *f, int param)
{
    const ParamRange *r = ir_param_range(f, param);
    if (r)
        buf_printf(b, "[%lld:%lld]", (long long)r->lo, (long long)r->hi);
}

static const char *bwd_header(Arena *a, const Func *fwd, const Program *P, const AdSpec *spec,
                              const DefParam *o, int nfwd, const char *lname)
{
    const Func *bwd = P->main;
    Buf sig = {.a = a}, h = {.a = a};
    for (int k = 0; k < nfwd + bwd->consts.n; k++) {
        if (sig.len)
            buf_puts(&sig, ", ");
        if (o[k].cnst) {
            buf_printf(&sig, "%s=%s", bwd->consts.v[o[k].i].name, bwd->consts.v[o[k].i].value);
        } else {
            ValId p = bwd->params[o[k].i];
            buf_printf(&sig, "%s=", bwd->vals.v[p].name ? bwd->vals.v[p].name : "?");
            type_print(&sig, ir_type(bwd, p));
            print_range(&sig, bwd, o[k].i);
        }
    }
    buf_printf(&h, "Backward of the Triton kernel %s, generated by kad %s.\n", fwd->name, KAD_VERSION_STRING);
    buf_puts(&h, "Specialized for: ");
    emit_wrap(&h, sig.len ? buf_str(&sig) : "(no parameters)", LINE_LIMIT - 2, "    ", 17);
    buf_puts(&h, "\n");
    Buf t = {.a = a};
    buf_printf(&t, "Outputs: %s (gradients read from %s).", name_list(a, spec->outs, spec->nouts, ""),
               name_list(a, spec->outs, spec->nouts, "d_"));
    emit_wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
    buf_puts(&h, "\n");
    /* names in wrt only (inputs) and in both (updated in place) */
    const char **ins = arena_alloc(a, sizeof *ins * (size_t)(spec->nwrt + 1));
    const char **both = arena_alloc(a, sizeof *both * (size_t)(spec->nwrt + 1));
    int nins = 0, nboth = 0;
    for (int i = 0; i < spec->nwrt; i++) {
        bool inout = false;
        for (int k = 0; k < spec->nouts; k++)
            inout = inout || !strcmp(spec->wrt[i], spec->outs[k]);
        if (inout)
            both[nboth++] = spec->wrt[i];
        else
            ins[nins++] = spec->wrt[i];
    }
    if (nins) {
        t.len = 0;
        buf_printf(&t, "Inputs: %s (gradients written into %s: buffers of the inputs' shapes and strides that "
                       "need no initialization: %s zero-fills each one unless it proves that the launch writes "
                       "every element of its view; a direct launch of %s_bwd needs them zero-filled).",
                   name_list(a, ins, nins, ""), name_list(a, ins, nins, "d_"), lname, emit_ident(a, fwd->name));
        emit_wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
        buf_puts(&h, "\n");
    }
    if (nboth) {
        t.len = 0;
        buf_printf(&t, "Updated in place: %s. Pass %s holding the value before the launch; %s holds the "
                       "gradient of the value after the launch on entry and is overwritten with the gradient "
                       "of the value before it.",
                   name_list(a, both, nboth, ""), nboth == 1 ? "it" : "each", name_list(a, both, nboth, "d_"));
        emit_wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
        buf_puts(&h, "\n");
    }
    buf_puts(&h, "\n");
    t.len = 0;
    buf_printf(&t, "Launch it with %s(grid, *args, %s**constexprs): the forward's grid, the forward's runtime "
                   "arguments followed by the gradient buffers, and the constexprs as keywords "
                   "(see kad's docs/GRAD.md). Each program recomputes its part of the forward in "
                   "registers, then sweeps back.",
               lname, P->trusted ? "outputs_unmodified=True, " : "");
    if (P->trusted)
        buf_printf(&t, " Trusted outputs: it loads %s as the forward stored them instead of recomputing them "
                       "(a softmax's output, a norm's statistics), so those buffers must be unchanged since the "
                       "forward ran on these arguments: outputs_unmodified=True is the caller's promise (kad's "
                       "Python package checks their version counters; docs/AD.md, \"Trusted saved outputs\").",
                   P->trusted);
    emit_wrap(&h, buf_str(&t), LINE_LIMIT - 2, "", 0);
    buf_puts(&h, "\n");
    if (spec->grad_write) {
        /* per input (ad_backward's decision): plain stores or atomics, and why */
        for (int i = 0; i < spec->nwrt; i++) {
            t.len = 0;
            const FoldInput *fi = NULL;
            for (int j = 0; P->fold && j < P->fold->n; j++)
                if (!strcmp(P->fold->in[j].name, spec->wrt[i]))
                    fi = &P->fold->in[j];
            const char *axes = NULL;
            if (fi) {
                unsigned m = P->fold->axes;
                axes = m == 5   ? "axes 0 and 2"
                       : m == 3 ? "axes 0 and 1"
                       : m == 6 ? "axes 1 and 2"
                       : m == 7 ? "axes 0, 1 and 2"
                                : arena_printf(a, "axis %d", P->fold->axis);
            }
            const GemmOperand *go = NULL;
            for (int j = 0; P->gemm && j < P->gemm->n; j++)
                if (!strcmp(P->gemm->op[j].name, spec->wrt[i]))
                    go = &P->gemm->op[j];
            const GatherIn *gi = NULL;
            for (int j = 0; P->gather && j < P->gather->n; j++)
                if (!strcmp(P->gather->in[j].name, spec->wrt[i]))
                    gi = &P->gather->in[j];
            if (gi && gi->scatter) {
                /* how the backward writes the rest (the dense sites' mode) */
                const char *how = spec->grad_rmw && spec->grad_rmw[i] ? "by read-modify-writes private to each program"
                                                                      : "with plain tl.store";
                const char *when = spec->grad_when ? spec->grad_when[i] : NULL;
                const char *rest = !spec->grad_write[i] ? arena_printf(a, " %s", how)
                                   : when ? arena_printf(a, " (%s when %s holds for the launch, else with "
                                                            "tl.atomic_add, not deterministic)", how, when)
                                          : "";
                buf_printf(&t, "d_%s is written in two kernels. %s reads %s at %d site%s whose address depends "
                               "on a value kad cannot express (a loaded index): %s adds %s gradient%s with "
                               "tl.atomic_add after %s_bwd has written the rest%s. The result is deterministic "
                               "unless two of those additions meet one element (the order of float additions "
                               "into one element is not).",
                           spec->wrt[i], fwd->name, spec->wrt[i], gi->nsites, gi->nsites > 1 ? "s" : "",
                           gi->k->name, gi->nsites > 1 ? "their" : "its", gi->nsites > 1 ? "s" : "",
                           emit_ident(a, fwd->name), rest);
            } else if (gi)
                buf_printf(&t, "d_%s is gathered%s%s%s: the forward reads %s at %d sites, each a function of the "
                               "programs' positions pid * BLOCK + tl.arange(0, BLOCK) shifted by a constant, so %s "
                               "(the forward's grid plus %lld, %lld, %lld programs) sums, for each element, the "
                               "%d sites' gradients that add into it in a fixed order (recomputing each at the "
                               "position that reads the element) and stores it once with tl.store "
                               "(deterministic, without atomics or partials)%s.",
                           spec->wrt[i], gi->flag >= 0 ? " when " : "",
                           gi->flag >= 0 ? flag_python(a, P, gi->flag) : "",
                           gi->flag >= 0 ? " holds for the launch, on the gather kernel's grid (the launcher "
                                           "checks it and passes the answer as a tl.constexpr)" : "",
                           spec->wrt[i], gi->nsites, gi->k->name, (long long)gi->grid_add[0],
                           (long long)gi->grid_add[1], (long long)gi->grid_add[2], gi->nsites,
                           gi->flag >= 0 ? "; else the backward adds each site's gradient with tl.atomic_add, "
                                           "whose order of float additions is not deterministic" : "");
            else if (go)
                buf_printf(&t, "d_%s is written deterministically, without atomics, by a GEMM of its own when the "
                               "launch allows it: %s stores each program's %s tile (the gradient of the K loop's "
                               "accumulator) at its tile pair (u, v) of a scratch buffer, then %s writes each tile "
                               "of d_%s with one plain store, summing over the other tile id in order. "
                               "%s checks (once per launch shape) that the programs map one to one onto the tile "
                               "pairs and that those tiles are disjoint; else it runs %s_bwd, which accumulates "
                               "d_%s with tl.atomic_add (not deterministic).%s",
                           spec->wrt[i], P->gemm->first->name, P->gemm->data, go->k->name, spec->wrt[i], lname,
                           emit_ident(a, fwd->name), spec->wrt[i],
                           P->gemm->sdt == DT_BF16 || P->gemm->sdt == DT_F16
                               ? arena_printf(a, " The %s tiles are stored in %s (rounded once from fp32, as the "
                                                 "forward's operands are %s) and multiplied with the operand tiles as "
                                                 "loaded, accumulating in fp32.",
                                              P->gemm->data, dtype_name(P->gemm->sdt), dtype_name(P->gemm->sdt))
                               : "");
            else if (fi && fi->rows)
                buf_printf(&t, "d_%s is summed deterministically, without atomics%s%s%s: the forward reads %s at "
                               "%d sites, neighbouring programs' sites may meet, but each site alone reads "
                               "distinct elements, so each site stores its gradient into its own row of %s "
                               "partials and %s adds the rows in a fixed order%s.",
                           spec->wrt[i], fi->flag ? ", when " : "",
                           !fi->flag ? "" : spec->grad_when && spec->grad_when[i] ? spec->grad_when[i] : "its condition",
                           fi->flag ? " holds for the launch (the launcher checks it and passes the answer as a "
                                      "tl.constexpr)" : "",
                           spec->wrt[i], fi->rows, dtype_name(fi->pdt),
                           emit_sum_name(a, arena_printf(a, "%s_bwd", emit_ident(a, fwd->name))),
                           fi->flag ? "; else with tl.atomic_add (every site into one row), whose order of "
                                      "float additions is not deterministic" : "");
            else if (fi)
                buf_printf(&t, "d_%s is summed deterministically, without atomics: every program along grid %s "
                               "reads the same elements of %s, so the backward runs with nfold programs "
                               "there, each summing the contributions of its share of the forward's programs in "
                               "order into its own row of %s partials, and %s adds the rows in a fixed "
                               "order (bitwise reproducible for a given nfold).",
                           spec->wrt[i], axes, spec->wrt[i], dtype_name(fi->pdt),
                           emit_sum_name(a, arena_printf(a, "%s_bwd", emit_ident(a, fwd->name))));
            else if (spec->grad_rmw && spec->grad_rmw[i] && !spec->grad_write[i])
                buf_printf(&t, "d_%s is added without atomics (deterministic): the forward reads %s at several "
                               "sites, but no two programs read one element, so each program adds each site's "
                               "gradient by a load and a store of its own elements, in program order%s.",
                           spec->wrt[i], spec->wrt[i], first_note(spec, i));
            else if (spec->grad_rmw && spec->grad_rmw[i])
                buf_printf(&t, "d_%s is added without atomics (deterministic) when %s holds for the launch (the "
                               "launcher checks it and passes the answer as a tl.constexpr): the forward reads %s at several sites, and then no "
                               "two programs read one element, so each program adds each site's gradient by a load "
                               "and a store of its own elements%s; else with tl.atomic_add, whose order of float "
                               "additions is not deterministic.",
                           spec->wrt[i], spec->grad_when[i], spec->wrt[i], first_note(spec, i));
            else if (!spec->grad_write[i])
                buf_printf(&t, "d_%s is written with plain tl.store (deterministic): the forward reads each "
                               "element of %s at most once in the whole launch.",
                           spec->wrt[i], spec->wrt[i]);
            else if (spec->grad_when && spec->grad_when[i])
                buf_printf(&t, "d_%s is written with plain tl.store (deterministic) when %s holds for the "
                               "launch (the launcher checks it and passes the answer as a tl.constexpr), else accumulated with "
                               "tl.atomic_add, whose order of float additions is not deterministic.",
                           spec->wrt[i], spec->grad_when[i]);
            else
                buf_printf(&t, "d_%s is accumulated with tl.atomic_add, because %s: the order of those float "
                               "additions is not deterministic, so results may differ in the last bits from "
                               "run to run.",
                           spec->wrt[i], spec->grad_write[i]);
            emit_wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
            buf_puts(&h, "\n");
        }
    }
    for (int j = 0; j < P->notes.n; j++) {
        emit_wrap(&h, P->notes.v[j], LINE_LIMIT - 2, "    ", 0);
        buf_puts(&h, "\n");
    }
    if (P->spread) {
        t.len = 0;
        /* a row's parts always take at least 2 programs (emit_print_spread_plan), other loops only more */
        const char *few = "when the launch has fewer programs than twice the GPU's SMs";
        const char *when = P->spread->lanes ? "" : arena_printf(a, "%s, ", few);
        const char *how = P->spread->lanes ? arena_printf(a, ": at least 2, more %s", few) : "";
        buf_printf(&t, "loop at line %d: its iterations share nothing, so %s%s deals each forward program's "
                       "iterations to %s programs (%s%s, at most the trip count), the grid's axis 0 times that; "
                       "the gradients are the same bits (docs/AD.md, \"Spreading a loop over programs\")",
                   P->spread->loc.line, when, lname, KAD_SPREAD_PARAM, KAD_SPREAD_PARAM, how);
        emit_wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
        buf_puts(&h, "\n");
    }
    for (int j = 0; j < P->tapes.n; j++) {
        t.len = 0;
        buf_puts(&t, tape_describe(a, P, j, lname));
        emit_wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
        buf_puts(&h, "\n");
    }
    t.len = 0;
    shape_notes(a, fwd, fwd->body, &t);
    for (const char *p = t.len ? buf_str(&t) : NULL; p && *p;) {
        const char *nl = strchr(p, '\n');
        emit_wrap(&h, arena_printf(a, "%.*s", (int)(nl - p), p), LINE_LIMIT - 2, "    ", 0);
        buf_puts(&h, "\n");
        p = nl + 1;
    }
    if (spec->grad_write) {
    } else if (ir_block_has_op(bwd->body, OP_ATOMIC_ADD)) {
        t.len = 0;
        buf_puts(&t, "Input gradients are accumulated with tl.atomic_add: the order of those float additions "
                     "is not deterministic, so results may differ in the last bits from run to run.");
        emit_wrap(&h, buf_str(&t), LINE_LIMIT - 2, "", 0);
        buf_puts(&h, "\n");
    }
    return buf_str(&h);
}

static const char *py_escaped(Arena *a, const char *text);

/* A kernel that is not a backward (a saving forward, a jvp, a race check) as a Program of one
 * launch, for emit_print_launcher.  The launcher only reads it. */
static const Program *alone(Arena *a, const Func *f)
{
    Program *p = plan_new(a, (Func *)f);
    plan_steps(p);
    return p;
}

/* check_<kernel>_launch(grid, *args): the backward's launch conditions (Program.guards) on the
 * forward's runtime arguments alone, so that the package refuses a launch before its forward
 * runs (an in-place forward would otherwise have overwritten its buffer by then). */
static void print_launch_check(Buf *out, Arena *a, const Program *P, const DefParam *o, int nfwd, const Func *fwd)
{
    const Func *bwd = P->main;
    Buf names = {.a = a}, meta = {.a = a};
    for (int k = 0; k < nfwd + bwd->consts.n; k++)
        if (emit_is_arg(bwd, o, k))
            buf_printf(&names, "\"%s\", ", o[k].cnst ? bwd->consts.v[o[k].i].name
                                                     : bwd->vals.v[bwd->params[o[k].i]].name);
    for (int i = 0; i < bwd->consts.n; i++)
        if (!bwd->consts.v[i].runtime)
            buf_printf(&meta, ", \"%s\": %s", bwd->consts.v[i].name, bwd->consts.v[i].value);
    buf_printf(out, "\n\ndef check_%s_launch(grid, *args):\n    \"\"\"", emit_ident(a, fwd->name));
    emit_wrap(out, arena_printf(a, "Raises ValueError (located) when this launch of %s breaks a condition its backward "
                              "needs (docs/AD.md); the package calls it before the forward runs. args: the forward's "
                              "runtime arguments.", fwd->name),
         LINE_LIMIT, "    ", 7);
    buf_printf(out, "\n    \"\"\"\n");
    if (!P->guards.n || fwd->descs.n) { /* (host-side descriptors: their launcher checks, expanded) */
        buf_puts(out, "    return\n");
        return;
    }
    buf_printf(out, "    names = (%s)\n", buf_str(&names));
    buf_printf(out, "    _a = dict(zip(names, args))\n"
                    "    _g = tuple(grid({**_a%s}) if callable(grid) else grid)\n"
                    "    _g = _g + (1,) * (3 - len(_g))\n", buf_str(&meta));
    Buf conds = {.a = a};
    const char **c = arena_alloc(a, sizeof *c * (size_t)P->guards.n);
    for (int i = 0; i < P->guards.n; i++) {
        c[i] = access_cond_host((Access *)P->guards.v[i].acc, P->guards.v[i].cond, "_a", "_g");
        buf_puts(&conds, c[i] ? c[i] : "");
    }
    if (strstr(buf_str(&conds), "_tdiv(") || strstr(buf_str(&conds), "_trem(")) {
        buf_puts(out, "\n");
        emit_print_tdiv(out);
    }
    for (int i = 0; i < P->guards.n; i++) {
        const FuncGuard *g = &P->guards.v[i];
        const char *m = arena_printf(a, "%s:%d:%d: error: %s", g->loc.file ? g->loc.file : "<kernel>", g->loc.line,
                                     g->loc.col, g->msg);
        buf_printf(out, "    if not (%s):\n        raise ValueError(\"%s\")\n", c[i] ? c[i] : "False", py_escaped(a, m));
    }
}

/* The line that ends the kernels of a backward module and opens its host part (the launcher and
 * its helpers), followed by a comment saying what the host part is. */
static void print_launcher_separator(Buf *out, Arena *a, const char *lname)
{
    buf_puts(out, "\n\n" KAD_LAUNCHER_MARK "\n# ");
    emit_wrap(out, arena_printf(a, "Host code from here on: %s(grid, *args) checks a launch, allocates what the "
                              "kernels above need and launches them. The kernels alone: kad grad --kernels-only, "
                              "or kad.backward_source(..., kernels_only=True).", lname),
         LINE_LIMIT, "# ", 2);
    buf_putc(out, '\n');
}

bool emit_triton_backward(Buf *out, const Func *fwd, const Program *P, const AdSpec *spec, bool kernels_only,
                          Diags *d)
{
    const Func *bwd = P->main;
    Arena *a = out->a;
    int nfwd = fwd->nparams;
    ASSERT(plan_nargs(P) == nfwd + spec->nouts + ad_spec_nwrt_only(spec) && bwd->consts.n == fwd->consts.n);
    const char *kname = arena_printf(a, "%s_bwd", emit_ident(a, fwd->name));
    const char *lname = arena_printf(a, "launch_%s", kname);
    DefParam *o = emit_def_order(a, bwd, nfwd);
    EmitOptions opt = {
        .name = kname,
        .header = bwd_header(a, fwd, P, spec, o, nfwd, lname),
        .backward = true,
        .nfwd = nfwd,
        .nouts = spec->nouts,
        .fold = P->fold,
        .flags = P->flags.v,
        .nflags = P->flags.n,
    };
    if (!emit_triton(out, bwd, &opt, d))
        return false;
    if (P->fold) {
        const FoldPlan *pl = P->fold;
        Buf hd = {.a = a}, ns = {.a = a};
        for (int j = 0; j < pl->n; j++) {
            const char *x = pl->n > 1 ? arena_printf(a, "_%s", pl->in[j].name) : "";
            buf_printf(&hd, "%sd_%s", j ? (j + 1 == pl->n ? " and " : ", ") : "", pl->in[j].name);
            buf_printf(&ns, "%s\"span%s\", \"nfold%s\"", j ? ", " : "", x, x);
        }
        EmitOptions so = {
            .name = emit_sum_name(a, kname),
            .header = arena_printf(a, "%s += (= when dense) the rows of %s partials, summed in a fixed order "
                                      "(deterministic)%s", buf_str(&hd), pl->n > 1 ? "their" : "its",
                                   pl->n > 1 ? ": each its own programs, in this order" : ""),
            .fragment = true,
            .jit_args = arena_printf(a, "do_not_specialize=[%s]", buf_str(&ns)),
        };
        buf_puts(out, "\n\n");
        if (!emit_triton(out, P->sum, &so, d))
            return false;
    }
    if (P->gemm) {
        const GemmPlan *pl = P->gemm;
        EmitOptions go = opt;
        go.fold = NULL; /* the main kernel's plan, not the GEMM kernels' */
        go.flags = NULL;
        go.nflags = 0;
        go.name = pl->first->name;
        go.header = arena_printf(a, "the GEMM form, kernel 1: the backward without the K loop's operand gradients; "
                                    "stores each program's %s tile at its tile pair (u, v) of kad_dacc", pl->data);
        go.fragment = true;
        buf_puts(out, "\n\n");
        if (!emit_triton(out, pl->first, &go, d))
            return false;
        for (int i = 0; i < pl->n; i++) {
            go.name = pl->op[i].k->name;
            int r = pl->op[i].group;
            const char *one = arena_printf(a, "the GEMM form: d_%s, one tile per program (its tile id, a K "
                                              "iteration), summing over the other tile id in order, one plain store",
                                           pl->op[i].name);
            const char *what =
                r > 1 && pl->op[i].wide
                    ? arena_printf(a, "the GEMM form: d_%s, %d K iterations per program as one tile %d times as wide "
                                      "along K (its tile id, %d consecutive K iterations side by side: one dot per %s "
                                      "tile), summed over the other tile id in order, one plain store (elements of "
                                      "iterations past the loop's end: masked off)",
                                   pl->op[i].name, r, r, r, pl->data)
                : r > 1 ? arena_printf(a, "the GEMM form: d_%s, %d tiles per program (its tile id, %d consecutive K "
                                          "iterations: each %s tile loaded once serves the %d), each summed over the "
                                          "other tile id in order, one plain store each (iterations past the loop's "
                                          "end: masked off)",
                                       pl->op[i].name, r, r, pl->data, r)
                        : one;
            const char *ch = pl->op[i].chunk ? arena_printf(a, "; the sum over the other tile id in chunks of %d of its "
                                                               "lanes (one dot per chunk, into the accumulator)",
                                                            pl->op[i].chunk)
                                             : "";
            go.header = arena_printf(a, "%s%s; a 1-D grid, the programs taking the tile ids in blocks of %d, each K "
                                        "group of a block in turn (programs running together share both operands "
                                        "in L2)", what, ch, GEMM_ORDER);
            buf_puts(out, "\n\n");
            if (!emit_triton(out, pl->op[i].k, &go, d))
                return false;
            if (pl->op[i].single) {
                go.name = pl->op[i].single->name;
                go.header = arena_printf(a, "%s%s: launched instead of %s when that kernel's grid has fewer programs "
                                            "than the GPU has SMs (the same sums, bit for bit)", one, ch, pl->op[i].k->name);
                buf_puts(out, "\n\n");
                if (!emit_triton(out, pl->op[i].single, &go, d))
                    return false;
            }
        }
    }
    for (int j = 0; P->gather && j < P->gather->n; j++) {
        const GatherIn *gi = &P->gather->in[j];
        EmitOptions go = opt;
        go.fold = NULL; /* the main kernel's plan, not the gather kernel's */
        go.flags = NULL;
        go.nflags = 0;
        go.name = gi->k->name;
        if (gi->scatter)
            go.header = arena_printf(a, "d_%s at the %d scattered site%s (addresses kad cannot express), added with "
                                        "tl.atomic_add after %s has written the rest: the backward pruned to what "
                                        "those additions need", gi->name, gi->nsites, gi->nsites > 1 ? "s" : "",
                                     kname);
        else
            go.header = arena_printf(a, "d_%s gathered: program t along each axis d owns the positions Q of tile t + "
                                        "t_lo; for each of the %d sites k in order it recomputes, at the position "
                                        "Q - o_k that adds into Q, the site's value and mask (only positions a launched "
                                        "program owns), sums them in %s and stores each element of d_%s once",
                                     gi->name, gi->nsites, dtype_name(fold_partial_dtype((Dtype)ir_type(bwd, bwd->params[gi->slot]).elem)),
                                     gi->name);
        go.fragment = true;
        buf_puts(out, "\n\n");
        if (!emit_triton(out, gi->k, &go, d))
            return false;
    }
    /* Kernels first, then the host part: a reader sees the math before the plumbing.  Only
     * definitions follow (functions, tables, the launcher), none of which the kernels use. */
    if (kernels_only) {
        buf_printf(out, "\n\n# (kernels only: %s, the launcher, is left out)\n", lname);
        return true;
    }
    print_launcher_separator(out, a, lname);
    if (P->gemm)
        emit_print_gemm_helper(out, a, P);
    bool covers = false;
    for (int i = 0; i < P->covers.n; i++)
        covers |= P->covers.v[i].cover != NULL;
    for (int i = 0; P->gemm && i < P->gemm->n; i++)
        covers |= P->gemm->op[i].cover != NULL;
    if (covers)
        buf_printf(out, "\n\n%s", kad_py_covers);
    if (fwd->descs.n)
        buf_puts(out, kad_py_descs);
    if (emit_has_desc(bwd))
        buf_puts(out, kad_py_tma);
    if (P->fold)
        buf_printf(out, "\n\n%s%s%s", kad_py_fold_fill, kad_py_sms, kad_py_dense);
    else if (P->spread && !P->gemm)
        buf_printf(out, "\n\n%s", kad_py_sms);
    buf_printf(out, "%s%s%s", P->fold ? "" : "\n\n", kad_py_go, kad_py_tune);
    /* the package's question (docs/GRAD.md, "Launch parameters"): a dot's tiles follow the forward's
     * warps (an autotuned matmul's config); a kernel without one is better with kad's defaults */
    buf_printf(out, "\n\n# the package passes the forward's num_warps/num_stages to this launcher only when True: when\n"
                    "# the backward has a tl.dot, whose tiles follow the forward's warps (docs/GRAD.md)\n"
                    "_kad_forward_options = %s\n", emit_has_dot(bwd) ? "True" : "False");
    if (P->trusted) {
        buf_puts(out, "# the buffers this backward loads as the forward stored them (docs/AD.md, \"Trusted saved outputs\"):\n"
                      "# its launcher takes outputs_unmodified=True\n_kad_trusted = (");
        const char *p = P->trusted;
        while (*p) {
            const char *q = strchr(p, ',');
            size_t n = q ? (size_t)(q - p) : strlen(p);
            buf_printf(out, "\"%.*s\", ", (int)n, p);
            p += n + (q != NULL);
        }
        buf_puts(out, ")\n");
    }
    emit_print_launcher(out, a, P, o, nfwd, spec->nouts, fwd, kname, lname, -1);
    print_launch_check(out, a, P, o, nfwd, fwd);
    return true;
}

/* The def's parameters of f (order o, nfwd runtime ones) as a signature: `name=type` (with its
 * range) or `name=value` for a constexpr, comma-separated (a module header's "Specialized for"). */
static void def_signature(Buf *sig, const Func *f, const DefParam *o, int nfwd)
{
    for (int k = 0; k < nfwd + f->consts.n; k++) {
        if (sig->len)
            buf_puts(sig, ", ");
        if (o[k].cnst) {
            buf_printf(sig, "%s=%s", f->consts.v[o[k].i].name, f->consts.v[o[k].i].value);
        } else {
            ValId p = f->params[o[k].i];
            buf_printf(sig, "%s=", f->vals.v[p].name ? f->vals.v[p].name : "?");
            type_print(sig, ir_type(f, p));
            print_range(sig, f, o[k].i);
        }
    }
}

/* A module's forward-like kernel f (a jvp kernel, a saving forward: the def's parameters, then
 * its own) named kname under the module comment header, with the helpers its launcher uses. */
static bool emit_forward_kernel(Buf *out, const Func *fwd, const Func *f, const char *kname, const char *header,
                                Diags *d)
{
    EmitOptions opt = {
        .name = kname,
        .header = header,
        .backward = true,
        .jvp = true,
        .nfwd = fwd->nparams,
        .nouts = 0,
    };
    if (!emit_triton(out, f, &opt, d))
        return false;
    if (fwd->descs.n)
        buf_puts(out, kad_py_descs);
    if (emit_has_desc(f))
        buf_puts(out, kad_py_tma);
    buf_printf(out, "\n\n%s%s", kad_py_go, kad_py_tune);
    return true;
}

bool emit_triton_saving(Buf *out, const Func *fwd, const Func *sv, int64_t slot, Diags *d)
{
    Arena *a = out->a;
    int nfwd = fwd->nparams;
    ASSERT(sv->nparams == nfwd + 1 && sv->consts.n == fwd->consts.n);
    const char *kname = arena_printf(a, "%s_fwd", emit_ident(a, fwd->name));
    const char *lname = arena_printf(a, "launch_%s", kname);
    DefParam *o = emit_def_order(a, sv, nfwd);
    Buf sig = {.a = a}, h = {.a = a}, t = {.a = a};
    def_signature(&sig, sv, o, nfwd);
    buf_printf(&sig, "%s%s=*fp32", sig.len ? ", " : "", KAD_SAVE_PARAM);
    buf_printf(&h, "The Triton kernel %s with its loop results saved for the backward, generated by kad %s.\n",
               fwd->name, KAD_VERSION_STRING);
    buf_puts(&h, "Specialized for: ");
    emit_wrap(&h, buf_str(&sig), LINE_LIMIT - 2, "    ", 17);
    buf_puts(&h, "\n");
    buf_printf(&t, "Computes what %s computes and stores, after each loop whose results the backward would "
                   "otherwise compute again by running the loop, those results into %s: %lld fp32 elements per "
                   "program, program p's slot at p * %lld with p = pid0 + G0 * (pid1 + G1 * pid2). The backward "
                   "built for this buffer (kad_grad_ex with KAD_GRAD_SAVED) loads them (docs/AD.md, \"Saved "
                   "loop results\").",
               fwd->name, KAD_SAVE_PARAM, (long long)slot, (long long)slot);
    emit_wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
    buf_printf(&h, "\nLaunch with %s(grid, *args, %s): args are the forward's runtime arguments.", lname,
               KAD_SAVE_PARAM);
    if (!emit_forward_kernel(out, fwd, sv, kname, buf_str(&h), d))
        return false;
    buf_printf(out, "\n\n_kad_slot = %lld  # fp32 elements of %s per program\n", (long long)slot, KAD_SAVE_PARAM);
    emit_print_launcher(out, a, alone(a, sv), o, nfwd, 1, fwd, kname, lname, -2);
    return true;
}

bool emit_triton_jvp(Buf *out, const Func *fwd, const Func *jv, const AdSpec *spec, Diags *d)
{
    Arena *a = out->a;
    int nfwd = fwd->nparams;
    ASSERT(jv->nparams == nfwd + spec->nouts + ad_spec_nwrt_only(spec) && jv->consts.n == fwd->consts.n);
    const char *kname = arena_printf(a, "%s_jvp", emit_ident(a, fwd->name));
    const char *lname = arena_printf(a, "launch_%s", kname);
    DefParam *o = emit_def_order(a, jv, nfwd);
    int nin = spec->nwrt; /* tangent inputs (in-place names among them), then the outputs' */
    Buf sig = {.a = a}, h = {.a = a}, t = {.a = a};
    def_signature(&sig, jv, o, nfwd);
    buf_printf(&h, "Forward-mode derivative (JVP) of the Triton kernel %s, generated by kad %s.\n", fwd->name,
               KAD_VERSION_STRING);
    buf_puts(&h, "Specialized for: ");
    emit_wrap(&h, sig.len ? buf_str(&sig) : "(no parameters)", LINE_LIMIT - 2, "    ", 17);
    buf_puts(&h, "\n");
    buf_printf(&t, "Computes the outputs %s and their tangents (written to %s) from the tangents of the inputs "
                   "%s (read from %s), in one pass: tangent buffers are laid out like their primals, loaded and "
                   "stored with the same offsets and masks; tangents have their primal's dtype.",
               name_list(a, spec->outs, spec->nouts, ""), name_list(a, spec->outs, spec->nouts, "t_"),
               name_list(a, spec->wrt, spec->nwrt, ""), name_list(a, spec->wrt, spec->nwrt, "t_"));
    emit_wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
    buf_printf(&h, "\nLaunch with %s(grid, *args): args are the forward's runtime arguments, then the tangents.",
               lname);
    if (!emit_forward_kernel(out, fwd, jv, kname, buf_str(&h), d))
        return false;
    emit_print_launcher(out, a, alone(a, jv), o, nfwd, jv->nparams - nfwd, fwd, kname, lname, nin);
    return true;
}

/* Python string literal contents for text (quotes and backslashes escaped). */
static const char *py_escaped(Arena *a, const char *text)
{
    Buf m = {.a = a};
    for (const char *p = text; *p; p++) {
        if (*p == '\\' || *p == '"')
            buf_putc(&m, '\\');
        buf_putc(&m, *p);
    }
    return buf_str(&m);
}

bool emit_triton_race(Buf *out, const Func *fwd, const RacePlan *p, Diags *d)
{
    Arena *a = out->a;
    int nfwd = fwd->nparams, ns = p->sites.n;
    const char *base = emit_ident(a, fwd->name);
    const char *kname = arena_printf(a, "%s_race", base), *lname = arena_printf(a, "launch_%s", kname);
    const Func *rk = p->kernel ? p->kernel : fwd;
    DefParam *o = emit_def_order(a, rk, nfwd);
    Buf sig = {.a = a}, h = {.a = a}, t = {.a = a};
    def_signature(&sig, rk, o, nfwd); /* the check kernel's: the outputs' tag buffers are int64 */
    if (p->kernel)
        buf_printf(&sig, "%s%s=*i32", sig.len ? ", " : "", KAD_RACE_PARAM);
    buf_printf(&h, "The one-writer check of the Triton kernel %s's differentiated outputs, generated by kad %s.\n",
               fwd->name, KAD_VERSION_STRING);
    buf_puts(&h, "Specialized for: ");
    emit_wrap(&h, sig.len ? buf_str(&sig) : "(no parameters)", LINE_LIMIT - 2, "    ", 17);
    buf_puts(&h, "\n");
    buf_printf(&t, "check_%s_races(grid, *args) raises ValueError when two programs of the launch, or two lanes "
                   "of one store, write one element of a differentiated output: the forward then races and no "
                   "gradient is right (docs/AD.md, \"One writer per element\"). kad's access analysis proves most "
                   "stores; the rest (an index loaded from memory, a condition on the launch that fails) are "
                   "decided by %s, run on the launch's arguments before the forward.",
               base, p->kernel ? kname : "nothing kad can run (the launch is refused)");
    emit_wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
    if (p->kernel) {
        if (!emit_forward_kernel(out, fwd, rk, kname, buf_str(&h), d))
            return false;
        emit_print_launcher(out, a, alone(a, rk), o, nfwd, 1, fwd, kname, lname, -3);
    } else {
        buf_printf(out, "\"\"\"%s\n\"\"\"\n", buf_str(&h));
    }
    /* the wrapper: the forward's runtime arguments (def order), their positions */
    int ndef = nfwd + rk->consts.n;
    Buf names = {.a = a}, outs = {.a = a}, meta = {.a = a};
    int na = 0;
    for (int k = 0; k < ndef; k++) {
        if (!emit_is_arg(rk, o, k))
            continue;
        const char *n = o[k].cnst ? rk->consts.v[o[k].i].name : rk->vals.v[rk->params[o[k].i]].name;
        buf_printf(&names, "\"%s\", ", n ? n : "?");
        if (!o[k].cnst && o[k].i < 63 && (p->tagged & ((uint64_t)1 << o[k].i)))
            buf_printf(&outs, "%d, ", na);
        na++;
    }
    for (int i = 0; i < rk->consts.n; i++)
        if (!rk->consts.v[i].runtime)
            buf_printf(&meta, ", \"%s\": %s", rk->consts.v[i].name, rk->consts.v[i].value);
    buf_puts(out, "\n\n_kad_race_sites = (  # per store: (its location, two programs met, two lanes met)\n");
    for (int s = 0; s < ns; s++) {
        Loc l = p->sites.v[s].store->loc;
        buf_printf(out, "    (\"%s:%d:%d\",\n     \"%s\",\n     \"%s\"),\n", py_escaped(a, l.file ? l.file : "<kernel>"),
                   l.line, l.col, py_escaped(a, race_message(a, fwd, p, s, true)),
                   py_escaped(a, race_message(a, fwd, p, s, false)));
    }
    buf_puts(out, ")\n");
    buf_printf(out, "\n\ndef check_%s_races(grid, *args):\n", base);
    buf_puts(out, "    \"\"\"");
    emit_wrap(out, arena_printf(a, "Raises ValueError (located at the store) when this launch of %s has two writers of "
                              "one element of a differentiated output; else returns whether the check kernel ran "
                              "(False: kad proved it for the launch). args: the forward's runtime arguments, as "
                              "the forward takes them.", fwd->name),
         LINE_LIMIT, "    ", 7);
    buf_printf(out, "\n    \"\"\"\n    names = (%s)\n", buf_str(&names));
    buf_printf(out, "    if callable(grid):\n        grid = grid({**dict(zip(names, args))%s})\n"
                    "    grid = tuple(grid) + (1,) * (3 - len(grid))\n", buf_str(&meta));
    if (!p->always && p->skip.n) {
        Buf all = {.a = a};
        for (int i = 0; i < p->skip.n; i++)
            buf_printf(&all, "%s(%s)", i ? " and " : "", access_cond_host(p->acc, p->skip.v[i], "_a", "_g"));
        if (strstr(buf_str(&all), "_tdiv(") || strstr(buf_str(&all), "_trem("))
            emit_print_tdiv(out);
        buf_puts(out, "    _a, _g = dict(zip(names, args)), grid\n    if (");
        emit_wrap(out, arena_printf(a, "%s):", buf_str(&all)), LINE_LIMIT, "            ", 8);
        buf_puts(out, "\n        return False  # proven for this launch\n");
    }
    if (!p->kernel) {
        Loc l = p->sites.v[0].store->loc;
        buf_printf(out, "    raise ValueError(\"%s:%d:%d: kad cannot check that no two programs or lanes of this launch "
                        "store one element of this output (%s), and cannot prove it\")\n",
                   py_escaped(a, l.file ? l.file : "<kernel>"), l.line, l.col, py_escaped(a, p->why ? p->why : "?"));
        return true;
    }
    buf_printf(out, "    args = list(args)\n"
                    "    for i in (%s):  # the outputs: int64 tags, the same element offsets\n"
                    "        o = args[i]\n"
                    "        n = o.untyped_storage().nbytes() // o.element_size() - o.storage_offset()\n"
                    "        args[i] = torch.zeros(max(n, 1), dtype=torch.int64, device=o.device)\n"
                    "    info = torch.zeros(%d, dtype=torch.int32, device=args[i].device)\n"
                    "    %s(grid, *args, info)\n"
                    "    counts = info.tolist()\n"
                    "    errors = [f\"{where}: error: {(programs if counts[2 * s] else lanes)} \"\n"
                    "              f\"({counts[2 * s] or counts[2 * s + 1]} lanes)\"\n"
                    "              for s, (where, programs, lanes) in enumerate(_kad_race_sites)\n"
                    "              if counts[2 * s] or counts[2 * s + 1]]\n"
                    "    if errors:\n"
                    "        raise ValueError(\"\\n\".join(errors))\n"
                    "    return True\n",
               buf_str(&outs), 2 * ns, lname);
    return true;
}
