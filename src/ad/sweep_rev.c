/* sweep_rev.c -- reverse-mode automatic differentiation: the two sweeps.
 *
 * Job: from a forward kernel `fwd` and the names of its differentiated
 * inputs (read-only pointer params), outputs (write-only pointer params)
 * and in-place buffers (named as both: read, then written),
 * build the backward kernel as IR (docs/AD.md has the full contract):
 *
 *   kernel @k_bwd(<fwd params>, %d_y_ptr..., %d_x_ptr...) {
 *     <primal sweep: fwd's body with every store removed, plus shadow
 *      pointers into the gradient buffers>
 *     <adjoint sweep: fwd's instructions walked backwards>
 *   }
 *
 * Nothing from the forward goes through memory: the primal sweep recomputes
 * every value in registers ("recompute in kernel", AD-NOTES.md).  A region
 * (if/for/while) is handled by recomputing its primal body inside the
 * adjoint region, so a value is always available in the scope where its
 * adjoint rule needs it.
 *
 * Stages of ad_reverse (called by backward.c's driver, which tries the
 * other ways of writing an input gradient around it):
 *   1. ad_analyze (ad_analysis.c): roles, provenance, activity, shift
 *      invariance and validation.  Every construct AD cannot handle
 *      exactly is refused there with a located error; emission starts only
 *      when it found nothing, and relies on its facts without checking
 *      them again.
 *   2. emission: the primal sweep (clone_block), then the adjoint sweep
 *      (adj_block), whose per-op rules all sit in adj_rule (rules_rev.c);
 *      loops run backwards through tapes are tape_rev.c's.  Contributions
 *      to one value from one op are summed before they are accumulated
 *      (x * x: (d * x) * 2), loads through one pointer and mask in one
 *      block share one atomic_add, and a store overwritten by a later
 *      store through the same pointer gets the gradient only on the lanes
 *      the later one leaves alone.  Loads from tensor descriptors (IF_DESC)
 *      keep their descriptor operands in the primal sweep; of the gradient
 *      writes only a plain store (one adder per element) becomes a store
 *      through a descriptor of the gradient, and the output-gradient load
 *      of a descriptor store into a pure output a descriptor load
 *      (desc_grad_access): atomics, read-modify-writes, fold partials and
 *      site rows stay pointer writes.
 *   3. the fold and site rows (write/fold.c: fold_inputs, site_inputs), then
 *      the Program's covers, cleared outputs and trusted buffers.
 *
 * Requires: a verified fwd.  Guarantees: the result is a new Func in `a`
 * (fwd is not modified) that verifies; or NULL with located errors.
 * Adjoints of fp16/bf16 values are carried in fp32 (adt()); every adjoint
 * value is named after its primal (`x` -> `dx`), shadow pointers `d_` +
 * name.
 */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "plan/plan.h"
#include "ad/autodiff.h"
#include "ad/ad.h"
#include "ad/ad_int.h"

/* ------------------------------------------------------------------ */
/* Primal sweep: clone without stores, with shadow pointers            */
/* ------------------------------------------------------------------ */

/* Emits a copy of `in` (attributes, result types, Loc) with new operands. */
Inst *emit_like(Ad *ad, Block *b, const Inst *in, const ValId *args)
{
    Type rt[1];
    if (in->nres)
        rt[0] = fty(ad, in->res[0]);
    ASSERT(in->nres <= 1);
    Inst *ni = ir_emit(ad->bw, b, (OpKind)in->op, args, in->nargs, rt, in->nres, in->loc);
    ir_inst_copy_attrs(ni, in);
    return ni;
}

static ValId *map_args(Ad *ad, const Inst *in, bool shadow)
{
    ValId *args = arena_alloc(ad->a, sizeof *args * (size_t)(in->nargs + 1));
    for (int k = 0; k < in->nargs; k++) {
        ValId v = in->args[k];
        args[k] = shadow && fty(ad, v).dt == DT_PTR ? S0(ad, v) : P0(ad, v);
    }
    return args;
}

/* New block parameter mirroring fw value v (primal or shadow). */
ValId param_like(Ad *ad, Block *b, ValId v, const char *prefix)
{
    const char *n = fname(ad, v);
    return ir_block_param_add(ad->bw, b, fty(ad, v), n ? arena_printf(ad->a, "%s%s", prefix, n) : NULL,
                              ad->fw->vals.v[v].loc);
}



/* Region ops (for, if, while) are rebuilt in bw with more operands and
 * results than in fw: after the forward's carried values come the shadows
 * of the carried pointers, and in adjoint regions the adjoints of outside
 * values.  These helpers fill and bind those lists in that one order, for
 * the primal sweep and the adjoint sweep alike. */

/* sh[i]: does carried slot i (carried by fw value vs[i]) need a shadow? */
bool *shadow_flags(Ad *ad, const ValId *vs, int n)
{
    bool *sh = arena_alloc(ad->a, (size_t)n + 1);
    for (int i = 0; i < n; i++)
        sh[i] = needs_shadow(ad, vs[i]);
    return sh;
}


Slots slots_new(Ad *ad, int cap)
{
    Slots s = {arena_alloc(ad->a, sizeof(ValId) * (size_t)(cap + 1)),
               arena_alloc(ad->a, sizeof(Type) * (size_t)(cap + 1)), 0, 0};
    return s;
}

/* Appends n carried slots: the primal copies of fw values fv[i] (except
 * those skip marks), then the shadows of those sh marks.  rt (fw values
 * whose types the results take) may be NULL for a terminator; fv may be
 * NULL for an `if`, whose results have no operands. */
void add_carried(Ad *ad, Slots *s, const ValId *fv, const ValId *rt, int n, const bool *skip,
                 const bool *sh)
{
    for (int shadow = 0; shadow < 2; shadow++)
        for (int i = 0; i < n; i++) {
            if (shadow ? !(sh && sh[i]) : skip && skip[i])
                continue;
            if (fv)
                s->args[s->na++] = shadow ? S0(ad, fv[i]) : P0(ad, fv[i]);
            if (rt)
                s->tys[s->nt++] = fty(ad, rt[i]);
        }
}

/* The parameters of a rebuilt region mirroring fr's: its first nlead (a
 * for's induction variable), the carried values' primal copies (those skip
 * marks get none: pm cleared), then the shadows of those sh marks. */
void add_params(Ad *ad, Block *reg, const Block *fr, int nlead, const bool *skip, const bool *sh)
{
    int n = fr->nparams - nlead;
    for (int i = 0; i < nlead; i++)
        ad->pm[fr->params[i]] = param_like(ad, reg, fr->params[i], "");
    for (int i = 0; i < n; i++) {
        ValId p = fr->params[nlead + i];
        ad->pm[p] = skip && skip[i] ? 0 : param_like(ad, reg, p, "");
    }
    for (int i = 0; i < n; i++)
        if (sh[i])
            ad->sm[fr->params[nlead + i]] = param_like(ad, reg, fr->params[nlead + i], "d_");
}

/* Maps in's results onto ni's: primal copies first, then the shadows of
 * the positions sh marks. */
void bind_results(Ad *ad, const Inst *in, const Inst *ni, const bool *sh)
{
    for (int i = 0, j = in->nres; i < in->nres; i++) {
        ad->pm[in->res[i]] = ni->res[i];
        name_after(ad, ni->res[i], "", in->res[i]);
        if (sh[i]) {
            ad->sm[in->res[i]] = ni->res[j];
            name_after(ad, ni->res[j++], "d_", in->res[i]);
        }
    }
}

/* Operands before the carried ones (for: lb, ub, step; if: the condition)
 * and region parameters before them (for: the induction variable). */
static int fixed_operands(const Inst *in) { return in->op == OP_FOR ? 3 : in->op == OP_IF ? 1 : 0; }
static int lead_params(const Inst *in) { return in->op == OP_FOR ? 1 : 0; }

/* The fw values that carry each result through the regions: they decide
 * which results get shadows. */
const ValId *carriers(const Inst *in)
{
    return in->op == OP_IF ? in->res : in->regions[0]->params + lead_params(in);
}

/* A for's tl.range hints on its copy in the backward, less warp_specialize:
 * the backward's loop body (adjoints, atomics) is not the one the user
 * specialized warps for. */
static void copy_loop_hints(Inst *dst, const Inst *src)
{
    if (src->op != OP_FOR || src->nints != LH_N)
        return;
    memcpy(dst->ints, src->ints, sizeof(int32_t) * LH_N);
    dst->nints = LH_N;
    dst->ints[LH_GIVEN] &= ~LHB_WARP_SPECIALIZE;
    dst->ints[LH_TRUE] &= ~LHB_WARP_SPECIALIZE;
}

/* for, if, while in the primal sweep: the same op over the copied regions,
 * carrying shadows next to the carried pointers. */
static void clone_region_op(Ad *ad, Block *bb, const Inst *in)
{
    TapeLoop *tw = in->op == OP_WHILE ? ad_tape_of(ad, in) : NULL;
    if (tw) {
        clone_tape_while(ad, bb, in, tw);
        return;
    }
    TapeLoop *tc = in->op == OP_FOR ? ad_tape_of(ad, in) : NULL;
    if (tc && tc->ckpt && !tc->revolve) /* the segment length, for the checkpoints the primal sweep records */
        tc->kv = tape_seg_len(ad, bb, tape_trips(ad, bb, in), in->loc);
    int n = in->nres, nfix = fixed_operands(in);
    bool *sh = shadow_flags(ad, carriers(in), n);
    Slots s = slots_new(ad, nfix + 2 * n);
    for (int i = 0; i < nfix; i++)
        s.args[s.na++] = P0(ad, in->args[i]);
    add_carried(ad, &s, in->op == OP_IF ? NULL : in->args + nfix, in->res, n, NULL, sh);
    ir_emit(ad->bw, bb, (OpKind)in->op, s.args, s.na, s.tys, s.nt, in->loc);
    int idx = bb->insts.n - 1;
    copy_loop_hints(&bb->insts.v[idx], in);
    if (in->op == OP_FOR)
        bb->insts.v[idx].sattr = in->sattr; /* ad_gauge.c's tag of a two-pass loop (ad_gauge_fuse) */
    for (int r = 0; r < in->nregions; r++) {
        Block *reg = ir_inst_add_region(ad->bw, &bb->insts.v[idx]);
        add_params(ad, reg, in->regions[r], lead_params(in), NULL, sh);
        TapeLoop *tl = in->op == OP_FOR ? ad_tape_of(ad, in) : NULL;
        if (tl && !tl->revolve) /* revolve: the plan recomputes from the initial values */
            tape_emit_record(ad, reg, tl);
        clone_block(ad, in->regions[r], reg, CL_YIELD, sh);
    }
    bind_results(ad, in, &bb->insts.v[idx], sh);
}

/* The shadow of pointer v's selection (a candidate without a gradient
 * takes the other side's shadow) and where it is real: vm, or a constant. */
static ValId shadow_or(Ad *ad, ValId v, ValId other)
{
    return ad->sm[v] ? ad->sm[v] : S0(ad, other);
}
/* Where the shadow of where(c, a, b) is real, with c the primal
 * condition: where(c, va, vb) written without constant operands (va, vb:
 * the operands' vm, or all / no lanes). */
static ValId valid_select(Ad *ad, Block *bb, ValId c, ValId a, ValId b, Loc loc)
{
    Func *f = ad->bw;
    Type t = bty(ad, c);
    ValId va = ad->vm[a], vb = ad->vm[b];
    int ka = va ? -1 : ad->sm[a] ? 1 : 0, kb = vb ? -1 : ad->sm[b] ? 1 : 0;
    ValId nc = ka == 0 || kb == 1 ? ir_op1(f, bb, OP_NOT, t, c, loc) : 0;
    if (ka >= 0 && kb >= 0) /* (1, 0) or (0, 1): both 1 has no vm */
        return ka ? c : nc;
    if (ka >= 0)
        return ka ? ir_op2(f, bb, OP_OR, t, c, vb, loc) : ir_op2(f, bb, OP_AND, t, nc, vb, loc);
    if (kb >= 0)
        return kb ? ir_op2(f, bb, OP_OR, t, nc, va, loc) : ir_op2(f, bb, OP_AND, t, c, va, loc);
    return ir_op3(f, bb, OP_WHERE, t, c, va, vb, loc);
}

/* The shadow of the pointer in->res[0] (a pointer into a differentiated
 * buffer): the same op over the operands' shadows.  A `where` between
 * pointers of which one has no shadow (a non-differentiated parameter's)
 * takes the other's shadow on those lanes, and records in vm which lanes
 * are real; address arithmetic and shape ops carry vm along (the same
 * shape op on the i1 tile; addptr and hints keep it). */
static void clone_shadow(Ad *ad, Block *bb, const Inst *in)
{
    ValId fr = in->res[0];
    ValId *sargs;
    if (in->op == OP_WHERE) {
        ValId a = in->args[1], b = in->args[2];
        sargs = arena_alloc(ad->a, sizeof *sargs * 3);
        sargs[0] = P0(ad, in->args[0]);
        sargs[1] = shadow_or(ad, a, b);
        sargs[2] = shadow_or(ad, b, a);
        if (ad->vm[a] || ad->vm[b] || !ad->sm[a] || !ad->sm[b])
            ad->vm[fr] = valid_select(ad, bb, sargs[0], a, b, in->loc);
    } else {
        sargs = map_args(ad, in, true);
        ValId v0 = ad->vm[in->args[0]];
        if (v0 && (in->op == OP_ADDPTR || in->op == OP_MULTIPLE_OF || in->op == OP_MAX_CONTIGUOUS)) {
            ad->vm[fr] = v0;
        } else if (v0) { /* a shape op (ad_analysis: pointers derive only through these) */
            Type t = type_with_dtype(fty(ad, fr), DT_I1);
            Inst *ni = ir_emit(ad->bw, bb, (OpKind)in->op, &v0, 1, &t, 1, in->loc);
            ni->flags = in->flags;
            ni->ival = in->ival;
            memcpy(ni->ints, in->ints, sizeof ni->ints);
            ni->nints = in->nints;
            ad->vm[fr] = ni->res[0];
        }
    }
    Inst *ni = emit_like(ad, bb, in, sargs);
    ad->sm[fr] = ni->res[0];
    name_after(ad, ni->res[0], "d_", fr);
}

/* A closed combine region's body (fr) copied into rb, its values renamed
 * through m (fr's params already mapped); the yield at yloc, or at each
 * instruction's own location when yloc is NULL. */
void copy_combine_body(Ad *ad, Block *rb, const Block *fr, ValId *m, const Loc *yloc)
{
    for (int k = 0; k < fr->insts.n; k++) {
        const Inst *c = &fr->insts.v[k];
        ValId *args = arena_alloc(ad->a, sizeof *args * (size_t)(c->nargs + 1));
        for (int j = 0; j < c->nargs; j++)
            args[j] = m[c->args[j]];
        Inst *nc = c->op == OP_YIELD ? ir_emit(ad->bw, rb, OP_YIELD, args, c->nargs, NULL, 0, yloc ? *yloc : c->loc)
                                     : emit_like(ad, rb, c, args);
        if (c->nres == 1)
            m[c->res[0]] = nc->res[0];
    }
}

/* A scan in the primal sweep: the same op over the primal operands, its
 * closed combine region copied with fresh values. */
static void clone_scan(Ad *ad, Block *bb, const Inst *in)
{
    Func *f = ad->bw;
    const Block *fr = in->regions[0];
    Type *rt = arena_alloc(ad->a, sizeof *rt * (size_t)in->nres);
    for (int i = 0; i < in->nres; i++)
        rt[i] = fty(ad, in->res[i]);
    Inst *ni = ir_emit(f, bb, (OpKind)in->op, map_args(ad, in, false), in->nargs, rt, in->nres, in->loc);
    ni->ival = in->ival;
    ni->flags = in->flags;
    ValId *res = ni->res;
    Block *rb = ir_inst_add_region(f, ni);
    ValId *m = arena_alloc(ad->a, sizeof *m * (size_t)ad->fw->vals.n);
    for (int i = 0; i < fr->nparams; i++)
        m[fr->params[i]] = ir_block_param_add(f, rb, fty(ad, fr->params[i]), fname(ad, fr->params[i]),
                                              ad->fw->vals.v[fr->params[i]].loc);
    copy_combine_body(ad, rb, fr, m, NULL);
    for (int i = 0; i < in->nres; i++) {
        ad->pm[in->res[i]] = res[i];
        name_after(ad, res[i], "", in->res[i]);
    }
}

/* A top-level loop of the forward whose results the saving forward stored
 * (AdSpec.save, ad_save.c): its used results loaded from this program's
 * slot of the kad_saved parameter (the forward's last) instead of running
 * the loop.  False (nothing emitted) for a loop the plan does not hold, or
 * one the primal sweep must run to record its tape. */
static bool load_saved(Ad *ad, Block *bb, int k)
{
    const Inst *in = &ad->fw->body->insts.v[k];
    const int64_t *off = save_offsets(ad->a, ad->spec->save, ad->fw, k);
    if (!off || ad_tape_of(ad, in))
        return false;
    Func *f = ad->bw;
    if (!ad->saved_base) {
        ValId p = P0(ad, ad->fw->params[ad->fw->nparams - 1]);
        ad->saved_base = ir_op2(f, bb, OP_ADDPTR, bty(ad, p), p,
                                save_slot_at(f, bb, 0, ad->spec->save->slot, in->loc), in->loc);
    }
    for (int i = 0; i < in->nres; i++) {
        if (off[i] < 0)
            continue;
        Type vt = fty(ad, in->res[i]);
        ValId ptr = save_elems(f, bb, ad->saved_base, vt, off[i], in->loc);
        Type lt = type_with_dtype(vt, DT_F32);
        ValId v = ir_emit(f, bb, OP_LOAD, &ptr, 1, &lt, 1, in->loc)->res[0];
        if (vt.dt != DT_F32)
            v = ir_op1(f, bb, OP_CAST, vt, v, in->loc);
        ad->pm[in->res[i]] = v;
        name_after(ad, v, "", in->res[i]);
    }
    return true;
}

/* A pure value of fb defined at or after instruction k (the pointer and mask of a store that a
 * trusted load, before it, needs), emitted into bb now with what it depends on; done marks the
 * instructions emitted so, which clone_block then skips.  Earlier values are already mapped. */
static ValId clone_early(Ad *ad, const Block *fb, Block *bb, int k, ValId v, uint8_t *done)
{
    const Inst *in = ad->def[v];
    if (!in || in < fb->insts.v || in >= fb->insts.v + fb->insts.n || in - fb->insts.v < k)
        return ad->pm[v];
    int j = (int)(in - fb->insts.v);
    if (done[j])
        return ad->pm[v];
    ASSERT(in->nres == 1 && !in->nregions && op_info[in->op].pure && !op_writes_memory(in->op) && in->op != OP_LOAD);
    for (int i = 0; i < in->nargs; i++)
        clone_early(ad, fb, bb, k, in->args[i], done);
    ValId *args = map_args(ad, in, false);
    Inst *ni = emit_like(ad, bb, in, args);
    ad->pm[v] = ni->res[0];
    name_after(ad, ni->res[0], "", v);
    if (needs_shadow(ad, v))
        clone_shadow(ad, bb, in);
    done[j] = 1;
    return ad->pm[v];
}

/* Whether clone_early can emit v before instruction k of fb: defined before it, or by pure ops. */
static bool early_ok(const Ad *ad, const Block *fb, int k, ValId v, int depth)
{
    const Inst *in = ad->def[v];
    if (!in || in < fb->insts.v || in >= fb->insts.v + fb->insts.n || in - fb->insts.v < k)
        return true;
    if (depth > 64 || in->nres != 1 || in->nregions || !op_info[in->op].pure || op_writes_memory(in->op) ||
        in->op == OP_LOAD || in->op == OP_CUSTOM_VJP || in->op == OP_CUSTOM_JVP || in->op == OP_STOP_GRADIENT)
        return false;
    for (int i = 0; i < in->nargs; i++)
        if (!early_ok(ad, fb, k, in->args[i], depth + 1))
            return false;
    return true;
}

/* The trusted value t (ad_trust.c) at instruction k of fb: loaded from where its store put it,
 * under the store's mask, with t->other off it. */
static void load_trusted(Ad *ad, const Block *fb, Block *bb, int k, const TrustVal *t, uint8_t *done)
{
    const Inst *st = t->store;
    ValId args[3];
    int na = 1;
    unsigned flags = 0;
    args[0] = clone_early(ad, fb, bb, k, st->args[0], done);
    Type vt = fty(ad, t->v), lt = vt;
    if (t->narrow)
        lt.dt = (uint8_t)t->narrow;
    if (t->mask) {
        args[na++] = clone_early(ad, fb, bb, k, t->mask, done);
        args[na++] = ir_const_float(ad->bw, bb, lt, t->other, st->loc);
        flags = IF_HAS_MASK | IF_HAS_OTHER;
    }
    Inst *ld = ir_emit(ad->bw, bb, OP_LOAD, args, na, &lt, 1, ad->def[t->v]->loc);
    ld->flags = flags;
    if (t->narrow) /* the stored y rounded to the buffer's type, back in v's */
        ld = ir_emit(ad->bw, bb, OP_CAST, &ld->res[0], 1, &vt, 1, ad->def[t->v]->loc);
    ad->pm[t->v] = ld->res[0];
    name_after(ad, ld->res[0], "", t->v);
}

/* Copies fb into bb: stores and (scratch) atomics dropped, shadows made
 * for pointers into differentiated buffers, region-carried shadows added.
 * CL_YIELD: copy fb's terminating yield, extended by the shadows of the
 * positions ysh marks (else the caller writes the terminator).
 * CL_SKIP_CHAIN: leave out linear-accumulator chains (adjoint loops). */
void clone_block(Ad *ad, const Block *fb, Block *bb, unsigned mode, const bool *ysh)
{
    uint8_t *done = NULL; /* instructions clone_early emitted already (trusted loads) */
    for (int k = 0; k < fb->insts.n; k++) {
        const Inst *in = &fb->insts.v[k];
        if (done && done[k])
            continue;
        if (ad->trust && in->nres == 1 && ad->trust[in->res[0]] && ad->trust[in->res[0]]->block == fb) {
            const TrustVal *t = ad->trust[in->res[0]];
            if (early_ok(ad, fb, k, t->store->args[0], 0) && (!t->mask || early_ok(ad, fb, k, t->mask, 0))) {
                if (!done)
                    done = arena_alloc(ad->a, (size_t)fb->insts.n);
                load_trusted(ad, fb, bb, k, t, done);
                continue;
            }
            ad->trust[in->res[0]] = NULL; /* recomputed after all: its rule as written */
        }
        switch (in->op) {
        case OP_STORE:
        case OP_ATOMIC_ADD:
        case OP_ATOMIC_MAX:
        case OP_ATOMIC_MIN:
        case OP_ATOMIC_XCHG:
            continue; /* validated: outputs and scratch only, atomic results unused */
        case OP_FOR:
            if (fb == ad->fw->body && ad->spec->save && load_saved(ad, bb, k))
                continue;
            clone_region_op(ad, bb, in);
            continue;
        case OP_IF:
        case OP_WHILE:
            clone_region_op(ad, bb, in);
            continue;
        case OP_CUSTOM_VJP:
        case OP_CUSTOM_JVP:
        case OP_STOP_GRADIENT: /* identities: the primal is operand 0's */
            ad->pm[in->res[0]] = P0(ad, in->args[0]);
            continue;
        case OP_SCAN:
        case OP_REDUCE:
            clone_scan(ad, bb, in);
            continue;
        case OP_YIELD: {
            if (!(mode & CL_YIELD))
                continue;
            Slots s = slots_new(ad, 2 * in->nargs);
            add_carried(ad, &s, in->args, NULL, in->nargs, NULL, ysh);
            ir_emit(ad->bw, bb, OP_YIELD, s.args, s.na, NULL, 0, in->loc);
            continue;
        }
        default:
            break;
        }
        if ((mode & CL_SKIP_CHAIN) && in->nres == 1 && ad->chain[in->res[0]])
            continue;
        ValId *args = map_args(ad, in, false);
        Inst *ni = emit_like(ad, bb, in, args);
        if (in->nres == 1) {
            ValId r = ni->res[0], fr = in->res[0];
            ad->pm[fr] = r;
            name_after(ad, r, "", fr);
            if (needs_shadow(ad, fr))
                clone_shadow(ad, bb, in);
        }
    }
}

/* Does the adjoint of `in` (or of a region inside it) do anything? */
static bool block_needs_adj(const Ad *ad, const Block *b);
static bool inst_needs_adj(const Ad *ad, const Inst *in)
{
    for (int i = 0; i < in->nres; i++)
        if (ad_active(ad, in->res[i]))
            return true;
    if ((in->op == OP_STORE || in->op == OP_ATOMIC_ADD) && ad_role_writes(ad_root_role(ad, in->args[0])) &&
        ad_active(ad, in->args[1]))
        return true;
    if (in->op == OP_STORE && ad_root_role(ad, in->args[0]) == AD_ROLE_INOUT) /* clears d_<name> */
        return true;
    if (in->op == OP_YIELD)
        for (int i = 0; i < in->nargs; i++)
            if (ad_active(ad, in->args[i]))
                return true;
    for (int r = 0; r < in->nregions; r++)
        if (block_needs_adj(ad, in->regions[r]))
            return true;
    return false;
}
static bool block_needs_adj(const Ad *ad, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++)
        if (inst_needs_adj(ad, &b->insts.v[i]))
            return true;
    return false;
}

static void collect_uses(Ad *ad, const Block *b, int id, ValVec *out)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nargs; k++) {
            ValId v = in->args[k];
            if (ad_active(ad, v) && ad->stamp[v] != id && ad->seen[v] != id) {
                ad->seen[v] = id;
                vec_push(ad->a, *out, v);
            }
        }
        for (int r = 0; r < in->nregions; r++)
            collect_uses(ad, in->regions[r], id, out);
    }
}

/* The active values defined outside `in`'s regions and used inside them:
 * their adjoints flow out of the adjoint region as its results. */
ValVec collect_outside(Ad *ad, const Inst *in)
{
    ValVec out = {0};
    int id = ++ad->gen;
    for (int r = 0; r < in->nregions; r++)
        ad_mark_defs(ad, in->regions[r], id);
    for (int r = 0; r < in->nregions; r++)
        collect_uses(ad, in->regions[r], id, &out);
    return out;
}

/* A region parameter carrying the adjoint of fw value v: its adjoint type
 * (fp32 for fp16/bf16 values), named after v. */
ValId adj_param(Ad *ad, Block *reg, ValId v)
{
    const char *n = fname(ad, v);
    return ir_block_param_add(ad->bw, reg, adt(fty(ad, v)), n ? arena_printf(ad->a, "d%s", n) : NULL,
                              ad->fw->vals.v[v].loc);
}

/* The current adjoint of v, or a zero of its adjoint type. */
ValId adj_or_zero(Em *e, ValId v)
{
    return e->ad->adj[v] ? e->ad->adj[v] : ezero(e, adt(fty(e->ad, v)));
}

/* Appends the adjoints of L (zeros where none yet) as operands and their
 * adjoint types as result types. */
void add_adjoints(Em *e, Slots *s, ValVec L)
{
    for (int j = 0; j < L.n; j++) {
        s->args[s->na++] = adj_or_zero(e, L.v[j]);
        s->tys[s->nt++] = adt(fty(e->ad, L.v[j]));
    }
}

/* The terminating yield of an adjoint region: the carried slots as in
 * add_carried (n of them, from the forward yield yi), then the adjoints of
 * L. */
static void adjoint_yield(Em *e, const Inst *yi, int n, const bool *skip, const bool *sh, ValVec L)
{
    Slots s = slots_new(e->ad, 2 * n + L.n);
    add_carried(e->ad, &s, n ? yi->args : NULL, NULL, n, skip, sh);
    add_adjoints(e, &s, L);
    ir_emit(e->ad->bw, e->b, OP_YIELD, s.args, s.na, NULL, 0, e->loc);
}

/* The adjoints of L become the last L.n results of ni. */
void bind_adjoints(Ad *ad, const Inst *ni, ValVec L)
{
    for (int j = 0; j < L.n; j++) {
        ValId v = ni->res[ni->nres - L.n + j];
        ad->adj[L.v[j]] = v;
        name_after(ad, v, "d", L.v[j]);
    }
}


/* if c: the adjoint is an `if` on the same condition; each side recomputes
 * its primal body, seeds the yielded values with the results' adjoints and
 * runs its adjoint; the adjoints of outside values leave as results. */
static void adj_if(Ad *ad, Block *bb, const Inst *in)
{
    if (!inst_needs_adj(ad, in))
        return;
    ValVec L = collect_outside(ad, in);
    ValId *saved = arena_alloc(ad->a, sizeof *saved * (size_t)(L.n + 1));
    Slots s = slots_new(ad, L.n);
    for (int j = 0; j < L.n; j++) {
        saved[j] = ad->adj[L.v[j]];
        s.tys[s.nt++] = adt(fty(ad, L.v[j]));
    }
    ValId c = P0(ad, in->args[0]);
    ir_emit(ad->bw, bb, OP_IF, &c, 1, s.tys, s.nt, in->loc);
    int idx = bb->insts.n - 1;
    for (int r = 0; r < 2; r++) {
        const Block *fr = in->regions[r];
        Block *reg = ir_inst_add_region(ad->bw, &bb->insts.v[idx]);
        for (int j = 0; j < L.n; j++) /* each side starts from the adjoints before the if */
            ad->adj[L.v[j]] = saved[j];
        clone_block(ad, fr, reg, 0, NULL);
        Em e = em_rev(ad, reg, in->loc);
        const Inst *yi = ad_block_term(fr);
        for (int i = 0; i < in->nres; i++)
            if (ad_active(ad, in->res[i]))
                accum(&e, yi->args[i], ad->adj[in->res[i]]);
        adj_block(ad, fr, reg);
        adjoint_yield(&e, yi, 0, NULL, NULL, L);
    }
    bind_adjoints(ad, &bb->insts.v[idx], L);
}

/* for and while.  A for's differentiated carried values are linear
 * accumulators (validated), a while has none.  The adjoint loop runs
 * forward over the same iterations, recomputing each iteration's body
 * (chains left out) with the non-differentiated carried values (pointers,
 * counters) carried again, and applies the body's adjoint with the
 * constant adjoint of each accumulator.  The adjoints of outside values
 * are carried too and leave as results.  A while's condition region is
 * recomputed as it is. */
static void adj_loop(Ad *ad, Block *bb, const Inst *in)
{
    if (!inst_needs_adj(ad, in))
        return;
    TapeLoop *tl = ad_tape_of(ad, in);
    if (tl) {
        adj_tape_loop(ad, bb, in, tl);
        return;
    }
    int n = in->nres, nfix = fixed_operands(in);
    const ValId *car = carriers(in);
    const Block *body = in->regions[in->nregions - 1];
    bool *sh = shadow_flags(ad, car, n);
    bool *diff = arena_alloc(ad->a, (size_t)n + 1);
    ValId *dres = arena_alloc(ad->a, sizeof *dres * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        diff[i] = ad_active(ad, car[i]) || ad_active(ad, in->res[i]);
        dres[i] = diff[i] ? ad->adj[in->res[i]] : 0;
    }
    ValVec L = collect_outside(ad, in);
    Em eo = em_rev(ad, bb, in->loc);
    Slots s = slots_new(ad, nfix + 2 * n + L.n);
    for (int i = 0; i < nfix; i++)
        s.args[s.na++] = P0(ad, in->args[i]);
    add_carried(ad, &s, in->args + nfix, in->res, n, diff, sh);
    add_adjoints(&eo, &s, L);
    ir_emit(ad->bw, bb, (OpKind)in->op, s.args, s.na, s.tys, s.nt, in->loc);
    int idx = bb->insts.n - 1;
    copy_loop_hints(&bb->insts.v[idx], in);
    if (in->op == OP_FOR)
        bb->insts.v[idx].sattr = in->sattr; /* ad_gauge.c's tag of a two-pass loop (ad_gauge_fuse) */
    for (int r = 0; r < in->nregions; r++) {
        const Block *fr = in->regions[r];
        Block *reg = ir_inst_add_region(ad->bw, &bb->insts.v[idx]);
        add_params(ad, reg, fr, lead_params(in), diff, sh);
        for (int j = 0; j < L.n; j++)
            ad->adj[L.v[j]] = adj_param(ad, reg, L.v[j]);
        if (fr != body) {
            clone_block(ad, fr, reg, CL_YIELD, NULL); /* ends in `condition` */
            continue;
        }
        for (int k = 0; k < fr->insts.n; k++) /* chain values are never recomputed */
            if (fr->insts.v[k].nres == 1 && ad->chain[fr->insts.v[k].res[0]])
                ad->pm[fr->insts.v[k].res[0]] = 0;
        clone_block(ad, fr, reg, CL_SKIP_CHAIN, NULL);
        Em e = em_rev(ad, reg, in->loc);
        const Inst *yi = ad_block_term(fr);
        for (int i = 0; i < n; i++)
            if (dres[i])
                accum(&e, yi->args[i], dres[i]);
        adj_block(ad, fr, reg);
        adjoint_yield(&e, yi, n, diff, sh, L);
    }
    bind_adjoints(ad, &bb->insts.v[idx], L);
    /* The initial value reaches the result through the chain: d(init) = d(result). */
    for (int i = 0; i < n; i++)
        if (dres[i])
            accum(&eo, in->args[nfix + i], dres[i]);
}

/* Memory: a store (or atomic_add) to an output reads the output's
 * gradient; a load from a differentiated input adds its adjoint into the
 * input's gradient.  store and atomic_add share the operand layout
 * (ptr, value [, mask]).
 *
 * The store at position k of fb may be overwritten by later stores of fb
 * through the same pointer (ad_validate.c accepts no other repeated
 * stores): the output keeps the last write of each lane, so this value
 * gets the gradient only on the lanes no later store writes --
 * where(mask2, 0, load(d_y, mask1)) -- and none at all after a later
 * unmasked store. */
static void desc_grad_access(Ad *ad, Inst *st, const Inst *in, bool ok);

static void adj_store(Ad *ad, Block *bb, const Block *fb, int k)
{
    const Inst *in = &fb->insts.v[k];
    ValId p = in->args[0], v = in->args[1];
    int role = ad_root_role(ad, p);
    /* In place: d_<name> turns from the gradient of the value after the
     * launch into that of the value before it, so the store, having read
     * the gradient of what it wrote, clears it there (the old value does
     * not reach those elements; loads add theirs afterwards).  An
     * atomic_add passes the old value through: nothing to clear. */
    int root = ad->root[p];
    bool clear = (role == AD_ROLE_INOUT || (role == AD_ROLE_OUT && root > 0 && ad->cleared[root - 1])) &&
                 in->op == OP_STORE;
    if (!ad_role_writes(role) || (!ad_active(ad, v) && !clear))
        return;
    if (in->op == OP_STORE && ad_store_overwritten(fb, k))
        return; /* (a later unmasked store cleared these elements) */
    Em e = em_rev(ad, bb, in->loc);
    Type pt = fty(ad, p);
    Type lt = type_tile((Dtype)pt.elem, pt.rank, pt.shape);
    ValId m = in->flags & IF_HAS_MASK ? P0(ad, in->args[2]) : 0;
    if (ad_active(ad, v)) {
        ValId args[3] = {S0(ad, p), 0, 0};
        if (ad->vm[p]) /* lanes selecting a non-differentiated buffer: no gradient */
            m = m ? e2(&e, OP_AND, m, ad->vm[p]) : ad->vm[p];
        int n = 1;
        uint16_t flags = 0;
        if (m) {
            args[n++] = m;
            args[n++] = ezero(&e, lt); /* masked-off lanes were never written: no gradient */
            flags = IF_HAS_MASK | IF_HAS_OTHER;
        }
        Inst *ld = ir_emit(ad->bw, bb, OP_LOAD, args, n, &lt, 1, in->loc);
        ld->flags = flags;
        /* a descriptor store's output gradient is read through a descriptor of d_y (its
         * bounds are the store's mask; `other` 0 is the zero padding), only for a pure output:
         * an in-place one's gradient is cleared and added into by this kernel, and a TMA load
         * completes asynchronously, past the barriers that order those */
        desc_grad_access(ad, ld, in, role == AD_ROLE_OUT && (in->flags & IF_HAS_MASK) && !ad->vm[p]);
        ValId r = ld->res[0];
        if (m) /* masked-off lanes get nothing */
            zm_set(ad, r, e1(&e, OP_NOT, m), false);
        for (int j = k + 1; in->op == OP_STORE && j < fb->insts.n; j++) {
            const Inst *o = &fb->insts.v[j];
            if (o->op == OP_STORE && o->args[0] == p) /* masked (else overwritten above) */
                r = eselect(&e, P0(ad, o->args[2]), r, false);
        }
        name_after(ad, r, "d", v);
        accum(&e, v, r);
    }
    if (clear) {
        /* The reads of these gradient elements (above, and at sites the
         * reverse walk passed earlier) and the loads' atomic_adds into them
         * (later) are ordered around the clear in this program, but Triton
         * may give them to other threads than the clearing store: their
         * operands' layouts differ.  On a GPU a read could then see the
         * zero, or an add be wiped by it (seen on an H100: FlagGems'
         * fused_add_rms_norm lost the residual's gradient on 127 of 300
         * columns).  Barriers on both sides order them. */
        ir_emit(ad->bw, bb, OP_BARRIER, NULL, 0, NULL, 0, in->loc);
        ValId args[3] = {S0(ad, p), ezero(&e, lt), m};
        Inst *st = ir_emit(ad->bw, bb, OP_STORE, args, m ? 3 : 2, NULL, 0, in->loc);
        st->flags = m ? IF_HAS_MASK : 0;
        ir_emit(ad->bw, bb, OP_BARRIER, NULL, 0, NULL, 0, in->loc);
    }
}

/* Load sites of one block that share the pointer and the mask (the same
 * ValIds: the same addresses, the same live lanes) add their adjoints up
 * in registers, and only the earliest site -- the last one the reverse
 * walk reaches -- issues the atomic_add: one sweep over the gradient
 * instead of one per site. */
typedef struct PendingLoad {
    ValId p, mask; /* fw pointer and mask (0: unmasked) */
    ValId sum;     /* bw: the later sites' adjoints so far, or 0 */
} PendingLoad;
typedef Vec(PendingLoad) PendingVec;

/* Does a load before position k of fb read through p under mask m? */
static bool earlier_load(const Block *fb, int k, ValId p, ValId m)
{
    for (int j = 0; j < k; j++) {
        const Inst *o = &fb->insts.v[j];
        if (o->op == OP_LOAD && o->args[0] == p && (o->flags & IF_HAS_MASK ? o->args[1] : 0) == m)
            return true;
    }
    return false;
}

/* The gradient access st of descriptor access `in` (a load's plain
 * adjoint store, or a store's output-gradient load; the gradient laid out
 * like the base) made through the descriptor of the gradient: in's
 * descriptor operands, the base's shadow for the base (ir.h,
 * ir_desc_at).  Only where ok (st's mask is in's own, and the caller's
 * conditions); the other gradient accesses (atomics, read-modify-writes,
 * fold partials, site rows, in-place outputs) stay pointer accesses. */
static void desc_grad_access(Ad *ad, Inst *st, const Inst *in, bool ok)
{
    if (!(in->flags & IF_DESC) || !ok)
        return;
    int at = ir_desc_at(in), r = ir_desc_rank(in);
    ValId base = in->args[at];
    if (base <= 0 || !ad->sm[base])
        return;
    ValId *args = arena_alloc(ad->a, sizeof *args * (size_t)(st->nargs + 3 * r));
    memcpy(args, st->args, sizeof *args * (size_t)st->nargs);
    args[st->nargs] = ad->sm[base];
    for (int k = 1; k < 3 * r; k++) {
        ValId v = in->args[at + k];
        if (v <= 0 || !ad->pm[v])
            return; /* not recomputed here: a pointer store */
        args[st->nargs + k] = ad->pm[v];
    }
    st->args = args;
    st->nargs += 3 * r;
    st->flags |= IF_DESC;
}

/* The load at position k of fb. */
static void adj_load(Ad *ad, Block *bb, const Block *fb, int k, PendingVec *pending)
{
    const Inst *in = &fb->insts.v[k];
    ValId p = in->args[0], x = in->res[0], d = ad_active(ad, x) ? ad->adj[x] : 0;
    ValId m = in->flags & IF_HAS_MASK ? in->args[1] : 0;
    Em e = em_rev(ad, bb, in->loc);
    if (d && (in->flags & IF_HAS_OTHER) && ad_active(ad, in->args[2])) /* masked-off lanes came from `other` */
        accum(&e, in->args[2], ewhere(&e, P0(ad, m), ec(&e, d, 0.0), d));
    if (!ad_role_reads(ad_root_role(ad, p)))
        return;
    PendingLoad *pl = NULL;
    for (int i = 0; i < pending->n; i++)
        if (pending->v[i].p == p && pending->v[i].mask == m)
            pl = &pending->v[i];
    ValId sum = pl ? pl->sum : 0;
    if (d)
        sum = sum ? e2(&e, OP_ADD, sum, d) : d;
    if (earlier_load(fb, k, p, m)) {
        if (pl)
            pl->sum = sum;
        else
            vec_push(ad->a, *pending, ((PendingLoad){p, m, sum}));
        return;
    }
    if (!sum)
        return;
    Type pt = fty(ad, p);
    ValId bm = m ? P0(ad, m) : 0;
    if (ad->vm[p]) /* lanes selecting a non-differentiated buffer: nothing to add */
        bm = bm ? e2(&e, OP_AND, bm, ad->vm[p]) : ad->vm[p];
    ValId args[3] = {S0(ad, p), ecast(&e, sum, (Dtype)pt.elem), bm};
    int r = ad->root[p], plain = r > 0 ? ad->plain[r - 1] : 0;
    if (plain == 3 || plain >= 6) /* an atomic_add here, which ad_fold or ad_site_rows turns into partials */
        plain = 0;
    bool scat = ad->scat && ad->scat[in->res[0]];
    if (scat) /* a scattered site: an atomic_add that ad_scatter_split moves into a kernel after this one */
        plain = 0;
    if (plain == 4 || plain == 5) { /* several sites, private to the program: read-modify-write (private_sites) */
        Block *wb = bb, *fb2 = bb;
        if (plain == 5) {
            ir_emit(ad->bw, bb, OP_IF, &ad->flag[r - 1], 1, NULL, 0, in->loc);
            int idx = bb->insts.n - 1;
            wb = ir_inst_add_region(ad->bw, &bb->insts.v[idx]);
            fb2 = ir_inst_add_region(ad->bw, &bb->insts.v[idx]);
        }
        Type vt = type_tile((Dtype)pt.elem, pt.rank, pt.shape);
        if (ad->first[r - 1] == in && ad->vm[p]) /* not the load's own mask: it may not store every element */
            ad->first[r - 1] = NULL;
        if (ad->first[r - 1] == in) { /* the first site: it stores what later sites read (first_writer) */
            Inst *st = ir_emit(ad->bw, wb, OP_STORE, args, bm ? 3 : 2, NULL, 0, in->loc);
            st->flags = bm ? IF_HAS_MASK : 0;
            ad->wrote[r - 1] = 1;
        } else {
            ir_emit(ad->bw, wb, OP_BARRIER, NULL, 0, NULL, 0, in->loc)->ival = ad->rmw_lanes[r - 1];
            ValId la[3] = {args[0], bm, ir_const_float(ad->bw, wb, vt, 0.0, in->loc)};
            Inst *ld = ir_emit(ad->bw, wb, OP_LOAD, la, bm ? 3 : 1, &vt, 1, in->loc);
            ld->flags = bm ? IF_HAS_MASK | IF_HAS_OTHER : 0;
            ValId old = ld->res[0];
            Type st32 = adt(vt);
            ValId sum32 = ir_op2(ad->bw, wb, OP_ADD, st32,
                                 st32.dt == vt.dt ? old : ir_op1(ad->bw, wb, OP_CAST, st32, old, in->loc),
                                 st32.dt == bty(ad, sum).dt ? sum : ir_op1(ad->bw, wb, OP_CAST, st32, sum, in->loc),
                                 in->loc);
            ValId sa[3] = {args[0], st32.dt == vt.dt ? sum32 : ir_op1(ad->bw, wb, OP_CAST, vt, sum32, in->loc), bm};
            Inst *st = ir_emit(ad->bw, wb, OP_STORE, sa, bm ? 3 : 2, NULL, 0, in->loc);
            st->flags = bm ? IF_HAS_MASK : 0;
            ir_emit(ad->bw, wb, OP_BARRIER, NULL, 0, NULL, 0, in->loc)->ival = ad->rmw_lanes[r - 1];
        }
        if (plain == 5) {
            Inst *at = ir_emit(ad->bw, fb2, OP_ATOMIC_ADD, args, bm ? 3 : 2, &vt, 1, in->loc);
            at->flags = bm ? IF_HAS_MASK : 0;
            ir_emit(ad->bw, wb, OP_YIELD, NULL, 0, NULL, 0, in->loc);
            ir_emit(ad->bw, fb2, OP_YIELD, NULL, 0, NULL, 0, in->loc);
        }
        return;
    }
    Block *sb = bb, *ab = bb;
    if (plain == 2) { /* if flag: store, else: atomic_add */
        ir_emit(ad->bw, bb, OP_IF, &ad->flag[r - 1], 1, NULL, 0, in->loc);
        int idx = bb->insts.n - 1;
        sb = ir_inst_add_region(ad->bw, &bb->insts.v[idx]);
        ab = ir_inst_add_region(ad->bw, &bb->insts.v[idx]);
    }
    if (plain) { /* each element has this one adder (ad_plain_inputs) */
        Inst *st = ir_emit(ad->bw, sb, OP_STORE, args, bm ? 3 : 2, NULL, 0, in->loc);
        st->flags = bm ? IF_HAS_MASK : 0;
        desc_grad_access(ad, st, in, bm && !ad->vm[p]);
        if (ad->vm[p]) /* not the load's own mask: access_cover does not describe it */
            ad->cover[r - 1] = NULL;
        else
            ad->wrote[r - 1] = 1;
    }
    if (plain != 1) {
        Type rt = type_tile((Dtype)pt.elem, pt.rank, pt.shape);
        Inst *at = ir_emit(ad->bw, ab, OP_ATOMIC_ADD, args, bm ? 3 : 2, &rt, 1, in->loc);
        at->flags = bm ? IF_HAS_MASK : 0;
        if (scat)
            at->sattr = AD_SCATTER_MARK;
    }
    if (plain == 2) {
        ir_emit(ad->bw, sb, OP_YIELD, NULL, 0, NULL, 0, in->loc);
        ir_emit(ad->bw, ab, OP_YIELD, NULL, 0, NULL, 0, in->loc);
    }
}
/* A helper call with a custom rule (OP_CUSTOM_VJP): the rule's body is
 * recomputed here with its parameters bound to the arguments' primals and
 * the result's adjoint, and what it yields is added to the float
 * arguments' adjoints.  The helper's own body gets no adjoint (ad_analysis:
 * the result's operand 0 is not useful). */
static void adj_custom(Ad *ad, Block *bb, const Inst *in)
{
    ValId y = in->res[0], d = ad->adj[y];
    if (!d || !ad_active(ad, y))
        return;
    const Block *rb = ad->fw->rules.v[in->ival];
    for (int i = 1; i < in->nargs; i++)
        ad->pm[rb->params[i - 1]] = P0(ad, in->args[i]);
    ad->pm[rb->params[in->nargs - 1]] = d;
    clone_block(ad, rb, bb, 0, NULL);
    const Inst *yi = ad_block_term(rb);
    Em e = em_rev(ad, bb, in->loc);
    for (int i = 1, k = 0; i < in->nargs; i++)
        if (dtype_is_float((Dtype)fty(ad, in->args[i]).dt)) {
            ValId c = P0(ad, yi->args[k++]);
            accum(&e, in->args[i], c);
        }
}

/* The rules of the trusted values (ad_trust.c) in terms of their loaded primal y: the idiom's
 * intermediates have no other use, so the whole adjoint of its operand w is this one. */
static void adj_trusted(Em *e, const TrustVal *t)
{
    Ad *ad = e->ad;
    ValId d = ad->adj[t->v];
    if (!d || !ad_active(ad, t->v))
        return;
    ValId y = P(e, t->v), c = 0;
    Type yt = bty(ad, y);
    switch (t->kind) {
    case TRUST_RECIP: /* y = 1/w: dw = -d*y*y */
        c = e1(e, OP_NEG, e2(e, OP_MUL, e2(e, OP_MUL, d, y), y));
        break;
    case TRUST_RSQRT: /* y = w^(-1/2): dw = -d*y^3/2 */
        c = e2(e, OP_MUL, e2(e, OP_MUL, e2(e, OP_MUL, d, y), e2(e, OP_MUL, y, y)), ec(e, d, -0.5));
        break;
    case TRUST_SOFTMAX: { /* dw = scale * y * (d - sum(d*y)) */
        ValId r = ereduce(e, OP_SUM, e2(e, OP_MUL, d, y), t->axis, t->keep);
        c = e2(e, OP_MUL, y, e2(e, OP_SUB, d, bcast_back(e, r, yt, t->axis, t->keep)));
        if (t->scale != 1.0)
            c = e2(e, OP_MUL, c, ec(e, c, t->scale));
        break;
    }
    case TRUST_LOGSOFTMAX: { /* dw = d - exp(y) * sum(d) */
        ValId r = ereduce(e, OP_SUM, d, t->axis, t->keep);
        c = e2(e, OP_SUB, d, e2(e, OP_MUL, e1(e, OP_EXP, y), bcast_back(e, r, yt, t->axis, t->keep)));
        if (t->scale != 1.0)
            c = e2(e, OP_MUL, c, ec(e, c, t->scale));
        break;
    }
    default:
        ASSERT(0);
    }
    accum(e, t->w, c);
}

void adj_block(Ad *ad, const Block *fb, Block *bb)
{
    PendingVec pending = {0};
    for (int k = fb->insts.n - 1; k >= 0; k--) {
        const Inst *in = &fb->insts.v[k];
        switch (in->op) {
        case OP_YIELD:
        case OP_CONDITION:
            break;
        case OP_STORE:
        case OP_ATOMIC_ADD:
            adj_store(ad, bb, fb, k);
            break;
        case OP_ATOMIC_MAX: /* scratch only (validated): nothing to add */
        case OP_ATOMIC_MIN:
        case OP_ATOMIC_XCHG:
            break;
        case OP_LOAD:
            adj_load(ad, bb, fb, k, &pending);
            break;
        case OP_FOR:
        case OP_WHILE:
            adj_loop(ad, bb, in);
            break;
        case OP_IF:
            adj_if(ad, bb, in);
            break;
        case OP_CUSTOM_VJP:
            adj_custom(ad, bb, in);
            break;
        case OP_SCAN: {
            Em e = em_rev(ad, bb, in->loc);
            adj_scan(&e, in);
            break;
        }
        case OP_REDUCE: {
            Em e = em_rev(ad, bb, in->loc);
            adj_reduce(&e, in);
            break;
        }
        default:
            if (op_differentiable(in->op) && in->nres == 1) {
                Em e = em_rev(ad, bb, in->loc);
                if (ad->trust && ad->trust[in->res[0]] && ad->trust[in->res[0]]->kind != TRUST_STAT)
                    adj_trusted(&e, ad->trust[in->res[0]]);
                else
                    adj_rule(&e, in);
            }
            break;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Entry point                                                         */
/* ------------------------------------------------------------------ */


/* The backward kernel of fwd: params = fwd's params, then d_<out> per
 * output, then d_<wrt> per input; same grid.  Unsupported constructs are
 * located errors in d; returns NULL after any error.  fwd is unchanged. */
Program *ad_reverse(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec, const uint8_t *gmode,
                     bool nofold, bool scatter, uint8_t *plain_out)
{
    Ad ad0 = {.a = a, .d = d, .fw = fwd, .spec = spec}, *ad = &ad0;
    if (!ad_analyze(ad))
        return NULL;
    if (spec->mutate != AD_MUTATE_STRONG_ZERO)
        ad->fin = ad_value_facts(a, fwd);
    int nv = ad->nvals, np = fwd->nparams;
    ad->grad = arena_alloc(a, sizeof(ValId) * (size_t)(np + 1));
    ad->pm = arena_alloc(a, sizeof(ValId) * (size_t)nv);
    ad->sm = arena_alloc(a, sizeof(ValId) * (size_t)nv);
    ad->vm = arena_alloc(a, sizeof(ValId) * (size_t)nv);
    ad->adj = arena_alloc(a, sizeof(ValId) * (size_t)nv);
    ad->seen = arena_alloc(a, sizeof(int) * (size_t)nv);
    ad->scat = scatter && !gmode && !nofold ? arena_alloc(a, (size_t)nv) : NULL;

    /* The backward kernel's signature. */
    Func *bw = ad->bw = ir_func_new(a, arena_printf(a, "%s_bwd", fwd->name), fwd->loc);
    Program *P = ad->P = plan_new(a, bw);
    for (int i = 0; i < np; i++) {
        ValId p = fwd->params[i];
        ad->pm[p] = ir_param_add(bw, fty(ad, p), fname(ad, p), fwd->vals.v[p].loc);
    }
    bw->ranges = fwd->ranges; /* the forward's parameters come first, in order */
    bw->ranges.cap = bw->ranges.n; /* a push copies */
    for (int pass = 0; pass < 2; pass++) /* outputs' gradients first, in-place buffers' among them */
        for (int i = 0; i < np; i++)
            if (pass ? ad->role[i] == AD_ROLE_IN : ad_role_writes(ad->role[i])) {
                ValId p = fwd->params[i];
                ad->grad[i] = ir_param_add(bw, fty(ad, p), arena_printf(a, "d_%s", fname(ad, p)),
                                           fwd->vals.v[p].loc);
                ad->sm[p] = ad->grad[i];
            }
    for (int i = 0; i < fwd->consts.n; i++)
        vec_push(a, bw->consts, fwd->consts.v[i]);

    ad->plain = arena_alloc(a, (size_t)np + 1);
    ad->why = arena_alloc(a, sizeof(const char *) * (size_t)(np + 1));
    ad->when = arena_alloc(a, sizeof(const char *) * (size_t)(np + 1));
    ad->cond = arena_alloc(a, sizeof *ad->cond * (size_t)(np + 1));
    ad->flag = arena_alloc(a, sizeof(ValId) * (size_t)(np + 1));
    ad->cover = arena_alloc(a, sizeof(const AccCover *) * (size_t)(np + 1));
    ad->wrote = arena_alloc(a, (size_t)np + 1);
    ad->cover_why = arena_alloc(a, sizeof(const char *) * (size_t)(np + 1));
    ad->first = arena_alloc(a, sizeof(const Inst *) * (size_t)(np + 1));
    ad->rmw_lanes = arena_alloc(a, sizeof(int64_t) * (size_t)(np + 1));
    ad->fold_axes = 0;
    ad_plain_inputs(ad);
    if (plain_out)
        memcpy(plain_out, ad->plain, (size_t)np);
    /* inputs ad_backward gathers (write/gather.c): atomic sites, which it rewrites */
    for (int i = 0; gmode && i < np; i++)
        if (gmode[i]) {
            ad->plain[i] = 0;
            ad->why[i] = "its gather kernel writes it";
        } else if (nofold && ad->plain[i] == 3) { /* the sites at the top level, for ad_gather_check */
            ad->plain[i] = 0;
        }
    /* the runtime conditions of plain stores: i1 parameters the launcher computes */
    for (int i = 0; i < np; i++)
        if (ad->plain[i] == 2 || ad->plain[i] == 5 || ad->plain[i] == 7) {
            ad->flag[i] = ir_param_add(bw, type_scalar(DT_I1), arena_printf(a, "plain_d_%s", fname(ad, fwd->params[i])),
                                       fwd->loc);
            vec_push(a, P->flags, ((FuncFlag){ad->flag[i], ad->acc, ad->cond[i].v, ad->cond[i].n, NULL}));
        } else if (gmode && gmode[i] == 2) { /* the gather's launch condition: ad_gather fills it in */
            ad->flag[i] = ir_param_add(bw, type_scalar(DT_I1), arena_printf(a, "gather_d_%s", fname(ad, fwd->params[i])),
                                       fwd->loc);
            vec_push(a, P->flags, ((FuncFlag){ad->flag[i], NULL, NULL, 0, NULL}));
        }

    /* The primal sweep, then the adjoint sweep. */
    ad_trust_plan(ad);
    clone_block(ad, fwd->body, bw->body, 0, NULL);
    adj_block(ad, fwd->body, bw->body);
    site_inputs(ad);
    fold_inputs(ad);
    /* gradients the launch may overwrite entirely: the launcher checks and skips their zero-fill */
    for (int i = 0; i < np; i++) {
        if (ad->role[i] != AD_ROLE_IN || !ad->grad[i])
            continue;
        int m = ad->plain[i];
        FuncCover fc = {ad->grad[i], m == 2 ? ad->flag[i] : 0, ad->acc, NULL, NULL};
        if (m == 5)
            fc.flag = ad->flag[i];
        if ((m == 1 || m == 2 || ((m == 4 || m == 5) && ad->first[i])) && ad->wrote[i] && ad->cover[i])
            fc.cover = ad->cover[i];
        else if (m == 3 && ad->cover[i]) /* a folded input: what its partials' rows get (emit_grad_plan.c) */
            fc.cover = ad->cover[i], fc.why = "its sum kernel adds into it";
        else
            fc.why = m == 0   ? "atomic_adds add into it"
                     : m == 3 || m >= 6 ? "its sum kernel adds into it"
                     : m >= 4 && !ad->first[i] ? "read-modify-writes add into it"
                     : !ad->wrote[i] ? "no store writes it"
                     : ad->cover_why[i] ? ad->cover_why[i] : "kad cannot describe what its stores reach";
        vec_push(a, P->covers, fc);
    }
    for (int j = 0; spec->grad_write && j < spec->nwrt; j++) {
        spec->grad_write[j] = "it is updated in place";
        for (int i = 0; i < np; i++)
            if (ad->role[i] == AD_ROLE_IN && fname(ad, fwd->params[i]) && !strcmp(fname(ad, fwd->params[i]), spec->wrt[j])) {
                int m = ad->plain[i];
                spec->grad_write[j] = m == 1 || m == 3 || m == 4 || m == 6 ? NULL : ad->why[i];
                if (spec->grad_when)
                    spec->grad_when[j] = m == 2 || m == 5 || m == 7 ? ad->when[i] : NULL;
                if (spec->grad_rmw)
                    spec->grad_rmw[j] = m == 4 || m == 5;
                if (spec->grad_first)
                    spec->grad_first[j] = (m == 4 || m == 5) && ad->first[i];
            }
    }
    for (int i = 0; i < np; i++) /* outputs whose stores clear their gradient: on a private copy */
        if (ad->role[i] == AD_ROLE_OUT && ad->cleared[i])
            for (int j = np; j < bw->nparams; j++)
                if (bw->params[j] == ad->grad[i])
                    vec_push(a, P->cleared, j);
    if (ad->trust) { /* the buffers whose stored values the backward loads, in parameter order */
        Buf names = {.a = a};
        for (int i = 0; i < np; i++) {
            bool any = false;
            for (ValId v = 1; v < nv && !any; v++)
                any = ad->trust[v] && ad->root[ad->trust[v]->store->args[0]] == i + 1;
            if (any)
                buf_printf(&names, "%s%s", names.len ? "," : "", fname(ad, fwd->params[i]));
        }
        P->trusted = names.len ? buf_str(&names) : NULL;
    }
    P->guards.v = ad->guards.v; /* launch conditions (check_loop_store) */
    P->guards.n = P->guards.cap = ad->guards.n;
    if (P->fold) /* the partials' one sum kernel, run after the folded launch */
        P->sum = fold_sum_kernel(a, arena_printf(a, "%s_sum", bw->name), P->fold->in, P->fold->n, bw->loc);
    return P;
}

