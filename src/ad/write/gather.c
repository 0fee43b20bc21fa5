/* write/gather.c -- a stencil's input gradient as a gather.
 *
 * Job: a stencil reads its input x at n sites (a 3x3 box filter's nine
 * taps), and its backward adds each site's adjoint with tl.atomic_add at
 * the site's address.  When every site is a function of the programs'
 * *positions* only, the same gradient is a gather: each element of d_x
 * sums, in a fixed order, the n values that read it, and is stored once.
 *
 * The rule (docs/AD.md, "Gather"), checked on the simplified backward whose
 * sites for x are atomic_adds:
 *   1. d_x is written only by n <= GATHER_SITES_MAX atomic_adds at the top
 *      level of the body (no loop or `if` around them), whose results are
 *      unused, and nothing else reads or writes it;
 *   2. a grid axis d carries positions P_d = pid_d * B_d + arange(0, B_d)
 *      (that pattern, one B_d per axis): every value a site's address,
 *      value and mask depend on uses tl.program_id and tl.arange only
 *      through the P_d, through elementwise ops, loads, broadcasts and
 *      expand_dims only (no reduction, dot, scan, reshape, permute, join,
 *      control flow, atomic), each axis d along one tile axis of it, no
 *      two on one; every tile axis of a site of more than one lane carries
 *      a position (no lane repeats another's addition);
 *   3. the sites' addresses (access.c's forms) are
 *      d_x + sum_d S_d * (P_d + o_kd) with the same S_d for every site and
 *      integer offsets o_kd, read off the form's constant uniquely.
 * Then site k at position P adds v_k(P) under m_k(P) at P + o_k, and for
 * each position Q the gather kernel sums over k, in order,
 *   where(valid(Q - o_k) & m_k(Q - o_k), v_k(Q - o_k), 0)
 * with valid(P): 0 <= P_d < N_d * B_d (N_d the forward's programs along d:
 * launched programs only), v_k and m_k recomputed at Q - o_k by cloning
 * their slices with P_d replaced by Q_d - o_kd (every load's mask and-ed
 * with valid on the axes it depends on: it reads only what a launched
 * program read), and stores once, `tl.store`, under the OR of the
 * contributions' masks, cast to x's dtype once.  Its grid: the forward's
 * plus grid_add[d] = floor((max_k o_kd - 1) / B_d) + 1 - t_lo_d tiles along
 * d, t_lo_d = floor(min_k o_kd / B_d); program t along d owns
 * Q_d = (t + t_lo_d) * B_d + arange(0, B_d); N_d = num_programs(d) - grid_add[d].
 * Exactness needs its stores to be distinct elements: access_injective on
 * the gather kernel's store, whose mask is and-ed with the comparisons every
 * contribution's mask has in common (the image bounds), so that the
 * analysis sees them.  Under a condition, the backward keeps its sites as
 * `if flag: pass else: atomic_add` and the launcher computes the flag (the
 * condition on the gather kernel's grid).  Grid axes without positions have
 * grid_add 0 and their programs must be one (the condition says so, or the
 * store is not injective).
 *
 * gather_inputs, at the end of this file, decides which site-row inputs
 * (write/plain.c's 6, 7) become gathers: a backward with their sites as
 * atomics to check the rule on, then the final one with its gather kernels.
 */
#include <math.h>
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


typedef struct Gat {
    Arena *a;
    const Func *bw;
    int nc;               /* the contract's params */
    int nv;
    const Inst **def;     /* by bw ValId: its top-level defining instruction */
    uint8_t *nested;      /* by bw ValId: defined inside a region */
    int *pidx;            /* by bw ValId: param index + 1 */
    int8_t *pax;          /* by bw ValId: d + 1 when it is P_d */
    int8_t *pat;          /* by bw ValId: the tile axis of P_d */
    int64_t B[3];         /* B_d, 0: no position along d */
    int64_t ds[3], dn[3]; /* P_d's lane digit: (lane / ds) % B_d of lanes 0 .. dn - 1 (a tl.arange: 1, B_d) */
    int8_t (*ax)[3];      /* by bw ValId: the tile axis carrying P_d, or -1 */
    uint8_t *axst;        /* 0: not computed, 1: ok, 2: refused */
    uint8_t *lanes;       /* by bw ValId: the tile axes along which it depends on lanes other than
                           * through positions (a tl.arange alone), bits */
    const char *why;
    /* the gather kernel being built */
    Func *k;
    Block *kb;
    ValId *gparam;        /* by bw param index */
    ValId Q[3], lim[3], np[3];
    int64_t o[3];         /* the current site's offsets */
    ValId *core;          /* by bw ValId, per site */
    int64_t *off;
    uint8_t *done;
} Gat;

static Loc gloc(const Gat *g) { return g->bw->loc; }

static void mark_nested(Gat *g, const Block *b)
{
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        for (int r = 0; r < in->nres; r++)
            g->nested[in->res[r]] = 1;
        for (int r = 0; r < in->nregions; r++) {
            for (int p = 0; p < in->regions[r]->nparams; p++)
                g->nested[in->regions[r]->params[p]] = 1;
            mark_nested(g, in->regions[r]);
        }
    }
}

static bool const_int(const Gat *g, ValId v, int64_t *k)
{
    const Inst *in = v > 0 && v < g->nv ? g->def[v] : NULL;
    if (!in || in->op != OP_CONST || !dtype_is_int((Dtype)ir_type(g->bw, v).dt))
        return false;
    *k = in->ival;
    return true;
}

/* v with its casts between integer types of 32 and 64 bits stripped: the
 * values they carry here (program ids, lane indices, positions) are
 * non-negative and below 2^31, which those casts keep. */
static ValId strip_icasts(const Gat *g, ValId v)
{
    for (const Inst *in = g->def[v]; in && in->op == OP_CAST; in = g->def[v]) {
        Dtype to = (Dtype)ir_type(g->bw, v).dt, from = (Dtype)ir_type(g->bw, in->args[0]).dt;
        if (!dtype_is_int(to) || !dtype_is_int(from) || to == DT_I1 || from == DT_I1 || dtype_bits(to) < 32 ||
            dtype_bits(from) < 32)
            break;
        v = in->args[0];
    }
    return v;
}

/* v = (arange(0, n) / s) % e of a rank-1 tile (a block's thread index split
 * into the coordinates of a 2-D or 3-D block: tid % BX, tid / BX,
 * (tid / BX) % BY, (tid / BX) / BY: the divisions' product is s), either
 * operation absent (s = 1, e = n / s), n a multiple of s * e: the lane
 * digit (s, e, n). */
static bool lane_digit(const Gat *g, ValId v, int64_t *s, int64_t *e, int64_t *n)
{
    int64_t c, mod = 0, div = 1;
    v = strip_icasts(g, v);
    const Inst *in = g->def[v];
    if (in && in->op == OP_REM && const_int(g, in->args[1], &c) && c > 0) {
        mod = c;
        v = strip_icasts(g, in->args[0]);
        in = g->def[v];
    }
    while (in && in->op == OP_DIV && const_int(g, in->args[1], &c) && c > 0 && div <= INT32_MAX / c) {
        div *= c; /* (tid / BX) / BY of a 3-D block: tid / (BX * BY) */
        v = strip_icasts(g, in->args[0]);
        in = g->def[v];
    }
    Type t = ir_type(g->bw, v);
    if (!in || in->op != OP_ARANGE || in->ival != 0 || t.rank != 1 || t.shape[0] % div)
        return false;
    *n = t.shape[0], *s = div, *e = mod ? mod : *n / div;
    return (*n / div) % *e == 0;
}

/* Marks v as P_d with block blk, lane digit (s, n) along tile axis at, unless
 * another block or digit is P_d's already (then v is not a position: a later
 * use refuses). */
static void mark_position(Gat *g, ValId v, int d, int64_t blk, int64_t s, int64_t n, int at)
{
    if (g->B[d] && (g->B[d] != blk || g->ds[d] != s || g->dn[d] != n))
        return;
    g->B[d] = blk, g->ds[d] = s, g->dn[d] = n;
    g->pax[v] = (int8_t)(d + 1);
    g->pat[v] = (int8_t)at;
}

/* pid_d * B (or pid_d: B = 1), its integer casts stripped: d, or -1. */
static int pid_times(const Gat *g, ValId v, int64_t *blk)
{
    const Inst *m = g->def[strip_icasts(g, v)], *pid = NULL;
    if (m && m->op == OP_MUL) {
        for (int u = 0; u < 2 && !pid; u++) {
            const Inst *p = g->def[strip_icasts(g, m->args[u])];
            if (p && p->op == OP_PROGRAM_ID && const_int(g, m->args[1 - u], blk))
                pid = p;
        }
    } else if (m && m->op == OP_PROGRAM_ID) {
        pid = m, *blk = 1;
    }
    return pid && pid->ival >= 0 && pid->ival <= 2 ? (int)pid->ival : -1;
}

/* The positions P_d: add(broadcast(pid_d * B), arange(0, B)) of i32[B], the
 * arange possibly expanded to more axes of 1 (`pid * B + tl.arange(0, B)[:,
 * None]`), along the tile axis of the arange; or, of a rank-1 i32 tile,
 * pid_d * B + (arange(0, n) / s) % B with casts between 32- and 64-bit
 * integers anywhere in it (`blockIdx.y * blockDim.y + threadIdx.y` of a 2-D
 * block, lowered as (u32)pid * BY + (u32)(tid / BX)): pax d + 1, pat the
 * tile axis, (ds, dn) its lane digit. */
static void find_positions(Gat *g)
{
    const Block *b = g->bw->body;
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        if (in->nres != 1)
            continue;
        ValId v = in->res[0];
        Type t = ir_type(g->bw, v);
        if (t.rank < 1 || !dtype_is_int((Dtype)t.dt))
            continue;
        bool done = false;
        for (int s = 0; in->op == OP_ADD && s < 2 && !done; s++) {
            const Inst *ar = g->def[in->args[s]], *bc = g->def[in->args[1 - s]];
            int at = 0; /* the arange's axis in t */
            while (ar && ar->op == OP_EXPAND_DIMS) {
                int e = (int)ar->ival;
                Type src = ir_type(g->bw, ar->args[0]);
                at = src.rank >= 1 && e <= at ? at + 1 : at;
                ar = g->def[ar->args[0]];
            }
            if (!ar || !bc || ar->op != OP_ARANGE || ar->ival != 0 || bc->op != OP_BROADCAST)
                continue;
            int32_t blk32 = ir_type(g->bw, ar->res[0]).shape[0];
            bool ones = t.shape[at] == blk32;
            for (int ax = 0; ax < t.rank; ax++)
                ones = ones && (ax == at || t.shape[ax] == 1);
            int64_t blk = 0;
            int d = ones && ir_type(g->bw, bc->args[0]).rank == 0 ? pid_times(g, bc->args[0], &blk) : -1;
            if (d < 0 || blk != blk32)
                continue;
            mark_position(g, v, d, blk, 1, blk, at);
            done = true;
        }
        if (done || t.rank != 1 || t.dt != DT_I32)
            continue;
        const Inst *sum = g->def[strip_icasts(g, v)];
        for (int s = 0; sum && sum->op == OP_ADD && s < 2; s++) {
            const Inst *bc = g->def[strip_icasts(g, sum->args[1 - s])];
            int64_t blk = 0, ds, de, dn;
            int d = bc && bc->op == OP_BROADCAST && ir_type(g->bw, bc->args[0]).rank == 0
                        ? pid_times(g, bc->args[0], &blk)
                        : -1;
            if (d >= 0 && lane_digit(g, sum->args[s], &ds, &de, &dn) && de == blk) {
                mark_position(g, v, d, blk, ds, dn, 0);
                break;
            }
        }
    }
}

/* Are the lane digits of P_d and P_e disjoint (they split one thread index)? */
static bool digits_disjoint(const Gat *g, int d, int e)
{
    return g->ds[d] * g->B[d] <= g->ds[e] || g->ds[e] * g->B[e] <= g->ds[d];
}

/* Do the digits of the positions along tile axis ax of length len (m: the tile axis of each P_d)
 * together name every lane of it (each lane one position tuple)? */
static bool digits_cover(const Gat *g, const int8_t m[3], int ax, int64_t len)
{
    int64_t s = 1;
    for (bool grew = true; grew && s < len;) {
        grew = false;
        for (int d = 0; d < 3 && !grew; d++)
            if (m[d] == ax && g->ds[d] == s && g->dn[d] == len) {
                s *= g->B[d];
                grew = true;
            }
    }
    return s == len;
}

static bool refuse(Gat *g, const char *why)
{
    if (!g->why)
        g->why = why;
    return false;
}

/* The tile axis carrying each P_d in v (-1: none), or false when v depends
 * on positions in a way the rule does not allow.  Also g->lanes[v]. */
static bool axes_of(Gat *g, ValId v, int8_t out[3])
{
    if (g->axst[v] == 1) {
        memcpy(out, g->ax[v], 3);
        return true;
    }
    if (g->axst[v] == 2)
        return false;
    int8_t r[3] = {-1, -1, -1};
    unsigned ln = 0;
    bool ok = true;
    const Inst *in = g->def[v];
    Type t = ir_type(g->bw, v);
    if (g->pidx[v]) {
        if (g->pidx[v] - 1 >= g->nc)
            ok = refuse(g, "a site depends on a parameter the launcher computes");
    } else if (g->nested[v] || !in) {
        ok = refuse(g, "a site depends on a value computed in a loop or an `if`");
    } else if (g->pax[v]) {
        r[g->pax[v] - 1] = g->pat[v];
    } else {
        switch (in->op) {
        case OP_CONST:
        case OP_NUM_PROGRAMS:
            break;
        case OP_PROGRAM_ID:
            ok = refuse(g, "a site depends on tl.program_id other than through positions "
                           "pid * BLOCK + tl.arange(0, BLOCK)");
            break;
        case OP_ARANGE: /* the same in every program: a lane index */
            ln = 1;
            break;
        case OP_BROADCAST: {
            int8_t s[3];
            ok = axes_of(g, in->args[0], s);
            Type st = ir_type(g->bw, in->args[0]);
            ln = st.rank ? g->lanes[in->args[0]] : 0;
            for (int d = 0; ok && d < 3; d++)
                if (s[d] >= 0) {
                    if (st.shape[s[d]] != t.shape[s[d]])
                        ok = refuse(g, "a site broadcasts a position across lanes");
                    r[d] = s[d];
                }
            break;
        }
        case OP_EXPAND_DIMS: {
            int8_t s[3];
            ok = axes_of(g, in->args[0], s);
            for (int d = 0; ok && d < 3; d++)
                r[d] = s[d] < 0 ? -1 : (int8_t)(s[d] >= in->ival ? s[d] + 1 : s[d]);
            unsigned l0 = g->lanes[in->args[0]], lo = l0 & ((1u << in->ival) - 1);
            ln = lo | ((l0 & ~((1u << in->ival) - 1)) << 1);
            break;
        }
        default: {
            bool ew = op_info[in->op].elementwise && !op_writes_memory(in->op) && in->nres == 1 &&
                      !(in->flags & IF_DESC);
            bool pure = op_info[in->op].pure && in->nres == 1 && !in->nregions;
            if (!ew && !pure) {
                ok = refuse(g, arena_printf(g->a, "a site depends on a `%s`, which kad does not recompute at "
                                                  "other positions", op_info[in->op].name));
                break;
            }
            for (int i = 0; ok && i < in->nargs; i++) {
                int8_t s[3];
                ok = axes_of(g, in->args[i], s);
                if (!ok)
                    break;
                if (!ew) { /* a reduction, a dot, a reshape...: only of what no position reaches */
                    if (s[0] >= 0 || s[1] >= 0 || s[2] >= 0)
                        ok = refuse(g, arena_printf(g->a, "a site depends on a `%s` of values that depend on "
                                                          "positions, which is not position-pointwise",
                                                    op_info[in->op].name));
                    if (g->lanes[in->args[i]])
                        ln = (1u << t.rank) - 1;
                    continue;
                }
                ln |= g->lanes[in->args[i]];
                if ((in->op == OP_DIV || in->op == OP_REM) && i == 1 && dtype_is_int((Dtype)t.dt) &&
                    (s[0] >= 0 || s[1] >= 0 || s[2] >= 0))
                    ok = refuse(g, "a site divides integers by a value that depends on positions");
                for (int d = 0; ok && d < 3; d++) {
                    if (s[d] >= 0 && r[d] >= 0 && s[d] != r[d])
                        ok = refuse(g, "a site uses one position along two tile axes");
                    if (s[d] >= 0)
                        r[d] = s[d];
                }
            }
            break;
        }
        }
    }
    for (int d = 0; ok && d < 3; d++) {
        if (r[d] >= 0 && (ln >> r[d] & 1))
            ok = refuse(g, "a site combines a position with a lane index (tl.arange) along one tile axis");
        for (int e = d + 1; ok && e < 3; e++)
            if (r[d] >= 0 && r[d] == r[e] && !digits_disjoint(g, d, e))
                ok = refuse(g, "a site has two positions along one tile axis");
    }
    g->axst[v] = ok ? 1 : 2;
    g->lanes[v] = (uint8_t)ln;
    memcpy(g->ax[v], r, 3);
    memcpy(out, r, 3);
    return ok;
}

/* ------------------------------------------------------------------ */
/* Polynomials (access.c's AccPoly, read only)                          */
/* ------------------------------------------------------------------ */

static bool mono_same(const AccMono *x, const AccMono *y)
{
    return !memcmp(x->s, y->s, sizeof x->s);
}

static int64_t coef_of(const AccPoly *p, const AccMono *like)
{
    int64_t k = 0;
    for (int i = 0; i < p->n; i++)
        if (mono_same(&p->m[i], like))
            k += p->m[i].k;
    return k;
}

static bool poly_eq(const AccPoly *x, const AccPoly *y)
{
    for (int i = 0; i < x->n; i++)
        if (coef_of(x, &x->m[i]) != coef_of(y, &x->m[i]))
            return false;
    for (int i = 0; i < y->n; i++)
        if (coef_of(x, &y->m[i]) != coef_of(y, &y->m[i]))
            return false;
    return true;
}

static bool poly_zero(const AccPoly *p)
{
    for (int i = 0; i < p->n; i++)
        if (coef_of(p, &p->m[i]))
            return false;
    return true;
}

/* c0 = sum_d o[d] * S[d] with integers o, read off uniquely: each of c0's
 * monomials belongs to exactly one S_d (their monomials pairwise distinct). */
static bool decompose(const AccPoly *c0, const AccPoly S[3], unsigned D, int64_t o[3])
{
    for (int d = 0; d < 3; d++)
        for (int e = d + 1; e < 3; e++)
            for (int i = 0; (D >> d & 1) && (D >> e & 1) && i < S[d].n; i++)
                if (coef_of(&S[e], &S[d].m[i]))
                    return false; /* two strides share a monomial: ambiguous */
    AccPoly rest = *c0;
    for (int d = 0; d < 3; d++) {
        o[d] = 0;
        if (!(D >> d & 1) || poly_zero(&S[d]))
            continue;
        const AccMono *m0 = NULL;
        for (int i = 0; i < S[d].n && !m0; i++)
            if (coef_of(&S[d], &S[d].m[i]))
                m0 = &S[d].m[i];
        int64_t s0 = coef_of(&S[d], m0), c = coef_of(c0, m0);
        if (c % s0)
            return false;
        o[d] = c / s0;
        if (o[d] > (1 << 20) || o[d] < -(1 << 20))
            return false;
        for (int i = 0; i < S[d].n; i++) {
            if (coef_of(c0, &S[d].m[i]) != o[d] * coef_of(&S[d], &S[d].m[i]))
                return false;
            for (int j = 0; j < rest.n; j++)
                if (mono_same(&rest.m[j], &S[d].m[i]))
                    rest.m[j].k = 0;
        }
    }
    return poly_zero(&rest);
}

static int64_t floordiv(int64_t x, int64_t y)
{
    int64_t q = x / y;
    return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
}

/* ------------------------------------------------------------------ */
/* The gather kernel                                                   */
/* ------------------------------------------------------------------ */

static ValId kconst_int(Gat *g, Type t, int64_t v) { return ir_const_int(g->k, g->kb, t, v, gloc(g)); }

static ValId mat(Gat *g, ValId core, int64_t off)
{
    if (!off)
        return core;
    Type t = ir_type(g->k, core);
    return ir_op2(g->k, g->kb, OP_ADD, t, core, kconst_int(g, t, off), gloc(g));
}

/* x (rank 1, i1[B]) along axis `at` of a tile of type t. */
static ValId place(Gat *g, ValId x, int at, Type t)
{
    Type xt = ir_type(g->k, x);
    int32_t shape[KAD_MAX_RANK];
    int rank = 1;
    shape[0] = xt.shape[0];
    for (int i = 0; i < at; i++) { /* leading axes of 1 */
        memmove(shape + 1, shape, sizeof(int32_t) * (size_t)rank);
        shape[0] = 1;
        rank++;
        x = ir_op1(g->k, g->kb, OP_EXPAND_DIMS, type_tile((Dtype)xt.dt, rank, shape), x, gloc(g));
        g->kb->insts.v[g->kb->insts.n - 1].ival = 0;
    }
    while (rank < t.rank) {
        shape[rank++] = 1;
        x = ir_op1(g->k, g->kb, OP_EXPAND_DIMS, type_tile((Dtype)xt.dt, rank, shape), x, gloc(g));
        g->kb->insts.v[g->kb->insts.n - 1].ival = rank - 1;
    }
    if (memcmp(shape, t.shape, sizeof(int32_t) * (size_t)t.rank))
        x = ir_op1(g->k, g->kb, OP_BROADCAST, type_tile((Dtype)xt.dt, t.rank, t.shape), x, gloc(g));
    return x;
}

/* valid(Q - o) on the positions the tile map m carries, as an i1 tile of
 * type t's shape; 0 when m carries none. */
static ValId valid_of(Gat *g, const int8_t m[3], Type t)
{
    ValId r = 0;
    Type bt = type_tile(DT_I1, t.rank, t.shape);
    for (int d = 0; d < 3; d++) {
        if (m[d] < 0)
            continue;
        Type qt = ir_type(g->k, g->Q[d]);
        ValId q = mat(g, g->Q[d], -g->o[d]);
        ValId lo = ir_op2(g->k, g->kb, OP_GE, type_with_dtype(qt, DT_I1), q, kconst_int(g, qt, 0), gloc(g));
        ValId lim = ir_op1(g->k, g->kb, OP_BROADCAST, qt, g->lim[d], gloc(g));
        ValId hi = ir_op2(g->k, g->kb, OP_LT, type_with_dtype(qt, DT_I1), q, lim, gloc(g));
        ValId v = place(g, ir_op2(g->k, g->kb, OP_AND, type_with_dtype(qt, DT_I1), lo, hi, gloc(g)), m[d], t);
        r = r ? ir_op2(g->k, g->kb, OP_AND, bt, r, v, gloc(g)) : v;
    }
    return r;
}

static void clone(Gat *g, ValId v, ValId *core, int64_t *off);

static ValId cl(Gat *g, ValId v)
{
    ValId c;
    int64_t o;
    clone(g, v, &c, &o);
    return mat(g, c, o);
}

static bool is_intval(const Gat *g, ValId v)
{
    Dtype dt = (Dtype)ir_type(g->bw, v).dt;
    return dtype_is_int(dt) && dt != DT_I1;
}

static void clone(Gat *g, ValId v, ValId *core, int64_t *off)
{
    if (g->done[v]) {
        *core = g->core[v], *off = g->off[v];
        return;
    }
    const Inst *in = g->def[v];
    ValId c = 0;
    int64_t o = 0, k;
    if (g->pidx[v]) {
        c = g->gparam[g->pidx[v] - 1];
    } else if (g->pax[v]) {
        int d = g->pax[v] - 1;
        Type t = ir_type(g->bw, v);
        c = t.rank == 1 ? g->Q[d] : place(g, g->Q[d], g->pat[v], t);
        o = -g->o[d];
    } else if (in->op == OP_NUM_PROGRAMS) {
        c = g->np[in->ival];
    } else if ((in->op == OP_ADD || in->op == OP_SUB) && is_intval(g, v) &&
               (const_int(g, in->args[1], &k) || (in->op == OP_ADD && const_int(g, in->args[0], &k))) &&
               k < INT32_MAX && k > INT32_MIN) {
        int x = const_int(g, in->args[1], &k) ? 0 : 1; /* x: the operand that is not the constant */
        clone(g, in->args[x], &c, &o);
        o += in->op == OP_ADD ? k : -k;
        if (o > INT32_MAX || o < INT32_MIN) { /* not exact in i32: computed as written */
            c = mat(g, c, o - (in->op == OP_ADD ? k : -k));
            ValId kc = cl(g, in->args[1 - x]);
            c = ir_op2(g->k, g->kb, (OpKind)in->op, ir_type(g->bw, v), x ? kc : c, x ? c : kc, gloc(g));
            o = 0;
        }
    } else if ((in->op == OP_EXPAND_DIMS || in->op == OP_BROADCAST) && is_intval(g, v) &&
               ir_type(g->bw, in->args[0]).rank > 0) { /* a scalar: broadcast as written (n + 1) */
        ValId s;
        clone(g, in->args[0], &s, &o);
        Inst *ni = ir_emit(g->k, g->kb, (OpKind)in->op, &s, 1, &g->bw->vals.v[v].ty, 1, in->loc);
        ir_inst_copy_attrs(ni, in);
        c = ni->res[0];
    } else {
        int n = in->nargs;
        ValId *args = arena_alloc(g->a, sizeof(ValId) * (size_t)(n + 2));
        for (int i = 0; i < n; i++)
            args[i] = cl(g, in->args[i]);
        uint16_t flags = in->flags;
        if (in->op == OP_LOAD) { /* read only what a launched program read */
            int8_t m[3];
            axes_of(g, v, m);
            ValId val = valid_of(g, m, ir_type(g->bw, v));
            if (val && (flags & IF_HAS_MASK)) {
                args[1] = ir_op2(g->k, g->kb, OP_AND, ir_type(g->k, val), args[1], val, gloc(g));
            } else if (val) {
                args[1] = val;
                n = 2;
                flags |= IF_HAS_MASK;
            }
        }
        Inst *ni = ir_emit(g->k, g->kb, (OpKind)in->op, args, n, &g->bw->vals.v[v].ty, 1, in->loc);
        ir_inst_copy_attrs(ni, in);
        ni->flags = flags;
        c = ni->res[0];
        if (g->bw->vals.v[v].name)
            g->k->vals.v[c].name = g->bw->vals.v[v].name;
    }
    g->done[v] = 1;
    g->core[v] = c, g->off[v] = o;
    *core = c, *off = o;
}

typedef struct Site {
    const Inst *in;
    int64_t o[3];
    int8_t m[3];
} Site;

typedef struct Built {
    Func *k;
    int64_t grid_add[3];
    const AccCond *cond; /* the store's injectivity condition, or NULL: always */
    Access *acc;
    int nsites;
    const Inst **sites;
    Access *cover_acc;      /* bw's analysis, for cover */
    const AccCover *cover;  /* what bw's site of offset 0 reaches (the gather kernel stores at least
                             * that), or NULL with cover_why */
    const char *cover_why;
} Built;

/* The leaves of an `and` tree of the gather kernel. */
static void and_leaves(const Func *k, const Inst **def, ValId v, ValVec *out, Arena *a)
{
    const Inst *in = def[v];
    if (in && in->op == OP_AND) {
        and_leaves(k, def, in->args[0], out, a);
        and_leaves(k, def, in->args[1], out, a);
        return;
    }
    vec_push(a, *out, v);
}

static void or_leaves(const Inst **def, ValId v, ValVec *out, Arena *a)
{
    const Inst *in = def[v];
    if (in && in->op == OP_OR) {
        or_leaves(def, in->args[0], out, a);
        or_leaves(def, in->args[1], out, a);
        return;
    }
    vec_push(a, *out, v);
}

/* The store's mask and-ed with the leaves every contribution has (the
 * bounds a stencil checks at every tap): what lets the access analysis
 * bound the stored elements.  The same elements: every contribution
 * implies them. */
static void add_hull(Arena *a, Func *k)
{
    Block *b = k->body;
    int nv = k->vals.n;
    const Inst **def = arena_alloc(a, sizeof *def * (size_t)nv);
    for (int i = 0; i < b->insts.n; i++)
        for (int r = 0; r < b->insts.v[i].nres; r++)
            def[b->insts.v[i].res[r]] = &b->insts.v[i];
    Inst *st = &b->insts.v[b->insts.n - 1];
    if (st->op != OP_STORE || !(st->flags & IF_HAS_MASK))
        return;
    ValVec contribs = {0}, common = {0};
    or_leaves(def, st->args[2], &contribs, a);
    for (int c = 0; c < contribs.n; c++) {
        ValVec lv = {0};
        and_leaves(k, def, contribs.v[c], &lv, a);
        if (!c) {
            for (int i = 0; i < lv.n; i++)
                vec_push(a, common, lv.v[i]);
            continue;
        }
        int w = 0;
        for (int i = 0; i < common.n; i++) {
            bool in = false;
            for (int j = 0; j < lv.n && !in; j++)
                in = lv.v[j] == common.v[i];
            if (in)
                common.v[w++] = common.v[i];
        }
        common.n = w;
    }
    if (!common.n || contribs.n < 2)
        return;
    int n;
    Inst *old = ir_block_detach(b, &n);
    for (int i = 0; i < n - 1; i++)
        vec_push(a, b->insts, old[i]);
    Inst s = old[n - 1];
    Type mt = ir_type(k, s.args[2]);
    ValId h = common.v[0];
    for (int i = 1; i < common.n; i++)
        h = ir_op2(k, b, OP_AND, mt, h, common.v[i], s.loc);
    ValId m = ir_op2(k, b, OP_AND, mt, h, s.args[2], s.loc);
    ValId args[3] = {s.args[0], s.args[1], m};
    Inst *ns = ir_emit(k, b, OP_STORE, args, 3, NULL, 0, s.loc);
    ns->flags = s.flags;
}

/* where(c, v, 0) as a load: when v is a float load whose masked lanes read
 * 0.0 (or have no mask), possibly cast to another float type, the same
 * load under its mask and c (masked lanes 0, cast to 0): one `and` in place
 * of the select, and the addresses c excludes are not read.  0 when v is
 * not such a load. */
static ValId masked_load(Func *K, Block *b, ValId v, ValId c, Loc loc)
{
    const Inst *d = ir_block_def(b, v), *cast = NULL;
    if (d && d->op == OP_CAST && dtype_is_float((Dtype)ir_type(K, d->args[0]).dt)) {
        cast = d;
        d = ir_block_def(b, d->args[0]);
    }
    if (!d || d->op != OP_LOAD || !dtype_is_float((Dtype)ir_type(K, d->res[0]).dt) ||
        !type_same_shape(ir_type(K, d->res[0]), ir_type(K, c)))
        return 0;
    const Inst *o = d->flags & IF_HAS_OTHER ? ir_block_def(b, d->args[2]) : NULL;
    if ((d->flags & IF_HAS_MASK) && (!o || o->op != OP_CONST || o->fval != 0.0 || signbit(o->fval)))
        return 0;
    Inst dl = *d; /* d points into b, which the emissions below may move */
    Type lt = ir_type(K, dl.res[0]);
    ValId args[3] = {dl.args[0], c, 0};
    args[1] = dl.flags & IF_HAS_MASK ? ir_op2(K, b, OP_AND, ir_type(K, c), dl.args[1], c, loc) : c;
    args[2] = ir_const_float(K, b, lt, 0.0, loc);
    Inst *nl = ir_emit(K, b, OP_LOAD, args, 3, &lt, 1, loc);
    ir_inst_copy_attrs(nl, &dl);
    nl->flags |= IF_HAS_MASK | IF_HAS_OTHER;
    ValId r = nl->res[0];
    return cast ? ir_op1(K, b, OP_CAST, ir_type(K, v), r, loc) : r;
}

/* The loads' masks of the gather kernel k regrouped: an `and` tree whose
 * leaves are broadcasts of smaller tiles (a stencil's row tests [B0, 1],
 * column tests [1, B1]) becomes one `and` per source shape on the small
 * tiles, each broadcast once, and-ed with the leaves of the full shape
 * (duplicates dropped): a tap's mask costs one `and` an element, not one per
 * test.  The same mask: `and` is associative and commutative, and a
 * broadcast commutes with it. */
static void regroup_masks(Arena *a, Func *k)
{
    Block *b = k->body;
    int nv = k->vals.n;
    const Inst **def = arena_alloc(a, sizeof *def * (size_t)(nv + 1));
    for (int i = 0; i < b->insts.n; i++)
        for (int r = 0; r < b->insts.v[i].nres; r++)
            def[b->insts.v[i].res[r]] = &b->insts.v[i];
    int n;
    Inst *old = ir_block_detach(b, &n);
    for (int i = 0; i < n; i++) {
        Inst in = old[i];
        if (in.op == OP_LOAD && (in.flags & IF_HAS_MASK)) {
            ValVec lv = {0}, src = {0};
            and_leaves(k, def, in.args[1], &lv, a);
            int w = 0;
            for (int x = 0; x < lv.n; x++) { /* duplicates dropped */
                bool dup = false;
                for (int y = 0; y < w && !dup; y++)
                    dup = lv.v[y] == lv.v[x];
                if (!dup)
                    lv.v[w++] = lv.v[x];
            }
            lv.n = w;
            for (int x = 0; x < lv.n; x++) { /* each leaf's source: the smaller tile it broadcasts */
                const Inst *d = def[lv.v[x]];
                bool small = d && d->op == OP_BROADCAST && ir_type(k, d->args[0]).rank == ir_type(k, lv.v[x]).rank;
                vec_push(a, src, small ? d->args[0] : lv.v[x]);
            }
            Type mt = ir_type(k, in.args[1]);
            bool gain = false; /* two leaves broadcast from one smaller shape: an `and` an element saved */
            for (int x = 0; x < lv.n && !gain; x++)
                for (int y = x + 1; y < lv.n && !gain && src.v[x] != lv.v[x]; y++)
                    gain = src.v[y] != lv.v[y] && type_same_shape(ir_type(k, src.v[y]), ir_type(k, src.v[x]));
            ValId m = 0;
            uint8_t *used = arena_alloc(a, (size_t)lv.n + 1);
            memset(used, 0, (size_t)lv.n + 1);
            for (int x = 0; x < lv.n && gain; x++) {
                if (used[x])
                    continue;
                Type st = ir_type(k, src.v[x]);
                ValId g = src.v[x];
                for (int y = x + 1; y < lv.n; y++) {
                    if (used[y] || !type_same_shape(ir_type(k, src.v[y]), st))
                        continue;
                    used[y] = 1;
                    g = ir_op2(k, b, OP_AND, st, g, src.v[y], in.loc);
                }
                if (g != lv.v[x] && !type_same_shape(st, mt))
                    g = ir_op1(k, b, OP_BROADCAST, mt, g, in.loc);
                m = m ? ir_op2(k, b, OP_AND, mt, m, g, in.loc) : g;
            }
            if (m)
                in.args[1] = m;
        }
        vec_push(a, b->insts, in);
    }
}

/* The value site `in` adds, before its rounding to x's dtype (then rounded
 * once, at the end), when that is at least as wide as adt. */
static ValId site_value(const Gat *g, const Inst *in, Dtype adt)
{
    ValId v = in->args[1];
    const Inst *cv = g->def[v];
    if (cv && cv->op == OP_CAST && dtype_is_float((Dtype)ir_type(g->bw, cv->args[0]).dt) &&
        dtype_bits((Dtype)ir_type(g->bw, cv->args[0]).dt) >= dtype_bits(adt))
        v = cv->args[0];
    return v;
}

static int factor_arg(const Gat *g, const Inst *d);

/* The division or multiplication every site's value ends with, by one
 * float literal (x_k / c or x_k * c, in adt), or NULL: the sum then adds
 * the x_k and divides (multiplies) once, as a hand-written backward does
 * (a box filter's nine taps of dy / 9: one division, not nine).  The same
 * sum up to rounding (one rounding of the division instead of one per
 * site); it can overflow only where the x_k's sum does. */
static const Inst *common_factor(const Gat *g, const Site *S, int n, Dtype adt, double *c)
{
    const Inst *f = NULL;
    for (int k = 0; k < n; k++) {
        ValId v = site_value(g, S[k].in, adt);
        const Inst *d = g->def[v];
        int at = d ? factor_arg(g, d) : -1;
        if (at < 0 || ir_type(g->bw, v).dt != (uint8_t)adt || (f && (d->op != f->op || *c != g->def[d->args[at]]->fval)))
            return NULL;
        *c = g->def[d->args[at]]->fval;
        f = f ? f : d;
    }
    return f;
}

/* Which argument of d (x / c, x * c or c * x) is the float literal c: 1,
 * 0 (a product's first), or -1 when neither. */
static int factor_arg(const Gat *g, const Inst *d)
{
    for (int i = 1; (d->op == OP_DIV || d->op == OP_MUL) && i >= (d->op == OP_MUL ? 0 : 1); i--) {
        const Inst *c = g->def[d->args[i]];
        if (c && c->op == OP_CONST && dtype_is_float((Dtype)ir_type(g->bw, d->args[i]).dt) && isfinite(c->fval) &&
            c->fval != 0.0) /* a finite, nonzero literal: no 0/0 where every site is off */
            return i;
    }
    return -1;
}

/* lane / s on the gather kernel's rank-1 tile qt of n lanes, divided as the forward divides it:
 * by the extents of the digits below s in turn when they chain up to s ((lane / BX) / BY of a 3-D
 * block, which the access analysis reads as digits of lane / BX), else at once. */
static ValId lane_quotient(Gat *g, int64_t s, int64_t n, Type qt)
{
    for (int d = 0; s > 1 && d < 3; d++)
        if (g->B[d] && g->dn[d] == n && g->ds[d] < s && g->ds[d] * g->B[d] == s)
            return ir_op2(g->k, g->kb, OP_DIV, qt, lane_quotient(g, g->ds[d], n, qt), kconst_int(g, qt, g->B[d]),
                          gloc(g));
    Inst *ai = ir_emit(g->k, g->kb, OP_ARANGE, NULL, 0, &qt, 1, gloc(g));
    ai->ival = 0;
    ValId ar = ai->res[0];
    return s > 1 ? ir_op2(g->k, g->kb, OP_DIV, qt, ar, kconst_int(g, qt, s), gloc(g)) : ar;
}

static const char *build(Arena *a, const Program *P, int slot, const char *name, Built *out)
{
    const Func *bw = P->main;
    Gat g0 = {.a = a, .bw = bw, .nv = bw->vals.n}, *g = &g0;
    g->nc = plan_nargs(P);
    if (slot < 0 || slot >= g->nc)
        return "its gradient is not a parameter of the backward's contract";
    int nv = g->nv;
    g->def = arena_alloc(a, sizeof *g->def * (size_t)nv);
    g->nested = arena_alloc(a, (size_t)nv);
    g->pidx = arena_alloc(a, sizeof(int) * (size_t)nv);
    g->pax = arena_alloc(a, (size_t)nv);
    g->pat = arena_alloc(a, (size_t)nv);
    g->ax = arena_alloc(a, sizeof *g->ax * (size_t)nv);
    g->axst = arena_alloc(a, (size_t)nv);
    g->lanes = arena_alloc(a, (size_t)nv);
    for (int i = 0; i < bw->nparams; i++)
        g->pidx[bw->params[i]] = i + 1;
    const Block *body = bw->body;
    for (int i = 0; i < body->insts.n; i++) {
        const Inst *in = &body->insts.v[i];
        for (int r = 0; r < in->nres; r++)
            g->def[in->res[r]] = in;
        for (int r = 0; r < in->nregions; r++)
            mark_nested(g, in->regions[r]);
    }
    /* 1. the sites: d_x flows only through pointer arithmetic into
     * top-level atomic_adds whose results are unused */
    ValId gx = bw->params[slot];
    uint8_t *der = arena_alloc(a, (size_t)nv);
    int *uses = arena_alloc(a, sizeof(int) * (size_t)nv);
    der[gx] = 1;
    Vec(const Inst *) sites = {0};
    for (int i = 0; i < body->insts.n; i++) {
        const Inst *in = &body->insts.v[i];
        bool any = false;
        for (int j = 0; j < in->nargs; j++)
            any |= der[in->args[j]] != 0;
        if (!any)
            continue;
        if ((in->op == OP_ADDPTR || in->op == OP_BROADCAST || in->op == OP_EXPAND_DIMS) && der[in->args[0]] &&
            (in->op != OP_ADDPTR || !der[in->args[1]]))
            der[in->res[0]] = 1;
        else if (in->op == OP_ATOMIC_ADD && der[in->args[0]] && !der[in->args[1]] &&
                 !((in->flags & IF_HAS_MASK) && der[in->args[2]]))
            vec_push(a, sites, in);
        else
            return "its gradient pointer reaches something other than top-level atomic_adds";
    }
    /* ... and no nested region touches it, no atomic's result is used */
    Vec(const Block *) stack = {0};
    vec_push(a, stack, body);
    while (stack.n) {
        const Block *b = stack.v[--stack.n];
        for (int i = 0; i < b->insts.n; i++) {
            const Inst *in = &b->insts.v[i];
            for (int j = 0; j < in->nargs; j++) {
                uses[in->args[j]]++;
                if (b != body && der[in->args[j]])
                    return "its gradient pointer is used in a loop or an `if`";
            }
            for (int r = 0; r < in->nregions; r++)
                vec_push(a, stack, in->regions[r]);
        }
    }
    if (!sites.n || sites.n > GATHER_SITES_MAX)
        return sites.n ? "it has more than 16 sites" : "it has no site";
    for (int i = 0; i < sites.n; i++)
        if (uses[sites.v[i]->res[0]])
            return "an atomic_add's result is used";
    /* 2. positions, and what each site depends on */
    find_positions(g);
    Site *S = arena_alloc(a, sizeof(Site) * (size_t)sites.n);
    Type st = {0};
    unsigned D = 0;
    for (int k = 0; k < sites.n; k++) {
        const Inst *in = sites.v[k];
        S[k].in = in;
        int8_t m[3] = {-1, -1, -1};
        for (int j = 0; j < in->nargs; j++) {
            int8_t s[3];
            if (!axes_of(g, in->args[j], s))
                return g->why;
            for (int d = 0; d < 3; d++) {
                if (s[d] >= 0 && m[d] >= 0 && s[d] != m[d])
                    return "a site uses one position along two tile axes";
                if (s[d] >= 0)
                    m[d] = s[d];
            }
        }
        Type t = ir_type(bw, in->args[1]);
        for (int ax = 0; ax < t.rank; ax++)
            if (t.shape[ax] > 1 && !digits_cover(g, m, ax, t.shape[ax]))
                return "a site's lanes along a tile axis without a position add into one element";
        unsigned Dk = 0;
        for (int d = 0; d < 3; d++)
            Dk |= m[d] >= 0 ? 1u << d : 0;
        if (k && (!type_eq(t, st) || Dk != D || memcmp(m, S[0].m, 3)))
            return "its sites have different tile shapes or positions";
        st = t, D = Dk;
        memcpy(S[k].m, m, 3);
    }
    if (!D)
        return "its sites do not depend on positions";
    /* 3. the offsets, from the address forms */
    Access *A = access_analyze(a, bw);
    AccPoly pid0[3];
    for (int k = 0; k < sites.n; k++) {
        int base;
        AccPoly c0, pid[3], Sd[3];
        if (!access_pid_form(A, S[k].in, &base, &c0, pid) || base != slot)
            return "a site's address is not an affine form over program ids and lanes";
        for (int d = 0; d < 3; d++) {
            if (k && !poly_eq(&pid[d], &pid0[d]))
                return "its sites have different strides";
            if (!(D >> d & 1)) {
                if (!poly_zero(&pid[d]))
                    return "a site's address depends on a program id without a position";
                continue;
            }
            Sd[d] = pid[d];
            for (int i = 0; i < Sd[d].n; i++) {
                if (Sd[d].m[i].k % g->B[d])
                    return "a site's stride is not a whole number of elements per position";
                Sd[d].m[i].k /= g->B[d];
            }
        }
        if (!k)
            memcpy(pid0, pid, sizeof pid0);
        if (!decompose(&c0, Sd, D, S[k].o))
            return "kad cannot read a site's address as the same strides times shifted positions";
    }
    /* The site of offset 0 (a stencil's centre tap), if any: at every position Q a launched
     * program of the forward reads through it (valid(Q) and its mask m_0(Q)), its contribution
     * is on, and the store's mask (the common comparisons, implied by m_0, and the OR of the
     * contributions') holds: the gather kernel stores at least what that site reaches, so when
     * access_cover proves that it reaches the whole view, d_x needs no zero-fill. */
    out->cover_acc = A;
    out->cover_why = "no site reads at offset 0 (the elements the gather kernel stores are the OR of its sites' masks)";
    for (int k = 0; k < sites.n && !out->cover; k++)
        if (!S[k].o[0] && !S[k].o[1] && !S[k].o[2]) {
            out->cover_why = NULL;
            out->cover = access_cover(A, S[k].in, &out->cover_why);
        }
    /* the grid: tiles t_lo .. N - 1 + floor((max o - 1) / B) + 1 along each position axis */
    int64_t tlo[3] = {0}, add[3] = {0};
    for (int d = 0; d < 3; d++) {
        if (!(D >> d & 1))
            continue;
        int64_t lo = S[0].o[d], hi = S[0].o[d];
        for (int k = 1; k < sites.n; k++) {
            lo = S[k].o[d] < lo ? S[k].o[d] : lo;
            hi = S[k].o[d] > hi ? S[k].o[d] : hi;
        }
        tlo[d] = floordiv(lo, g->B[d]);
        add[d] = floordiv(hi - 1, g->B[d]) + 1 - tlo[d];
    }
    /* the kernel */
    Func *K = g->k = ir_func_new(a, arena_printf(a, "%s_gather_%s", bw->name, name), bw->loc);
    g->kb = K->body;
    g->gparam = arena_alloc(a, sizeof(ValId) * (size_t)(g->nc + 1));
    for (int i = 0; i < g->nc; i++) {
        ValId p = bw->params[i];
        g->gparam[i] = ir_param_add(K, ir_type(bw, p), bw->vals.v[p].name, bw->vals.v[p].loc);
    }
    for (int i = 0; i < bw->consts.n; i++)
        vec_push(a, K->consts, bw->consts.v[i]);
    Type i32 = type_scalar(DT_I32);
    for (int d = 0; d < 3; d++) {
        Inst *ni = ir_emit(K, g->kb, OP_NUM_PROGRAMS, NULL, 0, &i32, 1, gloc(g));
        ni->ival = d;
        ValId n = ni->res[0];
        g->np[d] = add[d] ? ir_op2(K, g->kb, OP_SUB, i32, n, kconst_int(g, i32, add[d]), gloc(g)) : n;
        K->vals.v[g->np[d]].name = arena_printf(a, "kad_programs_%d", d);
        if (!(D >> d & 1))
            continue;
        Inst *pi = ir_emit(K, g->kb, OP_PROGRAM_ID, NULL, 0, &i32, 1, gloc(g));
        pi->ival = d;
        ValId pid = pi->res[0];
        ValId t = tlo[d] ? ir_op2(K, g->kb, OP_ADD, i32, pid, kconst_int(g, i32, tlo[d]), gloc(g)) : pid;
        ValId qb = ir_op2(K, g->kb, OP_MUL, i32, t, kconst_int(g, i32, g->B[d]), gloc(g));
        int32_t shp[1] = {(int32_t)g->dn[d]};
        Type qt = type_tile(DT_I32, 1, shp);
        ValId ar = lane_quotient(g, g->ds[d], g->dn[d], qt); /* its lane digit: (lane / ds) % B */
        if (g->ds[d] * g->B[d] < g->dn[d])
            ar = ir_op2(K, g->kb, OP_REM, qt, ar, kconst_int(g, qt, g->B[d]), gloc(g));
        g->Q[d] = ir_op2(K, g->kb, OP_ADD, qt, ir_op1(K, g->kb, OP_BROADCAST, qt, qb, gloc(g)), ar, gloc(g));
        K->vals.v[g->Q[d]].name = arena_printf(a, "q%d", d);
        g->lim[d] = ir_op2(K, g->kb, OP_MUL, i32, g->np[d], kconst_int(g, i32, g->B[d]), gloc(g));
    }
    Type pt = ir_type(bw, S[0].in->args[0]);
    Dtype xdt = (Dtype)pt.elem, adt = fold_partial_dtype(xdt);
    Type at = type_tile(adt, st.rank, st.shape), bt = type_tile(DT_I1, st.rank, st.shape);
    ValId acc = ir_const_float(K, g->kb, at, 0.0, gloc(g)), zero = acc, any = 0, ptr = 0;
    K->vals.v[acc].name = "acc";
    g->core = arena_alloc(a, sizeof(ValId) * (size_t)nv);
    g->off = arena_alloc(a, sizeof(int64_t) * (size_t)nv);
    g->done = arena_alloc(a, (size_t)nv);
    double fc = 0;
    const Inst *fac = common_factor(g, S, sites.n, adt, &fc);
    for (int k = 0; k < sites.n; k++) {
        const Inst *in = S[k].in;
        memcpy(g->o, S[k].o, sizeof g->o);
        memset(g->done, 0, (size_t)nv);
        ValId v = site_value(g, in, adt);
        if (fac) /* x_k, divided or multiplied once after the sum */
            v = g->def[v]->args[!factor_arg(g, g->def[v])];
        ValId c = valid_of(g, S[k].m, st);
        if (in->flags & IF_HAS_MASK)
            c = ir_op2(K, g->kb, OP_AND, bt, cl(g, in->args[2]), c, in->loc);
        ValId val = cl(g, v);
        if (ir_type(K, val).dt != adt)
            val = ir_op1(K, g->kb, OP_CAST, at, val, in->loc);
        if (!k)
            ptr = cl(g, in->args[0]); /* A(Q - o_1 + o_1) = A(Q) */
        ValId lv = masked_load(K, g->kb, val, c, in->loc);
        acc = ir_op2(K, g->kb, OP_ADD, at, acc, lv ? lv : ir_op3(K, g->kb, OP_WHERE, at, c, val, zero, in->loc),
                     in->loc);
        any = any ? ir_op2(K, g->kb, OP_OR, bt, any, c, in->loc) : c;
    }
    if (fac)
        acc = ir_op2(K, g->kb, fac->op, at, acc, ir_const_float(K, g->kb, at, fc, fac->loc), fac->loc);
    if (adt != xdt)
        acc = ir_op1(K, g->kb, OP_CAST, type_tile(xdt, st.rank, st.shape), acc, gloc(g));
    ValId sa[3] = {ptr, acc, any};
    Inst *store = ir_emit(K, g->kb, OP_STORE, sa, 3, NULL, 0, S[0].in->loc);
    store->flags = IF_HAS_MASK;
    Diags scratch;
    diag_init(&scratch, a);
    if (!ir_verify(K, &scratch) || !pass_run(K, "simplify", &scratch))
        return "kad could not build its gather kernel";
    regroup_masks(a, K);
    add_hull(a, K);
    if (!pass_run(K, "simplify", &scratch) || !ir_verify(K, &scratch))
        return "kad could not build its gather kernel";
    /* exact only when the stores are distinct elements */
    Access *GA = access_analyze(a, K);
    const Inst *gs = &K->body->insts.v[K->body->insts.n - 1];
    if (gs->op != OP_STORE)
        return "kad could not build its gather kernel";
    AccResult r = access_injective(GA, gs, ACC_VARY_PIDS | ACC_VARY_LANES);
    if (r.v == ACC_PROVEN_IF) {
        if (!access_cond_host(GA, r.cond, "_a", "_g"))
            return "the gather kernel's stores are distinct elements only under a condition kad cannot check "
                   "on the host";
    } else if (r.v != ACC_PROVEN) {
        return arena_printf(a, "kad cannot prove the gather kernel's stores distinct (%s)",
                            r.why ? r.why : "unknown");
    }
    out->k = K;
    memcpy(out->grid_add, add, sizeof add);
    out->cond = r.v == ACC_PROVEN_IF ? r.cond : NULL;
    out->acc = GA;
    out->nsites = sites.n;
    out->sites = sites.v;
    return NULL;
}

const char *ad_gather_check(Arena *a, const Program *P, int slot, const char *name, GatherIn *out)
{
    Built b = {0};
    const char *why = build(a, P, slot, name, &b);
    if (why)
        return why;
    *out = (GatherIn){name, slot, b.k, {b.grid_add[0], b.grid_add[1], b.grid_add[2]}, b.nsites,
                      b.cond ? 1 : 0, b.acc, b.cond, b.sites, false, b.cover_acc, b.cover, b.cover_why};
    return NULL;
}

/* Has b a store, an atomic or an assert (outside `if`s on a gather's flag
 * when skip_flags)? */
static bool has_effects(const Program *P, const Block *b, bool skip_flags)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        if (op_writes_memory(in->op) || in->op == OP_ASSERT)
            return true;
        bool gflag = false;
        for (int j = 0; skip_flags && in->op == OP_IF && j < P->flags.n; j++)
            gflag |= P->flags.v[j].param == in->args[0] && P->flags.v[j].grid_add;
        for (int r = 0; !gflag && r < in->nregions; r++)
            if (has_effects(P, in->regions[r], skip_flags))
                return true;
    }
    return false;
}

void ad_strip_sites(Func *bw, Block *b, uint8_t *der, const StripSites *how, int *n)
{
    Arena *a = bw->a;
    int m;
    Inst *old = ir_block_detach(b, &m);
    for (int i = 0; i < m; i++) {
        Inst *in = &old[i];
        bool any = false;
        for (int j = 0; j < in->nargs; j++)
            any |= der[in->args[j]] != 0;
        bool site = any && in->op == OP_ATOMIC_ADD && der[in->args[0]] &&
                    (!how->mark || (in->sattr && !strcmp(in->sattr, how->mark)));
        if (site)
            (*n)++;
        bool writes = op_writes_memory(in->op) || in->op == OP_BARRIER;
        if (how->keep ? writes && !site : site) {
            if (how->keep || !how->flag)
                continue;
            ir_emit(bw, b, OP_IF, &how->flag, 1, NULL, 0, in->loc);
            int idx = b->insts.n - 1;
            Block *tb = ir_inst_add_region(bw, &b->insts.v[idx]);
            Block *eb = ir_inst_add_region(bw, &b->insts.v[idx]);
            ir_emit(bw, tb, OP_YIELD, NULL, 0, NULL, 0, in->loc);
            vec_push(a, eb->insts, *in);
            ir_emit(bw, eb, OP_YIELD, NULL, 0, NULL, 0, in->loc);
            continue;
        }
        if (any)
            for (int r = 0; r < in->nres; r++)
                if (ir_type(bw, in->res[r]).dt == DT_PTR)
                    der[in->res[r]] = 1;
        for (int r = 0; r < in->nregions; r++) {
            Block *rb = in->regions[r];
            /* loop-carried pointers: a region param from a marked init */
            if (in->op == OP_FOR || in->op == OP_WHILE) {
                int nfix = in->op == OP_FOR ? 3 : 0, lead = in->op == OP_FOR ? 1 : 0;
                for (int j = nfix; j < in->nargs; j++)
                    if (der[in->args[j]] && lead + j - nfix < rb->nparams)
                        der[rb->params[lead + j - nfix]] = 1;
            }
            ad_strip_sites(bw, rb, der, how, n);
        }
        vec_push(a, b->insts, *in);
    }
}

bool ad_gather(Arena *a, Program *P, const GatherIn *gin, ValId flag)
{
    Func *bw = P->main;
    int fi = -1;
    for (int j = 0; j < P->flags.n; j++)
        if (flag && P->flags.v[j].param == flag)
            fi = j;
    if ((gin->cond != NULL) != (fi >= 0) || gin->slot >= plan_nargs(P))
        return false;
    if (fi >= 0) {
        FuncFlag *fl = &P->flags.v[fi];
        const AccCond **cv = arena_alloc(a, sizeof *cv);
        cv[0] = gin->cond;
        int64_t *ga = arena_alloc(a, sizeof(int64_t) * 3);
        memcpy(ga, gin->grid_add, sizeof(int64_t) * 3);
        fl->acc = gin->acc, fl->cond = cv, fl->ncond = 1, fl->grid_add = ga;
    }
    uint8_t *der = arena_alloc(a, (size_t)bw->vals.n + 1);
    der[bw->params[gin->slot]] = 1;
    int n = 0;
    StripSites how = {.flag = fi >= 0 ? flag : 0};
    ad_strip_sites(bw, bw->body, der, &how, &n);
    pass_dce(bw, true);
    GatherPlan *pl = (GatherPlan *)P->gather;
    if (!pl) {
        pl = arena_alloc(a, sizeof *pl);
        P->gather = pl;
    }
    GatherIn *ins = arena_alloc(a, sizeof *ins * (size_t)(pl->n + 1));
    if (pl->n)
        memcpy(ins, pl->in, sizeof *ins * (size_t)pl->n);
    ins[pl->n] = *gin;
    ins[pl->n].flag = fi;
    ins[pl->n].sites = NULL;
    pl->in = ins;
    pl->n++;
    bool plain = !P->fold && !P->tapes.n;
    pl->main = !plain || has_effects(P, bw->body, true) ? 0 : !has_effects(P, bw->body, false) ? 1 : 2;
    return true;
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
 * of write/gather.c holds: a backward with those sites as atomics first, to
 * check the rule on, then the final one (the same when every candidate
 * passes).  NULL: none applies (bw stays). */
Program *gather_inputs(Arena *a, const Func *orig, const Func *fwd, const AdSpec *spec, const uint8_t *plain,
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
        for (int j = 0; j < P->flags.n; j++)
            if (!strcmp(bw->vals.v[P->flags.v[j].param].name, dn))
                flag = P->flags.v[j].param;
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
