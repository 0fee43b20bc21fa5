/* emit_cuda_lanes.c -- the CUDA C emitter's work across a block's threads and within them.
 *
 * Reductions, scans, gathers and flips along the lanes of 1-D tiles go through shared memory in
 * a fixed order (the prelude's helpers, or a helper per instruction for several operands), so a
 * launch gives the same bits on every run; every thread reaches every barrier because the IR's
 * control flow is uniform (scalar conditions).  Per-thread arrays (tiles [L, k]) and rows (tiles
 * that every thread holds alike: [k], [1, k]) print as loops over kad_j, their reductions and
 * scans along the array in order.  The prelude holds the device helpers a kernel calls.
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "emit/emit_cuda.h"
#include "emit/emit_cuda_int.h"

/* ---- reductions, scans, gathers (through shared memory) ---- */

/* The shared buffer of dtype dt (declared at the kernel's top). */
const char *ecu_smem(Cu *c, Dtype dt)
{
    c->smem |= 1u << dt;
    return arena_printf(c->a, "kad_smem_%s", dtype_name(dt));
}

/* Shared buffer number k (0: smem's) of dtype dt: operands of one reduce or scan need their own. */
static const char *smem_k(Cu *c, Dtype dt, int k)
{
    if (!k)
        return ecu_smem(c, dt);
    if (c->smem_more[dt] < k)
        c->smem_more[dt] = k;
    return arena_printf(c->a, "kad_smem_%s_%d", dtype_name(dt), k);
}

/* A reduce or scan of several operands: its combine region as a functor taking the running
 * values, the next ones and the results by reference, and a helper of its own that runs the
 * fixed tree (reduce) or the Hillis-Steele scan over shared buffers, one per operand; the
 * results are variables that the helper updates in place. */
void ecu_multi_lane_op(Cu *c, const Inst *in)
{
    const Block *rg = in->regions[0];
    int n = in->nargs, read = 0;
    for (int k = 0; k < in->nres; k++)
        read += c->uses[in->res[k]];
    if (!read)
        return;
    int id = c->ncomb++;
    bool red = in->op == OP_REDUCE;
    for (int k = 0; k < n; k++)
        if (!cu_is_lane(c, in->args[k]) || in->ival != 0) {
            ecu_refuse(c, in->loc, "'%s' of %%%s %s: only along the lanes of 1-D tiles", op_info[in->op].name,
                   c->irname[in->args[k]], ecu_shape_str(c, cu_vty(c, in->args[k])));
            return;
        }
    const char *fn = arena_printf(c->a, "kad_combine_%d", id);
    Buf *save = c->out;
    int sd = c->depth;
    Buf body = {.a = c->a}, sig = {.a = c->a};
    c->out = &body;
    c->depth = 1;
    const char **tys = arena_alloc(c->a, sizeof *tys * (size_t)n);
    for (int k = 0; k < 2 * n; k++) {
        const char *ty = ecu_ctype(c, rg->params[k], in->loc);
        if (k < n)
            tys[k] = ty;
        c->var[rg->params[k]] = ecu_name_for(c, rg->params[k]);
        buf_printf(&sig, "%s%s %s", k ? ", " : "", ty, c->var[rg->params[k]]);
    }
    const char **outs = arena_alloc(c->a, sizeof *outs * (size_t)n);
    for (int k = 0; k < n; k++) {
        outs[k] = ecu_fresh(c, arena_printf(c->a, "kad_r%d", k));
        buf_printf(&sig, ", %s &%s", tys[k], outs[k]);
    }
    ecu_print_block(c, rg, outs);
    c->out = save;
    c->depth = sd;
    if (!c->ok)
        return;
    Buf rs = {.a = c->a};
    for (int k = 0; k < n; k++)
        buf_printf(&rs, "%s%%%s", k ? ", " : "", c->irname[in->res[k]]);
    Buf *P = &c->pre;
    buf_printf(P, "// the combine function of %s (line %d)\nstruct %s {\n", buf_str(&rs), in->loc.line, fn);
    buf_printf(P, "    __device__ void operator()(%s) const\n    {\n%s    }\n};\n", buf_str(&sig), buf_str(&body));
    const char *hname = arena_printf(c->a, "kad_%s_%d", red ? "reduce" : "scan", id);
    buf_printf(P, "__device__ void %s(", hname);
    for (int k = 0; k < n; k++)
        buf_printf(P, "%s%s &v%d, %s *buf%d", k ? ", " : "", tys[k], k, tys[k], k);
    if (red)
        buf_printf(P, ")\n{ // kad_block_reduce's fixed tree over %d operands\n    const int j = threadIdx.x;\n", n);
    else
        buf_printf(P, ", bool reverse)\n{ // kad_block_scan over %d operands\n"
                      "    const int j = reverse ? %d - (int)threadIdx.x : (int)threadIdx.x;\n", n, c->L - 1);
    for (int k = 0; k < n; k++)
        buf_printf(P, "    buf%d[j] = v%d;\n", k, k);
    buf_puts(P, "    __syncthreads();\n");
    if (red) {
        buf_printf(P, "    for (int n = %d; n > 1; n = (n + 1) / 2) {\n        const int h = (n + 1) / 2;\n"
                      "        if (j < n - h) {\n", c->L);
        for (int k = 0; k < n; k++)
            buf_printf(P, "            %s r%d;\n", tys[k], k);
        buf_printf(P, "            %s()(", fn);
        for (int k = 0; k < n; k++)
            buf_printf(P, "%sbuf%d[j]", k ? ", " : "", k);
        for (int k = 0; k < n; k++)
            buf_printf(P, ", buf%d[j + h]", k);
        for (int k = 0; k < n; k++)
            buf_printf(P, ", r%d", k);
        buf_puts(P, ");\n");
        for (int k = 0; k < n; k++)
            buf_printf(P, "            buf%d[j] = r%d;\n", k, k);
        buf_puts(P, "        }\n        __syncthreads();\n    }\n");
        for (int k = 0; k < n; k++)
            buf_printf(P, "    v%d = buf%d[0];\n", k, k);
        buf_puts(P, "    __syncthreads();\n}\n\n");
    } else {
        buf_printf(P, "    for (int s = 1; s < %d; s *= 2) {\n", c->L);
        for (int k = 0; k < n; k++)
            buf_printf(P, "        const %s p%d = j >= s ? buf%d[j - s] : v%d;\n", tys[k], k, k, k);
        buf_puts(P, "        __syncthreads();\n        if (j >= s) {\n");
        for (int k = 0; k < n; k++)
            buf_printf(P, "            %s r%d;\n", tys[k], k);
        buf_printf(P, "            %s()(", fn);
        for (int k = 0; k < n; k++)
            buf_printf(P, "%sp%d", k ? ", " : "", k);
        for (int k = 0; k < n; k++)
            buf_printf(P, ", v%d", k);
        for (int k = 0; k < n; k++)
            buf_printf(P, ", r%d", k);
        buf_puts(P, ");\n");
        for (int k = 0; k < n; k++)
            buf_printf(P, "            v%d = r%d;\n", k, k);
        buf_puts(P, "        }\n");
        for (int k = 0; k < n; k++)
            buf_printf(P, "        buf%d[j] = v%d;\n", k, k);
        buf_puts(P, "        __syncthreads();\n    }\n}\n\n");
    }
    /* the call: the results start as the operands */
    Buf call = {.a = c->a};
    int used[DT_COUNT] = {0};
    for (int k = 0; k < n; k++) {
        ValId r = in->res[k];
        c->var[r] = ecu_declare(c, r, in->args[k], in->loc);
        Dtype dt = cu_vdt(c, in->args[k]);
        buf_printf(&call, "%s%s, %s", k ? ", " : "", c->var[r], smem_k(c, dt, used[dt]++));
    }
    if (red)
        ecu_line(c, "%s(%s);", hname, buf_str(&call));
    else
        ecu_line(c, "%s(%s, %s);", hname, buf_str(&call), in->flags & IF_REVERSE ? "true" : "false");
}

/* A combine region (closed, scalars only) as a device functor kad_combine_N (one operand, one
 * result): its name, or NULL after a refusal. */
static const char *combine_functor(Cu *c, const Inst *in)
{
    const Block *rg = in->regions[0];
    if (in->nargs != 1 || rg->nparams != 2) {
        ecu_refuse(c, in->loc, "'%s' of %d operands: the CUDA C emitter prints a combine region of one operand",
               op_info[in->op].name, in->nargs);
        return NULL;
    }
    const char *fn = arena_printf(c->a, "kad_combine_%d", c->ncomb++);
    Buf *save = c->out;
    int sd = c->depth;
    Buf body = {.a = c->a};
    c->out = &body;
    c->depth = 1;
    const char *ty = ecu_ctype(c, rg->params[0], in->loc);
    const char *pa = c->var[rg->params[0]] = ecu_name_for(c, rg->params[0]);
    const char *pb = c->var[rg->params[1]] = ecu_name_for(c, rg->params[1]);
    const char *ret = ecu_fresh(c, "kad_r");
    ecu_line(c, "%s %s;", ty, ret);
    const char *targets[1] = {ret};
    ecu_print_block(c, rg, targets);
    ecu_line(c, "return %s;", ret);
    c->out = save;
    c->depth = sd;
    buf_printf(&c->pre, "// the combine function of %%%s (line %d)\nstruct %s {\n"
                        "    __device__ %s operator()(%s %s, %s %s) const\n    {\n%s    }\n};\n\n",
               c->irname[in->res[0]], in->loc.line, fn, ty, ty, pa, ty, pb, buf_str(&body));
    return fn;
}

void ecu_reduction(Cu *c, const Block *b, const Inst *in)
{
    ValId x = in->args[0], r = in->res[0];
    if (!c->uses[r])
        return; /* unread: every thread skips it alike, barriers included */
    Dtype dt = cu_vdt(c, x);
    bool one = cu_vty(c, r).rank && type_numel(cu_vty(c, r)) == 1; /* kept dims: [1], every thread's alike */
    if (!cu_is_lane(c, x) || in->ival != 0 || ((in->flags & IF_KEEP_DIMS) && !one)) {
        ecu_refuse(c, in->loc, "'%s' of %%%s %s: the CUDA C emitter reduces a 1-D tile along its lanes into a scalar",
               op_info[in->op].name, c->irname[x], ecu_shape_str(c, cu_vty(c, x)));
        return;
    }
    if (!cuda_dtype(dt, c->o->hip)) {
        ecu_refuse(c, in->loc, "'%s' of %s", op_info[in->op].name, dtype_name(dt));
        return;
    }
    const char *e;
    if (in->op == OP_ARGMAX || in->op == OP_ARGMIN) {
        c->helpers |= CU_H_ARG;
        c->smem_idx = true;
        e = arena_printf(c->a, "kad_block_%s<%d>(%s, %s, kad_smem_idx)", in->op == OP_ARGMAX ? "argmax" : "argmin",
                         c->L, ecu_bare(c, x), ecu_smem(c, dt));
    } else if (in->op == OP_REDUCE) {
        const char *fn = combine_functor(c, in);
        if (!fn)
            return;
        c->helpers |= CU_H_REDUCE;
        e = arena_printf(c->a, "kad_block_reduce<%d>(%s, %s, %s())", c->L, ecu_bare(c, x), ecu_smem(c, dt), fn);
    } else {
        c->helpers |= CU_H_REDUCE;
        const char *fn = in->op == OP_SUM ? "kad_add" : in->op == OP_MAX ? "kad_max" : "kad_min";
        e = arena_printf(c->a, "kad_block_reduce<%d>(%s, %s, %s())", c->L, ecu_bare(c, x), ecu_smem(c, dt), fn);
    }
    ecu_bind(c, b, r, e, false, in->loc);
    c->splat[r] = one; /* a row [1]: its element is the variable */
}

void ecu_scan(Cu *c, const Block *b, const Inst *in)
{
    ValId x = in->args[0], r = in->res[0];
    if (!c->uses[r])
        return;
    if (!cu_is_lane(c, x) || in->ival != 0) {
        ecu_refuse(c, in->loc, "'%s' of %%%s %s: the CUDA C emitter scans a 1-D tile along its lanes",
               op_info[in->op].name, c->irname[x], ecu_shape_str(c, cu_vty(c, x)));
        return;
    }
    const char *fn = in->op == OP_CUMSUM ? "kad_add()" : in->op == OP_CUMPROD ? "kad_mul()" : NULL;
    if (!fn) {
        const char *f2 = combine_functor(c, in);
        if (!f2)
            return;
        fn = arena_printf(c->a, "%s()", f2);
    }
    c->helpers |= CU_H_SCAN | CU_H_REDUCE;
    ecu_bind(c, b, r, arena_printf(c->a, "kad_block_scan<%d>(%s, %s, %s, %s)", c->L, ecu_bare(c, x), ecu_smem(c, cu_vdt(c, x)),
                               in->flags & IF_REVERSE ? "true" : "false", fn), false, in->loc);
}

/* gather along the lanes and flip: lane i reads lane idx of src through shared memory. */
void ecu_permute_lanes(Cu *c, const Block *b, const Inst *in)
{
    ValId x = in->args[0], r = in->res[0];
    if (!cu_is_lane(c, x) || in->ival != 0) {
        ecu_refuse(c, in->loc, "'%s' of %%%s %s: only along the lanes of a 1-D tile", op_info[in->op].name,
               c->irname[x], ecu_shape_str(c, cu_vty(c, x)));
        return;
    }
    const char *idx = in->op == OP_FLIP ? arena_printf(c->a, "%d - (int32_t)threadIdx.x", c->L - 1)
                                        : arena_printf(c->a, "(int)%s", ecu_val(c, in->args[1]));
    c->helpers |= CU_H_GATHER;
    ecu_bind(c, b, r, arena_printf(c->a, "kad_block_gather<%d>(%s, %s, %s)", c->L, ecu_bare(c, x), ecu_smem(c, cu_vdt(c, x)), idx),
         false, in->loc);
}

/* ---- scatter-adds along the lanes ---- */

/* The adjoint of a gather along the lanes (src/ad/rules_rev.c, gather_adjoint) is a one-hot sum
 *   d_src[j] = sum over lanes i of where(idx[i] == j, d[i], 0)        (a tile [L, L], axis 0)
 * which, printed as a per-thread array, would hold L elements a thread; a write of a __shared__
 * array at another thread's index (src/front/cu_stmt.c) is the same sum over a tile [L, n] into a
 * row [n], and its count of writers the sum of the one-hot itself.  These recognize the IR,
 * whatever the passes left of it: sum(where(eq(col(idx), iota), col(d), 0), axis 0) or
 * sum(cast(eq(col(idx), iota)), axis 0) (d = 1), with col(v) = broadcast(expand_dims(v [L], 1)
 * [L, 1]) and iota = broadcast(reshape(arange(0, n)) [1, n]), the eq's operands in either order;
 * the sum prints as kad_block_scatter_add (n = L: lane j's element) or kad_block_scatter_row
 * (n <= 64 and n <= L: a row every thread holds). */

static const Inst *def_op(Cu *c, ValId v, int op)
{
    const Inst *d = v ? c->def[v] : NULL;
    return d && d->op == op ? d : NULL;
}

/* The [L] value v is a column of: broadcast([L, 1] <- expand_dims/reshape of v [L]); 0 if none. */
static ValId lane_column(Cu *c, ValId x)
{
    const Inst *b = def_op(c, x, OP_BROADCAST);
    if (!b || cu_vty(c, b->args[0]).rank != 2 || cu_vty(c, b->args[0]).shape[0] != c->L ||
        cu_vty(c, b->args[0]).shape[1] != 1)
        return 0;
    const Inst *e = c->def[b->args[0]];
    if (!e || !((e->op == OP_EXPAND_DIMS && e->ival == 1) || e->op == OP_RESHAPE))
        return 0;
    ValId v = e->args[0];
    Type t = cu_vty(c, v);
    return t.rank == 1 && t.shape[0] == c->L ? v : 0;
}

/* Whether x is arange(0, n) along axis 1 of a tile [L, n]: broadcast([1, n] <- reshape/expand_dims
 * of arange 0 [n], through casts between integer types). */
static bool lane_iota(Cu *c, ValId x, int n)
{
    const Inst *b = def_op(c, x, OP_BROADCAST);
    if (!b || cu_vty(c, b->args[0]).rank != 2 || cu_vty(c, b->args[0]).shape[0] != 1)
        return false;
    const Inst *e = c->def[b->args[0]];
    if (!e || !((e->op == OP_EXPAND_DIMS && e->ival == 0) || e->op == OP_RESHAPE))
        return false;
    ValId v = e->args[0];
    while (def_op(c, v, OP_CAST) && !dtype_is_float(cu_vdt(c, v)) && !dtype_is_float(cu_vdt(c, c->def[v]->args[0])))
        v = c->def[v]->args[0];
    const Inst *ar = def_op(c, v, OP_ARANGE);
    return ar && ar->ival == 0 && cu_vty(c, v).rank == 1 && cu_vty(c, v).shape[0] == n;
}

/* Whether x is 0 in every element: a constant 0, or its broadcast. */
static bool all_zero(Cu *c, ValId x)
{
    const Inst *b = def_op(c, x, OP_BROADCAST);
    if (b)
        x = b->args[0];
    const Inst *k = def_op(c, x, OP_CONST);
    return k && (dtype_is_float(cu_vdt(c, x)) ? k->fval == 0.0 : k->ival == 0);
}

static void absorb_use(Cu *c, int *pat, ValId v)
{
    if (v)
        pat[v]++;
}

/* Marks each scatter-add of b (its regions included): c->scat_idx/scat_d of the sum, and the
 * pattern's [L, L], [L, 1] and [1, L] values c->absorbed when nothing else reads them (those are
 * not printed).  Needs c->uses and c->def. */
static void find_in(Cu *c, const Block *b, int *pat, ValId *cand, int *ncand)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nregions; r++)
            if (in->op != OP_SCAN && in->op != OP_REDUCE)
                find_in(c, in->regions[r], pat, cand, ncand);
        if (in->op != OP_SUM || in->ival != 0 || in->nargs != 1 || (in->flags & IF_KEEP_DIMS))
            continue;
        Type xt = cu_vty(c, in->args[0]), rt = cu_vty(c, in->res[0]);
        int n = xt.rank == 2 ? xt.shape[1] : 0;
        if (xt.rank != 2 || xt.shape[0] != c->L || rt.rank != 1 || c->L < 2 || n > c->L || (n < c->L && n > CU_MAX_ROW))
            continue;
        const Inst *w = def_op(c, in->args[0], OP_WHERE), *one = def_op(c, in->args[0], OP_CAST);
        ValId d = 0, cond = 0;
        if (w && all_zero(c, w->args[2]) && (d = lane_column(c, w->args[1])))
            cond = w->args[0];
        else if (one && cu_vdt(c, one->args[0]) == DT_I1)
            cond = one->args[0]; /* the count of the lanes that target j: d = 1 */
        const Inst *eq = def_op(c, cond, OP_EQ);
        if (!eq)
            continue;
        ValId idx = 0;
        if (lane_iota(c, eq->args[1], n))
            idx = lane_column(c, eq->args[0]);
        else if (lane_iota(c, eq->args[0], n))
            idx = lane_column(c, eq->args[1]);
        if (!idx || dtype_is_float(cu_vdt(c, idx)))
            continue;
        c->scat_idx[in->res[0]] = idx;
        c->scat_d[in->res[0]] = d;
        /* the pattern's values, outermost first: each is absorbed once all its reads are the pattern's */
        ValId vs[] = {in->args[0], cond, w ? w->args[1] : 0, w ? w->args[2] : 0, eq->args[0], eq->args[1]};
        absorb_use(c, pat, in->args[0]);
        for (size_t k = 0; k < sizeof vs / sizeof vs[0]; k++)
            cand[(*ncand)++] = vs[k];
    }
}

void ecu_find_scatters(Cu *c, const Block *b)
{
    int nv = c->f->vals.n, ncand = 0;
    int *pat = arena_alloc(c->a, sizeof *pat * (size_t)nv);
    ValId *cand = arena_alloc(c->a, sizeof *cand * (size_t)nv * 6);
    find_in(c, b, pat, cand, &ncand);
    /* a fixpoint: a candidate all of whose reads are absorbed values' is absorbed, and its
     * operands (and those of the [L, 1] / [1, L] value under a broadcast) become candidates */
    for (bool more = true; more;) {
        more = false;
        for (int k = 0; k < ncand; k++) {
            ValId v = cand[k];
            if (!v || c->absorbed[v] || !c->def[v] || pat[v] != c->uses[v] || cu_vty(c, v).rank != 2)
                continue;
            c->absorbed[v] = more = true;
            const Inst *d = c->def[v];
            for (int a = 0; a < d->nargs; a++) {
                absorb_use(c, pat, d->args[a]);
                if (cu_vty(c, d->args[a]).rank == 2 && ncand < nv * 6)
                    cand[ncand++] = d->args[a];
            }
        }
    }
}

/* The sum c->scat_idx marks: r = kad_block_scatter_add<L>(d, idx, ...), thread j getting the sum
 * of d over the lanes whose idx is j, in lane order; a row r[n] every thread holds alike through
 * kad_block_scatter_row<L, n>.  d = 0: the count of those lanes (each adds 1). */
void ecu_scatter_add(Cu *c, const Block *b, const Inst *in)
{
    ValId r = in->res[0], d = c->scat_d[r], idx = c->scat_idx[r];
    Dtype dt = cu_vdt(c, r);
    if (dt != DT_F32 && dt != DT_F64 && dt != DT_I32) {
        ecu_refuse(c, in->loc, "the scatter-add along the lanes into %%%s (%s values, the adjoint of a gather or a "
                   "__shared__ write at another thread's index): only fp32, fp64 and i32 are printed yet",
                   c->irname[r], dtype_name(dt));
        return;
    }
    if (!c->uses[r])
        return; /* unread: every thread skips it alike, barriers included */
    const char *ty = ecu_ctype(c, r, in->loc);
    const char *v = d ? ecu_bare(c, d) : arena_printf(c->a, "(%s)1", ty);
    c->smem_idx = true;
    int n = cu_vty(c, r).shape[0];
    c->helpers |= ecu_is_row(c, r) ? CU_H_SCATTER_ROW : CU_H_SCATTER;
    if (!ecu_is_row(c, r)) {
        ecu_bind(c, b, r, arena_printf(c->a, "kad_block_scatter_add<%d>(%s, (int)%s, %s, kad_smem_idx)", c->L, v,
                                       ecu_val(c, idx), ecu_smem(c, dt)),
                 false, in->loc);
        return;
    }
    c->var[r] = ecu_name_for(c, r);
    ecu_line(c, "%s %s[%d];", ty, c->var[r], n);
    ecu_line(c, "kad_block_scatter_row<%d, %d>(%s, (int)%s, %s, kad_smem_idx, %s);", c->L, n, v, ecu_val(c, idx),
             ecu_smem(c, dt), c->var[r]);
}

/* ---- per-thread arrays: tiles [L, k] ---- */

/* Prints `T r[k];` and a loop over kad_j assigning e (built with c->jidx: arrays read at kad_j). */
static void array_assign(Cu *c, ValId r, const char *e, Loc loc)
{
    const char *ty = ecu_ctype(c, r, loc);
    int k = ecu_width(c, r);
    c->var[r] = ecu_name_for(c, r);
    ecu_line(c, "%s%s%s[%d];", ty, ty[strlen(ty) - 1] == '*' ? "" : " ", c->var[r], k);
    ecu_line(c, "for (int kad_j = 0; kad_j < %d; kad_j++)", k);
    ecu_line(c, "    %s[kad_j] = %s;", c->var[r], e);
}

/* A reduction of a per-thread array [L, k] across the threads (axis 0): element j of the result is
 * the combination of element j of every thread's array, in the order of the threads (thread 0's
 * first: the same bits on every run).  The arrays go through kad_cols_<dt> in chunks of kc columns;
 * the result is a lane tile (k == L: thread j keeps column j) or a row every thread holds (kr). */
static void cross_threads(Cu *c, const Inst *in, int kx, int kr)
{
    ValId x = in->args[0], r = in->res[0];
    Dtype dt = cu_vdt(c, x);
    int L = c->L, kc = CU_COLS / L < kx ? CU_COLS / L : kx;
    if (kc < 1) {
        ecu_refuse(c, in->loc, "'%s' of %%%s %s across %d threads: not printed yet", op_info[in->op].name,
                   c->irname[x], ecu_shape_str(c, cu_vty(c, x)), L);
        return;
    }
    c->smem_cols |= 1u << dt;
    bool fl = dtype_is_float(dt), f64 = dt == DT_F64;
    const char *buf = arena_printf(c->a, "kad_cols_%s", dtype_name(dt)), *ty = ecu_ctype(c, x, in->loc);
    const char *comb = in->op == OP_SUM ? NULL
                     : fl ? (in->op == OP_MAX ? (f64 ? "fmax" : "fmaxf") : (f64 ? "fmin" : "fminf"))
                          : in->op == OP_MAX ? "kad_max()" : "kad_min()";
    bool lanes = !kr; /* k == L: the result's lanes are the columns */
    c->var[r] = ecu_name_for(c, r);
    if (lanes)
        ecu_line(c, "%s %s = %s;", ty, c->var[r], ecu_zero(c, dt));
    else
        ecu_line(c, "%s %s[%d];", ty, c->var[r], kr);
    ecu_line(c, "// '%s' of %s across the block's threads, in their order: %d columns at a time", op_info[in->op].name,
             ecu_shape_str(c, cu_vty(c, x)), kc);
    ecu_line(c, "for (int kad_c0 = 0; kad_c0 < %d; kad_c0 += %d) {", kx, kc);
    c->depth++;
    ecu_line(c, "__syncthreads();");
    ecu_line(c, "for (int kad_j = 0; kad_j < %d && kad_c0 + kad_j < %d; kad_j++)", kc, kx);
    ecu_line(c, "    %s[threadIdx.x * %d + kad_j] = %s;", buf, kc, ecu_elem_at(c, x, "kad_c0 + kad_j"));
    ecu_line(c, "__syncthreads();");
    if (lanes)
        ecu_line(c, "for (int kad_j = (int)threadIdx.x - kad_c0; kad_j >= 0 && kad_j < %d; kad_j = %d) {", kc, kc);
    else
        ecu_line(c, "for (int kad_j = 0; kad_j < %d && kad_c0 + kad_j < %d; kad_j++) {", kc, kx);
    c->depth++;
    ecu_line(c, "%s kad_s = %s[kad_j];", ty, buf);
    ecu_line(c, "for (int kad_i = 1; kad_i < %d; kad_i++)", L);
    if (comb)
        ecu_line(c, "    kad_s = %s(kad_s, %s[kad_i * %d + kad_j]);", comb, buf, kc);
    else
        ecu_line(c, "    kad_s = kad_s + %s[kad_i * %d + kad_j];", buf, kc);
    ecu_line(c, lanes ? "%s = kad_s;" : "%s[kad_c0 + kad_j] = kad_s;", c->var[r]);
    c->depth--;
    ecu_line(c, "}");
    c->depth--;
    ecu_line(c, "}");
    ecu_line(c, "__syncthreads();");
    if (!fl && comb)
        c->helpers |= CU_H_REDUCE;
}

/* An instruction on tiles [L, k] (its result, or a store's pointer): element by element in each
 * thread, or a reduction or scan along axis 1 in a fixed order (kad_j = 0, 1, ...).  False when
 * in has no such tile (the caller prints it). */
bool ecu_array_inst(Cu *c, const Inst *in)
{
    ValId r = in->nres ? in->res[0] : 0, x = in->nargs ? in->args[0] : 0;
    int op = in->op, kr = r ? ecu_width(c, r) : 0, kx = x ? ecu_width(c, x) : 0;
    if (!kr && !kx)
        return false;
    if (op == OP_FOR || op == OP_IF || op == OP_WHILE || op == OP_YIELD || op == OP_CONDITION)
        return false;
    if (!c->uses[r] && r && op_info[op].pure && op != OP_SUM && op != OP_MAX && op != OP_MIN)
        return true; /* unread */
    if (op == OP_ASSERT) { /* every element of the array holds */
        ecu_line(c, "for (int kad_j = 0; kad_j < %d; kad_j++)", kx);
        c->depth++;
        c->jidx = true;
        ecu_print_assert(c, in);
        c->jidx = false;
        c->depth--;
        return true;
    }
    if (op == OP_SPLIT && kx == 2 && !kr) { /* x[..., h]: one element of the row */
        c->var[r] = ecu_elem_at(c, x, in->ival ? "1" : "0");
        return true;
    }
    if (op == OP_JOIN && kr == 2) {
        const char *ty = ecu_ctype(c, r, in->loc);
        c->var[r] = ecu_name_for(c, r);
        ecu_line(c, "const %s %s[2] = {%s, %s};", ty, c->var[r], ecu_bare(c, in->args[0]), ecu_bare(c, in->args[1]));
        return true;
    }
    int last = x ? cu_vty(c, x).rank - 1 : 0; /* a row's axis: the array's */
    if ((op == OP_SUM || op == OP_MAX || op == OP_MIN || op == OP_ARGMAX || op == OP_ARGMIN) && kx && !kr &&
        in->ival == last) {
        bool fl = dtype_is_float(cu_vdt(c, x)), f64 = cu_vdt(c, x) == DT_F64, arg = op == OP_ARGMAX || op == OP_ARGMIN;
        const char *ty = ecu_ctype(c, x, in->loc), *v = ecu_val(c, x);
        c->var[r] = ecu_name_for(c, r);
        const char *acc = arg ? ecu_fresh(c, arena_printf(c->a, "%s_best", c->var[r])) : c->var[r];
        const char *v0 = ecu_elem_at(c, x, "0");
        v = ecu_elem_at(c, x, "kad_j");
        ecu_line(c, "%s %s = %s;", ty, acc, v0);
        if (arg)
            ecu_line(c, "int32_t %s = 0;", c->var[r]);
        ecu_line(c, "for (int kad_j = 1; kad_j < %d; kad_j++)%s", kx, arg ? " {" : "");
        if (op == OP_SUM)
            ecu_line(c, "    %s = %s + %s;", acc, acc, v);
        else if (op == OP_MAX || op == OP_MIN)
            ecu_line(c, fl ? "    %s = %s(%s, %s);" : "    %s = kad_%s()(%s, %s);", acc,
                 fl ? (op == OP_MAX ? (f64 ? "fmax" : "fmaxf") : (f64 ? "fmin" : "fminf")) : (op == OP_MAX ? "max" : "min"),
                 acc, v);
        else {
            ecu_line(c, "    if (%s %s %s) {", v, op == OP_ARGMAX ? ">" : "<", acc);
            ecu_line(c, "        %s = %s;", acc, v);
            ecu_line(c, "        %s = kad_j;", c->var[r]);
            ecu_line(c, "    }");
            ecu_line(c, "}");
        }
        if (!fl && (op == OP_MAX || op == OP_MIN))
            c->helpers |= CU_H_REDUCE;
        return true;
    }
    if ((op == OP_SUM || op == OP_MAX || op == OP_MIN) && kx && in->ival == 0 && cu_vty(c, x).rank == 2 &&
        ecu_lanes_of(c, cu_vty(c, x))) {
        cross_threads(c, in, kx, kr);
        return true;
    }
    if ((op == OP_CUMSUM || op == OP_CUMPROD) && kx && kr == kx && in->ival == last) {
        const char *ty = ecu_ctype(c, r, in->loc);
        bool rev = in->flags & IF_REVERSE;
        c->var[r] = ecu_name_for(c, r);
        ecu_line(c, "%s %s[%d];", ty, c->var[r], kr);
        ecu_line(c, "%s[%d] = %s;", c->var[r], rev ? kr - 1 : 0, ecu_elem_at(c, x, rev ? arena_printf(c->a, "%d", kr - 1) : "0"));
        if (rev)
            ecu_line(c, "for (int kad_j = %d; kad_j >= 0; kad_j--)", kr - 2);
        else
            ecu_line(c, "for (int kad_j = 1; kad_j < %d; kad_j++)", kr);
        ecu_line(c, "    %s[kad_j] = %s[kad_j %s 1] %s %s;", c->var[r], c->var[r], rev ? "+" : "-",
             op == OP_CUMSUM ? "+" : "*", ecu_elem_at(c, x, "kad_j"));
        return true;
    }
    if (op == OP_STORE || op_is_atomic(op) || op == OP_LOAD) {
        int at = op == OP_LOAD ? 1 : 2;
        c->jidx = true;
        const char *p = ecu_val(c, x), *mask = in->flags & IF_HAS_MASK ? ecu_val(c, in->args[at]) : NULL;
        Dtype el = (Dtype)cu_vty(c, x).elem;
        if (op == OP_LOAD) {
            const char *other = in->flags & IF_HAS_OTHER ? ecu_val(c, in->args[at + 1]) : ecu_zero(c, el);
            c->jidx = false;
            array_assign(c, r, mask ? arena_printf(c->a, "%s ? *%s : %s", mask, p, other) : arena_printf(c->a, "*%s", p),
                         in->loc);
            return true;
        }
        const char *v = ecu_val(c, in->args[1]);
        c->jidx = false;
        if (op_is_atomic(op) && c->uses[r]) {
            ecu_refuse(c, in->loc, "the old values of '%s' on a tile [L, k] (%%%s) are read: not printed yet",
                   op_info[op].name, c->irname[r]);
            return true;
        }
        if (op_is_atomic(op) && op != OP_ATOMIC_ADD) {
            ecu_refuse(c, in->loc, "'%s' on a tile [L, k]: not printed yet", op_info[op].name);
            return true;
        }
        if (op_is_atomic(op) && !(el == DT_F32 || el == DT_F64 || el == DT_I32 || el == DT_U32 ||
                                  (cu_is16(el) && !c->o->hip))) {
            ecu_refuse(c, in->loc, "'%s' on %s elements has no CUDA atomic", op_info[op].name, dtype_name(el));
            return true;
        }
        bool row = ecu_is_row(c, x); /* the same elements in every thread: thread 0 writes them */
        if (row)
            ecu_line(c, "if (threadIdx.x == 0)"), c->depth++;
        ecu_line(c, "for (int kad_j = 0; kad_j < %d; kad_j++)", kx);
        if (mask)
            ecu_line(c, "    if (%s)", mask);
        ecu_line(c, mask ? "        %s%s%s%s;" : "    %s%s%s%s;", op == OP_STORE ? "*" : "atomicAdd(", p,
             op == OP_STORE ? " = " : ", ", op == OP_STORE ? v : arena_printf(c->a, "%s)", v));
        if (row)
            c->depth--;
        return true;
    }
    if (op == OP_ARANGE && kr) { /* a row: start, start + 1, ... in every thread */
        array_assign(c, r, in->ival ? arena_printf(c->a, "kad_j + %lld", (long long)in->ival) : "kad_j", in->loc);
        return true;
    }
    if ((op == OP_EXPAND_DIMS || op == OP_RESHAPE) && kx == kr && ecu_is_row(c, x) == ecu_is_row(c, r) &&
        (ecu_is_row(c, x) || type_same_shape(cu_vty(c, x), cu_vty(c, r)))) {
        c->var[r] = c->var[x]; /* [k] and [1, k]: one row */
        c->splat[r] = c->splat[x];
        return true;
    }
    if (op == OP_BROADCAST && kx == 1 && kr != 1) { /* one element to many: each is x[0] */
        c->var[r] = ecu_elem_at(c, x, "0");
        c->splat[r] = kr > 0;
        return true;
    }
    if (op == OP_BROADCAST && kx && kx != kr) {
        ecu_refuse(c, in->loc, "'broadcast' of %%%s %s to %s: not printed yet", c->irname[x], ecu_shape_str(c, cu_vty(c, x)),
               ecu_shape_str(c, cu_vty(c, r)));
        return true;
    }
    Type tr = r ? cu_vty(c, r) : (Type){0};
    if ((op == OP_EXPAND_DIMS || op == OP_RESHAPE) && cu_is_lane(c, x) && !ecu_is_row(c, x) && tr.rank == 2 &&
        tr.shape[0] == 1 && tr.shape[1] == c->L) {
        /* the block's lanes into a row that every thread holds ([L] -> [1, L]): each thread writes its
         * lane into shared memory, then reads them all (an all-gather; the barriers order it against
         * the buffer's other uses) */
        const char *buf = ecu_smem(c, cu_vdt(c, x)), *ty = ecu_ctype(c, r, in->loc);
        c->var[r] = ecu_name_for(c, r);
        ecu_line(c, "__syncthreads();");
        ecu_line(c, "%s[threadIdx.x] = %s;", buf, ecu_bare(c, x));
        ecu_line(c, "__syncthreads();");
        ecu_line(c, "%s %s[%d];", ty, c->var[r], kr);
        ecu_line(c, "for (int kad_j = 0; kad_j < %d; kad_j++)", kr);
        ecu_line(c, "    %s[kad_j] = %s[kad_j];", c->var[r], buf);
        ecu_line(c, "__syncthreads();");
        return true;
    }
    if (op == OP_RESHAPE && ecu_is_row(c, x) && kx == c->L && r && cu_is_lane(c, r) && !ecu_is_row(c, r)) {
        /* a row every thread holds into the block's lanes ([1, L] -> [L]): thread i takes element i */
        ecu_bind(c, NULL, r, ecu_elem_at(c, x, "threadIdx.x"), true, in->loc);
        return true;
    }
    if (op == OP_GATHER && ecu_is_row(c, x) && cu_vty(c, x).rank == 1 && !c->splat[x] && in->ival == 0) {
        /* from a row every thread holds: each thread reads its own copy at the index */
        ValId k = in->args[1];
        if (ecu_is_row(c, k)) {
            c->jidx = true;
            const char *e = ecu_elem_at(c, x, ecu_bare(c, k));
            c->jidx = false;
            array_assign(c, r, e, in->loc);
        } else
            ecu_bind(c, NULL, r, ecu_elem_at(c, x, ecu_bare(c, k)), true, in->loc);
        return true;
    }
    if ((op == OP_SUM || op == OP_MAX || op == OP_MIN || op == OP_ARGMAX || op == OP_ARGMIN || op == OP_REDUCE) &&
        in->nargs == 1 && !kx && kr == 1 && cu_is_lane(c, x))
        return false; /* the block's lanes into [1]: a block reduction (ecu_reduction) */
    bool ew = op_info[op].elementwise || op == OP_BROADCAST || op == OP_CONST;
    if (x && cu_vty(c, x).rank && r && cu_vty(c, r).rank && ecu_is_row(c, x) != ecu_is_row(c, r) && !op_info[op].elementwise &&
        op != OP_BROADCAST) {
        ecu_refuse(c, in->loc, "'%s' of %%%s %s into %s: between the block's threads and a row that every thread "
               "holds (it would gather every lane); not printed yet", op_info[op].name, c->irname[x],
               ecu_shape_str(c, cu_vty(c, x)), ecu_shape_str(c, cu_vty(c, r)));
        return true;
    }
    if (!kr || !ew || op == OP_SPLIT || op == OP_JOIN || op == OP_GATHER || op == OP_FLIP ||
        op == OP_EXPAND_DIMS || op == OP_RESHAPE || op == OP_PERMUTE) {
        Buf sh = {.a = c->a};
        type_print(&sh, cu_vty(c, kr ? r : x));
        ecu_refuse(c, in->loc, "'%s' on a tile %s (a per-thread array): not printed yet", op_info[op].name, buf_str(&sh));
        return true;
    }
    if (op == OP_BROADCAST || op == OP_MULTIPLE_OF || op == OP_MAX_CONTIGUOUS || op == OP_STOP_GRADIENT) {
        c->var[r] = c->var[x]; /* [1, k] to [L, k]: the same array; a value to all elements: a splat */
        c->splat[r] = kx ? c->splat[x] : true;
        return true;
    }
    for (int k = 0; k < in->nargs; k++) {
        Dtype adt = cu_vdt(c, in->args[k]);
        if (adt != DT_PTR && !cuda_dtype(adt, c->o->hip)) {
            ecu_refuse(c, in->loc, "'%s' of %s values", op_info[op].name, dtype_name(adt));
            return true;
        }
    }
    if (op == OP_CONST) { /* every element alike */
        c->var[r] = ecu_expr(c, in);
        c->splat[r] = true;
        return true;
    }
    c->jidx = true;
    const char *e = ecu_expr(c, in);
    c->jidx = false;
    if (!e) {
        ecu_refuse(c, in->loc, "'%s' (%%%s) has no CUDA C spelling in kad yet", op_info[op].name, c->irname[r]);
        return true;
    }
    array_assign(c, r, e, in->loc);
    return true;
}

/* ---- the prelude ---- */

static const char prelude_reduce[] =
    "// Block reductions in a fixed order: each step combines lane i with lane i + h, h the upper\n"
    "// half of the n lanes still live, until lane 0 holds the result, which every thread reads\n"
    "// (kad_block_reduce_tree).  The same order on every run: the same bits.\n"
    "struct kad_add {\n"
    "    template <typename T> __device__ T operator()(T a, T b) const { return a + b; }\n"
    "};\n"
    "struct kad_mul {\n"
    "    template <typename T> __device__ T operator()(T a, T b) const { return a * b; }\n"
    "};\n"
    "struct kad_max { // maxnum: a NaN gives the other operand (tl.max)\n"
    "    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }\n"
    "    __device__ double operator()(double a, double b) const { return fmax(a, b); }\n"
    "    template <typename T> __device__ T operator()(T a, T b) const { return a > b ? a : b; }\n"
    "};\n"
    "struct kad_min {\n"
    "    __device__ float operator()(float a, float b) const { return fminf(a, b); }\n"
    "    __device__ double operator()(double a, double b) const { return fmin(a, b); }\n"
    "    template <typename T> __device__ T operator()(T a, T b) const { return a < b ? a : b; }\n"
    "};\n"
    "\n"
    "template <int L, typename T, typename F>\n"
    "__device__ T kad_block_reduce_tree(T v, T *buf, F combine)\n"
    "{\n"
    "    const int i = threadIdx.x;\n"
    "    buf[i] = v;\n"
    "    __syncthreads();\n"
    "    for (int n = L; n > 1; n = (n + 1) / 2) {\n"
    "        const int h = (n + 1) / 2;\n"
    "        if (i < n - h)\n"
    "            buf[i] = combine(buf[i], buf[i + h]);\n"
    "        __syncthreads();\n"
    "    }\n"
    "    const T r = buf[0];\n"
    "    __syncthreads(); // buf is free again for the next reduction\n"
    "    return r;\n"
    "}\n\n";

/* CUDA: where the block is whole warps and T is a type shuffles move, the same kind of fixed tree
 * in registers (two barriers instead of one per step); HIP keeps the tree in shared memory (its
 * wavefronts are 32 or 64 lanes). */
static const char prelude_reduce_cuda[] =
    "// With whole warps: each warp's fixed tree by shuffles (lane i takes lane i + o, o = 16, 8, 4,\n"
    "// 2, 1), the warps' partials through buf, then every warp the same tree over them (lane i takes\n"
    "// i + o where that is below the warp count), lane 0's result to all: the same bits everywhere.\n"
    "template <typename T> struct kad_shuffles { static constexpr bool ok = false; };\n"
    "template <> struct kad_shuffles<float> { static constexpr bool ok = true; };\n"
    "template <> struct kad_shuffles<double> { static constexpr bool ok = true; };\n"
    "template <> struct kad_shuffles<int> { static constexpr bool ok = true; };\n"
    "template <> struct kad_shuffles<unsigned> { static constexpr bool ok = true; };\n"
    "template <> struct kad_shuffles<long long> { static constexpr bool ok = true; };\n"
    "template <> struct kad_shuffles<unsigned long long> { static constexpr bool ok = true; };\n"
    "template <> struct kad_shuffles<long> { static constexpr bool ok = true; };\n"
    "template <> struct kad_shuffles<unsigned long> { static constexpr bool ok = true; };\n"
    "\n"
    "template <int L, typename T, typename F>\n"
    "__device__ T kad_block_reduce(T v, T *buf, F combine)\n"
    "{\n"
    "    if constexpr (L % 32 == 0 && kad_shuffles<T>::ok) {\n"
    "        constexpr int W = L / 32;\n"
    "        const int i = threadIdx.x, lane = i % 32;\n"
    "        for (int o = 16; o > 0; o /= 2)\n"
    "            v = combine(v, __shfl_down_sync(0xffffffffu, v, o));\n"
    "        if (W == 1)\n"
    "            return __shfl_sync(0xffffffffu, v, 0);\n"
    "        if (lane == 0)\n"
    "            buf[i / 32] = v;\n"
    "        __syncthreads();\n"
    "        T w = buf[lane < W ? lane : 0];\n"
    "        for (int o = 16; o > 0; o /= 2) {\n"
    "            const T u = __shfl_down_sync(0xffffffffu, w, o);\n"
    "            if (lane + o < W)\n"
    "                w = combine(w, u);\n"
    "        }\n"
    "        __syncthreads(); // buf is free again for the next reduction\n"
    "        return __shfl_sync(0xffffffffu, w, 0);\n"
    "    } else {\n"
    "        return kad_block_reduce_tree<L>(v, buf, combine);\n"
    "    }\n"
    "}\n\n";

static const char prelude_reduce_hip[] =
    "template <int L, typename T, typename F>\n"
    "__device__ T kad_block_reduce(T v, T *buf, F combine)\n"
    "{\n"
    "    return kad_block_reduce_tree<L>(v, buf, combine);\n"
    "}\n\n";

static const char prelude_arg[] =
    "// argmax / argmin in the same fixed order: the first index of the largest (smallest) value.\n"
    "template <bool MAX, int L, typename T>\n"
    "__device__ int32_t kad_block_argbest(T v, T *buf, int32_t *idx)\n"
    "{\n"
    "    const int i = threadIdx.x;\n"
    "    buf[i] = v;\n"
    "    idx[i] = i;\n"
    "    __syncthreads();\n"
    "    for (int n = L; n > 1; n = (n + 1) / 2) {\n"
    "        const int h = (n + 1) / 2;\n"
    "        if (i < n - h) {\n"
    "            const T a = buf[i], b = buf[i + h];\n"
    "            const int32_t ia = idx[i], ib = idx[i + h];\n"
    "            const bool take_b = (MAX ? b > a : b < a) || (b == a && ib < ia);\n"
    "            if (take_b) {\n"
    "                buf[i] = b;\n"
    "                idx[i] = ib;\n"
    "            }\n"
    "        }\n"
    "        __syncthreads();\n"
    "    }\n"
    "    const int32_t r = idx[0];\n"
    "    __syncthreads();\n"
    "    return r;\n"
    "}\n"
    "template <int L, typename T> __device__ int32_t kad_block_argmax(T v, T *buf, int32_t *idx)\n"
    "{\n"
    "    return kad_block_argbest<true, L>(v, buf, idx);\n"
    "}\n"
    "template <int L, typename T> __device__ int32_t kad_block_argmin(T v, T *buf, int32_t *idx)\n"
    "{\n"
    "    return kad_block_argbest<false, L>(v, buf, idx);\n"
    "}\n\n";

static const char prelude_scan[] =
    "// Inclusive scans along the lanes (Hillis-Steele, in a fixed order): step s combines the\n"
    "// running value of position j - s with that of j; reverse scans from the last lane.\n"
    "template <int L, typename T, typename F>\n"
    "__device__ T kad_block_scan(T v, T *buf, bool reverse, F combine)\n"
    "{\n"
    "    const int j = reverse ? L - 1 - (int)threadIdx.x : (int)threadIdx.x;\n"
    "    buf[j] = v;\n"
    "    __syncthreads();\n"
    "    for (int s = 1; s < L; s *= 2) {\n"
    "        const T before = j >= s ? buf[j - s] : v;\n"
    "        __syncthreads();\n"
    "        if (j >= s)\n"
    "            v = combine(before, v);\n"
    "        buf[j] = v;\n"
    "        __syncthreads();\n"
    "    }\n"
    "    return v;\n"
    "}\n\n";

static const char prelude_gather[] =
    "// Lane i reads lane k of v (a gather or a flip along the lanes) through shared memory.\n"
    "template <int L, typename T>\n"
    "__device__ T kad_block_gather(T v, T *buf, int k)\n"
    "{\n"
    "    buf[threadIdx.x] = v;\n"
    "    __syncthreads();\n"
    "    const T r = buf[k];\n"
    "    __syncthreads();\n"
    "    return r;\n"
    "}\n\n";

static const char prelude_scatter[] =
    "// Lane j's sum of v over the lanes i whose k is j, in the order of i (a scatter-add along the\n"
    "// lanes: the adjoint of a gather).  Where the lanes adding a nonzero v target distinct lanes (a\n"
    "// permutation, a step of a tree reduction) each target has one writer: every lane writes its\n"
    "// number into its target's slot of own[], and if every lane finds its own number there, lane j\n"
    "// takes the value of the lane in own[j].  Else (two lanes target one) each lane adds up all the\n"
    "// lanes' values that target it, in lane order.  No atomics: the same bits on every run.\n"
    "template <int L, typename T>\n"
    "__device__ T kad_block_scatter_add(T v, int k, T *buf, int *own)\n"
    "{\n"
    "    const int i = threadIdx.x;\n"
    "    const bool live = !(v == (T)0) && k >= 0 && k < L;\n"
    "    buf[i] = v;\n"
    "    own[i] = -1;\n"
    "    __syncthreads();\n"
    "    if (live)\n"
    "        own[k] = i; // several writers: one of them stays, the others see it\n"
    "    __syncthreads();\n"
    "    T r = (T)0;\n"
    "    if (!__syncthreads_or(live && own[k] != i)) {\n"
    "        const int w = own[i];\n"
    "        if (w >= 0)\n"
    "            r = buf[w];\n"
    "    } else {\n"
    "        own[i] = k;\n"
    "        __syncthreads();\n"
    "        for (int l = 0; l < L; l++)\n"
    "            if (own[l] == i)\n"
    "                r = r + buf[l];\n"
    "    }\n"
    "    __syncthreads();\n"
    "    return r;\n"
    "}\n\n";

static const char prelude_scatter_row[] =
    "// kad_block_scatter_add into a row out[N] that every thread gets alike (N <= L): a __shared__\n"
    "// array's elements written at other threads' indices, or their count of writers; a k out of\n"
    "// range adds nothing.  One writer a target: its value; else the lanes' values in lane order.\n"
    "template <int L, int N, typename T>\n"
    "__device__ void kad_block_scatter_row(T v, int k, T *buf, int *own, T *out)\n"
    "{\n"
    "    const int i = threadIdx.x;\n"
    "    const bool live = !(v == (T)0) && k >= 0 && k < N;\n"
    "    buf[i] = v;\n"
    "    own[i] = -1;\n"
    "    __syncthreads();\n"
    "    if (live)\n"
    "        own[k] = i;\n"
    "    __syncthreads();\n"
    "    if (!__syncthreads_or(live && own[k] != i)) {\n"
    "        for (int j = 0; j < N; j++) {\n"
    "            const int w = own[j];\n"
    "            out[j] = w >= 0 ? buf[w] : (T)0;\n"
    "        }\n"
    "    } else {\n"
    "        own[i] = live ? k : -1;\n"
    "        __syncthreads();\n"
    "        for (int j = 0; j < N; j++)\n"
    "            out[j] = (T)0;\n"
    "        for (int l = 0; l < L; l++) {\n"
    "            const int t = own[l];\n"
    "            if (t >= 0)\n"
    "                out[t] = out[t] + buf[l];\n"
    "        }\n"
    "    }\n"
    "    __syncthreads();\n"
    "}\n\n";

static const char prelude_rand[] =
    "// Philox 4x32-10 as triton.language.random: counter (offset, 0, 0, 0), key the seed as uint64\n"
    "// (low half, high half); tl.rand, tl.randn (Box-Muller) and tl.randint of the first draws.\n"
    "__device__ inline void kad_philox(uint32_t c[4], uint64_t seed)\n"
    "{\n"
    "    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);\n"
    "    for (int r = 0; r < 10; r++) {\n"
    "        const uint64_t pb = (uint64_t)0xCD9E8D57u * c[2], pa = (uint64_t)0xD2511F53u * c[0];\n"
    "        c[0] = (uint32_t)(pb >> 32) ^ c[1] ^ k0;\n"
    "        c[2] = (uint32_t)(pa >> 32) ^ c[3] ^ k1;\n"
    "        c[1] = (uint32_t)pb;\n"
    "        c[3] = (uint32_t)pa;\n"
    "        k0 += 0x9E3779B9u;\n"
    "        k1 += 0xBB67AE85u;\n"
    "    }\n"
    "}\n"
    "__device__ inline float kad_uniform(uint32_t x)\n"
    "{ // uint_to_uniform_float: negatives folded onto the non-negatives, times 2^-31 (rounded down)\n"
    "    const int32_t s = (int32_t)x < 0 ? (int32_t)~x : (int32_t)x;\n"
    "    return (float)s * 4.6566127342e-10f;\n"
    "}\n"
    "__device__ inline uint32_t kad_randint(uint64_t seed, uint32_t offset)\n"
    "{\n"
    "    uint32_t c[4] = {offset, 0, 0, 0};\n"
    "    kad_philox(c, seed);\n"
    "    return c[0];\n"
    "}\n"
    "__device__ inline float kad_rand(uint64_t seed, uint32_t offset) { return kad_uniform(kad_randint(seed, offset)); }\n"
    "__device__ inline float kad_randn(uint64_t seed, uint32_t offset)\n"
    "{\n"
    "    uint32_t c[4] = {offset, 0, 0, 0};\n"
    "    kad_philox(c, seed);\n"
    "    const float u1 = fmaxf(1.0e-7f, kad_uniform(c[0])), u2 = kad_uniform(c[1]);\n"
    "    return sqrtf(-2.0f * logf(u1)) * cosf(6.283185307179586f * u2);\n"
    "}\n\n";

void emit_cuda_prelude(Buf *out, const EmitCudaOpts *o, unsigned helpers)
{
    bool hip = o && o->hip;
    buf_puts(out, hip ? "#include <hip/hip_runtime.h>\n" : "#include <cuda_runtime.h>\n");
    if (helpers & CU_H_HALF) /* they double nvcc's time: only where a value is half */
        buf_puts(out, hip ? "#include <hip/hip_fp16.h>\n#include <hip/hip_bf16.h>\n" : "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n");
    buf_puts(out, "#include <assert.h>\n#include <math.h>\n#include <stdint.h>\n\n");
    if (helpers & (CU_H_REDUCE | CU_H_SCAN)) {
        buf_puts(out, prelude_reduce);
        buf_puts(out, hip ? prelude_reduce_hip : prelude_reduce_cuda);
    }
    if (helpers & CU_H_ARG)
        buf_puts(out, prelude_arg);
    if (helpers & CU_H_SCAN)
        buf_puts(out, prelude_scan);
    if (helpers & CU_H_GATHER)
        buf_puts(out, prelude_gather);
    if (helpers & CU_H_SCATTER)
        buf_puts(out, prelude_scatter);
    if (helpers & CU_H_SCATTER_ROW)
        buf_puts(out, prelude_scatter_row);
    if (helpers & CU_H_RAND)
        buf_puts(out, prelude_rand);
}
