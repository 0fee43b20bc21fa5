/* ad_rev.c -- reverse-mode automatic differentiation of the tile IR.
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
 * Stages of ad_reverse:
 *   1. ad_analyze (ad_analysis.c): roles, provenance, activity, shift
 *      invariance and validation.  Every construct AD cannot handle
 *      exactly is refused there with a located error; emission starts only
 *      when it found nothing, and relies on its facts without checking
 *      them again.
 *   2. emission: the primal sweep (clone_block), then the adjoint sweep
 *      (adj_block), whose per-op rules all sit in adj_rule.  Contributions
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
 *
 * Requires: a verified fwd.  Guarantees: the result is a new Func in `a`
 * (fwd is not modified) that verifies; or NULL with located errors.
 * Adjoints of fp16/bf16 values are carried in fp32 (adt()); every adjoint
 * value is named after its primal (`x` -> `dx`), shadow pointers `d_` +
 * name.
 */
#include <math.h>
#include <string.h>

#include "plan/plan.h"

/* ln 2 and 2/sqrt(pi), spelled out: M_LN2 and M_2_SQRTPI are not C11. */
#define AD_LN2 0.69314718055994530942
#define AD_2_SQRTPI 1.12837916709551257390

typedef Vec(ValId) ValVec;

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

/* The type of fw value v; a reduce's combine-region value as a tile while
 * adj_reduce applies the region lane by lane (ad->lanes). */
static Type fty(const Ad *ad, ValId v)
{
    Type t = ad->fw->vals.v[v].ty;
    if (ad->lanes && ad->lanes[v])
        t = type_with_shape(t, ad->lane_ty.rank, ad->lane_ty.shape);
    return t;
}
static Type bty(const Ad *ad, ValId v) { return ad->bw->vals.v[v].ty; }
static const char *fname(const Ad *ad, ValId v) { return ad->fw->vals.v[v].name; }

/* A pointer into a differentiated buffer: it gets a shadow. */
static bool needs_shadow(const Ad *ad, ValId v)
{
    return fty(ad, v).dt == DT_PTR && ad_root_role(ad, v) != AD_ROLE_NONE;
}

/* The adjoint dtype: fp16/bf16/fp8 adjoints accumulate in fp32 (for fp8
 * this is also the straight-through rule: a cast to fp8 passes its
 * adjoint unchanged, docs/AD.md). */
static Type adt(Type t)
{
    if (t.dt == DT_F16 || t.dt == DT_BF16 || dtype_is_fp8((Dtype)t.dt))
        t.dt = DT_F32;
    return t;
}

/* Names a bw value after a fw value, with a prefix ("d", "d_"), unless it
 * already has a name. */
static void name_after(Ad *ad, ValId bv, const char *prefix, ValId fv)
{
    const char *n = fv ? fname(ad, fv) : NULL;
    if (!bv || ad->bw->vals.v[bv].name || !n)
        return;
    ad->bw->vals.v[bv].name = arena_printf(ad->a, "%s%s", prefix, n);
}

int ad_mutation_by_name(const char *name)
{
    static const char *const names[] = {"none", "exp", "mul", "max", "where", "cumsum", "max_drop", "tape",
                                         "libm", "strong_zero", "scan_jac"};
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (name && !strcmp(name, names[i]))
            return i;
    return -1;
}

int ad_split_names(Arena *a, const char *s, const char ***out)
{
    Vec(const char *) v = {0};
    while (s && *s) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        const char *p = s, *q = s + n;
        while (p < q && (*p == ' ' || *p == '\t'))
            p++;
        while (q > p && (q[-1] == ' ' || q[-1] == '\t'))
            q--;
        if (q > p)
            vec_push(a, v, arena_strndup(a, p, (size_t)(q - p)));
        s = e ? e + 1 : NULL;
    }
    *out = v.v;
    return v.n;
}

/* ------------------------------------------------------------------ */
/* Primal sweep: clone without stores, with shadow pointers            */
/* ------------------------------------------------------------------ */

/* Emits a copy of `in` (attributes, result types, Loc) with new operands. */
static Inst *emit_like(Ad *ad, Block *b, const Inst *in, const ValId *args)
{
    Type rt[1];
    if (in->nres)
        rt[0] = fty(ad, in->res[0]);
    ASSERT(in->nres <= 1);
    Inst *ni = ir_emit(ad->bw, b, (OpKind)in->op, args, in->nargs, rt, in->nres, in->loc);
    ir_inst_copy_attrs(ni, in);
    return ni;
}

static ValId P0(const Ad *ad, ValId v)
{
    ASSERT(v > 0 && ad->pm[v] > 0);
    return ad->pm[v];
}

static ValId S0(const Ad *ad, ValId v)
{
    ASSERT(v > 0 && ad->sm[v] > 0);
    return ad->sm[v];
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
static ValId param_like(Ad *ad, Block *b, ValId v, const char *prefix)
{
    const char *n = fname(ad, v);
    return ir_block_param_add(ad->bw, b, fty(ad, v), n ? arena_printf(ad->a, "%s%s", prefix, n) : NULL,
                              ad->fw->vals.v[v].loc);
}

enum { CL_YIELD = 1, CL_SKIP_CHAIN = 2 };

static void clone_block(Ad *ad, const Block *fb, Block *bb, unsigned mode, const bool *ysh);

/* Region ops (for, if, while) are rebuilt in bw with more operands and
 * results than in fw: after the forward's carried values come the shadows
 * of the carried pointers, and in adjoint regions the adjoints of outside
 * values.  These helpers fill and bind those lists in that one order, for
 * the primal sweep and the adjoint sweep alike. */

/* sh[i]: does carried slot i (carried by fw value vs[i]) need a shadow? */
static bool *shadow_flags(Ad *ad, const ValId *vs, int n)
{
    bool *sh = arena_alloc(ad->a, (size_t)n + 1);
    for (int i = 0; i < n; i++)
        sh[i] = needs_shadow(ad, vs[i]);
    return sh;
}

/* The operands and result types of a rebuilt region op or terminator. */
typedef struct Slots {
    ValId *args; /* operands */
    Type *tys;   /* result types (unused for terminators) */
    int na, nt;
} Slots;

static Slots slots_new(Ad *ad, int cap)
{
    Slots s = {arena_alloc(ad->a, sizeof(ValId) * (size_t)(cap + 1)),
               arena_alloc(ad->a, sizeof(Type) * (size_t)(cap + 1)), 0, 0};
    return s;
}

/* Appends n carried slots: the primal copies of fw values fv[i] (except
 * those skip marks), then the shadows of those sh marks.  rt (fw values
 * whose types the results take) may be NULL for a terminator; fv may be
 * NULL for an `if`, whose results have no operands. */
static void add_carried(Ad *ad, Slots *s, const ValId *fv, const ValId *rt, int n, const bool *skip,
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
static void add_params(Ad *ad, Block *reg, const Block *fr, int nlead, const bool *skip, const bool *sh)
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
static void bind_results(Ad *ad, const Inst *in, const Inst *ni, const bool *sh)
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
static const ValId *carriers(const Inst *in)
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

/* ------------------------------------------------------------------ */
/* Tapes (ad_tape.c plans them; docs/AD.md, "Tapes")                   */
/* ------------------------------------------------------------------ */

/* The bw parameter of tl's tape, made on first use (after the flags,
 * before ad_fold's parameters), with its plan in the Program's tapes. */
static ValId tape_param(Ad *ad, TapeLoop *tl)
{
    if (!tl->param) {
        Func *bw = ad->bw;
        tl->param = ir_param_add(bw, type_ptr(tl->dt, 0, NULL), arena_printf(ad->a, "kad_tape%d", ad->P->tapes.n),
                                 tl->loop->loc);
        FuncTape ft = {tl->param, tl->trips, tl->slot, tl->loop->loc, tl->what, tl->is_while, tl->bound,
                       tl->recomputed, tl->linear_names, tl->ckpt, ad->spec->tape_budget, tl->revolve};
        vec_push(ad->a, ad->P->tapes, ft);
    }
    return tl->param;
}

/* The first element of tape slot (iteration t, this program): the tape
 * + (t * programs + program) * slot, in i64. */
static ValId tape_base(Ad *ad, Block *b, TapeLoop *tl, ValId t, Loc loc)
{
    Func *f = ad->bw;
    Type i64 = type_scalar(DT_I64);
    ValId at = save_slot_at(f, b, t, tl->slot, loc);
    if (tl->is_while) /* after the head (the overflow flag) */
        at = ir_op2(f, b, OP_ADD, i64, at, ir_const_int(f, b, i64, KAD_TAPE_HEAD, loc), loc);
    if (tl->revolve) /* after the head (the plan) */
        at = ir_op2(f, b, OP_ADD, i64, at, tl->headv, loc);
    ValId p = tape_param(ad, tl);
    return ir_op2(f, b, OP_ADDPTR, ir_type(f, p), p, at, loc);
}

/* Pointers to the elements of a value of type vt at offset off of the
 * slot at base: row-major, a scalar pointer for a scalar. */
static ValId tape_ptr(Ad *ad, Block *b, ValId base, Type vt, int64_t off, Loc loc)
{
    return save_elems(ad->bw, b, base, vt, off, loc);
}

/* The iteration number of induction variable iv: (iv - lb) / step. */
static ValId tape_iter(Ad *ad, Block *b, const Inst *loop, ValId iv, Loc loc)
{
    Func *f = ad->bw;
    Type it = ir_type(f, iv);
    ValId d = ir_op2(f, b, OP_SUB, it, iv, P0(ad, loop->args[0]), loc);
    return ir_op2(f, b, OP_DIV, it, d, P0(ad, loop->args[2]), loc);
}

/* The trip count of `for` loop in (fw) with bounds and step lb, ub, step
 * (bw values), in b: (max(ub - lb, 0) + step - 1) / step, or with lb - ub
 * and -step for a negative step (a constant: ad_tape_plan, affine_in). */
static ValId for_trips(Ad *ad, Block *b, const Inst *in, ValId lb, ValId ub, ValId step)
{
    Func *f = ad->bw;
    Loc loc = in->loc;
    Type it = bty(ad, lb);
    bool down = ad->def[in->args[2]]->ival < 0;
    ValId astep = down ? ir_op1(f, b, OP_NEG, it, step, loc) : step;
    ValId span = ir_op2(f, b, OP_MAXIMUM, it,
                        down ? ir_op2(f, b, OP_SUB, it, lb, ub, loc) : ir_op2(f, b, OP_SUB, it, ub, lb, loc),
                        ir_const_int(f, b, it, 0, loc), loc);
    ValId one = ir_const_int(f, b, it, 1, loc);
    return ir_op2(f, b, OP_DIV, it, ir_op2(f, b, OP_ADD, it, span, ir_op2(f, b, OP_SUB, it, astep, one, loc), loc),
                  astep, loc);
}

/* The trip count of taped `for` in, in b. */
static ValId tape_trips(Ad *ad, Block *b, const Inst *in)
{
    return for_trips(ad, b, in, P0(ad, in->args[0]), P0(ad, in->args[1]), P0(ad, in->args[2]));
}

/* A checkpointed tape's segment length k = ceil(sqrt(trips)) (1 when
 * trips <= 1), exactly as the host computes it (isqrt(trips - 1) + 1): a
 * float square root, then corrected by one either way. */
static ValId tape_seg_len(Ad *ad, Block *b, ValId trips, Loc loc)
{
    Func *f = ad->bw;
    Type it = bty(ad, trips), i1 = type_scalar(DT_I1), f32 = type_scalar(DT_F32);
    ValId one = ir_const_int(f, b, it, 1, loc);
    ValId m = ir_op2(f, b, OP_MAXIMUM, it, ir_op2(f, b, OP_SUB, it, trips, one, loc), ir_const_int(f, b, it, 0, loc),
                     loc);
    ValId r = ir_op1(f, b, OP_CAST, it, ir_op1(f, b, OP_SQRT, f32, ir_op1(f, b, OP_CAST, f32, m, loc), loc), loc);
    ValId big = ir_op2(f, b, OP_GT, i1, ir_op2(f, b, OP_MUL, it, r, r, loc), m, loc);
    r = ir_op3(f, b, OP_WHERE, it, big, ir_op2(f, b, OP_SUB, it, r, one, loc), r, loc);
    ValId r1 = ir_op2(f, b, OP_ADD, it, r, one, loc);
    ValId small = ir_op2(f, b, OP_LE, i1, ir_op2(f, b, OP_MUL, it, r1, r1, loc), m, loc);
    r = ir_op3(f, b, OP_WHERE, it, small, r1, r, loc);
    return ir_op2(f, b, OP_ADD, it, r, one, loc);
}

/* At the top of a taped loop's body (params already mapped): records the
 * carried values the reverse sweep reads back (checkpointed: those of every
 * k-th iteration, in slot k + t / k). */
/* Carried value i of a taped loop read back from the tape at base: loaded
 * in the tape's dtype, converted to the value's type vt. */
static ValId tape_load(Ad *ad, Block *b, const TapeLoop *tl, ValId base, Type vt, int i, Loc loc)
{
    Func *f = ad->bw;
    ValId ptr = tape_ptr(ad, b, base, vt, tl->off[i], loc);
    Type lt = type_tile(tl->dt, vt.rank, vt.shape);
    ValId v = ir_emit(f, b, OP_LOAD, &ptr, 1, &lt, 1, loc)->res[0];
    return vt.dt != tl->dt ? ir_op1(f, b, OP_CAST, vt, v, loc) : v;
}

static void tape_record(Ad *ad, Block *reg, TapeLoop *tl)
{
    const Inst *in = tl->loop;
    const Block *fr = in->regions[0];
    ValId base = 0, ck = 0;
    for (int i = 0; i < in->nres; i++) {
        if (!tl->taped[i])
            continue;
        ValId t = 0;
        if (!base) {
            t = tape_iter(ad, reg, in, P0(ad, fr->params[0]), in->loc);
            if (tl->ckpt) { /* slot k + t / k, written where t % k == 0 */
                Func *f = ad->bw;
                Type it = bty(ad, t);
                ValId k = tl->kv;
                if (bty(ad, k).dt != it.dt)
                    k = ir_op1(f, reg, OP_CAST, it, k, in->loc);
                ck = ir_op2(f, reg, OP_EQ, type_scalar(DT_I1), ir_op2(f, reg, OP_REM, it, t, k, in->loc),
                            ir_const_int(f, reg, it, 0, in->loc), in->loc);
                t = ir_op2(f, reg, OP_ADD, it, k, ir_op2(f, reg, OP_DIV, it, t, k, in->loc), in->loc);
            }
            base = tape_base(ad, reg, tl, t, in->loc);
        }
        ValId v = P0(ad, fr->params[1 + i]);
        Type vt = bty(ad, v);
        ValId ptr = tape_ptr(ad, reg, base, vt, tl->off[i], in->loc);
        if (vt.dt != tl->dt)
            v = ir_op1(ad->bw, reg, OP_CAST, type_with_dtype(vt, tl->dt), v, in->loc);
        if (ck) {
            ValId m = vt.rank ? ir_op1(ad->bw, reg, OP_BROADCAST, type_tile(DT_I1, vt.rank, vt.shape), ck, in->loc) : ck;
            ValId args[3] = {ptr, v, m};
            ir_emit(ad->bw, reg, OP_STORE, args, 3, NULL, 0, in->loc)->flags |= IF_HAS_MASK;
            continue;
        }
        ValId args[2] = {ptr, v};
        ir_emit(ad->bw, reg, OP_STORE, args, 2, NULL, 0, in->loc);
    }
}

/* A taped `while` in the primal sweep: the loop carries an iteration
 * counter too (its result: the iterations this program ran, which the
 * adjoint loop runs backwards); each iteration t < capacity records the
 * carried values in slot t, an iteration past it sets the tape's
 * overflow flag instead (the host turns it into an error). */
static void clone_tape_while(Ad *ad, Block *bb, const Inst *in, TapeLoop *tl)
{
    Func *f = ad->bw;
    Loc loc = in->loc;
    int n = in->nres;
    Type i32 = type_scalar(DT_I32);
    bool *sh = shadow_flags(ad, carriers(in), n);
    /* the capacity, in the kernel: the same expression the host sizes the tape with */
    ValId cap;
    if (tl->cap_ub) {
        Type ut = fty(ad, tl->cap_ub);
        ValId ub = P0(ad, tl->cap_ub), i0 = P0(ad, tl->cap_init);
        if (bty(ad, i0).dt != ut.dt)
            i0 = ir_op1(f, bb, OP_CAST, ut, i0, loc);
        ValId span = ir_op2(f, bb, OP_SUB, ut, ir_op2(f, bb, OP_ADD, ut, ub, ir_const_int(f, bb, ut, tl->cap_plus, loc), loc),
                            i0, loc);
        span = ir_op2(f, bb, OP_MAXIMUM, ut, span, ir_const_int(f, bb, ut, 0, loc), loc);
        span = ir_op2(f, bb, OP_ADD, ut, span, ir_const_int(f, bb, ut, tl->cap_step - 1, loc), loc);
        cap = ir_op2(f, bb, OP_DIV, ut, span, ir_const_int(f, bb, ut, tl->cap_step, loc), loc);
        if (ut.dt != DT_I32)
            cap = ir_op1(f, bb, OP_CAST, i32, cap, loc);
    } else {
        cap = ir_const_int(f, bb, i32, tl->cap_const, loc);
    }
    tl->capv = cap;
    Slots s = slots_new(ad, 2 * n + 1);
    add_carried(ad, &s, in->args, in->res, n, NULL, sh);
    s.args[s.na++] = ir_const_int(f, bb, i32, 0, loc);
    s.tys[s.nt++] = i32;
    ir_emit(f, bb, OP_WHILE, s.args, s.na, s.tys, s.nt, loc);
    int idx = bb->insts.n - 1;
    Block *creg = ir_inst_add_region(f, &bb->insts.v[idx]);
    add_params(ad, creg, in->regions[0], 0, NULL, sh);
    ir_block_param_add(f, creg, i32, "kad_n", loc);
    clone_block(ad, in->regions[0], creg, CL_YIELD, NULL); /* ends in `condition` */
    Block *reg = ir_inst_add_region(f, &bb->insts.v[idx]);
    const Block *fr = in->regions[1];
    add_params(ad, reg, fr, 0, NULL, sh);
    ValId cnt = ir_block_param_add(f, reg, i32, "kad_n", loc);
    /* record (t = the counter) when t < capacity, else raise the flag */
    ValId fits = ir_op2(f, reg, OP_LT, type_scalar(DT_I1), cnt, cap, loc);
    ValId base = 0;
    for (int i = 0; i < n; i++) {
        if (!tl->taped[i])
            continue;
        if (!base) /* slot min(t, cap - 1): in bounds also where the store is masked off */
            base = tape_base(ad, reg, tl,
                             ir_op2(f, reg, OP_MINIMUM, i32, cnt,
                                    ir_op2(f, reg, OP_SUB, i32, cap, ir_const_int(f, reg, i32, 1, loc), loc), loc),
                             loc);
        ValId v = P0(ad, fr->params[i]);
        Type vt = bty(ad, v);
        ValId ptr = tape_ptr(ad, reg, base, vt, tl->off[i], loc);
        if (vt.dt != tl->dt)
            v = ir_op1(f, reg, OP_CAST, type_with_dtype(vt, tl->dt), v, loc);
        ValId m = vt.rank ? ir_op1(f, reg, OP_BROADCAST, type_tile(DT_I1, vt.rank, vt.shape), fits, loc) : fits;
        ValId args[3] = {ptr, v, m};
        ir_emit(f, reg, OP_STORE, args, 3, NULL, 0, loc)->flags |= IF_HAS_MASK;
    }
    {
        Type ft = type_scalar(tl->dt);
        ValId over = ir_op1(f, reg, OP_NOT, type_scalar(DT_I1), fits, loc);
        ValId args[3] = {tape_param(ad, tl), ir_const_float(f, reg, ft, 1.0, loc), over};
        ir_emit(f, reg, OP_STORE, args, 3, NULL, 0, loc)->flags |= IF_HAS_MASK;
    }
    clone_block(ad, fr, reg, 0, NULL);
    const Inst *yi = ad_block_term(fr);
    Slots y = slots_new(ad, 2 * n + 1);
    add_carried(ad, &y, yi->args, NULL, n, NULL, sh);
    y.args[y.na++] = ir_op2(f, reg, OP_ADD, i32, cnt, ir_const_int(f, reg, i32, 1, loc), loc);
    ir_emit(f, reg, OP_YIELD, y.args, y.na, NULL, 0, loc);
    Inst *ni = &bb->insts.v[idx];
    bind_results(ad, in, ni, sh);
    tl->count = ni->res[ni->nres - 1];
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
            tape_record(ad, reg, tl);
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
static void copy_combine_body(Ad *ad, Block *rb, const Block *fr, ValId *m, const Loc *yloc)
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
static void clone_block(Ad *ad, const Block *fb, Block *bb, unsigned mode, const bool *ysh)
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

/* ------------------------------------------------------------------ */
/* Adjoint sweep                                                       */
/* ------------------------------------------------------------------ */

/* Where adjoint code goes: the block and the forward instruction's Loc. */
typedef struct Em {
    Ad *ad;
    Block *b;
    Loc loc;
} Em;

static ValId e1(Em *e, OpKind op, ValId x)
{
    return ir_op1(e->ad->bw, e->b, op, bty(e->ad, x), x, e->loc);
}
static ValId e2(Em *e, OpKind op, ValId x, ValId y)
{
    return ir_op2(e->ad->bw, e->b, op, bty(e->ad, x), x, y, e->loc);
}
static ValId ecmp(Em *e, OpKind op, ValId x, ValId y)
{
    return ir_op2(e->ad->bw, e->b, op, type_with_dtype(bty(e->ad, x), DT_I1), x, y, e->loc);
}
static ValId ewhere(Em *e, ValId c, ValId x, ValId y)
{
    return ir_op3(e->ad->bw, e->b, OP_WHERE, bty(e->ad, x), c, x, y, e->loc);
}
/* A float constant shaped like x. */
static ValId ec(Em *e, ValId like, double v)
{
    return ir_const_float(e->ad->bw, e->b, bty(e->ad, like), v, e->loc);
}
static ValId ezero(Em *e, Type t) { return ir_const_float(e->ad->bw, e->b, t, 0.0, e->loc); }
static ValId ecast(Em *e, ValId x, Dtype dt)
{
    if (bty(e->ad, x).dt == dt)
        return x;
    return ir_op1(e->ad->bw, e->b, OP_CAST, type_with_dtype(bty(e->ad, x), dt), x, e->loc);
}
static ValId ereduce(Em *e, OpKind op, ValId x, int axis, bool keep)
{
    Type t = bty(e->ad, x);
    int32_t sh[KAD_MAX_RANK];
    int n = 0;
    for (int i = 0; i < t.rank; i++)
        if (i != axis)
            sh[n++] = t.shape[i];
        else if (keep)
            sh[n++] = 1;
    Inst *in = ir_emit(e->ad->bw, e->b, op, &x, 1, (Type[]){type_with_shape(t, n, sh)}, 1, e->loc);
    in->ival = axis;
    in->flags = keep ? IF_KEEP_DIMS : 0;
    return in->res[0];
}
static ValId eshape(Em *e, OpKind op, ValId x, Type to, int64_t ival)
{
    Inst *in = ir_emit(e->ad->bw, e->b, op, &x, 1, &to, 1, e->loc);
    in->ival = ival;
    return in->res[0];
}
static ValId epermute(Em *e, ValId x, const int32_t *perm)
{
    Type t = bty(e->ad, x);
    int32_t sh[KAD_MAX_RANK];
    for (int i = 0; i < t.rank; i++)
        sh[i] = t.shape[perm[i]];
    Inst *in = ir_emit(e->ad->bw, e->b, OP_PERMUTE, &x, 1, (Type[]){type_with_shape(t, t.rank, sh)}, 1,
                       e->loc);
    memcpy(in->ints, perm, sizeof(int32_t) * (size_t)t.rank);
    in->nints = t.rank;
    return in->res[0];
}

/* The primal of fw value v in the current scope, in its adjoint dtype. */
static ValId P(Em *e, ValId v) { return ecast(e, P0(e->ad, v), (Dtype)adt(fty(e->ad, v)).dt); }

/* adj[v] += c (c cast to v's adjoint dtype); only active values. */
/* Ad.zm (strong_zero, below): v's structural zeros, 0 when none are known. */
static ValId zm_of(const Ad *ad, ValId v) { return v > 0 && v < ad->zm.n ? ad->zm.v[v] : 0; }

/* Whether v's structural zeros include a selection's (a where's untaken side: carried through
 * reductions, where a whole row may take no branch) rather than only a store's masked-off lanes
 * (not carried through them: a row with no live lane has no gradient to lose). */
static bool zm_sel(const Ad *ad, ValId v) { return v > 0 && v < ad->zsel.n && ad->zsel.v[v]; }

static void zm_set(Ad *ad, ValId v, ValId m, bool sel)
{
    while (ad->zm.n <= v) {
        vec_push(ad->a, ad->zm, 0);
        vec_push(ad->a, ad->zsel, 0);
    }
    ad->zm.v[v] = m;
    ad->zsel.v[v] = sel;
}

static void accum(Em *e, ValId v, ValId c)
{
    Ad *ad = e->ad;
    if (!ad_active(ad, v) || !c)
        return;
    Type t = adt(fty(ad, v));
    ValId zc = zm_of(ad, c);
    c = ecast(e, c, (Dtype)t.dt);
    ASSERT(type_eq(bty(ad, c), t));
    bool sc = zm_sel(ad, c);
    if (zc)
        zm_set(ad, c, zc, sc);
    if (!ad->adj[v]) {
        ad->adj[v] = c;
    } else {
        ValId zo = zm_of(ad, ad->adj[v]);
        ad->adj[v] = e2(e, OP_ADD, ad->adj[v], c);
        if (zo && zc) /* zero where both are */
            zm_set(ad, ad->adj[v], zo == zc ? zo : e2(e, OP_AND, zo, zc), sc || zm_sel(ad, ad->adj[v]));
    }
    name_after(ad, ad->adj[v], "d", v);
}

/* A reduction's value (or adjoint) r broadcast back to x's shape xt. */
static ValId bcast_back(Em *e, ValId r, Type xt, int axis, bool keep)
{
    Type rt = bty(e->ad, r);
    xt.dt = rt.dt;
    if (!keep && xt.rank > 1) {
        Type et = rt;
        et.rank = xt.rank;
        for (int i = 0; i < xt.rank; i++)
            et.shape[i] = i == axis ? 1 : xt.shape[i];
        r = eshape(e, OP_EXPAND_DIMS, r, et, axis);
    }
    return eshape(e, OP_BROADCAST, r, xt, 0);
}

/* The adjoint of a broadcast from xt: sum over the broadcast axes. */
static ValId unbroadcast(Em *e, ValId d, Type xt)
{
    if (xt.rank == 0) {
        while (bty(e->ad, d).rank > 0)
            d = ereduce(e, OP_SUM, d, 0, false);
        return d;
    }
    for (int i = 0; i < xt.rank; i++)
        if (xt.shape[i] == 1 && bty(e->ad, d).shape[i] != 1)
            d = ereduce(e, OP_SUM, d, i, true);
    return d;
}

/* x with a new axis `at` of size n (broadcast), the other axes as x's. */
static ValId ewiden(Em *e, ValId x, int at, int32_t n)
{
    Type t = bty(e->ad, x);
    int32_t one[KAD_MAX_RANK], sh[KAD_MAX_RANK];
    for (int k = 0, j = 0; k <= t.rank; k++) {
        one[k] = k == at ? 1 : t.shape[j];
        sh[k] = k == at ? n : t.shape[j];
        j += k != at;
    }
    x = eshape(e, OP_EXPAND_DIMS, x, type_with_shape(t, t.rank + 1, one), at);
    return eshape(e, OP_BROADCAST, x, type_with_shape(t, t.rank + 1, sh), 0);
}

/* arange(0, n) of dtype dt along axis `at` of a tile of type like. */
static ValId eiota(Em *e, Type like, int at, Dtype dt)
{
    int32_t n = like.shape[at], one[KAD_MAX_RANK];
    Inst *ar = ir_emit(e->ad->bw, e->b, OP_ARANGE, NULL, 0, (Type[]){type_tile(DT_I32, 1, &n)}, 1, e->loc);
    ValId v = ecast(e, ar->res[0], dt);
    for (int k = 0; k < like.rank; k++)
        one[k] = k == at ? n : 1;
    v = eshape(e, OP_RESHAPE, v, type_tile(dt, like.rank, one), 0);
    return eshape(e, OP_BROADCAST, v, type_with_dtype(like, dt), 0);
}


/* The adjoint of src in y = gather(src, index, axis a): a scatter-add of d
 * into src's shape without atomics, as a one-hot compare and a sum over a
 * tile of index's shape with src's axis length n inserted at a+1:
 * dsrc[.., j, ..] = sum_i (index[.., i, ..] == j) * d[.., i, ..]
 * (numel(index) * n lanes; deterministic: a fixed order of additions). */
static ValId gather_adjoint(Em *e, const Inst *in, ValId d)
{
    Ad *ad = e->ad;
    int a = (int)in->ival;
    int32_t n = fty(ad, in->args[0]).shape[a];
    ValId ie = ewiden(e, P0(ad, in->args[1]), a + 1, n);
    ValId eq = ecmp(e, OP_EQ, ie, eiota(e, bty(ad, ie), a + 1, (Dtype)bty(ad, ie).dt));
    ValId de = ewiden(e, d, a + 1, n);
    return ereduce(e, OP_SUM, ewhere(e, eq, de, ec(e, de, 0.0)), a, false);
}

/* The adjoint of x in y = sort(x) along the last axis (the first k kept):
 * each lane of x takes the adjoint of the position it was sorted to, its
 * stable rank among its row, rank[j] = #{l : x[l] before x[j]} +
 * #{l < j : x[l] == x[j]} (a compare over a [.., n, n] tile and a sum);
 * equal values get distinct ranks, so the adjoint is a permutation of d
 * (a valid gradient at ties, where sort is not differentiable).  NaNs
 * would give no order: the backward asserts there are none. */
static ValId sort_adjoint(Em *e, const Inst *in, ValId d)
{
    Ad *ad = e->ad;
    ValId x = P0(ad, in->args[0]);
    Type xt = bty(ad, x);
    int r = xt.rank;
    int32_t n = xt.shape[r - 1], k = (int32_t)in->ival;
    Inst *as = ir_emit(ad->bw, e->b, OP_ASSERT, (ValId[]){ecmp(e, OP_EQ, x, x)}, 1, NULL, 0, e->loc);
    as->sattr = "the backward of tl.sort/tl.topk needs values without NaN";
    ValId xj = ewiden(e, x, r, n), xl = ewiden(e, x, r - 1, n); /* [.., j, l] */
    ValId before = ecmp(e, in->flags & IF_REVERSE ? OP_GT : OP_LT, xl, xj);
    Type tt = bty(ad, xj);
    ValId lj = ecmp(e, OP_LT, eiota(e, tt, r, DT_I32), eiota(e, tt, r - 1, DT_I32));
    ValId tie = e2(e, OP_AND, ecmp(e, OP_EQ, xl, xj), lj);
    ValId rank = ereduce(e, OP_SUM, ecast(e, e2(e, OP_OR, before, tie), DT_I32), r, false);
    ValId idx = rank;
    if (k < n)
        idx = e2(e, OP_MINIMUM, rank, ir_const_int(ad->bw, e->b, bty(ad, rank), k - 1, e->loc));
    Type gt = type_with_shape(bty(ad, d), r, xt.shape);
    Inst *g = ir_emit(ad->bw, e->b, OP_GATHER, (ValId[]){d, idx}, 2, &gt, 1, e->loc);
    g->ival = r - 1;
    if (k == n)
        return g->res[0];
    ValId kept = ecmp(e, OP_LT, rank, ir_const_int(ad->bw, e->b, bty(ad, rank), k, e->loc));
    return ewhere(e, kept, g->res[0], ec(e, g->res[0], 0.0));
}

/* ---- Structural zeros (docs/AD.md, "Untaken branches: exact zeros") ----
 * Ad.zm marks, per backward value, the lanes where an adjoint is 0 because no gradient
 * reaches them: a tl.where's untaken side, the lanes a maximum did not pick, a store's
 * masked-off lanes.  It follows the adjoint through elementwise rules (give) and sums of
 * contributions (accum: the lanes zero in both).  A zero that arithmetic produced (dy / inf)
 * is not structural: there the product with a non-finite partial stays NaN, as it should. */

/* The structural zeros of unbroadcast(d, xt) from d's, z: the lanes where every lane summed is
 * zero (min over the summed axes). */
static ValId zm_unbroadcast(Em *e, ValId z, Type xt)
{
    Type zt = bty(e->ad, z);
    ValId m = ecast(e, z, DT_I32);
    if (xt.rank == 0) {
        while (bty(e->ad, m).rank > 0)
            m = ereduce(e, OP_MIN, m, 0, false);
    } else {
        for (int i = 0; i < xt.rank; i++)
            if (xt.shape[i] == 1 && zt.shape[i] != 1)
                m = ereduce(e, OP_MIN, m, i, true);
    }
    return ecmp(e, OP_NE, m, ir_const_int(e->ad->bw, e->b, bty(e->ad, m), 0, e->loc));
}

/* The lanes of z1 or z2 (0: none). */
static ValId zm_or(Em *e, ValId z1, ValId z2)
{
    return !z1 ? z2 : !z2 || z1 == z2 ? z1 : e2(e, OP_OR, z1, z2);
}

/* d on the lanes where c is take, 0 elsewhere: where(c, d, 0) or where(c, 0, d), with
 * its structural zeros (the other lanes, and d's). */
static ValId eselect(Em *e, ValId c, ValId d, bool take)
{
    ValId z = ec(e, d, 0.0), r = take ? ewhere(e, c, d, z) : ewhere(e, c, z, d);
    zm_set(e->ad, r, zm_or(e, take ? e1(e, OP_NOT, c) : c, zm_of(e->ad, d)), true);
    return r;
}

/* Operand k's contribution x made exactly 0 on the lanes where no gradient reaches the
 * result (zm of its adjoint d), when ad_partial_unsafe says the partial may be non-finite
 * (a branch tl.where does not take: d = 0 there, the partial inf or NaN):
 * where(zm, 0, x).  Elsewhere x unchanged, bit for bit; no code where the partial is
 * finite or no lane is known to get nothing.  A contribution already guarded (x is c[j]:
 * x * x) is not guarded twice. */
static ValId strong_zero(Em *e, const Inst *in, const ValId *c, int k, ValId x)
{
    Ad *ad = e->ad;
    ValId d = ad->adj[in->res[0]], zm = zm_of(ad, d);
    if (!zm || !ad_partial_unsafe(&ad->fin, in, k))
        return x;
    for (int j = 0; j < in->nargs; j++)
        if (c[j] == x)
            return x;
    ASSERT(type_eq(bty(ad, d), bty(ad, x)));
    return ewhere(e, zm, ec(e, x, 0.0), x);
}

/* Hands operand k's contribution x to accum(), or, when the same value is
 * also operand j != k, keeps it in c[k]: merge_contribs() adds those up so
 * that the value's adjoint gets one term (x * x gives (d * x) * 2).  The
 * contribution gets its strong zero first (strong_zero). */
static void give(Em *e, const Inst *in, ValId *c, int k, ValId x)
{
    Ad *ad = e->ad;
    ValId d = ad->adj[in->res[0]];
    x = strong_zero(e, in, c, k, x);
    /* an elementwise rule's contribution is 0 where its adjoint is (guarded, or a finite
     * partial times 0) */
    if (!zm_of(ad, x) && zm_of(ad, d) && op_info[in->op].elementwise && type_same_shape(bty(ad, x), bty(ad, d)))
        zm_set(ad, x, zm_of(ad, d), zm_sel(ad, d));
    for (int j = 0; j < in->nargs; j++)
        if (j != k && in->args[j] == in->args[k]) {
            c[k] = x;
            return;
        }
    accum(e, in->args[k], x);
}

static void merge_contribs(Em *e, const Inst *in, ValId *c)
{
    for (int k = 1; k < in->nargs; k++)
        for (int j = 0; j < k && c[k]; j++)
            if (c[j] && in->args[j] == in->args[k]) {
                c[j] = c[j] == c[k] ? e2(e, OP_MUL, c[j], ec(e, c[j], 2.0)) : e2(e, OP_ADD, c[j], c[k]);
                c[k] = 0;
            }
    for (int k = 0; k < in->nargs; k++)
        if (c[k])
            accum(e, in->args[k], c[k]);
}

/* ---- scans (docs/AD.md, "Scans") ---- */

/* A combine region's body: p holds the 2n params (the running values, then
 * the next element's); writes the n yielded values to y. */
typedef void (*CombineFn)(Em *e, const ValId *p, ValId *y);

/* A scan over xs (backward values of one shape) along axis with the
 * combine region body() builds; returns its results. */
static ValId *escan(Em *e, const ValId *xs, int n, int axis, bool rev, CombineFn body, const char *const *names)
{
    Func *f = e->ad->bw;
    Type rt[4] = {{0}};
    ASSERT(n <= 4);
    for (int i = 0; i < n; i++)
        rt[i] = bty(e->ad, xs[i]);
    Inst *in = ir_emit(f, e->b, OP_SCAN, xs, n, rt, n, e->loc);
    in->ival = axis;
    in->flags = rev ? IF_REVERSE : 0;
    ValId *res = in->res;
    Block *rb = ir_inst_add_region(f, in);
    ValId p[8], y[4];
    for (int i = 0; i < 2 * n; i++)
        p[i] = ir_block_param_add(f, rb, type_with_shape(rt[i % n], 0, NULL), names[i], e->loc);
    Em re = {e->ad, rb, e->loc};
    body(&re, p, y);
    ir_emit(f, rb, OP_YIELD, y, n, NULL, 0, e->loc);
    return res;
}

/* (a1, b1) then (a2, b2): (a1*a2, a2*b1 + b2) */
static void combine_linrec(Em *e, const ValId *p, ValId *y)
{
    y[0] = e2(e, OP_MUL, p[0], p[2]);
    y[1] = e2(e, OP_ADD, e2(e, OP_MUL, p[2], p[1]), p[3]);
}

/* (last, prev, count): the segment's last value, the one before it (the
 * fill while the segment has one element) and its length. */
static void combine_shift(Em *e, const ValId *p, ValId *y)
{
    Func *f = e->ad->bw;
    ValId two = ir_const_int(f, e->b, bty(e->ad, p[2]), 2, e->loc);
    y[0] = p[3];
    y[1] = ewhere(e, ecmp(e, OP_GE, p[5], two), p[4], p[0]);
    y[2] = e2(e, OP_ADD, p[2], p[5]);
}

/* (key, sum): the key of the segment's last element and the sum of the
 * values of its trailing run of that key (keys monotone along the scan). */
static void combine_segsum(Em *e, const ValId *p, ValId *y)
{
    y[0] = p[2];
    y[1] = e2(e, OP_ADD, p[3], ewhere(e, ecmp(e, OP_EQ, p[0], p[2]), p[1], ec(e, p[1], 0.0)));
}

/* x shifted by one along axis in the direction of a scan with `rev`: lane t
 * gets x[t-1] (rev: x[t+1]), the first lane in that direction `fill`.
 * Exact: values are only selected. */
static ValId eshift(Em *e, ValId x, int axis, bool rev, double fill)
{
    Type t = bty(e->ad, x);
    ValId xs[3] = {x, ec(e, x, fill), ir_const_int(e->ad->bw, e->b, type_with_dtype(t, DT_I32), 1, e->loc)};
    static const char *const names[] = {"last1", "prev1", "n1", "last2", "prev2", "n2"};
    return escan(e, xs, 3, axis, rev, combine_shift, names)[1];
}

/* g[s] = sum over t at or after s (in the direction of rev) of
 * d[t] * prod of a[r] for r strictly after s up to t: a linear recurrence
 * run against the direction of rev, with the coefficients shifted by one. */
static ValId suffix_linrec(Em *e, ValId a, ValId d, int axis, bool rev)
{
    ValId xs[2] = {eshift(e, a, axis, !rev, 0.0), d};
    static const char *const names[] = {"a1", "b1", "a2", "b2"};
    return escan(e, xs, 2, axis, !rev, combine_linrec, names)[1];
}

/* The adjoint of y = cumprod(x) (direction rev): dx[s] = (product of the x
 * before s) * g[s], with g as above: exact with zeros, no division. */
static ValId cumprod_adjoint(Em *e, ValId x, ValId y, ValId d, int axis, bool rev)
{
    return e2(e, OP_MUL, eshift(e, y, axis, rev, 1.0), suffix_linrec(e, x, d, axis, rev));
}

/* The adjoint of x in y = max or min of x along axis (keep: keep_dims), d
 * the adjoint of y: lanes equal to the result share d evenly (PyTorch's
 * amax/amin). */
static ValId extremum_adjoint(Em *e, ValId fx, ValId fy, ValId d, int axis, bool keep)
{
    Ad *ad = e->ad;
    Type xt = fty(ad, fx);
    ValId x = P(e, fx);
    ValId yb = bcast_back(e, P(e, fy), xt, axis, keep);
    ValId db = bcast_back(e, d, xt, axis, keep);
    ValId m = ecmp(e, OP_EQ, x, yb);
    ValId cnt = ereduce(e, OP_SUM, ecast(e, m, (Dtype)bty(ad, d).dt), axis, true);
    ValId cb = bcast_back(e, cnt, xt, axis, true);
    return ewhere(e, m, e2(e, OP_DIV, db, cb), ec(e, db, 0.0));
}

/* Every adjoint rule, one case per op, neighbours together.  d is the
 * adjoint of the result y; GIVE(k, x) adds x to operand k's adjoint
 * (inactive operands ignore it; ACT() saves emitting code for them). */
static void adj_rule(Em *e, const Inst *in)
{
    Ad *ad = e->ad;
    ValId y = in->res[0], d = ad->adj[y];
    if (!d || !ad_active(ad, y))
        return;
    ValId a0 = in->args[0], a1 = in->nargs > 1 ? in->args[1] : 0, a2 = in->nargs > 2 ? in->args[2] : 0;
    ValId c[3] = {0, 0, 0}; /* contributions to repeated operands (give) */
    ASSERT(in->nargs <= 3);
#define ACT(v) ad_active(ad, (v))
#define GIVE(k, x) give(e, in, c, (k), (x))
#define MUL(x, z) e2(e, OP_MUL, (x), (z))
#define DIV(x, z) e2(e, OP_DIV, (x), (z))
#define ADD(x, z) e2(e, OP_ADD, (x), (z))
#define SUB(x, z) e2(e, OP_SUB, (x), (z))
#define NEG(x) e1(e, OP_NEG, (x))
#define K(v) ec(e, d, (v))
    switch ((OpKind)in->op) {
    /* arithmetic */
    case OP_ADD:
        GIVE(0, d);
        GIVE(1, d);
        break;
    case OP_SUB:
        GIVE(0, d);
        if (ACT(a1))
            GIVE(1, NEG(d));
        break;
    case OP_MUL:
        if (ACT(a0))
            GIVE(0, MUL(d, P(e, ad->spec->mutate == AD_MUTATE_MUL ? a0 : a1)));
        if (ACT(a1))
            GIVE(1, a1 == a0 && c[0] ? c[0] : MUL(d, P(e, a0)));
        break;
    case OP_DIV: /* y = a/b: da = d/b, db = -d*y/b */
        if (ACT(a0))
            GIVE(0, DIV(d, P(e, a1)));
        if (ACT(a1))
            GIVE(1, NEG(DIV(MUL(d, P(e, y)), P(e, a1))));
        break;
    case OP_REM: /* float fmod: y = a - trunc(a/b)*b */
        GIVE(0, d);
        if (ACT(a1))
            GIVE(1, NEG(MUL(d, e1(e, OP_TRUNC, DIV(P(e, a0), P(e, a1))))));
        break;
    case OP_POW: /* da = d*b*a^(b-1), db = d*y*log(a) */
        if (ACT(a0))
            GIVE(0, MUL(MUL(d, P(e, a1)), e2(e, OP_POW, P(e, a0), SUB(P(e, a1), K(1.0)))));
        if (ACT(a1))
            GIVE(1, MUL(MUL(d, P(e, y)), e1(e, OP_LOG, P(e, a0))));
        break;
    case OP_MAXIMUM: /* ties: the whole gradient to the first operand */
    case OP_MINIMUM: {
        ValId m = ecmp(e, in->op == OP_MAXIMUM ? OP_GE : OP_LE, P(e, a0), P(e, a1));
        if (ACT(a0))
            GIVE(0, eselect(e, m, d, true));
        if (ACT(a1))
            GIVE(1, eselect(e, m, d, false));
        break;
    }
    case OP_ATAN2: { /* atan2(a, b): da = d*b/(a^2+b^2), db = -d*a/(a^2+b^2) */
        ValId pa = P(e, a0), pb = P(e, a1);
        ValId r = ADD(MUL(pa, pa), MUL(pb, pb));
        if (ACT(a0))
            GIVE(0, DIV(MUL(d, pb), r));
        if (ACT(a1))
            GIVE(1, NEG(DIV(MUL(d, pa), r)));
        break;
    }
    case OP_NEG:
        GIVE(0, NEG(d));
        break;
    case OP_ABS: { /* sign(x)*d, 0 at x == 0 (PyTorch's convention) */
        ValId x = P(e, a0), z = K(0.0);
        GIVE(0, ewhere(e, ecmp(e, OP_GT, x, z), d, ewhere(e, ecmp(e, OP_LT, x, z), NEG(d), z)));
        break;
    }
    case OP_FMA: /* a*b + c */
        if (ACT(a0))
            GIVE(0, MUL(d, P(e, a1)));
        if (ACT(a1))
            GIVE(1, a1 == a0 && c[0] ? c[0] : MUL(d, P(e, a0)));
        GIVE(2, d);
        break;
    case OP_WHERE: { /* the condition gets nothing; each side its lanes */
        bool swap = ad->spec->mutate == AD_MUTATE_WHERE;
        if (ACT(a1))
            GIVE(1, eselect(e, P0(ad, a0), d, !swap));
        if (ACT(a2))
            GIVE(2, eselect(e, P0(ad, a0), d, swap));
        break;
    }
    case OP_CAST: /* the adjoint cast back (accum converts to the operand's adjoint dtype) */
        GIVE(0, d);
        break;
    /* elementwise math: y = f(x) */
    case OP_EXP:
        GIVE(0, MUL(d, P(e, ad->spec->mutate == AD_MUTATE_EXP ? a0 : y)));
        break;
    case OP_EXP2:
        GIVE(0, MUL(MUL(d, P(e, y)), K(AD_LN2)));
        break;
    case OP_EXPM1:
        GIVE(0, MUL(d, ADD(P(e, y), K(1.0))));
        break;
    case OP_LOG:
        GIVE(0, DIV(d, P(e, a0)));
        break;
    case OP_LOG2:
        GIVE(0, DIV(d, MUL(P(e, a0), K(AD_LN2))));
        break;
    case OP_LOG1P:
        GIVE(0, DIV(d, ADD(P(e, a0), K(1.0))));
        break;
    case OP_SQRT:
        GIVE(0, DIV(MUL(d, K(0.5)), P(e, y)));
        break;
    case OP_RSQRT: { /* -0.5*d*y^3 */
        ValId py = P(e, y);
        GIVE(0, MUL(MUL(d, K(-0.5)), MUL(py, MUL(py, py))));
        break;
    }
    case OP_SIGMOID: {
        ValId py = P(e, y);
        GIVE(0, MUL(d, MUL(py, SUB(K(1.0), py))));
        break;
    }
    case OP_SIN:
        GIVE(0, MUL(d, e1(e, OP_COS, P(e, a0))));
        break;
    case OP_COS:
        GIVE(0, NEG(MUL(d, e1(e, OP_SIN, P(e, a0)))));
        break;
    case OP_TAN: {
        ValId py = P(e, y);
        GIVE(0, MUL(d, ADD(K(1.0), MUL(py, py))));
        break;
    }
    case OP_ASIN:
    case OP_ACOS: { /* +-d/sqrt(1-x^2) */
        ValId x = P(e, a0);
        ValId g = MUL(d, e1(e, OP_RSQRT, SUB(K(1.0), MUL(x, x))));
        GIVE(0, in->op == OP_ASIN ? g : NEG(g));
        break;
    }
    case OP_ATAN: {
        ValId x = P(e, a0);
        GIVE(0, DIV(d, ADD(K(1.0), MUL(x, x))));
        break;
    }
    case OP_SINH:
        GIVE(0, MUL(d, e1(e, OP_COSH, P(e, a0))));
        break;
    case OP_COSH:
        GIVE(0, MUL(d, e1(e, OP_SINH, P(e, a0))));
        break;
    case OP_TANH: {
        ValId py = P(e, y);
        GIVE(0, MUL(d, SUB(K(1.0), MUL(py, py))));
        break;
    }
    case OP_ERF: { /* d * 2/sqrt(pi) * exp(-x^2) */
        ValId x = P(e, a0);
        GIVE(0, MUL(MUL(d, K(AD_2_SQRTPI)), e1(e, OP_EXP, NEG(MUL(x, x)))));
        break;
    }
    /* shape ops */
    case OP_BROADCAST: { /* zero where every lane summed is (a branch no lane of a row takes) */
        ValId r = unbroadcast(e, d, adt(fty(ad, a0)));
        if (zm_sel(ad, d))
            zm_set(ad, r, zm_unbroadcast(e, zm_of(ad, d), fty(ad, a0)), true);
        GIVE(0, r);
        break;
    }
    case OP_EXPAND_DIMS:
    case OP_RESHAPE: {
        ValId r = eshape(e, OP_RESHAPE, d, adt(fty(ad, a0)), 0);
        if (zm_of(ad, d))
            zm_set(ad, r, eshape(e, OP_RESHAPE, zm_of(ad, d), type_with_dtype(fty(ad, a0), DT_I1), 0),
                   zm_sel(ad, d));
        GIVE(0, r);
        break;
    }
    case OP_PERMUTE: {
        int32_t inv[KAD_MAX_RANK];
        for (int i = 0; i < in->nints; i++)
            inv[in->ints[i]] = i;
        GIVE(0, epermute(e, d, inv));
        break;
    }
    case OP_JOIN: {
        Type t = bty(ad, d);
        for (int k = 0; k < 2; k++)
            if (ACT(in->args[k]))
                GIVE(k, eshape(e, OP_SPLIT, d, type_with_shape(t, t.rank - 1, t.shape), k));
        break;
    }
    case OP_SPLIT: {
        Type t = bty(ad, d);
        int32_t sh[KAD_MAX_RANK];
        memcpy(sh, t.shape, sizeof sh);
        sh[t.rank] = 2;
        int h = (int)in->ival;
        /* the other half's split already gave join(d', 0) (or join(0, d')) as the whole adjoint
         * of x in this block: one join(d', d) replaces it instead of adding a second join */
        const Inst *j = ad->adj[a0] ? ir_block_def(e->b, ad->adj[a0]) : NULL;
        const Inst *z0 = j && j->op == OP_JOIN ? ir_block_def(e->b, j->args[h]) : NULL;
        if (z0 && z0->op == OP_CONST && z0->fval == 0.0 && type_eq(bty(ad, j->args[1 - h]), t)) {
            ValId other = j->args[1 - h];
            ad->adj[a0] = ir_op2(ad->bw, e->b, OP_JOIN, type_with_shape(t, t.rank + 1, sh), h ? other : d,
                                 h ? d : other, e->loc);
            name_after(ad, ad->adj[a0], "d", a0);
            break;
        }
        ValId z = K(0.0);
        GIVE(0, ir_op2(ad->bw, e->b, OP_JOIN, type_with_shape(t, t.rank + 1, sh), h ? z : d, h ? d : z, e->loc));
        break;
    }
    case OP_CUSTOM_JVP: /* the tangent rule is forward mode's: the adjoint goes to operand 0 */
        GIVE(0, d);
        break;
    case OP_FLIP:
        GIVE(0, eshape(e, OP_FLIP, d, bty(ad, d), in->ival));
        break;
    case OP_GATHER:
        GIVE(0, gather_adjoint(e, in, d));
        break;
    case OP_SORT:
        GIVE(0, sort_adjoint(e, in, d));
        break;
    /* reductions and scans */
    case OP_SUM: {
        ValId r = bcast_back(e, d, fty(ad, a0), (int)in->ival, in->flags & IF_KEEP_DIMS);
        if (zm_of(ad, d))
            zm_set(ad, r, bcast_back(e, zm_of(ad, d), fty(ad, a0), (int)in->ival, in->flags & IF_KEEP_DIMS),
                   zm_sel(ad, d));
        GIVE(0, r);
        break;
    }
    case OP_MAX:
    case OP_MIN:
        if (ad->spec->mutate == AD_MUTATE_MAX)
            GIVE(0, bcast_back(e, d, fty(ad, a0), (int)in->ival, in->flags & IF_KEEP_DIMS));
        else
            GIVE(0, extremum_adjoint(e, a0, y, d, (int)in->ival, in->flags & IF_KEEP_DIMS));
        break;
    case OP_CUMSUM: {
        Inst *ni = ir_emit(ad->bw, e->b, OP_CUMSUM, &d, 1, (Type[]){bty(ad, d)}, 1, e->loc);
        ni->ival = in->ival;
        ni->flags = (uint16_t)((in->flags & IF_REVERSE) ^ (ad->spec->mutate == AD_MUTATE_CUMSUM ? 0 : IF_REVERSE));
        GIVE(0, ni->res[0]);
        break;
    }
    case OP_CUMPROD:
        GIVE(0, cumprod_adjoint(e, P(e, a0), P(e, y), d, (int)in->ival, in->flags & IF_REVERSE));
        break;
    case OP_DOT: { /* y = a@b + acc: da = d@b^T, db = a^T@d, dacc = d */
        /* ^T swaps the last two axes; a leading batch axis (3-D dot) stays */
        int32_t tr[KAD_MAX_RANK];
        int rank = fty(ad, a0).rank;
        for (int i = 0; i < rank; i++)
            tr[i] = i;
        tr[rank - 2] = rank - 1;
        tr[rank - 1] = rank - 2;
        Type at = adt(fty(ad, a0)), bt = adt(fty(ad, a1));
        at.dt = bt.dt = bty(ad, d).dt;
        if (ACT(a0)) {
            ValId z = ezero(e, at);
            ValId r = ir_op3(ad->bw, e->b, OP_DOT, at, d, epermute(e, P(e, a1), tr), z, e->loc);
            e->b->insts.v[e->b->insts.n - 1].ival = in->ival;
            GIVE(0, r);
        }
        if (ACT(a1)) {
            ValId z = ezero(e, bt);
            ValId r = ir_op3(ad->bw, e->b, OP_DOT, bt, epermute(e, P(e, a0), tr), d, z, e->loc);
            e->b->insts.v[e->b->insts.n - 1].ival = in->ival;
            GIVE(1, r);
        }
        GIVE(2, d);
        break;
    }
#define LIBM_CASE(en, ...) case en:
    KAD_LIBM_OPS(LIBM_CASE)
#undef LIBM_CASE
    { /* libdevice functions: d * dy/da_k (src/ad/ad_libm.c) */
        ValId pa[3] = {0, 0, 0};
        for (int k = 0; k < in->nargs; k++)
            pa[k] = P(e, in->args[k]);
        for (int k = 0; k < in->nargs; k++)
            if (ACT(in->args[k])) {
                ValId p = ad_libm_partial(ad->bw, e->b, e->loc, in, k, pa, P(e, y));
                if (p && ad->spec->mutate == AD_MUTATE_LIBM)
                    p = MUL(p, K(2.0));
                if (p)
                    GIVE(k, MUL(d, p));
            }
        break;
    }
    default:
        /* validate_block refused every active op without a rule */
        die("no adjoint rule for '%s'", op_info[in->op].name);
    }
    merge_contribs(e, in, c);
#undef ACT
#undef GIVE
#undef MUL
#undef DIV
#undef ADD
#undef SUB
#undef NEG
#undef K
}

/* i32 tile of shape t holding each lane's index along axis. */
static ValId axis_index(Em *e, Type t, int axis)
{
    Func *f = e->ad->bw;
    int32_t len = t.shape[axis], sh[KAD_MAX_RANK];
    Inst *ar = ir_emit(f, e->b, OP_ARANGE, NULL, 0, (Type[]){type_tile(DT_I32, 1, &len)}, 1, e->loc);
    ar->ival = 0;
    ValId v = ar->res[0];
    if (t.rank > 1) {
        for (int i = 0; i < t.rank; i++)
            sh[i] = i == axis ? len : 1;
        v = eshape(e, OP_RESHAPE, v, type_tile(DT_I32, t.rank, sh), 0);
    }
    return eshape(e, OP_BROADCAST, v, type_with_dtype(t, DT_I32), 0);
}

/* ---- reduces with a combine function (docs/AD.md, "Reduces") ---- */

/* An inclusive scan of the primal values xs with in's combine region
 * copied; swap: the region's two halves of params exchanged, f(b, a), so
 * that a reverse scan folds each element in front of the ones after it. */
static ValId *combine_scan(Em *e, const Inst *in, const ValId *xs, bool rev, bool swap)
{
    Ad *ad = e->ad;
    Func *f = ad->bw;
    const Block *fr = in->regions[0];
    int n = in->nargs;
    Type *rt = arena_alloc(ad->a, sizeof *rt * (size_t)n);
    for (int i = 0; i < n; i++)
        rt[i] = bty(ad, xs[i]);
    Inst *ni = ir_emit(f, e->b, OP_SCAN, xs, n, rt, n, e->loc);
    ni->ival = in->ival;
    ni->flags = rev ? IF_REVERSE : 0;
    ValId *res = ni->res;
    Block *rb = ir_inst_add_region(f, ni);
    ValId *m = arena_alloc(ad->a, sizeof *m * (size_t)ad->fw->vals.n);
    ValId *np = arena_alloc(ad->a, sizeof *np * (size_t)(2 * n));
    for (int i = 0; i < 2 * n; i++)
        np[i] = ir_block_param_add(f, rb, fty(ad, fr->params[i]), fname(ad, fr->params[i]), e->loc);
    for (int i = 0; i < 2 * n; i++)
        m[fr->params[i]] = np[swap ? (i + n) % (2 * n) : i];
    copy_combine_body(ad, rb, fr, m, &e->loc);
    return res;
}

/* x shifted by one along axis (rev: lane t gets x[t+1], else x[t-1]); the
 * first lane in that direction keeps its own value (any dtype). */
static ValId shift_any(Em *e, ValId x, int axis, bool rev)
{
    Type t = bty(e->ad, x);
    ValId xs[3] = {x, x, ir_const_int(e->ad->bw, e->b, type_with_dtype(t, DT_I32), 1, e->loc)};
    static const char *const names[] = {"last1", "prev1", "n1", "last2", "prev2", "n2"};
    return escan(e, xs, 3, axis, rev, combine_shift, names)[1];
}

/* The combine region applied lane by lane to tiles: params 0..n-1 get a,
 * n..2n-1 get b (the region's values typed as tiles: ad->lanes, set by the caller);
 * pm maps each region value to its tile. */
static void apply_combine(Em *e, const Inst *in, const ValId *a, const ValId *b)
{
    Ad *ad = e->ad;
    const Block *fr = in->regions[0];
    int n = in->nargs;
    for (int i = 0; i < n; i++) {
        ad->pm[fr->params[i]] = a[i];
        ad->pm[fr->params[n + i]] = b[i];
    }
    for (int k = 0; k + 1 < fr->insts.n; k++) {
        const Inst *c = &fr->insts.v[k];
        ValId *args = arena_alloc(ad->a, sizeof *args * (size_t)(c->nargs + 1));
        for (int j = 0; j < c->nargs; j++)
            args[j] = ad->pm[c->args[j]];
        ad->pm[c->res[0]] = emit_like(ad, e->b, c, args)->res[0];
    }
}

/* The adjoints of the combine's params 0..n-1 (first) or n..2n-1 from
 * the seeds on its yields, through the primal tiles pm holds: the region's
 * instructions walked backwards with adj_rule.  Missing adjoints: zeros
 * shaped like zero_like[i]. */
static void vjp_combine(Em *e, const Inst *in, const ValId *seed, bool first, const ValId *zero_like, ValId *out)
{
    Ad *ad = e->ad;
    const Block *fr = in->regions[0];
    const Inst *y = ad_block_term(fr);
    int n = in->nargs;
    for (int i = 0; i < fr->nparams; i++)
        ad->adj[fr->params[i]] = 0;
    for (int k = 0; k < fr->insts.n; k++)
        if (fr->insts.v[k].nres == 1)
            ad->adj[fr->insts.v[k].res[0]] = 0;
    for (int i = 0; i < n; i++)
        if (seed[i])
            accum(e, y->args[i], seed[i]);
    for (int k = fr->insts.n - 2; k >= 0; k--) {
        const Inst *c = &fr->insts.v[k];
        if (op_differentiable((OpKind)c->op) && c->nres == 1)
            adj_rule(e, c);
    }
    for (int i = 0; i < n; i++) {
        ValId d = ad->adj[fr->params[first ? i : n + i]];
        out[i] = d ? d : (zero_like[i] ? ec(e, zero_like[i], 0.0) : 0);
    }
}

/* The adjoint of r = reduce(x, f) along axis: for lane i, with P_i the
 * reduction of the lanes before it and S_i of those after it,
 * r = f(f(P_i, x_i), S_i) (f associative), so dx_i is the VJP of
 * x -> f(f(P_i, x), S_i) at x_i applied to dr; the first lane has no P
 * and the last no S (selected away).  P and S are inclusive scans with f
 * shifted by one lane.  A sum combine is a broadcast; a tl.maximum or
 * tl.minimum combine has tl.max's rule (ties share dr evenly). */
/* A combine region fr's params and single results (*rv, the count returned), marked in ad->lanes
 * to be typed as tiles of xt while the region is applied and differentiated lane by lane. */
static int region_lanes(Ad *ad, const Block *fr, Type xt, ValId **rv_out)
{
    int nv = 0;
    ValId *rv = arena_alloc(ad->a, sizeof *rv * (size_t)(fr->nparams + fr->insts.n));
    uint8_t *lanes = arena_alloc(ad->a, (size_t)ad->fw->vals.n);
    for (int i = 0; i < fr->nparams; i++)
        rv[nv++] = fr->params[i];
    for (int k = 0; k < fr->insts.n; k++)
        if (fr->insts.v[k].nres == 1)
            rv[nv++] = fr->insts.v[k].res[0];
    for (int i = 0; i < nv; i++)
        lanes[rv[i]] = 1;
    ad->lanes = lanes;
    ad->lane_ty = xt;
    *rv_out = rv;
    return nv;
}

static void adj_reduce(Em *e, const Inst *in)
{
    Ad *ad = e->ad;
    int n = in->nargs, axis = (int)in->ival;
    const Block *fr = in->regions[0];
    const Inst *fy = ad_block_term(fr);
    bool any = false, act = false;
    for (int k = 0; k < n; k++) {
        any |= ad->adj[in->res[k]] && ad_active(ad, in->res[k]);
        act |= ad_active(ad, in->args[k]);
    }
    if (!any || !act)
        return;
    Type xt = fty(ad, in->args[0]);
    const Inst *c0 = &fr->insts.v[0];
    bool two = n == 1 && fr->insts.n == 2 && fy->args[0] == c0->res[0] &&
               ((c0->args[0] == fr->params[0] && c0->args[1] == fr->params[1]) ||
                (c0->args[0] == fr->params[1] && c0->args[1] == fr->params[0]));
    if (two && c0->op == OP_ADD) { /* a sum: broadcast */
        accum(e, in->args[0], bcast_back(e, ad->adj[in->res[0]], xt, axis, false));
        return;
    }
    if (two && (c0->op == OP_MAXIMUM || c0->op == OP_MINIMUM)) { /* tl.max / tl.min's rule */
        accum(e, in->args[0], extremum_adjoint(e, in->args[0], in->res[0], ad->adj[in->res[0]], axis, false));
        return;
    }
    ValId *x = arena_alloc(ad->a, sizeof *x * (size_t)n), *P = arena_alloc(ad->a, sizeof *P * (size_t)n);
    ValId *S = arena_alloc(ad->a, sizeof *S * (size_t)n), *db = arena_alloc(ad->a, sizeof *db * (size_t)n);
    ValId *Z = arena_alloc(ad->a, sizeof *Z * (size_t)n), *dZ = arena_alloc(ad->a, sizeof *dZ * (size_t)n);
    ValId *dx = arena_alloc(ad->a, sizeof *dx * (size_t)n);
    for (int k = 0; k < n; k++)
        x[k] = P0(ad, in->args[k]);
    ValId *incl = combine_scan(e, in, x, false, false), *rincl = combine_scan(e, in, x, true, true);
    for (int k = 0; k < n; k++) {
        P[k] = shift_any(e, incl[k], axis, false);
        S[k] = shift_any(e, rincl[k], axis, true);
        ValId d = ad_active(ad, in->res[k]) ? ad->adj[in->res[k]] : 0;
        db[k] = d ? bcast_back(e, d, type_with_dtype(xt, (Dtype)adt(fty(ad, in->args[k])).dt), axis, false) : 0;
    }
    ValId idx = axis_index(e, xt, axis);
    ValId first = ecmp(e, OP_EQ, idx, ir_const_int(ad->bw, e->b, bty(ad, idx), 0, e->loc));
    ValId last = ecmp(e, OP_EQ, idx, ir_const_int(ad->bw, e->b, bty(ad, idx), xt.shape[axis] - 1, e->loc));
    /* the region's values typed as tiles of x's shape (fty) while it is
     * applied and differentiated lane by lane */
    ValId *rv;
    int nv = region_lanes(ad, fr, xt, &rv);
    ValId *pin = arena_alloc(ad->a, sizeof *pin * (size_t)nv);
    apply_combine(e, in, P, x); /* Z = f(P, x) */
    for (int i = 0; i < nv; i++)
        pin[i] = ad->pm[rv[i]];
    for (int k = 0; k < n; k++)
        Z[k] = ewhere(e, first, x[k], ad->pm[fy->args[k]]);
    apply_combine(e, in, Z, S); /* f(Z, S) */
    vjp_combine(e, in, db, true, db, dZ);
    for (int k = 0; k < n; k++) /* the last lane: dZ = dr (zero for a slot without one) */
        if (dZ[k])
            dZ[k] = ewhere(e, last, db[k] ? db[k] : ec(e, dZ[k], 0.0), dZ[k]);
    for (int i = 0; i < nv; i++)
        ad->pm[rv[i]] = pin[i];
    vjp_combine(e, in, dZ, false, dZ, dx);
    ad->lanes = NULL;
    for (int i = 0; i < nv; i++) {
        ad->pm[rv[i]] = 0;
        ad->adj[rv[i]] = 0;
    }
    for (int k = 0; k < n; k++)
        if (dx[k] && ad_active(ad, in->args[k]))
            accum(e, in->args[k], ewhere(e, first, dZ[k] ? dZ[k] : ec(e, dx[k], 0.0), dx[k]));
}

/* A selection scan's source positions: the forward's scan again, its
 * combine region copied, with an i32 slot per selected float slot k that
 * active[k] marks, choosing its index where the region chooses the value
 * (ad_scan_select).  src[k]: the position along the axis each result of
 * slot k was taken from. */
static void select_sources(Em *e, const Inst *in, const bool *active, ValId idx, ValId *src)
{
    Ad *ad = e->ad;
    Func *f = ad->bw;
    const Block *fr = in->regions[0];
    const Inst *fy = ad_block_term(fr);
    int n = in->nargs, m = 0;
    int *slot = arena_alloc(ad->a, sizeof *slot * (size_t)n);
    for (int k = 0; k < n; k++)
        slot[k] = active[k] ? m++ : -1;
    ValId *xs = arena_alloc(ad->a, sizeof *xs * (size_t)(n + m));
    Type *rt = arena_alloc(ad->a, sizeof *rt * (size_t)(n + m));
    for (int i = 0; i < n + m; i++) {
        xs[i] = i < n ? P0(ad, in->args[i]) : idx;
        rt[i] = bty(ad, xs[i]);
    }
    Inst *ni = ir_emit(f, e->b, OP_SCAN, xs, n + m, rt, n + m, e->loc);
    ni->ival = in->ival;
    ni->flags = in->flags;
    ValId *res = ni->res;
    Block *rb = ir_inst_add_region(f, ni);
    ValId *map = arena_alloc(ad->a, sizeof *map * (size_t)ad->fw->vals.n);
    ValId *ip = arena_alloc(ad->a, sizeof *ip * (size_t)(2 * m + 1));
    Type i32 = type_tile(DT_I32, 0, NULL);
    for (int h = 0; h < 2; h++) {
        for (int i = 0; i < n; i++) {
            ValId p = fr->params[h * n + i];
            map[p] = ir_block_param_add(f, rb, fty(ad, p), fname(ad, p), e->loc);
        }
        for (int j = 0; j < m; j++)
            ip[h * m + j] = ir_block_param_add(f, rb, i32, h ? "at2" : "at1", e->loc);
    }
    for (int i = 0; i + 1 < fr->insts.n; i++) {
        const Inst *c = &fr->insts.v[i];
        ValId *args = arena_alloc(ad->a, sizeof *args * (size_t)(c->nargs + 1));
        for (int j = 0; j < c->nargs; j++)
            args[j] = map[c->args[j]];
        Inst *nc = emit_like(ad, rb, c, args);
        if (c->nres == 1)
            map[c->res[0]] = nc->res[0];
    }
    ValId *ys = arena_alloc(ad->a, sizeof *ys * (size_t)(n + m));
    for (int i = 0; i < n; i++)
        ys[i] = map[fy->args[i]];
    for (int k = 0; k < n; k++) {
        if (slot[k] < 0)
            continue;
        ValId c;
        bool run;
        bool sel = ad_scan_select(in, k, &c, &run);
        ASSERT(sel);
        (void)sel;
        ValId a1 = ip[slot[k]], a2 = ip[m + slot[k]];
        ys[n + slot[k]] = ir_op3(f, rb, OP_WHERE, i32, map[c], run ? a1 : a2, run ? a2 : a1, e->loc);
    }
    ir_emit(f, rb, OP_YIELD, ys, n + m, NULL, 0, e->loc);
    for (int k = 0; k < n; k++)
        src[k] = slot[k] < 0 ? 0 : res[n + slot[k]];
}

/* The scan of the affine maps mu -> A mu + b on m-vectors (A: m*m slots,
 * row-major, then b: m slots; xs holds them), along axis in direction rev:
 * (A1, b1) then (A2, b2) is (A2 A1, A2 b1 + b2), the later map applied
 * after; returns the b results (m of them) in out. */
static void affine_scan(Em *e, const ValId *xs, int m, int axis, bool rev, ValId *out)
{
    Ad *ad = e->ad;
    Func *f = ad->bw;
    int n = m * m + m;
    Type *rt = arena_alloc(ad->a, sizeof *rt * (size_t)n);
    for (int i = 0; i < n; i++)
        rt[i] = bty(ad, xs[i]);
    Inst *ni = ir_emit(f, e->b, OP_SCAN, xs, n, rt, n, e->loc);
    ni->ival = axis;
    ni->flags = rev ? IF_REVERSE : 0;
    ValId *res = ni->res;
    Block *rb = ir_inst_add_region(f, ni);
    ValId *p = arena_alloc(ad->a, sizeof *p * (size_t)(2 * n)), *y = arena_alloc(ad->a, sizeof *y * (size_t)n);
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < n; i++) {
            const char *nm = i < m * m ? arena_printf(ad->a, "A%d_%d%d", h + 1, i / m, i % m)
                                       : arena_printf(ad->a, "b%d_%d", h + 1, i - m * m);
            p[h * n + i] = ir_block_param_add(f, rb, type_with_shape(rt[i], 0, NULL), nm, e->loc);
        }
    const ValId *A1 = p, *b1 = p + m * m, *A2 = p + n, *b2 = p + n + m * m;
    Em re = {ad, rb, e->loc};
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < m; j++) { /* (A2 A1)[i][j] = sum over l of A2[i][l] A1[l][j] */
            ValId s = e2(&re, OP_MUL, A2[i * m], A1[j]);
            for (int l = 1; l < m; l++)
                s = e2(&re, OP_ADD, s, e2(&re, OP_MUL, A2[i * m + l], A1[l * m + j]));
            y[i * m + j] = s;
        }
        ValId s = b2[i]; /* (A2 b1 + b2)[i] */
        for (int l = 0; l < m; l++)
            s = e2(&re, OP_ADD, s, e2(&re, OP_MUL, A2[i * m + l], b1[l]));
        y[m * m + i] = s;
    }
    ir_emit(f, rb, OP_YIELD, y, n, NULL, 0, e->loc);
    for (int i = 0; i < m; i++)
        out[i] = res[m * m + i];
}

/* The adjoint of an inclusive scan with any combine f (docs/AD.md, "Scans",
 * the general rule): y[t] = f(y[t-1], x[t]) (rev: y[t+1]), y at the first
 * lane x itself.  With J_a(t), J_b(t) the Jacobians of f's two halves at
 * (y[t-1], x[t]) over the m float slots, lambda[t] = dy[t] +
 * J_a(t+1)^T lambda[t+1] and dx[t] = J_b(t)^T lambda[t] (the first lane:
 * lambda).  mu[t] = J_a(t)^T lambda[t] satisfies the affine recurrence
 * mu[t] = J_a(t)^T mu[t+1] + J_a(t)^T dy[t] run the other way (an
 * affine_scan with J_a^T unshifted), and lambda = dy + shift(mu). */
static void adj_scan_general(Em *e, const Inst *in)
{
    Ad *ad = e->ad;
    int n = in->nargs, axis = (int)in->ival, m = 0;
    bool rev = in->flags & IF_REVERSE;
    const Block *fr = in->regions[0];
    bool any = false, act = false;
    int *fl = arena_alloc(ad->a, sizeof *fl * (size_t)n); /* float slot k's index among the m, or -1 */
    for (int k = 0; k < n; k++) {
        bool isf = dtype_is_float((Dtype)fty(ad, in->res[k]).dt);
        fl[k] = isf ? m++ : -1;
        any |= isf && ad->adj[in->res[k]] && ad_active(ad, in->res[k]);
        act |= isf && ad_active(ad, in->args[k]);
    }
    if (!any || !act)
        return;
    Type xt = fty(ad, in->args[0]);
    ValId *x = arena_alloc(ad->a, sizeof *x * (size_t)n), *prev = arena_alloc(ad->a, sizeof *prev * (size_t)n);
    ValId *dy = arena_alloc(ad->a, sizeof *dy * (size_t)n), *zl = arena_alloc(ad->a, sizeof *zl * (size_t)n);
    ValId *seed = arena_alloc(ad->a, sizeof *seed * (size_t)n), *out = arena_alloc(ad->a, sizeof *out * (size_t)n);
    ValId *lam = arena_alloc(ad->a, sizeof *lam * (size_t)n), *dx = arena_alloc(ad->a, sizeof *dx * (size_t)n);
    ValId *xs = arena_alloc(ad->a, sizeof *xs * (size_t)(m * m + m)), *mu = arena_alloc(ad->a, sizeof *mu * (size_t)m);
    for (int k = 0; k < n; k++) {
        x[k] = P0(ad, in->args[k]);
        prev[k] = shift_any(e, P0(ad, in->res[k]), axis, rev);
        dy[k] = fl[k] >= 0 && ad_active(ad, in->res[k]) ? ad->adj[in->res[k]] : 0;
        zl[k] = fl[k] >= 0 ? ezero(e, type_with_dtype(xt, (Dtype)adt(fty(ad, in->args[k])).dt)) : 0;
        if (dy[k] && bty(ad, dy[k]).dt != bty(ad, zl[k]).dt)
            dy[k] = ecast(e, dy[k], (Dtype)bty(ad, zl[k]).dt);
    }
    Dtype jdt = DT_F32; /* the affine scan's one dtype: fp64 when a slot's adjoint is */
    for (int k = 0; k < n; k++)
        if (zl[k] && bty(ad, zl[k]).dt == DT_F64)
            jdt = DT_F64;
    ValId idx = axis_index(e, xt, axis);
    ValId first = ecmp(e, OP_EQ, idx, ir_const_int(ad->bw, e->b, bty(ad, idx), rev ? xt.shape[axis] - 1 : 0, e->loc));
    /* the region's values typed as tiles of x's shape while it is applied
     * and differentiated lane by lane (as adj_reduce) */
    ValId *rv;
    int nv = region_lanes(ad, fr, xt, &rv);
    ValId *pin = arena_alloc(ad->a, sizeof *pin * (size_t)nv);
    apply_combine(e, in, prev, x); /* f(y[t-1], x[t]): the primal values the Jacobians are taken at */
    for (int i = 0; i < nv; i++)
        pin[i] = ad->pm[rv[i]];
    /* J_a^T: column l is the VJP of the first half with the unit seed on slot l */
    for (int l = 0; l < n; l++) {
        if (fl[l] < 0)
            continue;
        for (int k = 0; k < n; k++)
            seed[k] = k == l ? ir_const_float(ad->bw, e->b, bty(ad, zl[k]), 1.0, e->loc) : 0;
        for (int i = 0; i < nv; i++)
            ad->pm[rv[i]] = pin[i];
        vjp_combine(e, in, seed, true, zl, out);
        for (int i = 0; i < n; i++)
            if (fl[i] >= 0)
                xs[ad->spec->mutate == AD_MUTATE_SCAN_JAC ? fl[l] * m + fl[i] : fl[i] * m + fl[l]] = ecast(e, out[i], jdt);
    }
    for (int i = 0; i < nv; i++)
        ad->pm[rv[i]] = pin[i];
    vjp_combine(e, in, dy, true, zl, out); /* J_a^T dy */
    for (int i = 0; i < n; i++)
        if (fl[i] >= 0)
            xs[m * m + fl[i]] = ecast(e, out[i], jdt);
    affine_scan(e, xs, m, axis, !rev, mu);
    for (int k = 0; k < n; k++) {
        lam[k] = 0;
        if (fl[k] < 0)
            continue;
        ValId s = ecast(e, eshift(e, mu[fl[k]], axis, !rev, 0.0), (Dtype)bty(ad, zl[k]).dt); /* mu[t+1] (rev: mu[t-1]); the last lane 0 */
        lam[k] = dy[k] ? e2(e, OP_ADD, dy[k], s) : s;
    }
    for (int i = 0; i < nv; i++)
        ad->pm[rv[i]] = pin[i];
    vjp_combine(e, in, lam, false, zl, dx); /* J_b^T lambda */
    ad->lanes = NULL;
    for (int i = 0; i < nv; i++) {
        ad->pm[rv[i]] = 0;
        ad->adj[rv[i]] = 0;
    }
    for (int k = 0; k < n; k++)
        if (fl[k] >= 0 && ad_active(ad, in->args[k]))
            accum(e, in->args[k], ewhere(e, first, lam[k], dx[k]));
}

/* The adjoint of a scan: a rule per combine function AD recognizes, the
 * general rule for any other (validated: elementwise adjoint rules only). */
static void adj_scan(Em *e, const Inst *in)
{
    Ad *ad = e->ad;
    int axis = (int)in->ival;
    bool rev = in->flags & IF_REVERSE;
    switch (ad_scan_kind(ad->fw, in)) {
    case SCAN_SUM: { /* each input reaches every later output: a cumsum the other way */
        ValId d = ad->adj[in->res[0]];
        if (!d || !ad_active(ad, in->args[0]))
            return;
        Inst *ni = ir_emit(ad->bw, e->b, OP_CUMSUM, &d, 1, (Type[]){bty(ad, d)}, 1, e->loc);
        ni->ival = axis;
        ni->flags = rev ? 0 : IF_REVERSE;
        accum(e, in->args[0], ni->res[0]);
        return;
    }
    case SCAN_MAX:
    case SCAN_MIN: {
        /* y[t] is the x of the first position (in the scan's direction) holding
         * the running extremum: the lane whose x beats the previous y; it gets
         * the adjoints of its run of equal y, summed by a segmented scan the
         * other way */
        ValId d = ad->adj[in->res[0]];
        if (!d || !ad_active(ad, in->args[0]))
            return;
        bool mx = ad_scan_kind(ad->fw, in) == SCAN_MAX;
        ValId x = P(e, in->args[0]), y = P(e, in->res[0]);
        ValId prev = eshift(e, y, axis, rev, mx ? -INFINITY : INFINITY);
        ValId first = ecmp(e, mx ? OP_GT : OP_LT, x, prev);
        ValId xs[2] = {y, d};
        static const char *const names[] = {"key1", "sum1", "key2", "sum2"};
        ValId run = escan(e, xs, 2, axis, !rev, combine_segsum, names)[1];
        accum(e, in->args[0], ewhere(e, first, run, ec(e, d, 0.0)));
        return;
    }
    case SCAN_SELECT: {
        /* each result is the input at its source position; a source's
         * positions form one run (it starts at the source itself): the run's
         * adjoints summed by a segmented scan the other way go to the lane
         * that is its own source */
        int n = in->nargs;
        bool *act = arena_alloc(ad->a, (size_t)n);
        bool any = false;
        for (int k = 0; k < n; k++) {
            act[k] = ad->adj[in->res[k]] && ad_active(ad, in->args[k]);
            any |= act[k];
        }
        if (!any)
            return;
        ValId idx = axis_index(e, fty(ad, in->args[0]), axis);
        ValId *src = arena_alloc(ad->a, sizeof *src * (size_t)n);
        select_sources(e, in, act, idx, src);
        for (int k = 0; k < n; k++) {
            if (!act[k])
                continue;
            ValId d = ad->adj[in->res[k]];
            static const char *const names[] = {"key1", "sum1", "key2", "sum2"};
            ValId xs[2] = {src[k], d};
            ValId run = escan(e, xs, 2, axis, !rev, combine_segsum, names)[1];
            accum(e, in->args[k], ewhere(e, ecmp(e, OP_EQ, src[k], idx), run, ec(e, d, 0.0)));
        }
        return;
    }
    case SCAN_LINREC: {
        /* h[t] = a[t]*h[t-1] + b[t] (rev: h[t+1]); A[t] = prod a up to t */
        ValId a = in->args[0], b = in->args[1];
        ValId dA = ad->adj[in->res[0]], dh = ad->adj[in->res[1]];
        if (dh && (ad_active(ad, a) || ad_active(ad, b))) {
            ValId g = suffix_linrec(e, P(e, a), dh, axis, rev);
            accum(e, b, g);
            if (ad_active(ad, a))
                accum(e, a, e2(e, OP_MUL, g, eshift(e, P(e, in->res[1]), axis, rev, 0.0)));
        }
        if (dA && ad_active(ad, a))
            accum(e, a, cumprod_adjoint(e, P(e, a), P(e, in->res[0]), dA, axis, rev));
        return;
    }
    default: /* any other combine function (validated: elementwise rules only) */
        adj_scan_general(e, in);
        return;
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
static ValVec collect_outside(Ad *ad, const Inst *in)
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
static ValId adj_param(Ad *ad, Block *reg, ValId v)
{
    const char *n = fname(ad, v);
    return ir_block_param_add(ad->bw, reg, adt(fty(ad, v)), n ? arena_printf(ad->a, "d%s", n) : NULL,
                              ad->fw->vals.v[v].loc);
}

/* The current adjoint of v, or a zero of its adjoint type. */
static ValId adj_or_zero(Em *e, ValId v)
{
    return e->ad->adj[v] ? e->ad->adj[v] : ezero(e, adt(fty(e->ad, v)));
}

/* Appends the adjoints of L (zeros where none yet) as operands and their
 * adjoint types as result types. */
static void add_adjoints(Em *e, Slots *s, ValVec L)
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
static void bind_adjoints(Ad *ad, const Inst *ni, ValVec L)
{
    for (int j = 0; j < L.n; j++) {
        ValId v = ni->res[ni->nres - L.n + j];
        ad->adj[L.v[j]] = v;
        name_after(ad, v, "d", L.v[j]);
    }
}

static void adj_block(Ad *ad, const Block *fb, Block *bb);

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
        Em e = {ad, reg, in->loc};
        const Inst *yi = ad_block_term(fr);
        for (int i = 0; i < in->nres; i++)
            if (ad_active(ad, in->res[i]))
                accum(&e, yi->args[i], ad->adj[in->res[i]]);
        adj_block(ad, fr, reg);
        adjoint_yield(&e, yi, 0, NULL, NULL, L);
    }
    bind_adjoints(ad, &bb->insts.v[idx], L);
}

/* fw value v, the same in every iteration of the body whose values carry
 * stamp id (ad_tape_invariant), in reg's scope: its defining ops inside
 * the body are cloned there. */
static ValId clone_invariant(Ad *ad, Block *reg, ValId v, int id)
{
    if (ad->stamp[v] != id)
        return P0(ad, v);
    const Inst *in = ad->def[v];
    ValId *args = arena_alloc(ad->a, sizeof *args * (size_t)(in->nargs + 1));
    for (int k = 0; k < in->nargs; k++)
        args[k] = clone_invariant(ad, reg, in->args[k], id);
    ValId r = emit_like(ad, reg, in, args)->res[0];
    ad->pm[v] = r;
    return r;
}

/* x (an int scalar) as a tile of type like's shape and dtype dt. */
static ValId int_like(Ad *ad, Block *b, ValId x, Type like, Dtype dt, Loc loc)
{
    Func *f = ad->bw;
    if (ir_type(f, x).dt != dt)
        x = ir_op1(f, b, OP_CAST, type_scalar(dt), x, loc);
    if (like.rank)
        x = ir_op1(f, b, OP_BROADCAST, type_tile(dt, like.rank, like.shape), x, loc);
    return x;
}

/* d (an int or pointer offset, scalar or tile) times the trip count of `for` loop lp (for_trips),
 * whose bounds are invariant in the loop whose body's values carry stamp id, in d's dtype. */
static ValId times_trips(Ad *ad, Block *reg, const Inst *lp, ValId d, int id, Loc loc)
{
    ValId trips = for_trips(ad, reg, lp, clone_invariant(ad, reg, lp->args[0], id),
                            clone_invariant(ad, reg, lp->args[1], id), clone_invariant(ad, reg, lp->args[2], id));
    Type dt = ir_type(ad->bw, d);
    return ir_op2(ad->bw, reg, OP_MUL, dt, d, int_like(ad, reg, trips, dt, (Dtype)dt.dt, loc), loc);
}

/* Maps the carried values of taped loop in's body for iteration t (in
 * reg): the induction variable lb + t * step (a `for`), the affine slots
 * init + t * delta (and their shadows), the taped ones from tape slot slot
 * (vals NULL) or from vals[i] (the recompute loop of a checkpointed
 * segment).  id: the stamp of the body's values. */
static void map_carried(Ad *ad, Block *reg, const Inst *in, TapeLoop *tl, ValId t, ValId slot, const ValId *vals,
                        int id)
{
    ValId base = 0;
    Func *f = ad->bw;
    Loc loc = in->loc;
    bool wl = tl->is_while;
    int n = in->nres, nfix = wl ? 0 : 3;
    const Block *body = in->regions[wl ? 1 : 0];
    const ValId *car = body->params + (wl ? 0 : 1);
    if (!wl) {
        Type it = bty(ad, t);
        ValId iv = ir_op2(f, reg, OP_ADD, it, P0(ad, in->args[0]), ir_op2(f, reg, OP_MUL, it, t, P0(ad, in->args[2]), loc),
                          loc);
        ad->pm[body->params[0]] = iv;
        name_after(ad, iv, "", body->params[0]);
    }
    if (!vals)
        base = tape_base(ad, reg, tl, slot, loc);
    for (int i = 0; i < n; i++) {
        ad->pm[car[i]] = 0;
        ad->adj[car[i]] = 0;
        if (tl->affine[i]) { /* init + t * step, and its shadow alike */
            ValId init = in->args[nfix + i], v = P0(ad, init), sv = needs_shadow(ad, car[i]) ? S0(ad, init) : 0;
            if (tl->delta[i]) {
                ValId d = clone_invariant(ad, reg, tl->delta[i], id);
                if (tl->inner[i]) /* advanced by an inner loop: delta per inner iteration */
                    d = times_trips(ad, reg, tl->inner[i], d, id, loc);
                Type dt = bty(ad, d), ct = fty(ad, car[i]);
                if (ct.dt == DT_PTR) { /* in i64: the forward's pointer never wrapped */
                    Type ot = type_with_dtype(dt, DT_I64);
                    if (dt.dt != DT_I64)
                        d = ir_op1(f, reg, OP_CAST, ot, d, loc);
                    ValId off = ir_op2(f, reg, OP_MUL, ot, d, int_like(ad, reg, t, dt, DT_I64, loc), loc);
                    if (tl->neg[i])
                        off = ir_op2(f, reg, OP_SUB, ot, int_like(ad, reg, ir_const_int(f, reg, type_scalar(DT_I64), 0, loc),
                                                                   ot, DT_I64, loc), off, loc);
                    v = ir_op2(f, reg, OP_ADDPTR, ct, v, off, loc);
                    if (sv)
                        sv = ir_op2(f, reg, OP_ADDPTR, ct, sv, off, loc);
                } else {
                    ValId adv = ir_op2(f, reg, OP_MUL, dt, d, int_like(ad, reg, t, dt, (Dtype)dt.dt, loc), loc);
                    v = ir_op2(f, reg, tl->neg[i] ? OP_SUB : OP_ADD, ct, v, adv, loc);
                }
            }
            ad->pm[car[i]] = v;
            name_after(ad, v, "", car[i]);
            if (sv) {
                ad->sm[car[i]] = sv;
                name_after(ad, sv, "d_", car[i]);
            }
            continue;
        }
        if (!tl->taped[i])
            continue; /* a linear accumulator (never recomputed), or unused by the body */
        ValId v = vals ? vals[i] : 0;
        if (!vals) {
            v = tape_load(ad, reg, tl, base, fty(ad, car[i]), i, loc);
        }
        ad->pm[car[i]] = v;
        name_after(ad, v, "", car[i]);
    }
    for (int k = 0; k < body->insts.n; k++) /* chain values are never recomputed */
        if (body->insts.v[k].nres == 1 && ad->chain[body->insts.v[k].res[0]])
            ad->pm[body->insts.v[k].res[0]] = 0;
}

/* Opens `for kad_j in range(0, ntrip, 1)` in bb carrying the adjoints of the active carried values
 * car[i] (from dinit[i]) and of the values L: returns its body, with the induction variable in *iv,
 * the carried adjoints' parameters in dout[i] (dout may be dinit), L's adjoints mapped to theirs,
 * and the loop's index in bb in *idx.  The caller fills the body and its yield. */
static Block *adj_for_open(Ad *ad, Block *bb, const bool *act, const ValId *car, int n, const ValId *dinit, ValVec L,
                           ValId ntrip, ValId one, const char *ivname, ValId *iv, ValId *dout, int *idx, Loc loc)
{
    Func *f = ad->bw;
    Type it = bty(ad, ntrip);
    Em eo = {ad, bb, loc};
    int nact = 0;
    for (int i = 0; i < n; i++)
        nact += act[i];
    Slots s = slots_new(ad, 3 + nact + L.n);
    s.args[s.na++] = ir_const_int(f, bb, it, 0, loc);
    s.args[s.na++] = ntrip;
    s.args[s.na++] = one;
    for (int i = 0; i < n; i++)
        if (act[i]) {
            s.args[s.na++] = dinit[i];
            s.tys[s.nt++] = adt(fty(ad, car[i]));
        }
    add_adjoints(&eo, &s, L);
    ir_emit(f, bb, OP_FOR, s.args, s.na, s.tys, s.nt, loc);
    *idx = bb->insts.n - 1;
    Block *reg = ir_inst_add_region(f, &bb->insts.v[*idx]);
    *iv = ir_block_param_add(f, reg, it, ivname, loc);
    for (int i = 0; i < n; i++)
        if (act[i])
            dout[i] = adj_param(ad, reg, car[i]);
    for (int k = 0; k < L.n; k++)
        ad->adj[L.v[k]] = adj_param(ad, reg, L.v[k]);
    return reg;
}

/* The adjoint loop of taped loop in over ntrip iterations, emitted in bb:
 * j = 0 .. ntrip - 1, u = ntrip - 1 - j, iteration t = t0 + u (t0 0: t = u),
 * its carried values from tape slot u (slot t0 + u when !seg).  dinit: the
 * initial carried adjoints by slot (act), the outside adjoints from ad->adj.
 * Returns the loop's index in bb (results: the carried adjoints, then L's). */
static int adj_tape_sweep(Ad *ad, Block *bb, const Inst *in, TapeLoop *tl, const bool *act, const ValId *dres,
                          const ValId *dinit, ValVec L, ValId ntrip, ValId t0, bool seg, const ValId *vals)
{
    Func *f = ad->bw;
    int n = in->nres, nact = 0;
    bool wl = tl->is_while;
    const Block *body = in->regions[wl ? 1 : 0];
    const ValId *car = body->params + (wl ? 0 : 1);
    Loc loc = in->loc;
    Type it = bty(ad, ntrip);
    ValId one = ir_const_int(f, bb, it, 1, loc);
    for (int i = 0; i < n; i++)
        nact += act[i];
    ValId j, *dcar = arena_alloc(ad->a, sizeof *dcar * (size_t)(n + 1));
    int idx;
    Block *reg = adj_for_open(ad, bb, act, car, n, dinit, L, ntrip, one, "kad_j", &j, dcar, &idx, loc);
    /* u = ntrip - 1 - j; the carried values from the tape */
    ValId u = ad->spec->mutate == AD_MUTATE_TAPE /* reads the iterations' slots in the wrong order */
                  ? j
                  : ir_op2(f, reg, OP_SUB, it, ir_op2(f, reg, OP_SUB, it, ntrip, one, loc), j, loc);
    ValId t = t0 ? ir_op2(f, reg, OP_ADD, it, t0, u, loc) : u;
    int id = ++ad->gen;
    ad_mark_defs(ad, body, id);
    map_carried(ad, reg, in, tl, t, seg ? u : t, vals, id);
    clone_block(ad, body, reg, CL_SKIP_CHAIN, NULL);
    Em e = {ad, reg, loc};
    const Inst *yi = ad_block_term(body);
    for (int i = 0; i < n; i++)
        if (act[i])
            accum(&e, yi->args[i], dcar[i]);
        else if (dres[i])
            accum(&e, yi->args[i], dres[i]); /* a linear accumulator: constant */
    adj_block(ad, body, reg);
    Slots y = slots_new(ad, nact + L.n);
    for (int i = 0; i < n; i++)
        if (act[i])
            y.args[y.na++] = adj_or_zero(&e, car[i]);
    add_adjoints(&e, &y, L);
    ir_emit(f, reg, OP_YIELD, y.args, y.na, NULL, 0, loc);
    return idx;
}

/* A checkpointed segment's recompute (in reg): iterations t0 .. t0 + len - 1
 * from the carried values of checkpoint slot k + sgi, each recorded in
 * segment slot t - t0 before the body runs. */
static void tape_recompute_segment(Ad *ad, Block *reg, const Inst *in, TapeLoop *tl, ValId k, ValId sgi, ValId t0,
                                   ValId len)
{
    Func *f = ad->bw;
    int n = in->nres, ntap = 0;
    const Block *body = in->regions[0];
    const ValId *car = body->params + 1;
    Loc loc = in->loc;
    Type it = bty(ad, len);
    ValId cbase = tape_base(ad, reg, tl, ir_op2(f, reg, OP_ADD, it, k, sgi, loc), loc);
    Slots s = slots_new(ad, 3 + n);
    s.args[s.na++] = ir_const_int(f, reg, it, 0, loc);
    s.args[s.na++] = len;
    s.args[s.na++] = ir_const_int(f, reg, it, 1, loc);
    for (int i = 0; i < n; i++)
        if (tl->taped[i]) {
            Type vt = fty(ad, car[i]);
            s.args[s.na++] = tape_load(ad, reg, tl, cbase, vt, i, loc);
            s.tys[s.nt++] = vt;
            ntap++;
        }
    ir_emit(f, reg, OP_FOR, s.args, s.na, s.tys, s.nt, loc);
    int idx = reg->insts.n - 1;
    Block *rr = ir_inst_add_region(f, &reg->insts.v[idx]);
    ValId u = ir_block_param_add(f, rr, it, "kad_u", loc);
    ValId *vals = arena_alloc(ad->a, sizeof *vals * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        if (tl->taped[i])
            vals[i] = param_like(ad, rr, car[i], "");
    ValId base = tape_base(ad, rr, tl, u, loc);
    for (int i = 0; i < n; i++)
        if (tl->taped[i]) {
            Type vt = fty(ad, car[i]);
            ValId ptr = tape_ptr(ad, rr, base, vt, tl->off[i], loc), v = vals[i];
            if (vt.dt != tl->dt)
                v = ir_op1(f, rr, OP_CAST, type_with_dtype(vt, tl->dt), v, loc);
            ValId args[2] = {ptr, v};
            ir_emit(f, rr, OP_STORE, args, 2, NULL, 0, loc);
        }
    int id = ++ad->gen;
    ad_mark_defs(ad, body, id);
    map_carried(ad, rr, in, tl, ir_op2(f, rr, OP_ADD, it, t0, u, loc), 0, vals, id);
    clone_block(ad, body, rr, CL_SKIP_CHAIN, NULL);
    const Inst *yi = ad_block_term(body);
    Slots y = slots_new(ad, ntap);
    for (int i = 0; i < n; i++)
        if (tl->taped[i])
            y.args[y.na++] = P0(ad, yi->args[i]);
    ir_emit(f, rr, OP_YIELD, y.args, y.na, NULL, 0, loc);
}

/* A `for i in range(0, n, 1)` in b with no carried values: its body, iv in *iv. */
static Block *plain_for(Ad *ad, Block *b, ValId n, const ValId *init, const Type *tys, int ncar, ValId *iv, int *idx,
                        Loc loc)
{
    Func *f = ad->bw;
    Type it = ir_type(f, n);
    ValId *args = arena_alloc(ad->a, sizeof *args * (size_t)(3 + ncar));
    args[0] = ir_const_int(f, b, it, 0, loc);
    args[1] = n;
    args[2] = ir_const_int(f, b, it, 1, loc);
    for (int i = 0; i < ncar; i++)
        args[3 + i] = init[i];
    ir_emit(f, b, OP_FOR, args, 3 + ncar, tys, ncar, loc);
    *idx = b->insts.n - 1;
    Block *reg = ir_inst_add_region(f, &b->insts.v[*idx]);
    *iv = ir_block_param_add(f, reg, it, "kad_u", loc);
    return reg;
}

/* A taped loop under revolve (tl->revolve): one loop over the rows of the
 * plan in the tape's head (ad_tape.c, revolve_plan), carrying the adjoints
 * (as adj_for_open), the taped values in registers and their iteration
 * cur.  Each row runs four loops in order, so the kernel needs no
 * branches: restore from a slot (0 or 1 trips), advance (a recomputing
 * loop of RV_ADVANCE trips), store to a slot (0 or 1), reverse iteration
 * cur (adj_tape_sweep from the registers, 0 or 1).  A barrier ends each
 * row.  Returns the loop's index in bb (results: the carried adjoints,
 * the registers and cur, L's adjoints). */
static int adj_revolve(Ad *ad, Block *bb, const Inst *in, TapeLoop *tl, const bool *act, const ValId *dres,
                       const ValId *dinit, ValVec L)
{
    Func *f = ad->bw;
    Loc loc = in->loc;
    int n = in->nres, nact = 0, ntap = 0;
    const Block *body = in->regions[0];
    const ValId *car = body->params + 1;
    Type i32 = type_scalar(DT_I32), i64 = type_scalar(DT_I64), i1 = type_scalar(DT_I1), ft = type_scalar(tl->dt);
    Type it = bty(ad, P0(ad, in->args[0]));
    Em eo = {ad, bb, loc};
    for (int i = 0; i < n; i++) {
        nact += act[i];
        ntap += tl->taped[i];
    }
    ValId tp = tape_param(ad, tl);
    ValId nrows = ir_op1(f, bb, OP_CAST, i32, ir_emit(f, bb, OP_LOAD, &tp, 1, &ft, 1, loc)->res[0], loc);
    tl->headv = ir_op2(f, bb, OP_ADD, i64, ir_op2(f, bb, OP_MUL, i64, ir_op1(f, bb, OP_CAST, i64, nrows, loc),
                                                  ir_const_int(f, bb, i64, RV_FIELDS, loc), loc),
                       ir_const_int(f, bb, i64, 1, loc), loc);
    Slots s = slots_new(ad, 3 + nact + ntap + 1 + L.n);
    s.args[s.na++] = ir_const_int(f, bb, i32, 0, loc);
    s.args[s.na++] = nrows;
    s.args[s.na++] = ir_const_int(f, bb, i32, 1, loc);
    for (int i = 0; i < n; i++)
        if (act[i]) {
            s.args[s.na++] = dinit[i];
            s.tys[s.nt++] = adt(fty(ad, car[i]));
        }
    for (int i = 0; i < n; i++)
        if (tl->taped[i]) { /* the registers: the loop's initial values at iteration 0 */
            s.args[s.na++] = P0(ad, in->args[3 + i]);
            s.tys[s.nt++] = fty(ad, car[i]);
        }
    s.args[s.na++] = ir_const_int(f, bb, it, 0, loc);
    s.tys[s.nt++] = it;
    add_adjoints(&eo, &s, L);
    ir_emit(f, bb, OP_FOR, s.args, s.na, s.tys, s.nt, loc);
    int idx = bb->insts.n - 1;
    Block *reg = ir_inst_add_region(f, &bb->insts.v[idx]);
    ValId r = ir_block_param_add(f, reg, i32, "kad_r", loc);
    ValId *dcar = arena_alloc(ad->a, sizeof *dcar * (size_t)(n + 1));
    ValId *st = arena_alloc(ad->a, sizeof *st * (size_t)(n + 1));
    Type *sty = arena_alloc(ad->a, sizeof *sty * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        if (act[i])
            dcar[i] = adj_param(ad, reg, car[i]);
    for (int i = 0; i < n; i++)
        if (tl->taped[i])
            st[i] = param_like(ad, reg, car[i], "");
    ValId cur = ir_block_param_add(f, reg, it, "kad_cur", loc);
    for (int k = 0; k < L.n; k++)
        ad->adj[L.v[k]] = adj_param(ad, reg, L.v[k]);
    /* the row: kind, a, b */
    ValId rv[RV_FIELDS];
    ValId at = ir_op2(f, reg, OP_ADD, i64, ir_op2(f, reg, OP_MUL, i64, ir_op1(f, reg, OP_CAST, i64, r, loc),
                                                  ir_const_int(f, reg, i64, RV_FIELDS, loc), loc),
                      ir_const_int(f, reg, i64, 1, loc), loc);
    for (int q = 0; q < RV_FIELDS; q++) {
        ValId off = q ? ir_op2(f, reg, OP_ADD, i64, at, ir_const_int(f, reg, i64, q, loc), loc) : at;
        ValId p = ir_op2(f, reg, OP_ADDPTR, ir_type(f, tp), tp, off, loc);
        rv[q] = ir_op1(f, reg, OP_CAST, it, ir_emit(f, reg, OP_LOAD, &p, 1, &ft, 1, loc)->res[0], loc);
    }
    ValId zero = ir_const_int(f, reg, it, 0, loc);
    ValId restore = ir_op2(f, reg, OP_GE, i1, rv[RV_RESTORE], zero, loc);
    ValId store = ir_op2(f, reg, OP_GE, i1, rv[RV_STORE], zero, loc);
    int id = ++ad->gen;
    ad_mark_defs(ad, body, id);
    int li;
    ValId u;
    for (int i = 0, k = 0; i < n; i++)
        if (tl->taped[i])
            sty[k++] = fty(ad, car[i]);
    ValId *regs = arena_alloc(ad->a, sizeof *regs * (size_t)(ntap + 1));
    for (int i = 0, k = 0; i < n; i++)
        if (tl->taped[i])
            regs[k++] = st[i];
    /* restore: the registers from slot RV_RESTORE, at iteration RV_AT */
    Block *rr = plain_for(ad, reg, ir_op1(f, reg, OP_CAST, it, restore, loc), regs, sty, ntap, &u, &li, loc);
    for (int i = 0; i < n; i++)
        if (tl->taped[i])
            param_like(ad, rr, car[i], "");
    ValId base = tape_base(ad, rr, tl, rv[RV_RESTORE], loc);
    {
        Slots y = slots_new(ad, ntap);
        for (int i = 0; i < n; i++)
            if (tl->taped[i]) {
                y.args[y.na++] = tape_load(ad, rr, tl, base, fty(ad, car[i]), i, loc);
            }
        ir_emit(f, rr, OP_YIELD, y.args, y.na, NULL, 0, loc);
    }
    if (ad->spec->mutate != AD_MUTATE_TAPE) /* (the tape mutation keeps the registers from before the restore) */
        for (int k = 0; k < ntap; k++)
            regs[k] = reg->insts.v[li].res[k];
    cur = ir_op3(f, reg, OP_WHERE, it, restore, rv[RV_AT], cur, loc);
    /* advance: RV_ADVANCE iterations from cur, recomputed */
    Block *ar = plain_for(ad, reg, rv[RV_ADVANCE], regs, sty, ntap, &u, &li, loc);
    ValId *vals = arena_alloc(ad->a, sizeof *vals * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        if (tl->taped[i])
            vals[i] = param_like(ad, ar, car[i], "");
    map_carried(ad, ar, in, tl, ir_op2(f, ar, OP_ADD, it, cur, u, loc), 0, vals, id);
    clone_block(ad, body, ar, CL_SKIP_CHAIN, NULL);
    {
        const Inst *yi = ad_block_term(body);
        Slots y = slots_new(ad, ntap);
        for (int i = 0; i < n; i++)
            if (tl->taped[i])
                y.args[y.na++] = P0(ad, yi->args[i]);
        ir_emit(f, ar, OP_YIELD, y.args, y.na, NULL, 0, loc);
    }
    for (int k = 0; k < ntap; k++)
        regs[k] = reg->insts.v[li].res[k];
    cur = ir_op2(f, reg, OP_ADD, it, cur, rv[RV_ADVANCE], loc);
    /* store: the registers to slot RV_STORE */
    Block *sr = plain_for(ad, reg, ir_op1(f, reg, OP_CAST, it, store, loc), NULL, NULL, 0, &u, &li, loc);
    base = tape_base(ad, sr, tl, rv[RV_STORE], loc);
    for (int i = 0, k = 0; i < n; i++)
        if (tl->taped[i]) {
            ValId v = regs[k++];
            Type vt = bty(ad, v);
            ValId ptr = tape_ptr(ad, sr, base, vt, tl->off[i], loc);
            if (vt.dt != tl->dt)
                v = ir_op1(f, sr, OP_CAST, type_with_dtype(vt, tl->dt), v, loc);
            ValId args[2] = {ptr, v};
            ir_emit(f, sr, OP_STORE, args, 2, NULL, 0, loc);
        }
    ir_emit(f, sr, OP_YIELD, NULL, 0, NULL, 0, loc);
    for (int i = 0, k = 0; i < n; i++)
        if (tl->taped[i]) {
            vals[i] = regs[k++];
            name_after(ad, vals[i], "", car[i]);
        }
    /* reverse: iteration cur, from the registers */
    int ii = adj_tape_sweep(ad, reg, in, tl, act, dres, dcar, L, rv[RV_REVERSE], cur, true, vals);
    const Inst *inner = &reg->insts.v[ii];
    Slots y = slots_new(ad, nact + ntap + 1 + L.n);
    for (int q = 0; q < nact; q++)
        y.args[y.na++] = inner->res[q];
    for (int i = 0; i < n; i++)
        if (tl->taped[i])
            y.args[y.na++] = vals[i];
    y.args[y.na++] = cur;
    for (int q = 0; q < L.n; q++)
        y.args[y.na++] = inner->res[nact + q];
    ir_emit(f, reg, OP_BARRIER, NULL, 0, NULL, 0, loc);
    ir_emit(f, reg, OP_YIELD, y.args, y.na, NULL, 0, loc);
    return idx;
}

/* A taped loop (ad_tape.c): the adjoint loop runs backwards over the
 * iterations, t = trips - 1 .. 0, reading each iteration's carried values
 * back from the tape the primal sweep wrote, recomputing the body from
 * them (linear-accumulator chains left out) and applying its adjoint.
 * The adjoints of the differentiated carried values other than linear
 * accumulators (recorded, or read only by the yield) are carried from one
 * iteration to the one before it (the yield's adjoint becomes the carried
 * values'), those of linear accumulators are constant, those of outside
 * values are carried and leave as results.  A `while` runs the iterations
 * its primal copy counted.  Checkpointed (tl->ckpt): an outer loop over
 * the segments backwards; each recomputes its k iterations from its
 * checkpoint, recording them in the segment slots, then runs the adjoint
 * loop over them.  Barriers order the tape's writes and reads across the
 * program's threads (and the next recompute's writes). */
static void adj_tape_loop(Ad *ad, Block *bb, const Inst *in, TapeLoop *tl)
{
    Func *f = ad->bw;
    int n = in->nres;
    bool wl = tl->is_while;
    int nfix = wl ? 0 : 3;
    const Block *body = in->regions[wl ? 1 : 0];
    const ValId *car = body->params + (wl ? 0 : 1);
    bool *act = arena_alloc(ad->a, (size_t)n + 1);
    ValId *dres = arena_alloc(ad->a, sizeof *dres * (size_t)(n + 1));
    ValId *dinit = arena_alloc(ad->a, sizeof *dinit * (size_t)(n + 1));
    int nact = 0;
    for (int i = 0; i < n; i++) {
        bool a = ad_active(ad, car[i]) || ad_active(ad, in->res[i]);
        act[i] = a && !tl->linear[i]; /* recorded, or read only by the yield (a, b = b, f(a)) */
        nact += act[i];
        dres[i] = a ? ad->adj[in->res[i]] : 0;
    }
    ValVec L = collect_outside(ad, in);
    Em eo = {ad, bb, in->loc};
    Loc loc = in->loc;
    ValId trips;
    if (wl) /* the iterations the primal copy counted, never more than the tape holds */
        trips = ir_op2(f, bb, OP_MINIMUM, type_scalar(DT_I32), tl->count, tl->capv, loc);
    else
        trips = tape_trips(ad, bb, in);
    Type it = bty(ad, trips);
    for (int i = 0; i < n; i++)
        if (act[i])
            dinit[i] = adj_or_zero(&eo, in->res[i]);
    ir_emit(f, bb, OP_BARRIER, NULL, 0, NULL, 0, loc);
    Block *ob = bb;
    int idx;
    if (tl->revolve) {
        idx = adj_revolve(ad, bb, in, tl, act, dres, dinit, L);
    } else if (!tl->ckpt) {
        idx = adj_tape_sweep(ad, bb, in, tl, act, dres, dinit, L, trips, 0, false, NULL);
    } else {
        /* segments sgi = nseg - 1 .. 0 of k iterations: t0 = sgi * k, len = min(trips - t0, k) */
        ValId k = tape_seg_len(ad, bb, trips, loc), one = ir_const_int(f, bb, it, 1, loc);
        ValId nseg = ir_op2(f, bb, OP_DIV, it, ir_op2(f, bb, OP_ADD, it, trips, ir_op2(f, bb, OP_SUB, it, k, one, loc), loc),
                            k, loc);
        ValId js;
        Block *oreg = adj_for_open(ad, bb, act, car, n, dinit, L, nseg, one, "kad_s", &js, dinit, &idx, loc);
        ValId sgi = ir_op2(f, oreg, OP_SUB, it, ir_op2(f, oreg, OP_SUB, it, nseg, one, loc), js, loc);
        ValId t0 = ir_op2(f, oreg, OP_MUL, it, sgi, k, loc);
        ValId len = ir_op2(f, oreg, OP_MINIMUM, it, ir_op2(f, oreg, OP_SUB, it, trips, t0, loc), k, loc);
        tape_recompute_segment(ad, oreg, in, tl, k, sgi, t0, len);
        ir_emit(f, oreg, OP_BARRIER, NULL, 0, NULL, 0, loc);
        int ii = adj_tape_sweep(ad, oreg, in, tl, act, dres, dinit, L, len, t0, true, NULL);
        const Inst *inner = &oreg->insts.v[ii];
        Slots y = slots_new(ad, nact + L.n);
        for (int q = 0; q < nact + L.n; q++)
            y.args[y.na++] = inner->res[q];
        ir_emit(f, oreg, OP_BARRIER, NULL, 0, NULL, 0, loc);
        ir_emit(f, oreg, OP_YIELD, y.args, y.na, NULL, 0, loc);
    }
    ValId *res = arena_alloc(ad->a, sizeof *res * (size_t)(nact + L.n + 1));
    if (nact + L.n) /* (a loop run backwards only for its stores carries nothing: no results) */
        memcpy(res, ob->insts.v[idx].res, sizeof *res * (size_t)(nact + L.n));
    bind_adjoints(ad, &ob->insts.v[idx], L);
    for (int i = 0, r = 0; i < n; i++)
        if (act[i]) {
            ValId d = res[r++];
            name_after(ad, d, "d", car[i]);
            accum(&eo, in->args[nfix + i], d); /* d(init) = the adjoint before the first iteration */
        }
    for (int i = 0; i < n; i++)
        if (dres[i] && !act[i] && tl->linear[i])
            accum(&eo, in->args[nfix + i], dres[i]);
    ir_emit(f, bb, OP_BARRIER, NULL, 0, NULL, 0, loc);
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
    Em eo = {ad, bb, in->loc};
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
        Em e = {ad, reg, in->loc};
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
 * through the same pointer (ad_analysis.c accepts no other repeated
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
    Em e = {ad, bb, in->loc};
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
 * descriptor operands, the base's shadow for the base (kad_int.h,
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
    Em e = {ad, bb, in->loc};
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
            ir_emit(ad->bw, wb, OP_BARRIER, NULL, 0, NULL, 0, in->loc);
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
            ir_emit(ad->bw, wb, OP_BARRIER, NULL, 0, NULL, 0, in->loc);
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

/* The inputs ad_plain_inputs chose to fold (plain 3): their atomic_adds
 * become per-program partials and a sum kernel (ad_fold.c).  When the fold
 * cannot follow a gradient pointer, they stay atomics, and say why. */
static void fold_inputs(Ad *ad)
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
    if (n && !ad_fold(ad->a, ad->bw, ad->fold_axes, slot, names, n))
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
static void site_inputs(Ad *ad)
{
    const Func *fw = ad->fw;
    for (int i = 0; i < fw->nparams; i++) {
        if (ad->plain[i] != 6 && ad->plain[i] != 7)
            continue;
        int slot = -1;
        for (int k = 0; k < ad->bw->nparams; k++)
            if (ad->bw->params[k] == ad->grad[i])
                slot = k;
        if (slot < 0 || !ad_site_rows(ad->a, ad->bw, slot, fname(ad, fw->params[i]),
                                      ad->plain[i] == 7 ? ad->flag[i] : 0)) {
            ad->plain[i] = 0;
            ad->why[i] = "it is loaded at several sites that programs may share, and kad could not follow its "
                         "gradient pointers to give each site its own row of partials";
        }
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
    Em e = {ad, bb, in->loc};
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

static void adj_block(Ad *ad, const Block *fb, Block *bb)
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
            Em e = {ad, bb, in->loc};
            adj_scan(&e, in);
            break;
        }
        case OP_REDUCE: {
            Em e = {ad, bb, in->loc};
            adj_reduce(&e, in);
            break;
        }
        default:
            if (op_differentiable(in->op) && in->nres == 1) {
                Em e = {ad, bb, in->loc};
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
static Program *ad_reverse(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec, const uint8_t *gmode,
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
    ad->fold_axes = 0;
    ad_plain_inputs(ad);
    if (plain_out)
        memcpy(plain_out, ad->plain, (size_t)np);
    /* inputs ad_backward gathers (ad_gather.c): atomic sites, which it rewrites */
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
            vec_push(a, P->main->flags, ((FuncFlag){ad->flag[i], ad->acc, ad->cond[i].v, ad->cond[i].n, NULL}));
        } else if (gmode && gmode[i] == 2) { /* the gather's launch condition: ad_gather fills it in */
            ad->flag[i] = ir_param_add(bw, type_scalar(DT_I1), arena_printf(a, "gather_d_%s", fname(ad, fwd->params[i])),
                                       fwd->loc);
            vec_push(a, P->main->flags, ((FuncFlag){ad->flag[i], NULL, NULL, 0, NULL}));
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
        else if (m == 3 && ad->cover[i]) /* a folded input: what its partials' rows get (emit_grad.c) */
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
    bw->guards.v = ad->guards.v; /* launch conditions (check_loop_store) */
    bw->guards.n = bw->guards.cap = ad->guards.n;
    if (bw->fold) /* the partials' one sum kernel, run after the folded launch */
        P->sum = fold_sum_kernel(a, arena_printf(a, "%s_sum", bw->name), bw->fold->in, bw->fold->n, bw->loc);
    return P;
}

/* The input gradients a tiled matmul's K loop adds into with atomics get
 * GEMM kernels of their own (ad_gemm.c) when the pattern holds; the header
 * says so through grad_gemm.  False only on a kad bug (reported in d). */
static bool gemm_inputs(Arena *a, Diags *d, const Func *fwd, Program *P, const AdSpec *spec)
{
    const Func *bw = P->main;
    int n = 0, nfwd = fwd->nparams, *slot = arena_alloc(a, sizeof(int) * (size_t)(spec->nwrt + 1));
    const char **names = arena_alloc(a, sizeof(char *) * (size_t)(spec->nwrt + 1));
    for (int j = 0; j < spec->nwrt; j++) {
        if (spec->grad_write && !spec->grad_write[j])
            continue; /* already plain */
        bool inplace = false;
        for (int o = 0; o < spec->nouts; o++)
            inplace |= !strcmp(spec->outs[o], spec->wrt[j]);
        const char *dn = arena_printf(a, "d_%s", spec->wrt[j]);
        for (int k = nfwd; !inplace && k < plan_nargs(P); k++)
            if (bw->vals.v[bw->params[k]].name && !strcmp(bw->vals.v[bw->params[k]].name, dn)) {
                slot[n] = k;
                names[n++] = spec->wrt[j];
            }
    }
    if (!n)
        return true;
    int before = d->nerrors;
    const char *why = ad_gemm(a, P, slot, names, n, d);
    (void)why; /* not matched: the atomics stay, with the header's reason */
    return d->nerrors == before;
}

/* ad_reverse, then simplification and verification (the Program's notes from fwd). */
static Program *reverse_simplified(Arena *a, Diags *d, const Func *orig, const Func *fwd, const AdSpec *spec,
                                   const uint8_t *gmode, bool nofold, bool scatter, uint8_t *plain_out)
{
    Program *P = ad_reverse(a, d, fwd, spec, gmode, nofold, scatter, plain_out);
    if (!P)
        return NULL;
    Func *bw = P->main;
    P->notes.v = fwd->notes.v;
    P->notes.n = fwd->notes.n;
    P->notes.cap = fwd->notes.cap;
    /* A backward that does not verify is a kad bug; say so plainly. */
    bool ok = ad_gauge_fuse(bw) && ir_verify(bw, d) && pass_run(bw, "simplify", d);
    /* Each `while` of a backward recomputes one of the forward's, which
     * terminated: the primal sweep's copy of a loop that only stored is dead. */
    if (ok)
        ok = pass_dce(bw, true);
    if (ok)
        ad_fold_pipeline(a, bw);
    if (!ok || !ir_verify(bw, d)) {
        diag_note(d, orig->loc, "kad bug: the backward kernel of '%s' is invalid", orig->name);
        return NULL;
    }
    return P;
}

/* The index of d_<x> (fwd param i) among the contract's params of P's backward, or -1. */
static int grad_slot(const Func *fwd, const Program *P, int i)
{
    const Func *bw = P->main;
    const char *x = fwd->vals.v[fwd->params[i]].name;
    const char *dn = x ? arena_printf(bw->a, "d_%s", x) : NULL;
    for (int k = fwd->nparams; dn && k < plan_nargs(P); k++)
        if (bw->vals.v[bw->params[k]].name && !strcmp(bw->vals.v[bw->params[k]].name, dn))
            return k;
    return -1;
}

/* The input gradients that site rows would sum (plain 6, 7) become
 * gathers where the rule
 * of ad_gather.c holds: a backward with those sites as atomics first, to
 * check the rule on, then the final one (the same when every candidate
 * passes).  NULL: none applies (bw stays). */
static Program *gather_inputs(Arena *a, const Func *orig, const Func *fwd, const AdSpec *spec, const uint8_t *plain,
                           bool *ran)
{
    int np = fwd->nparams, ncand = 0;
    uint8_t *cand = arena_alloc(a, (size_t)np + 1), *gm = arena_alloc(a, (size_t)np + 1);
    for (int i = 0; i < np; i++) {
        bool out = false;
        const char *x = fwd->vals.v[fwd->params[i]].name;
        for (int o = 0; x && o < spec->nouts; o++)
            out |= !strcmp(spec->outs[o], x);
        bool wrt = false;
        for (int j = 0; x && j < spec->nwrt; j++)
            wrt |= !strcmp(spec->wrt[j], x);
        if (wrt && !out && (plain[i] == 6 || plain[i] == 7))
            cand[i] = 1, ncand++;
    }
    if (!ncand)
        return NULL;
    *ran = true;
    Diags scratch;
    diag_init(&scratch, a);
    /* the candidates' sites as top-level atomics, nothing folded: the rule's IR */
    Program *P = reverse_simplified(a, &scratch, orig, fwd, spec, cand, true, false, NULL);
    if (!P)
        return NULL;
    GatherIn *gin = arena_alloc(a, sizeof *gin * (size_t)(np + 1));
    int ng = 0;
    for (int i = 0; i < np; i++) {
        int slot = cand[i] ? grad_slot(fwd, P, i) : -1;
        if (slot >= 0 && !ad_gather_check(a, P, slot, fwd->vals.v[fwd->params[i]].name, &gin[i])) {
            gm[i] = gin[i].cond ? 2 : 1;
            ng++;
        }
    }
    if (!ng)
        return NULL;
    /* the final backward: the gathered inputs' sites atomics (under their flags), the rest as today */
    if (!(P = reverse_simplified(a, &scratch, orig, fwd, spec, gm, false, false, NULL)))
        return NULL;
    Func *bw = P->main;
    for (int i = 0; i < np; i++) {
        if (!gm[i])
            continue;
        ValId flag = 0;
        const char *dn = arena_printf(a, "gather_d_%s", fwd->vals.v[fwd->params[i]].name);
        for (int j = 0; j < P->main->flags.n; j++)
            if (!strcmp(bw->vals.v[P->main->flags.v[j].param].name, dn))
                flag = P->main->flags.v[j].param;
        if (grad_slot(fwd, P, i) != gin[i].slot || !ad_gather(a, P, &gin[i], flag) || !ir_verify(bw, &scratch))
            return NULL; /* not expected: the same contract */
        /* the zero-fill: skipped where the gather kernel stores every element of the view (what
         * its site of offset 0 reaches covers it, and the gather runs: its flag holds) */
        for (int j = 0; j < P->covers.n; j++)
            if (P->covers.v[j].param == bw->params[gin[i].slot]) {
                FuncCover *fc = &P->covers.v[j];
                fc->acc = gin[i].cover_acc;
                fc->cover = gin[i].cover;
                fc->flag = flag;
                fc->why = gin[i].cover ? NULL : gin[i].cover_why;
            }
    }
    return P;
}

/* The backward of fwd (gauge-rewritten; orig: as written), with scattered
 * sites (ad_plain.c) marked when scatter. */
static Program *backward_of(Arena *a, Diags *d, const Func *orig, const Func *fwd, const AdSpec *spec,
                            bool scatter)
{
    uint8_t *plain = arena_alloc(a, (size_t)fwd->nparams + 1);
    Program *P = reverse_simplified(a, d, orig, fwd, spec, NULL, false, scatter, plain);
    if (!P)
        return NULL;
    bool ran = false;
    Program *gb = gather_inputs(a, orig, fwd, spec, plain, &ran);
    if (gb) {
        P = gb;
    } else if (ran) { /* the spec's answers (grad_write, ...) are the last run's: today's again */
        Diags scratch;
        diag_init(&scratch, a);
        P = reverse_simplified(a, &scratch, orig, fwd, spec, NULL, false, scatter, NULL);
    }
    if (!P)
        return NULL;
    Func *bw = P->main;
    if (!spec->atomics && !P->gather && !gemm_inputs(a, d, fwd, P, spec)) {
        diag_note(d, fwd->loc, "kad bug: the GEMM kernels of the backward of '%s' are invalid", fwd->name);
        return NULL;
    }
    /* adjoint dots on widened 16-bit tiles take the tiles as they are (exact); not where the
     * GEMM form or a gather took kernels of their own from bw (they keep its instructions) */
    if (!P->gemm && !P->gather && pass_narrow_dots(bw, fwd->nparams) > 0 &&
        !(pass_dce(bw, true) && ir_verify(bw, d))) {
        diag_note(d, fwd->loc, "kad bug: the backward kernel of '%s' is invalid", fwd->name);
        return NULL;
    }
    return P;
}

Program *ad_backward(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec)
{
    const Func *orig = fwd;
    fwd = gauge_rewrite(a, fwd); /* online-softmax loops: two passes, the max alone taped */
    Program *P = backward_of(a, d, orig, fwd, spec, !spec->atomics);
    /* scattered sites: a kernel of their own after bw, or, where the split does not
     * apply, the backward built without them (every site of those inputs atomic) */
    if (P && ad_has_scatter(P->main->body) && !ad_scatter_split(a, P, fwd->nparams)) {
        Diags scratch;
        diag_init(&scratch, a);
        P = backward_of(a, &scratch, orig, fwd, spec, false);
        if (!P)
            diag_note(d, orig->loc, "kad bug: the backward kernel of '%s' could not be built again", orig->name);
    }
    if (P) { /* a loop sharing nothing between iterations: the launcher may deal them to more programs */
        ad_spread(a, P);
        if (P->spread && !ir_verify(P->main, d)) {
            diag_note(d, orig->loc, "kad bug: the spread backward kernel of '%s' is invalid", orig->name);
            return NULL;
        }
        plan_steps(P); /* the plan data is final: the host steps in order */
    }
    return P;
}
