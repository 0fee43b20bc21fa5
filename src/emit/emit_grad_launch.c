/* emit_grad_launch.c -- the launches a backward module's launcher prints, and their tuning.
 *
 * Job: each kernel's launch defaults from its tiles (emit_launch_defaults, emit_launch_options), what
 * kad_tune may try and must keep (emit_tune_facts), one launch through _kad_go (emit_print_launch), the
 * fold's sum kernels (emit_print_fold_sums), the GEMM form (emit_print_gemm, emit_print_gemm_helper), the gather
 * and scatter kernels (emit_print_gathers) and the spread's S (emit_print_spread_plan).  emit_print_launcher
 * (emit_grad_plan.c) calls them in the Program's step order (docs/GRAD.md).
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
bool emit_has_dot(const Func *f)
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
const char *emit_tune_facts(Arena *a, const Func *k, const DefParam *o, int ndef, int nfwd)
{
    bool lp = false, ord = false, at = false;
    tune_scan(k->body, &lp, &ord, &at);
    bool dot = emit_has_dot(k);
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
static void launch_defaults_of(const Func *f, const FuncSpread *spread, bool folded, int sites, int *warps,
                               int *stages)
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
    if (folded && has_piped_fold(f->body) && tile > 2048)
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

void emit_launch_defaults(const Func *f, const FuncSpread *spread, bool folded, int *warps, int *stages)
{
    launch_defaults_of(f, spread, folded, 1, warps, stages);
}

/* The launch options of one kernel: kad's defaults, the caller's num_warps
 * and num_stages (the launcher's arguments) when given. */
static const char *launch_options_of(Arena *a, int w, int s)
{
    if (s)
        return arena_printf(a, "{\"num_warps\": num_warps or %d, \"num_stages\": num_stages or %d}", w, s);
    return arena_printf(a, "dict({\"num_warps\": num_warps or %d}, **options)", w);
}

const char *emit_launch_options(Arena *a, const Func *f, const FuncSpread *spread, bool folded)
{
    int w, s;
    emit_launch_defaults(f, spread, folded, &w, &s);
    return launch_options_of(a, w, s);
}

/* One launch of kernel k on grid g with the call's values (call, a Python
 * tuple's items), indented by ind: direct when ptrs is not NULL (_kad_go,
 * whose compiled-kernel key takes the dtypes of the tensors at the call
 * positions ptrs[0..np) and needs every one of them 16-byte aligned; slot
 * tells this launch's kernels apart in the plan), else through Triton's JIT
 * with the options jit. warps, stages: _kad_go's num_warps and num_stages
 * (Python expressions; stages "None" leaves them to Triton). */
void emit_print_launch(Buf *out, Arena *a, const char *ind, const char *k, const char *g, const char *call,
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
    emit_wrap(out, arena_printf(a, "%s%s)", call, strchr(call, ',') ? "" : ","), LINE_LIMIT, c10,
         strlen(ind) + 6);
    buf_printf(out, "\n%s_w, _s = %s, %s\n", ind, warps, stages);
    buf_printf(out, "%sif kad_tune:  # num_warps and num_stages timed on the first launch of this key\n%s    _w, _s = ",
               ind, ind);
    emit_wrap(out, arena_printf(a, "_kad_tune(%s, %s, _c, (key, %d), _w, _s, %s)", k, g, slot, facts), LINE_LIMIT, c8,
              strlen(ind) + 13);
    buf_printf(out, "\n%s_k = None  # the compiled kernel's key (_kad_go): on CUDA, every tensor 16-byte aligned\n"
                    "%sif ck is not None and not (", ind, ind);
    emit_wrap(out, arena_printf(a, "%s) & 15:", buf_str(&al)), LINE_LIMIT, c8, strlen(ind) + 27);
    buf_printf(out, "\n%s    _k = (", ind);
    emit_wrap(out, arena_printf(a, "%d, _kad_cur(), _w, _s%s)", slot, buf_str(&dts)), LINE_LIMIT, c10,
         strlen(ind) + 10);
    buf_printf(out, "\n%s_kad_go(%s, %s, _c, ck, _k, _w, _s)\n", ind, k, g);
}

/* After the folded kernel: the one sum kernel, d_<x> = the partials' rows
 * summed (stored) when d_<x> is dense, else d_<x> += them (zero-filled
 * before: the plan's zero). */
void emit_print_fold_sums(Buf *out, Arena *a, const Program *P, const char *kname, int nfwd, int at0, bool direct)
{
    const FoldPlan *pl = P->fold;
    int w, st;
    emit_launch_defaults(P->sum, NULL, false, &w, &st);
    if (!direct) {
        buf_printf(out, "    %s[sgrid](", emit_sum_name(a, kname));
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
    emit_print_launch(out, a, "    ", emit_sum_name(a, kname), "sgrid", buf_str(&c), ptrs, 2 * pl->n, 1,
                      arena_printf(a, "%d", w), "None", NULL, emit_tune_facts(a, P->sum, NULL, 0, 0));
}

/* The module-level helpers of the launchers are sections of src/emit/py/launch.py (kad_py_*,
 * embed.h): kad_py_sms, the SM count of a launch's device (the fold's nfold, the GEMM form's
 * choice of operand kernels), asked once per device; kad_py_fold_fill and kad_py_dense, a folded
 * backward's (is d dense? then its sum kernel stores every element of its span and d needs no
 * zero-fill); kad_py_go, every launcher's plans by launch key and direct launches of a kernel
 * Triton compiled before (docs/GRAD.md, "Direct launches"); kad_py_tune, kad_tune's (docs/GRAD.md,
 * "Tuning"). */

/* The GEMM form (Program.gemm, write/gemm.c): when this launch's programs map
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
    emit_launch_defaults(k, NULL, false, &w, &st);
    buf_printf(out, "%s        _kad_fit(%s, (%s, %s, 1), _c, {\"num_warps\": %d, \"num_stages\": %d}, _ck, _k and (%d, *_k),\n"
                    "%s                 kad_tune and ((_key, _dev, %d), %s))\n",
               pad, k->name, tiles, iters, w, st ? st : 3, slot, pad, slot, emit_tune_facts(a, k, o, ndef, nfwd));
}

void emit_print_gemm(Buf *out, Arena *a, const Program *P, const char *call, int at0, int nfwd,
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
        if (!emit_is_arg(bwd, o, k))
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
    emit_wrap(out, arena_printf(a, "%s)", buf_str(&gk)), LINE_LIMIT, "            ", 13);
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
    emit_wrap(out, arena_printf(a, "%s)", buf_str(&ts)), LINE_LIMIT, "                   ", 19);
    buf_puts(out, "\n"
                  "            if not any(x.data_ptr() & 15 for x in _ts):\n"
                  "                _k = (_kad_cur(), *(x.dtype for x in _ts))\n");
    const char *first_opts = emit_launch_options(a, pl->first, NULL, false);
    if (!emit_has_dot(pl->first)) {
        int w, st;
        emit_launch_defaults(pl->first, NULL, false, &w, &st);
        first_opts = st ? arena_printf(a, "{\"num_warps\": %d, \"num_stages\": %d}", w, st)
                        : arena_printf(a, "{\"num_warps\": %d}", w);
    }
    buf_printf(out, "        _kad_fit(%s, _tg, _c, %s, _ck, _k and (0, *_k),\n                 kad_tune and ((_key, _dev, 0), %s))\n",
               pl->first->name, first_opts, emit_tune_facts(a, pl->first, o, ndef, nfwd));
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
void emit_print_gemm_helper(Buf *out, Arena *a, const Program *P)
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
        emit_wrap(out, arena_printf(a, "%s))", cv), LINE_LIMIT, "        ", 16);
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
const char *emit_call_text(Arena *a, const Func *bwd, const DefParam *o, int ndef, int nargs, bool open)
{
    Buf call = {.a = a};
    int from = 0, at = 0;
    for (int k = 0; k <= ndef; k++) {
        bool end = k == ndef;
        if (!end && emit_is_arg(bwd, o, k)) {
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

/* The gather kernels (Program.gather, write/gather.c): after the backward, each
 * on the forward's grid plus its extra tiles, with the contract's
 * arguments (constexpr values in their places), under its flag when it
 * has one (else the backward's sites added with atomics). */
void emit_print_gathers(Buf *out, Arena *a, const Program *P, const DefParam *o, int ndef, int nargs,
                          const int *ptrs, int np)
{
    const Func *bwd = P->main;
    const char *call = emit_call_text(a, bwd, o, ndef, nargs, false);
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
        launch_defaults_of(gi->k, NULL, false, gi->scatter ? 1 : gi->nsites, &w, &st);
        emit_print_launch(out, a, "        ", gi->k->name,
                          arena_printf(a, "(_kg[0] + %lld, _kg[1] + %lld, _kg[2] + %lld)", (long long)gi->grid_add[0],
                                  (long long)gi->grid_add[1], (long long)gi->grid_add[2]),
                     call, ptrs, np, 2 + j, arena_printf(a, gi->scatter ? "%d" : "num_warps or %d", w),
                     st ? arena_printf(a, "num_stages or %d", st) : "num_stages", launch_options_of(a, w, st),
                     emit_tune_facts(a, gi->k, o, ndef, ndef - bwd->consts.n));
    }
}

/* A spread backward's S in its plan (write/spread.c), appended to the flags
 * (KAD_SPREAD_PARAM follows them): the fewest programs per forward program
 * that give the launch twice the SM count, at most the loop's trip count,
 * each taking the same number of iterations; 1 when the launch has that
 * many programs already, except that a row split_lanes runs in parts takes
 * at least 2 (on an H200, GeGLU 4096 x 4096 ran 59.3 -> 54.6 us bf16 and
 * 88.6 -> 85.7 fp32, SwiGLU's 4096-lane rows 46.7 -> 46.0 and 86.0 -> 84.4:
 * more, shorter programs for the same lanes).  On the CPU (Triton's
 * interpreter) 2, as plan_run (spread_cpu). */
void emit_print_spread_plan(Buf *out, Arena *a, const Program *P, int at0)
{
    const Func *bwd = P->main;
    buf_printf(out, "    # the loop at line %d, its iterations dealt to %s programs per forward program when the\n"
                    "    # launch leaves SMs idle: its trip count, the programs, twice the SM count\n",
               P->spread->loc.line, KAD_SPREAD_PARAM);
    buf_puts(out, "    _sa = dict(zip(names, args))\n    _st = ");
    emit_wrap(out, arena_printf(a, "%s", tape_expr_host(a, P->spread->trips, bwd, "_sa", NULL)), LINE_LIMIT,
              "           ", 11);
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
