/* write/fold.c -- deterministic shared gradients: grid folding and partials.
 *
 * Job: a weight or bias read by every program along one grid axis (RMSNorm's
 * w, read by every row program) gets its gradient from all of them.  Float
 * atomic_adds make that sum's order, and so its last bits, change from run to
 * run.  Instead, the backward is folded along that axis: it is launched with
 * P programs there (P <= the forward's count G); program q runs the forward
 * programs q, q + P, q + 2P, ... in order and sums their contributions into
 * its own row of a partials buffer (fp32 for fp16/bf16/fp32 inputs, fp64 for
 * fp64); a second kernel then adds the P rows element by element, in the
 * order q = 0 .. P-1, into d_<x>.  The result depends on P and nothing else.
 *
 *   kernel @k_bwd(..., %d_w: *fp32 (the partials now), ..., %kad_span_w: i64,
 *                 %kad_programs: i32) {
 *     %q = program_id 0
 *     %d_w.row = addptr %d_w, q * kad_span_w
 *     for %pid = %q to %kad_programs step num_programs(0) iter_args(acc) {
 *       <the backward body, program_id(0) -> %pid, num_programs(0) -> %kad_programs,
 *        %d_w -> %d_w.row>
 *     }
 *   }
 *
 * The site adding into the gradient (adj_load's atomic_add) becomes, at the
 * body's top level, a register accumulator carried by the loop and stored
 * once, on the last iteration, through the mask of every lane some
 * iteration enabled; inside a nested region, a read-modify-write of the
 * program's own partials row between two barriers (the threads holding a
 * tile's lanes differ from one access to the next, and replicated lanes
 * must all read before any writes).
 *
 * Requires (fold_candidate decides, from access.c): per folded input one adding
 * site whose address does not depend on tl.program_id(axis), whose lanes are
 * distinct elements, and whose elements no two programs differing in another
 * grid axis share.  Keeps: the backward's contract (launch_K_bwd / the
 * interpreter run the plan; they allocate the partials uninitialized when the
 * kernel zeroes its own rows, zero-filled otherwise unless every element
 * is provably written) and one sum kernel adds every input's rows (its
 * builder, fold_sum_kernel, is plan/fold_sum.c's: it depends on the plan
 * data alone).
 * Breaks nothing else: a value the transformation cannot follow (a pointer
 * into the gradient carried in a way it does not know) makes ad_fold return
 * false, and the backward falls back to atomics.
 *
 * At the end of this file: the decision (fold_candidate: plain 3, the fold;
 * site_rows: plain 6, 7, a row of partials per site), which write/plain.c
 * asks per input; fold_inputs and site_inputs, which apply it to
 * ad_reverse's backward, or fall back to atomics and say why.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "plan/plan.h"
#include "ad/ad.h"
#include "ad/ad_int.h"


typedef struct Fold {
    Arena *a;
    Func *f;
    unsigned axes;       /* the folded grid axes (bits) */
    uint8_t *derived;    /* by ValId (< nv): input j + 1 whose gradient pointer this is, or 0 */
    int64_t *lanes;      /* by input j: L when its sites' elements each belong to one lane of L in
                          * the folded program (access_lane_private): their read-modify-writes'
                          * barriers carry it ({lanes = L}); else 0 */
    ValId *map;          /* by ValId (< nv): the value to use instead (rewrites), or 0 */
    int nv;              /* the size of derived and map */
} Fold;

static int der(const Fold *F, ValId v) { return v > 0 && v < F->nv ? F->derived[v] : 0; }
static ValId mapped(const Fold *F, ValId v) { return v > 0 && v < F->nv ? F->map[v] : 0; }

/* ------------------------------------------------------------------ */
/* Which values point into a folded gradient                           */
/* ------------------------------------------------------------------ */

static bool mark(Fold *F, ValId v, int j, bool *changed)
{
    if (der(F, v) == j)
        return true;
    if (der(F, v) && der(F, v) != j)
        return false; /* two gradients through one value: not followed */
    if (ir_type(F->f, v).dt != DT_PTR)
        return false;
    F->derived[v] = (uint8_t)j;
    *changed = true;
    return true;
}

/* One round over b: results of pointer ops with a derived operand, region
 * parameters and results carried from derived values.  False when a derived
 * value flows somewhere this pass does not follow. */
static bool derive_block(Fold *F, const Block *b, bool *changed)
{
    for (int k = 0; b && k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        int j = 0;
        for (int i = 0; i < in->nargs; i++)
            if (der(F, in->args[i]))
                j = j ? (j == der(F, in->args[i]) ? j : -1) : der(F, in->args[i]);
        if (j < 0)
            return false;
        switch (in->op) {
        case OP_ADDPTR:
        case OP_BROADCAST:
        case OP_EXPAND_DIMS:
        case OP_RESHAPE:
        case OP_MULTIPLE_OF:
        case OP_MAX_CONTIGUOUS:
        case OP_WHERE:
            if (j && !mark(F, in->res[0], j, changed))
                return false;
            break;
        case OP_LOAD:
        case OP_STORE:
            if (j && der(F, in->args[0]))
                return false; /* the backward reads or writes the gradient: not a folded one */
            break;
        case OP_ATOMIC_ADD:
            break;
        case OP_FOR:
        case OP_WHILE: {
            int nfix = in->op == OP_FOR ? 3 : 0, lead = in->op == OP_FOR ? 1 : 0;
            for (int i = nfix; i < in->nargs; i++) {
                int d = der(F, in->args[i]);
                if (!d)
                    continue;
                for (int r = 0; r < in->nregions; r++)
                    if (!mark(F, in->regions[r]->params[lead + i - nfix], d, changed))
                        return false;
                if (!mark(F, in->res[i - nfix], d, changed))
                    return false;
            }
            break;
        }
        case OP_YIELD:
        case OP_CONDITION:
            break; /* the parent maps them (below) */
        default:
            if (j)
                return false;
            break;
        }
        for (int r = 0; r < in->nregions; r++) {
            const Block *rb = in->regions[r];
            if (!derive_block(F, rb, changed))
                return false;
            const Inst *t = rb->insts.n ? &rb->insts.v[rb->insts.n - 1] : NULL;
            if (!t || t->op != OP_YIELD)
                continue;
            int lead = in->op == OP_FOR ? 1 : 0;
            for (int i = 0; i < t->nargs && i < in->nres; i++) {
                int d = der(F, t->args[i]);
                if (!d)
                    continue;
                if (!mark(F, in->res[i], d, changed))
                    return false;
                if (in->op != OP_IF)
                    for (int r2 = 0; r2 < in->nregions; r2++)
                        if (!mark(F, in->regions[r2]->params[lead + i], d, changed))
                            return false;
            }
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Rewriting                                                           */
/* ------------------------------------------------------------------ */

static void retype(Fold *F, Dtype pdt)
{
    for (int v = 1; v < F->nv; v++)
        if (F->derived[v])
            F->f->vals.v[v].ty.elem = (uint8_t)pdt;
}

/* The site's value in the partials' dtype: the cast to x's dtype undone
 * (adj_load casts the fp32 adjoint to the buffer's dtype), else a cast. */
static ValId site_value(Fold *F, Block *b, const Inst *at, Dtype pdt)
{
    Func *f = F->f;
    ValId v = at->args[1];
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *d = &b->insts.v[k];
        if (d->op == OP_CAST && d->nres == 1 && d->res[0] == v && ir_type(f, d->args[0]).dt == pdt)
            return d->args[0];
    }
    if (ir_type(f, v).dt == pdt)
        return v;
    return ir_op1(f, b, OP_CAST, type_with_dtype(ir_type(f, v), pdt), v, at->loc);
}

/* store p, v [, mask m] (m == 0: unmasked) at the end of b. */
static void emit_store(Func *f, Block *b, ValId p, ValId v, ValId m, Loc loc)
{
    ValId sa[3] = {p, v, m};
    Inst *st = ir_emit(f, b, OP_STORE, sa, m ? 3 : 2, NULL, 0, loc);
    st->flags = m ? IF_HAS_MASK : 0;
}

/* The accumulators of the top-level sites, carried by the fold loop. */
typedef struct Acc {
    int site;       /* position of the atomic in the old body */
    ValId init, mask_init;
    ValId param, mask_param; /* region parameters */
    ValId next, mask_next;   /* the values yielded */
} Acc;
typedef Vec(Acc) AccVec;

static void rewrite_args(Fold *F, Inst *in)
{
    for (int i = 0; i < in->nargs; i++)
        while (mapped(F, in->args[i]))
            in->args[i] = mapped(F, in->args[i]);
}

/* Copies b's instructions into a new instruction list, rewriting operands,
 * dropping program_id/num_programs of the axis (mapped) and turning nested
 * atomic sites into read-modify-writes.  Top-level sites (top) are replaced
 * by the accumulator code. */
static void rebuild(Fold *F, Block *b, bool top, AccVec *accs, ValId pid, ValId total, ValId step, Dtype pdt)
{
    Func *f = F->f;
    int nold;
    Inst *old = ir_block_detach(b, &nold);
    for (int k = 0; k < nold; k++) {
        Inst in = old[k];
        rewrite_args(F, &in);
        for (int r = 0; r < in.nregions; r++)
            rebuild(F, in.regions[r], false, accs, pid, total, step, pdt);
        if ((in.op == OP_PROGRAM_ID || in.op == OP_NUM_PROGRAMS) && in.ival >= 0 && in.ival < 3 &&
            (F->axes & (1u << in.ival)))
            continue; /* mapped */
        bool site = in.op == OP_ATOMIC_ADD && der(F, in.args[0]);
        if (!site) {
            vec_push(F->a, b->insts, in);
            continue;
        }
        bool masked = in.flags & IF_HAS_MASK;
        ValId p = in.args[0], m = masked ? in.args[2] : 0;
        Type pt = ir_type(f, p);
        ValId v = site_value(F, b, &in, pdt);
        if (!top) { /* read-modify-write of this program's own row */
            int64_t lanes = F->lanes[der(F, p) - 1];
            ir_emit(f, b, OP_BARRIER, NULL, 0, NULL, 0, in.loc)->ival = lanes;
            Type vt = type_tile(pdt, pt.rank, pt.shape);
            ValId la[3] = {p, m, ir_const_float(f, b, vt, 0.0, in.loc)};
            Inst *ld = ir_emit(f, b, OP_LOAD, la, masked ? 3 : 1, &vt, 1, in.loc);
            ld->flags = masked ? IF_HAS_MASK | IF_HAS_OTHER : 0;
            ValId old_v = ld->res[0];
            ValId sum = ir_op2(f, b, OP_ADD, vt, old_v, v, in.loc);
            emit_store(f, b, p, sum, m, in.loc);
            ir_emit(f, b, OP_BARRIER, NULL, 0, NULL, 0, in.loc)->ival = lanes;
            continue;
        }
        /* register accumulation; stored on the last iteration */
        Acc *ac = NULL;
        for (int i = 0; i < accs->n; i++)
            if (accs->v[i].site == k)
                ac = &accs->v[i];
        ASSERT(ac);
        Type vt = ir_type(f, ac->param);
        ValId c = masked ? ir_op3(f, b, OP_WHERE, vt, m, v, ir_const_float(f, b, vt, 0.0, in.loc), in.loc) : v;
        ac->next = ir_op2(f, b, OP_ADD, vt, ac->param, c, in.loc);
        /* the mask to store through: this iteration's when every iteration has the same */
        ac->mask_next = !masked ? 0 : ac->mask_param ? ir_op2(f, b, OP_OR, ir_type(f, m), ac->mask_param, m, in.loc) : m;
        Type i32 = type_scalar(DT_I32);
        ValId last = ir_op2(f, b, OP_GE, type_scalar(DT_I1), ir_op2(f, b, OP_ADD, i32, pid, step, in.loc), total,
                            in.loc);
        ir_emit(f, b, OP_IF, &last, 1, NULL, 0, in.loc);
        int idx = b->insts.n - 1;
        Block *then = ir_inst_add_region(f, &b->insts.v[idx]);
        Block *els = ir_inst_add_region(f, &b->insts.v[idx]);
        emit_store(f, then, p, ac->next, ac->mask_next, in.loc);
        ir_emit(f, then, OP_YIELD, NULL, 0, NULL, 0, in.loc);
        ir_emit(f, els, OP_YIELD, NULL, 0, NULL, 0, in.loc);
    }
}

/* Is v the same in every iteration of the fold loop (derived from
 * parameters, constants and the program ids of unfolded axes only)?  A
 * site whose mask is stores the accumulator through that mask; else
 * through the union of the masks of every iteration ("touched"). */
static bool invariant(const Fold *F, const Inst **def, uint8_t *memo, ValId v, int depth)
{
    if (v <= 0 || v >= F->nv || depth > 200)
        return false;
    if (memo[v])
        return memo[v] == 1;
    const Inst *in = def[v];
    bool ok;
    if (!in) {
        ok = false;
        for (int i = 0; i < F->f->nparams; i++)
            ok = ok || F->f->params[i] == v;
    } else if (in->op == OP_PROGRAM_ID) {
        ok = !(in->ival >= 0 && in->ival < 3 && (F->axes & (1u << in->ival)));
    } else if (in->nregions || !op_info[in->op].pure) {
        ok = false; /* region results, loads: not followed */
    } else {
        ok = true;
        for (int i = 0; i < in->nargs && ok; i++)
            ok = invariant(F, def, memo, in->args[i], depth + 1);
    }
    memo[v] = ok ? 1 : 2;
    return ok;
}

/* The top-level sites of the old body (positions), one accumulator each. */
static void top_sites(Fold *F, const Block *b, AccVec *accs)
{
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        if (in->op == OP_ATOMIC_ADD && der(F, in->args[0]))
            vec_push(F->a, *accs, ((Acc){.site = k}));
    }
}

/* The adding sites (atomic_adds) into input j's gradient in b, at any depth. */
static int count_sites(const Fold *F, const Block *b, int j)
{
    int n = 0;
    for (int k = 0; b && k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        n += in->op == OP_ATOMIC_ADD && der(F, in->args[0]) == j;
        for (int r = 0; r < in->nregions; r++)
            n += count_sites(F, in->regions[r], j);
    }
    return n;
}

/* At the top of the folded body: when the grid has one program along
 * every axis not folded (tl.num_programs(k) == 1), program q alone writes
 * its rows of the partials, and zeroes them first (every element of each
 * row: for z in range(0, span, FOLD_ZERO_BLOCK or AdSpec.fold_zero_block)), then a barrier orders
 * those stores before the sites' (other threads may hold the same
 * elements).  So the launcher allocates the partials uninitialized: a row
 * element no site writes reads 0 in the sum kernel.  With several programs
 * along an unfolded axis (a bias's column blocks), they share the row and
 * none may zero it: the launcher zero-fills the partials then, unless it
 * proves that the sites write every element (FoldInput.load_store). */
static void zero_rows(Func *f, Block *nb, unsigned axes, const ValId *rows, const FoldInput *in, int n, int zb, Loc loc)
{
    Type i32 = type_scalar(DT_I32), i64 = type_scalar(DT_I64), i1 = type_scalar(DT_I1);
    ValId cond = 0;
    for (int k = 0; k < 3; k++) {
        if (axes & (1u << k))
            continue;
        Inst *np = ir_emit(f, nb, OP_NUM_PROGRAMS, NULL, 0, &i32, 1, loc);
        np->ival = k;
        ValId eq = ir_op2(f, nb, OP_EQ, i1, np->res[0], ir_const_int(f, nb, i32, 1, loc), loc);
        cond = cond ? ir_op2(f, nb, OP_AND, i1, cond, eq, loc) : eq;
    }
    Block *b = nb;
    int idx = -1;
    if (cond) {
        f->vals.v[cond].name = "alone";
        ir_emit(f, nb, OP_IF, &cond, 1, NULL, 0, loc);
        idx = nb->insts.n - 1;
        b = ir_inst_add_region(f, &nb->insts.v[idx]);
    }
    int32_t sz[1] = {zb > 0 ? zb : FOLD_ZERO_BLOCK};
    Type t64 = type_tile(DT_I64, 1, sz), ta = type_tile(DT_I32, 1, sz), t1 = type_tile(DT_I1, 1, sz);
    for (int j = 0; j < n; j++) {
        Type pt = ir_type(f, rows[j]);
        Type tp = type_tile(pt.elem, 1, sz), pp = type_ptr(pt.elem, 1, sz);
        ValId fa[3] = {ir_const_int(f, b, i64, 0, loc), in[j].span, ir_const_int(f, b, i64, sz[0], loc)};
        ir_emit(f, b, OP_FOR, fa, 3, NULL, 0, loc);
        Block *r = ir_inst_add_region(f, &b->insts.v[b->insts.n - 1]);
        ValId z = ir_block_param_add(f, r, i64, "z", loc);
        Inst *ar = ir_emit(f, r, OP_ARANGE, NULL, 0, &ta, 1, loc);
        ar->ival = 0;
        ValId offs = ir_op2(f, r, OP_ADD, t64, ir_op1(f, r, OP_BROADCAST, t64, z, loc),
                            ir_op1(f, r, OP_CAST, t64, ar->res[0], loc), loc);
        ValId m = ir_op2(f, r, OP_LT, t1, offs, ir_op1(f, r, OP_BROADCAST, t64, in[j].span, loc), loc);
        ValId p = ir_op2(f, r, OP_ADDPTR, pp, ir_op1(f, r, OP_BROADCAST, pp, rows[j], loc), offs, loc);
        emit_store(f, r, p, ir_const_float(f, r, tp, 0.0, loc), m, loc);
        ir_emit(f, r, OP_YIELD, NULL, 0, NULL, 0, loc);
    }
    if (cond) {
        ir_emit(f, b, OP_YIELD, NULL, 0, NULL, 0, loc);
        Block *els = ir_inst_add_region(f, &nb->insts.v[idx]);
        ir_emit(f, els, OP_YIELD, NULL, 0, NULL, 0, loc);
    }
    ir_emit(f, nb, OP_BARRIER, NULL, 0, NULL, 0, loc);
}

/* The memory instructions of b (regions included) through input gradients: sites[j] those of
 * input j; false when one is not an atomic_add. */
static bool gradient_sites(const Fold *F, const Block *b, InstPtrVec *sites)
{
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        bool mem = in->op == OP_LOAD || op_writes_memory(in->op);
        int j = mem ? der(F, in->args[0]) : 0;
        if (j && in->op != OP_ATOMIC_ADD)
            return false;
        if (j)
            vec_push(F->a, sites[j - 1], in);
        for (int r = 0; r < in->nregions; r++)
            if (!gradient_sites(F, in->regions[r], sites))
                return false;
    }
    return true;
}

/* F->lanes: per input, whether each element of its row in the folded program belongs to one lane
 * (access_lane_private with the folded axes' program ids varying: they become the fold loop's
 * counter).  Asked of the backward before the fold rewrites it. */
static void fold_lanes(Fold *F, int n)
{
    F->lanes = arena_alloc(F->a, sizeof(int64_t) * (size_t)(n + 1));
    InstPtrVec *sites = arena_alloc(F->a, sizeof *sites * (size_t)(n + 1));
    if (!gradient_sites(F, F->f->body, sites))
        return;
    Access *A = access_analyze(F->a, F->f);
    for (int j = 0; j < n; j++)
        if (sites[j].n && !access_lane_private(A, sites[j].v, sites[j].n, 7u & ~F->axes, &F->lanes[j]))
            F->lanes[j] = 0;
}

bool ad_fold(Arena *a, Program *P, unsigned axes, const int *slot, const char *const *names, int n, int zero_block)
{
    Func *f = P->main;
    Fold F0 = {.a = a, .f = f, .axes = axes}, *F = &F0;
    int axis = 0;
    while (!(axes & (1u << axis)))
        axis++;
    F->nv = f->vals.n;
    F->derived = arena_alloc(a, (size_t)F->nv + 1);
    Dtype pdt = DT_F32;
    for (int j = 0; j < n; j++) {
        Dtype dt = (Dtype)ir_type(f, f->params[slot[j]]).elem;
        if (j && fold_partial_dtype(dt) != pdt)
            return false; /* one partials dtype per fold (fp64 with others: not folded) */
        pdt = fold_partial_dtype(dt);
        F->derived[f->params[slot[j]]] = (uint8_t)(j + 1);
    }
    for (bool changed = true; changed;) {
        changed = false;
        if (!derive_block(F, f->body, &changed))
            return false;
    }
    fold_lanes(F, n);
    Loc loc = f->loc;
    Block *old = f->body;
    AccVec accs = {0};
    top_sites(F, old, &accs);
    /* x's dtypes, before the gradient pointers become the partials' */
    Dtype *dts = arena_alloc(a, sizeof *dts * (size_t)n);
    for (int j = 0; j < n; j++)
        dts[j] = (Dtype)ir_type(f, f->params[slot[j]]).elem;
    retype(F, pdt);

    /* new parameters: the spans, the forward's program counts (after the
     * site rows' inputs when ad_site_rows made a plan) */
    FoldPlan *plan = P->fold ? (FoldPlan *)P->fold : arena_alloc(a, sizeof *plan); /* ours: arena */
    int n0 = P->fold ? plan->n : 0;
    if (!P->fold)
        plan->nargs = f->nparams;
    plan->axis = axis;
    plan->axes = axes;
    FoldInput *ins = arena_alloc(a, sizeof *plan->in * (size_t)(n0 + n));
    if (n0)
        memcpy(ins, plan->in, sizeof *ins * (size_t)n0);
    plan->in = ins;
    plan->n = n0 + n;
    for (int j = 0; j < n; j++) {
        FoldInput *in = &plan->in[n0 + j];
        *in = (FoldInput){.slot = slot[j], .name = names[j], .dt = dts[j], .pdt = pdt};
        in->span = ir_param_add(f, type_scalar(DT_I64), arena_printf(a, "kad_span_%s", names[j]), loc);
    }
    Type i32 = type_scalar(DT_I32), i64 = type_scalar(DT_I64);
    for (int k = 0; k < 3; k++)
        if (axes & (1u << k))
            plan->programs[k] = ir_param_add(f, i32, arena_printf(a, "kad_programs_%d", k), loc);

    /* the new body: q, the rows of the partials, the accumulators, the loop */
    Block *nb = ir_block_new(f);
    f->body = nb;
    Inst *pi = ir_emit(f, nb, OP_PROGRAM_ID, NULL, 0, &i32, 1, loc);
    pi->ival = axis;
    ValId q = pi->res[0];
    f->vals.v[q].name = "q";
    Inst *ni = ir_emit(f, nb, OP_NUM_PROGRAMS, NULL, 0, &i32, 1, loc);
    ni->ival = axis;
    ValId step = ni->res[0];
    f->vals.v[step].name = "nfold";
    ValId total = 0; /* the folded programs: the product of the axes' counts */
    for (int k = 0; k < 3; k++)
        if (axes & (1u << k))
            total = total ? ir_op2(f, nb, OP_MUL, i32, total, plan->programs[k], loc) : plan->programs[k];
    if (total != plan->programs[axis])
        f->vals.v[total].name = "nprograms";
    ValId q64 = ir_op1(f, nb, OP_CAST, i64, q, loc);
    ValId *rows = arena_alloc(a, sizeof *rows * (size_t)n);
    for (int j = 0; j < n; j++) {
        ValId p = f->params[slot[j]];
        rows[j] = ir_op2(f, nb, OP_ADDPTR, ir_type(f, p), p,
                         ir_op2(f, nb, OP_MUL, i64, q64, plan->in[n0 + j].span, loc), loc);
        f->vals.v[rows[j]].name = arena_printf(a, "d_%s_row", names[j]);
    }
    zero_rows(f, nb, axes, rows, plan->in + n0, n, zero_block, loc);
    /* accumulator types: the sites' pointer shapes */
    const Inst **def = arena_alloc(a, sizeof *def * (size_t)(F->nv + 1));
    uint8_t *memo = arena_alloc(a, (size_t)F->nv + 1);
    ir_index_defs(old, def);
    for (int i = 0; i < accs.n; i++) {
        const Inst *at = &old->insts.v[accs.v[i].site];
        Type pt = ir_type(f, at->args[0]);
        Type vt = type_tile(pdt, pt.rank, pt.shape);
        accs.v[i].init = ir_const_float(f, nb, vt, 0.0, loc);
        if ((at->flags & IF_HAS_MASK) && !invariant(F, def, memo, at->args[2], 0))
            accs.v[i].mask_init = ir_const_int(f, nb, ir_type(f, at->args[2]), 0, loc);
    }
    ValVec fargs = {0};
    Vec(Type) ftys = {0};
    vec_push(a, fargs, q);
    vec_push(a, fargs, total);
    vec_push(a, fargs, step);
    for (int i = 0; i < accs.n; i++) {
        vec_push(a, fargs, accs.v[i].init);
        vec_push(a, ftys, ir_type(f, accs.v[i].init));
        if (accs.v[i].mask_init) {
            vec_push(a, fargs, accs.v[i].mask_init);
            vec_push(a, ftys, ir_type(f, accs.v[i].mask_init));
        }
    }
    for (int i = 0; i < accs.n; i++) { /* a top-level site stores its row once, through the load's mask */
        int j = der(F, old->insts.v[accs.v[i].site].args[0]) - 1;
        plan->in[n0 + j].load_store = !accs.v[i].mask_init && count_sites(F, old, j + 1) == 1;
    }
    ir_emit(f, nb, OP_FOR, fargs.v, fargs.n, ftys.v, ftys.n, loc);
    Block *r = ir_inst_add_region(f, &nb->insts.v[nb->insts.n - 1]);
    ValId t = ir_block_param_add(f, r, i32, total == plan->programs[axis] ? arena_printf(a, "pid%d", axis) : "t",
                                 loc);
    for (int i = 0; i < accs.n; i++) {
        accs.v[i].param = ir_block_param_add(f, r, ir_type(f, accs.v[i].init), "acc", loc);
        if (accs.v[i].mask_init)
            accs.v[i].mask_param = ir_block_param_add(f, r, ir_type(f, accs.v[i].mask_init), "touched", loc);
    }
    /* each folded axis's program id from t: t = pid_a + G_a * (pid_b + G_b * pid_c) */
    ValId pids[3] = {0}, rest = t;
    int last = 2;
    while (!(axes & (1u << last)))
        last--;
    for (int k = 0; k < 3; k++) {
        if (!(axes & (1u << k)))
            continue;
        if (k == last) {
            pids[k] = rest;
        } else {
            pids[k] = ir_op2(f, r, OP_REM, i32, rest, plan->programs[k], loc);
            rest = ir_op2(f, r, OP_DIV, i32, rest, plan->programs[k], loc);
        }
        if (pids[k] != t)
            f->vals.v[pids[k]].name = arena_printf(a, "pid%d", k);
    }
    int pro = r->insts.n; /* the prologue's instructions, before the old body's */
    for (int i = 0; i < accs.n; i++)
        accs.v[i].site += pro;

    /* the rewrites: the parameter -> its row; the axes' program ids and
     * counts (at any depth) -> t's parts and the forward's counts */
    int nv = f->vals.n;
    uint8_t *d2 = arena_alloc(a, (size_t)nv + 1);
    memcpy(d2, F->derived, (size_t)F->nv);
    F->derived = d2;
    F->nv = nv;
    F->map = arena_alloc(a, sizeof(ValId) * (size_t)(nv + 1));
    for (int j = 0; j < n; j++) {
        ValId p = f->params[slot[j]];
        F->map[p] = rows[j];
        F->derived[rows[j]] = (uint8_t)(j + 1);
    }
    Vec(const Block *) stack = {0};
    vec_push(a, stack, (const Block *)old);
    while (stack.n) {
        const Block *b = stack.v[--stack.n];
        for (int k = 0; k < b->insts.n; k++) {
            const Inst *in = &b->insts.v[k];
            bool ours = in->ival >= 0 && in->ival < 3 && (axes & (1u << in->ival));
            if (in->op == OP_PROGRAM_ID && ours)
                F->map[in->res[0]] = pids[in->ival];
            if (in->op == OP_NUM_PROGRAMS && ours)
                F->map[in->res[0]] = plan->programs[in->ival];
            for (int rr = 0; rr < in->nregions; rr++)
                vec_push(a, stack, (const Block *)in->regions[rr]);
        }
    }
    for (int k = 0; k < old->insts.n; k++)
        vec_push(a, r->insts, old->insts.v[k]);
    rebuild(F, r, true, &accs, t, total, step, pdt);
    ValVec ys = {0};
    for (int i = 0; i < accs.n; i++) {
        vec_push(a, ys, accs.v[i].next);
        if (accs.v[i].mask_init)
            vec_push(a, ys, accs.v[i].mask_next);
    }
    ir_emit(f, r, OP_YIELD, ys.v, ys.n, NULL, 0, loc);
    for (int j = 0; j < n; j++)
        f->vals.v[f->params[slot[j]]].name = arena_printf(a, "d_%s_part", names[j]);
    P->fold = plan;
    return true;
}

/* ------------------------------------------------------------------ */
/* Pipelining the fold loop                                            */
/* ------------------------------------------------------------------ */

/* The parameter a pointer value is an offset of (through addptr and shape
 * ops), 0 when another value (a loop's carried pointer, a select) is. */
static ValId ptr_base(const Func *f, const Inst *const *def, ValId v)
{
    for (int guard = 0; v && guard < 64; guard++) {
        for (int i = 0; i < f->nparams; i++)
            if (f->params[i] == v)
                return v;
        const Inst *d = def[v];
        if (!d || !(d->op == OP_ADDPTR || d->op == OP_BROADCAST || d->op == OP_EXPAND_DIMS ||
                    d->op == OP_RESHAPE || d->op == OP_PERMUTE))
            return 0;
        v = d->args[0];
    }
    return 0;
}

typedef struct Pipe {
    const Func *f;
    const Inst **def;
    Vec(ValId) loads, stores;
    int64_t bytes; /* the loads' tiles */
    bool bad;      /* a nested loop, a pointer of unknown base */
} Pipe;

static void pipe_scan(Arena *a, Pipe *P, const Block *b)
{
    for (int k = 0; k < b->insts.n && !P->bad; k++) {
        const Inst *in = &b->insts.v[k];
        if (in->op == OP_FOR || in->op == OP_WHILE) {
            P->bad = true;
            return;
        }
        if (in->op == OP_LOAD || op_writes_memory(in->op)) {
            if (in->flags & IF_DESC) {
                P->bad = true;
                return;
            }
            ValId base = ptr_base(P->f, P->def, in->args[0]);
            if (!base) {
                P->bad = true;
                return;
            }
            if (in->op == OP_LOAD) {
                vec_push(a, P->loads, base);
                Type t = ir_type(P->f, in->res[0]);
                int64_t e = dtype_bits((Dtype)t.dt) / 8;
                for (int i = 0; i < t.rank; i++)
                    e *= t.shape[i];
                P->bytes += e;
            } else {
                vec_push(a, P->stores, base);
            }
        }
        for (int r = 0; r < in->nregions; r++)
            pipe_scan(a, P, in->regions[r]);
    }
}

/* After the backward's last simplify (equal loads are one): the fold loop
 * walks the forward's programs one after the other, each a
 * row's loads, reductions and stores: a chain of latencies.  Triton's
 * software pipelining (tl.range num_stages=3) prefetches the next
 * programs' loads while one computes (H100, docs/BENCHMARKS.md: LayerNorm's
 * backward 129 -> 93 us fp32, RMSNorm bf16 62 -> 57).  Set when it is safe
 * and fits: no load through a parameter the loop stores or adds into (a
 * prefetched load must not read what an earlier iteration writes; distinct
 * parameters are distinct buffers, kad's contract for gradient buffers),
 * every access's base a parameter, no loop nested inside, and three
 * stages of the loads' tiles within 160 KiB of shared memory. */
void ad_fold_pipeline(Arena *a, const Program *Pg)
{
    Func *f = Pg->main;
    if (!Pg->fold || !Pg->fold->axes)
        return;
    const Inst **def = arena_alloc(a, sizeof *def * (size_t)(f->vals.n + 1));
    ir_index_defs(f->body, def);
    Inst *loop = NULL; /* the fold loop: the top-level for stepping by num_programs(axis) */
    for (int k = 0; k < f->body->insts.n; k++) {
        Inst *in = &f->body->insts.v[k];
        const Inst *st = in->op == OP_FOR ? def[in->args[2]] : NULL;
        if (st && st->op == OP_NUM_PROGRAMS && st->ival == Pg->fold->axis)
            loop = in;
    }
    if (!loop)
        return;
    Pipe P = {.f = f, .def = def};
    pipe_scan(a, &P, loop->regions[0]);
    bool ok = !P.bad && P.loads.n && P.bytes * 3 <= 160 * 1024;
    for (int i = 0; ok && i < P.loads.n; i++)
        for (int j = 0; ok && j < P.stores.n; j++)
            ok = P.loads.v[i] != P.stores.v[j];
    if (!ok || loop->nints)
        return;
    loop->ints[LH_STAGES] = 3;
    loop->ints[LH_UNROLL] = -1;
    loop->ints[LH_GIVEN] = loop->ints[LH_TRUE] = 0;
    loop->nints = LH_N;
}

/* ------------------------------------------------------------------ */
/* Site rows: one row of partials per adding site                      */
/* ------------------------------------------------------------------ */

/* Rewrites b's atomic_adds into the gradient (derived from it) into plain
 * stores into row *k, *k + 1, ... of the partials (in the order met), or,
 * under flag, `if flag: store into the row else atomic_add into row 0`. */
static void site_rewrite(Fold *F, Block *b, ValId span, ValId flag, Dtype pdt, int *k)
{
    Func *f = F->f;
    int nold;
    Inst *old = ir_block_detach(b, &nold);
    for (int i = 0; i < nold; i++) {
        Inst in = old[i];
        for (int r = 0; r < in.nregions; r++)
            site_rewrite(F, in.regions[r], span, flag, pdt, k);
        if (!(in.op == OP_ATOMIC_ADD && der(F, in.args[0]))) {
            vec_push(F->a, b->insts, in);
            continue;
        }
        bool masked = in.flags & IF_HAS_MASK;
        ValId p = in.args[0], m = masked ? in.args[2] : 0;
        Type pt = ir_type(f, p);
        ValId v = site_value(F, b, &in, pdt);
        Block *sb = b, *ab = NULL;
        if (flag) {
            ir_emit(f, b, OP_IF, &flag, 1, NULL, 0, in.loc);
            int idx = b->insts.n - 1;
            sb = ir_inst_add_region(f, &b->insts.v[idx]);
            ab = ir_inst_add_region(f, &b->insts.v[idx]);
        }
        ValId rp = p;
        if (*k) {
            Type i64 = type_scalar(DT_I64);
            ValId off = ir_op2(f, sb, OP_MUL, i64, ir_const_int(f, sb, i64, *k, in.loc), span, in.loc);
            if (pt.rank)
                off = ir_op1(f, sb, OP_BROADCAST, type_tile(DT_I64, pt.rank, pt.shape), off, in.loc);
            rp = ir_op2(f, sb, OP_ADDPTR, pt, p, off, in.loc);
        }
        emit_store(f, sb, rp, v, m, in.loc);
        if (flag) {
            ir_emit(f, sb, OP_YIELD, NULL, 0, NULL, 0, in.loc);
            Type vt = type_tile(pdt, pt.rank, pt.shape);
            ValId aa[3] = {p, v, m};
            Inst *at = ir_emit(f, ab, OP_ATOMIC_ADD, aa, masked ? 3 : 2, &vt, 1, in.loc);
            at->flags = masked ? IF_HAS_MASK : 0;
            ir_emit(f, ab, OP_YIELD, NULL, 0, NULL, 0, in.loc);
        }
        (*k)++;
    }
}

bool ad_site_rows(Arena *a, Program *P, int slot, const char *name, ValId flag)
{
    Func *f = P->main;
    if (P->fold && P->fold->axes)
        return false; /* run before ad_fold */
    Fold F0 = {.a = a, .f = f}, *F = &F0;
    F->nv = f->vals.n;
    F->derived = arena_alloc(a, (size_t)F->nv + 1);
    ValId p = f->params[slot];
    Dtype dt = (Dtype)ir_type(f, p).elem, pdt = fold_partial_dtype(dt);
    F->derived[p] = 1;
    for (bool changed = true; changed;) {
        changed = false;
        if (!derive_block(F, f->body, &changed))
            return false;
    }
    retype(F, pdt);
    Loc loc = f->loc;
    FoldPlan *plan = (FoldPlan *)P->fold; /* ours (an earlier call): arena */
    if (!plan) {
        plan = arena_alloc(a, sizeof *plan);
        plan->axis = -1;
        plan->nargs = f->nparams;
    }
    FoldInput *ins = arena_alloc(a, sizeof *ins * (size_t)(plan->n + 1));
    if (plan->n)
        memcpy(ins, plan->in, sizeof *ins * (size_t)plan->n);
    FoldInput *in = &ins[plan->n];
    *in = (FoldInput){.slot = slot, .name = name, .dt = dt, .pdt = pdt, .flag = flag};
    in->span = ir_param_add(f, type_scalar(DT_I64), arena_printf(a, "kad_span_%s", name), loc);
    int k = 0;
    site_rewrite(F, f->body, in->span, flag, pdt, &k);
    in->rows = k > 0 ? k : 1;
    plan->in = ins;
    plan->n++;
    P->fold = plan;
    f->vals.v[p].name = arena_printf(a, "d_%s_part", name);
    return true;
}


/* The inputs ad_plain_inputs chose to fold (plain 3): their atomic_adds
 * become per-program partials and a sum kernel (write/fold.c).  When the fold
 * cannot follow a gradient pointer, they stay atomics, and say why. */
void fold_inputs(Ad *ad)
{
    const Func *fw = ad->fw;
    int n = 0, *slot = arena_alloc(ad->a, sizeof(int) * (size_t)(fw->nparams + 1));
    const char **names = arena_alloc(ad->a, sizeof(char *) * (size_t)(fw->nparams + 1));
    for (int i = 0; i < fw->nparams; i++) {
        if (ad->plain[i] != 3)
            continue;
        for (int k = 0; k < ad->bw->nparams; k++)
            if (ad->bw->params[k] == ad->grad[i])
                slot[n] = k;
        names[n++] = fname(ad, fw->params[i]);
    }
    if (n && !ad_fold(ad->a, ad->P, ad->fold_axes, slot, names, n, ad->spec->fold_zero_block))
        for (int i = 0; i < fw->nparams; i++)
            if (ad->plain[i] == 3) {
                ad->plain[i] = 0;
                ad->why[i] = "it is shared across programs, and kad could not follow its gradient pointers "
                             "to sum them per program";
            }
}

/* The inputs ad_plain_inputs gave site rows (plain 6, 7): their atomic_adds
 * become plain stores into one row of partials per site (ad_site_rows).
 * When the rewrite cannot follow a gradient pointer, atomics stay. */
void site_inputs(Ad *ad)
{
    const Func *fw = ad->fw;
    for (int i = 0; i < fw->nparams; i++) {
        if (ad->plain[i] != 6 && ad->plain[i] != 7)
            continue;
        int slot = -1;
        for (int k = 0; k < ad->bw->nparams; k++)
            if (ad->bw->params[k] == ad->grad[i])
                slot = k;
        if (slot < 0 || !ad_site_rows(ad->a, ad->P, slot, fname(ad, fw->params[i]),
                                      ad->plain[i] == 7 ? ad->flag[i] : 0)) {
            ad->plain[i] = 0;
            ad->why[i] = "it is loaded at several sites that programs may share, and kad could not follow its "
                         "gradient pointers to give each site its own row of partials";
        }
    }
}

/* ---- The decision (write/plain.c asks, per input) ---- */

/* The grid axes whose tl.program_id or tl.num_programs b uses (bits). */
unsigned used_axes(const Block *b)
{
    unsigned u = 0;
    for (int k = 0; b && k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        if ((in->op == OP_PROGRAM_ID || in->op == OP_NUM_PROGRAMS) && in->ival >= 0 && in->ival < 3)
            u |= 1u << in->ival;
        for (int r = 0; r < in->nregions; r++)
            u |= used_axes(in->regions[r]);
    }
    return u;
}

/* Input i, read at the one site l whose address does not depend on the
 * program ids of `indep`: can its gradient be summed deterministically by
 * folding the grid (write/fold.c)?  The folded axes are those the kernel uses
 * and the address ignores (every axis when the kernel uses none); the lanes
 * of l must be distinct elements (a tile holding one element twice would
 * lose an addition), and programs differing in another used axis must not
 * share an element (they run at once on one row of partials: access_private
 * over those axes).  Marks plain[i] = 3 and the axes in ad->fold_axes (one
 * set of axes per backward: an input needing other axes keeps atomics). */
void fold_candidate(Ad *ad, Access *A, int i, const Inst *l, unsigned indep)
{
    unsigned used = used_axes(ad->fw->body);
    unsigned axes = used ? indep & used : 1;
    if (!axes)
        return;
    unsigned others = used & ~axes;
    if (others) { /* programs differing in another axis run at once on one row of partials */
        const Inst *one[1] = {l};
        AccResult pr = access_private(A, one, 1, others);
        if (pr.v != ACC_PROVEN) {
            ad->why[i] = arena_printf(ad->a, "it is shared across programs, and kad cannot prove that programs "
                                             "along the other grid axes read distinct elements%s%s%s",
                                      pr.why ? " (" : "", pr.why ? pr.why : "", pr.why ? ")" : "");
            return;
        }
    }
    AccResult lanes = access_injective(A, l, ACC_VARY_LANES);
    if (lanes.v != ACC_PROVEN) {
        ad->why[i] = "it is shared across programs, and kad cannot prove that one load's lanes read distinct "
                     "elements";
        return;
    }
    if (ad->fold_axes && ad->fold_axes != axes) {
        ad->why[i] = "it is shared across programs along other grid axes than another input kad folds";
        return;
    }
    ad->fold_axes = axes;
    ad->plain[i] = 3;
    ad->why[i] = NULL;
    /* what the load reaches: a top-level site's rows of partials are written there (ad_fold's
     * load_store), so the launcher may leave them uninitialized when it covers a dense d_x */
    ad->cover[i] = access_cover(A, l, &ad->cover_why[i]);
}

/* Input i is loaded at several sites that programs may share (a stencil's
 * taps: neighbouring tiles read overlapping halos), but each site alone
 * reads distinct elements over the whole launch (programs, iterations and
 * lanes).  Then each site stores its adjoint into its own row of partials
 * and a sum kernel adds the rows in order (plain 6, ad_site_rows); when
 * that holds only under conditions the launcher evaluates, under their
 * conjunction, with atomics when it fails (plain 7).  At most
 * SITE_ROWS_MAX sites: the partials cost a row of the gradient's size per
 * site. */
enum { SITE_ROWS_MAX = 16 };
bool site_rows(Ad *ad, Access *A, int i, const InstPtrVec *ls)
{
    if (ls->n > SITE_ROWS_MAX)
        return false;
    AccCondVec conds = {0};
    for (int k = 0; k < ls->n; k++) {
        AccResult r = access_injective(A, ls->v[k], ACC_VARY_PIDS | ACC_VARY_LOOPS | ACC_VARY_LANES);
        if (r.v == ACC_PROVEN)
            continue;
        if (r.v != ACC_PROVEN_IF || !cond_checkable(A, r.cond))
            return false;
        access_cond_conj(A, &conds, r.cond);
    }
    Buf py = {.a = ad->a};
    for (int j = 0; j < conds.n; j++) {
        const char *c = access_cond_python(A, conds.v[j]);
        if (!c)
            return false;
        buf_printf(&py, conds.n > 1 ? "%s(%s)" : "%s%s", j ? " and " : "", c);
    }
    ad->plain[i] = conds.n ? 7 : 6;
    ad->cond[i] = conds;
    ad->when[i] = conds.n ? buf_str(&py) : NULL;
    ad->why[i] = conds.n ? arena_printf(ad->a, "it is loaded at several sites that programs may share, each of "
                                               "which reads distinct elements only when %s", buf_str(&py))
                         : NULL;
    return true;
}
