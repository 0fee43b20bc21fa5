/* tape_rev.c -- the reverse sweep's tapes: loops run backwards.
 *
 * Job: emitting what ad_tape.c planned (docs/AD.md, "Tapes"): the tape
 * parameters and their Program entries, the records the primal sweep stores
 * per iteration (tape_emit_record, clone_tape_while), and the adjoint of a taped
 * loop (adj_tape_loop): a reverse loop over the tape, or revolve's segments
 * recomputed from checkpoints (adj_revolve), with the carried values, their
 * shadows and the outside values' adjoints mapped per iteration.
 *
 * Requires: the loop's TapeLoop (ad_tape_plan); called by sweep_rev.c's
 * clone_region_op and adj_loop.  Guarantees: a tape of the Program's
 * (P->tapes) per taped loop, read back in reverse iteration order.
 */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "plan/plan.h"
#include "ad/autodiff.h"
#include "ad/ad.h"
#include "ad/ad_int.h"

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
ValId tape_trips(Ad *ad, Block *b, const Inst *in)
{
    return for_trips(ad, b, in, P0(ad, in->args[0]), P0(ad, in->args[1]), P0(ad, in->args[2]));
}

/* A checkpointed tape's segment length k = ceil(sqrt(trips)) (1 when
 * trips <= 1), exactly as the host computes it (isqrt(trips - 1) + 1): a
 * float square root, then corrected by one either way. */
ValId tape_seg_len(Ad *ad, Block *b, ValId trips, Loc loc)
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

void tape_emit_record(Ad *ad, Block *reg, TapeLoop *tl)
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
void clone_tape_while(Ad *ad, Block *bb, const Inst *in, TapeLoop *tl)
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
    Em eo = em_rev(ad, bb, loc);
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
    Em e = em_rev(ad, reg, loc);
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
 * plan in the tape's head (plan/tape.c, revolve_plan), carrying the adjoints
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
    Em eo = em_rev(ad, bb, loc);
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
void adj_tape_loop(Ad *ad, Block *bb, const Inst *in, TapeLoop *tl)
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
    Em eo = em_rev(ad, bb, in->loc);
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

