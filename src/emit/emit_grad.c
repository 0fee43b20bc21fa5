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
 */
#include <string.h>

#include "emit/py/embed.h"
#include "plan/plan.h"

/* The comment line between a backward module's kernels and its host part (docs/GRAD.md). */
#define KAD_LAUNCHER_MARK "# ---- the launcher --------------------------------------------------------------------------------"

/* Comment and docstring lines stay within this many characters. */
enum { LINE_LIMIT = 100 };

/* name as a Python identifier: other characters become '_' (IR names may
 * hold '.'), a leading digit gets a 'k'. */
static const char *ident(Arena *a, const char *name)
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
static const char *sum_name(Arena *a, const char *kname)
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
static void wrap(Buf *b, const char *text, size_t width, const char *cont, size_t col)
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

/* A gather's launch condition (FuncFlag j of bwd) as Triton would write it. */
static const char *flag_python(Arena *a, const Func *bwd, int j)
{
    const FuncFlag *fl = &bwd->flags.v[j];
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
    wrap(&h, sig.len ? buf_str(&sig) : "(no parameters)", LINE_LIMIT - 2, "    ", 17);
    buf_puts(&h, "\n");
    Buf t = {.a = a};
    buf_printf(&t, "Outputs: %s (gradients read from %s).", name_list(a, spec->outs, spec->nouts, ""),
               name_list(a, spec->outs, spec->nouts, "d_"));
    wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
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
                   name_list(a, ins, nins, ""), name_list(a, ins, nins, "d_"), lname, ident(a, fwd->name));
        wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
        buf_puts(&h, "\n");
    }
    if (nboth) {
        t.len = 0;
        buf_printf(&t, "Updated in place: %s. Pass %s holding the value before the launch; %s holds the "
                       "gradient of the value after the launch on entry and is overwritten with the gradient "
                       "of the value before it.",
                   name_list(a, both, nboth, ""), nboth == 1 ? "it" : "each", name_list(a, both, nboth, "d_"));
        wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
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
    wrap(&h, buf_str(&t), LINE_LIMIT - 2, "", 0);
    buf_puts(&h, "\n");
    if (spec->grad_write) {
        /* per input (ad_backward's decision): plain stores or atomics, and why */
        for (int i = 0; i < spec->nwrt; i++) {
            t.len = 0;
            const FoldInput *fi = NULL;
            for (int j = 0; bwd->fold && j < bwd->fold->n; j++)
                if (!strcmp(bwd->fold->in[j].name, spec->wrt[i]))
                    fi = &bwd->fold->in[j];
            const char *axes = NULL;
            if (fi) {
                unsigned m = bwd->fold->axes;
                axes = m == 5   ? "axes 0 and 2"
                       : m == 3 ? "axes 0 and 1"
                       : m == 6 ? "axes 1 and 2"
                       : m == 7 ? "axes 0, 1 and 2"
                                : arena_printf(a, "axis %d", bwd->fold->axis);
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
                           ident(a, fwd->name), rest);
            } else if (gi)
                buf_printf(&t, "d_%s is gathered%s%s%s: the forward reads %s at %d sites, each a function of the "
                               "programs' positions pid * BLOCK + tl.arange(0, BLOCK) shifted by a constant, so %s "
                               "(the forward's grid plus %lld, %lld, %lld programs) sums, for each element, the "
                               "%d sites' gradients that add into it in a fixed order (recomputing each at the "
                               "position that reads the element) and stores it once with tl.store "
                               "(deterministic, without atomics or partials)%s.",
                           spec->wrt[i], gi->flag >= 0 ? " when " : "",
                           gi->flag >= 0 ? flag_python(a, bwd, gi->flag) : "",
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
                           ident(a, fwd->name), spec->wrt[i],
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
                           sum_name(a, arena_printf(a, "%s_bwd", ident(a, fwd->name))),
                           fi->flag ? "; else with tl.atomic_add (every site into one row), whose order of "
                                      "float additions is not deterministic" : "");
            else if (fi)
                buf_printf(&t, "d_%s is summed deterministically, without atomics: every program along grid %s "
                               "reads the same elements of %s, so the backward runs with nfold programs "
                               "there, each summing the contributions of its share of the forward's programs in "
                               "order into its own row of %s partials, and %s adds the rows in a fixed "
                               "order (bitwise reproducible for a given nfold).",
                           spec->wrt[i], axes, spec->wrt[i], dtype_name(fi->pdt),
                           sum_name(a, arena_printf(a, "%s_bwd", ident(a, fwd->name))));
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
            wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
            buf_puts(&h, "\n");
        }
    }
    for (int j = 0; j < P->notes.n; j++) {
        wrap(&h, P->notes.v[j], LINE_LIMIT - 2, "    ", 0);
        buf_puts(&h, "\n");
    }
    if (P->spread) {
        t.len = 0;
        /* a row's parts always take at least 2 programs (print_spread_plan), other loops only more */
        const char *few = "when the launch has fewer programs than twice the GPU's SMs";
        const char *when = P->spread->lanes ? "" : arena_printf(a, "%s, ", few);
        const char *how = P->spread->lanes ? arena_printf(a, ": at least 2, more %s", few) : "";
        buf_printf(&t, "loop at line %d: its iterations share nothing, so %s%s deals each forward program's "
                       "iterations to %s programs (%s%s, at most the trip count), the grid's axis 0 times that; "
                       "the gradients are the same bits (docs/AD.md, \"Spreading a loop over programs\")",
                   P->spread->loc.line, when, lname, KAD_SPREAD_PARAM, KAD_SPREAD_PARAM, how);
        wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
        buf_puts(&h, "\n");
    }
    for (int j = 0; j < P->tapes.n; j++) {
        t.len = 0;
        buf_puts(&t, tape_describe(a, P, j, lname));
        wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
        buf_puts(&h, "\n");
    }
    t.len = 0;
    shape_notes(a, fwd, fwd->body, &t);
    for (const char *p = t.len ? buf_str(&t) : NULL; p && *p;) {
        const char *nl = strchr(p, '\n');
        wrap(&h, arena_printf(a, "%.*s", (int)(nl - p), p), LINE_LIMIT - 2, "    ", 0);
        buf_puts(&h, "\n");
        p = nl + 1;
    }
    if (spec->grad_write) {
    } else if (ir_block_has_op(bwd->body, OP_ATOMIC_ADD)) {
        t.len = 0;
        buf_puts(&t, "Input gradients are accumulated with tl.atomic_add: the order of those float additions "
                     "is not deterministic, so results may differ in the last bits from run to run.");
        wrap(&h, buf_str(&t), LINE_LIMIT - 2, "", 0);
        buf_puts(&h, "\n");
    }
    return buf_str(&h);
}

/* Whether def position k is an argument of the launcher: a runtime
 * parameter, or one Triton specializes to a constant (None, 1). */
static bool is_arg(const Func *bwd, const DefParam *o, int k)
{
    return !o[k].cnst || bwd->consts.v[o[k].i].runtime;
}

/* The name of gradient parameter i in the contract: a folded input's
 * partials stand in d_<x>'s place. */
static const char *grad_name(Arena *a, const Func *bwd, int i)
{
    for (int j = 0; bwd->fold && j < bwd->fold->n; j++)
        if (bwd->fold->in[j].slot == i)
            return arena_printf(a, "d_%s", bwd->fold->in[j].name);
    return bwd->vals.v[bwd->params[i]].name;
}

/* The FuncCover of bwd param v, or NULL. */
static const FuncCover *cover_of(const Program *P, ValId v)
{
    for (int j = 0; j < P->covers.n; j++)
        if (P->covers.v[j].param == v)
            return &P->covers.v[j];
    return NULL;
}

/* The partials' buffers of a plan: one allocation per partials dtype
 * (fp32 first, then fp64), each input's rows a slice of it. */
static int fold_buffers(const FoldPlan *pl, Dtype *dts)
{
    int nb = 0;
    for (int j = 0; j < pl->n; j++) {
        bool seen = false;
        for (int b = 0; b < nb; b++)
            seen |= dts[b] == pl->in[j].pdt;
        if (!seen)
            dts[nb++] = pl->in[j].pdt;
    }
    if (nb == 2 && dts[0] == DT_F64)
        dts[0] = DT_F32, dts[1] = DT_F64;
    return nb;
}

/* The fold's part of _kad_plan (ad_fold.c), after the conditions and
 * zero-fills (flags, zero defined): the grid folded to nfold programs
 * along its first folded axis, each input's span, rows, density and
 * whether its partials may stay uninitialized, the buffers' sizes, the
 * extra kernel arguments and the sum kernel's grid and arguments.
 * at0: the plan's index of the first gradient (the contract's params
 * nfwd..); first_in: the contract's first input gradient. */
static void print_fold_plan(Buf *out, Arena *a, const Program *P, int nfwd, int at0, int first_in)
{
    const Func *bwd = P->main;
    const FoldPlan *pl = bwd->fold;
    bool folded = pl->axes != 0;
    buf_printf(out, "    # deterministic sums: %spartials, one sum kernel (ad_fold)\n",
               folded ? "the grid folded along its axis, " : "");
    Buf ax = {.a = a}, un = {.a = a};
    for (int k = 0; k < 3; k++)
        buf_printf((pl->axes & (1u << k)) ? &ax : &un, "%s%d", ((pl->axes & (1u << k)) ? ax.len : un.len) ? ", " : "",
                   k);
    bool multi = folded && (pl->axes & (pl->axes - 1)) != 0;
    if (folded)
        buf_printf(out, "    programs = [grid[k] for k in (%s%s)]  # the forward's, along the folded axes\n",
                   buf_str(&ax), multi ? "" : ",");
    buf_puts(out, "    if min(grid) <= 0:  # nothing to launch: every input gradient is zero\n"
                  "        return flags, zero + [");
    for (int j = 0, n = 0; j < pl->n; j++)
        if (pl->in[j].slot >= first_in)
            buf_printf(out, "%s%d", n++ ? ", " : "", at0 + pl->in[j].slot - nfwd);
    buf_puts(out, "], None, None, None, None, None, None  # the launcher returns after the zero-fills\n");
    if (multi)
        buf_puts(out, "    if math.prod(programs) >= 2**31:\n"
                      "        raise ValueError(f\"the folded grid has {math.prod(programs)} programs: more than 2**31 - 1\")\n");
    buf_printf(out, "    dev = args[%d].device\n", at0 + pl->in[0].slot - nfwd);
    if (folded) {
        /* 2 a SM, and at least 2 of the forward's programs each (256 rows, H100: 256 -> 128 programs,
         * LayerNorm's backward 7.2 -> 6.3 us, RMSNorm's 6.3 -> 5.2; 64: no better) */
        buf_puts(out, "    if nfold is None:\n"
                      "        nfold = min(2 * _kad_sms(dev), -(-math.prod(programs) // 2)) if dev.type == \"cuda\" else 3\n"
                      "    nfold = max(1, min(int(nfold), math.prod(programs)))\n");
        buf_printf(out, "    # one program along every unfolded axis: each program zeroes its own rows of partials\n"
                        "    alone = %s\n",
                   un.len ? arena_printf(a, "all(grid[k] == 1 for k in (%s%s))", buf_str(&un),
                                         strchr(buf_str(&un), ',') ? "" : ",")
                          : "True");
    }
    Dtype dts[2];
    int nb = fold_buffers(pl, dts);
    buf_puts(out, "    sums = []  # per input: (span, rows, dense) for the sum kernel\n");
    for (int b = 0; b < nb; b++)
        buf_printf(out, "    sizes%d, clear%d = [], False  # the %s buffer: its slices, zero-filled or not\n", b, b,
                   dtype_name(dts[b]));
    for (int j = 0; j < pl->n; j++) {
        const FoldInput *in = &pl->in[j];
        int at = at0 + in->slot - nfwd, b = dts[0] == in->pdt ? 0 : 1;
        bool grad = in->slot >= first_in; /* an in-place buffer's gradient (never folded today) adds */
        buf_printf(out, "    d = args[%d]  # %s\n", at, grad_name(a, bwd, in->slot));
        buf_puts(out, "    span = 1 + sum((n - 1) * s for n, s in zip(d.shape, d.stride())) if d.numel() else 0\n");
        if (grad)
            buf_printf(out, "    dense = _kad_dense(d)\n"
                            "    if not dense:\n"
                            "        zero.append(%d)  # its sum kernel adds into it (a dense d it overwrites entirely)\n",
                       at);
        else
            buf_puts(out, "    dense = False  # it holds what to add to\n");
        if (!in->rows) {
            const FuncCover *fc = in->load_store ? cover_of(P, bwd->params[in->slot]) : NULL;
            const char *cv = fc && fc->cover ? access_cover_host(fc->acc, fc->cover, "d", "_a", "_g") : NULL;
            buf_puts(out, "    rows = nfold\n");
            if (cv) {
                buf_printf(out, "    # else uninitialized rows are right only where its one site (stored once per program,\n"
                                "    # at the load's addresses) reaches every element of a dense d\n"
                                "    clear%d = clear%d or not (alone or ", b, b);
                wrap(out, arena_printf(a, "dense and %s)", cv), LINE_LIMIT, "            ", 30);
                buf_puts(out, "\n");
            } else {
                buf_printf(out, "    clear%d = clear%d or not alone  # several programs share a row: none may zero it\n", b, b);
            }
        } else {
            int fl = -1;
            for (int k = 0; k < bwd->flags.n; k++)
                if (bwd->flags.v[k].param == in->flag)
                    fl = k;
            if (in->flag && fl >= 0)
                buf_printf(out, "    rows = %d if flags[%d] else 1  # a row per site; atomics into one\n", in->rows, fl);
            else
                buf_printf(out, "    rows = %d  # a row per site\n", in->rows);
            buf_printf(out, "    clear%d = True  # sites of neighbouring programs share the rows\n", b);
        }
        buf_printf(out, "    sizes%d.append(-(-rows * span // 64) * 64)  # slices start at multiples of 64 elements\n"
                        "    sums.append((span, rows, int(dense)))\n",
                   b);
    }
    buf_puts(out, "    alloc = (");
    for (int b = 0; b < nb; b++)
        buf_printf(out, "%s(sum(sizes%d), sizes%d, clear%d)", b ? ", " : "", b, b, b);
    buf_printf(out, "%s)\n", nb == 1 ? "," : "");
    buf_printf(out, "    extra = [s for s, _, _ in sums]%s\n", folded ? " + programs" : "");
    buf_printf(out, "    sgrid = (sum(triton.cdiv(s, %d) for s, _, _ in sums), 1, 1)\n", FOLD_SUM_BLOCK);
    if (multi)
        buf_printf(out, "    grid = tuple(nfold if k == %d else 1 if k in (%s) else g for k, g in enumerate(grid))\n",
                   pl->axis, buf_str(&ax));
    else if (folded)
        buf_printf(out, "    grid = tuple(nfold if k == %d else g for k, g in enumerate(grid))\n", pl->axis);
    buf_puts(out, "    return flags, zero, grid, extra, (dev, alloc), sgrid, sums, _kad_ck(dev)\n");
}

/* The launch of a folded backward, after the plan's lookup (flags and
 * zero-fills done): the partials' buffers (torch.empty, or torch.zeros
 * when the plan says so; _kad_fill, a value tests set, fills what would
 * stay uninitialized), their slices in the gradients' places, the spans
 * and program counts appended. */
static void print_fold(Buf *out, Arena *a, const Func *bwd, int nfwd, int at0)
{
    const FoldPlan *pl = bwd->fold;
    Dtype dts[2];
    int nb = fold_buffers(pl, dts);
    buf_puts(out, "    dev, alloc = alloc\n");
    buf_puts(out, "    d_in = [");
    for (int j = 0; j < pl->n; j++)
        buf_printf(out, "%sargs[%d]", j ? ", " : "", at0 + pl->in[j].slot - nfwd);
    buf_puts(out, "]\n");
    for (int b = 0; b < nb; b++) {
        int cnt = 0;
        for (int j = 0; j < pl->n; j++)
            cnt += pl->in[j].pdt == dts[b];
        buf_printf(out, "    numel, sizes, clear = alloc[%d]\n"
                        "    part = (torch.zeros if clear else torch.empty)(numel, dtype=torch.%s, device=dev)\n"
                        "    if _kad_fill is not None and not clear:\n"
                        "        part.fill_(_kad_fill)  # tests only: what the kernels must never read\n",
                   b, dts[b] == DT_F64 ? "float64" : "float32");
        Buf names = {.a = a};
        for (int j = 0; j < pl->n; j++)
            if (pl->in[j].pdt == dts[b])
                buf_printf(&names, "%sargs[%d]", names.len ? ", " : "", at0 + pl->in[j].slot - nfwd);
        if (cnt == 1)
            buf_printf(out, "    %s = part\n", buf_str(&names));
        else
            buf_printf(out, "    %s = part.split_with_sizes(sizes)\n", buf_str(&names));
    }
    buf_puts(out, "    args += extra\n");
}
/* Launch defaults of one emitted kernel, from its tiles (docs/GRAD.md,
 * "Launch parameters"): with a tl.dot, num_warps from the largest dot
 * result or operand tile (4096 elements a warp, 4..8: warp groups of 4
 * for the tensor cores) and num_stages from the shared memory one
 * pipelined iteration needs (the operands of the dots of one loop body, in
 * their dtypes, each tile once: as many stages of them as fit in 200 KiB,
 * 1..3); a loop's accumulators of dots count as one tile (their elements
 * summed: the GEMM form's R accumulators); else
 * num_warps from the largest tile (256 elements a warp, so 8 a thread,
 * for tiles up to 2048 elements, 512 a warp above: rounded up to a power of
 * 2, 1..16; on an H100 a 4096-element row ran as fast or faster with 8
 * warps than with 16 in 11 of 12 row kernels: bench/warps_sweep.py; a
 * lane-by-lane tile of 1024 lanes or more, or split_lanes' parts of one,
 * 8: launch_defaults_of) and no num_stages (Triton's default). */
static int64_t elems(Type t)
{
    int64_t e = 1;
    for (int i = 0; i < t.rank; i++)
        e *= t.shape[i];
    return e;
}

/* The elements a loop's dots accumulate into across its iterations: its
 * carried values whose yielded value is a dot (with that value as its
 * accumulator) or a sum with a dot's result (the GEMM form's R
 * accumulators: each held in registers for the whole loop). */
static int64_t dot_carried(const Func *f, const Inst *loop)
{
    const Block *r = loop->regions[0];
    const Inst *y = r->insts.n ? &r->insts.v[r->insts.n - 1] : NULL;
    int64_t n = 0;
    for (int i = 0; y && y->op == OP_YIELD && i < y->nargs; i++) {
        const Inst *d = NULL;
        for (int k = 0; k < r->insts.n && !d; k++)
            if (r->insts.v[k].nres && r->insts.v[k].res[0] == y->args[i])
                d = &r->insts.v[k];
        bool dot = d && d->op == OP_DOT;
        for (int x = 0; d && d->op == OP_ADD && x < 2; x++)
            for (int k = 0; k < r->insts.n; k++)
                dot |= r->insts.v[k].op == OP_DOT && r->insts.v[k].res[0] == d->args[x];
        if (dot)
            n += elems(f->vals.v[y->args[i]].ty);
    }
    return n;
}

static void tile_scan(const Func *f, const Block *b, int64_t *tile, int64_t *acc, int64_t *smem)
{
    int64_t here = 0;
    ValId seen[16];
    int nseen = 0;
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        for (int r = 0; r < in->nres; r++) {
            int64_t e = elems(f->vals.v[in->res[r]].ty);
            *tile = e > *tile ? e : *tile;
            if (in->op == OP_DOT)
                *acc = e > *acc ? e : *acc;
        }
        for (int i = 0; in->op == OP_DOT && i < 2 && i < in->nargs; i++) { /* a wide operand tile too */
            int64_t e = elems(f->vals.v[in->args[i]].ty);
            *acc = e > *acc ? e : *acc;
        }
        for (int i = 0; in->op == OP_DOT && i < 2 && i < in->nargs; i++) {
            bool again = false; /* one tile several dots take is in shared memory once */
            for (int j = 0; j < nseen; j++)
                again |= seen[j] == in->args[i];
            if (again)
                continue;
            if (nseen < 16)
                seen[nseen++] = in->args[i];
            Type t = f->vals.v[in->args[i]].ty;
            here += dtype_bits((Dtype)t.dt) / 8 * elems(t);
        }
        if (in->op == OP_FOR && in->nregions == 1) {
            int64_t e = dot_carried(f, in);
            *acc = e > *acc ? e : *acc;
        }
        for (int r = 0; r < in->nregions; r++)
            tile_scan(f, in->regions[r], tile, acc, smem);
    }
    *smem = here > *smem ? here : *smem;
}

/* Has f a tl.dot (tile_scan's dot tiles)? */
static bool has_dot(const Func *f)
{
    int64_t tile = 1, acc = 0, smem = 0;
    tile_scan(f, f->body, &tile, &acc, &smem);
    return acc > 0;
}

/* Does b hold a loop (lp), a reduction or scan whose result depends on the
 * order of its float operations, so on the warps a tile is spread over
 * (ord: sum, cumsum, cumprod, scan, reduce; max and min are exact), an
 * atomic_add (at)? */
static void tune_scan(const Block *b, bool *lp, bool *ord, bool *at)
{
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        *lp |= in->op == OP_FOR || in->op == OP_WHILE;
        *ord |= in->op == OP_SUM || in->op == OP_CUMSUM || in->op == OP_CUMPROD || in->op == OP_SCAN ||
                in->op == OP_REDUCE;
        *at |= in->op == OP_ATOMIC_ADD;
        for (int r = 0; r < in->nregions; r++)
            tune_scan(in->regions[r], lp, ord, at);
    }
}

/* What _kad_tune needs of kernel k besides its launch (docs/GRAD.md,
 * "Tuning"), as the Python text of its last five arguments: the positions
 * in the launch's values of the tensors k writes (None when the access
 * analysis cannot name them: every tensor), exact (no atomic_add: a
 * candidate must give the default's bits), again (no tensor both read and
 * written, no atomic_add: a second launch gives the first's results), the
 * warps tried ((4, 8) with a tl.dot; () with an order-sensitive reduction:
 * its sums' bits follow the warps, the default only; else -1: half, the
 * same and twice the default) and the num_stages tried (with a loop; with a
 * tl.dot -1: one less, the same and one more than the default, whose tiles
 * may need most of the shared memory).
 * pos(p): k's parameter p's position in the values, p < nfwd through the
 * def's order o (ndef entries), the gradients and the parameters after them
 * following; o NULL: the parameters in order. */
static const char *tune_facts(Arena *a, const Func *k, const DefParam *o, int ndef, int nfwd)
{
    bool lp = false, ord = false, at = false;
    tune_scan(k->body, &lp, &ord, &at);
    bool dot = has_dot(k);
    uint8_t *w = arena_alloc(a, (size_t)k->nparams + 1), *r = arena_alloc(a, (size_t)k->nparams + 1);
    memset(w, 0, (size_t)k->nparams + 1);
    memset(r, 0, (size_t)k->nparams + 1);
    bool known = access_params(access_analyze(a, k), k->nparams, w, r, NULL);
    Buf wr = {.a = a};
    bool again = known && !at;
    for (int p = 0; known && p < k->nparams; p++) {
        if (!w[p])
            continue;
        again &= !r[p];
        int pos = p;
        if (o && p < nfwd) {
            pos = -1;
            for (int q = 0; q < ndef; q++)
                if (!o[q].cnst && o[q].i == p)
                    pos = q;
        } else if (o) {
            pos = ndef + p - nfwd;
        }
        if (pos < 0)
            known = false;
        buf_printf(&wr, "%s%d", wr.len ? ", " : "", pos);
    }
    const char *writes = !known ? "None" : arena_printf(a, "(%s%s)", buf_str(&wr), strchr(buf_str(&wr), ',') || !wr.len ? "" : ",");
    return arena_printf(a, "%s, %s, %s, %s, %s", writes, at ? "False" : "True", again ? "True" : "False",
                        dot ? "(4, 8)" : ord ? "()" : "-1", !lp ? "()" : dot ? "-1" : "(2, 3, 4)");
}

/* Whether a folded backward's body has a pipelined fold loop (ad_fold_pipeline). */
static bool has_piped_fold(const Block *b)
{
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        if (in->op == OP_FOR && in->nints == LH_N && in->ints[LH_STAGES] > 0)
            return true;
    }
    return false;
}

/* kad's num_warps and num_stages (0: Triton's) for kernel f.  sites: how many
 * values each element of f's tile sums, each with its own loads and masks (a
 * gather kernel's sites, else 1): the warps of a tile that many times larger,
 * at most 8 and at most one warp per 64 elements of the tile. */
static void launch_defaults_of(const Func *f, const FuncSpread *spread, int sites, int *warps, int *stages)
{
    int64_t tile = 1, acc = 0, smem = 0;
    tile_scan(f, f->body, &tile, &acc, &smem);
    int w = 1;
    if (acc) {
        while (w < 8 && (int64_t)w * 4096 < acc)
            w *= 2;
        *warps = w < 4 ? 4 : w;
        int64_t s = smem > 0 ? (int64_t)200 * 1024 / smem : 3;
        *stages = s < 1 ? 1 : s > 3 ? 3 : (int)s;
        return;
    }
    /* lane by lane without a loop on 1024 lanes or more, or split_lanes' parts of such a row (the
     * row's lanes): at least 8 warps, 4 lanes a thread on 1024 (H200: a 4096-lane row as 1024-lane
     * parts ran fastest on 8 warps, bench/lanes_sweep.py; 1024-lane SwiGLU and GeGLU tiles too,
     * GeGLU 2.40 -> 1.95 us at 256 rows and 22.2 -> 21.4 at 4096; on 512 lanes 4 warps against 2
     * went either way, SwiGLU bf16 4.4 -> 5.3 us, GeGLU 7.3 -> 6.7) */
    int32_t lanes = spread ? spread->lanes : spread_lane_width(f);
    int64_t per = tile > 2048 ? 512 : 256; /* elements a warp: a long row's tile, 16 a thread */
    /* a pipelined fold loop's long rows: 1024 elements a warp, 4 warps for 4096 in any dtype (H200,
     * bench/warps_sweep.py: LayerNorm fp32 4096^2 74.0 -> 68.2 us on 4 warps instead of 8, RMSNorm
     * 59.5 -> 58.6; bf16 had 4 already, 8 slower) */
    if (f->fold && has_piped_fold(f->body) && tile > 2048)
        per = 1024;
    while (w < 16 && (int64_t)w * per < tile)
        w *= 2;
    for (int64_t work = (int64_t)w * (sites > 1 ? sites : 1); w < 8 && w < work && w * 64 <= tile;)
        w *= 2;
    if (lanes >= 1024 && w < 8)
        w = 8;
    *warps = w;
    *stages = 0;
}

static void launch_defaults(const Func *f, const FuncSpread *spread, int *warps, int *stages)
{
    launch_defaults_of(f, spread, 1, warps, stages);
}

/* The launch options of one kernel: kad's defaults, the caller's num_warps
 * and num_stages (the launcher's arguments) when given. */
static const char *launch_options_of(Arena *a, int w, int s)
{
    if (s)
        return arena_printf(a, "{\"num_warps\": num_warps or %d, \"num_stages\": num_stages or %d}", w, s);
    return arena_printf(a, "dict({\"num_warps\": num_warps or %d}, **options)", w);
}

static const char *launch_options(Arena *a, const Func *f, const FuncSpread *spread)
{
    int w, s;
    launch_defaults(f, spread, &w, &s);
    return launch_options_of(a, w, s);
}

/* One launch of kernel k on grid g with the call's values (call, a Python
 * tuple's items), indented by ind: direct when ptrs is not NULL (_kad_go,
 * whose compiled-kernel key takes the dtypes of the tensors at the call
 * positions ptrs[0..np) and needs every one of them 16-byte aligned; slot
 * tells this launch's kernels apart in the plan), else through Triton's JIT
 * with the options jit. warps, stages: _kad_go's num_warps and num_stages
 * (Python expressions; stages "None" leaves them to Triton). */
static void print_launch(Buf *out, Arena *a, const char *ind, const char *k, const char *g, const char *call,
                         const int *ptrs, int np, int slot, const char *warps, const char *stages, const char *jit,
                         const char *facts)
{
    if (!ptrs) {
        buf_printf(out, "%s%s[%s](%s%s**%s)\n", ind, k, g, call, *call ? ", " : "", jit);
        return;
    }
    Buf al = {.a = a}, dts = {.a = a};
    for (int i = 0; i < np; i++) {
        buf_printf(&al, "%s_c[%d].data_ptr()", i ? " | " : "", ptrs[i]);
        buf_printf(&dts, ", _c[%d].dtype", ptrs[i]);
    }
    const char *c8 = arena_printf(a, "%s        ", ind), *c10 = arena_printf(a, "%s          ", ind);
    buf_printf(out, "%s_c = (", ind);
    wrap(out, arena_printf(a, "%s%s)", call, strchr(call, ',') ? "" : ","), LINE_LIMIT, c10,
         strlen(ind) + 6);
    buf_printf(out, "\n%s_w, _s = %s, %s\n", ind, warps, stages);
    buf_printf(out, "%sif kad_tune:  # num_warps and num_stages timed on the first launch of this key\n%s    _w, _s = ",
               ind, ind);
    wrap(out, arena_printf(a, "_kad_tune(%s, %s, _c, (key, %d), _w, _s, %s)", k, g, slot, facts), LINE_LIMIT, c8,
         strlen(ind) + 13);
    buf_printf(out, "\n%s_k = None  # the compiled kernel's key (_kad_go): on CUDA, every tensor 16-byte aligned\n"
                    "%sif ck is not None and not (", ind, ind);
    wrap(out, arena_printf(a, "%s) & 15:", buf_str(&al)), LINE_LIMIT, c8, strlen(ind) + 27);
    buf_printf(out, "\n%s    _k = (", ind);
    wrap(out, arena_printf(a, "%d, _kad_cur(), _w, _s%s)", slot, buf_str(&dts)), LINE_LIMIT, c10,
         strlen(ind) + 10);
    buf_printf(out, "\n%s_kad_go(%s, %s, _c, ck, _k, _w, _s)\n", ind, k, g);
}

/* After the folded kernel: the one sum kernel, d_<x> = the partials' rows
 * summed (stored) when d_<x> is dense, else d_<x> += them (zero-filled
 * before: the plan's zero). */
static void print_fold_sums(Buf *out, Arena *a, const Program *P, const char *kname, int nfwd, int at0, bool direct)
{
    const Func *bwd = P->main;
    const FoldPlan *pl = bwd->fold;
    int w, st;
    launch_defaults(P->sum, NULL, &w, &st);
    if (!direct) {
        buf_printf(out, "    %s[sgrid](", sum_name(a, kname));
        for (int j = 0; j < pl->n; j++)
            buf_printf(out, "%sargs[%d], d_in[%d], *sums[%d]", j ? ",\n        " : "", at0 + pl->in[j].slot - nfwd, j,
                       j);
        buf_printf(out, ", num_warps=%d)\n", w);
        return;
    }
    Buf c = {.a = a};
    int *ptrs = arena_alloc(a, sizeof *ptrs * (size_t)(2 * pl->n));
    for (int j = 0; j < pl->n; j++) {
        buf_printf(&c, "%sargs[%d], d_in[%d], *sums[%d]", j ? ", " : "", at0 + pl->in[j].slot - nfwd, j, j);
        ptrs[2 * j] = 5 * j;
        ptrs[2 * j + 1] = 5 * j + 1;
    }
    print_launch(out, a, "    ", sum_name(a, kname), "sgrid", buf_str(&c), ptrs, 2 * pl->n, 1,
                 arena_printf(a, "%d", w), "None", NULL, tune_facts(a, P->sum, NULL, 0, 0));
}

/* The module-level helpers of the launchers are sections of src/emit/py/launch.py (kad_py_*,
 * embed.h): kad_py_sms, the SM count of a launch's device (the fold's nfold, the GEMM form's
 * choice of operand kernels), asked once per device; kad_py_fold_fill and kad_py_dense, a folded
 * backward's (is d dense? then its sum kernel stores every element of its span and d needs no
 * zero-fill); kad_py_go, every launcher's plans by launch key and direct launches of a kernel
 * Triton compiled before (docs/GRAD.md, "Direct launches"); kad_py_tune, kad_tune's (docs/GRAD.md,
 * "Tuning"). */

/* Is bwd's param slot an operand gradient of its GEMM form? */
static bool gemm_operand(const Program *P, int slot)
{
    for (int j = 0; P->gemm && j < P->gemm->n; j++)
        if (P->gemm->op[j].slot == slot)
            return true;
    return false;
}

/* The input gradients (the contract's params nfwd + nin..): zero-filled
 * here, except where the launch provably writes every element of the view
 * it is given (Program.covers, access_cover; under the flag of its plain
 * stores when it has one: fconds, the flags' conditions for the host). */
static void print_zero_fill(Buf *out, Arena *a, const Program *P, int nfwd, int nin, int at0,
                            const char *const *fconds, bool plan)
{
    const Func *bwd = P->main;
    int n = plan_nargs(P);
    if (plan) /* in _kad_plan: the launcher zero-fills the gradients listed in zero */
        buf_puts(out, "    zero = []  # the input gradients the launcher zero-fills (indices into args)\n");
    if (nfwd + nin >= n)
        return;
    int ngemm = 0;
    for (int i = nfwd + nin; i < n; i++)
        ngemm += gemm_operand(P, i);
    if (ngemm == n - nfwd - nin)
        return; /* print_gemm zero-fills them all */
    buf_puts(out, "    # input gradients need no initialization: zero-filled here unless this launch writes every\n"
                  "    # element of the view given (the store's address and mask against d's shape and strides)\n");
    int nzero = 0;
    for (int si = 0; si < P->steps.n; si++)
        nzero += P->steps.v[si].kind == STEP_ZERO;
    /* a gradient left out would keep what the caller's buffer held: every one has its step */
    ASSERT(nzero == n - nfwd - nin);
    for (int si = 0; si < P->steps.n; si++) { /* the Program's zero-fills, one per input gradient */
        if (P->steps.v[si].kind != STEP_ZERO)
            continue;
        const FuncCover *fc = &P->covers.v[P->steps.v[si].j];
        int i = nfwd + nin;
        while (i < n && bwd->params[i] != fc->param)
            i++;
        if (i == n)
            continue; /* not an input gradient of the contract */
        const char *cv = fc && fc->cover ? access_cover_host(fc->acc, fc->cover, "d", "_a", "_g") : NULL;
        const char *flag = NULL;
        for (int j = 0; cv && fc->flag && j < P->main->flags.n; j++)
            if (P->main->flags.v[j].param == fc->flag)
                flag = fconds ? fconds[j] : NULL;
        if (cv && fc->flag && !flag)
            cv = NULL;
        if (gemm_operand(P, i)) /* print_gemm zero-fills it, where the GEMM form does not store it all */
            continue;
        bool folded = false;
        for (int j = 0; bwd->fold && j < bwd->fold->n; j++)
            folded |= bwd->fold->in[j].slot == i;
        if (folded && plan) /* print_fold_plan decides */
            continue;
        buf_printf(out, "    d = args[%d]  # %s\n", at0 + i - nfwd, grad_name(a, bwd, i));
        if (folded) { /* the sum kernel stores into a dense d (print_fold_sums) */
            buf_puts(out, "    if not _kad_dense(d):\n"
                          "        d.zero_()  # its sum kernel adds into it (a dense d it overwrites entirely)\n");
            continue;
        }
        const char *zero = plan ? arena_printf(a, "zero.append(%d)", at0 + i - nfwd) : "d.zero_()";
        if (!cv) {
            const char *why = fc && fc->why ? fc->why : "kad cannot print its check for the host";
            buf_printf(out, "    %s  # ", zero);
            wrap(out, why, LINE_LIMIT, "    # ", 18);
            buf_puts(out, "\n");
            continue;
        }
        /* inside the parentheses, the lines may break at any space */
        buf_puts(out, "    ");
        wrap(out, flag ? arena_printf(a, "if not ((%s) and %s):", flag, cv) : arena_printf(a, "if not (%s):", cv),
             LINE_LIMIT, "            ", 4);
        buf_printf(out, "\n        %s\n", zero);
    }
}

/* Python's stand-ins for Triton's truncating // and % on integers (_tdiv, _trem), as nested
 * functions of the host function being printed: its conditions (access_cond_host) call them. */
static void print_tdiv(Buf *out)
{
    buf_puts(out, kad_py_host_tdiv);
}

/* The backward's launch conditions (Func.guards), checked on the host
 * before the launch: the arguments by name, the grid as Triton takes it
 * (a tuple, or a callable of the meta-parameters); then the input
 * gradients' zero-fills (print_zero_fill; nin: the output gradients before
 * them, at0: the launcher's index of the contract's param nfwd). */
static void print_guards(Buf *out, Arena *a, const Program *P, int nfwd, int nin, int at0, bool plan)
{
    const Func *bwd = P->main;
    int ng = bwd->guards.n, nf = P->main->flags.n;
    bool covers = false;
    for (int i = 0; i < P->covers.n; i++)
        covers |= P->covers.v[i].cover != NULL;
    if (plan && !nf)
        buf_puts(out, "    flags = []\n");
    if (!ng && !nf && !covers) {
        print_zero_fill(out, a, P, nfwd, nin, at0, NULL, plan);
        return;
    }
    buf_puts(out, "    # conditions on this launch, evaluated here: the arguments by name, the grid\n"
                  "    _a = dict(zip(names, args))\n");
    Buf meta = {.a = a};
    for (int i = 0; i < bwd->consts.n; i++)
        if (!bwd->consts.v[i].runtime)
            buf_printf(&meta, "%s\"%s\": %s", meta.len ? ", " : "", bwd->consts.v[i].name, bwd->consts.v[i].value);
    buf_printf(out, "    _g = tuple(grid({**_a, %s}) if callable(grid) else grid)\n", buf_str(&meta));
    buf_puts(out, "    _g = _g + (1,) * (3 - len(_g))\n");
    bool div = false;
    const char **conds = arena_alloc(a, sizeof *conds * (size_t)(ng + nf + 1));
    for (int i = 0; i < ng + nf; i++) {
        if (i < ng) {
            conds[i] = access_cond_host((Access *)bwd->guards.v[i].acc, bwd->guards.v[i].cond, "_a", "_g");
        } else { /* a flag: the conjunction of its conditions */
            const FuncFlag *fl = &P->main->flags.v[i - ng];
            Buf all = {.a = a};
            const char *gname = fl->grid_add ? arena_printf(a, "(_g[0] + %lld, _g[1] + %lld, _g[2] + %lld)",
                                                            (long long)fl->grid_add[0], (long long)fl->grid_add[1],
                                                            (long long)fl->grid_add[2])
                                             : "_g";
            for (int c = 0; c < fl->ncond; c++) {
                const char *one = access_cond_host(fl->acc, fl->cond[c], "_a", gname);
                if (!one) {
                    all.len = 0;
                    break;
                }
                buf_printf(&all, fl->ncond > 1 ? "%s(%s)" : "%s%s", c ? " and " : "", one);
            }
            conds[i] = all.len ? buf_str(&all) : NULL;
        }
        div |= conds[i] && (strstr(conds[i], "_tdiv(") || strstr(conds[i], "_trem("));
    }
    for (int i = 0; i < P->covers.n; i++) {
        if (!P->covers.v[i].cover)
            continue;
        const char *cv = access_cover_host(P->covers.v[i].acc, P->covers.v[i].cover, "d", "_a", "_g");
        div |= cv && (strstr(cv, "_tdiv(") || strstr(cv, "_trem("));
    }
    if (div)
        print_tdiv(out);
    for (int i = 0; plan_find_step(P, STEP_GUARDS) >= 0 && i < bwd->guards.n; i++) {
        const FuncGuard *g = &bwd->guards.v[i];
        Buf msg = {.a = a};
        const char *m = arena_printf(a, "%s:%d:%d: %s", g->loc.file ? g->loc.file : "<kernel>", g->loc.line,
                                     g->loc.col, g->msg);
        for (const char *p = m; *p; p++) {
            if (*p == '\\' || *p == '"')
                buf_putc(&msg, '\\');
            buf_putc(&msg, *p);
        }
        buf_printf(out, "    if not (%s):\n        raise ValueError(\"%s\")\n", conds[i] ? conds[i] : "False",
                   buf_str(&msg));
    }
    if (nf) {
        buf_puts(out, "    # plain stores where the access analysis proves them for this launch (tl.constexpr flags)\n");
        buf_puts(out, plan ? "    flags = [" : "    args = list(args) + [");
        for (int i = 0, k = 0; i < P->steps.n; i++) /* the Program's flags, in parameter order */
            if (P->steps.v[i].kind == STEP_FLAG) {
                int j = P->steps.v[i].j;
                buf_printf(out, "%sbool(%s)", k++ ? ", " : "", conds[ng + j] ? conds[ng + j] : "False");
            }
        buf_puts(out, "]\n");
    }
    print_zero_fill(out, a, P, nfwd, nin, at0, conds + ng, plan);
}

/* The tape budget of bwd's checkpointed tapes (0: none). */
static int64_t tape_budget_of(const Program *P)
{
    for (int j = 0; j < P->tapes.n; j++)
        if (P->tapes.v[j].ckpt)
            return P->tapes.v[j].budget;
    return 0;
}

/* The tapes (Program.tapes, ad_tape.c): scratch buffers appended to the
 * arguments after the flags, sized from the loops' trip counts for this
 * launch (uninitialized: the backward writes each element before it reads
 * it). */
static void print_tapes(Buf *out, Arena *a, const Program *P, const char *lname)
{
    const Func *bwd = P->main;
    if (!P->tapes.n)
        return;
    buf_puts(out, "    # tapes: the carried values of loops whose reverse sweep runs backwards, one slot per\n"
                  "    # (iteration, program); the trip counts from the arguments by name and the grid\n"
                  "    _ta = dict(zip(names, args))\n");
    bool bounded = false;
    for (int j = 0; j < P->tapes.n; j++)
        bounded |= P->tapes.v[j].bounded;
    if (bounded)
        buf_puts(out, "    _kad_bounded = []  # the tapes of `while` loops: (tape, line, capacity)\n");
    Buf meta = {.a = a};
    for (int i = 0; i < bwd->consts.n; i++)
        if (!bwd->consts.v[i].runtime)
            buf_printf(&meta, "%s\"%s\": %s", meta.len ? ", " : "", bwd->consts.v[i].name, bwd->consts.v[i].value);
    buf_printf(out, "    _tg = tuple(grid({**_ta, %s}) if callable(grid) else grid)\n", buf_str(&meta));
    buf_puts(out, "    _tg = _tg + (1,) * (3 - len(_tg))\n"
                  "    _dev = next(t.device for t in args if isinstance(t, torch.Tensor))\n"
                  "    args = list(args)\n");
    bool div = false;
    const char **trips = arena_alloc(a, sizeof *trips * (size_t)(P->tapes.n + 1));
    for (int j = 0; j < P->tapes.n; j++) {
        trips[j] = tape_expr_host(a, P->tapes.v[j].trips, bwd, "_ta", "_tg");
        div |= strstr(trips[j], "_kad_tdiv(") || strstr(trips[j], "_kad_trem(");
    }
    bool pid = false;
    for (int j = 0; j < P->tapes.n; j++)
        pid |= tape_expr_has_pid(P->tapes.v[j].trips);
    if (pid)
        buf_puts(out, tape_host_helpers());
    if (div)
        buf_puts(out, kad_py_host_kad_tdiv);
    int64_t budget = tape_budget_of(P), nck = 0;
    bool revolve = false;
    for (int j = 0; j < P->tapes.n; j++) {
        nck += P->tapes.v[j].ckpt;
        revolve |= P->tapes.v[j].revolve;
    }
    if (budget)
        buf_puts(out, "    import math\n    _tapes_from = len(args)\n");
    if (revolve) {
        buf_puts(out, tape_revolve_helpers());
        buf_puts(out, "    _kad_rv = []  # this launch's revolve schedules, for the caller\n");
    }
    for (int j = 0; j < P->tapes.n; j++) {
        const FuncTape *t = &P->tapes.v[j];
        Type pt = ir_type(bwd, t->param);
        buf_printf(out, "    _trips = max(0, %s)  # the loop at line %d%s\n", trips[j], t->loc.line,
                   tape_expr_has_pid(t->trips) ? ": its largest over the programs" : "");
        if (t->bounded) { /* a `while` loop's: the capacity, after a head whose element 0 is the overflow flag */
            buf_printf(out, "    args.append(torch.empty(%d + _trips * _tg[0] * _tg[1] * _tg[2] * %lld, dtype=torch.%s, "
                            "device=_dev))\n",
                       KAD_TAPE_HEAD, (long long)t->slot, pt.elem == DT_F64 ? "float64" : "float32");
            buf_printf(out, "    args[-1][:%d].zero_()\n    _kad_bounded.append((args[-1], %d, _trips))\n",
                       KAD_TAPE_HEAD, t->loc.line);
        } else if (t->revolve) { /* revolve: the plan's head, then the slots revolve_fit chose */
            const char *dt = pt.elem == DT_F64 ? "float64" : "float32";
            int64_t esz = pt.elem == DT_F64 ? 8 : 4, share = budget / (nck ? nck : 1);
            buf_printf(out, "    _np = _tg[0] * _tg[1] * _tg[2]\n"
                            "    _key = (%d, _trips, _np, _dev)  # a plan per launch shape, cached on the launcher\n"
                            "    _hit = %s.__dict__.setdefault(\"_kad_plans\", {}).get(_key)\n"
                            "    if _hit is None:\n"
                            "        _fit = _kad_revolve_fit(_trips, _np, %lld, %lld, %lld)  # this loop's share of the budget\n"
                            "        if _fit is None:\n"
                            "            _one = (1 + 5 * len(_kad_revolve_plan(_trips, 1))) * %lld + _np * %lld\n"
                            "            raise RuntimeError(f\"kad: this launch needs {_one} bytes of tape even with revolve (one "
                            "checkpoint slot and the plan), above the tape budget's share of the loop at line %d, %lld "
                            "bytes\")\n"
                            "        _s, _plan = _fit\n"
                            "        if max(_trips, 5 * len(_plan)) >= 2 ** %d:\n"
                            "            raise RuntimeError(\"kad: the loop at line %d runs too many iterations for a revolve "
                            "plan\")\n"
                            "        _t = 0\n"
                            "        while math.comb(_s + _t, _s) < _trips:\n"
                            "            _t += 1\n"
                            "        _head = torch.tensor([len(_plan)] + [v for r in _plan for v in r], dtype=torch.%s, "
                            "device=_dev)\n"
                            "        _hit = (_s, _head, {\"line\": %d, \"trips\": _trips, \"slots\": _s, \"t\": _t, \"rows\": "
                            "len(_plan), \"recomputed\": sum(r[2] for r in _plan), \"bytes\": (_head.numel() "
                            "+ _s * _np * %lld) * %lld})\n"
                            "        %s._kad_plans[_key] = _hit\n"
                            "    args.append(torch.empty(_hit[1].numel() + _hit[0] * _np * %lld, dtype=torch.%s, device=_dev))\n"
                            "    args[-1][:_hit[1].numel()].copy_(_hit[1])\n"
                            "    _kad_rv.append(_hit[2])\n",
                       t->loc.line, lname, (long long)(t->slot * esz), (long long)esz, (long long)share, (long long)esz,
                       (long long)(t->slot * esz), t->loc.line, (long long)share, esz == 8 ? 53 : 24, t->loc.line, dt,
                       t->loc.line, (long long)t->slot, (long long)esz, lname, (long long)t->slot, dt);
        } else {
            if (t->ckpt) /* checkpointed: one segment and its checkpoints, 2 * ceil(sqrt(trips)) slots */
                buf_puts(out, "    _trips = 2 * (math.isqrt(_trips - 1) + 1) if _trips > 0 else 0\n");
            buf_printf(out, "    args.append(torch.empty(_trips * _tg[0] * _tg[1] * _tg[2] * %lld, dtype=torch.%s, "
                            "device=_dev))\n",
                       (long long)t->slot, pt.elem == DT_F64 ? "float64" : "float32");
        }
    }
    if (revolve)
        buf_printf(out, "    %s.revolve = _kad_rv\n", lname);
    if (budget)
        buf_printf(out, "    _tape_bytes = sum(t.numel() * t.element_size() for t in args[_tapes_from:])\n"
                        "    if _tape_bytes > %lld:\n"
                        "        raise RuntimeError(f\"kad: this launch needs {_tape_bytes} bytes of tape even with "
                        "checkpointing, above the tape budget of %lld bytes\")\n",
                   (long long)budget, (long long)budget);
}

/* The GEMM form (Program.gemm, ad_gemm.c): when this launch's programs map
 * one to one onto the tile pairs (checked once per launch shape, cached)
 * and the operand kernels' stores are disjoint, kernel 1 stores the dacc
 * tiles, then one kernel per operand gradient; else the atomic kernel. */
static const char *gemm_host(Arena *a, const TapeExpr *e, const Func *bwd)
{
    const char *s = tape_expr_host(a, e, bwd, "_ta", NULL);
    Buf b = {.a = a};
    for (const char *p = s; *p;) {
        if (!strncmp(p, "tl.program_id(", 14) && p[14] >= '0' && p[14] <= '2' && p[15] == ')') {
            buf_printf(&b, "_p%c", p[14]);
            p += 16;
        } else if (!strncmp(p, "tl.num_programs(", 16) && p[16] >= '0' && p[16] <= '2' && p[17] == ')') {
            buf_printf(&b, "_tg[%c]", p[16]);
            p += 18;
        } else {
            buf_putc(&b, *p++);
        }
    }
    return buf_str(&b);
}

/* One GEMM operand kernel's launch in the launcher: k on (tiles, iters, 1)
 * with its own launch defaults, slot its key's index (_kad_go, _kad_tune),
 * indented by pad more. */
static void print_operand_fit(Buf *out, Arena *a, const Func *k, const char *tiles, const char *iters, int slot,
                              const char *pad, const DefParam *o, int ndef, int nfwd)
{
    int w, st;
    launch_defaults(k, NULL, &w, &st);
    buf_printf(out, "%s        _kad_fit(%s, (%s, %s, 1), _c, {\"num_warps\": %d, \"num_stages\": %d}, _ck, _k and (%d, *_k),\n"
                    "%s                 kad_tune and ((_key, _dev, %d), %s))\n",
               pad, k->name, tiles, iters, w, st ? st : 3, slot, pad, slot, tune_facts(a, k, o, ndef, nfwd));
}

static void print_gemm(Buf *out, Arena *a, const Program *P, const char *call, int at0, int nfwd,
                       const DefParam *o, int ndef)
{
    const Func *bwd = P->main;
    const GemmPlan *pl = P->gemm;
    Buf meta = {.a = a};
    for (int i = 0; i < bwd->consts.n; i++)
        if (!bwd->consts.v[i].runtime)
            buf_printf(&meta, "%s\"%s\": %s", meta.len ? ", " : "", bwd->consts.v[i].name, bwd->consts.v[i].value);
    buf_puts(out, "    # the matmul's operand gradients as GEMMs of their own (ad_gemm), deterministic: when this\n"
                  "    # launch's programs map one to one onto the tile pairs (u, v) (checked once per launch shape)\n");
    buf_printf(out, "    _tg = grid({**dict(zip(names, args)), %s}) if callable(grid) else grid\n", buf_str(&meta));
    /* the key: the integer arguments (the plan's host expressions read nothing else), then the
     * operand gradients' layouts (the plan says whether their tiles cover them); the tensors of the
     * kernels' arguments (_c): the forward's pointer arguments, the gradients, the scratch */
    Buf gk = {.a = a}, ts = {.a = a};
    for (int k = 0, i = 0; k < ndef; k++) {
        if (!is_arg(bwd, o, k))
            continue;
        if (!o[k].cnst) { /* (a specialized argument's value is the signature's: checked above) */
            Dtype dt = (Dtype)ir_type(bwd, bwd->params[o[k].i]).dt;
            if (dt == DT_PTR)
                buf_printf(&ts, "args[%d], ", i);
            else if (!dtype_is_float(dt))
                buf_printf(&gk, "%sargs[%d]", gk.len ? ", " : "", i);
        }
        i++;
    }
    for (int i = nfwd; i < plan_nargs(P); i++)
        buf_printf(&ts, "args[%d], ", at0 + i - nfwd);
    buf_puts(&ts, "_dacc");
    buf_puts(&gk, gk.len && !strchr(buf_str(&gk), ',') ? ",)" : ")");
    for (int i = 0; i < pl->n; i++)
        buf_printf(&gk, ", args[%d].shape, args[%d].stride()", at0 + pl->op[i].slot - nfwd,
                   at0 + pl->op[i].slot - nfwd);
    buf_puts(out, "    _tg = tuple(_tg) + (1,) * (3 - len(_tg))\n    _key = (_tg, (");
    wrap(out, arena_printf(a, "%s)", buf_str(&gk)), LINE_LIMIT, "            ", 13);
    buf_printf(out, "\n    _plan = _kad_gemm_plans.get(_key)\n"
                    "    _dev = args[%d].device\n"
                    "    if _plan is None:\n"
                    "        _plan = _kad_gemm_plan(dict(zip(names, args)), _tg)\n",
               at0 + pl->op[0].slot - nfwd);
    buf_puts(out, "        if _plan is not None:  # with the compiled kernels of this launch shape (_kad_go)\n"
                  "            _plan = (*_plan, _kad_ck(_dev))\n"
                  "        _kad_gemm_plans[_key] = _plan\n"
                  "    if _plan is not None:\n"
                  "        _U, _V, _T, _cov, _ck = _plan\n");
    buf_printf(out, "        _dacc = torch.empty(_U * _V * %lld, dtype=torch.%s, device=_dev)\n", (long long)pl->tile,
               pl->sdt == DT_F64 ? "float64" : pl->sdt == DT_BF16 ? "bfloat16" : pl->sdt == DT_F16 ? "float16" : "float32");
    for (int i = 0; i < pl->n; i++) /* elements no tile writes stay 0 */
        buf_printf(out, "        if not _cov[%d]:  # the tiles do not cover d_%s's view: elements no tile writes stay 0\n"
                        "            args[%d].zero_()\n", i, pl->op[i].name, at0 + pl->op[i].slot - nfwd);
    /* the dacc kernel is the forward's K loop again: the caller's options (the forward's launch
     * options, or the config its autotuner chose) fit it; without the loop (its accumulator
     * loaded from a saving forward's buffer: no dot left) it is elementwise work on the forward's
     * tile, and kad's defaults for that tile fit it better; the operand kernels have tiles of
     * their own: kad's defaults for them */
    buf_printf(out, "        _c = (%s%s_dacc, _U, _V)\n", call, *call ? ", " : "");
    buf_puts(out, "        _k = None  # the kernels' key (_kad_go) less the options: on CUDA, every tensor 16-byte aligned\n"
                  "        if _ck is not None:\n"
                  "            _ts = (");
    wrap(out, arena_printf(a, "%s)", buf_str(&ts)), LINE_LIMIT, "                   ", 19);
    buf_puts(out, "\n"
                  "            if not any(x.data_ptr() & 15 for x in _ts):\n"
                  "                _k = (_kad_cur(), *(x.dtype for x in _ts))\n");
    const char *first_opts = launch_options(a, pl->first, NULL);
    if (!has_dot(pl->first)) {
        int w, st;
        launch_defaults(pl->first, NULL, &w, &st);
        first_opts = st ? arena_printf(a, "{\"num_warps\": %d, \"num_stages\": %d}", w, st)
                        : arena_printf(a, "{\"num_warps\": %d}", w);
    }
    buf_printf(out, "        _kad_fit(%s, _tg, _c, %s, _ck, _k and (0, *_k),\n                 kad_tune and ((_key, _dev, 0), %s))\n",
               pl->first->name, first_opts, tune_facts(a, pl->first, o, ndef, nfwd));
    for (int i = 0; i < pl->n; i++) {
        const GemmOperand *op = &pl->op[i];
        const char *tiles = op->own ? "_V" : "_U";
        if (op->single) { /* the grouped grid too small for the GPU: the one-iteration kernel */
            buf_printf(out, "        if not _kad_fills(_dev, %s * triton.cdiv(_T, %d)):  # d_%s: one K iteration a program\n",
                       tiles, op->group, op->name);
            print_operand_fit(out, a, op->single, tiles, "_T", pl->n + 1 + i, "    ", o, ndef, nfwd);
            buf_puts(out, "        else:\n");
        }
        print_operand_fit(out, a, op->k, arena_printf(a, "%s * %s", tiles,
                                                        op->group > 1 ? arena_printf(a, "triton.cdiv(_T, %d)", op->group)
                                                                      : "_T"),
                          "1", i + 1, op->single ? "    " : "", o, ndef, nfwd);
    }
    buf_puts(out, "        return\n");
    for (int i = 0; i < pl->n; i++)
        buf_printf(out, "    args[%d].zero_()  # d_%s: the backward below adds into it with atomics\n",
                   at0 + pl->op[i].slot - nfwd, pl->op[i].name);
}

/* The module-level helper of the GEMM form: (U, V, trips) or None. */
static void print_gemm_helper(Buf *out, Arena *a, const Program *P)
{
    const Func *bwd = P->main;
    const GemmPlan *pl = P->gemm;
    buf_printf(out, "%s%s%s", kad_py_gemm_state, kad_py_sms, kad_py_gemm_fit);
    buf_puts(out, "def _kad_gemm_plan(_ta, _tg):\n"
                  "    \"\"\"(U, V, trips, covers) when the programs map one to one onto [0, U) x [0, V) through their\n"
                  "    tile ids and the operand kernels' stores are disjoint for this launch, covers saying per operand\n"
                  "    whether its tiles store every element of its gradient's view; else None (atomics).\"\"\"\n"
                  "    seen = set()\n"
                  "    for _p2 in range(_tg[2]):\n"
                  "        for _p1 in range(_tg[1]):\n"
                  "            for _p0 in range(_tg[0]):\n");
    buf_printf(out, "                t = (%s, %s)\n", gemm_host(a, pl->id[0], bwd), gemm_host(a, pl->id[1], bwd));
    buf_puts(out, "                if t[0] < 0 or t[1] < 0 or t in seen:\n"
                  "                    return None\n"
                  "                seen.add(t)\n"
                  "    if not seen:\n"
                  "        return None\n"
                  "    U = 1 + max(t[0] for t in seen)\n"
                  "    V = 1 + max(t[1] for t in seen)\n"
                  "    if U * V != len(seen):\n"
                  "        return None\n");
    buf_printf(out, "    T = max(0, %s)\n", gemm_host(a, pl->trips, bwd));
    for (int i = 0; i < pl->n; i++)
        if (pl->op[i].cond) {
            const char *c = access_cond_host(pl->op[i].acc, pl->op[i].cond, "_tb", "_tk");
            buf_printf(out, "    _tb, _tk = {**_ta, \"kad_tiles_u\": U, \"kad_tiles_v\": V}, (%s, T, 1)\n",
                       pl->op[i].own ? "V" : "U");
            buf_printf(out, "    if not (%s):  # the stores of d_%s's tiles are disjoint\n        return None\n",
                       c ? c : "False", pl->op[i].name);
        }
    /* whether each operand's tiles store every element of its gradient's view (access_cover of the
     * one-iteration kernel's store, on its grid): then the launcher skips that zero-fill */
    buf_puts(out, "    cov = []\n");
    for (int i = 0; i < pl->n; i++) {
        const char *cv = pl->op[i].cover ? access_cover_host(pl->op[i].acc, pl->op[i].cover, "d", "_tb", "_tk") : NULL;
        if (!cv) {
            buf_printf(out, "    cov.append(False)  # d_%s: kad cannot describe what its tiles' stores reach\n",
                       pl->op[i].name);
            continue;
        }
        buf_printf(out, "    _tb, _tk = {**_ta, \"kad_tiles_u\": U, \"kad_tiles_v\": V}, (%s, T, 1)\n",
                   pl->op[i].own ? "V" : "U");
        buf_printf(out, "    d = _ta[\"%s\"]\n", bwd->vals.v[bwd->params[pl->op[i].slot]].name);
        buf_puts(out, "    cov.append(bool(");
        wrap(out, arena_printf(a, "%s))", cv), LINE_LIMIT, "        ", 16);
        buf_puts(out, "\n");
    }
    buf_puts(out, "    return U, V, T, tuple(cov)\n");
}

/* The module-level helpers of launchers whose forward takes host-side tensor descriptors
 * (Func.descs), kad_py_descs, and of launchers whose kernels make tensor descriptors
 * (emit_has_desc), kad_py_tma, are sections of src/emit/py/launch.py (embed.h). */

/* A launch's values in the def's order: the launcher's args in slices, the
 * constexpr values in their places. open: the last slice runs to the end of
 * args (the flags and extras appended after the contract's nargs), else it
 * stops at nargs. */
static const char *call_text(Arena *a, const Func *bwd, const DefParam *o, int ndef, int nargs, bool open)
{
    Buf call = {.a = a};
    int from = 0, at = 0;
    for (int k = 0; k <= ndef; k++) {
        bool end = k == ndef;
        if (!end && is_arg(bwd, o, k)) {
            at++;
            continue;
        }
        int to = end ? nargs : at;
        if (to > from) {
            if (from == 0 && to == nargs && open)
                buf_printf(&call, "%s*args", call.len ? ", " : "");
            else if (from == 0)
                buf_printf(&call, "%s*args[:%d]", call.len ? ", " : "", to);
            else if (to == nargs && open)
                buf_printf(&call, "%s*args[%d:]", call.len ? ", " : "", from);
            else
                buf_printf(&call, "%s*args[%d:%d]", call.len ? ", " : "", from, to);
        }
        from = to;
        if (!end)
            buf_printf(&call, "%s%s", call.len ? ", " : "", bwd->consts.v[o[k].i].value);
    }
    return buf_str(&call);
}

/* The gather kernels (Program.gather, ad_gather.c): after the backward, each
 * on the forward's grid plus its extra tiles, with the contract's
 * arguments (constexpr values in their places), under its flag when it
 * has one (else the backward's sites added with atomics). */
static void print_gathers(Buf *out, Arena *a, const Program *P, const DefParam *o, int ndef, int nargs,
                          const int *ptrs, int np)
{
    const Func *bwd = P->main;
    const char *call = call_text(a, bwd, o, ndef, nargs, false);
    for (int j = 0; j < P->gather->n; j++) {
        const GatherIn *gi = &P->gather->in[j];
        if (gi->scatter)
            buf_printf(out, "    # d_%s: the scattered sites' additions, after the rest is written (ad_scatter)\n",
                       gi->name);
        else
            buf_printf(out, "    # d_%s: gathered, each element summed in a fixed order and stored once (ad_gather)\n",
                       gi->name);
        const char *cond = "min(_kg) > 0";
        if (gi->flag >= 0)
            cond = arena_printf(a, "min(_kg) > 0 and args[%d]", nargs + gi->flag);
        buf_printf(out, "    if %s:\n", cond);
        int w, st; /* each element sums nsites values (docs/GRAD.md, "Launch parameters") */
        launch_defaults_of(gi->k, NULL, gi->scatter ? 1 : gi->nsites, &w, &st);
        print_launch(out, a, "        ", gi->k->name,
                     arena_printf(a, "(_kg[0] + %lld, _kg[1] + %lld, _kg[2] + %lld)", (long long)gi->grid_add[0],
                                  (long long)gi->grid_add[1], (long long)gi->grid_add[2]),
                     call, ptrs, np, 2 + j, arena_printf(a, gi->scatter ? "%d" : "num_warps or %d", w),
                     st ? arena_printf(a, "num_stages or %d", st) : "num_stages", launch_options_of(a, w, st),
                     tune_facts(a, gi->k, o, ndef, ndef - bwd->consts.n));
    }
}

/* A spread backward's S in its plan (ad_spread.c), appended to the flags
 * (KAD_SPREAD_PARAM follows them): the fewest programs per forward program
 * that give the launch twice the SM count, at most the loop's trip count,
 * each taking the same number of iterations; 1 when the launch has that
 * many programs already, except that a row split_lanes runs in parts takes
 * at least 2 (on an H200, GeGLU 4096 x 4096 ran 59.3 -> 54.6 us bf16 and
 * 88.6 -> 85.7 fp32, SwiGLU's 4096-lane rows 46.7 -> 46.0 and 86.0 -> 84.4:
 * more, shorter programs for the same lanes).  On the CPU (Triton's
 * interpreter) 2, as interp_run (spread_cpu). */
static void print_spread_plan(Buf *out, Arena *a, const Program *P, int at0)
{
    const Func *bwd = P->main;
    buf_printf(out, "    # the loop at line %d, its iterations dealt to %s programs per forward program when the\n"
                    "    # launch leaves SMs idle: its trip count, the programs, twice the SM count\n",
               P->spread->loc.line, KAD_SPREAD_PARAM);
    buf_puts(out, "    _sa = dict(zip(names, args))\n    _st = ");
    wrap(out, arena_printf(a, "%s", tape_expr_host(a, P->spread->trips, bwd, "_sa", NULL)), LINE_LIMIT, "           ", 11);
    buf_printf(out, "\n    _sn, _sd = grid[0] * grid[1] * grid[2], args[%d].device\n", at0);
    buf_puts(out, "    _sw = 2 * _kad_sms(_sd) if _sd.type == \"cuda\" else 2 * _sn\n"
                  "    _ss = 1\n"
                  "    if 0 < _sn < _sw and _st > 1:\n"
                  "        _ss = min(_st, -(-_sw // _sn))\n"
                  "        _ss = -(-_st // -(-_st // _ss))  # as few as give each the same number of iterations\n");
    if (P->spread->lanes)
        buf_puts(out, "    if _st > 1:  # a row in parts (kad's loop): at least 2 programs a row\n"
                      "        _ss = max(_ss, 2)\n");
    buf_puts(out, "    flags.append(_ss)\n");
}

/* The host launcher: checks the arguments and launches the kernel with
 * the constexprs in their places.  jvp_nin: a jvp's launcher (>= 0: its
 * tangent inputs), the backward's (-1), a saving forward's (-2). */
static void print_launcher(Buf *out, Arena *a, const Program *P, const DefParam *o, int nfwd, int nins,
                           const Func *fwd, const char *kname, const char *lname, int jvp_nin)
{
    const Func *bwd = P->main;
    const char *fwd_name = fwd->name;
    int ndef = nfwd + bwd->consts.n, nc = 0, nspec = 0;
    const char *what = jvp_nin >= 0 ? "jvp" : jvp_nin == -2 ? "saving forward" : jvp_nin == -3 ? "race check"
                                                                                            : "backward";
    for (int i = 0; i < bwd->consts.n; i++)
        bwd->consts.v[i].runtime ? nspec++ : nc++;
    int nargs = plan_nargs(P) + nspec;
    /* the launcher's arguments: the def's runtime ones, then the gradients */
    const char **argn = arena_alloc(a, sizeof *argn * (size_t)(nargs + 1));
    int na = 0;
    for (int k = 0; k < ndef; k++)
        if (is_arg(bwd, o, k))
            argn[na++] = o[k].cnst ? bwd->consts.v[o[k].i].name : bwd->vals.v[bwd->params[o[k].i]].name;
    for (int i = nfwd; i < plan_nargs(P); i++)
        argn[na++] = grad_name(a, bwd, i);
    ASSERT(na == nargs);
    Buf names = {.a = a}, quoted = {.a = a};
    for (int i = 0; i < nargs; i++) {
        const char *n = argn[i];
        buf_printf(&names, "%s%s", i ? ", " : "", n ? n : "?");
        buf_printf(&quoted, "%s\"%s\"%s", i ? " " : "", n ? n : "?", nargs == 1 || i + 1 < nargs ? "," : "");
    }
    int at0 = nargs - (plan_nargs(P) - nfwd);
    Buf meta = {.a = a}; /* the constexprs' values, for a grid callable */
    for (int i = 0; i < bwd->consts.n; i++)
        if (!bwd->consts.v[i].runtime)
            buf_printf(&meta, ", \"%s\": %s", bwd->consts.v[i].name, bwd->consts.v[i].value);
    /* planned: the launch's decisions computed once per launch key (every launcher but the GEMM
     * form's); direct: its kernels launched through _kad_go (not with tapes, descriptors or TMA
     * flags, whose arguments the plan does not fix) */
    bool plan = bwd->fold || !P->gemm;
    ValId *tg = arena_alloc(a, sizeof *tg * (size_t)(bwd->nparams + 1));
    int ntg = jvp_nin != -1 ? 0 : emit_tma_grads(bwd, nfwd, tg);
    bool direct = plan && !P->tapes.n && !emit_has_desc(bwd) && !fwd->descs.n && !ntg;
    Buf key = {.a = a}; /* a planned launch's key: what its plan depends on */
    if (plan) {
        buf_printf(out, "\n\ndef _kad_plan(names, grid, args, nfold):\n    \"\"\"");
        if (bwd->fold)
            wrap(out, arena_printf(a, "What %s needs that depends only on its launch key (the grid, nfold, the "
                                      "scalar arguments and their types, the input gradients' shapes, strides and "
                                      "device): the launch's conditions, the gradients to zero-fill, the partials, "
                                      "both kernels' grids and their arguments that are not tensors, a dict for "
                                      "the compiled kernels (_kad_go). Computed once per key (_kad_plans).", lname),
                 LINE_LIMIT, "    ", 7);
        else
            wrap(out, arena_printf(a, "What %s needs that depends only on its launch key (the grid, the scalar "
                                      "arguments and their types, the %s' shapes and strides, the device): the "
                                      "launch's conditions, the %s to zero-fill, a dict for the compiled kernels "
                                      "(_kad_go). Computed once per key (_kad_plans).",
                                   lname, jvp_nin >= 0 ? "tangents" : jvp_nin == -2 ? "saved buffer" : "input gradients",
                                   jvp_nin >= 0 ? "tangents" : jvp_nin == -2 ? "buffers" : "gradients"),
                 LINE_LIMIT, "    ", 7);
        buf_puts(out, "\n    \"\"\"\n");
        print_guards(out, a, P, nfwd, nins, at0, true);
        if (bwd->fold)
            print_fold_plan(out, a, P, nfwd, at0, nfwd + nins);
        else {
            if (P->spread)
                print_spread_plan(out, a, P, at0);
            buf_printf(out, "    return flags, zero, _kad_ck(args[%d].device)\n", at0);
        }
        buf_puts(&key, bwd->fold && bwd->fold->axes ? "grid, nfold" : "grid");
        for (int k = 0, i = 0; k < ndef; k++) {
            if (!is_arg(bwd, o, k))
                continue;
            if (!o[k].cnst && ir_type(bwd, bwd->params[o[k].i]).dt != DT_PTR)
                buf_printf(&key, ", args[%d], args[%d].__class__", i, i);
            i++;
        }
        for (int i = nfwd + nins; i < plan_nargs(P); i++)
            buf_printf(&key, ", args[%d].shape, args[%d].stride()", at0 + i - nfwd, at0 + i - nfwd);
        buf_printf(&key, ", args[%d].device", bwd->fold ? at0 + bwd->fold->in[0].slot - nfwd : at0);
    }
    bool trusted = jvp_nin == -1 && P->trusted;
    buf_printf(out, "\n\ndef %s(grid, *args, %snum_warps=None, num_stages=None, kad_tune=False, %s**constexprs):\n", lname,
               trusted ? "outputs_unmodified, " : "", bwd->fold && bwd->fold->axes ? "nfold=None, " : "");
    buf_puts(out, "    \"\"\"");
    Buf doc = {.a = a};
    if (jvp_nin >= 0)
        buf_printf(&doc, "Runs %s: the outputs of %s and their tangents in one pass. args: the forward's runtime "
                         "arguments, then the tangent buffers (%s), each laid out like its primal; an output's "
                         "tangent must hold the tangent of its value before the launch (zeros for a fresh "
                         "output): elements the kernel does not write keep it.",
                   kname, fwd_name, buf_str(&names));
    else if (jvp_nin == -3)
        buf_printf(&doc, "Runs %s: %s with its stores into the differentiated outputs replaced by exchanges "
                         "into int64 tag buffers passed in their places (zeros, laid out like them), every other "
                         "write left out; counts the collisions into %s (two per store). Called by "
                         "check_%s_races.", kname, fwd_name, KAD_RACE_PARAM, ident(a, fwd_name));
    else if (jvp_nin == -2)
        buf_printf(&doc, "Runs %s: %s as written, plus a store of the results of its loops the backward "
                         "would otherwise run again. args: the forward's runtime arguments, then the buffer "
                         "%s (fp32, _kad_slot elements per program, each program's slot written whole).",
                   kname, fwd_name, KAD_SAVE_PARAM);
    else if (bwd->fold)
        buf_printf(&doc, "Runs the backward of %s: every kernel it needs (%s, then the sum kernel of the "
                         "partials it fills). args: the forward's runtime arguments, then the gradient buffers "
                         "(%s).",
                   fwd_name, kname, buf_str(&names));
    else if (P->gather) {
        Buf ks = {.a = a};
        for (int j = 0; j < P->gather->n; j++)
            buf_printf(&ks, "%s%s", j ? (j + 1 == P->gather->n ? " and " : ", ") : "", P->gather->in[j].k->name);
        int m = P->gather->main;
        buf_printf(&doc, "Runs the backward of %s: every kernel it needs (%s%s%s). args: the forward's "
                         "runtime arguments, then the gradient buffers (%s).",
                   fwd_name, m == 1 ? "" : kname, m == 2 ? " unless the gathers write everything, then "
                                                  : m == 0 ? ", then " : "",
                   buf_str(&ks), buf_str(&names));
    } else
        buf_printf(&doc, "Runs the backward of %s: every kernel it needs (today one, %s). args: the "
                         "forward's runtime arguments, then the gradient buffers (%s).",
                   fwd_name, kname, buf_str(&names));
    if (nspec) {
        Buf cs = {.a = a};
        for (int i = 0, j = 0; i < bwd->consts.n; i++)
            if (bwd->consts.v[i].runtime)
                buf_printf(&cs, "%s%s=%s", j++ ? ", " : "", bwd->consts.v[i].name, bwd->consts.v[i].value);
        buf_printf(&doc, " Specialized as Triton does on the runtime arguments %s, which must have these values.",
                   buf_str(&cs));
    }
    if (bwd->ranges.n) {
        Buf cs = {.a = a};
        for (int i = 0; i < bwd->ranges.n; i++) {
            const ParamRange *r = &bwd->ranges.v[i];
            const char *pn = bwd->vals.v[bwd->params[r->param]].name;
            buf_printf(&cs, "%s%s in [%lld, %lld]", i ? ", " : "", pn ? pn : "?", (long long)r->lo, (long long)r->hi);
        }
        buf_printf(&doc, " Specialized for %s (the signature's ranges: loops they fix at one trip run as "
                         "straight-line code), which the arguments must lie in.",
                   buf_str(&cs));
    }
    if (nc) {
        Buf cs = {.a = a};
        for (int i = 0, j = 0; i < bwd->consts.n; i++)
            if (!bwd->consts.v[i].runtime)
                buf_printf(&cs, "%s%s=%s", j++ ? ", " : "", bwd->consts.v[i].name, bwd->consts.v[i].value);
        buf_printf(&doc, " constexprs: only the specialized values, which are the defaults (%s).", buf_str(&cs));
    }
    if (P->gemm)
        buf_printf(&doc, " num_warps, num_stages: the forward's launch options, passed to the kernels with the "
                         "forward's tiles (%s, %s) when given; else kad's defaults for each kernel's tiles (always "
                         "for the GEMM operand kernels, whose tiles are their own).",
                   ident(a, bwd->name), P->gemm->first->name);
    else if (P->gather && P->gather->in[0].scatter)
        buf_puts(&doc, " num_warps, num_stages: passed to every launch when given (but the scattered sites' "
                       "kernels take kad's warps for their own tiles); else kad's defaults for each kernel's tiles.");
    else
        buf_puts(&doc, " num_warps, num_stages: passed to every launch when given; else kad's defaults for each "
                       "kernel's tiles.");
    if (direct || P->gemm)
        buf_puts(&doc, " kad_tune: each kernel's num_warps and num_stages timed on its first launch of each "
                       "launch key among a few, the fastest remembered; a choice never changes the results' bits "
                       "(docs/GRAD.md, \"Tuning\").");
    else
        buf_puts(&doc, " kad_tune: accepted, no effect (this launcher's kernels are launched through Triton's JIT).");
    if (bwd->fold && bwd->fold->axes)
        buf_printf(&doc, " nfold: the programs (along grid axis %d) that sum the shared gradients (default: 2 per "
                         "SM, at most half the forward's programs); the sums' last bits depend on it and on nothing else.",
                   bwd->fold->axis);
    if (fwd->descs.n)
        buf_puts(&doc, " A host-side tensor descriptor (triton.tools.tensor_descriptor.TensorDescriptor) is passed "
                       "as the forward takes it and expanded here into the kernel's base, shape and strides; its "
                       "gradient is a tensor laid out like its base (or a descriptor of one).");
    if (trusted)
        buf_printf(&doc, " outputs_unmodified: must be True, the caller's promise that %s still hold what the "
                         "forward stored on these arguments (this backward loads them instead of recomputing "
                         "them: docs/AD.md, \"Trusted saved outputs\"); where that is not known, use the "
                         "backward generated without trusted outputs.",
                   P->trusted);
    wrap(out, buf_str(&doc), LINE_LIMIT, "    ", 7);
    buf_puts(out, "\n    \"\"\"\n");
    if (trusted)
        buf_printf(out, "    if outputs_unmodified is not True:\n"
                        "        raise ValueError(\"%s loads %s as the forward stored them: pass outputs_unmodified=True \"\n"
                        "                         \"only when they are unchanged since the forward, else use the backward \"\n"
                        "                         \"generated without trusted outputs (it recomputes them)\")\n",
                   lname, P->trusted);
    buf_puts(out, "    names = (");
    wrap(out, buf_str(&quoted), LINE_LIMIT - 1, "             ", 13);
    buf_puts(out, ")\n");
    if (fwd->descs.n) {
        Buf ds = {.a = a};
        for (int j = 0; j < fwd->descs.n; j++) {
            const FuncDesc *fd = &fwd->descs.v[j];
            int at = 0;
            while (at < nargs && !(argn[at] && !strcmp(argn[at], fd->name)))
                at++;
            ASSERT(at < nargs);
            buf_printf(&ds, "%s(%d, %d, (", j ? ", " : "", at, fd->rank);
            for (int k = 0; k < fd->rank; k++)
                buf_printf(&ds, "%s%lld", k ? ", " : "", (long long)fd->block[k]);
            buf_printf(&ds, "%s), \"%s\")", fd->rank == 1 ? "," : "", fd->nan ? "nan" : "zero");
        }
        buf_puts(out, "    # host-side tensor descriptors as the kernel takes them: base, shape, strides but the last\n");
        buf_printf(out, "    args = _kad_descs(args, (%s%s))\n", buf_str(&ds), fwd->descs.n == 1 ? "," : "");
    }
    buf_puts(out, "    if len(args) != len(names):\n");
    buf_printf(out, "        raise TypeError(f\"%s: expected {len(names)} arguments after the grid \"\n"
                    "                        f\"({', '.join(names)}), got {len(args)}\")\n", lname);
    if (jvp_nin == -1 && P->cleared.n) { /* Program.cleared: the caller's output gradients stay as given */
        Buf is = {.a = a};
        for (int j = 0; j < P->cleared.n; j++)
            buf_printf(&is, "%d, ", at0 + P->cleared.v[j] - nfwd);
        buf_printf(out, "    # outputs stored at several sites: their stores read their gradients and clear them (the\n"
                        "    # later store wins), on copies\n"
                        "    args = list(args)\n"
                        "    for i in (%s):\n"
                        "        g = args[i]\n"
                        "        args[i] = torch.empty_strided(g.size(), g.stride(), dtype=g.dtype, device=g.device).copy_(g)\n",
                   buf_str(&is));
    }
    /* runtime arguments Triton specializes: the body has their values built in */
    for (int k = 0, at = 0; k < ndef; k++) {
        if (!is_arg(bwd, o, k))
            continue;
        if (o[k].cnst) {
            const ConstParam *cp = &bwd->consts.v[o[k].i];
            if (!strcmp(cp->value, "None"))
                buf_printf(out, "    if args[%d] is not None:\n", at);
            else
                buf_printf(out, "    if isinstance(args[%d], bool) or args[%d] != %s:\n", at, at, cp->value);
            buf_printf(out, "        raise ValueError(f\"this %s is specialized for %s=%s (a constant for "
                            "Triton), \"\n                         f\"got {args[%d]!r}: generate it for that "
                            "signature\")\n",
                       what, cp->name, cp->value, at);
        } else if (o[k].i < nfwd && ir_param_range(bwd, o[k].i)) {
            const ParamRange *r = ir_param_range(bwd, o[k].i);
            const char *pn = bwd->vals.v[bwd->params[o[k].i]].name;
            buf_printf(out, "    if not %lld <= args[%d] <= %lld:\n", (long long)r->lo, at, (long long)r->hi);
            buf_printf(out, "        raise ValueError(f\"this %s is specialized for %s in [%lld, %lld], got {args[%d]!r}: \"\n"
                            "                         f\"generate it for that signature\")\n",
                       what, pn ? pn : "?", (long long)r->lo, (long long)r->hi, at);
        }
        at++;
    }
    if (nc) {
        buf_puts(out, "    if constexprs:\n        specialized = {");
        for (int i = 0, j = 0; i < bwd->consts.n; i++)
            if (!bwd->consts.v[i].runtime)
                buf_printf(out, "%s\"%s\": %s", j++ ? ", " : "", bwd->consts.v[i].name, bwd->consts.v[i].value);
        buf_puts(out, "}\n");
        buf_puts(out, "        for name, value in constexprs.items():\n"
                      "            if name not in specialized:\n");
        buf_printf(out, "                raise TypeError(f\"%s: unexpected keyword {name!r}\")\n", lname);
        buf_printf(out, "            if value != specialized[name]:\n"
                      "                raise ValueError(f\"this %s is specialized for {name}={specialized[name]!r}, \"\n"
                      "                                 f\"got {value!r}: generate it for that signature\")\n", what);
    } else {
        buf_puts(out, "    if constexprs:\n");
        buf_printf(out, "        raise TypeError(f\"%s: unexpected keywords {sorted(constexprs)}\")\n", lname);
    }
    if (plan) { /* the plan of this launch key: computed on the first launch, then looked up */
        buf_printf(out, "    if callable(grid):\n"
                        "        grid = grid({**dict(zip(names, args))%s})\n"
                        "    grid = tuple(grid) + (1,) * (3 - len(grid))\n"
                        "    key = (",
                   buf_str(&meta));
        wrap(out, arena_printf(a, "%s)", buf_str(&key)), LINE_LIMIT, "           ", 11);
        buf_printf(out, "\n    plan = _kad_plans.get(key)\n"
                      "    if plan is None:\n"
                      "        if len(_kad_plans) >= 4096:\n"
                      "            _kad_plans.clear()\n"
                      "        plan = _kad_plans[key] = _kad_plan(names, grid, args, %s)\n",
                   bwd->fold && bwd->fold->axes ? "nfold" : "None");
        buf_puts(out, bwd->fold ? "    flags, zero, fold_grid, extra, alloc, sgrid, sums, ck = plan\n"
                                : "    flags, zero, ck = plan\n");
        buf_puts(out, "    for i in zero:\n"
                      "        args[i].zero_()\n");
        if (bwd->fold)
            buf_puts(out, "    if fold_grid is None:\n"
                          "        return\n");
        buf_puts(out, "    args = [*args, *flags]\n");
    } else {
        print_guards(out, a, P, nfwd, nins, at0, false);
    }
    if (P->gather) { /* the forward's grid, for the gather kernels */
        if (plan) {
            buf_puts(out, "    _kg = grid  # the forward's grid\n");
        } else {
            buf_printf(out, "    _kg = tuple(grid({**dict(zip(names, args))%s}) if callable(grid) else grid)\n",
                       buf_str(&meta));
            buf_puts(out, "    _kg = _kg + (1,) * (3 - len(_kg))  # the forward's grid\n");
        }
    }
    if (!direct) /* a direct launch passes its warps and stages to _kad_go */
        buf_puts(out, "    options = {}\n"
                      "    if num_warps is not None:\n"
                      "        options[\"num_warps\"] = num_warps\n"
                      "    if num_stages is not None:\n"
                      "        options[\"num_stages\"] = num_stages\n");
    /* the call: runtime arguments in slices, constexpr values in their places */
    Buf call = {.a = a};
    buf_puts(&call, call_text(a, bwd, o, ndef, nargs, true));
    /* the Program's steps, first what precedes the launches: the tapes' allocation, a fold's
     * partials, the GEMM form's attempt (whose steps exclude each other's: no order among them
     * shows); the flags, guards and zero-fills are _kad_plan's or print_guards' above */
    for (int i = 0; i < P->steps.n; i++) {
        const Step *s = &P->steps.v[i];
        if (s->kind == STEP_TAPE && s->j == 0)
            print_tapes(out, a, P, lname);
        else if (s->kind == STEP_FOLD) {
            buf_puts(out, "    grid = fold_grid\n");
            print_fold(out, a, bwd, nfwd, at0);
        } else if (s->kind == STEP_GEMM)
            print_gemm(out, a, P, buf_str(&call), at0, nfwd, o, ndef);
    }
    if (nc)
        buf_puts(out, "    # the runtime arguments with the constexpr values in their places\n");
    if (emit_has_desc(bwd))
        buf_puts(out, "    _kad_tma_allocator(args)  # tl.make_tensor_descriptor needs global scratch on a GPU\n");
    /* descriptor stores into gradients (TMA) where the gradient's base is 16-byte aligned */
    for (int j = 0; j < ntg; j++) {
        int pi = 0;
        while (bwd->params[pi] != tg[j])
            pi++;
        buf_printf(&call, "%s%s=_kad_tma_ok(args[%d])", call.len ? ", " : "", emit_tma_flag(a, bwd, tg[j]),
                   at0 + pi - nfwd);
    }
    /* direct: the tensors among the call's values, the def's pointer parameters then the gradients */
    int np = 0, *ptrs = arena_alloc(a, sizeof *ptrs * (size_t)(ndef + plan_nargs(P) - nfwd + 1));
    for (int k = 0; k < ndef + plan_nargs(P) - nfwd; k++)
        if (k >= ndef || (!o[k].cnst && ir_type(bwd, bwd->params[o[k].i]).dt == DT_PTR))
            ptrs[np++] = k;
    /* then the launches, in the Program's order: the main kernel (the spread's S programs per
     * forward program; a fold's with its sum kernel after it), the gather kernels, the `while`
     * tapes' overflow checks */
    for (int i = 0; i < P->steps.n; i++) {
        const Step *s = &P->steps.v[i];
        const char *ind = "    ";
        switch (s->kind) {
        case STEP_LAUNCH_UNLESS_GATHERED:
            buf_puts(out, "    if not (");
            for (int j = 0, k = 0; j < P->gather->n; j++)
                if (P->gather->in[j].flag >= 0)
                    buf_printf(out, "%sargs[%d]", k++ ? " and " : "", nargs + P->gather->in[j].flag);
            buf_puts(out, "):  # else it has nothing left to do: the gathers write its gradients\n");
            ind = "        ";
            /* fall through */
        case STEP_LAUNCH:
        case STEP_FOLD: {
            int w, st;
            launch_defaults(bwd, P->spread, &w, &st);
            if (P->spread) /* S programs per forward program along axis 0 (the plan's last flag) */
                buf_printf(out, "%s_sg = (grid[0] * args[%d], grid[1], grid[2])  # %s programs per forward program\n",
                           ind, nargs + P->main->flags.n, KAD_SPREAD_PARAM);
            print_launch(out, a, ind, kname, P->spread ? "_sg" : "grid", buf_str(&call), direct ? ptrs : NULL, np, 0,
                         arena_printf(a, "num_warps or %d", w),
                         st ? arena_printf(a, "num_stages or %d", st) : "num_stages",
                         launch_options(a, bwd, P->spread), tune_facts(a, bwd, o, ndef, nfwd));
            if (s->kind == STEP_FOLD)
                print_fold_sums(out, a, P, kname, nfwd, at0, direct);
            break;
        }
        case STEP_GATHER:
            if (s->j == 0) /* every gather kernel, in order */
                print_gathers(out, a, P, o, ndef, nargs, direct ? ptrs : NULL, np);
            break;
        case STEP_TAPE_CHECK:
            if (i == 0 || P->steps.v[i - 1].kind != STEP_TAPE_CHECK) /* one loop over every bounded tape */
                buf_puts(out, "    for _t, _line, _cap in _kad_bounded:  # the overflow flags: never a gradient from a partial tape\n"
                              "        if _t[0].item() != 0:\n"
                              "            raise RuntimeError(\"kad: the `while` loop at line %d ran more than %d iterations, \"\n"
                              "                               \"the capacity of its tape; the gradients are invalid (raise the \"\n"
                              "                               \"capacity: kad grad --while-cap N, or the loop's bound)\" % (_line, _cap))\n");
            break;
        default: break;
        }
    }
}

static const char *py_escaped(Arena *a, const char *text);

/* A kernel that is not a backward (a saving forward, a jvp, a race check) as a Program of one
 * launch, for print_launcher.  The launcher only reads it. */
static const Program *alone(Arena *a, const Func *f)
{
    Program *p = plan_new(a, (Func *)f);
    plan_steps(p);
    return p;
}

/* check_<kernel>_launch(grid, *args): the backward's launch conditions (Func.guards) on the
 * forward's runtime arguments alone, so that the package refuses a launch before its forward
 * runs (an in-place forward would otherwise have overwritten its buffer by then). */
static void print_launch_check(Buf *out, Arena *a, const Func *bwd, const DefParam *o, int nfwd, const Func *fwd)
{
    Buf names = {.a = a}, meta = {.a = a};
    for (int k = 0; k < nfwd + bwd->consts.n; k++)
        if (is_arg(bwd, o, k))
            buf_printf(&names, "\"%s\", ", o[k].cnst ? bwd->consts.v[o[k].i].name
                                                     : bwd->vals.v[bwd->params[o[k].i]].name);
    for (int i = 0; i < bwd->consts.n; i++)
        if (!bwd->consts.v[i].runtime)
            buf_printf(&meta, ", \"%s\": %s", bwd->consts.v[i].name, bwd->consts.v[i].value);
    buf_printf(out, "\n\ndef check_%s_launch(grid, *args):\n    \"\"\"", ident(a, fwd->name));
    wrap(out, arena_printf(a, "Raises ValueError (located) when this launch of %s breaks a condition its backward "
                              "needs (docs/AD.md); the package calls it before the forward runs. args: the forward's "
                              "runtime arguments.", fwd->name),
         LINE_LIMIT, "    ", 7);
    buf_printf(out, "\n    \"\"\"\n");
    if (!bwd->guards.n || fwd->descs.n) { /* (host-side descriptors: their launcher checks, expanded) */
        buf_puts(out, "    return\n");
        return;
    }
    buf_printf(out, "    names = (%s)\n", buf_str(&names));
    buf_printf(out, "    _a = dict(zip(names, args))\n"
                    "    _g = tuple(grid({**_a%s}) if callable(grid) else grid)\n"
                    "    _g = _g + (1,) * (3 - len(_g))\n", buf_str(&meta));
    Buf conds = {.a = a};
    const char **c = arena_alloc(a, sizeof *c * (size_t)bwd->guards.n);
    for (int i = 0; i < bwd->guards.n; i++) {
        c[i] = access_cond_host((Access *)bwd->guards.v[i].acc, bwd->guards.v[i].cond, "_a", "_g");
        buf_puts(&conds, c[i] ? c[i] : "");
    }
    if (strstr(buf_str(&conds), "_tdiv(") || strstr(buf_str(&conds), "_trem(")) {
        buf_puts(out, "\n");
        print_tdiv(out);
    }
    for (int i = 0; i < bwd->guards.n; i++) {
        const FuncGuard *g = &bwd->guards.v[i];
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
    wrap(out, arena_printf(a, "Host code from here on: %s(grid, *args) checks a launch, allocates what the "
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
    const char *kname = arena_printf(a, "%s_bwd", ident(a, fwd->name));
    const char *lname = arena_printf(a, "launch_%s", kname);
    DefParam *o = def_order(a, bwd, nfwd);
    EmitOptions opt = {
        .name = kname,
        .header = bwd_header(a, fwd, P, spec, o, nfwd, lname),
        .backward = true,
        .nfwd = nfwd,
        .nouts = spec->nouts,
    };
    if (!emit_triton(out, bwd, &opt, d))
        return false;
    if (bwd->fold) {
        const FoldPlan *pl = bwd->fold;
        Buf hd = {.a = a}, ns = {.a = a};
        for (int j = 0; j < pl->n; j++) {
            const char *x = pl->n > 1 ? arena_printf(a, "_%s", pl->in[j].name) : "";
            buf_printf(&hd, "%sd_%s", j ? (j + 1 == pl->n ? " and " : ", ") : "", pl->in[j].name);
            buf_printf(&ns, "%s\"span%s\", \"nfold%s\"", j ? ", " : "", x, x);
        }
        EmitOptions so = {
            .name = sum_name(a, kname),
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
        print_gemm_helper(out, a, P);
    bool covers = false;
    for (int i = 0; i < P->covers.n; i++)
        covers |= P->covers.v[i].cover != NULL;
    for (int i = 0; P->gemm && i < P->gemm->n; i++)
        covers |= P->gemm->op[i].cover != NULL;
    if (covers)
        buf_printf(out, "\n\n%s", access_cover_helper());
    if (fwd->descs.n)
        buf_puts(out, kad_py_descs);
    if (emit_has_desc(bwd))
        buf_puts(out, kad_py_tma);
    if (bwd->fold)
        buf_printf(out, "\n\n%s%s%s", kad_py_fold_fill, kad_py_sms, kad_py_dense);
    else if (P->spread && !P->gemm)
        buf_printf(out, "\n\n%s", kad_py_sms);
    buf_printf(out, "%s%s%s", bwd->fold ? "" : "\n\n", kad_py_go, kad_py_tune);
    /* the package's question (docs/GRAD.md, "Launch parameters"): a dot's tiles follow the forward's
     * warps (an autotuned matmul's config); a kernel without one is better with kad's defaults */
    buf_printf(out, "\n\n# the package passes the forward's num_warps/num_stages to this launcher only when True: when\n"
                    "# the backward has a tl.dot, whose tiles follow the forward's warps (docs/GRAD.md)\n"
                    "_kad_forward_options = %s\n", has_dot(bwd) ? "True" : "False");
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
    print_launcher(out, a, P, o, nfwd, spec->nouts, fwd, kname, lname, -1);
    print_launch_check(out, a, bwd, o, nfwd, fwd);
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
    const char *kname = arena_printf(a, "%s_fwd", ident(a, fwd->name));
    const char *lname = arena_printf(a, "launch_%s", kname);
    DefParam *o = def_order(a, sv, nfwd);
    Buf sig = {.a = a}, h = {.a = a}, t = {.a = a};
    def_signature(&sig, sv, o, nfwd);
    buf_printf(&sig, "%s%s=*fp32", sig.len ? ", " : "", KAD_SAVE_PARAM);
    buf_printf(&h, "The Triton kernel %s with its loop results saved for the backward, generated by kad %s.\n",
               fwd->name, KAD_VERSION_STRING);
    buf_puts(&h, "Specialized for: ");
    wrap(&h, buf_str(&sig), LINE_LIMIT - 2, "    ", 17);
    buf_puts(&h, "\n");
    buf_printf(&t, "Computes what %s computes and stores, after each loop whose results the backward would "
                   "otherwise compute again by running the loop, those results into %s: %lld fp32 elements per "
                   "program, program p's slot at p * %lld with p = pid0 + G0 * (pid1 + G1 * pid2). The backward "
                   "built for this buffer (kad_grad_ex with KAD_GRAD_SAVED) loads them (docs/AD.md, \"Saved "
                   "loop results\").",
               fwd->name, KAD_SAVE_PARAM, (long long)slot, (long long)slot);
    wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
    buf_printf(&h, "\nLaunch with %s(grid, *args, %s): args are the forward's runtime arguments.", lname,
               KAD_SAVE_PARAM);
    if (!emit_forward_kernel(out, fwd, sv, kname, buf_str(&h), d))
        return false;
    buf_printf(out, "\n\n_kad_slot = %lld  # fp32 elements of %s per program\n", (long long)slot, KAD_SAVE_PARAM);
    print_launcher(out, a, alone(a, sv), o, nfwd, 1, fwd, kname, lname, -2);
    return true;
}

bool emit_triton_jvp(Buf *out, const Func *fwd, const Func *jv, const AdSpec *spec, Diags *d)
{
    Arena *a = out->a;
    int nfwd = fwd->nparams;
    ASSERT(jv->nparams == nfwd + spec->nouts + ad_spec_nwrt_only(spec) && jv->consts.n == fwd->consts.n);
    const char *kname = arena_printf(a, "%s_jvp", ident(a, fwd->name));
    const char *lname = arena_printf(a, "launch_%s", kname);
    DefParam *o = def_order(a, jv, nfwd);
    int nin = spec->nwrt; /* tangent inputs (in-place names among them), then the outputs' */
    Buf sig = {.a = a}, h = {.a = a}, t = {.a = a};
    def_signature(&sig, jv, o, nfwd);
    buf_printf(&h, "Forward-mode derivative (JVP) of the Triton kernel %s, generated by kad %s.\n", fwd->name,
               KAD_VERSION_STRING);
    buf_puts(&h, "Specialized for: ");
    wrap(&h, sig.len ? buf_str(&sig) : "(no parameters)", LINE_LIMIT - 2, "    ", 17);
    buf_puts(&h, "\n");
    buf_printf(&t, "Computes the outputs %s and their tangents (written to %s) from the tangents of the inputs "
                   "%s (read from %s), in one pass: tangent buffers are laid out like their primals, loaded and "
                   "stored with the same offsets and masks; tangents have their primal's dtype.",
               name_list(a, spec->outs, spec->nouts, ""), name_list(a, spec->outs, spec->nouts, "t_"),
               name_list(a, spec->wrt, spec->nwrt, ""), name_list(a, spec->wrt, spec->nwrt, "t_"));
    wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
    buf_printf(&h, "\nLaunch with %s(grid, *args): args are the forward's runtime arguments, then the tangents.",
               lname);
    if (!emit_forward_kernel(out, fwd, jv, kname, buf_str(&h), d))
        return false;
    print_launcher(out, a, alone(a, jv), o, nfwd, jv->nparams - nfwd, fwd, kname, lname, nin);
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
    const char *base = ident(a, fwd->name);
    const char *kname = arena_printf(a, "%s_race", base), *lname = arena_printf(a, "launch_%s", kname);
    const Func *rk = p->kernel ? p->kernel : fwd;
    DefParam *o = def_order(a, rk, nfwd);
    Buf sig = {.a = a}, h = {.a = a}, t = {.a = a};
    def_signature(&sig, rk, o, nfwd); /* the check kernel's: the outputs' tag buffers are int64 */
    if (p->kernel)
        buf_printf(&sig, "%s%s=*i32", sig.len ? ", " : "", KAD_RACE_PARAM);
    buf_printf(&h, "The one-writer check of the Triton kernel %s's differentiated outputs, generated by kad %s.\n",
               fwd->name, KAD_VERSION_STRING);
    buf_puts(&h, "Specialized for: ");
    wrap(&h, sig.len ? buf_str(&sig) : "(no parameters)", LINE_LIMIT - 2, "    ", 17);
    buf_puts(&h, "\n");
    buf_printf(&t, "check_%s_races(grid, *args) raises ValueError when two programs of the launch, or two lanes "
                   "of one store, write one element of a differentiated output: the forward then races and no "
                   "gradient is right (docs/AD.md, \"One writer per element\"). kad's access analysis proves most "
                   "stores; the rest (an index loaded from memory, a condition on the launch that fails) are "
                   "decided by %s, run on the launch's arguments before the forward.",
               base, p->kernel ? kname : "nothing kad can run (the launch is refused)");
    wrap(&h, buf_str(&t), LINE_LIMIT - 2, "    ", 0);
    if (p->kernel) {
        if (!emit_forward_kernel(out, fwd, rk, kname, buf_str(&h), d))
            return false;
        print_launcher(out, a, alone(a, rk), o, nfwd, 1, fwd, kname, lname, -3);
    } else {
        buf_printf(out, "\"\"\"%s\n\"\"\"\n", buf_str(&h));
    }
    /* the wrapper: the forward's runtime arguments (def order), their positions */
    int ndef = nfwd + rk->consts.n;
    Buf names = {.a = a}, outs = {.a = a}, meta = {.a = a};
    int na = 0;
    for (int k = 0; k < ndef; k++) {
        if (!is_arg(rk, o, k))
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
    wrap(out, arena_printf(a, "Raises ValueError (located at the store) when this launch of %s has two writers of "
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
            print_tdiv(out);
        buf_puts(out, "    _a, _g = dict(zip(names, args)), grid\n    if (");
        wrap(out, arena_printf(a, "%s):", buf_str(&all)), LINE_LIMIT, "            ", 8);
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
