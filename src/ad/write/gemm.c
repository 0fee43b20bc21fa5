/* write/gemm.c -- deterministic operand gradients of a tiled matmul.
 *
 * Job: in a tiled matmul (`for k: acc = tl.dot(a_tile, b_tile, acc)`, then
 * an epilogue and a store of C), every program of a tile row reads the same
 * rows of A and every program of a tile column the same columns of B.  The
 * backward's reverse sweep of that K loop adds dot(dacc, b^T) into d_a and
 * dot(a^T, dacc) into d_b with atomic_adds, whose order changes from run to
 * run.  Neither grid folding (partials of A's whole size per program) nor
 * site rows fit.  Instead the operand gradients become GEMMs of their own:
 *
 *   kernel 1 (K_bwd_dacc, the forward's grid): the backward without that
 *     loop; it stores each program's dacc tile (the loop's one data input:
 *     the adjoint of the accumulator) into scratch tile (u, v), where u and v
 *     are the program's tile ids (the scalars through which the loop's
 *     addresses depend on the program id);
 *   kernel 2 per operand (K_bwd_<x>, grid (tiles of its id, K iterations)):
 *     program (i, j) runs the loop's body at iteration j for its id = i and
 *     every value t of the other id, in order, with dacc loaded back from
 *     tile (i, t) (or (t, i)), sums its contribution in registers (fp32 for
 *     fp16/bf16/fp32) and writes its tile of d_<x> with one plain store.
 *     The launched form owns R consecutive iterations (one dacc load serves
 *     them), computed as one tile R times as wide along K where the body
 *     allows ("Widening" below), else as R loop bodies; a contraction over
 *     the other tile id wider than GEMM_CHUNK lanes runs in chunks of it
 *     ("Chunks" below: smaller pipelined stages).
 *
 * Nothing here is specific to one kernel: the pattern is recognised on the
 * backward's IR (a top-level loop without carried values whose body holds
 * the atomic_adds of the input gradients and reads one data value from
 * outside; every other value it uses depends on the program ids through two
 * integer scalars u and v only; each atomic's address through one of them).
 *
 * Exactness: the GEMMs compute the same sum as the atomics when the
 * programs map one to one onto the tile pairs [0, U) x [0, V) (every pair
 * is one program's).  kad does not prove that for `//`/`%` tile ids (a
 * grouped ordering's `min`), so the launcher checks it for each launch by
 * evaluating u and v for every program (cached per launch shape), and the
 * plain stores of the GEMM kernels must be injective (access.c on the
 * generated kernel, possibly under a runtime condition evaluated too).
 * When a check fails, the launch runs the atomic backward, which stays in
 * the module.  The plan is Program.gemm; plan_run runs it the same way.
 *
 * gemm_inputs, at the end of this file, picks the inputs backward.c's
 * driver gives this way (those still written with atomics) and calls ad_gemm.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "plan/plan.h"
#include "ad/autodiff.h"
#include "ad/ad.h"
#include "ad/ad_int.h"

enum { PD = 1, DATA = 2, REG = 4 }; /* per top-level value: depends on a program id, on memory, on a region */

typedef struct G {
    Arena *a;
    const Func *bw;
    int nv;
    const Inst **def; /* by ValId: the defining instruction (top level or the loop's body), or NULL */
    uint8_t *top;     /* by ValId: 1 when defined at the body's top level */
    uint8_t *fl;      /* by ValId: PD | DATA | REG for top-level values */
    const Inst *loop; /* the loop */
    ValId iv;         /* its induction variable */
    ValId id[2];      /* u, v */
    int nid;
    ValId data;       /* the one data value from outside (dacc) */
    const char *why;
} G;

static bool is_int_scalar(Type t) { return t.rank == 0 && t.dt != DT_PTR && t.dt != DT_I1 && !dtype_is_float((Dtype)t.dt); }

static void defs(G *g, const Block *b, bool top)
{
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        for (int r = 0; r < in->nres; r++) {
            g->def[in->res[r]] = in;
            g->top[in->res[r]] = top;
        }
    }
}

static uint8_t flags_of(G *g, ValId v, int depth)
{
    if (v <= 0 || v >= g->nv || !g->top[v] || !g->def[v] || depth > 400)
        return 0;
    if (g->fl[v] & 0x80)
        return g->fl[v] & 0x7f;
    const Inst *in = g->def[v];
    uint8_t f = in->op == OP_PROGRAM_ID ? PD : 0;
    if (in->op == OP_LOAD)
        f |= DATA;
    if (in->nregions)
        f |= REG | DATA | PD; /* a loop's results: treated as data of the program */
    for (int i = 0; i < in->nargs; i++)
        f |= flags_of(g, in->args[i], depth + 1);
    g->fl[v] = f | 0x80;
    return f;
}

/* Walks the values v depends on, inside the loop's body and at the top
 * level, collecting the program-dependent integer scalars (ids, at most
 * two) and the program-dependent data values (at most one).  ids_only: an
 * address or mask, which must reach no load and no data value. */
static bool walk(G *g, ValId v, bool ids_only, ValId *ids, int *nids, int depth)
{
    if (v <= 0 || v >= g->nv || depth > 400)
        return v > 0 && depth <= 400;
    if (v == g->iv)
        return true;
    const Inst *in = g->def[v];
    if (!in)
        return true; /* a parameter */
    if (!g->top[v]) { /* the loop's body */
        if (in->nregions || (ids_only && in->op == OP_LOAD)) {
            g->why = ids_only ? "an address depends on a loaded value" : "the loop's body has nested regions";
            return false;
        }
        for (int i = 0; i < in->nargs; i++)
            if (!walk(g, in->args[i], ids_only, ids, nids, depth + 1))
                return false;
        return true;
    }
    uint8_t f = flags_of(g, v, 0);
    if (!(f & PD)) {
        if (f & REG) {
            g->why = "the loop reads a loop's result";
            return false;
        }
        return true;
    }
    Type t = g->bw->vals.v[v].ty;
    if (is_int_scalar(t) && !(f & DATA) && (in->op == OP_ADD || in->op == OP_SUB || in->op == OP_MUL ||
                                            in->op == OP_CAST)) {
        /* id * BLOCK, id + offset: the id is the program-dependent operand (the kernels recompute the rest) */
        int npd = 0, at = -1;
        for (int i = 0; i < in->nargs; i++)
            if (flags_of(g, in->args[i], 0) & PD)
                npd++, at = i;
        if (npd == 1)
            return walk(g, in->args[at], ids_only, ids, nids, depth + 1);
    }
    if (is_int_scalar(t) && !(f & DATA)) {
        for (int i = 0; i < *nids; i++)
            if (ids[i] == v)
                return true;
        if (*nids == 2) {
            g->why = "its addresses depend on the program id through more than two scalars";
            return false;
        }
        ids[(*nids)++] = v;
        return true;
    }
    if (f & DATA) {
        if (ids_only) {
            g->why = "an address depends on data of the program";
            return false;
        }
        if (g->data && g->data != v) {
            g->why = "the loop reads more than one value computed from data outside it";
            return false;
        }
        if (t.rank != 2 || !dtype_is_float((Dtype)t.dt)) {
            g->why = "the value it reads from outside is not a 2-D float tile";
            return false;
        }
        g->data = v;
        return true;
    }
    if (in->nregions) {
        g->why = "the loop reads a loop's result";
        return false;
    }
    for (int i = 0; i < in->nargs; i++)
        if (!walk(g, in->args[i], ids_only, ids, nids, depth + 1))
            return false;
    return true;
}

/* ------------------------------------------------------------------ */
/* Host expressions of the tile ids                                    */
/* ------------------------------------------------------------------ */


static const TapeExpr *host(G *g, ValId v, int depth)
{
    if (v <= 0 || v >= g->nv || depth > 200)
        return NULL;
    const Func *f = g->bw;
    Type t = f->vals.v[v].ty;
    if (!is_int_scalar(t))
        return NULL;
    const Inst *in = g->def[v];
    if (!in) {
        for (int i = 0; i < f->nparams; i++)
            if (f->params[i] == v)
                return tape_expr_new(g->a, TX_PARAM, i, NULL, NULL);
        return NULL;
    }
    if (!g->top[v])
        return NULL;
    int op;
    switch (in->op) {
    case OP_CONST: return tape_expr_new(g->a, TX_CONST, in->ival, NULL, NULL);
    case OP_NUM_PROGRAMS: return tape_expr_new(g->a, TX_GRID, in->ival, NULL, NULL);
    case OP_PROGRAM_ID: return tape_expr_new(g->a, TX_PID, in->ival, NULL, NULL);
    case OP_CAST: {
        Type ft = f->vals.v[in->args[0]].ty;
        if (!is_int_scalar(ft) || dtype_bits((Dtype)ft.dt) > dtype_bits((Dtype)t.dt))
            return NULL;
        return host(g, in->args[0], depth + 1);
    }
    default:
        if ((op = tape_expr_op(in->op)) < 0)
            return NULL;
    }
    const TapeExpr *x = host(g, in->args[0], depth + 1), *y = x ? host(g, in->args[1], depth + 1) : NULL;
    return y ? tape_expr_new(g->a, op, 0, x, y) : NULL;
}

/* ------------------------------------------------------------------ */
/* Building the kernels                                                */
/* ------------------------------------------------------------------ */

typedef struct Cl {
    G *g;
    Func *f;
    ValId *map;  /* by bw ValId */
    bool ok;
    ValId dlow;  /* the operand kernel's dacc as loaded in 16 bits (low_dtype), or 0 */
} Cl;

/* The value a dot multiplies dacc with, before its widening (ir_widened16). */
static ValId widened_from(const G *g, ValId v, const Inst **perm)
{
    return ir_widened16(g->bw, g->def, g->nv, v, perm);
}

/* The 16-bit dtype dacc may be stored in: when dacc is fp32 and the loop's
 * body uses it only as a dot operand whose other operand is a bf16 (fp16)
 * value widened to fp32 (the adjoint of a dot of bf16 tiles), all of one
 * dtype, the operand kernels multiply dacc rounded once to that dtype with
 * the unwidened operand (tensor-core dots, fp32 accumulation), and the
 * scratch holds it in that dtype (half the bytes).  Else DT_F32. */
static Dtype low_dtype(const G *g)
{
    if (g->bw->vals.v[g->data].ty.dt != DT_F32)
        return DT_F32;
    const Block *body = g->loop->regions[0];
    Dtype low = DT_F32;
    int uses = 0;
    for (int q = 0; q < body->insts.n; q++) {
        const Inst *in = &body->insts.v[q];
        for (int i = 0; i < in->nargs; i++) {
            if (in->args[i] != g->data)
                continue;
            const Inst *perm;
            ValId x = in->op == OP_DOT && i < 2 && in->args[1 - i] != g->data ? widened_from(g, in->args[1 - i], &perm)
                                                                              : 0;
            if (!x || (low != DT_F32 && g->bw->vals.v[x].ty.dt != (uint8_t)low))
                return DT_F32;
            low = (Dtype)g->bw->vals.v[x].ty.dt;
            uses++;
        }
    }
    return uses ? low : DT_F32;
}

static ValId cl(Cl *c, Block *b, ValId v, int depth)
{
    G *g = c->g;
    if (!c->ok || v <= 0 || v >= g->nv || depth > 400) {
        c->ok = false;
        return 0;
    }
    if (c->map[v])
        return c->map[v];
    const Inst *in = g->def[v];
    if (!in || in->nregions || op_writes_memory(in->op) || in->op == OP_PROGRAM_ID ||
        in->op == OP_NUM_PROGRAMS || (g->top[v] && (flags_of(g, v, 0) & DATA))) {
        c->ok = false; /* parameters, ids and the data value are mapped before */
        return 0;
    }
    ValId args[8];
    if (in->nargs > 8) {
        c->ok = false;
        return 0;
    }
    int di = c->dlow && in->op == OP_DOT ? (in->args[0] == g->data ? 0 : in->args[1] == g->data ? 1 : -1) : -1;
    for (int i = 0; i < in->nargs; i++)
        if (i != di && !(di >= 0 && i == 1 - di))
            args[i] = cl(c, b, in->args[i], depth + 1);
    if (di >= 0) { /* dot(dacc, widened x): dot(dacc in 16 bits, x), accumulating in fp32 (low_dtype) */
        const Inst *perm;
        ValId x = widened_from(g, in->args[1 - di], &perm);
        args[di] = c->dlow;
        args[1 - di] = x ? cl(c, b, x, depth + 1) : 0;
        if (!x || !c->ok) {
            c->ok = false;
            return 0;
        }
        if (perm)
            args[1 - di] = ir_permute_as(c->f, b, g->bw, perm, args[1 - di]);
    }
    if (!c->ok)
        return 0;
    Type rt[4];
    if (in->nres < 1 || in->nres > 4) {
        c->ok = false;
        return 0;
    }
    for (int r = 0; r < in->nres; r++)
        rt[r] = g->bw->vals.v[in->res[r]].ty;
    Inst *n = ir_emit(c->f, b, (OpKind)in->op, args, in->nargs, rt, in->nres, in->loc);
    ir_inst_copy_attrs(n, in);
    for (int r = 0; r < in->nres; r++) {
        c->f->vals.v[n->res[r]].name = g->bw->vals.v[in->res[r]].name;
        c->map[in->res[r]] = n->res[r];
    }
    return c->map[v];
}

/* ------------------------------------------------------------------ */
/* Widening: R consecutive K iterations as one tile R times as wide     */
/* ------------------------------------------------------------------ */

/* When the loop's index k enters the body only as offs = q k + c +
 * arange(s, s + L) with L == q * step (a matmul's offs_k: q = 1 for `for k0
 * in range(0, K, BLOCK_K)`, q = BLOCK_K for `for kt in range(cdiv(K,
 * BLOCK_K))`), iterations jR .. jR + R - 1 read and write the consecutive
 * indices q k' + c + arange(s, s + R L), k' = lb + jR * step: the body
 * computed once on tiles R times as
 * wide along that axis (the k axis) is the R bodies side by side, provided
 * that axis never mixes its elements: elementwise ops, broadcasts,
 * expand_dims, permutes, loads, and dots where it is a free axis (a row of
 * the left operand or a column of the right one), never contracted, reduced
 * or reshaped.  Then each element's sum over the other tile id is the one
 * of R = 1, and R dots of L rows become one dot of R L rows.  Elements of
 * iterations past the loop's end are masked off in every load and store
 * that carries the axis (valid below). */

/* Chunks.  The same machinery splits a dot's contraction into chunks:
 * then the seed is the other tile id t (offs_n = t * BN +
 * arange(0, BN)), the axis is the contraction's (dacc's too), its tiles
 * become CH wide at offset c * CH, and the dot, a partial sum (W_SUM),
 * accumulates into the running accumulator. */
enum { W_INDEP = 1, W_SCALAR, W_BCAST, W_AXIS, W_SUM, W_BAD };

typedef struct Wd {
    G *g;
    Func *f;
    Cl *c;         /* the narrow clones: k-independent values, and k itself -> k' */
    ValId *wmap;   /* by bw ValId: the widened clone of a k-dependent value */
    uint8_t *kind; /* by bw ValId: W_* (0: not yet classified) */
    int8_t *axis;  /* W_AXIS: the k axis */
    int64_t *coef; /* W_SCALAR: q in q k + c */
    int64_t step;  /* the loop's */
    int R, L;      /* L: the arange's length (0 until one is seen) */
    ValId valid;   /* i1[R L]: element e's iteration, lb + (jR + e / L) * step, lies before the loop's end */
    bool ok;
    /* chunks: */
    bool chunk;    /* split the contraction (else widen along K) */
    ValId base;    /* the seed: the loop's index k (widening), the other tile id (chunks) */
    int daxis, CH; /* dacc's contracted axis, the chunk's length */
    ValId coff;    /* the chunk's offset c * CH (i32, in the operand kernel's loop) */
    ValId acc;     /* the accumulator the chunk's dot adds into */
} Wd;

static Type wtype(const Wd *w, Type t, int ax)
{
    t.shape[ax] = w->chunk ? w->CH : t.shape[ax] * w->R;
    return t;
}

/* v as a k-independent value of the wide shape at axis ax: uniform along ax
 * (a constant, a broadcast from size 1), or of size 1 there (unchanged). */
static ValId windep(Wd *w, Block *b, ValId v, int ax, int depth)
{
    G *g = w->g;
    Type t = g->bw->vals.v[v].ty;
    if (t.rank == 0 || ax >= t.rank || t.shape[ax] == 1)
        return cl(w->c, b, v, depth + 1);
    const Inst *in = v > 0 && v < g->nv ? g->def[v] : NULL;
    if (!in || t.shape[ax] != w->L || depth > 400 || (g->top[v] && (flags_of(g, v, 0) & DATA))) {
        w->ok = false;
        return 0;
    }
    ValId x = 0;
    if (in->op == OP_BROADCAST) {
        Type xt = g->bw->vals.v[in->args[0]].ty;
        if (xt.rank && xt.shape[ax] != 1) {
            w->ok = false;
            return 0;
        }
        x = cl(w->c, b, in->args[0], depth + 1);
    } else if (in->op != OP_CONST) {
        w->ok = false;
        return 0;
    }
    if (!w->c->ok) {
        w->ok = false;
        return 0;
    }
    Type wt = wtype(w, t, ax);
    Inst *n = ir_emit(w->f, b, (OpKind)in->op, &x, x ? 1 : 0, &wt, 1, in->loc);
    ir_inst_copy_attrs(n, in);
    return n->res[0];
}

/* valid as a tile of type t (i1) whose k axis is ax. */
static ValId valid_as(Wd *w, Block *b, Type t, int ax, Loc loc)
{
    ValId m = w->valid;
    int32_t sh[KAD_MAX_RANK] = {t.shape[ax]};
    for (int r = 1; r < t.rank; r++) { /* size-1 axes: ax before it, the rest after */
        int at = r <= ax ? 0 : r;
        memmove(sh + at + 1, sh + at, sizeof(int32_t) * (size_t)(r - at));
        sh[at] = 1;
        Inst *e = ir_emit(w->f, b, OP_EXPAND_DIMS, &m, 1, (Type[]){type_tile(DT_I1, r + 1, sh)}, 1, loc);
        e->ival = at;
        m = e->res[0];
    }
    if (memcmp(sh, t.shape, sizeof(int32_t) * (size_t)t.rank))
        m = ir_op1(w->f, b, OP_BROADCAST, type_tile(DT_I1, t.rank, t.shape), m, loc);
    return m;
}

/* Classifies v: W_INDEP (does not depend on k), W_SCALAR (k + c, a scalar),
 * W_BCAST (k + c in every lane of an [L] tile), W_AXIS (k along axis
 * w->axis[v]), W_BAD (depends on k otherwise: no widening). */
static int wkind(Wd *w, ValId v, int depth)
{
    G *g = w->g;
    if (v <= 0 || v >= g->nv || depth > 400)
        return W_BAD;
    if (w->kind[v])
        return w->kind[v];
    if (v == w->base) {
        w->coef[v] = 1;
        return w->kind[v] = W_SCALAR;
    }
    if (w->chunk && v == g->data) {
        w->axis[v] = (int8_t)w->daxis;
        return w->kind[v] = W_AXIS;
    }
    const Inst *in = g->def[v];
    if (!in || (g->top[v] && !w->chunk)) /* chunks: the other tile id's values are computed at the top level */
        return w->kind[v] = W_INDEP;
    bool dep = false;
    for (int i = 0; i < in->nargs; i++)
        if (wkind(w, in->args[i], depth + 1) == W_BAD)
            return w->kind[v] = W_BAD;
        else
            dep |= w->kind[in->args[i]] > W_INDEP;
    if (!dep)
        return w->kind[v] = W_INDEP;
    const Func *bw = g->bw;
    Type t = bw->vals.v[v].ty;
    int k0 = in->nargs > 0 ? w->kind[in->args[0]] : 0, k1 = in->nargs > 1 ? w->kind[in->args[1]] : 0;
    if (t.rank == 0) { /* q k + c: k + c, k - c, k * const, casts between ints */
        if (k0 != W_SCALAR && (in->nargs != 2 || k1 != W_SCALAR))
            return w->kind[v] = W_BAD;
        int ks = k0 == W_SCALAR ? 0 : 1;
        const Inst *o = in->nargs == 2 ? g->def[in->args[1 - ks]] : NULL;
        w->coef[v] = w->coef[in->args[ks]];
        if ((in->op == OP_ADD && ((k0 == W_SCALAR && k1 == W_INDEP) || (k0 == W_INDEP && k1 == W_SCALAR))) ||
            (in->op == OP_SUB && k0 == W_SCALAR && k1 == W_INDEP) ||
            (in->op == OP_CAST && is_int_scalar(t) && is_int_scalar(bw->vals.v[in->args[0]].ty)))
            return w->kind[v] = W_SCALAR;
        if (in->op == OP_MUL && w->kind[in->args[1 - ks]] == W_INDEP && o && o->op == OP_CONST && o->ival > 0 &&
            o->ival < (1 << 20) && w->coef[v] < (1 << 20)) {
            w->coef[v] *= o->ival;
            return w->kind[v] = W_SCALAR;
        }
        return w->kind[v] = W_BAD;
    }
    if (in->op == OP_BROADCAST && k0 == W_SCALAR) { /* every lane q k + c: the arange's length must be q * step */
        int64_t len = w->coef[in->args[0]] * w->step;
        if (t.rank != 1 || t.shape[0] != len || (w->L && w->L != len) || (w->chunk && len % w->CH))
            return w->kind[v] = W_BAD;
        w->L = (int)len;
        return w->kind[v] = W_BCAST;
    }
    if (in->op == OP_ADD && (k0 == W_BCAST || k1 == W_BCAST)) {
        const Inst *o = g->def[in->args[k0 == W_BCAST ? 1 : 0]];
        int ko = k0 == W_BCAST ? k1 : k0;
        if (ko == W_INDEP && o && o->op == OP_ARANGE) {
            w->axis[v] = 0;
            return w->kind[v] = W_AXIS;
        }
        if (ko == W_INDEP && o && o->op == OP_BROADCAST && bw->vals.v[o->args[0]].ty.rank == 0)
            return w->kind[v] = W_BCAST; /* (k + c) + broadcast(c') */
        return w->kind[v] = W_BAD;
    }
    int ax = -1;
    for (int i = 0; i < in->nargs; i++) { /* every k-dependent operand carries k along one axis */
        int ki = w->kind[in->args[i]];
        if (ki == W_INDEP)
            continue;
        if (ki != W_AXIS || (ax >= 0 && w->axis[in->args[i]] != ax && in->op != OP_DOT))
            return w->kind[v] = W_BAD;
        ax = w->axis[in->args[i]];
    }
    switch (in->op) {
    case OP_BROADCAST: break;
    case OP_EXPAND_DIMS: ax += in->ival <= ax; break;
    case OP_PERMUTE: {
        int na = -1;
        for (int p = 0; p < in->nints; p++)
            if (in->ints[p] == ax)
                na = p;
        ax = na;
        break;
    }
    case OP_DOT: { /* the k axis: rows of a (axis 0), or columns of b (axis 1); not both, not the acc alone */
        bool a = w->kind[in->args[0]] == W_AXIS, bb = w->kind[in->args[1]] == W_AXIS;
        if (w->chunk) { /* the contraction: columns of a and rows of b, into a zero accumulator */
            const Inst *z = g->def[in->args[2]];
            return w->kind[v] = a && bb && w->axis[in->args[0]] == 1 && w->axis[in->args[1]] == 0 &&
                                        w->kind[in->args[2]] == W_INDEP && z && z->op == OP_CONST && z->fval == 0.0
                                    ? W_SUM
                                    : W_BAD;
        }
        if (a == bb || (a && w->axis[in->args[0]] != 0) || (bb && w->axis[in->args[1]] != 1))
            return w->kind[v] = W_BAD;
        ax = a ? 0 : 1;
        if (w->kind[in->args[2]] == W_AXIS && w->axis[in->args[2]] != ax)
            return w->kind[v] = W_BAD;
        break;
    }
    case OP_LOAD: break;
    default:
        if (!op_info[in->op].elementwise || in->nres != 1)
            return w->kind[v] = W_BAD;
    }
    if (ax < 0 || ax >= t.rank)
        return w->kind[v] = W_BAD;
    w->axis[v] = (int8_t)ax;
    return w->kind[v] = W_AXIS;
}

/* The widened clone of a k-dependent value (wkind > W_INDEP). */
static ValId wcl(Wd *w, Block *b, ValId v, int depth)
{
    G *g = w->g;
    if (!w->ok || depth > 400) {
        w->ok = false;
        return 0;
    }
    int k = wkind(w, v, 0);
    if (k == W_SCALAR || k == W_INDEP) {
        ValId r = cl(w->c, b, v, depth + 1); /* the map sends k to k' */
        w->ok &= w->c->ok;
        return r;
    }
    if (k != W_BCAST && k != W_AXIS && k != W_SUM) {
        w->ok = false;
        return 0;
    }
    if (w->wmap[v])
        return w->wmap[v];
    const Inst *in = g->def[v];
    const Func *bw = g->bw;
    Type t = bw->vals.v[v].ty;
    int ax = k == W_BCAST ? 0 : k == W_SUM ? -1 : w->axis[v];
    Type wt = k == W_SUM ? t : wtype(w, t, ax); /* a chunk's dot: the accumulator's type */
    ValId args[4] = {0};
    int nargs = in->nargs;
    if (nargs > 4) {
        w->ok = false;
        return 0;
    }
    for (int i = 0; i < nargs; i++) {
        ValId x = in->args[i];
        int kx = wkind(w, x, 0);
        Type xt = bw->vals.v[x].ty;
        if (kx > W_INDEP)
            args[i] = wcl(w, b, x, depth + 1);
        else if (k == W_SUM && i == 2)
            args[i] = w->acc; /* the chunks' dots accumulate in order */
        else if (in->op == OP_ADD && wkind(w, in->args[1 - i], 0) == W_BCAST && g->def[x] &&
                 g->def[x]->op == OP_ARANGE) { /* offs: k' + c + an arange of R L */
            Type at = wtype(w, xt, 0);
            Inst *n = ir_emit(w->f, b, OP_ARANGE, NULL, 0, &at, 1, g->def[x]->loc);
            ir_inst_copy_attrs(n, g->def[x]);
            args[i] = n->res[0];
        } else if (in->op == OP_DOT && i < 2)
            args[i] = cl(w->c, b, x, depth + 1); /* the other operand: k-independent, unchanged */
        else
            args[i] = windep(w, b, x, xt.rank ? ax : 0, depth + 1);
        if (!w->ok || !w->c->ok) {
            w->ok = false;
            return 0;
        }
        if (w->chunk && in->op == OP_BROADCAST && kx == W_SCALAR) { /* the chunk's lanes: + c * CH */
            Type st = w->f->vals.v[args[i]].ty;
            ValId co = st.dt == DT_I32 ? w->coff : ir_op1(w->f, b, OP_CAST, st, w->coff, in->loc);
            args[i] = ir_op2(w->f, b, OP_ADD, st, args[i], co, in->loc);
        }
    }
    if (in->op == OP_DOT && w->c->dlow) { /* dot(dacc, widened x): dacc in 16 bits times x as loaded */
        int di = in->args[0] == g->data ? 0 : in->args[1] == g->data ? 1 : -1;
        if (di >= 0) {
            const Inst *perm;
            ValId x = widened_from(g, in->args[1 - di], &perm);
            if (!x || wkind(w, x, 0) != W_AXIS) {
                w->ok = false;
                return 0;
            }
            ValId xw = wcl(w, b, x, depth + 1);
            if (!w->ok)
                return 0;
            if (perm) { /* the other operand's axis: its free one (widening), its contraction (chunks) */
                Type pt = wtype(w, bw->vals.v[perm->res[0]].ty, w->chunk ? di : 1 - di);
                pt.dt = w->f->vals.v[xw].ty.dt;
                Inst *q = ir_emit(w->f, b, OP_PERMUTE, &xw, 1, &pt, 1, perm->loc);
                ir_inst_copy_attrs(q, perm);
                xw = q->res[0];
            }
            args[di] = w->c->dlow;
            args[1 - di] = xw;
        }
    }
    int flags = in->flags;
    if (in->op == OP_LOAD && !w->chunk) { /* elements past the loop's end: masked off */
        ValId vm = valid_as(w, b, type_tile(DT_I1, wt.rank, wt.shape), ax, in->loc);
        if (in->flags & IF_HAS_MASK)
            args[1] = ir_op2(w->f, b, OP_AND, w->f->vals.v[vm].ty, args[1], vm, in->loc);
        else
            args[1] = vm, nargs = 2, flags |= IF_HAS_MASK;
    }
    Inst *n = ir_emit(w->f, b, (OpKind)in->op, args, nargs, &wt, 1, in->loc);
    ir_inst_copy_attrs(n, in);
    n->flags = flags;
    w->f->vals.v[n->res[0]].name = bw->vals.v[v].name;
    return w->wmap[v] = n->res[0];
}

/* The [R, C] tile of i64 offsets r * C + c; with ax >= 0 only the part
 * of length len at offset off (an i32 scalar) along axis ax. */
static ValId lin_offsets(Func *f, Block *b, const int32_t *full, int ax, ValId off, int len, Loc loc)
{
    int32_t sh[2] = {full[0], full[1]};
    if (ax >= 0)
        sh[ax] = len;
    int32_t s0[1] = {sh[0]}, s1[1] = {sh[1]}, sr[2] = {sh[0], 1}, sc[2] = {1, sh[1]};
    Type t2 = type_tile(DT_I64, 2, sh);
    ValId rc[2];
    for (int i = 0; i < 2; i++) {
        Type ti = type_tile(DT_I32, 1, i ? s1 : s0);
        Inst *r = ir_emit(f, b, OP_ARANGE, NULL, 0, &ti, 1, loc);
        r->ival = 0;
        rc[i] = r->res[0];
        if (i == ax)
            rc[i] = ir_op2(f, b, OP_ADD, ti, ir_op1(f, b, OP_BROADCAST, ti, off, loc), rc[i], loc);
    }
    ValId rv = ir_op1(f, b, OP_CAST, type_tile(DT_I64, 1, s0), rc[0], loc);
    ValId cv = ir_op1(f, b, OP_CAST, type_tile(DT_I64, 1, s1), rc[1], loc);
    Inst *er = ir_emit(f, b, OP_EXPAND_DIMS, &rv, 1, (Type[]){type_tile(DT_I64, 2, sr)}, 1, loc);
    er->ival = 1;
    ValId rr = er->res[0];
    Inst *ec = ir_emit(f, b, OP_EXPAND_DIMS, &cv, 1, (Type[]){type_tile(DT_I64, 2, sc)}, 1, loc);
    ec->ival = 0;
    ValId cc = ec->res[0];
    ValId rows = ir_op2(f, b, OP_MUL, t2, ir_op1(f, b, OP_BROADCAST, t2, rr, loc),
                        ir_const_int(f, b, t2, full[1], loc), loc);
    return ir_op2(f, b, OP_ADD, t2, rows, ir_op1(f, b, OP_BROADCAST, t2, cc, loc), loc);
}

/* The pointers of scratch tile (u, v): kad_dacc + (u * V + v) * R * C + lin
 * (with ax >= 0: its part of length len at offset off along axis ax). */
static ValId tile_ptrs(Func *f, Block *b, ValId scratch, ValId u, ValId v, ValId nv, const int32_t *full, int ax,
                       ValId off, int len, Loc loc)
{
    int32_t sh[2] = {full[0], full[1]};
    if (ax >= 0)
        sh[ax] = len;
    Type i64 = type_scalar(DT_I64), t2 = type_tile(DT_I64, 2, sh);
    ValId u64 = ir_op1(f, b, OP_CAST, i64, u, loc), v64 = ir_op1(f, b, OP_CAST, i64, v, loc);
    ValId n64 = ir_op1(f, b, OP_CAST, i64, nv, loc);
    ValId t = ir_op2(f, b, OP_ADD, i64, ir_op2(f, b, OP_MUL, i64, u64, n64, loc), v64, loc);
    ValId base = ir_op2(f, b, OP_MUL, i64, t, ir_const_int(f, b, i64, (int64_t)full[0] * full[1], loc), loc);
    ValId offs = ir_op2(f, b, OP_ADD, t2, ir_op1(f, b, OP_BROADCAST, t2, base, loc),
                        lin_offsets(f, b, full, ax, off, len, loc), loc);
    Type pt = type_ptr((Dtype)ir_type(f, scratch).elem, 2, sh);
    ValId p = ir_op2(f, b, OP_ADDPTR, pt, ir_op1(f, b, OP_BROADCAST, pt, scratch, loc), offs, loc);
    f->vals.v[p].name = "dacc_ptrs";
    return p;
}

/* The first parameters of every kernel of the plan: bw's contract, then
 * kad_dacc, kad_tiles_u, kad_tiles_v.  map: bw's params to f's. */
static void plan_params(Func *f, const Func *bw, Dtype sdt, ValId *map, ValId *ext)
{
    for (int i = 0; i < bw->nparams; i++) {
        ValId p = bw->params[i];
        map[p] = ir_param_add(f, bw->vals.v[p].ty, bw->vals.v[p].name, bw->vals.v[p].loc);
    }
    ext[0] = ir_param_add(f, type_ptr(sdt, 0, NULL), "kad_dacc", bw->loc);
    ext[1] = ir_param_add(f, type_scalar(DT_I32), "kad_tiles_u", bw->loc);
    ext[2] = ir_param_add(f, type_scalar(DT_I32), "kad_tiles_v", bw->loc);
    for (int i = 0; i < bw->consts.n; i++)
        vec_push(f->a, f->consts, bw->consts.v[i]);
}

/* Kernel 1: bw's body with the loop replaced by the store of dacc. */
static Func *first_kernel(G *g, Dtype sdt)
{
    const Func *bw = g->bw;
    Func *f = ir_func_new(g->a, arena_printf(g->a, "%s_dacc", bw->name), bw->loc);
    /* the same value table (ids stay valid), then the extra parameters */
    f->vals.n = 0;
    for (int i = 0; i < bw->vals.n; i++)
        vec_push(g->a, f->vals, bw->vals.v[i]);
    f->params = arena_alloc(g->a, sizeof(ValId) * (size_t)(bw->nparams + 1));
    memcpy(f->params, bw->params, sizeof(ValId) * (size_t)bw->nparams);
    f->nparams = bw->nparams;
    ValId scratch = ir_param_add(f, type_ptr(sdt, 0, NULL), "kad_dacc", bw->loc);
    ir_param_add(f, type_scalar(DT_I32), "kad_tiles_u", bw->loc);
    ValId nvt = ir_param_add(f, type_scalar(DT_I32), "kad_tiles_v", bw->loc);
    for (int i = 0; i < bw->consts.n; i++)
        vec_push(g->a, f->consts, bw->consts.v[i]);
    Block *b = f->body;
    for (int k = 0; k < bw->body->insts.n; k++) {
        const Inst *in = &bw->body->insts.v[k];
        if (in != g->loop) {
            vec_push(g->a, b->insts, *in);
            continue;
        }
        Type dt = bw->vals.v[g->data].ty;
        ValId p = tile_ptrs(f, b, scratch, g->id[0], g->id[1], nvt, dt.shape, -1, 0, 0, in->loc);
        ValId val = g->data;
        if (dt.dt != (uint8_t)sdt)
            val = ir_op1(f, b, OP_CAST, type_tile(sdt, 2, dt.shape), val, in->loc);
        ir_emit(f, b, OP_STORE, (ValId[]){p, val}, 2, NULL, 0, in->loc);
    }
    return f;
}

/* The bytes of value v of f. */
static int64_t dot_bytes(const Func *f, ValId v)
{
    Type t = f->vals.v[v].ty;
    int64_t e = dtype_bits((Dtype)t.dt) / 8;
    for (int i = 0; i < t.rank; i++)
        e *= t.shape[i];
    return e;
}

/* Kernel 2 for the atomic `at` whose address depends on id `own` (0: u),
 * grouping R consecutive K iterations per program (R a power of 2):
 * program (i, jg) owns iterations jg * R + r, r < R, loads each dacc tile
 * once and runs the R loop bodies on it (R accumulators, summed over the
 * other tile id in order: each element's sum order is the one of R = 1),
 * then stores R tiles.  Iterations past the trip count (the last group)
 * recompute iteration jg * R (always valid: in-bounds loads, whatever the
 * body masks) and their stores are masked off, so the stores are exactly
 * those of the R = 1 kernel, each tile once. */
static Func *operand_kernel(G *g, const Inst *at, int own, const char *name, Dtype sdt, int R, int64_t smem[2],
                            bool ordered, bool wide, int chunk)
{
    const Func *bw = g->bw;
    Arena *a = g->a;
    Func *f = ir_func_new(a, arena_printf(a, "%s_%s", bw->name, name), bw->loc);
    ValId *m1 = arena_alloc(a, sizeof(ValId) * (size_t)g->nv), *m2 = arena_alloc(a, sizeof(ValId) * (size_t)g->nv);
    ValId ext[3];
    plan_params(f, bw, sdt, m1, ext);
    memcpy(m2, m1, sizeof(ValId) * (size_t)g->nv);
    Block *b = f->body;
    Loc loc = at->loc;
    Type i32 = type_scalar(DT_I32), i64 = type_scalar(DT_I64), i1 = type_scalar(DT_I1);
    Cl top = {g, f, m2, true, 0};
    ValId lb = cl(&top, b, g->loop->args[0], 0), st = cl(&top, b, g->loop->args[2], 0);
    ValId ub = R > 1 || ordered ? cl(&top, b, g->loop->args[1], 0) : 0;
    if (!top.ok)
        return NULL;
    Type it = bw->vals.v[g->iv].ty;
    /* the bounds in i64 (for the launch order and the group's iterations): nothing below wraps */
    ValId lb64 = 0, st64 = 0, ub64 = 0;
    if (ub) {
        lb64 = ir_op1(f, b, OP_CAST, i64, lb, loc), st64 = ir_op1(f, b, OP_CAST, i64, st, loc);
        ub64 = ir_op1(f, b, OP_CAST, i64, ub, loc);
    }
    ValId mine, j;
    if (ordered) { /* a 1-D grid of tiles x groups, in blocks of GEMM_ORDER tile ids (plan.h); in i64:
                    * (ub - lb + step - 1) and GEMM_ORDER * groups cannot wrap */
        ValId pid = ir_op1(f, b, OP_CAST, i64, ir_emit(f, b, OP_PROGRAM_ID, NULL, 0, &i32, 1, loc)->res[0], loc);
        ValId one = ir_const_int(f, b, i64, 1, loc);
        ValId span = ir_op2(f, b, OP_SUB, i64, ub64, lb64, loc);
        ValId trips = ir_op2(f, b, OP_DIV, i64, ir_op2(f, b, OP_SUB, i64, ir_op2(f, b, OP_ADD, i64, span, st64, loc), one,
                                                      loc), st64, loc);
        ValId nj = ir_op2(f, b, OP_DIV, i64, ir_op2(f, b, OP_ADD, i64, trips, ir_const_int(f, b, i64, R - 1, loc), loc),
                          ir_const_int(f, b, i64, R, loc), loc);
        ValId gsz = ir_const_int(f, b, i64, GEMM_ORDER, loc);
        ValId per = ir_op2(f, b, OP_MUL, i64, gsz, nj, loc);
        ValId first = ir_op2(f, b, OP_MUL, i64, ir_op2(f, b, OP_DIV, i64, pid, per, loc), gsz, loc);
        ValId tiles = ir_op1(f, b, OP_CAST, i64, ext[own ? 2 : 1], loc);
        ValId rows = ir_op2(f, b, OP_MINIMUM, i64, ir_op2(f, b, OP_SUB, i64, tiles, first, loc), gsz, loc);
        ValId in = ir_op2(f, b, OP_REM, i64, pid, per, loc);
        mine = ir_op1(f, b, OP_CAST, i32, ir_op2(f, b, OP_ADD, i64, first, ir_op2(f, b, OP_REM, i64, in, rows, loc), loc),
                      loc);
        j = ir_op1(f, b, OP_CAST, i32, ir_op2(f, b, OP_DIV, i64, in, rows, loc), loc);
    } else {
        Inst *p0 = ir_emit(f, b, OP_PROGRAM_ID, NULL, 0, &i32, 1, loc);
        p0->ival = 0;
        mine = p0->res[0];
        Inst *p1 = ir_emit(f, b, OP_PROGRAM_ID, NULL, 0, &i32, 1, loc);
        p1->ival = 1;
        j = p1->res[0];
    }
    f->vals.v[mine].name = own ? "tile_v" : "tile_u";
    /* the iterations' induction values: lb + (j * R + r) * step */
    m2[g->id[own]] = mine;
    ValId ks[GEMM_MAX_GROUP], ok[GEMM_MAX_GROUP] = {0};
    ValId j0 = R > 1 ? ir_op2(f, b, OP_MUL, i32, j, ir_const_int(f, b, i32, R, loc), loc) : j;
    ValId jj = it.dt == DT_I32 ? j0 : ir_op1(f, b, OP_CAST, it, j0, loc);
    ks[0] = ir_op2(f, b, OP_ADD, it, lb, ir_op2(f, b, OP_MUL, it, jj, st, loc), loc);
    f->vals.v[ks[0]].name = bw->vals.v[g->iv].name;
    if (R > 1 && !wide) { /* in i64: lb + (j * R + r) * step cannot wrap */
        ValId j64 = ir_op1(f, b, OP_CAST, i64, j0, loc);
        for (int r = 1; r < R; r++) {
            ValId idx = ir_op2(f, b, OP_ADD, i64, j64, ir_const_int(f, b, i64, r, loc), loc);
            ValId k64 = ir_op2(f, b, OP_ADD, i64, lb64, ir_op2(f, b, OP_MUL, i64, idx, st64, loc), loc);
            ok[r] = ir_op2(f, b, OP_LT, i1, k64, ub64, loc);
            ValId kr = it.dt == DT_I64 ? k64 : ir_op1(f, b, OP_CAST, it, k64, loc);
            ks[r] = ir_emit(f, b, OP_WHERE, (ValId[]){ok[r], kr, ks[0]}, 3, &it, 1, loc)->res[0];
            f->vals.v[ks[r]].name = bw->vals.v[g->iv].name;
        }
    }
    ValId val = at->args[1];
    Type vt = bw->vals.v[val].ty;
    const Inst *vd = g->def[val];
    if (vd && vd->op == OP_CAST && dtype_is_float((Dtype)bw->vals.v[vd->args[0]].ty.dt) &&
        dtype_bits((Dtype)bw->vals.v[vd->args[0]].ty.dt) > dtype_bits((Dtype)vt.dt)) {
        val = vd->args[0]; /* sum before the rounding to the gradient's dtype */
        vt = bw->vals.v[val].ty;
    }
    Dtype acc_dt = fold_partial_dtype((Dtype)vt.dt);
    Type at_t = type_tile(acc_dt, vt.rank, vt.shape);
    Wd wd = {.g = g, .f = f, .R = R, .ok = true, .base = g->iv};
    int wax = -1; /* wide: the k axis of the gradient's tile */
    if (wide) {
        const Inst *sd = g->def[g->loop->args[2]];
        wd.step = sd && sd->op == OP_CONST ? sd->ival : 0;
        wd.kind = arena_alloc(a, (size_t)g->nv);
        wd.axis = arena_alloc(a, (size_t)g->nv);
        wd.coef = arena_alloc(a, sizeof(int64_t) * (size_t)g->nv);
        if (vt.rank < 1 || wd.step <= 0 || wkind(&wd, val, 0) != W_AXIS || wd.L <= 0)
            return NULL;
        wax = wd.axis[val];
        /* only along the gradient tile's last axis (a dot's right operand widened, d_a = dacc b^T):
         * on an H100 a d_b = a^T dacc widened along its rows ran 2.5x slower than one tile a program
         * (fp32, [32, 64] tiles: R = 2 4663 us, R = 1 1893 us; its left operand is a transposed tile) */
        if (wax != vt.rank - 1)
            return NULL;
        at_t = wtype(&wd, at_t, wax);
        /* valid[e] = lb + (j * R + e / L) * step < ub, in i64 (L = q * step elements an iteration) */
        int32_t rl[1] = {R * wd.L};
        Type ti = type_tile(DT_I64, 1, rl);
        Inst *ar = ir_emit(f, b, OP_ARANGE, NULL, 0, (Type[]){type_tile(DT_I32, 1, rl)}, 1, loc);
        ar->ival = 0;
        ValId e = ir_op1(f, b, OP_CAST, ti, ar->res[0], loc);
        ValId it0 = ir_op2(f, b, OP_DIV, ti, e, ir_const_int(f, b, ti, wd.L, loc), loc);
        ValId k0 = ir_op2(f, b, OP_ADD, i64, lb64, ir_op2(f, b, OP_MUL, i64, ir_op1(f, b, OP_CAST, i64, j0, loc), st64, loc),
                          loc);
        ValId ke = ir_op2(f, b, OP_ADD, ti, ir_op1(f, b, OP_BROADCAST, ti, k0, loc),
                          ir_op2(f, b, OP_MUL, ti, it0, ir_op1(f, b, OP_BROADCAST, ti, st64, loc), loc), loc);
        wd.valid = ir_op2(f, b, OP_LT, type_tile(DT_I1, 1, rl), ke, ir_op1(f, b, OP_BROADCAST, ti, ub64, loc), loc);
    }
    int nacc = wide ? 1 : R;
    Type dt = bw->vals.v[g->data].ty;
    int daxis = own ? 0 : 1, nch = 1; /* chunks: dacc's axis the other tile id's lanes run along, split in nch */
    if (chunk && (wide || dt.shape[daxis] <= chunk || dt.shape[daxis] % chunk || vt.dt != (uint8_t)acc_dt))
        return NULL;
    if (chunk)
        nch = dt.shape[daxis] / chunk;
    /* for t in range(0, tiles of the other id): acc_r += contribution(t, iteration r); with chunks,
     * for it in range(0, tiles * nch): t = it // nch, its chunk c = it % nch */
    ValId fa[3 + GEMM_MAX_GROUP];
    Type rts[GEMM_MAX_GROUP];
    fa[0] = ir_const_int(f, b, i32, 0, loc), fa[1] = ext[own ? 1 : 2], fa[2] = ir_const_int(f, b, i32, 1, loc);
    if (chunk)
        fa[1] = ir_op2(f, b, OP_MUL, i32, fa[1], ir_const_int(f, b, i32, nch, loc), loc);
    for (int r = 0; r < nacc; r++)
        fa[3 + r] = ir_const_float(f, b, at_t, 0.0, loc), rts[r] = at_t;
    ir_emit(f, b, OP_FOR, fa, 3 + nacc, rts, nacc, loc);
    int idx = b->insts.n - 1;
    Block *rb = ir_inst_add_region(f, &b->insts.v[idx]);
    ValId t = ir_block_param_add(f, rb, i32, chunk ? "it" : own ? "tile_u" : "tile_v", loc), coff = 0;
    ValId accs[GEMM_MAX_GROUP], nx[GEMM_MAX_GROUP];
    for (int r = 0; r < nacc; r++)
        accs[r] = ir_block_param_add(f, rb, at_t, "acc", loc);
    if (chunk) {
        ValId n = ir_const_int(f, rb, i32, nch, loc);
        coff = ir_op2(f, rb, OP_MUL, i32, ir_op2(f, rb, OP_REM, i32, t, n, loc), ir_const_int(f, rb, i32, chunk, loc),
                      loc);
        t = ir_op2(f, rb, OP_DIV, i32, t, n, loc);
        f->vals.v[t].name = own ? "tile_u" : "tile_v";
    }
    m1[g->id[own]] = mine;
    m1[g->id[!own]] = t;
    ValId u = own ? t : mine, v = own ? mine : t;
    ValId dp = tile_ptrs(f, rb, ext[0], u, v, ext[2], dt.shape, chunk ? daxis : -1, coff, chunk, loc);
    Type st_t = type_tile(sdt, 2, dt.shape);
    if (chunk)
        st_t.shape[daxis] = chunk;
    ValId d = ir_emit(f, rb, OP_LOAD, &dp, 1, &st_t, 1, loc)->res[0], dlow = 0;
    f->vals.v[d].name = bw->vals.v[g->data].name;
    if (dt.dt != (uint8_t)sdt) {
        dlow = sdt == DT_BF16 || sdt == DT_F16 ? d : 0; /* low_dtype: the dots take it as loaded */
        d = ir_op1(f, rb, OP_CAST, type_with_dtype(st_t, (Dtype)dt.dt), d, loc);
    }
    m1[g->data] = d;
    ValId *mr = arena_alloc(a, sizeof(ValId) * (size_t)g->nv);
    Wd cd = {.g = g, .f = f, .R = R, .step = 1, .L = dt.shape[daxis], .chunk = true, .base = g->id[!own],
             .daxis = daxis, .CH = chunk, .coff = coff};
    if (chunk) {
        cd.kind = arena_alloc(a, (size_t)g->nv);
        cd.axis = arena_alloc(a, (size_t)g->nv);
        cd.coef = arena_alloc(a, sizeof(int64_t) * (size_t)g->nv);
        if (wkind(&cd, val, 0) != W_SUM)
            return NULL;
    }
    for (int r = 0; r < nacc; r++) { /* the body once per iteration of the group, on the one dacc tile */
        memcpy(mr, m1, sizeof(ValId) * (size_t)g->nv);
        mr[g->iv] = ks[r];
        Cl in = {g, f, mr, true, dlow};
        ValId c = 0;
        if (chunk) { /* its dot on the chunk, adding into the accumulator (no add of its own) */
            cd.c = &in, cd.ok = true, cd.acc = accs[r];
            cd.wmap = arena_alloc(a, sizeof(ValId) * (size_t)g->nv);
            cd.wmap[g->data] = d;
            nx[r] = wcl(&cd, rb, val, 0);
            if (!cd.ok || !in.ok || ir_type(f, nx[r]).dt != at_t.dt)
                return NULL;
        } else if (wide) { /* or once on tiles R times as wide */
            wd.c = &in;
            wd.wmap = arena_alloc(a, sizeof(ValId) * (size_t)g->nv);
            c = wcl(&wd, rb, val, 0);
            if (!wd.ok || !in.ok || ir_type(f, c).shape[wax] != at_t.shape[wax])
                return NULL;
        } else
            c = cl(&in, rb, val, 0);
        if (!in.ok)
            return NULL;
        if (!chunk && vt.dt != (uint8_t)acc_dt)
            c = ir_op1(f, rb, OP_CAST, at_t, c, loc);
        if (!chunk)
            nx[r] = ir_op2(f, rb, OP_ADD, at_t, accs[r], c, loc);
        if (r == 0 && smem) { /* shared memory of one iteration of the t loop: dacc, the other dot operands */
            smem[0] = dot_bytes(f, dlow ? dlow : d);
            for (int q = 0; q < rb->insts.n; q++)
                for (int i = 0; rb->insts.v[q].op == OP_DOT && i < 2; i++)
                    if (rb->insts.v[q].args[i] != d && rb->insts.v[q].args[i] != dlow)
                        smem[1] += dot_bytes(f, rb->insts.v[q].args[i]);
        }
    }
    ir_emit(f, rb, OP_YIELD, nx, nacc, NULL, 0, loc);
    /* the plain stores of this program's tiles, those past the trip count masked off */
    for (int r = 0; r < nacc; r++) {
        ValId sum = b->insts.v[idx].res[r];
        f->vals.v[sum].name = arena_printf(a, "d%s", name);
        memcpy(mr, m2, sizeof(ValId) * (size_t)g->nv);
        mr[g->iv] = ks[r];
        Cl tr = {g, f, mr, true, 0};
        ValId p, mk = 0;
        bool masked = at->flags & IF_HAS_MASK;
        if (wide) { /* one store of the wide tile, masked by the elements' iterations */
            wd.c = &tr;
            wd.wmap = arena_alloc(a, sizeof(ValId) * (size_t)g->nv);
            if (wkind(&wd, at->args[0], 0) != W_AXIS || wd.axis[at->args[0]] != wax)
                return NULL;
            p = wcl(&wd, b, at->args[0], 0);
            int km = masked ? wkind(&wd, at->args[2], 0) : W_INDEP;
            if (km != W_INDEP && (km != W_AXIS || wd.axis[at->args[2]] != wax))
                return NULL;
            if (masked)
                mk = km == W_AXIS ? wcl(&wd, b, at->args[2], 0) : windep(&wd, b, at->args[2], wax, 0);
            if (!wd.ok || !tr.ok || ir_type(f, p).rank != at_t.rank ||
                memcmp(ir_type(f, p).shape, at_t.shape, sizeof(int32_t) * (size_t)at_t.rank))
                return NULL;
            Type mt = type_tile(DT_I1, at_t.rank, at_t.shape);
            ValId vm = valid_as(&wd, b, mt, wax, loc);
            mk = masked ? ir_op2(f, b, OP_AND, mt, mk, vm, loc) : vm;
            masked = true;
        } else {
            p = cl(&tr, b, at->args[0], 0);
            mk = masked ? cl(&tr, b, at->args[2], 0) : 0;
        }
        if (!tr.ok)
            return NULL;
        Type pt = ir_type(f, p);
        if (ok[r]) {
            Type mt = type_tile(DT_I1, pt.rank, pt.shape);
            ValId okt = ir_op1(f, b, OP_BROADCAST, mt, ok[r], loc);
            mk = mk ? ir_op2(f, b, OP_AND, mt, mk, okt, loc) : okt;
            masked = true;
        }
        ValId out = sum;
        if (pt.elem != (uint8_t)acc_dt)
            out = ir_op1(f, b, OP_CAST, type_tile((Dtype)pt.elem, at_t.rank, at_t.shape), sum, loc);
        Inst *s = ir_emit(f, b, OP_STORE, (ValId[]){p, out, mk}, masked ? 3 : 2, NULL, 0, loc);
        s->flags = masked ? IF_HAS_MASK : 0;
    }
    return f;
}

/* R, the K iterations one program of an operand kernel owns (a power of 2,
 * at most GEMM_MAX_GROUP): each dacc tile it loads serves R iterations.  As
 * many as keep R * step <= 256 (the K extent of R tiles, when the step
 * counts elements), the accumulators <= cap fp32 elements (registers) and one
 * iteration's dot operands (dacc's bytes once, R times the other operands'
 * bytes) <= 128 KiB (shared memory for pipelining).
 *   R loop bodies (wide false): cap 32K; 1 for a gradient tile of fewer than
 * 64 rows (on an H100, R dots of 32 rows each ran slower than one, e.g. a
 * [32, 128] d_b tile: 2.0 -> 7.5 ms).
 *   One tile R times as wide (wide true): cap 8192.  On an H100 (fp32, the
 * forward's 64 x 64 x 32 tiles: d_a's [64, 32]) R = 2, 4, 8 ran d_a in 819,
 * 557, 769 us (R dots of one tile each: 976). */
static int group_of(const G *g, const Inst *at, int64_t step, int64_t dacc, int64_t other, bool wide)
{
    Type vt = g->bw->vals.v[at->args[1]].ty;
    int64_t tile = 1, cap = wide ? 8192 : 32768;
    for (int i = 0; i < vt.rank; i++)
        tile *= vt.shape[i];
    int r = 1;
    if (!wide && (vt.rank != 2 || vt.shape[0] < 64))
        return 1; /* a dot result of fewer than 64 rows (no warp-group MMA): R thin dots measured slower */
    while (2 * r <= GEMM_MAX_GROUP && 2 * r * step <= 256 && 2 * r * tile <= cap && dacc + 2 * r * other <= 128 * 1024)
        r *= 2;
    return r;
}

/* ------------------------------------------------------------------ */
/* Entry point                                                         */
/* ------------------------------------------------------------------ */

const char *ad_gemm(Arena *a, Program *P, const int *slot, const char *const *names, int n, Diags *d)
{
    Func *bw = P->main;
    if (P->fold || P->flags.n || P->tapes.n || P->guards.n)
        return "the backward already has a plan of its own (partials, flags, tapes or guards)";
    G g0 = {.a = a, .bw = bw, .nv = bw->vals.n}, *g = &g0;
    g->def = arena_alloc(a, sizeof(Inst *) * (size_t)g->nv);
    g->top = arena_alloc(a, (size_t)g->nv);
    g->fl = arena_alloc(a, (size_t)g->nv);
    defs(g, bw->body, true);
    /* the loop: top level, no carried values, its body holds atomics into the gradients */
    const Inst *ats[2] = {NULL, NULL};
    int nat = 0, which[2] = {-1, -1};
    for (int k = 0; k < bw->body->insts.n; k++) {
        const Inst *in = &bw->body->insts.v[k];
        if (in->op != OP_FOR || in->nregions != 1)
            continue;
        const Block *r = in->regions[0];
        int here = 0;
        for (int q = 0; q < r->insts.n; q++)
            here += r->insts.v[q].op == OP_ATOMIC_ADD;
        if (!here)
            continue;
        if (g->loop)
            return "atomic_adds into the gradients sit in more than one loop";
        g->loop = in;
    }
    if (!g->loop)
        return "no loop adds into the gradients";
    if (g->loop->nres || g->loop->nargs != 3 || g->loop->regions[0]->nparams != 1)
        return "the loop carries values";
    const Block *body = g->loop->regions[0];
    g->iv = body->params[0];
    defs(g, body, false);
    for (int q = 0; q < body->insts.n; q++) {
        const Inst *in = &body->insts.v[q];
        if (in->op == OP_YIELD)
            continue;
        if (in->op == OP_ATOMIC_ADD) {
            ValId p = in->args[0];
            int j = -1;
            for (int depth = 0; depth < 64 && p; depth++) { /* the gradient parameter it adds into */
                const Inst *pd = p < g->nv ? g->def[p] : NULL;
                if (!pd) {
                    for (int s = 0; s < n; s++)
                        if (bw->params[slot[s]] == p)
                            j = s;
                    break;
                }
                ValId next = 0;
                for (int i = 0; i < pd->nargs; i++)
                    if (ir_type(bw, pd->args[i]).dt == DT_PTR)
                        next = pd->args[i];
                p = next;
            }
            if (j < 0 || nat == 2)
                return "the loop adds into something else than one gradient per operand";
            for (int i = 0; i < nat; i++)
                if (which[i] == j)
                    return "the loop adds into one gradient at two sites";
            which[nat] = j;
            ats[nat++] = in;
            continue;
        }
        if (in->nregions || (!op_info[in->op].pure && in->op != OP_LOAD))
            return "the loop does more than compute and add the gradients";
    }
    /* each gradient of the plan is written only there */
    for (int i = 0; i < nat; i++) {
        ValId gp = bw->params[slot[which[i]]];
        int uses = 0;
        for (int k = 0; k < bw->body->insts.n; k++) {
            const Inst *in = &bw->body->insts.v[k];
            if (in == g->loop)
                continue;
            for (int x = 0; x < in->nargs; x++)
                uses += in->args[x] == gp;
            if (in->nregions && in != g->loop) {
                /* a nested use: be conservative, look one level down */
                for (int r = 0; r < in->nregions; r++)
                    for (int q = 0; q < in->regions[r]->insts.n; q++)
                        for (int x = 0; x < in->regions[r]->insts.v[q].nargs; x++)
                            uses += in->regions[r]->insts.v[q].args[x] == gp;
            }
        }
        if (uses)
            return "the gradient is also written outside the loop";
    }
    /* the ids: what the addresses and the whole body depend on */
    ValId own[2] = {0, 0};
    for (int i = 0; i < nat; i++) {
        ValId ids[2];
        int nids = 0;
        if (!walk(g, ats[i]->args[0], true, ids, &nids, 0) ||
            ((ats[i]->flags & IF_HAS_MASK) && !walk(g, ats[i]->args[2], true, ids, &nids, 0)))
            return g->why;
        if (nids != 1)
            return "an address does not depend on the program id through exactly one tile id";
        own[i] = ids[0];
    }
    for (int i = 0; i < nat; i++)
        if (!walk(g, ats[i]->args[1], false, g->id, &g->nid, 0))
            return g->why;
    for (int x = 0; x < 3; x++)
        if (!walk(g, g->loop->args[x], true, g->id, &g->nid, 0) || g->nid > 2)
            return g->why ? g->why : "the loop's bounds depend on the program id";
    if (g->nid != 2 || !g->data)
        return "the loop's body does not read one tile of data and two tile ids";
    if (flags_of(g, g->loop->args[0], 0) || flags_of(g, g->loop->args[1], 0) || flags_of(g, g->loop->args[2], 0))
        return "the loop's bounds depend on the program id";
    int ownix[2];
    for (int i = 0; i < nat; i++) {
        ownix[i] = own[i] == g->id[0] ? 0 : own[i] == g->id[1] ? 1 : -1;
        if (ownix[i] < 0)
            return "an address depends on another tile id than the body";
        if (i && ownix[i] == ownix[0])
            return "both gradients depend on the same tile id";
    }
    if (ir_type(bw, g->id[0]).dt != DT_I32 || ir_type(bw, g->id[1]).dt != DT_I32)
        return "the tile ids are not i32";
    const TapeExpr *hu = host(g, g->id[0], 0), *hv = host(g, g->id[1], 0);
    const TapeExpr *lb = host(g, g->loop->args[0], 0), *ub = host(g, g->loop->args[1], 0);
    const Inst *sd = g->def[g->loop->args[2]];
    if (!hu || !hv || !lb || !ub)
        return "kad cannot compute the tile ids or the loop's bounds on the host";
    if (!sd || sd->op != OP_CONST || sd->ival <= 0 || !g->top[g->loop->args[2]])
        return "the loop's step is not a positive constant";
    Dtype sdt = low_dtype(g);
    if (sdt == DT_F32)
        sdt = fold_partial_dtype((Dtype)bw->vals.v[g->data].ty.dt);
    GemmPlan *pl = arena_alloc(a, sizeof *pl);
    pl->id[0] = hu, pl->id[1] = hv;
    pl->trips = tape_expr_new(a, TX_CDIV, 0, tape_expr_new(a, TX_SUB, 0, ub, lb), tape_expr_new(a, TX_CONST, sd->ival, NULL, NULL));
    pl->tile = (int64_t)bw->vals.v[g->data].ty.shape[0] * bw->vals.v[g->data].ty.shape[1];
    pl->sdt = sdt;
    pl->nargs = plan_nargs(P);
    pl->data = bw->vals.v[g->data].name ? bw->vals.v[g->data].name : "the accumulator's gradient";
    pl->first = first_kernel(g, sdt);
    pl->n = nat;
    for (int i = 0; i < nat; i++) {
        GemmOperand *o = &pl->op[i];
        o->name = names[which[i]];
        o->slot = slot[which[i]];
        o->own = ownix[i];
        const char *kn = arena_printf(a, "d_%s", o->name);
        int64_t smem[2] = {0, 0};
        /* the contraction over the other tile id in chunks of GEMM_CHUNK when its tile is wider and
         * the body allows: both forms, so that they sum alike */
        int chunk = GEMM_CHUNK;
        Func *k1 = operand_kernel(g, ats[i], ownix[i], kn, sdt, 1, smem, false, false, chunk);
        if (!k1) {
            chunk = 0, smem[0] = smem[1] = 0;
            k1 = operand_kernel(g, ats[i], ownix[i], kn, sdt, 1, smem, false, false, 0);
        }
        if (!k1)
            return "kad could not rebuild the loop's body for one tile of the gradient";
        o->chunk = chunk;
        if (!ir_verify(k1, d) || !pass_run(k1, "simplify", d) || !pass_dce(k1, true) || !ir_verify(k1, d))
            return NULL; /* a kad bug: reported in d */
        /* the kernel launched: R iterations a program, its programs in GEMM_ORDER's order; its
         * tiles R times as wide when the body allows (one dot), else R bodies (R dots; always for
         * chunked contractions) */
        o->group = chunk ? 1 : group_of(g, ats[i], sd->ival, smem[0], smem[1], true);
        o->k = o->group > 1 ? operand_kernel(g, ats[i], ownix[i], kn, sdt, o->group, NULL, true, true, 0) : NULL;
        o->wide = o->k != NULL;
        if (!o->k) {
            o->group = group_of(g, ats[i], sd->ival, smem[0], smem[1], false);
            o->k = operand_kernel(g, ats[i], ownix[i], kn, sdt, o->group, NULL, true, false, chunk);
        }
        if (!o->k)
            return "kad could not rebuild the loop's body for one tile of the gradient";
        if (!ir_verify(o->k, d) || !pass_run(o->k, "simplify", d) || !pass_dce(o->k, true) || !ir_verify(o->k, d))
            return NULL;
        if (o->group > 1) {
            /* R iterations per program divide the grid by R: at small sizes the grouped grid no
             * longer fills the GPU and k1 (renamed) runs instead (the launcher's choice) */
            o->single = k1;
            k1->name = arena_printf(a, "%s_single", k1->name);
        }
        /* the stores' disjointness, proven on the one-iteration kernel k1: the grouped kernel
         * stores exactly k1's tiles (the same params; k1's grid (tiles, trips)) */
        o->acc = access_analyze(a, k1);
        const Inst *st = NULL;
        for (int q = 0; q < k1->body->insts.n; q++)
            if (k1->body->insts.v[q].op == OP_STORE)
                st = &k1->body->insts.v[q];
        AccResult r = st ? access_injective(o->acc, st, ACC_VARY_PIDS | ACC_VARY_LOOPS | ACC_VARY_LANES)
                         : (AccResult){.v = ACC_UNKNOWN};
        if (r.v != ACC_PROVEN && r.v != ACC_PROVEN_IF)
            return "kad cannot prove that the gradient's tiles are disjoint";
        if (r.v == ACC_PROVEN_IF && (!access_cond_python(o->acc, r.cond)))
            return "the gradient's tiles are disjoint only under a condition kad cannot check on the host";
        o->cond = r.v == ACC_PROVEN_IF ? r.cond : NULL;
        const char *cwhy = NULL;
        o->cover = access_cover(o->acc, st, &cwhy);
    }
    /* not simplified: its regions are shared with bw's (the forward's K loop) */
    if (!ir_verify(pl->first, d))
        return NULL;
    P->gemm = pl;
    return NULL;
}

/* The input gradients a tiled matmul's K loop adds into with atomics get
 * GEMM kernels of their own (write/gemm.c) when the pattern holds; the header
 * says so from Program.gemm (emit_grad.c).  False only on a kad bug (reported in d). */
bool gemm_inputs(Arena *a, Diags *d, const Func *fwd, Program *P, const AdSpec *spec)
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
