/* access.c -- affine access analysis of loads, stores and atomics: the forms.
 *
 * Job: for every memory instruction, the element it touches as
 *     base parameter + c0 + sum_v coef_v * v
 * where v ranges over the variables of a launch -- program ids (pid0..2,
 * in [0, num_programs)), the iteration counter of each enclosing loop (t,
 * from 0), the lane index of each axis of the tile (lane0..3), and fresh
 * variables for quasi-affine `e // d` and `e % d` (d >= 1, e >= 0) -- and
 * c0 and each coef are polynomials over symbols (int parameters,
 * num_programs, values kad cannot express).  Loop-carried offsets and
 * pointers advanced by a loop-invariant amount (`p += BLOCK`) are
 * inductions init + inc * t.  The access's mask, the bounds of enclosing
 * `for` loops, `while` conditions and `if` conditions give constraints
 * `form < 0` on the variables.  Anything not expressible (data-dependent
 * offsets, products of two varying values, GROUP_M swizzles) is an unknown
 * form with its reason, never guessed.  The decisions over the forms and
 * constraints (injectivity, disjointness, private footprints), and the
 * printing and evaluation of their runtime conditions, are in
 * access_decide.c, access_disjoint.c and access_report.c; the types the
 * files share are in access_int.h.
 *
 * Assumption: integer offsets do not emit_wrap (as the kernel itself assumes).
 *
 * Requires: a verified Func that stays unchanged.  Keeps: the Func.
 * Guarantees: forms are built lazily (ac_site_form) and memoized per value;
 * every form is exact or unknown.  All memory lives in the caller's arena.
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "analysis/access_int.h"

/* ------------------------------------------------------------------ */
/* Polynomials                                                         */
/* ------------------------------------------------------------------ */

AccPoly ac_pconst(int64_t k)
{
    AccPoly p = {0};
    if (k) {
        p.n = 1;
        p.m[0].k = k;
    }
    return p;
}

static int mono_cmp(const AccMono *x, const AccMono *y)
{
    for (int i = 0; i < ACC_NSYM; i++)
        if (x->s[i] != y->s[i])
            return x->s[i] < y->s[i] ? -1 : 1;
    return 0;
}

bool ac_in_limit(int64_t k) { return k < AC_LIMIT && k > -AC_LIMIT; }

/* Adds k * m's symbols into p, keeping monomials sorted and non-zero. */
bool ac_padd_mono(AccPoly *p, AccMono m)
{
    if (!m.k)
        return true;
    int i = 0;
    while (i < p->n && mono_cmp(&p->m[i], &m) < 0)
        i++;
    if (i < p->n && !mono_cmp(&p->m[i], &m)) {
        p->m[i].k += m.k;
        if (!ac_in_limit(p->m[i].k))
            return false;
        if (!p->m[i].k) {
            memmove(&p->m[i], &p->m[i + 1], sizeof m * (size_t)(p->n - i - 1));
            p->n--;
        }
        return true;
    }
    if (p->n == ACC_NMONO || !ac_in_limit(m.k))
        return false;
    memmove(&p->m[i + 1], &p->m[i], sizeof m * (size_t)(p->n - i));
    p->m[i] = m;
    p->n++;
    return true;
}

bool ac_padd(AccPoly *r, const AccPoly *x, const AccPoly *y, int64_t sy)
{
    AccPoly p = *x;
    for (int i = 0; i < y->n; i++) {
        AccMono m = y->m[i];
        m.k *= sy;
        if (!ac_padd_mono(&p, m))
            return false;
    }
    *r = p;
    return true;
}

bool ac_pmul(AccPoly *r, const AccPoly *x, const AccPoly *y)
{
    AccPoly p = {0};
    for (int i = 0; i < x->n; i++)
        for (int j = 0; j < y->n; j++) {
            const AccMono *a = &x->m[i], *b = &y->m[j];
            if (!ac_in_limit(a->k) || !ac_in_limit(b->k) || (a->k > (1 << 20) && b->k > (1 << 20)))
                return false;
            AccMono m = {a->k * b->k, {0}};
            int32_t s[2 * ACC_NSYM];
            int n = 0;
            for (int k = 0; k < ACC_NSYM; k++) {
                if (a->s[k])
                    s[n++] = a->s[k];
                if (b->s[k])
                    s[n++] = b->s[k];
            }
            if (n > ACC_NSYM)
                return false;
            for (int u = 0; u < n; u++) /* descending insertion sort */
                for (int w = u; w > 0 && s[w] > s[w - 1]; w--) {
                    int32_t tmp = s[w];
                    s[w] = s[w - 1];
                    s[w - 1] = tmp;
                }
            memcpy(m.s, s, sizeof(int32_t) * (size_t)n);
            if (!ac_in_limit(m.k) || !ac_padd_mono(&p, m))
                return false;
        }
    *r = p;
    return true;
}

static bool pscale(AccPoly *r, const AccPoly *x, int64_t k)
{
    AccPoly c = ac_pconst(k);
    return ac_pmul(r, x, &c);
}

bool ac_pis_const(const AccPoly *p, int64_t *k)
{
    if (p->n == 0) {
        *k = 0;
        return true;
    }
    if (p->n == 1 && !p->m[0].s[0]) {
        *k = p->m[0].k;
        return true;
    }
    return false;
}

bool ac_peq(const AccPoly *x, const AccPoly *y)
{
    if (x->n != y->n)
        return false;
    for (int i = 0; i < x->n; i++)
        if (x->m[i].k != y->m[i].k || mono_cmp(&x->m[i], &y->m[i]))
            return false;
    return true;
}

/* p / k when every coefficient is divisible by k. */
bool ac_pdiv_exact(AccPoly *r, const AccPoly *p, int64_t k)
{
    if (k == 0)
        return false;
    AccPoly q = *p;
    for (int i = 0; i < q.n; i++) {
        if (q.m[i].k % k)
            return false;
        q.m[i].k /= k;
    }
    *r = q;
    return true;
}

/* ------------------------------------------------------------------ */
/* Symbols and signs                                                   */
/* ------------------------------------------------------------------ */

int ac_sym_intern(Access *A, int kind, ValId v, int axis, uint64_t dep)
{
    for (int i = 0; i < A->syms.n; i++)
        if (A->syms.v[i].kind == kind && A->syms.v[i].v == v && A->syms.v[i].axis == axis)
            return i + 1;
    AcSym s = {kind, v, axis, dep, NULL, NULL};
    vec_push(A->a, A->syms, s);
    return A->syms.n;
}

AccPoly ac_psym(int id)
{
    AccPoly p = {0};
    p.n = 1;
    p.m[0].k = 1;
    p.m[0].s[0] = id;
    return p;
}

static bool sym_pos(const Facts *F, int id) { return id < 64 && (F->pos >> id & 1); }

static bool pnonneg_div(const Facts *F, const AccPoly *p, int depth);

/* Is p >= 0 for every value of the symbols satisfying the facts?  Sound,
 * incomplete: each negative monomial -k*X must be covered by a positive
 * k'*X*Y (Y's symbols >= 1, X's >= 0), a negative constant by any positive
 * monomial of symbols >= 1; what is left must be positive monomials of
 * non-negative symbols and a non-negative constant.  Failing that, a
 * symbol s = x // d is replaced by its bounds (pnonneg_div). */
static bool pnonneg_basic(const Facts *F, const AccPoly *p);

bool ac_pnonneg(const Facts *F, const AccPoly *p) { return pnonneg_basic(F, p) || pnonneg_div(F, p, 0); }

bool ac_sym_div(Access *A, int id, AccPoly *x, int64_t *d)
{
    if (id < 1 || id > A->syms.n || A->syms.v[id - 1].kind != SYM_VAL || A->syms.v[id - 1].dep)
        return false;
    const Inst *in = A->def[A->syms.v[id - 1].v];
    if (!in || in->op != OP_DIV || in->nargs != 2)
        return false;
    const AccPoly *xp = ac_poly_of(A, in->args[0]), *dp = ac_poly_of(A, in->args[1]);
    if (!xp || !dp || !ac_pis_const(dp, d) || *d < 1)
        return false;
    for (int i = 0; i < xp->n; i++) /* x's symbols fixed by the launch */
        for (int k = 0; k < ACC_NSYM && xp->m[i].s[k]; k++)
            if (A->syms.v[xp->m[i].s[k] - 1].dep)
                return false;
    *x = *xp;
    return true;
}

/* p >= 0 with a symbol s = x // d (Triton's truncating division) replaced
 * by its bounds: x - d < d*s <= x when x >= 0, x <= d*s < x + d when x <
 * 0, so always x - d + 1 <= d*s <= x + d - 1.  s must appear alone in
 * its monomials (c*s).  When the rest is a constant k0 the integer rule is
 * exact: c*s + k0 >= 0 with c > 0 is s >= K = ceil(-k0/c), which for K >= 1
 * is x >= K*d; with c < 0 it is s <= K = floor(k0/-c), which holds when
 * x <= K*d + d - 1 and (K >= 0 or x >= 0).  Otherwise d*p >= 0 with d*s
 * replaced by the bound on the safe side. */
static bool pnonneg_div(const Facts *F, const AccPoly *p, int depth)
{
    if (!F->A || depth > 2)
        return false;
    for (int i = 0; i < p->n; i++) {
        int s = p->m[i].s[0];
        AccPoly x;
        int64_t d;
        if (!s || p->m[i].s[1] || !ac_sym_div(F->A, s, &x, &d))
            continue;
        int64_t c = p->m[i].k;
        AccPoly rest = *p;
        bool alone = true;
        for (int j = 0; j < rest.n && alone; j++)
            for (int k = 0; k < ACC_NSYM && alone; k++)
                alone = j == i || rest.m[j].s[k] != s;
        if (!alone)
            continue;
        memmove(&rest.m[i], &rest.m[i + 1], sizeof rest.m[0] * (size_t)(rest.n - i - 1));
        rest.n--;
        bool xnn = pnonneg_basic(F, &x) || pnonneg_div(F, &x, depth + 1);
        int64_t k0;
        AccPoly q;
        if (ac_pis_const(&rest, &k0)) {
            if (c > 0) {
                int64_t K = -k0 > 0 ? (-k0 + c - 1) / c : -(k0 / c); /* ceil(-k0 / c) */
                if (K <= 0 && xnn)
                    return true; /* s >= 0 >= K */
                if (K <= 0)
                    continue;
                AccPoly kd = ac_pconst(-K * d);
                if (ac_in_limit(K * d) && ac_padd(&q, &x, &kd, 1) && (pnonneg_basic(F, &q) || pnonneg_div(F, &q, depth + 1)))
                    return true;
            } else {
                int64_t K = k0 >= 0 ? k0 / -c : -((-k0 - c - 1) / -c); /* floor(k0 / -c) */
                AccPoly kd = ac_pconst(K * d + d - 1);
                if ((K >= 0 || xnn) && ac_in_limit(K * d) && ac_padd(&q, &kd, &x, -1) &&
                    (pnonneg_basic(F, &q) || pnonneg_div(F, &q, depth + 1)))
                    return true;
            }
            continue;
        }
        /* d*p >= c*bound + d*rest */
        AccPoly bound, cb, dr, dm1 = ac_pconst(c > 0 ? -(d - 1) : d - 1), cc = ac_pconst(c), dd = ac_pconst(d);
        if (!ac_padd(&bound, &x, &dm1, 1) || !ac_pmul(&cb, &cc, &bound) || !ac_pmul(&dr, &dd, &rest) ||
            !ac_padd(&q, &cb, &dr, 1))
            continue;
        if (pnonneg_basic(F, &q) || pnonneg_div(F, &q, depth + 1))
            return true;
        if (c < 0 && xnn) { /* the tighter d*s <= x */
            if (ac_pmul(&cb, &cc, &x) && ac_padd(&q, &cb, &dr, 1) && (pnonneg_basic(F, &q) || pnonneg_div(F, &q, depth + 1)))
                return true;
        }
    }
    return false;
}

static bool pnonneg_basic(const Facts *F, const AccPoly *p)
{
    AccPoly q = *p;
    for (int i = 0; i < q.n; i++)
        for (int k = 0; k < ACC_NSYM && q.m[i].s[k]; k++)
            if (!sym_pos(F, q.m[i].s[k]))
                return false; /* every symbol must be known >= 1 */
    /* With every symbol >= 1: cover negatives from positives that contain them. */
    for (int i = 0; i < q.n; i++) {
        if (q.m[i].k >= 0)
            continue;
        for (int j = 0; j < q.n && q.m[i].k < 0; j++) {
            if (q.m[j].k <= 0 || j == i)
                continue;
            /* does m[j]'s symbol multiset contain m[i]'s? */
            int32_t left[ACC_NSYM];
            memcpy(left, q.m[j].s, sizeof left);
            bool ok = true;
            for (int k = 0; k < ACC_NSYM && q.m[i].s[k] && ok; k++) {
                ok = false;
                for (int l = 0; l < ACC_NSYM; l++)
                    if (left[l] == q.m[i].s[k]) {
                        left[l] = 0;
                        ok = true;
                        break;
                    }
            }
            if (!ok)
                continue;
            int64_t take = q.m[j].k < -q.m[i].k ? q.m[j].k : -q.m[i].k;
            q.m[j].k -= take;
            q.m[i].k += take;
        }
        if (q.m[i].k < 0)
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Forms                                                               */
/* ------------------------------------------------------------------ */

AcForm *ac_fnew(Access *A) { return arena_alloc(A->a, sizeof(AcForm)); }

static const AcForm *funknown(Access *A, const char *why)
{
    AcForm *f = ac_fnew(A);
    f->why = why;
    return f;
}

static bool fis_const(const AcForm *f) { return !f->why && f->nt == 0; }

AccPoly *ac_fcoef(AcForm *f, int var)
{
    for (int i = 0; i < f->nt; i++)
        if (f->t[i].var == var)
            return &f->t[i].c;
    return NULL;
}

/* f += c * var */
static bool fadd_term(AcForm *f, int var, const AccPoly *c)
{
    if (!c->n)
        return true;
    int i = 0;
    while (i < f->nt && f->t[i].var < var)
        i++;
    if (i < f->nt && f->t[i].var == var) {
        if (!ac_padd(&f->t[i].c, &f->t[i].c, c, 1))
            return false;
        if (!f->t[i].c.n) {
            memmove(&f->t[i], &f->t[i + 1], sizeof f->t[0] * (size_t)(f->nt - i - 1));
            f->nt--;
        }
        return true;
    }
    if (f->nt == AC_NTERM)
        return false;
    memmove(&f->t[i + 1], &f->t[i], sizeof f->t[0] * (size_t)(f->nt - i));
    f->t[i].var = var;
    f->t[i].c = *c;
    f->nt++;
    return true;
}

const char *const ac_too_big = "the offset has too many terms";

/* x + s * y */
const AcForm *ac_fadd(Access *A, const AcForm *x, const AcForm *y, int64_t s)
{
    if (x->why)
        return x;
    if (y->why)
        return y;
    if (y->base && (x->base || s < 0))
        return funknown(A, "arithmetic on two pointers");
    AcForm *r = ac_fnew(A);
    *r = *x;
    r->base = x->base ? x->base : y->base;
    if (!ac_padd(&r->c0, &x->c0, &y->c0, s))
        return funknown(A, ac_too_big);
    for (int i = 0; i < y->nt; i++) {
        AccPoly c;
        if (!pscale(&c, &y->t[i].c, s) || !fadd_term(r, y->t[i].var, &c))
            return funknown(A, ac_too_big);
    }
    return r;
}

/* p * x, p a polynomial */
static const AcForm *fscale(Access *A, const AcForm *x, const AccPoly *p)
{
    if (x->why)
        return x;
    if (x->base)
        return funknown(A, "a pointer multiplied");
    AcForm *r = ac_fnew(A);
    if (!ac_pmul(&r->c0, &x->c0, p))
        return funknown(A, ac_too_big);
    for (int i = 0; i < x->nt; i++) {
        AccPoly c;
        if (!ac_pmul(&c, &x->t[i].c, p) || !fadd_term(r, x->t[i].var, &c))
            return funknown(A, ac_too_big);
    }
    return r;
}

bool ac_feq(const AcForm *x, const AcForm *y)
{
    if (x->why || y->why || x->base != y->base || x->nt != y->nt || !ac_peq(&x->c0, &y->c0))
        return false;
    for (int i = 0; i < x->nt; i++)
        if (x->t[i].var != y->t[i].var || !ac_peq(&x->t[i].c, &y->t[i].c))
            return false;
    return true;
}

/* Variables that f depends on, as a mask over the original variables
 * (fresh ones replaced by what they depend on; symbols by their deps). */
uint64_t ac_fdeps(const Access *A, const AcForm *f)
{
    uint64_t m = 0;
    for (int i = 0; i < f->nt; i++) {
        int v = f->t[i].var;
        m |= v < V_DYN ? (uint64_t)1 << v : A->vars.v[v].dep;
        for (int k = 0; k < f->t[i].c.n; k++)
            for (int s = 0; s < ACC_NSYM && f->t[i].c.m[k].s[s]; s++)
                m |= A->syms.v[f->t[i].c.m[k].s[s] - 1].dep;
    }
    for (int k = 0; k < f->c0.n; k++)
        for (int s = 0; s < ACC_NSYM && f->c0.m[k].s[s]; s++)
            m |= A->syms.v[f->c0.m[k].s[s] - 1].dep;
    return m;
}

static int var_new(Access *A, AcVar v)
{
    if (A->vars.n >= NVAR_MAX)
        return -1;
    vec_push(A->a, A->vars, v);
    return A->vars.n - 1;
}

/* The largest value of f if every coefficient and extent is constant. */
static bool fconst_max(const Access *A, const AcForm *f, int64_t lane_max[KAD_MAX_RANK], int64_t *mx)
{
    int64_t m;
    if (!ac_pis_const(&f->c0, &m))
        return false;
    for (int i = 0; i < f->nt; i++) {
        int v = f->t[i].var;
        int64_t c, e;
        if (!ac_pis_const(&f->t[i].c, &c) || c < 0)
            return false;
        if (v >= V_LANE && v < V_DYN)
            e = lane_max[v - V_LANE];
        else if (v >= V_DYN && A->vars.v[v].has_max && ac_pis_const(&A->vars.v[v].max, &e))
            ;
        else
            return false;
        if (e < 0 || !ac_in_limit(c * e) || !ac_in_limit(m + c * e))
            return false;
        m += c * e;
    }
    *mx = m;
    return true;
}

/* Every coefficient of f and its constant are statically >= 0 (so f >= 0,
 * every variable being >= 0). */
static bool fnonneg(const Facts *F, const AcForm *f)
{
    if (!ac_pnonneg(F, &f->c0))
        return false;
    for (int i = 0; i < f->nt; i++)
        if (!ac_pnonneg(F, &f->t[i].c))
            return false;
    return true;
}

/* The fresh variable e // d or e % d (interned: equal ones share an id). */
static int fresh_var(Access *A, int kind, const AcForm *e, const AccPoly *d, const int32_t *shape, int rank)
{
    for (int i = V_DYN; i < A->vars.n; i++) {
        const AcVar *v = &A->vars.v[i];
        if (v->kind == kind && !v->swz && ac_feq(v->e, e) && ac_peq(&v->d, d))
            return i;
    }
    AcVar v = {kind, -1, e, *d, false, {0}, ac_fdeps(A, e), false, false};
    int64_t dk, mx;
    int64_t lane_max[KAD_MAX_RANK];
    for (int k = 0; k < KAD_MAX_RANK; k++)
        lane_max[k] = k < rank ? shape[k] - 1 : 0;
    if (kind == VK_MOD) {
        v.has_max = ac_padd(&v.max, d, &(AccPoly){0}, 1);
        AccPoly one = ac_pconst(1);
        v.has_max = v.has_max && ac_padd(&v.max, &v.max, &one, -1);
        if (ac_pis_const(d, &dk) && fconst_max(A, e, lane_max, &mx) && mx < dk) {
            v.max = ac_pconst(mx);
        }
    } else if (ac_pis_const(d, &dk) && fconst_max(A, e, lane_max, &mx)) {
        v.has_max = true;
        v.max = ac_pconst(mx / dk);
    }
    return var_new(A, v);
}

/* f with its lane axes renumbered: map[k] is the new axis of lane k, or
 * -1 when that axis has size 1 (the lane is 0 there). */
static const AcForm *fremap(Access *A, const AcForm *f, const int *map, const int32_t *shape, int rank)
{
    if (f->why)
        return f;
    AcForm *r = ac_fnew(A);
    r->base = f->base;
    r->c0 = f->c0;
    for (int i = 0; i < f->nt; i++) {
        int v = f->t[i].var;
        if (v >= V_LANE && v < V_DYN) {
            int nk = map[v - V_LANE];
            if (nk >= 0 && !fadd_term(r, V_LANE + nk, &f->t[i].c))
                return funknown(A, ac_too_big);
            continue;
        }
        if (v >= V_DYN && A->vars.v[v].kind != VK_LOOP && (A->vars.v[v].dep & (0xfull << V_LANE))) {
            const AcVar *fv = &A->vars.v[v];
            const AcForm *e = fremap(A, fv->e, map, shape, rank);
            if (e->why)
                return e;
            AccPoly d = fv->d;
            int nv = fresh_var(A, fv->kind, e, &d, shape, rank);
            if (nv < 0)
                return funknown(A, ac_too_big);
            v = nv;
        }
        if (!fadd_term(r, v, &f->t[i].c))
            return funknown(A, ac_too_big);
    }
    return r;
}

Type ac_vty(const Access *A, ValId v) { return A->f->vals.v[v].ty; }

const char *ac_vname(const Access *A, ValId v)
{
    const char *n = A->names[v];
    return n ? n : "?";
}

/* The pids and loops a value may depend on (conservative: carried values
 * and loop results may depend on anything). */
static uint64_t deps(Access *A, ValId v)
{
    if (A->dep_done[v])
        return A->dep[v];
    uint64_t m = 0;
    const Inst *in = A->def[v];
    if (!in) {
        if (A->owner[v] >= 0)
            m = ~(uint64_t)0;
    } else if (in->op == OP_PROGRAM_ID) {
        m = (uint64_t)1 << (V_PID + in->ival);
    } else if (in->nregions) {
        m = ~(uint64_t)0;
    } else {
        A->dep_done[v] = 1; /* no cycles outside loops; guards anyway */
        A->dep[v] = ~(uint64_t)0;
        for (int i = 0; i < in->nargs; i++)
            m |= deps(A, in->args[i]);
    }
    for (int l = A->inloop[v] - 1; l >= 0; l = A->loops.v[l].parent)
        m |= (uint64_t)1 << A->loops.v[l].var;
    A->dep[v] = m;
    A->dep_done[v] = 1;
    return m;
}

static const AcForm *form_of(Access *A, ValId v);

/* v as a polynomial (its form has no variables), else NULL. */
const AccPoly *ac_poly_of(Access *A, ValId v)
{
    const AcForm *f = form_of(A, v);
    return fis_const(f) && !f->base ? &f->c0 : NULL;
}

static const AcForm *fpoly(Access *A, AccPoly p)
{
    AcForm *f = ac_fnew(A);
    f->c0 = p;
    return f;
}

/* Facts that hold everywhere: num_programs >= 1. */
Facts ac_base_facts(const Access *A)
{
    Facts F = {0, (Access *)A};
    for (int i = 0; i < A->syms.n && i + 1 < 64; i++)
        if (A->syms.v[i].kind == SYM_NPROG)
            F.pos |= (uint64_t)1 << (i + 1);
    return F;
}

/* The carried value v (region param of loop l, slot k) as init + inc * t:
 * the slot's next value must be v plus an amount that is the same in
 * every iteration. */
static const AcForm *induction(Access *A, ValId v, int l, int k)
{
    const Inst *loop = A->loops.v[l].in;
    ValId init, next;
    if (loop->op == OP_FOR) {
        init = loop->args[3 + k - 1];
        next = ir_block_term(loop->regions[0])->args[k - 1];
    } else {
        init = loop->args[k];
        next = ir_block_term(loop->regions[1])->args[k];
    }
    const AcForm *fi = form_of(A, init);
    if (fi->why)
        return fi;
    if (A->hole_depth >= 1)
        return funknown(A, "a carried value inside another's update");
    A->hole_depth++;
    int mark = A->log.n;
    AcForm *hole = ac_fnew(A);
    hole->base = fi->base;
    AccPoly one = ac_pconst(1);
    fadd_term(hole, V_HOLE, &one);
    A->memo[v] = hole;
    ValId twin = 0; /* a while's other region parameter of the same slot */
    if (loop->op == OP_WHILE) {
        twin = A->def[v] == NULL && loop->regions[0]->params[k] == v ? loop->regions[1]->params[k]
                                                                     : loop->regions[0]->params[k];
        A->memo[twin] = hole;
    }
    const AcForm *fn = form_of(A, next);
    for (int i = mark; i < A->log.n; i++)
        *A->log.v[i] = NULL; /* forms computed with the hole are dropped */
    A->log.n = mark;
    A->memo[v] = NULL;
    if (twin)
        A->memo[twin] = NULL;
    A->hole_depth--;
    if (fn->why)
        return fn;
    AcForm *inc = ac_fnew(A);
    *inc = *fn;
    AccPoly *hc = ac_fcoef(inc, V_HOLE);
    if (!hc || !ac_peq(hc, &one) || fn->base != fi->base)
        return funknown(A, arena_printf(A->a, "'%s' is not advanced by adding to it", ac_vname(A, v)));
    AccPoly m1 = ac_pconst(-1);
    fadd_term(inc, V_HOLE, &m1);
    inc->base = 0;
    if (!fis_const(inc))
        return funknown(A, arena_printf(A->a, "'%s' is advanced by an amount that changes between "
                                              "iterations", ac_vname(A, v)));
    for (int i = 0; i < inc->c0.n; i++)
        for (int s = 0; s < ACC_NSYM && inc->c0.m[i].s[s]; s++)
            if (A->syms.v[inc->c0.m[i].s[s] - 1].dep >> A->loops.v[l].var & 1)
                return funknown(A, arena_printf(A->a, "'%s' is advanced by an amount computed in "
                                                      "the loop", ac_vname(A, v)));
    AcForm *t = ac_fnew(A);
    fadd_term(t, A->loops.v[l].var, &inc->c0);
    return ac_fadd(A, fi, t, 1);
}

static const AcForm *region_param(Access *A, ValId v)
{
    int l = A->owner[v];
    if (l < 0) { /* a kernel parameter */
        for (int p = 0; p < A->f->nparams; p++)
            if (A->f->params[p] == v) {
                Type t = ac_vty(A, v);
                if (t.dt == DT_PTR) {
                    AcForm *f = ac_fnew(A);
                    f->base = p + 1;
                    return f;
                }
                if (dtype_is_int((Dtype)t.dt))
                    return fpoly(A, ac_psym(ac_sym_intern(A, SYM_PARAM, v, 0, 0)));
            }
        return funknown(A, "not an integer");
    }
    const Inst *loop = A->loops.v[l].in;
    int k = A->slot[v];
    if (loop->op == OP_FOR && k == 0) {
        const AcForm *lb = form_of(A, loop->args[0]);
        const AccPoly *step = ac_poly_of(A, loop->args[2]);
        if (lb->why)
            return lb;
        if (!step)
            return funknown(A, "a loop step kad cannot express");
        AcForm *t = ac_fnew(A);
        fadd_term(t, A->loops.v[l].var, step);
        return ac_fadd(A, lb, t, 1);
    }
    return induction(A, v, l, k);
}

/* Lane renumbering of a shape op from input shape (ri, si) to (ro, so). */
static bool shape_map(const Inst *in, Type ti, Type to, int *map)
{
    for (int k = 0; k < KAD_MAX_RANK; k++)
        map[k] = -1;
    switch (in->op) {
    case OP_BROADCAST:
        if (ti.rank == 0)
            return true;
        for (int k = 0; k < ti.rank; k++)
            map[k] = ti.shape[k] == 1 ? -1 : k;
        return true;
    case OP_EXPAND_DIMS:
        for (int k = 0; k < ti.rank; k++)
            map[k] = ti.shape[k] == 1 ? -1 : k + (k >= in->ival);
        return true;
    case OP_PERMUTE:
        for (int k = 0; k < in->nints; k++)
            map[in->ints[k]] = ti.shape[in->ints[k]] == 1 ? -1 : k;
        return true;
    case OP_RESHAPE: { /* only size-1 axes inserted or removed */
        int o = 0;
        for (int k = 0; k < ti.rank; k++) {
            if (ti.shape[k] == 1)
                continue;
            while (o < to.rank && to.shape[o] == 1)
                o++;
            if (o == to.rank || to.shape[o] != ti.shape[k])
                return false;
            map[k] = o++;
        }
        while (o < to.rank && to.shape[o] == 1)
            o++;
        return o == to.rank;
    }
    default:
        return false;
    }
}

/* p's symbols are fixed by the launch (no dependence on pids or loops). */
static bool poly_fixed(const Access *A, const AccPoly *p)
{
    for (int k = 0; k < p->n; k++)
        for (int s = 0; s < ACC_NSYM && p->m[k].s[s]; s++)
            if (A->syms.v[p->m[k].s[s] - 1].dep)
                return false;
    return true;
}

static const Inst *def_op(Access *A, ValId v, int op)
{
    const Inst *in = A->def[v];
    return in && in->op == op && ac_vty(A, v).rank == 0 ? in : NULL;
}

/* The grouped swizzle of a persistent tile loop (the grouped GEMM order):
 *
 *   width = G * num_pid_n;  first = (tile // width) * G
 *   gs = minimum(num_pid_m - first, G)
 *   pid_m = first + tile % gs;  pid_n = (tile % width) // gs
 *
 * (pid_m also first + (tile % width) % gs: tile % gs shifts the rows of a
 * shorter last group by a constant, a bijection too) with tile the counter
 * of `for tile = lb to num_pid_m * num_pid_n step s`
 * (lb >= 0, s >= 1, G >= 1 a constant; num_pid_m, num_pid_n fixed by the
 * launch).  gs is a group's height: G, or fewer in the last group.  Then
 * tile -> (pid_m, pid_n) is a bijection of [0, num_pid_m * num_pid_n) onto
 * [0, num_pid_m) x [0, num_pid_n): tile = g * width + r, g = pid_m // G,
 * r = pid_n * gs + the row's residue, and r < gs * num_pid_n bounds pid_n.  The
 * decisions need only that (a pair e // d, e % d determines e, each within
 * its range), so pid_m and pid_n become fresh variables of that kind,
 * marked swz (never equal to the plain e // d, e % d), with maxima
 * num_pid_m - 1 and num_pid_n - 1.  gs: the value the minimum defines;
 * returns the variable of kind `kind`, or -1. */
static int swizzle(Access *A, ValId gs, ValId tile, ValId width, int kind)
{
    const Inst *mn = def_op(A, gs, OP_MINIMUM), *sub, *first, *q;
    if (!mn)
        return -1;
    for (int side = 0; side < 2; side++) {
        const AccPoly *g = ac_poly_of(A, mn->args[side]);
        int64_t G;
        if (!g || !ac_pis_const(g, &G) || G < 1 || !(sub = def_op(A, mn->args[1 - side], OP_SUB)) ||
            !(first = def_op(A, sub->args[1], OP_MUL)))
            continue;
        for (int fs = 0; fs < 2; fs++) {
            const AccPoly *g2 = ac_poly_of(A, first->args[fs]), *npm = ac_poly_of(A, sub->args[0]);
            int64_t G2;
            if (!g2 || !ac_pis_const(g2, &G2) || G2 != G || !npm || !poly_fixed(A, npm) ||
                !(q = def_op(A, first->args[1 - fs], OP_DIV)) || q->args[0] != tile)
                continue;
            /* the quotient's width is the remainder's (width < 0: none to match) */
            const AccPoly *w = ac_poly_of(A, q->args[1]), *w2 = width >= 0 ? ac_poly_of(A, width) : w;
            AccPoly npn, prod, one = ac_pconst(1), mx;
            if (!w || !w2 || !ac_peq(w, w2) || !poly_fixed(A, w) || !ac_pdiv_exact(&npn, w, G))
                continue;
            /* tile: a `for` counter in [lb, num_pid_m * num_pid_n) */
            int l = A->owner[tile];
            const Inst *loop = l >= 0 && !A->def[tile] && A->slot[tile] == 0 ? A->loops.v[l].in : NULL;
            if (!loop || loop->op != OP_FOR)
                return -1;
            const AccPoly *ub = ac_poly_of(A, loop->args[1]), *st = ac_poly_of(A, loop->args[2]);
            const AcForm *lb = form_of(A, loop->args[0]), *e = form_of(A, tile);
            Facts F = ac_base_facts(A);
            AccPoly sm1;
            if (!ub || !st || lb->why || e->why || !fnonneg(&F, lb) || !ac_padd(&sm1, st, &one, -1) ||
                !ac_pnonneg(&F, &sm1) || !ac_pmul(&prod, npm, &npn) || !ac_peq(&prod, ub))
                return -1;
            if (!ac_padd(&mx, kind == VK_DIV ? npm : &npn, &one, -1))
                return -1;
            for (int i = V_DYN; i < A->vars.n; i++) {
                const AcVar *x = &A->vars.v[i];
                if (x->kind == kind && x->swz && ac_feq(x->e, e) && ac_peq(&x->d, &npn))
                    return i;
            }
            AcVar v = {kind, -1, e, npn, true, mx, ac_fdeps(A, e), false, true};
            return var_new(A, v);
        }
    }
    return -1;
}

/* pid_m = first + tile % gs (either order) or pid_n = (tile % width) // gs
 * of a grouped swizzle: the form of its variable, or NULL. */
static const AcForm *swizzle_form(Access *A, const Inst *in)
{
    int v = -1;
    if (in->op == OP_ADD)
        for (int side = 0; side < 2 && v < 0; side++) {
            const Inst *r = def_op(A, in->args[1 - side], OP_REM), *first = def_op(A, in->args[side], OP_MUL);
            const Inst *mn = r ? def_op(A, r->args[1], OP_MINIMUM) : NULL;
            /* first is the minimum's own (first = (tile // width) * G) */
            const Inst *sub = mn ? def_op(A, mn->args[0], OP_SUB) : NULL;
            if (!sub && mn)
                sub = def_op(A, mn->args[1], OP_SUB);
            if (!r || !first || !sub || sub->args[1] != in->args[side])
                continue;
            v = swizzle(A, r->args[1], r->args[0], -1, VK_DIV);
            /* Triton's tutorial spelling: first + (tile % width) % gs, the same row
             * (tile = g * width + r, and r % gs is the row in the group) */
            const Inst *r2 = v < 0 ? def_op(A, r->args[0], OP_REM) : NULL;
            if (r2)
                v = swizzle(A, r->args[1], r2->args[0], r2->args[1], VK_DIV);
        }
    else if (in->op == OP_DIV) {
        const Inst *r = def_op(A, in->args[0], OP_REM);
        if (r)
            v = swizzle(A, in->args[1], r->args[0], r->args[1], VK_MOD);
    }
    if (v < 0)
        return NULL;
    AcForm *f = ac_fnew(A);
    AccPoly one = ac_pconst(1);
    fadd_term(f, v, &one);
    return f;
}

static const AcForm *compute(Access *A, ValId v)
{
    const Inst *in = A->def[v];
    if (!in)
        return region_param(A, v);
    Type t = ac_vty(A, v);
    if (t.dt != DT_PTR && !dtype_is_int((Dtype)t.dt))
        return funknown(A, "a float offset");
    const AcForm *x, *y;
    switch (in->op) {
    case OP_CONST:
        return fpoly(A, ac_pconst(in->ival));
    case OP_PROGRAM_ID: {
        AcForm *f = ac_fnew(A);
        AccPoly one = ac_pconst(1);
        fadd_term(f, V_PID + (int)in->ival, &one);
        return f;
    }
    case OP_NUM_PROGRAMS:
        return fpoly(A, ac_psym(ac_sym_intern(A, SYM_NPROG, 0, (int)in->ival, 0)));
    case OP_ARANGE: {
        AcForm *f = ac_fnew(A);
        f->c0 = ac_pconst(in->ival);
        AccPoly one = ac_pconst(1);
        fadd_term(f, V_LANE, &one);
        return f;
    }
    case OP_ADD:
        if ((x = swizzle_form(A, in)))
            return x;
        /* fall through */
    case OP_ADDPTR:
    case OP_SUB:
        return ac_fadd(A, form_of(A, in->args[0]), form_of(A, in->args[1]), in->op == OP_SUB ? -1 : 1);
    case OP_NEG: {
        AccPoly m1 = ac_pconst(-1);
        return fscale(A, form_of(A, in->args[0]), &m1);
    }
    case OP_MUL:
        x = form_of(A, in->args[0]);
        y = form_of(A, in->args[1]);
        if (x->why || y->why)
            return x->why ? x : y;
        if (fis_const(y))
            return fscale(A, x, &y->c0);
        if (fis_const(x))
            return fscale(A, y, &x->c0);
        return funknown(A, "a product of two values that vary");
    case OP_SHL: {
        const AccPoly *s = ac_poly_of(A, in->args[1]);
        int64_t k;
        if (!s || !ac_pis_const(s, &k) || k < 0 || k > 30)
            return funknown(A, "a shift by a non-constant amount");
        AccPoly p = ac_pconst((int64_t)1 << k);
        return fscale(A, form_of(A, in->args[0]), &p);
    }
    case OP_DIV:
    case OP_REM: {
        if (in->op == OP_DIV && (x = swizzle_form(A, in)))
            return x;
        x = form_of(A, in->args[0]);
        const AccPoly *d = ac_poly_of(A, in->args[1]);
        if (x->why)
            return x;
        if (!d)
            return funknown(A, "a division by a value that varies");
        Facts F = ac_base_facts(A);
        int64_t dk, xk;
        AccPoly one = ac_pconst(1), dm1;
        if (!ac_padd(&dm1, d, &one, -1) || !fnonneg(&F, x))
            return funknown(A, "'//' or '%' of possibly negative operands");
        if (!ac_pis_const(d, &dk) && !fis_const(x)) {
            /* a symbolic divisor: the decision requires d >= 1 */
        } else if (!ac_pnonneg(&F, &dm1))
            return funknown(A, "'//' or '%' by a possibly negative divisor");
        if (ac_pis_const(d, &dk) && fis_const(x) && ac_pis_const(&x->c0, &xk))
            return fpoly(A, ac_pconst(in->op == OP_DIV ? xk / dk : xk % dk));
        if (ac_pis_const(d, &dk)) { /* exact: every coefficient a multiple of d */
            AcForm *q = ac_fnew(A);
            bool exact = ac_pdiv_exact(&q->c0, &x->c0, dk);
            for (int i = 0; i < x->nt && exact; i++) {
                AccPoly c;
                exact = ac_pdiv_exact(&c, &x->t[i].c, dk) && fadd_term(q, x->t[i].var, &c);
            }
            if (exact)
                return in->op == OP_DIV ? q : fpoly(A, ac_pconst(0));
        }
        if (fis_const(x))
            break; /* a scalar: a symbol */
        int fv = fresh_var(A, in->op == OP_DIV ? VK_DIV : VK_MOD, x, d, t.shape, t.rank);
        if (fv < 0)
            return funknown(A, ac_too_big);
        AcForm *f = ac_fnew(A);
        fadd_term(f, fv, &one);
        return f;
    }
    case OP_CAST:
        if (ac_vty(A, in->args[0]).dt == DT_PTR || !dtype_is_int((Dtype)ac_vty(A, in->args[0]).dt) ||
            dtype_bits((Dtype)t.dt) < dtype_bits((Dtype)ac_vty(A, in->args[0]).dt))
            return funknown(A, "a narrowing or pointer conversion");
        return form_of(A, in->args[0]);
    case OP_MULTIPLE_OF:
    case OP_MAX_CONTIGUOUS:
        return form_of(A, in->args[0]);
    case OP_BROADCAST:
    case OP_EXPAND_DIMS:
    case OP_PERMUTE:
    case OP_RESHAPE: {
        int map[KAD_MAX_RANK];
        if (!shape_map(in, ac_vty(A, in->args[0]), t, map))
            return funknown(A, "a reshape that mixes axes");
        return fremap(A, form_of(A, in->args[0]), map, t.shape, t.rank);
    }
    case OP_LOAD:
        if (t.rank)
            return funknown(A, arena_printf(A->a, "offsets loaded from memory ('%s', line %d)",
                                            ac_vname(A, v), in->loc.line));
        break;
    default:
        break;
    }
    if (t.rank == 0 && t.dt != DT_PTR)
        return fpoly(A, ac_psym(ac_sym_intern(A, SYM_VAL, v, 0, deps(A, v))));
    return funknown(A, arena_printf(A->a, "'%s' ('%s', line %d) is not affine", ac_vname(A, v),
                                    op_info[in->op].name, in->loc.line));
}

const AcForm *ac_form_of(Access *A, ValId v) { return form_of(A, v); }

static const AcForm *form_of(Access *A, ValId v)
{
    if (A->memo[v])
        return A->memo[v];
    if (A->busy[v])
        return funknown(A, "a value defined in terms of itself");
    A->busy[v] = 1;
    const AcForm *f = compute(A, v);
    A->busy[v] = 0;
    Type t = ac_vty(A, v);
    if (f->why && t.rank == 0 && t.dt != DT_PTR && dtype_is_int((Dtype)t.dt) && A->def[v])
        f = fpoly(A, ac_psym(ac_sym_intern(A, SYM_VAL, v, 0, deps(A, v)))); /* an opaque scalar */
    A->memo[v] = f;
    if (A->hole_depth)
        vec_push(A->a, A->log, &A->memo[v]);
    return f;
}

/* ------------------------------------------------------------------ */
/* Building the analysis                                               */
/* ------------------------------------------------------------------ */

typedef struct WalkCtx {
    uint64_t loops;
    int loop; /* innermost loop index, -1 */
    Vec(ValId) conds;
    Vec(int) fors;
} WalkCtx;

static void walk(Access *A, const Block *b, WalkCtx *c)
{
    for (int i = 0; i < b->nparams; i++)
        A->inloop[b->params[i]] = c->loop + 1;
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nres; k++) {
            A->def[in->res[k]] = in;
            A->inloop[in->res[k]] = c->loop + 1;
        }
        if (in->op == OP_PROGRAM_ID)
            A->pid_axes |= 1u << in->ival;
        if (in->op == OP_LOAD || op_writes_memory(in->op)) {
            AcSite s = {in, c->loops, {0}, {0}, NULL};
            for (int k = 0; k < c->conds.n; k++)
                vec_push(A->a, s.ctx, c->conds.v[k]);
            for (int k = 0; k < c->fors.n; k++)
                vec_push(A->a, s.fors, c->fors.v[k]);
            vec_push(A->a, A->sites, s);
        }
        if (in->op == OP_FOR || in->op == OP_WHILE) {
            AcLoop L = {in, c->loop, -1};
            int li = A->loops.n;
            vec_push(A->a, A->loops, L);
            AcVar lv = {VK_LOOP, li, NULL, {0}, false, {0}, 0, false, false};
            int var = var_new(A, lv);
            A->loops.v[li].var = var;
            if (var >= 0)
                A->vars.v[var].dep = (uint64_t)1 << var;
            for (int r = 0; r < in->nregions; r++)
                for (int k = 0; k < in->regions[r]->nparams; k++) {
                    A->owner[in->regions[r]->params[k]] = var >= 0 ? li : -2;
                    A->slot[in->regions[r]->params[k]] = k;
                }
            WalkCtx sub = *c;
            sub.loop = li;
            sub.loops = var >= 0 ? c->loops | (uint64_t)1 << var : c->loops;
            sub.conds.v = NULL, sub.conds.n = sub.conds.cap = 0;
            sub.fors.v = NULL, sub.fors.n = sub.fors.cap = 0;
            for (int k = 0; k < c->conds.n; k++)
                vec_push(A->a, sub.conds, c->conds.v[k]);
            for (int k = 0; k < c->fors.n; k++)
                vec_push(A->a, sub.fors, c->fors.v[k]);
            if (in->op == OP_FOR) {
                vec_push(A->a, sub.fors, li);
                walk(A, in->regions[0], &sub);
            } else {
                walk(A, in->regions[0], &sub);
                vec_push(A->a, sub.conds, ir_block_term(in->regions[0])->args[0]);
                walk(A, in->regions[1], &sub);
            }
        } else if (in->op == OP_IF) {
            WalkCtx sub = *c;
            sub.conds.v = NULL, sub.conds.n = sub.conds.cap = 0;
            for (int k = 0; k < c->conds.n; k++)
                vec_push(A->a, sub.conds, c->conds.v[k]);
            vec_push(A->a, sub.conds, in->args[0]);
            walk(A, in->regions[0], &sub);
            walk(A, in->regions[1], c);
        } else {
            for (int r = 0; r < in->nregions; r++)
                walk(A, in->regions[r], c);
        }
    }
}

Access *access_analyze(Arena *a, const Func *f)
{
    Access *A = arena_alloc(a, sizeof *A);
    A->a = a;
    A->f = f;
    A->nv = f->vals.n;
    size_t n = (size_t)A->nv;
    A->names = ir_names(a, f);
    A->def = arena_alloc(a, sizeof(const Inst *) * n);
    A->owner = arena_alloc(a, sizeof(int) * n);
    A->slot = arena_alloc(a, sizeof(int) * n);
    A->inloop = arena_alloc(a, sizeof(int) * n);
    A->memo = arena_alloc(a, sizeof(const AcForm *) * n);
    A->busy = arena_alloc(a, n);
    A->dep = arena_alloc(a, sizeof(uint64_t) * n);
    A->dep_done = arena_alloc(a, n);
    for (size_t i = 0; i < n; i++)
        A->owner[i] = -1;
    for (int k = 0; k < V_DYN; k++) {
        AcVar v = {k < V_LANE ? VK_PID : VK_LANE, -1, NULL, {0}, false, {0}, (uint64_t)1 << k, false, false};
        vec_push(a, A->vars, v);
    }
    WalkCtx c = {0, -1, {0}, {0}};
    walk(A, f->body, &c);
    return A;
}

int access_count(const Access *A) { return A->sites.n; }
const Inst *access_inst(const Access *A, int i) { return A->sites.v[i].in; }

AcSite *ac_site_of(Access *A, const Inst *mem)
{
    for (int i = 0; i < A->sites.n; i++)
        if (A->sites.v[i].in == mem)
            return &A->sites.v[i];
    return NULL;
}

const AcForm *ac_site_form(Access *A, AcSite *s)
{
    if (!s->form) {
        const AcForm *f = form_of(A, s->in->args[0]);
        if (!f->why && !f->base)
            f = funknown(A, "not a pointer of a parameter");
        s->form = f;
    }
    return s->form;
}

int access_base(Access *A, const Inst *mem)
{
    AcSite *s = ac_site_of(A, mem);
    const AcForm *f = s ? ac_site_form(A, s) : NULL;
    return f && !f->why ? f->base - 1 : -1;
}

bool access_params(Access *A, int nparams, uint8_t *w, uint8_t *r, const char *skip)
{
    bool all = true;
    for (int k = 0; k < access_count(A); k++) {
        const Inst *in = access_inst(A, k);
        if ((in->op == OP_LOAD && !r) || (skip && in->sattr && !strcmp(in->sattr, skip)))
            continue;
        int p = access_base(A, in);
        if (p < 0 || p >= nparams)
            all = false;
        else
            (in->op == OP_LOAD ? r : w)[p] = 1;
    }
    return all;
}

/* ------------------------------------------------------------------ */
/* Constraints                                                         */
/* ------------------------------------------------------------------ */

/* The constraint `a OP b` (OP a comparison) as a form < 0. */
static void cmp_cons(Access *A, OpKind op, ValId a, ValId b, Cons *out, bool *exact)
{
    Dtype dt = (Dtype)ac_vty(A, a).dt;
    if (dt == DT_PTR || !dtype_is_int(dt) || !dtype_is_signed(dt)) {
        *exact = false; /* unsigned comparisons: not the integers' order */
        if (dt == DT_PTR)
            return;
    }
    bool flip = op == OP_GT || op == OP_GE;
    const AcForm *x = form_of(A, flip ? b : a), *y = form_of(A, flip ? a : b);
    const AcForm *c = ac_fadd(A, x, y, -1);
    if (op == OP_LE || op == OP_GE)
        c = ac_fadd(A, c, fpoly(A, ac_pconst(1)), -1);
    if (!c->why)
        vec_push(A->a, *out, c);
    else
        *exact = false;
}

static void cons_of(Access *A, ValId m, Cons *out, int depth, bool *exact);

/* The constraints not(m) implies: not(a < b) is a >= b (the `else` of a per-thread `if`), not(x or
 * y) is not(x) and not(y) (`if (x >= W || y >= H) return;`), not(not(x)) is x. */
static void cons_not(Access *A, ValId m, Cons *out, int depth, bool *exact)
{
    const Inst *in = A->def[m];
    if (in && depth <= 16 && in->op == OP_OR) {
        cons_not(A, in->args[0], out, depth + 1, exact);
        cons_not(A, in->args[1], out, depth + 1, exact);
        return;
    }
    if (in && in->op == OP_NOT) {
        cons_of(A, in->args[0], out, depth + 1, exact);
        return;
    }
    int neg = !in ? 0 : in->op == OP_LT ? OP_GE : in->op == OP_LE ? OP_GT : in->op == OP_GT ? OP_LE
                                            : in->op == OP_GE ? OP_LT : 0;
    if (!neg || depth > 16) {
        *exact = false;
        return;
    }
    cmp_cons(A, (OpKind)neg, in->args[0], in->args[1], out, exact);
}

/* The constraints an i1 value implies where it is true.  *exact is
 * cleared when they may be weaker than m (a part of m they leave out). */
static void cons_of(Access *A, ValId m, Cons *out, int depth, bool *exact)
{
    const Inst *in = A->def[m];
    if (!in || depth > 16) {
        *exact = false;
        return;
    }
    switch (in->op) {
    case OP_AND:
        cons_of(A, in->args[0], out, depth + 1, exact);
        cons_of(A, in->args[1], out, depth + 1, exact);
        return;
    case OP_CONST: /* true: no constraint */
        if (!in->ival)
            *exact = false;
        return;
    case OP_OR: { /* what both sides imply: a bound of one form with the weaker constant */
        Cons l = {0}, r = {0};
        bool el = true, er = true;
        cons_of(A, in->args[0], &l, depth + 1, &el);
        cons_of(A, in->args[1], &r, depth + 1, &er);
        for (int i = 0; i < l.n; i++)
            for (int j = 0; j < r.n; j++) {
                const AcForm *x = l.v[i], *y = r.v[j];
                AccPoly dc;
                int64_t k;
                bool same = !x->why && !y->why && x->base == y->base && x->nt == y->nt &&
                            ac_padd(&dc, &x->c0, &y->c0, -1) && ac_pis_const(&dc, &k);
                for (int t = 0; same && t < x->nt; t++)
                    same = x->t[t].var == y->t[t].var && ac_peq(&x->t[t].c, &y->t[t].c);
                if (same) /* x < 0 or y < 0, y = x - k: the smaller constant is implied by both */
                    vec_push(A->a, *out, k <= 0 ? x : y);
            }
        *exact = false;
        return;
    }
    case OP_BROADCAST:
    case OP_EXPAND_DIMS:
    case OP_PERMUTE:
    case OP_RESHAPE: {
        int map[KAD_MAX_RANK];
        Type to = ac_vty(A, m);
        if (!shape_map(in, ac_vty(A, in->args[0]), to, map)) {
            *exact = false;
            return;
        }
        Cons sub = {0};
        cons_of(A, in->args[0], &sub, depth + 1, exact);
        for (int i = 0; i < sub.n; i++) {
            const AcForm *r = fremap(A, sub.v[i], map, to.shape, to.rank);
            if (!r->why)
                vec_push(A->a, *out, r);
            else
                *exact = false;
        }
        return;
    }
    case OP_NOT:
        cons_not(A, in->args[0], out, depth + 1, exact);
        return;
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE:
        cmp_cons(A, (OpKind)in->op, in->args[0], in->args[1], out, exact);
        return;
    default:
        *exact = false;
        return;
    }
}

Cons ac_site_cons(Access *A, AcSite *s)
{
    Cons cs = {0};
    const Inst *in = s->in;
    bool exact = true;
    if (in->flags & IF_HAS_MASK)
        cons_of(A, in->args[in->op == OP_LOAD ? 1 : 2], &cs, 0, &exact);
    for (int i = 0; i < s->ctx.n; i++)
        cons_of(A, s->ctx.v[i], &cs, 0, &exact);
    Facts F = ac_base_facts(A);
    for (int i = 0; i < s->fors.n; i++) { /* iv < ub for a positive step */
        const Inst *loop = A->loops.v[s->fors.v[i]].in;
        const AccPoly *step = ac_poly_of(A, loop->args[2]);
        AccPoly one = ac_pconst(1), sm1;
        if (!step || !ac_padd(&sm1, step, &one, -1) || !ac_pnonneg(&F, &sm1))
            continue;
        const AcForm *c = ac_fadd(A, form_of(A, loop->regions[0]->params[0]), form_of(A, loop->args[1]), -1);
        if (!c->why)
            vec_push(A->a, cs, c);
    }
    /* Sums of two constraints that cancel variables: x < 0 and y < 0 over the integers give
     * x + y + 1 < 0, implied, so adding it keeps every proof a proof; it bounds a group the two do
     * not bound alone (a vector body's scalar tail: `i < n` in the `else` of `i + 3 < n` gives
     * the tail's counter < 3) */
    int n0 = cs.n;
    AccPoly one = ac_pconst(1);
    for (int i = 0; i < n0 && n0 <= 12; i++)
        for (int j = i + 1; j < n0; j++) {
            const AcForm *x = cs.v[i], *y = cs.v[j], *sum = ac_fadd(A, x, y, 1);
            if (sum->why || !sum->nt || sum->nt >= x->nt || sum->nt >= y->nt)
                continue;
            AcForm *d = arena_alloc(A->a, sizeof *d);
            *d = *sum;
            if (!ac_padd(&d->c0, &sum->c0, &one, 1))
                continue;
            vec_push(A->a, cs, d);
        }
    return cs;
}

/* The constraints of s's mask, read exactly, and the bounds iv < ub of
 * its enclosing `for` loops.  NULL, or why they would say less than holds:
 * a mask part that is not a signed integer comparison of affine forms, an
 * enclosing `if` or `while` condition, a loop step not known positive. */
const char *ac_site_cons_exact(Access *A, AcSite *s, Cons *out)
{
    if (s->ctx.n)
        return "it is read under an `if` or in a `while` loop";
    bool exact = true;
    const Inst *in = s->in;
    Cons cs = {0};
    if (in->flags & IF_HAS_MASK)
        cons_of(A, in->args[in->op == OP_LOAD ? 1 : 2], &cs, 0, &exact);
    if (!exact)
        return "its mask is not a conjunction of integer comparisons kad reads exactly";
    Facts F = ac_base_facts(A);
    for (int i = 0; i < s->fors.n; i++) {
        const Inst *loop = A->loops.v[s->fors.v[i]].in;
        const AccPoly *step = ac_poly_of(A, loop->args[2]);
        AccPoly one = ac_pconst(1), sm1;
        if (!step || !ac_padd(&sm1, step, &one, -1) || !ac_pnonneg(&F, &sm1))
            return "an enclosing loop's step is not known to be positive";
        const AcForm *c = ac_fadd(A, form_of(A, loop->regions[0]->params[0]), form_of(A, loop->args[1]), -1);
        if (c->why)
            return "an enclosing loop's bounds are not affine";
        vec_push(A->a, cs, c);
    }
    *out = cs;
    return NULL;
}

const char *ac_cond_cons_exact(Access *A, ValId c, bool neg, Cons *out)
{
    bool exact = true;
    Cons cs = {0};
    cons_of(A, c, &cs, 0, &exact);
    if (!exact)
        return "an enclosing `if`'s condition is not a conjunction of integer comparisons kad reads exactly";
    if (neg && cs.n != 1)
        return "an enclosing `if`'s condition, false in its `else` branch, is not one comparison";
    for (int i = 0; i < cs.n; i++) {
        const AcForm *g = cs.v[i];
        if (neg) /* not (g < 0): g >= 0, -1 - g < 0 over the integers */
            g = ac_fadd(A, fpoly(A, ac_pconst(-1)), g, -1);
        if (g->why)
            return "an enclosing `if`'s condition is not affine";
        vec_push(A->a, *out, g);
    }
    return NULL;
}

/* Facts from constraints: sum c_i x_i + c0 < 0 with every c_i >= 0 means
 * -c0 >= 1 on a non-empty domain; when -c0 = sym + k, k <= 0, sym >= 1. */
void ac_add_facts(Access *A, const Cons *cs, Facts *F)
{
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < cs->n; i++) {
            const AcForm *c = cs->v[i];
            bool ok = true;
            for (int k = 0; k < c->nt && ok; k++)
                ok = ac_pnonneg(F, &c->t[k].c);
            if (!ok)
                continue;
            int sym = 0;
            int64_t k0 = 0;
            for (int k = 0; k < c->c0.n; k++) {
                const AccMono *m = &c->c0.m[k];
                if (!m->s[0])
                    k0 = -m->k;
                else if (m->k == -1 && !m->s[1] && !sym)
                    sym = m->s[0];
                else
                    ok = false;
            }
            if (ok && sym && k0 <= 0 && sym < 64)
                F->pos |= (uint64_t)1 << sym;
        }
    (void)A;
}

int ac_var_rev(Access *A, int v, const AccPoly *max)
{
    const AcVar *x = &A->vars.v[v];
    for (int i = V_DYN; i < A->vars.n; i++) {
        const AcVar *y = &A->vars.v[i];
        if (y->rev && y->kind == VK_LOOP && y->loop == x->loop && ac_peq(&y->max, max))
            return i;
    }
    AcVar r = {VK_LOOP, x->loop, NULL, {0}, true, *max, x->dep, true, false};
    return var_new(A, r);
}

const AcForm *ac_fsubst_rev(Access *A, const AcForm *f, int v, int nv, const AccPoly *max)
{
    if (f->why)
        return f;
    AcForm *r = ac_fnew(A);
    *r = *f;
    AccPoly *c = ac_fcoef(r, v);
    if (!c)
        return r;
    AccPoly cv = *c, neg, cm;
    if (!pscale(&neg, &cv, -1) || !fadd_term(r, v, &neg) || !fadd_term(r, nv, &neg) || !ac_pmul(&cm, &cv, max) ||
        !ac_padd(&r->c0, &r->c0, &cm, 1))
        return funknown(A, ac_too_big);
    return r;
}

bool access_pid_form(Access *A, const Inst *mem, int *base, AccPoly *c0, AccPoly pid[3])
{
    AcSite *s = ac_site_of(A, mem);
    const AcForm *f = s ? ac_site_form(A, s) : NULL;
    if (!f || f->why || !f->base)
        return false;
    *base = f->base - 1;
    *c0 = f->c0;
    for (int k = 0; k < 3; k++)
        pid[k] = (AccPoly){0};
    for (int i = 0; i < f->nt; i++) {
        int v = f->t[i].var;
        const AcVar *x = v >= V_DYN ? &A->vars.v[v] : NULL;
        uint64_t lanes = (((uint64_t)1 << (V_DYN - V_LANE)) - 1) << V_LANE;
        if (v >= V_PID && v < V_PID + 3)
            pid[v - V_PID] = f->t[i].c;
        else if (x && !((x->kind == VK_DIV || x->kind == VK_MOD) && !(x->dep & ~lanes)))
            return false; /* a loop term, or // or % of more than lanes */
    }
    return true;
}
