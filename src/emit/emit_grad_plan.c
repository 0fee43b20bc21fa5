/* emit_grad_plan.c -- a backward module's launcher: launch_KERNEL_bwd and its plan per launch key.
 *
 * Job: emit_print_launcher, the host function that checks its arguments and walks the Program's steps
 * (src/plan/plan.h) in their order, and the parts of it that plan a launch: the fold's partials
 * and nfold (print_fold_plan, print_fold), the input gradients' zero-fills (print_zero_fill,
 * from Program.covers), the launch conditions (print_guards), the tapes and their checkpointing
 * budget (print_tapes).  What a launch prints (options, tuning, the GEMM form, gathers, the
 * spread) is emit_grad_launch.c's; the module around it emit_grad.c's (docs/GRAD.md).
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

/* Whether def position k is an argument of the launcher: a runtime
 * parameter, or one Triton specializes to a constant (None, 1). */
bool emit_is_arg(const Func *bwd, const DefParam *o, int k)
{
    return !o[k].cnst || bwd->consts.v[o[k].i].runtime;
}

/* The name of gradient parameter i in the contract: a folded input's
 * partials stand in d_<x>'s place. */
static const char *grad_name(Arena *a, const Program *P, int i)
{
    for (int j = 0; P->fold && j < P->fold->n; j++)
        if (P->fold->in[j].slot == i)
            return arena_printf(a, "d_%s", P->fold->in[j].name);
    return P->main->vals.v[P->main->params[i]].name;
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

/* The fold's part of _kad_plan (write/fold.c), after the conditions and
 * zero-fills (flags, zero defined): the grid folded to nfold programs
 * along its first folded axis, each input's span, rows, density and
 * whether its partials may stay uninitialized, the buffers' sizes, the
 * extra kernel arguments and the sum kernel's grid and arguments.
 * at0: the plan's index of the first gradient (the contract's params
 * nfwd..); first_in: the contract's first input gradient. */
static void print_fold_plan(Buf *out, Arena *a, const Program *P, int nfwd, int at0, int first_in)
{
    const Func *bwd = P->main;
    const FoldPlan *pl = P->fold;
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
        buf_printf(out, "    d = args[%d]  # %s\n", at, grad_name(a, P, in->slot));
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
                emit_wrap(out, arena_printf(a, "dense and %s)", cv), LINE_LIMIT, "            ", 30);
                buf_puts(out, "\n");
            } else {
                buf_printf(out, "    clear%d = clear%d or not alone  # several programs share a row: none may zero it\n", b, b);
            }
        } else {
            int fl = -1;
            for (int k = 0; k < P->flags.n; k++)
                if (P->flags.v[k].param == in->flag)
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
static void print_fold(Buf *out, Arena *a, const Program *P, int nfwd, int at0)
{
    const FoldPlan *pl = P->fold;
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
        return; /* emit_print_gemm zero-fills them all */
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
        for (int j = 0; cv && fc->flag && j < P->flags.n; j++)
            if (P->flags.v[j].param == fc->flag)
                flag = fconds ? fconds[j] : NULL;
        if (cv && fc->flag && !flag)
            cv = NULL;
        if (gemm_operand(P, i)) /* emit_print_gemm zero-fills it, where the GEMM form does not store it all */
            continue;
        bool folded = false;
        for (int j = 0; P->fold && j < P->fold->n; j++)
            folded |= P->fold->in[j].slot == i;
        if (folded && plan) /* print_fold_plan decides */
            continue;
        buf_printf(out, "    d = args[%d]  # %s\n", at0 + i - nfwd, grad_name(a, P, i));
        if (folded) { /* the sum kernel stores into a dense d (emit_print_fold_sums) */
            buf_puts(out, "    if not _kad_dense(d):\n"
                          "        d.zero_()  # its sum kernel adds into it (a dense d it overwrites entirely)\n");
            continue;
        }
        const char *zero = plan ? arena_printf(a, "zero.append(%d)", at0 + i - nfwd) : "d.zero_()";
        if (!cv) {
            const char *why = fc && fc->why ? fc->why : "kad cannot print its check for the host";
            buf_printf(out, "    %s  # ", zero);
            emit_wrap(out, why, LINE_LIMIT, "    # ", 18);
            buf_puts(out, "\n");
            continue;
        }
        /* inside the parentheses, the lines may break at any space */
        buf_puts(out, "    ");
        emit_wrap(out, flag ? arena_printf(a, "if not ((%s) and %s):", flag, cv) : arena_printf(a, "if not (%s):", cv),
                  LINE_LIMIT, "            ", 4);
        buf_printf(out, "\n        %s\n", zero);
    }
}

/* Python's stand-ins for Triton's truncating // and % on integers (_tdiv, _trem), as nested
 * functions of the host function being printed: its conditions (access_cond_host) call them. */
void emit_print_tdiv(Buf *out)
{
    buf_puts(out, kad_py_host_tdiv);
}

/* The backward's launch conditions (Program.guards), checked on the host
 * before the launch: the arguments by name, the grid as Triton takes it
 * (a tuple, or a callable of the meta-parameters); then the input
 * gradients' zero-fills (print_zero_fill; nin: the output gradients before
 * them, at0: the launcher's index of the contract's param nfwd). */
static void print_guards(Buf *out, Arena *a, const Program *P, int nfwd, int nin, int at0, bool plan)
{
    const Func *bwd = P->main;
    int ng = P->guards.n, nf = P->flags.n;
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
            conds[i] = access_cond_host((Access *)P->guards.v[i].acc, P->guards.v[i].cond, "_a", "_g");
        } else { /* a flag: the conjunction of its conditions */
            const FuncFlag *fl = &P->flags.v[i - ng];
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
        emit_print_tdiv(out);
    for (int i = 0; plan_find_step(P, STEP_GUARDS) >= 0 && i < P->guards.n; i++) {
        const FuncGuard *g = &P->guards.v[i];
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
        buf_puts(out, kad_py_tape_interval);
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
        buf_puts(out, kad_py_tape_revolve);
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

/* The host launcher: checks the arguments and launches the kernel with
 * the constexprs in their places.  jvp_nin: a jvp's launcher (>= 0: its
 * tangent inputs), the backward's (-1), a saving forward's (-2). */
void emit_print_launcher(Buf *out, Arena *a, const Program *P, const DefParam *o, int nfwd, int nins,
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
        if (emit_is_arg(bwd, o, k))
            argn[na++] = o[k].cnst ? bwd->consts.v[o[k].i].name : bwd->vals.v[bwd->params[o[k].i]].name;
    for (int i = nfwd; i < plan_nargs(P); i++)
        argn[na++] = grad_name(a, P, i);
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
    bool plan = P->fold || !P->gemm;
    ValId *tg = arena_alloc(a, sizeof *tg * (size_t)(bwd->nparams + 1));
    int ntg = jvp_nin != -1 ? 0 : emit_tma_grads(bwd, nfwd, tg);
    bool direct = plan && !P->tapes.n && !emit_has_desc(bwd) && !fwd->descs.n && !ntg;
    Buf key = {.a = a}; /* a planned launch's key: what its plan depends on */
    if (plan) {
        buf_printf(out, "\n\ndef _kad_plan(names, grid, args, nfold):\n    \"\"\"");
        if (P->fold)
            emit_wrap(out, arena_printf(a, "What %s needs that depends only on its launch key (the grid, nfold, the "
                                      "scalar arguments and their types, the input gradients' shapes, strides and "
                                      "device): the launch's conditions, the gradients to zero-fill, the partials, "
                                      "both kernels' grids and their arguments that are not tensors, a dict for "
                                      "the compiled kernels (_kad_go). Computed once per key (_kad_plans).", lname),
                 LINE_LIMIT, "    ", 7);
        else
            emit_wrap(out, arena_printf(a, "What %s needs that depends only on its launch key (the grid, the scalar "
                                      "arguments and their types, the %s' shapes and strides, the device): the "
                                      "launch's conditions, the %s to zero-fill, a dict for the compiled kernels "
                                      "(_kad_go). Computed once per key (_kad_plans).",
                                   lname, jvp_nin >= 0 ? "tangents" : jvp_nin == -2 ? "saved buffer" : "input gradients",
                                   jvp_nin >= 0 ? "tangents" : jvp_nin == -2 ? "buffers" : "gradients"),
                 LINE_LIMIT, "    ", 7);
        buf_puts(out, "\n    \"\"\"\n");
        print_guards(out, a, P, nfwd, nins, at0, true);
        if (P->fold)
            print_fold_plan(out, a, P, nfwd, at0, nfwd + nins);
        else {
            if (P->spread)
                emit_print_spread_plan(out, a, P, at0);
            buf_printf(out, "    return flags, zero, _kad_ck(args[%d].device)\n", at0);
        }
        buf_puts(&key, P->fold && P->fold->axes ? "grid, nfold" : "grid");
        for (int k = 0, i = 0; k < ndef; k++) {
            if (!emit_is_arg(bwd, o, k))
                continue;
            if (!o[k].cnst && ir_type(bwd, bwd->params[o[k].i]).dt != DT_PTR)
                buf_printf(&key, ", args[%d], args[%d].__class__", i, i);
            i++;
        }
        for (int i = nfwd + nins; i < plan_nargs(P); i++)
            buf_printf(&key, ", args[%d].shape, args[%d].stride()", at0 + i - nfwd, at0 + i - nfwd);
        buf_printf(&key, ", args[%d].device", P->fold ? at0 + P->fold->in[0].slot - nfwd : at0);
    }
    bool trusted = jvp_nin == -1 && P->trusted;
    buf_printf(out, "\n\ndef %s(grid, *args, %snum_warps=None, num_stages=None, kad_tune=False, %s**constexprs):\n", lname,
               trusted ? "outputs_unmodified, " : "", P->fold && P->fold->axes ? "nfold=None, " : "");
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
                         "check_%s_races.", kname, fwd_name, KAD_RACE_PARAM, emit_ident(a, fwd_name));
    else if (jvp_nin == -2)
        buf_printf(&doc, "Runs %s: %s as written, plus a store of the results of its loops the backward "
                         "would otherwise run again. args: the forward's runtime arguments, then the buffer "
                         "%s (fp32, _kad_slot elements per program, each program's slot written whole).",
                   kname, fwd_name, KAD_SAVE_PARAM);
    else if (P->fold)
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
                   emit_ident(a, bwd->name), P->gemm->first->name);
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
    if (P->fold && P->fold->axes)
        buf_printf(&doc, " nfold: the programs (along grid axis %d) that sum the shared gradients (default: 2 per "
                         "SM, at most half the forward's programs); the sums' last bits depend on it and on nothing else.",
                   P->fold->axis);
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
    emit_wrap(out, buf_str(&doc), LINE_LIMIT, "    ", 7);
    buf_puts(out, "\n    \"\"\"\n");
    if (trusted)
        buf_printf(out, "    if outputs_unmodified is not True:\n"
                        "        raise ValueError(\"%s loads %s as the forward stored them: pass outputs_unmodified=True \"\n"
                        "                         \"only when they are unchanged since the forward, else use the backward \"\n"
                        "                         \"generated without trusted outputs (it recomputes them)\")\n",
                   lname, P->trusted);
    buf_puts(out, "    names = (");
    emit_wrap(out, buf_str(&quoted), LINE_LIMIT - 1, "             ", 13);
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
        if (!emit_is_arg(bwd, o, k))
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
        emit_wrap(out, arena_printf(a, "%s)", buf_str(&key)), LINE_LIMIT, "           ", 11);
        buf_printf(out, "\n    plan = _kad_plans.get(key)\n"
                      "    if plan is None:\n"
                      "        if len(_kad_plans) >= 4096:\n"
                      "            _kad_plans.clear()\n"
                      "        plan = _kad_plans[key] = _kad_plan(names, grid, args, %s)\n",
                   P->fold && P->fold->axes ? "nfold" : "None");
        buf_puts(out, P->fold ? "    flags, zero, fold_grid, extra, alloc, sgrid, sums, ck = plan\n"
                                : "    flags, zero, ck = plan\n");
        buf_puts(out, "    for i in zero:\n"
                      "        args[i].zero_()\n");
        if (P->fold)
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
    buf_puts(&call, emit_call_text(a, bwd, o, ndef, nargs, true));
    /* the Program's steps, first what precedes the launches: the tapes' allocation, a fold's
     * partials, the GEMM form's attempt (whose steps exclude each other's: no order among them
     * shows); the flags, guards and zero-fills are _kad_plan's or print_guards' above */
    for (int i = 0; i < P->steps.n; i++) {
        const Step *s = &P->steps.v[i];
        if (s->kind == STEP_TAPE && s->j == 0)
            print_tapes(out, a, P, lname);
        else if (s->kind == STEP_FOLD) {
            buf_puts(out, "    grid = fold_grid\n");
            print_fold(out, a, P, nfwd, at0);
        } else if (s->kind == STEP_GEMM)
            emit_print_gemm(out, a, P, buf_str(&call), at0, nfwd, o, ndef);
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
            emit_launch_defaults(bwd, P->spread, P->fold != NULL, &w, &st);
            if (P->spread) /* S programs per forward program along axis 0 (the plan's last flag) */
                buf_printf(out, "%s_sg = (grid[0] * args[%d], grid[1], grid[2])  # %s programs per forward program\n",
                           ind, nargs + P->flags.n, KAD_SPREAD_PARAM);
            emit_print_launch(out, a, ind, kname, P->spread ? "_sg" : "grid", buf_str(&call), direct ? ptrs : NULL,
                              np, 0,
                              arena_printf(a, "num_warps or %d", w),
                              st ? arena_printf(a, "num_stages or %d", st) : "num_stages",
                              emit_launch_options(a, bwd, P->spread, P->fold != NULL), emit_tune_facts(a, bwd, o, ndef, nfwd));
            if (s->kind == STEP_FOLD)
                emit_print_fold_sums(out, a, P, kname, nfwd, at0, direct);
            break;
        }
        case STEP_GATHER:
            if (s->j == 0) /* every gather kernel, in order */
                emit_print_gathers(out, a, P, o, ndef, nargs, direct ? ptrs : NULL, np);
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
