/* access_disjoint.c -- the access analysis's decisions over several sites:
 * whether two sites of one buffer touch disjoint elements across programs
 * (access_disjoint within one launch's programs, access_disjoint_all also
 * across a site's loop iterations), and whether each
 * program's footprint over all its sites of a buffer is its own
 * (access_private: no other program touches an element it touches).
 *
 * Both reuse access_decide.c's dominance access_chain (a Dec over the sites'
 * varied variables, the mixed-radix argument): two sites are disjoint
 * when their ranges over the variables they do not share cannot meet, or
 * when the chain recovers the shared variables from the address; a
 * footprint is private when the chain recovers the program ids.  What
 * cannot be decided statically is a runtime condition (ACC_PROVEN_IF);
 * anything else is ACC_UNKNOWN, never guessed.
 *
 * Requires: an Access from access_analyze whose Func is unchanged.  Keeps:
 * the Func.  Guarantees: PROVEN and PROVEN_IF are proofs; all memory lives
 * in the Access's arena.
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "analysis/access_int.h"

/* ------------------------------------------------------------------ */
/* Disjointness of two sites                                           */
/* ------------------------------------------------------------------ */

/* The smallest (hi false) or largest (hi true) value of f's terms on
 * variables outside `shared`, plus c0: each term at 0 or at coef * max on
 * the side its sign gives.  False when a coefficient's sign or a needed
 * extent is unknown. */
static uint64_t var_deps(const Access *A, int v);

static bool form_bound(Dec *D, const AcForm *f, uint64_t shared, bool hi, AccPoly *out)
{
    Access *A = D->A;
    AccPoly b = f->c0, one = ac_pconst(1);
    for (int i = 0; i < f->nt; i++) {
        int v = f->t[i].var;
        if (var_deps(A, v) & shared)
            continue; /* equal in both: cancels */
        const AccPoly *c = &f->t[i].c;
        AccPoly neg, nm1, mx, t;
        bool pos = ac_pnonneg(&D->F, c);
        bool negc = ac_padd(&neg, &(AccPoly){0}, c, -1) && ac_padd(&nm1, &neg, &one, -1) &&
                    access_ptruth(&D->F, &nm1) == 1;
        if (!pos && !negc)
            return false;
        if (pos != hi)
            continue; /* this side of the term is its value at 0 */
        if (!access_var_max(D, v, &mx) || !ac_pmul(&t, c, &mx) || !ac_padd(&b, &b, &t, 1))
            return false;
    }
    *out = b;
    return true;
}

/* Two sites through one base whose variable parts differ: disjoint when
 * the terms on the `shared` variables (pids, common loops: one value for
 * both) are equal and the rest of one lies wholly below the other's
 * (every other variable, lanes included, ranging on its own).  The
 * prev_multiple - 16*t tiles of a reverse walk below its masked first
 * tile. */
static AccResult disjoint_ranges(Access *A, AcSite *sx, AcSite *sy, uint64_t shared)
{
    const AcSite *ss[2] = {sx, sy};
    const AcForm *f[2];
    for (int k = 0; k < 2; k++) {
        AcForm *u = ac_fnew(A);
        *u = *ac_site_form(A, (AcSite *)ss[k]);
        u->base = 0;
        f[k] = u;
    }
    for (int k = 0; k < 2; k++) /* shared terms equal; no other term depends on a shared variable */
        for (int i = 0; i < f[k]->nt; i++) {
            int v = f[k]->t[i].var;
            uint64_t d = var_deps(A, v);
            if (!(d & shared))
                continue;
            AccPoly *o = ac_fcoef((AcForm *)f[1 - k], v);
            if ((d & ~shared) || !o || !ac_peq(o, &f[k]->t[i].c))
                return access_res(ACC_UNKNOWN, "the two addresses differ in more than a constant", NULL);
        }
    for (int k = 0; k < 2; k++) /* symbols fixed where the shared variables are */
        for (int i = -1; i < f[k]->nt; i++) {
            const AccPoly *p = i < 0 ? &f[k]->c0 : &f[k]->t[i].c;
            for (int m = 0; m < p->n; m++)
                for (int y = 0; y < ACC_NSYM && p->m[m].s[y]; y++)
                    if (A->syms.v[p->m[m].s[y] - 1].dep & ~shared)
                        return access_res(ACC_UNKNOWN, "the two addresses depend on a value kad cannot express", NULL);
        }
    AccPoly lo[2], hi[2];
    Facts F = ac_base_facts(A);
    for (int k = 0; k < 2; k++) {
        Cons cs = ac_site_cons(A, (AcSite *)ss[k]);
        Type t = ac_vty(A, ss[k]->in->args[0]);
        Dec D = {A, f[k], &cs, ac_base_facts(A), 0, {0}, {{0}}, t.shape, t.rank, 0, {0}};
        ac_add_facts(A, &cs, &D.F);
        F.pos |= D.F.pos; /* used only on pairs where both sites have a point */
        if (!form_bound(&D, f[k], shared, false, &lo[k]) || !form_bound(&D, f[k], shared, true, &hi[k]))
            return access_res(ACC_UNKNOWN, "the range of one of the two addresses is unknown", NULL);
    }
    /* the shared terms cancel: compare the rest (c0 and the other terms) */
    AccPoly alts[2], one = ac_pconst(1);
    int na = 0;
    for (int k = 0; k < 2; k++) { /* hi[k] < lo[1-k] */
        AccPoly d;
        if (ac_padd(&d, &lo[1 - k], &hi[k], -1) && ac_padd(&d, &d, &one, -1))
            alts[na++] = d;
    }
    Dec D = {A, f[0], NULL, F, 0, {0}, {{0}}, NULL, 0, 0, {0}};
    AccCond *c = arena_alloc(A->a, sizeof *c);
    if (!na || !access_add_clause(&D, c, alts, na))
        return access_res(ACC_UNKNOWN, "the two ranges may overlap", NULL);
    return c->n ? access_res(ACC_PROVEN_IF, NULL, c) : access_res(ACC_PROVEN, NULL, NULL);
}

AccResult access_disjoint(Access *A, const Inst *x, const Inst *y)
{
    AcSite *sx = ac_site_of(A, x), *sy = ac_site_of(A, y);
    if (!sx || !sy)
        return access_res(ACC_UNKNOWN, "not a memory access", NULL);
    const AcForm *fx = ac_site_form(A, sx), *fy = ac_site_form(A, sy);
    if (fx->why || fy->why)
        return access_res(ACC_UNKNOWN, fx->why ? fx->why : fy->why, NULL);
    if (fx->base != fy->base)
        return access_res(ACC_PROVEN, NULL, NULL); /* different parameters (aliasing is the caller's matter) */
    /* x's elements lie below y's, or above: max(fx) < min(fy) over the
     * lanes their masks enable.  With equal variable parts, that is a
     * comparison of the constants against the span of the lanes. */
    AcForm *ux = ac_fnew(A), *uy = ac_fnew(A);
    *ux = *fx;
    *uy = *fy;
    ux->base = uy->base = 0;
    const AcForm *dlt = ac_fadd(A, uy, ux, -1);
    if (dlt->why)
        return access_res(ACC_UNKNOWN, dlt->why, NULL);
    AcForm *vx = ac_fnew(A);
    *vx = *fx;
    vx->c0 = ac_pconst(0);
    vx->base = 0;
    /* every variable part must agree, program ids and iterations included:
     * a difference that depends on the program id (y = x + B - pid*B)
     * would make the constants' comparison below meaningless */
    if (dlt->nt > 0)
        return disjoint_ranges(A, sx, sy, 7 | (sx->loops & sy->loops));
    Cons cx = ac_site_cons(A, sx), cy = ac_site_cons(A, sy);
    Type tx = ac_vty(A, x->args[0]);
    Dec D = {A, vx, &cx, ac_base_facts(A), 0, {0}, {{0}}, tx.shape, tx.rank, 0, {0}};
    ac_add_facts(A, &cx, &D.F);
    ac_add_facts(A, &cy, &D.F);
    /* span of x's lane part: sum of coef * max (coefficients >= 0) or a mask bound */
    for (int i = 0; i < vx->nt; i++) {
        int v = vx->t[i].var;
        if (v < V_LANE || (v >= V_DYN && !(A->vars.v[v].dep & ((uint64_t)0xf << V_LANE))))
            continue;
        D.var[D.n] = v;
        D.coef[D.n] = vx->t[i].c;
        D.n++;
    }
    AccPoly spans[ACC_NALT];
    int ns = 0;
    if (D.n) {
        int ord[AC_NTERM] = {0};
        for (int i = 0; i < D.n; i++)
            ord[i] = i;
        ns = access_group_alts(&D, ord, D.n, spans, ACC_NALT);
        AccPoly sum = ac_pconst(0);
        bool ok = true;
        for (int i = 0; i < D.n && ok; i++) {
            AccPoly mx, t;
            ok = ac_pnonneg(&D.F, &D.coef[i]) && access_var_max(&D, D.var[i], &mx) && ac_pmul(&t, &D.coef[i], &mx) &&
                 ac_padd(&sum, &sum, &t, 1);
        }
        if (ok && ns < ACC_NALT)
            spans[ns++] = sum;
    } else {
        spans[ns++] = ac_pconst(0);
    }
    /* the same for y, whose lane part is equal: disjoint when |delta| > span */
    AccPoly alts[ACC_NALT], one = ac_pconst(1);
    int na = 0;
    AccCond *cond = arena_alloc(A->a, sizeof *cond);
    for (int sign = 1; sign >= -1; sign -= 2) {
        na = 0;
        for (int i = 0; i < ns; i++) {
            AccPoly d;
            if (ac_padd(&d, &(AccPoly){0}, &dlt->c0, sign) && ac_padd(&d, &d, &spans[i], -1) && ac_padd(&d, &d, &one, -1))
                alts[na++] = d;
        }
        AccCond c = {0};
        if (na && access_add_clause(&D, &c, alts, na)) {
            if (c.n == 0)
                return access_res(ACC_PROVEN, NULL, NULL);
            if (!cond->n)
                *cond = c;
        }
    }
    if (cond->n)
        return access_res(ACC_PROVEN_IF, NULL, cond);
    int64_t dk, sk;
    if (!cx.n && !cy.n && ns == 1 && ac_pis_const(&dlt->c0, &dk) && ac_pis_const(&spans[0], &sk) &&
        access_iabs(dk) <= sk)
        return access_res(ACC_NOT_INJECTIVE, arena_printf(A->a, "the ranges overlap (%lld apart, each %lld wide)",
                                                          (long long)access_iabs(dk), (long long)sk + 1), NULL);
    return access_res(ACC_UNKNOWN, "the two ranges may overlap", NULL);
}

/* ------------------------------------------------------------------ */
/* Program-private footprints                                          */
/* ------------------------------------------------------------------ */

/* One access of a footprint: its offset (base removed), constraints and
 * tile shape. */
typedef struct PrivSite {
    const AcForm *f;
    Cons cs;
    Cons fcs; /* the constraints as the site has them (before rev_negative), for facts */
    int32_t *shape;
    int rank;
} PrivSite;

static uint64_t var_deps(const Access *A, int v) { return v < V_DYN ? (uint64_t)1 << v : A->vars.v[v].dep; }

/* Appends the clauses of x to c (without duplicates); false when full. */
bool access_cond_merge(AccCond *c, const AccCond *x)
{
    for (int i = 0; i < x->n; i++) {
        bool dup = false;
        for (int j = 0; j < c->n && !dup; j++) {
            dup = c->c[j].n == x->c[i].n;
            for (int k = 0; dup && k < x->c[i].n; k++)
                dup = ac_peq(&c->c[j].p[k], &x->c[i].p[k]);
        }
        if (dup)
            continue;
        if (c->n == ACC_NCLAUSE)
            return false;
        c->c[c->n++] = x->c[i];
    }
    return true;
}

/* Is var v in every site with the coefficient it has in site 0? */
static bool var_common(const PrivSite *ps, int n, int v)
{
    const AccPoly *c0 = ac_fcoef((AcForm *)ps[0].f, v);
    for (int i = 1; c0 && i < n; i++) {
        const AccPoly *c = ac_fcoef((AcForm *)ps[i].f, v);
        if (!c || !ac_peq(c, c0))
            return false;
    }
    return c0 != NULL;
}

/* Does any constraint of cs or any other term of f involve var v? */
static bool var_tied(Access *A, const AcForm *f, const Cons *cs, int v)
{
    for (int i = 0; i < cs->n; i++)
        for (int t = 0; t < cs->v[i]->nt; t++)
            if (var_deps(A, cs->v[i]->t[t].var) & var_deps(A, v))
                return true;
    for (int t = 0; t < f->nt; t++)
        if (f->t[t].var != v && (var_deps(A, f->t[t].var) & var_deps(A, v)))
            return true;
    return false;
}

/* A sound witness: in one site, pid k (constant coefficient a) and a lane
 * (constant b, extent known) nothing else involves, whose shifts cancel. */
static const char *priv_witness(Access *A, const PrivSite *s, uint64_t outer)
{
    const AcForm *f = s->f;
    for (int i = 0; i < f->nt; i++) {
        int u = f->t[i].var;
        int64_t a, b;
        if (u >= V_LANE || !(outer >> u & 1) || !ac_pis_const(&f->t[i].c, &a) || !a || var_tied(A, f, &s->cs, u))
            continue;
        for (int j = 0; j < f->nt; j++) {
            int w = f->t[j].var;
            if (w < V_LANE || w >= V_DYN || w - V_LANE >= s->rank || !ac_pis_const(&f->t[j].c, &b) || !b ||
                var_tied(A, f, &s->cs, w))
                continue;
            int64_t g = access_gcd64(access_iabs(a), access_iabs(b)), du = access_iabs(b) / g, dw = access_iabs(a) / g;
            if (s->shape[w - V_LANE] - 1 >= dw)
                return arena_printf(A->a, "programs pid%d = p and p + %lld touch the same element (lane%d "
                                          "shifted by %lld; given enough programs)",
                                    u, (long long)du, w - V_LANE, (long long)dw);
        }
    }
    return NULL;
}

/* The sites with each loop counter that is not recovered (it does not
 * depend on the pids of `outer`) and has a negative coefficient (a loop
 * walking a row backwards: `prev - 16 * t`) replaced by max - t', in the
 * form and the constraints: the same elements, every coefficient of the
 * per-program part >= 0, as the chain needs.  Counters without a known
 * largest value stay. */
static PrivSite *rev_negative(Access *A, PrivSite *ps, int n, uint64_t outer)
{
    PrivSite *r = arena_alloc(A->a, sizeof *r * (size_t)n);
    for (int i = 0; i < n; i++) {
        r[i] = ps[i];
        Dec D = {A, ps[i].f, &ps[i].cs, ac_base_facts(A), 0, {0}, {{0}}, ps[i].shape, ps[i].rank, 0, {0}};
        ac_add_facts(A, &ps[i].fcs, &D.F);
        for (int t = 0; t < ps[i].f->nt; t++) {
            int v = ps[i].f->t[t].var;
            const AcVar *x = &A->vars.v[v];
            AccPoly neg, nm1, mx, one = ac_pconst(1);
            if (v < V_DYN || x->kind != VK_LOOP || x->rev || (var_deps(A, v) & outer) ||
                !ac_padd(&neg, &(AccPoly){0}, &ps[i].f->t[t].c, -1) || !ac_padd(&nm1, &neg, &one, -1) ||
                access_ptruth(&D.F, &nm1) != 1 || !access_var_max(&D, v, &mx))
                continue;
            int nv = ac_var_rev(A, v, &mx);
            if (nv < 0)
                continue;
            const AcForm *f = ac_fsubst_rev(A, r[i].f, v, nv, &mx);
            Cons cs = {0};
            bool ok = !f->why;
            for (int k = 0; k < r[i].cs.n && ok; k++) {
                const AcForm *c = ac_fsubst_rev(A, r[i].cs.v[k], v, nv, &mx);
                ok = !c->why;
                vec_push(A->a, cs, c);
            }
            if (!ok)
                continue;
            r[i].f = f;
            r[i].cs = cs;
        }
    }
    return r;
}

static AccResult priv_core(Access *A, PrivSite *ps, int n, uint64_t outer, int depth);

/* Can pid k be recovered from the variables the chain recovers (up)?
 * Directly, or from a pair e // d, e % d (which gives e) when e alone
 * determines the program (a sub-problem, whose condition goes to extra). */
static AccResult priv_recover(Access *A, PrivSite *ps, int n, const int *up, int nu, int k, AccCond *extra,
                              int depth)
{
    AccPoly one = ac_pconst(1);
    for (int i = 0; i < nu; i++)
        if (up[i] == k)
            return access_res(ACC_PROVEN, NULL, NULL);
    for (int i = 0; i < nu; i++) {
        const AcVar *x = &A->vars.v[up[i]];
        if (up[i] < V_DYN || x->kind != VK_DIV || !(ac_fdeps(A, x->e) >> k & 1))
            continue;
        for (int j = 0; j < nu; j++) {
            const AcVar *y = &A->vars.v[up[j]];
            if (up[j] < V_DYN || y->kind != VK_MOD || !ac_feq(x->e, y->e) || !ac_peq(&x->d, &y->d) ||
                x->swz != y->swz)
                continue;
            PrivSite *sub = arena_alloc(A->a, sizeof *sub * (size_t)n);
            for (int s = 0; s < n; s++) {
                sub[s] = ps[s];
                sub[s].f = x->e;
            }
            AccResult r = priv_core(A, sub, n, (uint64_t)1 << k, depth + 1);
            if (r.v == ACC_PROVEN_IF && !access_cond_merge(extra, r.cond))
                return access_res(ACC_UNKNOWN, "the condition is too long", NULL);
            if (r.v == ACC_PROVEN || r.v == ACC_PROVEN_IF)
                return access_res(ACC_PROVEN, NULL, NULL);
        }
    }
    for (int i = 0; i < nu; i++) { /* pid // d or pid % d alone, d constant: a witness */
        const AcVar *x = &A->vars.v[up[i]];
        int64_t d;
        const AccPoly *c1 = up[i] >= V_DYN && x->kind != VK_LOOP ? ac_fcoef((AcForm *)x->e, k) : NULL;
        if (!c1 || x->e->nt != 1 || !ac_peq(c1, &one) || !ac_pis_const(&x->d, &d) || d < 2)
            continue;
        return access_res(ACC_NOT_INJECTIVE,
                          x->kind == VK_DIV
                       ? arena_printf(A->a, "programs pid%d = 0 and pid%d = 1 touch the same elements (the "
                                            "address depends on it only through '// %lld')",
                                      k, k, (long long)d)
                       : arena_printf(A->a, "programs pid%d = 0 and pid%d = %lld touch the same elements (the "
                                            "address depends on it only modulo %lld; given enough programs)",
                                      k, k, (long long)d, (long long)d),
                   NULL);
    }
    return access_res(ACC_UNKNOWN,
                      arena_printf(A->a, "the address depends on pid%d only through '//' or '%%' kad cannot invert", k),
                      NULL);
}

/* The footprints of programs differing in a pid of `outer` (var bits) are
 * disjoint: every variable depending on those pids is recovered by a
 * dominance access_chain (the "up" variables, common to every site with equal
 * coefficients), below which each site's other variables and its constant
 * offset form a bounded per-program part that need not be recovered. */
static AccResult priv_core(Access *A, PrivSite *ps, int n, uint64_t outer, int depth)
{
    if (depth > 3)
        return access_res(ACC_UNKNOWN, "'//' and '%' nested too deeply", NULL);
    AccCond extra = {0};
    Dec D0 = {A, ps[0].f, &ps[0].cs, ac_base_facts(A), 0, {0}, {{0}}, ps[0].shape, ps[0].rank, 0, {0}};
    AccPoly one = ac_pconst(1);
    ps = rev_negative(A, ps, n, outer);
    /* the sites' offsets relative to the lowest one's (site L): d_i - d_L >=
     * 0 on site i's domain, statically, else a clause of the condition */
    AccPoly *off = arena_alloc(A->a, sizeof *off * (size_t)n);
    for (int i = 0; i < n; i++)
        if (!ac_padd(&off[i], &ps[i].f->c0, &ps[0].f->c0, -1))
            return access_res(ACC_UNKNOWN, ac_too_big, NULL);
    int low = -1;
    /* pass 0: statically; 1: with clauses whose symbolic monomials are all
     * positive (likely to hold: 16*%num_steps >= 16); 2: any clauses */
    for (int pass = 0; pass < 3 && low < 0; pass++)
        for (int L = 0; L < n && low < 0; L++) {
            bool ok = true;
            AccCond c = {0};
            for (int i = 0; i < n && ok; i++) {
                AccPoly d;
                Facts F = ac_base_facts(A);
                ac_add_facts(A, &ps[i].fcs, &F);
                int t = ac_padd(&d, &off[i], &off[L], -1) ? access_ptruth(&F, &d) : 0;
                bool likely = pass == 2;
                for (int k = 0; k < d.n && !likely; k++)
                    likely = d.m[k].s[0] != 0;
                for (int k = 0; k < d.n && likely && pass == 1; k++)
                    likely = !d.m[k].s[0] || d.m[k].k > 0;
                ok = t == 1 || (pass > 0 && likely && t == -1 && access_add_clause(&D0, &c, &d, 1));
            }
            if (ok && (!c.n || access_cond_merge(&extra, &c)))
                low = L;
        }
    if (low < 0)
        return access_res(ACC_UNKNOWN, "the sites' offsets differ by an amount kad cannot order", NULL);
    for (int i = 0; i < n; i++)
        if (i != low)
            ac_padd(&off[i], &off[i], &off[low], -1);
    off[low] = ac_pconst(0);
    int up[AC_NTERM], nu = 0, com[AC_NTERM], nc = 0;
    for (int i = 0; i < n; i++)
        for (int t = 0; t < ps[i].f->nt; t++) {
            int v = ps[i].f->t[t].var;
            if (v >= V_DYN && A->vars.v[v].kind != VK_LOOP) { /* divisors must be >= 1 */
                AccPoly dm1;
                if (!ac_padd(&dm1, &A->vars.v[v].d, &one, -1) || !access_add_clause(&D0, &extra, &dm1, 1))
                    return access_res(ACC_UNKNOWN, "a divisor that may be < 1", NULL);
            }
            bool common = var_common(ps, n, v), seen = false;
            for (int j = 0; j < nu; j++)
                seen |= up[j] == v;
            for (int j = 0; j < nc; j++)
                seen |= com[j] == v;
            if (seen)
                continue;
            if (var_deps(A, v) & outer) {
                if (!common)
                    return access_res(ACC_UNKNOWN, "the sites place the programs differently", NULL);
                up[nu++] = v;
            } else if (common && i == 0) {
                com[nc++] = v;
            }
        }
    for (int k = 0; k < V_LANE; k++) {
        if (!(outer >> k & 1))
            continue;
        bool dep = false;
        for (int i = 0; i < nu; i++)
            dep |= var_deps(A, up[i]) >> k & 1;
        if (!dep)
            return access_res(ACC_NOT_INJECTIVE,
                              arena_printf(A->a, "the address does not depend on pid%d: the programs along axis %d "
                                          "touch the same elements (when tl.num_programs(%d) > 1)",
                                    k, k, k),
                       NULL);
    }
    for (int i = 0; i < n; i++) {
        const char *w = priv_witness(A, &ps[i], outer);
        if (w)
            return access_res(ACC_NOT_INJECTIVE, w, NULL);
    }
    for (int k = 0; k < V_LANE; k++) {
        if (!(outer >> k & 1))
            continue;
        AccResult r = priv_recover(A, ps, n, up, nu, k, &extra, depth);
        if (r.v != ACC_PROVEN)
            return r;
    }
    /* the chain: per site, its other variables (not recovered) first, then
     * the up variables in some order; subsets of the common variables may
     * join the up ones (a tile's row lane above its column block).  The
     * first try is decide's heuristic order over site 0 (whose condition
     * wins over others'), then every subset and order. */
    AccCond best = {0}, first = {0};
    bool have = false;
    int budget = 20000;
    int hord[AC_NTERM], hn = 0;
    unsigned hsel = 0;
    bool hok = true;
    {
        const AcForm *f = ps[0].f;
        const Cons *cs = &ps[0].cs;
        int64_t key[AC_NTERM];
        for (int i = 0; i < f->nt; i++) {
            int v = f->t[i].var, assoc = v >= V_LANE && v < V_DYN ? v - V_LANE : -1;
            for (int c = 0; c < cs->n && assoc < 0; c++)
                if (ac_fcoef((AcForm *)cs->v[c], v))
                    for (int k = KAD_MAX_RANK - 1; k >= 0 && assoc < 0; k--)
                        if (ac_fcoef((AcForm *)cs->v[c], V_LANE + k))
                            assoc = k;
            int at = hn++;
            int64_t kk = (int64_t)(4 - assoc) * 100000000 + access_coef_rank(&f->t[i].c);
            while (at > 0 && key[at - 1] > kk) {
                hord[at] = hord[at - 1];
                key[at] = key[at - 1];
                at--;
            }
            hord[at] = v;
            key[at] = kk;
        }
        bool above = false;
        for (int i = 0; i < hn && hok; i++) {
            bool is_up = false;
            for (int j = 0; j < nu; j++)
                is_up |= up[j] == hord[i];
            above |= is_up;
            if (!above || is_up)
                continue;
            hok = false;
            for (int j = 0; j < nc; j++)
                if (com[j] == hord[i]) {
                    hsel |= 1u << j;
                    hok = true;
                }
        }
    }
    for (int size = hok ? -1 : 0; size <= nc; size++)
        for (unsigned sel = 0; sel < 1u << nc; sel++) {
            int bits = 0;
            for (int i = 0; i < nc; i++)
                bits += sel >> i & 1;
            if (size < 0 ? sel : bits != size)
                continue;
            if (size < 0)
                sel = hsel;
            int uv[AC_NTERM], nuv = 0;
            for (int i = 0; i < hn; i++) { /* in the heuristic order */
                bool in = false;
                for (int j = 0; j < nu; j++)
                    in |= up[j] == hord[i];
                for (int j = 0; j < nc; j++)
                    in |= com[j] == hord[i] && (sel >> j & 1);
                if (in)
                    uv[nuv++] = hord[i];
            }
            if (nuv > 6)
                continue;
            int perm[AC_NTERM];
            for (int i = 0; i < nuv; i++)
                perm[i] = i;
            do {
                if (--budget < 0)
                    goto done;
                AccCond c = {0};
                bool ok = true;
                for (int s = 0; s < n && ok; s++) {
                    const AcForm *f = ps[s].f;
                    Dec D = {A, f, &ps[s].cs, ac_base_facts(A), 0, {0}, {{0}}, ps[s].shape, ps[s].rank, 0,
                             off[s]};
                    ac_add_facts(A, &ps[s].fcs, &D.F);
                    access_facts_of_cond(&D.F, &extra);
                    for (int t = 0; t < f->nt; t++) { /* the others, small coefficients first */
                        bool in_up = false;
                        for (int j = 0; j < nuv; j++)
                            in_up |= uv[j] == f->t[t].var;
                        if (in_up)
                            continue;
                        int at = D.n++;
                        while (at > 0 && access_coef_rank(&D.coef[at - 1]) > access_coef_rank(&f->t[t].c)) {
                            D.var[at] = D.var[at - 1];
                            D.coef[at] = D.coef[at - 1];
                            at--;
                        }
                        D.var[at] = f->t[t].var;
                        D.coef[at] = f->t[t].c;
                    }
                    D.nskip = D.n;
                    for (int j = 0; j < nuv; j++) {
                        D.var[D.n] = uv[perm[j]];
                        D.coef[D.n] = *ac_fcoef((AcForm *)f, uv[perm[j]]);
                        D.n++;
                    }
                    int ord[AC_NTERM];
                    for (int j = 0; j < D.n; j++)
                        ord[j] = j;
                    AccCond cs;
                    ok = access_chain(&D, ord, &cs) && access_cond_merge(&c, &cs);
                }
                if (!ok || access_cond_unsat(&c))
                    continue;
                if (c.n == 0)
                    return extra.n ? access_res(ACC_PROVEN_IF, NULL, access_cond_join(A, &extra, NULL))
                                   : access_res(ACC_PROVEN, NULL, NULL);
                if (!have) {
                    best = first = c;
                    have = true;
                } else if (size < 0 && access_cond_weight(&c) < 1000) {
                    access_cond_or(&best, &c, &best); /* kept alone when the disjunction does not fit */
                }
                /* when its first order gives a condition, the heuristic selection
                 * tries every order of its up variables (up to three: the grid's
                 * axes), their conditions joined by `or` (but for ones that hold
                 * only on degenerate launches): which axis has the larger stride
                 * is the launch's matter, not the order the kernel numbers its
                 * axes in */
            } while ((size >= 0 || (have && nuv <= 3 && !A->priv_one_order)) && access_next_perm(perm, nuv));
            if (size < 0)
                break;
        }
done:
    if (!have)
        return access_res(ACC_UNKNOWN, "no order of the terms separates the programs' elements (their extents are "
                                "unknown, or some coefficient is too small)", NULL);
    const AccCond *c = access_cond_join(A, &extra, &best);
    if (!c) /* the disjunction too long with the divisors' clauses: the first order's alone */
        c = access_cond_join(A, &extra, &first);
    return c ? access_res(ACC_PROVEN_IF, NULL, c) : access_res(ACC_UNKNOWN, "the condition is too long", NULL);
}

AccResult access_private(Access *A, const Inst *const *mems, int n, unsigned axes)
{
    axes &= 7;
    if (n <= 0 || !axes)
        return access_res(ACC_PROVEN, NULL, NULL);
    PrivSite *ps = arena_alloc(A->a, sizeof *ps * (size_t)n);
    int base = 0;
    uint64_t dep = 0;
    for (int i = 0; i < n; i++) {
        AcSite *s = ac_site_of(A, mems[i]);
        if (!s)
            return access_res(ACC_UNKNOWN, "not a memory access", NULL);
        const AcForm *f = ac_site_form(A, s);
        if (f->why)
            return access_res(ACC_UNKNOWN, f->why, NULL);
        if (i && f->base != base)
            return access_res(ACC_UNKNOWN, "the accesses go through different parameters", NULL);
        base = f->base;
        for (int t = -1; t < f->nt; t++) { /* symbols must be fixed by the launch */
            const AccPoly *p = t < 0 ? &f->c0 : &f->t[t].c;
            for (int k = 0; k < p->n; k++)
                for (int y = 0; y < ACC_NSYM && p->m[k].s[y]; y++)
                    if (A->syms.v[p->m[k].s[y] - 1].dep)
                        return access_res(ACC_UNKNOWN,
                                          arena_printf(A->a, "the offset depends on '%s', which kad cannot express",
                                                ac_vname(A, A->syms.v[p->m[k].s[y] - 1].v)),
                                   NULL);
        }
        AcForm *u = ac_fnew(A);
        *u = *f;
        u->base = 0;
        Type t = ac_vty(A, mems[i]->args[0]);
        ps[i].f = u;
        ps[i].cs = ps[i].fcs = ac_site_cons(A, s);
        ps[i].rank = t.rank;
        ps[i].shape = arena_alloc(A->a, sizeof(int32_t) * KAD_MAX_RANK);
        memcpy(ps[i].shape, t.shape, sizeof(int32_t) * (size_t)t.rank);
        dep |= ac_fdeps(A, u);
    }
    /* an axis the kernel never reads: private only on a grid of one program there */
    AccCond extra = {0};
    Dec D0 = {A, ps[0].f, &ps[0].cs, ac_base_facts(A), 0, {0}, {{0}}, ps[0].shape, ps[0].rank, 0, {0}};
    uint64_t outer = 0;
    for (int k = 0; k < V_LANE; k++) {
        if (!(axes >> k & 1))
            continue;
        if (!(A->pid_axes >> k & 1) && !(dep >> k & 1)) {
            AccPoly c = ac_pconst(1), np = ac_psym(ac_sym_intern(A, SYM_NPROG, 0, k, 0));
            if (!ac_padd(&c, &c, &np, -1) || !access_add_clause(&D0, &extra, &c, 1))
                return access_res(ACC_UNKNOWN, ac_too_big, NULL);
            continue;
        }
        outer |= (uint64_t)1 << k;
    }
    AccResult r = outer ? priv_core(A, ps, n, outer, 0) : access_res(ACC_PROVEN, NULL, NULL);
    if (r.v == ACC_UNKNOWN && outer && !A->priv_one_order) { /* the first orders alone (access_cond_or) */
        A->priv_one_order = true;
        r = priv_core(A, ps, n, outer, 0);
        A->priv_one_order = false;
    }
    if (!extra.n || (r.v != ACC_PROVEN && r.v != ACC_PROVEN_IF))
        return r;
    const AccCond *c = access_cond_join(A, &extra, r.cond);
    if (!c && outer && !A->priv_one_order) {
        A->priv_one_order = true;
        r = priv_core(A, ps, n, outer, 0);
        A->priv_one_order = false;
        if (r.v != ACC_PROVEN && r.v != ACC_PROVEN_IF)
            return r;
        c = access_cond_join(A, &extra, r.cond);
    }
    return c ? access_res(ACC_PROVEN_IF, NULL, c) : access_res(ACC_UNKNOWN, "the condition is too long", NULL);
}

AccResult access_disjoint_all(Access *A, const Inst *x, const Inst *y)
{
    AcSite *sx = ac_site_of(A, x), *sy = ac_site_of(A, y);
    if (!sx || !sy)
        return access_res(ACC_UNKNOWN, "not a memory access", NULL);
    const AcForm *fx = ac_site_form(A, sx), *fy = ac_site_form(A, sy);
    if (fx->why || fy->why)
        return access_res(ACC_UNKNOWN, fx->why ? fx->why : fy->why, NULL);
    if (fx->base != fy->base)
        return access_res(ACC_PROVEN, NULL, NULL);
    if (!sx->loops && !sy->loops)
        return access_disjoint(A, x, y);
    return disjoint_ranges(A, sx, sy, 7);
}

/* p's monomials with k reduced modulo L (those that vanish dropped) into r;
 * false when r would hold a symbol that may differ between two points of one
 * program (one depending on a loop or a lane). */
static bool lane_residue(const Access *A, const AccPoly *p, int64_t L, uint64_t fixed, AccPoly *r)
{
    *r = (AccPoly){0};
    for (int k = 0; k < p->n; k++) {
        AccMono m = p->m[k];
        m.k %= L;
        if (m.k < 0) /* k = L * q + r, 0 <= r < L */
            m.k += L;
        if (!m.k)
            continue;
        for (int y = 0; y < ACC_NSYM && m.s[y]; y++)
            if (A->syms.v[m.s[y] - 1].dep & ~fixed) /* not fixed within one program */
                return false;
        if (!ac_padd_mono(r, m))
            return false;
    }
    return true;
}

bool access_lane_private(Access *A, const Inst *const *mems, int n, unsigned fixed_axes, int64_t *len)
{
    uint64_t fixed = fixed_axes & 7;
    if (n <= 0)
        return false;
    /* Each site's address as R + lane + L * Z (Z any integer: a loop's
     * counter, a symbol, a lane's `//`): R the terms whose coefficients are
     * not multiples of L, which may name only the program ids of fixed_axes
     * and symbols fixed by them, and must be the same for every site.  Two
     * accesses of one program then meet only where lane - lane' is a
     * multiple of L, so lane = lane' (0 <= lane < L). */
    int base = 0;
    int64_t L = 0;
    AccPoly R0c[AC_NTERM + 1];
    int R0v[AC_NTERM + 1], nr0 = 0;
    for (int i = 0; i < n; i++) {
        AcSite *s = ac_site_of(A, mems[i]);
        if (!s)
            return false;
        const AcForm *f = ac_site_form(A, s);
        Type t = ac_vty(A, mems[i]->args[0]);
        if (f->why || (i && f->base != base) || t.rank != 1 || t.shape[0] < 2 || (i && t.shape[0] != L))
            return false;
        base = f->base;
        L = t.shape[0];
        AccPoly Rc[AC_NTERM + 1];
        int Rv[AC_NTERM + 1], nr = 0;
        bool lane = false;
        for (int k = 0; k < f->nt; k++) {
            int v = f->t[k].var;
            int64_t one = 0;
            if (v == V_LANE) {
                if (!ac_pis_const(&f->t[k].c, &one) || one != 1)
                    return false;
                lane = true;
                continue;
            }
            if (v > V_LANE && v < V_DYN)
                return false;
            AccPoly r;
            bool pidlike = v < V_LANE ? (fixed >> v & 1) != 0
                                      : v >= V_DYN && A->vars.v[v].kind != VK_LOOP && !(A->vars.v[v].dep & ~fixed);
            if (!lane_residue(A, &f->t[k].c, L, fixed, &r) || (r.n && !pidlike))
                return false;
            if (r.n)
                Rv[nr] = v, Rc[nr++] = r;
        }
        AccPoly r0;
        if (!lane || !lane_residue(A, &f->c0, L, fixed, &r0))
            return false;
        Rv[nr] = -1, Rc[nr++] = r0;
        if (!i) {
            memcpy(R0c, Rc, sizeof Rc[0] * (size_t)nr);
            memcpy(R0v, Rv, sizeof Rv[0] * (size_t)nr);
            nr0 = nr;
            continue;
        }
        if (nr != nr0)
            return false;
        for (int k = 0; k < nr; k++)
            if (Rv[k] != R0v[k] || !ac_peq(&Rc[k], &R0c[k]))
                return false;
    }
    *len = L;
    return true;
}
