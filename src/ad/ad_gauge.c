/* ad_gauge.c: online-softmax loops reversed by a second pass with the final max.
 *
 * A `for` loop carrying a running max m (m_new = maximum(m, y), y computed in the
 * iteration from nothing carried but ints and pointers) and values c rescaled by it,
 *
 *     alpha = exp(m - m_new)                      (or exp2, the same base everywhere)
 *     c_new = c * alpha' + G(exp(s - m_new'))     (alpha', m_new': expand_dims/broadcast)
 *
 * where G is linear in the exponentials (sums, dots with loop values, products with
 * loop values, where with a zero, casts, permutes) and c starts at 0, unrolls to
 * c_final = sum_i G_i(exp(s_i - M)) with M = m_final: the exponentials only ever meet
 * the rescaling of the same row of m, so every factor exp(-m_new) of iteration i is
 * turned into exp(-M) by the product of the later alphas.  gauge_rewrite replaces such
 * a loop, in a copy of the forward that only AD sees, by
 *
 *     loop 1: M = the running max alone (a loop carrying m and the ints/pointers)
 *     loop 2: c_new = c + G(exp(s - M))  (linear accumulators: reversed without a tape)
 *
 * so only loop 1 is taped (m per iteration instead of m and every c).  The pattern is
 * verified completely, value by value, with the axes of every value that carry the row of
 * m tracked (a sum or a dot may only reduce axes that do not, two terms added must carry
 * it on the same axes, and the rescaled c the same as its new terms); anything else keeps
 * the loop as it is (today's tape).  Loop 1 is the original max chain, so the max's tie
 * convention is kad's usual one. */
#include "base/base.h"
#include "ir/ir.h"
#include "ad/ad_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The role of a value of the loop body in the pattern. */
enum {
    R_NONE,  /* does not depend on any carried float */
    R_M,     /* the carried max (body parameter) */
    R_MN,    /* m_new = maximum(m, y) */
    R_ASUB,  /* m - m_new */
    R_ALPHA, /* exp(m - m_new), and its expand_dims/broadcast */
    R_MNB,   /* expand_dims/broadcast of m_new */
    R_PSUB,  /* s - m_new' */
    R_LIN,   /* homogeneous of degree 1 in exp(-m_new): exp(s - m_new') and linear ops of it */
    R_C,     /* a rescaled carried value (body parameter) */
    R_X,     /* c * alpha' */
    R_Y,     /* c * alpha' + G: the yielded c_new */
};

/* Which axis of m each axis of a value carries (-1: none). */
typedef struct AxMap {
    int8_t ax[KAD_MAX_RANK];
} AxMap;

typedef struct Gauge {
    Arena *a;
    Func *f;
    bool *zero; /* by ValId (< nzero): a float constant 0 */
    int nzero;
    Vec(const char *) notes;
    int pairs; /* loops rewritten so far: the tag of the next pair */
} Gauge;

typedef struct Match {
    int nv;       /* the value count the arrays cover */
    int8_t *role; /* by ValId */
    bool *used;   /* by ValId: an R_C or R_X already consumed (each has one use) */
    int *slot;    /* R_C, R_X, R_Y: the carried slot */
    AxMap *ax;    /* by ValId: R_ALPHA, R_MNB, R_LIN, R_X, R_Y */
    int mslot;
    ValId mn;
    int expop; /* OP_EXP or OP_EXP2, 0 before the first */
} Match;

static bool is_float(const Func *f, ValId v)
{
    return dtype_is_float((Dtype)ir_type(f, v).dt);
}

static void mark_zeros(Gauge *g, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        if (in->op == OP_CONST && in->nres == 1 && is_float(g->f, in->res[0]) && in->fval == 0.0)
            g->zero[in->res[0]] = true;
        for (int r = 0; r < in->nregions; r++)
            mark_zeros(g, in->regions[r]);
    }
}

static bool is_zero(const Gauge *g, ValId v)
{
    return v > 0 && v < g->nzero && g->zero[v];
}

static AxMap ax_identity(int rank)
{
    AxMap m;
    for (int i = 0; i < KAD_MAX_RANK; i++)
        m.ax[i] = (int8_t)(i < rank ? i : -1);
    return m;
}

static AxMap ax_free(void)
{
    AxMap m;
    memset(m.ax, -1, sizeof m.ax);
    return m;
}

static bool ax_eq(AxMap x, AxMap y, int rank)
{
    for (int i = 0; i < rank; i++)
        if (x.ax[i] != y.ax[i])
            return false;
    return true;
}

static bool ax_any(AxMap x, int rank)
{
    for (int i = 0; i < rank; i++)
        if (x.ax[i] >= 0)
            return true;
    return false;
}

/* The map of a shape op's result from its operand's; false when the op moves the row of m
 * in a way the pattern does not follow (a reshape of it, a broadcast along it). */
static bool ax_shape_op(const Func *f, const Inst *in, AxMap src, AxMap *out)
{
    Type st = ir_type(f, in->args[0]), rt = ir_type(f, in->res[0]);
    AxMap r = ax_free();
    switch ((OpKind)in->op) {
    case OP_EXPAND_DIMS: {
        int axis = (int)in->ival, k = 0;
        if (axis < 0 || axis > st.rank || rt.rank != st.rank + 1)
            return false;
        for (int i = 0; i < rt.rank; i++)
            r.ax[i] = i == axis ? -1 : src.ax[k++];
        break;
    }
    case OP_BROADCAST:
        if (st.rank == 0)
            break;
        if (st.rank != rt.rank)
            return false;
        for (int i = 0; i < rt.rank; i++) {
            if (st.shape[i] != rt.shape[i] && src.ax[i] >= 0)
                return false;
            r.ax[i] = src.ax[i];
        }
        break;
    case OP_RESHAPE:
        if (ax_any(src, st.rank))
            return false;
        break;
    case OP_PERMUTE:
        if (in->nints != st.rank || rt.rank != st.rank)
            return false;
        for (int i = 0; i < rt.rank; i++) {
            if (in->ints[i] < 0 || in->ints[i] >= st.rank)
                return false;
            r.ax[i] = src.ax[in->ints[i]];
        }
        break;
    default:
        return false;
    }
    *out = r;
    return true;
}

/* Classifies one instruction of the body whose operands include a value with a role.
 * false: not the pattern. */
static bool classify(const Gauge *g, Match *m, const Inst *in)
{
    const Func *f = g->f;
    if (in->nres != 1)
        return false;
    ValId r = in->res[0];
    int8_t *role = m->role;
    AxMap *ax = m->ax;
    int rank = ir_type(f, r).rank;
    ValId x = in->nargs > 0 ? in->args[0] : 0, y = in->nargs > 1 ? in->args[1] : 0;
    int rx = x ? role[x] : R_NONE, ry = y ? role[y] : R_NONE;
    switch ((OpKind)in->op) {
    case OP_MAXIMUM:
        if (r != m->mn)
            return false;
        role[r] = R_MN;
        ax[r] = ax_identity(rank);
        return true;
    case OP_SUB:
        if (rx == R_M && y == m->mn) {
            role[r] = R_ASUB;
            return true;
        }
        if (rx == R_NONE && (ry == R_MN || ry == R_MNB)) {
            role[r] = R_PSUB;
            ax[r] = ax[y];
            return true;
        }
        if (rx == R_LIN && ry == R_LIN && ax_eq(ax[x], ax[y], rank)) {
            role[r] = R_LIN;
            ax[r] = ax[x];
            return true;
        }
        return false;
    case OP_EXP:
    case OP_EXP2:
        if (rx != R_ASUB && rx != R_PSUB)
            return false;
        if (m->expop && m->expop != in->op)
            return false; /* exp and exp2 mixed: not one rescaling */
        m->expop = in->op;
        role[r] = rx == R_ASUB ? R_ALPHA : R_LIN;
        ax[r] = rx == R_ASUB ? ax_identity(rank) : ax[x];
        return true;
    case OP_EXPAND_DIMS:
    case OP_BROADCAST:
    case OP_RESHAPE:
    case OP_PERMUTE:
        if (rx == R_MN)
            rx = R_MNB;
        if (rx != R_ALPHA && rx != R_MNB && rx != R_LIN)
            return false;
        if (in->op == OP_PERMUTE && rx != R_LIN)
            return false;
        if (!ax_shape_op(f, in, ax[x], &ax[r]))
            return false;
        role[r] = (int8_t)rx;
        return true;
    case OP_NEG:
        if (rx != R_LIN)
            return false;
        role[r] = R_LIN;
        ax[r] = ax[x];
        return true;
    case OP_CAST:
        if (rx != R_LIN || !is_float(f, r))
            return false;
        role[r] = R_LIN;
        ax[r] = ax[x];
        return true;
    case OP_SUM: {
        Type st = ir_type(f, x);
        int axis = (int)in->ival;
        if (rx != R_LIN || st.rank == 0 || axis < 0 || axis >= st.rank || ax[x].ax[axis] >= 0)
            return false;
        AxMap o = ax_free();
        if (in->flags & IF_KEEP_DIMS) {
            o = ax[x];
            o.ax[axis] = -1;
        } else {
            for (int i = 0, k = 0; i < st.rank; i++)
                if (i != axis)
                    o.ax[k++] = ax[x].ax[i];
        }
        role[r] = R_LIN;
        ax[r] = o;
        return true;
    }
    case OP_MUL:
        if ((rx == R_C && ry == R_ALPHA) || (rx == R_ALPHA && ry == R_C)) {
            ValId c = rx == R_C ? x : y, al = rx == R_C ? y : x;
            int s = m->slot[c];
            if (!type_eq(ir_type(f, c), ir_type(f, r)) || m->used[c])
                return false;
            m->used[c] = true;
            role[r] = R_X;
            m->slot[r] = s;
            ax[r] = ax[al];
            return true;
        }
        if ((rx == R_LIN && ry == R_NONE) || (rx == R_NONE && ry == R_LIN)) {
            role[r] = R_LIN;
            ax[r] = ax[rx == R_LIN ? x : y];
            return true;
        }
        return false;
    case OP_DIV:
        if (rx != R_LIN || ry != R_NONE)
            return false;
        role[r] = R_LIN;
        ax[r] = ax[x];
        return true;
    case OP_ADD:
        if ((rx == R_X && ry == R_LIN) || (rx == R_LIN && ry == R_X)) {
            ValId xv = rx == R_X ? x : y, gv = rx == R_X ? y : x;
            if (!ax_eq(ax[xv], ax[gv], rank) || m->used[xv])
                return false;
            m->used[xv] = true;
            role[r] = R_Y;
            m->slot[r] = m->slot[xv];
            ax[r] = ax[xv];
            return true;
        }
        if (rx == R_LIN && ry == R_LIN && ax_eq(ax[x], ax[y], rank)) {
            role[r] = R_LIN;
            ax[r] = ax[x];
            return true;
        }
        return false;
    case OP_WHERE: {
        ValId c = x, a = y, b = in->args[2];
        int ra = role[a], rb = role[b];
        if (role[c] != R_NONE || (ra != R_LIN && !(ra == R_NONE && is_zero(g, a))) ||
            (rb != R_LIN && !(rb == R_NONE && is_zero(g, b))) || (ra != R_LIN && rb != R_LIN))
            return false;
        if (ra == R_LIN && rb == R_LIN && !ax_eq(ax[a], ax[b], rank))
            return false;
        role[r] = R_LIN;
        ax[r] = ax[ra == R_LIN ? a : b];
        return true;
    }
    case OP_DOT: {
        ValId acc = in->args[2];
        int racc = role[acc];
        Type ta = ir_type(f, x), tb = ir_type(f, y);
        if (ta.rank != 2 || tb.rank != 2 || rank != 2)
            return false;
        if (!((rx == R_LIN && ry == R_NONE) || (rx == R_NONE && ry == R_LIN)))
            return false;
        AxMap o = ax_free();
        if (rx == R_LIN) {
            if (ax[x].ax[1] >= 0)
                return false; /* contracts the row of m */
            o.ax[0] = ax[x].ax[0];
        } else {
            if (ax[y].ax[0] >= 0)
                return false;
            o.ax[1] = ax[y].ax[1];
        }
        if (racc == R_LIN ? !ax_eq(ax[acc], o, 2) : !(racc == R_NONE && is_zero(g, acc)))
            return false;
        role[r] = R_LIN;
        ax[r] = o;
        return true;
    }
    default:
        return false;
    }
}

/* Does loop L (a `for`) carry its float slot k as the running max of the pattern, with
 * every other carried float rescaled by it?  Fills m. */
static bool match_loop(const Gauge *g, const Inst *L, int k, Match *m)
{
    const Func *f = g->f;
    const Block *body = L->regions[0];
    int n = L->nres;
    const Inst *yield = &body->insts.v[body->insts.n - 1];
    if (yield->op != OP_YIELD || yield->nargs != n)
        return false;
    memset(m->role, 0, (size_t)m->nv);
    memset(m->used, 0, (size_t)m->nv * sizeof *m->used);
    m->mslot = k;
    m->mn = yield->args[k];
    m->expop = 0;
    int nc = 0;
    for (int j = 0; j < n; j++) {
        ValId p = body->params[1 + j];
        if (!is_float(f, p))
            continue;
        if (j == k) {
            m->role[p] = R_M;
            m->ax[p] = ax_identity(ir_type(f, p).rank);
        } else {
            if (!is_zero(g, L->args[3 + j]))
                return false; /* c must start at 0: c0 * exp(m0 - M) is not 0 when M = -inf */
            m->role[p] = R_C;
            m->slot[p] = j;
            nc++;
        }
    }
    if (!nc || m->mn <= 0 || m->mn >= m->nv)
        return false;
    /* m_new = maximum(m, y) with y free of the carried floats. */
    const Inst *mx = NULL;
    for (int i = 0; i + 1 < body->insts.n; i++)
        if (body->insts.v[i].nres == 1 && body->insts.v[i].res[0] == m->mn)
            mx = &body->insts.v[i];
    ValId pm = body->params[1 + k];
    if (!mx || mx->op != OP_MAXIMUM || !(mx->args[0] == pm || mx->args[1] == pm))
        return false;
    for (int i = 0; i + 1 < body->insts.n; i++) {
        const Inst *in = &body->insts.v[i];
        if (in->nregions || (!op_info[in->op].pure && in->op != OP_LOAD))
            return false; /* nested control flow or effects: not duplicated into two loops */
        bool any = false;
        for (int a = 0; a < in->nargs; a++)
            if (m->role[in->args[a]] != R_NONE)
                any = true;
        if (!any) {
            if (in->nres != 1 && in->nres != 0)
                return false;
            continue;
        }
        if (in == mx && (mx->args[0] == pm ? m->role[mx->args[1]] : m->role[mx->args[0]]) != R_NONE)
            return false;
        if (!classify(g, m, in))
            return false;
    }
    /* The yield: m_new into m's slot, each c's own c * alpha' + G into its slot, nothing
     * depending on the carried floats into the others. */
    for (int j = 0; j < n; j++) {
        ValId v = yield->args[j];
        if (j == k) {
            if (v != m->mn)
                return false;
        } else if (is_float(f, body->params[1 + j])) {
            if (m->role[v] != R_Y || m->slot[v] != j)
                return false;
        } else if (m->role[v] != R_NONE) {
            return false;
        }
    }
    return true;
}

static ValId clone_param(Func *f, Block *b, ValId old)
{
    return ir_block_param_add(f, b, ir_type(f, old), f->vals.v[old].name, f->vals.v[old].loc);
}

static void clone_inst(Func *f, Block *b, const Inst *in, ValId *map)
{
    ValId args[16];
    ValId *av = in->nargs <= 16 ? args : arena_alloc(f->a, sizeof *av * (size_t)in->nargs);
    for (int a = 0; a < in->nargs; a++)
        av[a] = map[in->args[a]] ? map[in->args[a]] : in->args[a];
    Type ty = in->nres ? ir_type(f, in->res[0]) : (Type){0};
    ValId old = in->nres ? in->res[0] : 0;
    Inst *ni = ir_emit(f, b, (OpKind)in->op, av, in->nargs, in->nres ? &ty : NULL, in->nres, in->loc);
    ir_inst_copy_attrs(ni, in);
    if (old) {
        map[old] = ni->res[0];
        f->vals.v[ni->res[0]].name = f->vals.v[old].name;
    }
}

/* Emits loops 1 and 2 replacing L into b. */
static void emit_two_pass(Gauge *g, Block *b, const Inst *L, const Match *m)
{
    Func *f = g->f;
    const Block *body = L->regions[0];
    int n = L->nres, k = m->mslot;
    const Inst *yield = &body->insts.v[body->insts.n - 1];
    ValId *args = arena_alloc(g->a, sizeof *args * (size_t)(3 + n));
    Type *tys = arena_alloc(g->a, sizeof *tys * (size_t)(n + 1));
    int *slots = arena_alloc(g->a, sizeof *slots * (size_t)(n + 1));
    ValId *yargs = arena_alloc(g->a, sizeof *yargs * (size_t)(n + 1));
    for (int pass = 1; pass <= 2; pass++) {
        ValId *map = arena_alloc(g->a, sizeof *map * (size_t)m->nv);
        int ns = 0;
        for (int j = 0; j < n; j++) {
            bool fl = is_float(f, body->params[1 + j]);
            if (pass == 1 ? (j == k || !fl) : j != k)
                slots[ns++] = j;
        }
        memcpy(args, L->args, 3 * sizeof *args);
        for (int s = 0; s < ns; s++) {
            args[3 + s] = L->args[3 + slots[s]];
            tys[s] = ir_type(f, L->res[slots[s]]);
        }
        Inst *loop = ir_emit(f, b, OP_FOR, args, 3 + ns, tys, ns, L->loc);
        ir_inst_copy_attrs(loop, L);
        /* the pair's tag, which the backward's primal copies keep (ad_gauge_fuse) */
        loop->sattr = arena_printf(f->a, "kad_gauge %d %d %d", g->pairs, pass, m->expop == OP_EXP2 ? 2 : 1);
        /* Loop 1 defines the max's result, loop 2 the others (loop 1's copies of the
         * carried ints and pointers are unused). */
        for (int s = 0; s < ns; s++)
            if (pass == 2 || slots[s] == k)
                loop->res[s] = L->res[slots[s]];
        Block *nb = ir_inst_add_region(f, loop);
        map[body->params[0]] = clone_param(f, nb, body->params[0]);
        for (int s = 0; s < ns; s++)
            map[body->params[1 + slots[s]]] = clone_param(f, nb, body->params[1 + slots[s]]);
        if (pass == 2)
            map[m->mn] = L->res[k];
        for (int i = 0; i + 1 < body->insts.n; i++) {
            const Inst *in = &body->insts.v[i];
            int r = in->nres ? m->role[in->res[0]] : R_NONE;
            if (pass == 1) {
                if (r == R_NONE || (in->nres && in->res[0] == m->mn))
                    clone_inst(f, nb, in, map);
                continue;
            }
            if (r == R_NONE || r == R_MNB || r == R_PSUB || r == R_LIN || r == R_Y)
                clone_inst(f, nb, in, map);
            else if (r == R_X) /* c * alpha' becomes c */
                map[in->res[0]] = map[in->args[m->role[in->args[0]] == R_ALPHA ? 1 : 0]];
            /* R_MN, R_ASUB, R_ALPHA: gone (m_new is M) */
        }
        for (int s = 0; s < ns; s++) {
            ValId v = yield->args[slots[s]];
            yargs[s] = map[v] ? map[v] : v;
        }
        ir_emit(f, nb, OP_YIELD, yargs, ns, NULL, 0, yield->loc);
    }
}

/* The note of a rewritten loop: tape bytes per iteration and program before and after. */
static void note_loop(Gauge *g, const Inst *L, const Match *m)
{
    const Func *f = g->f;
    const Block *body = L->regions[0];
    int64_t before = 0, after = 0;
    bool wide = false, mwide = false;
    Buf names = {.a = g->a};
    for (int j = 0; j < L->nres; j++) {
        ValId p = body->params[1 + j];
        if (!is_float(f, p))
            continue;
        Type t = ir_type(f, p);
        before += type_numel(t);
        if (t.dt == DT_F64)
            wide = true;
        if (j == m->mslot) {
            after = type_numel(t);
            mwide = t.dt == DT_F64;
        } else {
            const char *nm = f->vals.v[p].name;
            buf_printf(&names, "%s%s", names.len ? ", " : "", nm ? nm : "a value");
        }
    }
    const char *mname = f->vals.v[body->params[1 + m->mslot]].name;
    const char *note = arena_printf(
        g->a,
        "loop at line %d: online-softmax rescaling recognized (%s rescaled by %s %s of the running max %s); "
        "reversed by a second pass with the final max: a loop computing the max alone (taped unless the "
        "outputs do not depend on the max: docs/AD.md, \"Shift-invariant maxima\"), then %s as linear "
        "accumulators with the final max (no tape) (tape: at most %lld bytes instead of %lld per "
        "iteration and program)",
        L->loc.line, buf_str(&names), m->expop == OP_EXP2 ? "exp2" : "exp", "factors",
        mname ? mname : "m", buf_str(&names), (long long)(after * (mwide ? 8 : 4)),
        (long long)(before * (wide ? 8 : 4)));
    vec_push(g->a, g->notes, note);
}

/* Rewrites the matching loops of b (and of the regions inside it, innermost first). */
static bool rewrite_block(Gauge *g, Block *b)
{
    bool any = false;
    for (int i = 0; i < b->insts.n; i++)
        for (int r = 0; r < b->insts.v[i].nregions; r++)
            any |= rewrite_block(g, b->insts.v[i].regions[r]);
    int nloops = 0;
    for (int i = 0; i < b->insts.n; i++)
        if (b->insts.v[i].op == OP_FOR)
            nloops++;
    if (!nloops)
        return any;
    Match *ms = arena_alloc(g->a, sizeof *ms * (size_t)b->insts.n);
    bool found = false;
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *L = &b->insts.v[i];
        if (L->op != OP_FOR || L->nregions != 1 || L->regions[0]->insts.n < 1)
            continue;
        Match *m = &ms[i];
        m->nv = g->f->vals.n;
        m->role = arena_alloc(g->a, (size_t)m->nv);
        m->used = arena_alloc(g->a, sizeof *m->used * (size_t)m->nv);
        m->slot = arena_alloc(g->a, sizeof *m->slot * (size_t)m->nv);
        m->ax = arena_alloc(g->a, sizeof *m->ax * (size_t)m->nv);
        m->mslot = -1;
        for (int k = 0; k < L->nres; k++) {
            if (!is_float(g->f, L->regions[0]->params[1 + k]))
                continue;
            if (match_loop(g, L, k, m))
                break;
            m->mslot = -1;
        }
        if (m->mslot < 0)
            continue;
        found = true;
    }
    if (!found)
        return any;
    int n;
    Inst *old = ir_block_detach(b, &n);
    for (int i = 0; i < n; i++) {
        if (old[i].op == OP_FOR && ms[i].role && ms[i].mslot >= 0) {
            emit_two_pass(g, b, &old[i], &ms[i]);
            note_loop(g, &old[i], &ms[i]);
            g->pairs++;
        } else {
            vec_push(g->f->a, b->insts, old[i]);
        }
    }
    return true;
}

static Block *copy_block(Arena *a, const Block *b)
{
    Block *nb = arena_alloc(a, sizeof *nb);
    nb->params = b->params;
    nb->nparams = b->nparams;
    vec_reserve(a, nb->insts, b->insts.n);
    for (int i = 0; i < b->insts.n; i++) {
        Inst in = b->insts.v[i];
        if (in.nregions) {
            in.regions = arena_alloc(a, sizeof *in.regions * (size_t)in.nregions);
            for (int r = 0; r < in.nregions; r++)
                in.regions[r] = copy_block(a, b->insts.v[i].regions[r]);
        }
        nb->insts.v[nb->insts.n++] = in;
    }
    return nb;
}

const Func *gauge_rewrite(Arena *a, const Func *fwd, const char ***notes, int *nnotes)
{
    *notes = NULL;
    *nnotes = 0;
    Func *f = arena_alloc(a, sizeof *f);
    *f = *fwd;
    f->a = a;
    f->vals.v = arena_alloc(a, sizeof *f->vals.v * (size_t)fwd->vals.n);
    memcpy(f->vals.v, fwd->vals.v, sizeof *f->vals.v * (size_t)fwd->vals.n);
    f->vals.cap = fwd->vals.n;
    f->body = copy_block(a, fwd->body);
    Gauge g = {.a = a, .f = f, .nzero = fwd->vals.n};
    g.zero = arena_alloc(a, sizeof *g.zero * (size_t)g.nzero);
    mark_zeros(&g, f->body);
    if (!rewrite_block(&g, f->body))
        return fwd;
    pass_dce(f, false); /* loop 1's copies of what only loop 2 needs (the loads of v) */
    *notes = g.notes.v;
    *nnotes = g.notes.n;
    return f;
}

/* ------------------------------------------------------------------ */
/* The primal sweep's two passes fused back into one (ad_gauge_fuse)   */
/* ------------------------------------------------------------------ */

/* A loop of emit_two_pass as the backward copied it: its pair, pass (1: the
 * max, 2: the accumulators) and exponential (1: exp, 2: exp2). */
static bool gauge_tag(const Inst *in, int *id, int *pass, int *expop)
{
    if (in->op != OP_FOR || !in->sattr || strncmp(in->sattr, "kad_gauge ", 10))
        return false;
    const char *p = in->sattr + 10;
    char *e;
    *id = (int)strtol(p, &e, 10);
    *pass = (int)strtol(e, &e, 10);
    *expop = (int)strtol(e, &e, 10) == 2 ? OP_EXP2 : OP_EXP;
    return *pass == 1 || *pass == 2;
}

/* A flat loop body (no region inside) that writes no memory. */
static bool flat_pure(const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        if (b->insts.v[i].nregions || b->insts.v[i].op == OP_ASSERT || ir_inst_writes(&b->insts.v[i]))
            return false;
    }
    return true;
}

static ValId mapped(const ValId *map, int nmap, ValId v) { return v < nmap && map[v] ? map[v] : v; }

static void replace_uses(Block *b, const ValId *map, int nmap)
{
    for (int i = 0; i < b->insts.n; i++) {
        Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nargs; k++)
            in->args[k] = mapped(map, nmap, in->args[k]);
        for (int r = 0; r < in->nregions; r++)
            replace_uses(in->regions[r], map, nmap);
    }
}

/* Whether block b (recursively) uses a value marked in bad. */
static bool uses_marked(const Block *b, const uint8_t *bad, int nbad)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nargs; k++)
            if (in->args[k] < nbad && bad[in->args[k]])
                return true;
        for (int r = 0; r < in->nregions; r++)
            if (uses_marked(in->regions[r], bad, nbad))
                return true;
    }
    return false;
}

/* Fuses loops L1 = b[i] and L2 = b[j] (one pair) into one loop at i that
 * computes the running max and the accumulators rescaled by it, as the
 * forward's online loop did; false (b unchanged) when the pair is not as
 * emit_two_pass made it or cannot move.  umap: old results -> the fused
 * loop's (replaced in the whole function afterwards). */
static bool fuse_pair(Func *f, Block *b, int i, int j, int expop, ValId *umap, int nmap)
{
    const Inst *L1 = &b->insts.v[i], *L2 = &b->insts.v[j];
    const Block *B1 = L1->regions[0], *B2 = L2->regions[0];
    if (L1->args[0] != L2->args[0] || L1->args[1] != L2->args[1] || L1->args[2] != L2->args[2] ||
        !flat_pure(B1) || !flat_pure(B2) || !B1->insts.n || !B2->insts.n)
        return false;
    int n1 = L1->nres, n2 = L2->nres, k = -1;
    for (int s = 0; s < n1; s++)
        if (dtype_is_float((Dtype)ir_type(f, L1->res[s]).dt)) {
            if (k >= 0)
                return false;
            k = s;
        }
    if (k < 0 || ir_type(f, L1->res[k]).rank != 0)
        return false;
    const Inst *y1 = &B1->insts.v[B1->insts.n - 1], *y2 = &B2->insts.v[B2->insts.n - 1];
    if (y1->op != OP_YIELD || y2->op != OP_YIELD || y1->nargs != n1 || y2->nargs != n2)
        return false;
    /* L2's accumulators: yield add(c, G) with c used by that add alone (gpos: 1 + G's operand
     * index); L1's results other than the max unused in L2 */
    int *gpos = calloc((size_t)n2 + 1, sizeof *gpos);
    uint8_t *bad = calloc((size_t)nmap + 1, 1);
    bool ok = gpos && bad;
    for (int s = 0; ok && s < n2; s++) {
        ValId c = B2->params[1 + s];
        if (!dtype_is_float((Dtype)ir_type(f, c).dt))
            continue;
        const Inst *d = NULL;
        int uses = 0;
        for (int q = 0; q + 1 < B2->insts.n; q++) {
            const Inst *in = &B2->insts.v[q];
            if (in->nres && in->res[0] == y2->args[s])
                d = in;
            for (int x = 0; x < in->nargs; x++)
                uses += in->args[x] == c;
        }
        ok = d && d->op == OP_ADD && uses == 1 && (d->args[0] == c) != (d->args[1] == c);
        if (ok)
            gpos[s] = d->args[0] == c ? 2 : 1;
    }
    for (int s = 0; ok && s < n1; s++) { /* loop 2's bounds and inits must come from before loop 1 */
        for (int x = 0; x < 3 + n2; x++)
            ok = ok && L2->args[x] != L1->res[s];
        if (s != k && L1->res[s] < nmap)
            bad[L1->res[s]] = 1;
    }
    /* L2 moves up to L1: nothing it uses may be defined between them, and nothing between them
     * may write memory (its loads would move before the write) */
    for (int q = i + 1; ok && q < j; q++) {
        const Inst *in = &b->insts.v[q];
        ok = !ir_inst_writes(in);
        for (int r = 0; r < in->nres; r++)
            if (in->res[r] < nmap)
                bad[in->res[r]] = 1;
    }
    for (int s = 0; ok && s < 3 + n2; s++)
        ok = !(L2->args[s] < nmap && bad[L2->args[s]]);
    ok = ok && !uses_marked(B2, bad, nmap);
    free(bad);
    if (!ok) {
        free(gpos);
        return false;
    }
    Arena *a = f->a;
    Loc loc = L1->loc;
    ValId *args = arena_alloc(a, sizeof *args * (size_t)(3 + n1 + n2));
    Type *tys = arena_alloc(a, sizeof *tys * (size_t)(n1 + n2 + 1));
    memcpy(args, L1->args, 3 * sizeof *args);
    for (int s = 0; s < n1; s++)
        args[3 + s] = L1->args[3 + s], tys[s] = ir_type(f, L1->res[s]);
    for (int s = 0; s < n2; s++)
        args[3 + n1 + s] = L2->args[3 + s], tys[n1 + s] = ir_type(f, L2->res[s]);
    int nold;
    Inst *old = ir_block_detach(b, &nold);
    L1 = &old[i], L2 = &old[j];
    for (int q = 0; q < nold; q++) {
        if (q != i) {
            if (q != j)
                vec_push(a, b->insts, old[q]);
            continue;
        }
        Inst *fl = ir_emit(f, b, OP_FOR, args, 3 + n1 + n2, tys, n1 + n2, loc);
        if (L1->nints == LH_N) { /* the user's tl.range hints */
            memcpy(fl->ints, L1->ints, sizeof(int32_t) * LH_N);
            fl->nints = LH_N;
        }
        for (int s = 0; s < n1; s++)
            umap[L1->res[s]] = fl->res[s];
        for (int s = 0; s < n2; s++)
            umap[L2->res[s]] = fl->res[n1 + s];
        Block *nb = ir_inst_add_region(f, fl);
        ValId *map = arena_alloc(a, sizeof *map * (size_t)(nmap + 1)); /* old values -> the fused loop's */
        ValId iv = ir_block_param_add(f, nb, ir_type(f, B1->params[0]), f->vals.v[B1->params[0]].name, loc);
        map[B1->params[0]] = map[B2->params[0]] = iv;
        for (int s = 0; s < n1; s++)
            map[B1->params[1 + s]] = ir_block_param_add(f, nb, tys[s], f->vals.v[B1->params[1 + s]].name, loc);
        for (int s = 0; s < n2; s++)
            map[B2->params[1 + s]] = ir_block_param_add(f, nb, tys[n1 + s], f->vals.v[B2->params[1 + s]].name, loc);
        for (int x = 0; x + 1 < B1->insts.n; x++)
            clone_inst(f, nb, &B1->insts.v[x], map);
        /* the running max m_new, and a finite stand-in while it is -inf (a row's first chunks
         * all -inf): alpha = exp(m - m_safe) rescales what was accumulated with the old one */
        Type mt = ir_type(f, L1->res[k]);
        ValId m_old = map[B1->params[1 + k]], m_new = mapped(map, nmap, y1->args[k]);
        ValId ninf = ir_const_float(f, nb, mt, -INFINITY, loc);
        ValId is_ninf = ir_op2(f, nb, OP_EQ, type_scalar(DT_I1), m_new, ninf, loc);
        ValId m_safe = ir_op3(f, nb, OP_WHERE, mt, is_ninf, ir_const_float(f, nb, mt, 0.0, loc), m_new, loc);
        ValId alpha = ir_op1(f, nb, (OpKind)expop, mt, ir_op2(f, nb, OP_SUB, mt, m_old, m_safe, loc), loc);
        map[L1->res[k]] = m_safe; /* loop 2's final max, in its body */
        for (int x = 0; x + 1 < B2->insts.n; x++)
            clone_inst(f, nb, &B2->insts.v[x], map);
        ValId *ys = arena_alloc(a, sizeof *ys * (size_t)(n1 + n2 + 1));
        for (int s = 0; s < n1; s++)
            ys[s] = mapped(map, nmap, y1->args[s]);
        for (int s = 0; s < n2; s++) {
            ys[n1 + s] = mapped(map, nmap, y2->args[s]);
            if (!gpos[s])
                continue;
            const Inst *d = NULL;
            for (int x = 0; x + 1 < B2->insts.n && !d; x++)
                if (B2->insts.v[x].nres && B2->insts.v[x].res[0] == y2->args[s])
                    d = &B2->insts.v[x];
            Type ct = tys[n1 + s];
            ValId al = alpha;
            if (ct.dt != mt.dt)
                al = ir_op1(f, nb, OP_CAST, type_scalar((Dtype)ct.dt), al, loc);
            if (ct.rank)
                al = ir_op1(f, nb, OP_BROADCAST, ct, al, loc);
            ValId c = map[B2->params[1 + s]];
            ys[n1 + s] = ir_op2(f, nb, OP_ADD, ct, ir_op2(f, nb, OP_MUL, ct, c, al, loc),
                                mapped(map, nmap, d->args[gpos[s] - 1]), loc);
        }
        ir_emit(f, nb, OP_YIELD, ys, n1 + n2, NULL, 0, loc);
    }
    free(gpos);
    return true;
}

static void fuse_block(Func *f, Block *b, ValId *umap, int nmap)
{
    for (int i = 0; i < b->insts.n; i++)
        for (int r = 0; r < b->insts.v[i].nregions; r++)
            fuse_block(f, b->insts.v[i].regions[r], umap, nmap);
    for (int i = 0; i < b->insts.n; i++) {
        int id, pass, e, id2, pass2, e2;
        if (!gauge_tag(&b->insts.v[i], &id, &pass, &e) || pass != 1)
            continue;
        for (int j = i + 1; j < b->insts.n; j++) {
            if (!gauge_tag(&b->insts.v[j], &id2, &pass2, &e2) || id2 != id)
                continue;
            if (pass2 == 2)
                fuse_pair(f, b, i, j, e, umap, nmap);
            break;
        }
    }
}

bool ad_gauge_fuse(Func *f)
{
    int nmap = f->vals.n;
    ValId *umap = calloc((size_t)nmap + 1, sizeof *umap);
    if (!umap)
        return false;
    fuse_block(f, f->body, umap, nmap);
    replace_uses(f->body, umap, nmap);
    free(umap);
    return true;
}
