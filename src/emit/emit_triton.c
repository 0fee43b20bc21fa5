/* emit_triton.c -- prints an IR Func as readable Triton source.
 *
 * Job: turn any verified Func (a specialized forward kernel today, a
 * derivative kernel later) into a Python module holding one @triton.jit
 * function that computes exactly what the IR computes, and that a kernel
 * author would be glad to read and edit: source names kept, one statement
 * per line, single-use temporaries folded into their user, constants
 * inline, the broadcasts that Triton performs implicitly left out, and
 * structured control flow as Python `for`/`if`/`while` over plain
 * variables.
 *
 * Requires: a Func that passes ir_verify (operand types of elementwise ops
 * identical, regions ending in their terminators).  Guarantees: the output
 * is deterministic; every construct either prints with Triton semantics
 * equal to the IR's or is reported as a located error (nothing is emitted
 * silently wrong).  docs/EMIT.md lists the mapping of every op.
 *
 * How it works, in passes over the Func (all state lives in one Emitter):
 *   1. scan      numbers every instruction in print order, records where
 *                each value is defined, decides which IR broadcasts Triton
 *                does implicitly (the operand is printed without them),
 *                drops dead pure instructions and counts the uses left.
 *   2. inline    a value used once, in the same block, without a source
 *                name, whose instruction is pure (or a load that no store
 *                separates from its user) is printed inside its user's
 *                expression -- unless that makes a line too long.
 *   3. liveness  each printed variable gets a live interval in the print
 *                order; a use inside a loop keeps the value live to the
 *                loop's end.
 *   4. coalesce  Python variables are shared by "classes" of values: a
 *                loop's carried value, region parameters and results must
 *                share one name; inits, yields and if-branch values join
 *                the class when their live intervals do not overlap, so
 *                that `acc = acc + x` needs no copies.  Remaining copies are
 *                printed as parallel moves (sequenced, or a tuple
 *                assignment when they form a cycle).
 *   5. names     classes get unique valid identifiers from the source-name
 *                hints (`acc.1` -> `acc_1`), kernel parameters keep theirs.
 *   6. print     the module text.
 *
 * Loads and stores made from tensor descriptors (IF_DESC) print as
 * desc.load / desc.store, each descriptor made once at the top of the
 * kernel where its base, shape and strides are parameters or constants
 * (emit_desc_choose, print_descs); their pointer tiles and masks are then dead
 * code, except under a backward's TMA_<d_x> flag, whose else-branch stores
 * through the pointers.
 *
 * Backward kernels (emit_triton_backward, docs/GRAD.md) go through the
 * same passes with EmitOptions.backward: parameters in the forward def's
 * order, the body split into "recompute the forward" and "reverse sweep",
 * then the host launcher launch_<kernel>_bwd after the function.
 *
 * Triton typing is modelled where it differs from the IR's explicit
 * types: Python literals are weak scalars in Triton's binary operators but
 * become fp32/i32 tensors elsewhere, fp16/bf16 division and remainder run
 * in fp32, tl.max/tl.sum widen small types, and tl math functions accept
 * only fp32/fp64.  The emitter prints a constant as a literal only where
 * the literal provably yields the IR's value and type, and appends
 * `.to(tl.<dtype>)` where Triton's result type differs from the IR's.
 *
 * Files: this one holds the tensor descriptors, the module around the
 * body (pass 6) and the driver emit_triton; emit_passes.c the passes 1-5;
 * emit_expr.c prints one instruction as a Python expression (constants,
 * operators, calls, Triton's typing), emit_stmt.c as statements
 * (assignments, control flow, parallel moves).  Their shared state
 * (Emitter, InstInfo, ValInfo) and the helpers they call across files
 * are declared in emit.h, the entry points in emit_triton.h.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "emit/emit_triton.h"
#include "emit/emit.h"

void em_error(Emitter *E, Loc loc, const char *fmt, ...)
{
    if (E->measuring)
        return; /* the final print reports it once */
    va_list ap;
    va_start(ap, fmt);
    diag_verror(E->d, loc, fmt, ap);
    va_end(ap);
    E->failed = true;
}

bool emit_is_loop(OpKind op) { return op == OP_FOR || op == OP_WHILE; }

bool emit_is_cf(OpKind op) { return op == OP_FOR || op == OP_IF || op == OP_WHILE; }

/* ------------------------------------------------------------------ */
/* Tensor descriptors (IF_DESC accesses printed as TMA)                */
/* ------------------------------------------------------------------ */

static bool block_has_desc(const Block *b)
{
    for (int i = 0; b && i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        if ((in->op == OP_LOAD || in->op == OP_STORE) && (in->flags & IF_DESC))
            return true;
        for (int r = 0; r < in->nregions; r++)
            if (block_has_desc(in->regions[r]))
                return true;
    }
    return false;
}

bool emit_has_desc(const Func *f) { return block_has_desc(f->body); }

static int param_index(const Func *f, ValId v)
{
    for (int i = 0; i < f->nparams; i++)
        if (f->params[i] == v)
            return i;
    return -1;
}

static void tma_grads_in(const Block *b, const Func *f, int nfwd, ValId *out, int *n)
{
    for (int i = 0; b && i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nregions; r++)
            tma_grads_in(in->regions[r], f, nfwd, out, n);
        if ((in->op != OP_STORE && in->op != OP_LOAD) || !(in->flags & IF_DESC) ||
            param_index(f, in->args[ir_desc_at(in)]) < nfwd)
            continue;
        ValId p = in->args[ir_desc_at(in)];
        int k = 0;
        while (k < *n && out[k] != p)
            k++;
        if (k == *n)
            out[(*n)++] = p;
    }
}

int emit_tma_grads(const Func *f, int nfwd, ValId *out)
{
    int n = 0;
    tma_grads_in(f->body, f, nfwd, out, &n);
    for (int i = 1; i < n; i++) /* parameter order */
        for (int j = i; j > 0 && param_index(f, out[j]) < param_index(f, out[j - 1]); j--) {
            ValId t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

const char *emit_tma_flag(Arena *a, const Func *f, ValId p)
{
    const char *h = em_py_ident(a, f->vals.v[p].name);
    return arena_printf(a, "TMA_%s", h ? h : "grad");
}

/* An IF_DESC load or store prints as its descriptor's access (info->desc)
 * unless a store's value is a constant (desc.store wants a tile).  The
 * pointer tile, mask and `other` are then not printed (their operands
 * dropped from eff, so that their computation is dead code), except under
 * a backward's TMA flag, whose else-branch stores through the pointers. */
void emit_desc_choose(Emitter *E, InstInfo *info)
{
    const Inst *in = info->in;
    if ((in->op != OP_LOAD && in->op != OP_STORE) || !(in->flags & IF_DESC))
        return;
    if (in->op == OP_STORE && E->vi[in->args[1]].cnst)
        return;
    int at = ir_desc_at(in), r = ir_desc_rank(in);
    EmDesc d = {.first = info, .base = in->args[at], .rank = r};
    for (int k = 0; k < 2 * r - 1; k++) {
        /* Triton converts shapes to int32 and strides to int64 itself: sema's widening casts
         * of integer scalars are not printed (`shape=[M, N]`, not `shape=[tmp0, tmp1]`) */
        ValId v = in->args[at + 1 + k];
        for (const InstInfo *di = E->vi[v].defi; di && di->in->op == OP_CAST;) {
            Type src = em_vtype(E, di->in->args[0]);
            if (src.rank || !dtype_is_int((Dtype)src.dt) || src.dt == DT_I1 ||
                dtype_bits((Dtype)src.dt) > dtype_bits((Dtype)em_vtype(E, v).dt))
                break;
            v = di->in->args[0];
            di = E->vi[v].defi;
        }
        d.dims[k] = info->eff[at + 1 + k] = v;
    }
    if (in->op == OP_LOAD && (in->flags & IF_HAS_OTHER)) {
        const Inst *c = em_const_inst(E, in->args[2]);
        d.nan = c && c->fval != c->fval;
    }
    bool bwd = E->opt && E->opt->backward;
    if (bwd && param_index(E->f, d.base) >= E->opt->nfwd) /* a gradient's (d_x stores, d_y loads) */
        d.flag = d.base;
    d.hoist = E->vi[d.base].param || E->vi[d.base].cnst;
    for (int k = 0; k < 2 * r - 1; k++)
        d.hoist = d.hoist && (E->vi[d.dims[k]].param || E->vi[d.dims[k]].cnst);
    int idx = -1;
    for (int j = 0; d.hoist && j < E->descs.n && idx < 0; j++) {
        const EmDesc *o = &E->descs.v[j];
        if (!o->hoist || o->base != d.base || o->rank != r || o->nan != d.nan || o->flag != d.flag)
            continue;
        bool same = true;
        Type a = em_vtype(E, o->first->in->args[0]), b = em_vtype(E, in->args[0]);
        for (int k = 0; k < r; k++)
            same = same && a.shape[k] == b.shape[k];
        for (int k = 0; k < 2 * r - 1; k++)
            same = same && o->dims[k] == d.dims[k];
        if (same)
            idx = j;
    }
    if (idx < 0) {
        idx = E->descs.n;
        vec_push(E->a, E->descs, d);
    }
    info->desc = idx + 1;
    if (d.flag)
        return; /* the pointer access stays, for the flag's else-branch */
    info->eff[0] = 0;
    for (int i = in->op == OP_LOAD ? 1 : 2; i < at; i++)
        info->eff[i] = 0; /* mask, other */
}

/* The expression of descriptor d (a hoisted one's name). */
static const char *desc_expr(Emitter *E, const EmDesc *d, InstInfo *info)
{
    if (d->hoist && E->measuring)
        return "x_ptr_desc"; /* a placeholder of a name's length: names come after inlining */
    if (d->hoist && d->name)
        return d->name;
    const Inst *in = info->in;
    int at = ir_desc_at(in), r = d->rank;
    Type t = em_vtype(E, in->args[0]);
    Buf b = {.a = E->a};
    buf_printf(&b, "tl.make_tensor_descriptor(%s, shape=[", em_opnd(E, info, at, CTX_ANY).s);
    for (int k = 0; k < 2 * r - 1; k++) {
        if (k == r)
            buf_puts(&b, "], strides=[");
        const Inst *c = em_const_inst(E, info->eff[at + 1 + k]);
        if (c)
            buf_printf(&b, "%s%lld", k && k != r ? ", " : "", (long long)c->ival);
        else
            buf_printf(&b, "%s%s", k && k != r ? ", " : "", em_opnd(E, info, at + 1 + k, CTX_SLOT).s);
    }
    buf_printf(&b, "%s1], block_shape=[", r > 1 ? ", " : "], strides=[");
    for (int k = 0; k < r; k++)
        buf_printf(&b, "%s%d", k ? ", " : "", (int)t.shape[k]);
    buf_printf(&b, "]%s)", d->nan ? ", padding_option=\"nan\"" : "");
    return buf_str(&b);
}

const char *em_desc_access(Emitter *E, InstInfo *info)
{
    const Inst *in = info->in;
    const EmDesc *d = &E->descs.v[info->desc - 1];
    int at = ir_desc_at(in), r = d->rank;
    Buf b = {.a = E->a};
    buf_printf(&b, "%s.%s([", desc_expr(E, d, info), in->op == OP_LOAD ? "load" : "store");
    for (int k = 0; k < r; k++) {
        const Inst *c = em_const_inst(E, in->args[at + 2 * r + k]);
        if (c)
            buf_printf(&b, "%s%lld", k ? ", " : "", (long long)c->ival);
        else
            buf_printf(&b, "%s%s", k ? ", " : "", em_opnd(E, info, at + 2 * r + k, CTX_SLOT).s);
    }
    buf_puts(&b, "]");
    if (in->op == OP_STORE)
        buf_printf(&b, ", %s", em_opnd(E, info, 1, CTX_SLOT).s);
    buf_puts(&b, ")");
    return buf_str(&b);
}

/* The hoisted descriptors' statements, at the top of the kernel body. */
static void print_descs(Emitter *E, Buf *text)
{
    bool any = false;
    for (int j = 0; j < E->descs.n; j++)
        any |= E->descs.v[j].hoist;
    if (!any)
        return;
    buf_puts(text, "    # tensor descriptors: TMA transfers on compute capability 9.0 and later\n");
    for (int j = 0; j < E->descs.n; j++) {
        EmDesc *d = &E->descs.v[j];
        if (!d->hoist)
            continue;
        const char *name = d->name;
        d->name = NULL; /* the expression, not the name */
        d->hoist = false;
        const char *x = desc_expr(E, d, d->first);
        d->name = name;
        d->hoist = true;
        const char *ind = d->flag ? "        " : "    ";
        if (d->flag)
            buf_printf(text, "    if %s:\n", emit_tma_flag(E->a, E->f, d->flag));
        const char *paren = strchr(x, '(');
        size_t len = strlen(ind) + strlen(d->name) + 3 + strlen(x);
        if (len <= LINE_LIMIT || !paren) {
            buf_printf(text, "%s%s = %s\n", ind, d->name, x);
        } else if (strlen(ind) + 4 + strlen(paren + 1) <= LINE_LIMIT) { /* the arguments on a line of their own */
            buf_printf(text, "%s%s = %.*s\n%s    %s\n", ind, d->name, (int)(paren - x + 1), x, ind, paren + 1);
        } else { /* one argument per line */
            buf_printf(text, "%s%s = %.*s\n%s    ", ind, d->name, (int)(paren - x + 1), x, ind);
            int depth = 0;
            for (const char *c = paren + 1; c[1]; c++) { /* up to the closing parenthesis */
                depth += (*c == '[' || *c == '(') - (*c == ']' || *c == ')');
                if (depth == 0 && c[0] == ',' && c[1] == ' ') {
                    buf_printf(text, ",\n%s    ", ind);
                    c++;
                } else {
                    buf_putc(text, *c);
                }
            }
            buf_printf(text, ",\n%s)\n", ind);
        }
    }
}

static void name_descs(Emitter *E)
{
    for (int j = 0; j < E->descs.n; j++) {
        EmDesc *d = &E->descs.v[j];
        if (d->flag) {
            const char *fl = emit_tma_flag(E->a, E->f, d->flag);
            if (!emit_name_used(E, fl))
                emit_name_add(E, fl);
        }
        if (!d->hoist)
            continue;
        const char *bn = E->vi[em_find(E, d->base)].name;
        if (!bn || E->vi[d->base].cnst)
            bn = "x";
        /* x_ptr -> x_desc; a host-side descriptor's base x_desc (or d_x_desc) -> x_tma (d_x_tma) */
        size_t n = strlen(bn);
        const char *stem = n > 4 && !strcmp(bn + n - 4, "_ptr")    ? arena_strndup(E->a, bn, n - 4)
                           : n > 5 && !strcmp(bn + n - 5, "_desc") ? arena_strndup(E->a, bn, n - 5)
                                                                    : bn;
        const char *want = arena_printf(E->a, "%s_desc", stem);
        d->name = emit_unique_name(E, emit_name_used(E, want) ? arena_printf(E->a, "%s_tma", stem) : want);
    }
}

/* ------------------------------------------------------------------ */
/* Pass 6: the module                                                  */
/* ------------------------------------------------------------------ */

static void comment_lines(Buf *b, const char *text)
{
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        buf_puts(b, n ? "# " : "#");
        for (size_t i = 0; i < n; i++)
            buf_putc(b, p[i]);
        buf_putc(b, '\n');
        p += n + (nl ? 1 : 0);
    }
}

DefParam *emit_def_order(Arena *a, const Func *f, int nfwd)
{
    int n = nfwd + f->consts.n;
    DefParam *o = arena_alloc(a, sizeof *o * (size_t)(n + 1));
    bool *taken = arena_alloc(a, (size_t)(n + 1));
    bool known = true;
    for (int i = 0; i < f->consts.n; i++) {
        int at = f->consts.v[i].pos - 1;
        if (at < 0 || at >= n || taken[at])
            known = false;
        else
            taken[at] = true;
    }
    if (!known) {
        for (int i = 0; i < n; i++)
            o[i] = i < nfwd ? (DefParam){false, i} : (DefParam){true, i - nfwd};
        return o;
    }
    for (int i = 0; i < f->consts.n; i++)
        o[f->consts.v[i].pos - 1] = (DefParam){true, i};
    for (int at = 0, r = 0; at < n; at++)
        if (!taken[at])
            o[at] = (DefParam){false, r++};
    return o;
}

static void print_module(Emitter *E, Buf *out, const char *kname, const char *body)
{
    const Func *f = E->f;
    const EmitOptions *opt = E->opt;
    bool bwd = opt && opt->backward;
    if (opt && opt->fragment) {
        if (opt->header && *opt->header)
            comment_lines(out, opt->header);
    } else if (bwd) {
        /* emit_triton_backward wrote the whole module comment */
        comment_lines(out, opt->header ? opt->header : "");
    } else {
        Buf sig = {.a = E->a};
        for (int i = 0; i < f->nparams; i++) {
            buf_printf(&sig, "%s%s=", i ? ", " : "", E->vi[em_find(E, f->params[i])].name);
            type_print(&sig, em_vtype(E, f->params[i]));
            const ParamRange *r = ir_param_range(f, i);
            if (r) /* the signature's range: the kernel is only right for values inside */
                buf_printf(&sig, "[%lld:%lld]", (long long)r->lo, (long long)r->hi);
        }
        for (int i = 0; i < f->consts.n; i++)
            buf_printf(&sig, "%s%s=%s", sig.len ? ", " : "", f->consts.v[i].name, f->consts.v[i].value);

        if (opt && opt->header && *opt->header)
            comment_lines(out, opt->header);
        else
            buf_printf(out, "# Triton kernel %s.\n", f->name ? f->name : kname);
        /* the signature, wrapped at commas */
        const char *p = sig.len ? buf_str(&sig) : "(no parameters)";
        const char *lead = "# Specialized for: ";
        while (*p) {
            size_t room = LINE_LIMIT - strlen(lead), n = strlen(p);
            if (n > room) {
                n = room;
                while (n > 0 && p[n - 1] != ',')
                    n--;
                if (n == 0)
                    n = strlen(p);
            }
            buf_puts(out, lead);
            for (size_t i = 0; i < n; i++)
                buf_putc(out, p[i]);
            buf_putc(out, '\n');
            p += n;
            while (*p == ' ')
                p++;
            lead = "#   ";
        }
        buf_printf(out, "# Generated by kad %s from the specialized IR.\n", KAD_VERSION_STRING);
        if (f->consts.n)
            buf_puts(out, "# The body has the constexpr values built in; the constexpr parameters remain\n"
                          "# so that launches written for the original kernel keep working.\n");
    }
    if (!(opt && opt->fragment)) {
        buf_puts(out, "import triton\nimport triton.language as tl\n");
        if (E->libdevice)
            buf_puts(out, "from triton.language.extra import libdevice\n");
        if (bwd && opt->fold)
            buf_puts(out, "import math\nimport time\n\nimport torch\n");
        else if (bwd) /* the launcher's plans, direct launches and tuning (emit_grad_plan.c, emit_grad_launch.c) */
            buf_puts(out, "import time\n\nimport torch\n");
        buf_puts(out, "\n\n");
    }
    /* a folded backward's sizes are not specialized (== 1, divisibility): the kernel compiled
     * for a batch of one row computes each row exactly as the one for 2048 rows */
    if (E->helpers)
        buf_puts(out, E->helpers);
    const char *jit_args = opt ? opt->jit_args : NULL;
    if (bwd && opt->fold) {
        Buf j = {.a = E->a};
        buf_puts(&j, "do_not_specialize=[");
        for (int i = opt->fold->nargs, n = 0; i < f->nparams; i++)
            buf_printf(&j, "%s\"%s\"", n++ ? ", " : "", E->vi[em_find(E, f->params[i])].name);
        buf_putc(&j, ']');
        jit_args = buf_str(&j);
    }
    if (jit_args)
        buf_printf(out, "@triton.jit(%s)\n", jit_args);
    else
        buf_puts(out, "@triton.jit\n");

    /* parameters.  Forward: runtime ones, then the constexprs with their
     * values (runtime parameters specialized to None or 1 unannotated, the
     * value their default).  Backward: the def's order, constexprs without
     * defaults (a default cannot precede the gradient pointers), runtime
     * parameters specialized to None or 1 plain, then the gradients. */
    Vec(const char *) ps = {0};
    if (bwd) {
        DefParam *o = emit_def_order(E->a, f, opt->nfwd);
        for (int k = 0; k < opt->nfwd + f->consts.n; k++) {
            if (o[k].cnst) {
                const ConstParam *cp = &f->consts.v[o[k].i];
                const char *c = em_py_ident(E->a, cp->name);
                /* a runtime parameter Triton specializes (None, 1) stays a plain one */
                vec_push(E->a, ps, cp->runtime ? (c ? c : "_") : arena_printf(E->a, "%s: tl.constexpr", c ? c : "_"));
            } else {
                vec_push(E->a, ps, E->vi[em_find(E, f->params[o[k].i])].name);
            }
        }
        for (int i = opt->nfwd; i < f->nparams; i++) {
            const char *n = E->vi[em_find(E, f->params[i])].name;
            for (int j = 0; j < opt->nflags; j++) /* computed by the launcher: Triton compiles the branch taken */
                if (opt->flags[j].param == f->params[i])
                    n = arena_printf(E->a, "%s: tl.constexpr", n);
            vec_push(E->a, ps, n);
        }
        /* descriptor stores into gradients: TMA when the launcher says the base is aligned */
        ValId *tg = arena_alloc(E->a, sizeof *tg * (size_t)(f->nparams + 1));
        int ntg = emit_tma_grads(f, opt->nfwd, tg);
        for (int j = 0; j < ntg; j++)
            vec_push(E->a, ps, arena_printf(E->a, "%s: tl.constexpr = False", emit_tma_flag(E->a, f, tg[j])));
    } else {
        for (int i = 0; i < f->nparams; i++)
            vec_push(E->a, ps, E->vi[em_find(E, f->params[i])].name);
        for (int i = 0; i < f->consts.n; i++) {
            const ConstParam *cp = &f->consts.v[i];
            const char *c = em_py_ident(E->a, cp->name);
            /* a runtime parameter Triton specializes (None, 1): plain, its value the default */
            vec_push(E->a, ps, arena_printf(E->a, cp->runtime ? "%s=%s" : "%s: tl.constexpr = %s", c ? c : "_",
                                            cp->value));
        }
    }
    size_t len = strlen(kname) + 7;
    for (int i = 0; i < ps.n; i++)
        len += strlen(ps.v[i]) + 2;
    if (len <= LINE_LIMIT) {
        buf_printf(out, "def %s(", kname);
        for (int i = 0; i < ps.n; i++)
            buf_printf(out, "%s%s", i ? ", " : "", ps.v[i]);
        buf_puts(out, "):\n");
    } else {
        buf_printf(out, "def %s(\n", kname);
        for (int i = 0; i < ps.n; i++)
            buf_printf(out, "    %s,\n", ps.v[i]);
        buf_puts(out, "):\n");
    }
    buf_puts(out, *body ? body : "    pass\n");
}

/* Whether in reads a marked value, itself or inside its regions; marks
 * its results (and its regions' parameters) when it does.  Values are
 * marked in definition order, so one walk finds every reader of the seeds
 * that matters for the top-level split (a value carried around a loop is
 * marked only after something inside already read a seed). */
static bool reads_marked(const Inst *in, bool *mark)
{
    bool t = false;
    for (int i = 0; i < in->nargs; i++)
        if (in->args[i] > 0 && mark[in->args[i]])
            t = true;
    for (int r = 0; r < in->nregions; r++) {
        const Block *rb = in->regions[r];
        if (t)
            for (int j = 0; j < rb->nparams; j++)
                mark[rb->params[j]] = true;
        for (int k = 0; k < rb->insts.n; k++)
            if (reads_marked(&rb->insts.v[k], mark))
                t = true;
    }
    if (t)
        for (int r = 0; r < in->nres; r++)
            mark[in->res[r]] = true;
    return t;
}

/* The body of a backward kernel in its two sections: the top-level
 * statements before the first one that reads an output gradient's data
 * (the forward recomputed, with the pointer arithmetic of the gradients
 * that the primal sweep, sweep_rev.c, replays next to the forward's), and the rest (the reverse
 * sweep). */
static void print_backward_body(Emitter *E, Buf *text)
{
    const Func *f = E->f;
    const Block *body = f->body;
    const FoldPlan *pl = E->opt->fold;
    if (pl && pl->axes) { /* ad_fold: one loop over the forward's programs */
        Buf c = {.a = E->a};
        buf_puts(&c, "folded grid (deterministic sums): this program runs the forward's programs ");
        if (pl->axes & (pl->axes - 1))
            buf_puts(&c, "t = q, q + nfold, q + 2 * nfold, ... (t numbers the programs of the folded axes)");
        else
            buf_printf(&c, "q, q + nfold, q + 2 * nfold, ... along axis %d", pl->axis);
        buf_puts(&c, " in order, summing the gradient of");
        int nf = 0, k = 0;
        for (int j = 0; j < pl->n; j++)
            nf += !pl->in[j].rows;
        for (int j = 0; j < pl->n; j++)
            if (!pl->in[j].rows) {
                buf_printf(&c, "%s %s", k == 0 ? "" : k + 1 == nf ? " and" : ",", pl->in[j].name);
                k++;
            }
        buf_puts(&c, " into its own row of partials, which the sum kernel adds in a fixed order");
        if (nf < pl->n)
            buf_puts(&c, " (the inputs with site rows: a row per load site, see the header)");
        /* wrapped at spaces into comment lines */
        const char *p = buf_str(&c);
        while (*p) {
            size_t room = LINE_LIMIT - 6, n = strlen(p);
            if (n > room) {
                n = room;
                while (n > 0 && p[n] != ' ')
                    n--;
                if (n == 0)
                    n = room;
            }
            buf_printf(text, "    # %.*s\n", (int)n, p);
            p += n;
            while (*p == ' ')
                p++;
        }
        em_print_block(E, text, body, E->body, 1);
        return;
    }
    bool *mark = arena_alloc(E->a, (size_t)f->vals.n + 1);
    for (int i = E->opt->nfwd; i < E->opt->nfwd + E->opt->nouts && i < f->nparams; i++)
        mark[f->params[i]] = true;
    int split = body->insts.n;
    for (int i = 0; i < body->insts.n && split == body->insts.n; i++) {
        const Inst *in = &body->insts.v[i];
        if (!reads_marked(in, mark))
            continue;
        /* the output gradients' pointers are set up with the forward's
         * (the same offsets): the sweep starts where data is read */
        bool ptrs = in->nres > 0 && !in->nregions;
        for (int r = 0; r < in->nres; r++)
            if (ir_type(f, in->res[r]).dt != DT_PTR)
                ptrs = false;
        if (!ptrs)
            split = i;
    }
    Buf fwd = {.a = E->a}, rev = {.a = E->a};
    for (int i = 0; i < body->insts.n; i++)
        em_print_inst(E, i < split ? &fwd : &rev, &E->body[i], 1);
    if (fwd.len)
        buf_printf(text, "    # recompute the forward, its stores left out (d_*: the gradients' pointers)\n%s", buf_str(&fwd));
    if (fwd.len && rev.len)
        buf_putc(text, '\n');
    if (rev.len)
        buf_printf(text, "    # reverse sweep: from the output gradients back to the inputs\n%s", buf_str(&rev));
}

const char *em_combine_name(Emitter *E, const Inst *in)
{
    for (int k = 0; E->combine_names && k < E->scans.n; k++)
        if (E->scans.v[k] == in)
            return E->combine_names[k];
    return "_kad_combine"; /* measuring line lengths, before emit_combines */
}

/* Each scan's and reduce's combine region as a @triton.jit function of its params
 * returning the yielded values, emitted by the same passes; scans with the
 * same function text share one (_kad_combine_<kernel>_<k>). */
static void emit_combines(Emitter *E)
{
    Buf h = {.a = E->a};
    int n = E->scans.n, nfn = 0;
    const char **texts = arena_alloc(E->a, sizeof *texts * (size_t)n);
    E->combine_names = arena_alloc(E->a, sizeof *E->combine_names * (size_t)n);
    for (int k = 0; k < n; k++) {
        const Block *rb = E->scans.v[k]->regions[0];
        Func sub = {0};
        sub.name = "_kad_combine";
        sub.a = E->f->a;
        sub.vals = E->f->vals;
        sub.params = rb->params;
        sub.nparams = rb->nparams;
        sub.body = (Block *)rb;
        sub.loc = E->f->loc;
        EmitOptions o = {.name = sub.name, .fragment = true, .combine = true};
        Buf t = {.a = E->a};
        if (!emit_triton(&t, &sub, &o, E->d))
            E->failed = true;
        texts[k] = buf_str(&t);
        int same = -1;
        for (int j = 0; j < k && same < 0; j++)
            if (!strcmp(texts[j], texts[k]))
                same = j;
        if (same >= 0) {
            E->combine_names[k] = E->combine_names[same];
            continue;
        }
        const char *name = arena_printf(E->a, "_kad_combine_%s_%d", E->kname, nfn++);
        E->combine_names[k] = name;
        const char *def = strstr(texts[k], "def _kad_combine(");
        if (def) {
            buf_printf(&h, "%.*sdef %s(%s\n\n", (int)(def - texts[k]), texts[k], name,
                       def + strlen("def _kad_combine("));
        }
    }
    E->helpers = h.len ? buf_str(&h) : NULL;
}

bool emit_triton(Buf *out, const Func *f, const EmitOptions *opt, Diags *d)
{
    Emitter E0 = {0}, *E = &E0;
    E->a = out->a;
    E->f = f;
    E->d = d;
    E->opt = opt;
    E->nvals = f->vals.n;
    E->vi = arena_alloc(E->a, sizeof(ValInfo) * (size_t)(E->nvals + 1));
    for (int i = 0; i < f->nparams; i++)
        if (f->params[i] > 0 && f->params[i] < E->nvals) {
            E->vi[f->params[i]].blk = f->body;
            E->vi[f->params[i]].param = true;
        }
    const char *kname = em_py_ident(E->a, opt && opt->name ? opt->name : f->name);
    if (!kname)
        kname = "kernel";
    E->kname = kname;
    const Block *body = f->body;
    E->body = arena_alloc(E->a, sizeof(InstInfo) * (size_t)((body ? body->insts.n : 0) + 1));
    E->counter = 1;
    if (body)
        emit_scan_block(E, body, E->body, NULL, 0, 0);
    if (E->failed)
        return false;
    emit_mark_dead(E);
    emit_decide_inlining(E);
    emit_liveness(E);
    for (int k = 0; k < E->order.n; k++)
        for (int r = 0; r < E->order.v[k]->in->nres; r++)
            em_may_be_constexpr(E, E->order.v[k]->in->res[r]);
    emit_coalesce(E);
    emit_coalesce_names(E);
    emit_assign_names(E, kname);
    name_descs(E);
    if (E->scans.n)
        emit_combines(E);
    for (int i = body ? body->insts.n - 1 : -1; i >= 0; i--) {
        const InstInfo *info = &E->body[i];
        if (info->dead || info->in->op == OP_YIELD)
            continue;
        if (info->in->op == OP_IF && info->in->nres == 0 && !(opt && opt->combine))
            E->early_return = info;
        break;
    }
    Buf text = {.a = E->a};
    print_descs(E, &text);
    if (body && opt && opt->backward && !opt->jvp)
        print_backward_body(E, &text);
    else if (body)
        em_print_block(E, &text, body, E->body, 1);
    if (E->failed)
        return false;
    print_module(E, out, kname, buf_str(&text));
    return !E->failed;
}
