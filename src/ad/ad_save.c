/* ad_save.c -- loop results the forward saves for the backward.
 *
 * Job: the backward recomputes the forward in registers (sweep_rev.c), so a
 * kernel whose forward runs a loop over memory (a matmul's K loop, an
 * online log-sum-exp over a vocabulary) pays that loop again in its
 * backward.  When the forward is launched through kad (the Python package
 * under autograd), it can instead run a *saving forward*: the kernel as
 * written plus, after each planned loop, a store of the loop's results into
 * a buffer with one slot per program.  The backward built for that buffer
 * (AdSpec.save) loads them in its primal sweep instead of running the loop
 * (docs/AD.md, "Saved loop results").
 *
 *   kernel @k(<params>, %kad_saved: *fp32) {      (the saving forward)
 *     ...
 *     %acc = for ... { ... }                      (a planned loop)
 *     store kad_saved + program * slot + off + <row-major lanes>, fp32(acc)
 *     ...
 *   }
 *
 * The plan (save_plan) takes the top-level `for` loops that read memory and
 * whose results used after them are all fp16/bf16/fp32 values: those are
 * exactly the values the primal sweep would otherwise compute by running
 * the loop (ints and pointers carried out of a loop would need the loop).
 * It names them by ValId: the kernel AD differentiates keeps the forward's
 * ValIds, and gauge_rewrite (ad_gauge.c) defines the results of the two
 * loops it splits an online-softmax loop into with the original loop's
 * ValIds, so both become loads.  Only the adjoint of such a loop still runs
 * (sweep_rev.c builds it from the forward's loop as before); a taped loop keeps
 * its primal copy, which records the tape.
 *
 * Exactness: the saved values are the forward's own, stored in fp32
 * (fp16/bf16 widen exactly), so the backward sees the values its recompute
 * would compute when both compute the same function of the same inputs: the
 * saving forward is this IR emitted, like the backward's recompute.  The
 * buffer is indexed by the linear program id (tl.program_id and
 * tl.num_programs), which write/fold.c and write/gather.c rewrite consistently
 * when they restructure the backward's programs, as for tapes.
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "ad/autodiff.h"
#include "ad/ad_int.h"

static bool saveable_dtype(Dtype dt) { return dt == DT_F32 || dt == DT_F16 || dt == DT_BF16; }

/* Whether value v is used after instruction k of b (in b or in a region of a later instruction). */
static bool used_after(const Block *b, int k, ValId v)
{
    for (int j = k + 1; j < b->insts.n; j++)
        if (ir_inst_uses(&b->insts.v[j], v))
            return true;
    return false;
}

/* Whether w carries no gradient whatever is differentiated: an int or i1
 * value, a float constant, a scalar parameter (kad differentiates pointer
 * parameters only), or a cast of one. */
static bool inert(const Func *f, const Inst *const *def, ValId w, int depth)
{
    Type t = ir_type(f, w);
    if (t.dt != DT_PTR && !dtype_is_float((Dtype)t.dt))
        return true;
    const Inst *d = def[w];
    if (!d)
        return t.rank == 0 && t.dt != DT_PTR; /* a kernel parameter: top-level operands see no region's */
    if (d->op == OP_CONST)
        return true;
    if ((d->op == OP_CAST || d->op == OP_BROADCAST) && depth < 8)
        return inert(f, def, d->args[0], depth + 1);
    return false;
}

/* Whether a backward may read value v, defined in the top-level block b
 * before instruction k: some use after k, followed through the ops whose
 * adjoints never read their operand v (a store of it; a cast between
 * floats, +, -, negation, shape ops; * and / by an inert value), reaches
 * any other op (a nonlinear op, a comparison, a dot, a region).  A loop
 * whose used results are all unneeded (a plain matmul's accumulator,
 * stored as it is) is not worth saving: its primal copy in the backward is
 * dead code. */
static bool needed(const Func *f, const Inst *const *def, const Block *b, int k, ValId v, int depth)
{
    if (depth > 32)
        return true;
    for (int j = k + 1; j < b->insts.n; j++) {
        const Inst *in = &b->insts.v[j];
        if (!ir_inst_uses(in, v))
            continue;
        if (in->nregions) /* a region's operand or a use inside one */
            return true;
        switch (in->op) {
        case OP_STORE:
            if (in->args[0] == v || ((in->flags & IF_HAS_MASK) && in->args[2] == v))
                return true;
            continue;
        case OP_CAST:
            if (!dtype_is_float((Dtype)ir_type(f, in->res[0]).dt))
                return true;
            break;
        case OP_ADD:
        case OP_SUB:
        case OP_NEG:
        case OP_BROADCAST:
        case OP_EXPAND_DIMS:
        case OP_RESHAPE:
        case OP_PERMUTE:
            break;
        case OP_MUL:
            if (!inert(f, def, in->args[in->args[0] == v ? 1 : 0], 0) || in->args[0] == in->args[1])
                return true;
            break;
        case OP_DIV:
            if (in->args[1] == v || !inert(f, def, in->args[1], 0))
                return true;
            break;
        default:
            return true;
        }
        if (in->nres != 1 || needed(f, def, b, j, in->res[0], depth + 1))
            return true;
    }
    return false;
}

const SavePlan *save_plan(Arena *a, const Func *fwd)
{
    const Block *b = fwd->body;
    if (fwd->descs.n) /* host-side descriptors: the launchers expand them; not planned yet */
        return NULL;
    int cap = 0;
    for (int k = 0; k < b->insts.n; k++)
        if (b->insts.v[k].op == OP_FOR)
            cap += b->insts.v[k].nres;
    SavePlan *p = arena_alloc(a, sizeof *p);
    const Inst **def = arena_alloc(a, sizeof *def * (size_t)(fwd->vals.n + 1));
    ir_index_defs(b, def);
    p->val = arena_alloc(a, sizeof *p->val * (size_t)(cap + 1));
    p->ty = arena_alloc(a, sizeof *p->ty * (size_t)(cap + 1));
    p->off = arena_alloc(a, sizeof *p->off * (size_t)(cap + 1));
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        if (in->op != OP_FOR || !ir_block_has_op(in->regions[0], OP_LOAD))
            continue;
        bool ok = true, need = false;
        for (int i = 0; i < in->nres && ok; i++) {
            Type t = ir_type(fwd, in->res[i]);
            if (used_after(b, k, in->res[i]) && (t.dt == DT_PTR || !saveable_dtype((Dtype)t.dt)))
                ok = false; /* an int, a pointer or an fp64/fp8 value the rest needs: the loop runs */
            else
                need |= needed(fwd, def, b, k, in->res[i], 0);
        }
        ok = ok && need;
        for (int i = 0; i < in->nres && ok; i++) {
            if (!used_after(b, k, in->res[i]))
                continue;
            Type t = ir_type(fwd, in->res[i]);
            p->val[p->n] = in->res[i];
            p->ty[p->n] = t;
            p->off[p->n++] = p->slot;
            p->slot += type_numel(t);
        }
    }
    return p->n ? p : NULL;
}

/* The index of value v in the plan, or -1. */
static int planned(const SavePlan *p, ValId v)
{
    for (int j = 0; j < p->n; j++)
        if (p->val[j] == v)
            return j;
    return -1;
}

const int64_t *save_offsets(Arena *a, const SavePlan *p, const Func *fw, int k)
{
    const Inst *in = &fw->body->insts.v[k];
    if (!p || in->op != OP_FOR)
        return NULL;
    int64_t *off = arena_alloc(a, sizeof *off * (size_t)(in->nres + 1));
    bool any = false;
    for (int i = 0; i < in->nres; i++) {
        int j = planned(p, in->res[i]);
        off[i] = j >= 0 && type_eq(p->ty[j], ir_type(fw, in->res[i])) ? p->off[j] : -1;
        if (off[i] < 0 && used_after(fw->body, k, in->res[i]))
            return NULL;
        any |= off[i] >= 0;
    }
    return any ? off : NULL;
}

ValId save_slot_at(Func *f, Block *b, ValId iter, int64_t slot, Loc loc)
{
    Type i32 = type_scalar(DT_I32), i64 = type_scalar(DT_I64);
    ValId prog = 0, np = 0;
    for (int k = 2; k >= 0; k--) { /* program = pid0 + G0 * (pid1 + G1 * pid2) */
        Inst *pi = ir_emit(f, b, OP_PROGRAM_ID, NULL, 0, &i32, 1, loc);
        pi->ival = k;
        ValId pid = ir_op1(f, b, OP_CAST, i64, pi->res[0], loc);
        Inst *gi = ir_emit(f, b, OP_NUM_PROGRAMS, NULL, 0, &i32, 1, loc);
        gi->ival = k;
        ValId g = ir_op1(f, b, OP_CAST, i64, gi->res[0], loc);
        prog = prog ? ir_op2(f, b, OP_ADD, i64, ir_op2(f, b, OP_MUL, i64, prog, g, loc), pid, loc) : pid;
        if (iter) /* the programs, for a tape's iterations */
            np = np ? ir_op2(f, b, OP_MUL, i64, np, g, loc) : g;
    }
    ValId at = prog;
    if (iter) {
        ValId t64 = ir_type(f, iter).dt == DT_I64 ? iter : ir_op1(f, b, OP_CAST, i64, iter, loc);
        at = ir_op2(f, b, OP_ADD, i64, ir_op2(f, b, OP_MUL, i64, t64, np, loc), prog, loc);
    }
    return ir_op2(f, b, OP_MUL, i64, at, ir_const_int(f, b, i64, slot, loc), loc);
}

ValId save_elems(Func *f, Block *b, ValId base, Type vt, int64_t off, Loc loc)
{
    Type pt = ir_type(f, base);
    ValId p = off ? ir_op2(f, b, OP_ADDPTR, pt, base, ir_const_int(f, b, type_scalar(DT_I64), off, loc), loc) : base;
    if (vt.rank == 0)
        return p;
    ValId idx = 0;
    int64_t stride = 1;
    for (int k = vt.rank - 1; k >= 0; k--) {
        Type at = type_tile(DT_I32, 1, &vt.shape[k]);
        Inst *ar = ir_emit(f, b, OP_ARANGE, NULL, 0, &at, 1, loc);
        ar->ival = 0;
        ValId x = ar->res[0];
        int32_t sh[KAD_MAX_RANK];
        int r = 1;
        sh[0] = vt.shape[k];
        for (int j = 0; j < k; j++) { /* axes before k: inserted in front */
            memmove(sh + 1, sh, sizeof(int32_t) * (size_t)r);
            sh[0] = 1;
            r++;
            Inst *e = ir_emit(f, b, OP_EXPAND_DIMS, &x, 1, (Type[]){type_tile(DT_I32, r, sh)}, 1, loc);
            e->ival = 0;
            x = e->res[0];
        }
        for (int j = k + 1; j < vt.rank; j++) { /* axes after k: appended */
            sh[r++] = 1;
            Inst *e = ir_emit(f, b, OP_EXPAND_DIMS, &x, 1, (Type[]){type_tile(DT_I32, r, sh)}, 1, loc);
            e->ival = r - 1;
            x = e->res[0];
        }
        Type xt = ir_type(f, x);
        if (stride != 1)
            x = ir_op2(f, b, OP_MUL, xt, x, ir_const_int(f, b, xt, stride, loc), loc);
        Type full = type_tile(DT_I32, vt.rank, vt.shape);
        if (!type_eq(xt, full))
            x = ir_op1(f, b, OP_BROADCAST, full, x, loc);
        idx = idx ? ir_op2(f, b, OP_ADD, full, idx, x, loc) : x;
        stride *= vt.shape[k];
    }
    Type ptile = type_ptr((Dtype)pt.elem, vt.rank, vt.shape);
    ValId pb = ir_op1(f, b, OP_BROADCAST, ptile, p, loc);
    return ir_op2(f, b, OP_ADDPTR, ptile, pb, idx, loc);
}

Func *save_kernel(Arena *a, const Func *fwd, const SavePlan *p, bool stores)
{
    Func *f = ir_func_clone(a, fwd, fwd->name);
    f->ranges.cap = f->ranges.n; /* a push copies */
    ValId param = ir_param_add(f, type_ptr(DT_F32, 0, NULL), KAD_SAVE_PARAM, fwd->loc);
    if (!stores)
        return f;
    Block *b = f->body;
    int n;
    Inst *old = ir_block_detach(b, &n);
    ValId base = 0;
    for (int k = 0; k < n; k++) {
        vec_push(a, b->insts, old[k]);
        const Inst *in = &old[k];
        if (in->op != OP_FOR)
            continue;
        for (int i = 0; i < in->nres; i++) {
            int j = planned(p, in->res[i]);
            if (j < 0)
                continue;
            if (!base)
                base = ir_op2(f, b, OP_ADDPTR, ir_type(f, param), param, save_slot_at(f, b, 0, p->slot, in->loc),
                              in->loc);
            ValId v = in->res[i];
            Type vt = ir_type(f, v);
            ValId ptr = save_elems(f, b, base, vt, p->off[j], in->loc);
            if (vt.dt != DT_F32)
                v = ir_op1(f, b, OP_CAST, type_with_dtype(vt, DT_F32), v, in->loc);
            ValId args[2] = {ptr, v};
            ir_emit(f, b, OP_STORE, args, 2, NULL, 0, in->loc);
        }
    }
    return f;
}
