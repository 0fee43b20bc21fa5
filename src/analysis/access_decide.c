/* access_decide.c -- the access analysis's decisions over the forms
 * access.c builds, and their runtime conditions.
 *
 * Decision (access_injective): order the varied variables so that each
 * coefficient exceeds the largest span the earlier ones can cover (a
 * mixed-radix argument; the span of a group of variables is bounded by
 * their extents or by a constraint on exactly that group, as
 * `cols + BLOCK * t < N`).  Each step is a polynomial inequality; those
 * that cannot be decided statically form the runtime condition of
 * ACC_PROVEN_IF.  A pair of variables with constant coefficients that can
 * cancel (a witness), or a variable the address does not depend on, makes
 * it ACC_NOT_INJECTIVE.  Anything not expressible (data-dependent offsets,
 * products of two varying values, GROUP_M swizzles) is ACC_UNKNOWN, never
 * guessed.  The same dominance chain decides access_disjoint (two sites of
 * one buffer) and access_private (a program's footprint over all its
 * sites).  A condition prints as Python for Triton (access_cond_python) or
 * the host (access_cond_host) and evaluates for given arguments
 * (access_cond_eval, func_guards_hold); access_report is `kad access`.
 *
 * Assumptions: integer offsets do not emit_wrap (as the kernel itself assumes);
 * a symbol bounding an enabled lane from above (`cols < n`) is at least 1
 * when the domain is not empty (an empty domain is trivially injective).
 *
 * The files: this one holds the decision over one site (the chain, the
 * conditions' algebra, access_injective, access_pid_independent);
 * disjointness and private footprints are access_disjoint.c's (which
 * reuses the chain through access_int.h), the conditions printed and
 * evaluated and the report access_report.c's.
 *
 * Requires: an Access from access_analyze whose Func is unchanged.  Keeps:
 * the Func.  Guarantees: PROVEN and PROVEN_IF are proofs (under their
 * condition); anything kad cannot show is UNKNOWN.  All memory lives in
 * the Access's arena.
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "analysis/access_int.h"

/* ------------------------------------------------------------------ */
/* The decision                                                        */
/* ------------------------------------------------------------------ */

/* The largest counter t of `for iv in range(lb, ub, st)` (st > 0 a
 * constant, lb and ub polynomials over symbols fixed by the launch):
 * lb + st*t < ub gives t <= floor((ub - lb - 1) / st), which is exactly
 * (ub - lb - 1) / st when st divides every coefficient, and s + k for a
 * symbol s = x // st with ub - lb - 1 = x + k*st (floor((x + k*st)/st) =
 * floor(x/st) + k <= s + k: Triton's division truncates, which is never
 * below the floor).  On an empty loop the bound is below 0: there is no
 * iteration to bound. */
static bool loop_max(Access *A, const AccPoly *lb, const AccPoly *ub, int64_t st, AccPoly *mx)
{
    const AccPoly *ps[2] = {lb, ub};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < ps[i]->n; k++)
            for (int s = 0; s < ACC_NSYM && ps[i]->m[k].s[s]; s++)
                if (A->syms.v[ps[i]->m[k].s[s] - 1].dep)
                    return false;
    AccPoly x, one = ac_pconst(1);
    if (!ac_padd(&x, ub, lb, -1) || !ac_padd(&x, &x, &one, -1))
        return false;
    if (ac_pdiv_exact(mx, &x, st))
        return true;
    for (int id = 1; id <= A->syms.n; id++) {
        AccPoly sx, diff;
        int64_t d, k;
        if (!ac_sym_div(A, id, &sx, &d) || d != st || !ac_padd(&diff, &x, &sx, -1) || !ac_pis_const(&diff, &k) ||
            k % st)
            continue;
        AccPoly s = ac_psym(id), kk = ac_pconst(k / st);
        return ac_padd(mx, &s, &kk, 1);
    }
    return false;
}

/* The largest value of variable v, if known. */
bool access_var_max(Dec *D, int v, AccPoly *mx)
{
    Access *A = D->A;
    AccPoly one = ac_pconst(1);
    if (v < V_LANE) {
        int id = ac_sym_intern(A, SYM_NPROG, 0, v, 0);
        AccPoly np = ac_psym(id);
        if (id < 64)
            D->F.pos |= (uint64_t)1 << id;
        return ac_padd(mx, &np, &one, -1);
    }
    if (v < V_DYN) {
        *mx = ac_pconst(v - V_LANE < D->rank ? D->shape[v - V_LANE] - 1 : 0);
        return true;
    }
    const AcVar *x = &A->vars.v[v];
    if (x->has_max) {
        *mx = x->max;
        return true;
    }
    if (x->kind == VK_LOOP) {
        const Inst *loop = A->loops.v[x->loop].in;
        int64_t lb, ub, st;
        const AccPoly *p0, *p1, *p2;
        if (loop->op == OP_FOR && (p0 = ac_poly_of(A, loop->args[0])) && (p1 = ac_poly_of(A, loop->args[1])) &&
            (p2 = ac_poly_of(A, loop->args[2])) && ac_pis_const(p0, &lb) && ac_pis_const(p1, &ub) &&
            ac_pis_const(p2, &st) && st > 0) {
            int64_t trip = ub > lb ? (ub - lb + st - 1) / st : 0;
            *mx = ac_pconst(trip > 0 ? trip - 1 : 0);
            return true;
        }
        if (loop->op == OP_FOR && p0 && p1 && p2 && ac_pis_const(p2, &st) && st > 0)
            return loop_max(A, p0, p1, st, mx);
    }
    return false;
}

/* A lower bound lo >= 0 of the group value g = sum of c's coefficients
 * times the variables of G (the first k of the order), from a constraint
 * `-g + r + k0 < 0` of the site whose coefficients on G are the opposite of
 * c's and whose others are >= 0 (so g > r + k0 >= k0): lo = k0 + 1, the
 * largest such; 0 when none. */
static int64_t group_low(Dec *D, const int *ord, int k, const AcForm *c)
{
    int64_t lo = 0;
    for (int i = 0; i < D->cs->n; i++) {
        AcForm *l = (AcForm *)D->cs->v[i];
        int64_t k0;
        if (l == c || !ac_pis_const(&l->c0, &k0) || k0 + 1 <= lo)
            continue;
        bool ok = true;
        int ing = 0;
        for (int t = 0; t < l->nt && ok; t++) {
            bool in_g = false;
            for (int j = 0; j < k; j++)
                in_g |= D->var[ord[j]] == l->t[t].var;
            if (!in_g) {
                ok = ac_pnonneg(&D->F, &l->t[t].c);
                continue;
            }
            AccPoly sum;
            AccPoly *cc = ac_fcoef((AcForm *)c, l->t[t].var);
            ok = cc && ac_padd(&sum, cc, &l->t[t].c, 1) && sum.n == 0;
            ing++;
        }
        if (ok && ing == k)
            lo = k0 + 1;
    }
    return lo;
}

/* Bounds of the group G (the first k variables of the order) from
 * constraints on exactly that group: f_G = q * c_G with q >= 0. */
int access_group_alts(Dec *D, const int *ord, int k, AccPoly *out, int nout)
{
    int got = 0;
    for (int i = 0; i < D->cs->n && got < nout; i++) {
        AcForm *c = (AcForm *)D->cs->v[i];
        bool ok = true;
        /* c's variables outside G must have non-negative coefficients; those in G too */
        for (int t = 0; t < c->nt && ok; t++) {
            ok = ac_pnonneg(&D->F, &c->t[t].c);
            bool in_g = false;
            for (int j = 0; j < k; j++)
                in_g |= D->var[ord[j]] == c->t[t].var;
            (void)in_g;
        }
        if (!ok)
            continue;
        AccPoly q;
        bool have = false;
        for (int j = 0; j < k && ok; j++) {
            AccPoly *cc = ac_fcoef(c, D->var[ord[j]]);
            if (!cc) {
                ok = false;
                break;
            }
            int64_t ck;
            if (!have && ac_pis_const(cc, &ck) && ck > 0) {
                have = ac_pdiv_exact(&q, &D->coef[ord[j]], ck);
                if (!have)
                    ok = false;
            }
        }
        if (!ok || !have || !ac_pnonneg(&D->F, &q))
            continue;
        for (int j = 0; j < k && ok; j++) {
            AccPoly prod;
            ok = ac_pmul(&prod, &q, ac_fcoef(c, D->var[ord[j]])) && ac_peq(&prod, &D->coef[ord[j]]);
        }
        /* span <= q * (-c0 - 1 - lo): g = the group's value / q <= -c0 - 1 by c,
         * and g >= lo >= 0 by a constraint with the opposite coefficients */
        AccPoly b, one = ac_pconst(1), zero = {0}, low = ac_pconst(group_low(D, ord, k, c));
        if (ok && ac_padd(&b, &zero, &c->c0, -1) && ac_padd(&b, &b, &one, -1) && ac_padd(&b, &b, &low, -1) &&
            ac_pmul(&b, &b, &q))
            out[got++] = b;
    }
    return got;
}

/* Static truth of p >= 0: 1 true, 0 false (a negative constant), -1 unknown. */
int access_ptruth(const Facts *F, const AccPoly *p)
{
    int64_t k;
    if (ac_pis_const(p, &k))
        return k >= 0;
    return ac_pnonneg(F, p) ? 1 : -1;
}

/* Adds clause (one of alts >= 0) to cond; returns 0 when it is false. */
/* c*s + k0 >= 0 with s = x // d, c > 0 and K = ceil(-k0 / c) >= 1 is
 * s >= K, that is x >= K*d (Triton's truncation included): the same
 * condition without the division (`16*%num_steps >= 16` is `N >= 1`). */
static AccPoly undiv(Access *A, const AccPoly *p)
{
    int s = 0;
    int64_t c = 0, k0 = 0, d;
    AccPoly x;
    for (int i = 0; i < p->n; i++) {
        if (!p->m[i].s[0])
            k0 = p->m[i].k;
        else if (!s && !p->m[i].s[1] && p->m[i].k > 0)
            s = p->m[i].s[0], c = p->m[i].k;
        else
            return *p;
    }
    if (!s)
        return *p;
    int64_t K = -k0 > 0 ? (-k0 + c - 1) / c : 0;
    AccPoly r, kd;
    if (K < 1 || !ac_sym_div(A, s, &x, &d) || !ac_in_limit(K * d))
        return *p;
    kd = ac_pconst(-K * d);
    return ac_padd(&r, &x, &kd, 1) ? r : *p;
}

int access_add_clause(Dec *D, AccCond *cond, const AccPoly *alts, int n)
{
    AccClause c = {0};
    for (int i = 0; i < n; i++) {
        int t = access_ptruth(&D->F, &alts[i]);
        if (t == 1)
            return 1;
        if (t == -1 && c.n < ACC_NALT)
            c.p[c.n++] = alts[i];
    }
    if (!c.n)
        return 0;
    for (int i = 0; i < cond->n; i++) /* no duplicates */
        if (cond->c[i].n == c.n && ac_peq(&cond->c[i].p[0], &c.p[0]))
            return 1;
    if (cond->n == ACC_NCLAUSE)
        return 0;
    cond->c[cond->n++] = c;
    return 1;
}

/* The facts a condition's one-alternative clauses `s - k >= 0` (k >= 1,
 * s one symbol) give: s >= 1.  A decision whose result requires those
 * clauses anyway (divisors >= 1) may assume them in every order. */
void access_facts_of_cond(Facts *F, const AccCond *c)
{
    for (int i = 0; i < c->n; i++) {
        const AccPoly *p = &c->c[i].p[0];
        if (c->c[i].n != 1)
            continue;
        int sym = 0;
        bool ok = true;
        for (int k = 0; k < p->n && ok; k++) {
            const AccMono *m = &p->m[k];
            if (!m->s[0])
                ok = m->k <= -1;
            else if (m->k == 1 && !m->s[1] && !sym)
                sym = m->s[0];
            else
                ok = false;
        }
        if (ok && sym && sym < 64)
            F->pos |= (uint64_t)1 << sym;
    }
}

/* The dominance chain for one order: *cond gets the undecided clauses.
 * Returns false when some clause is false (or not expressible). */
#define NSPAN 12

/* Keeps the alternatives no other one is statically below (dropping
 * duplicates): the span is their minimum. */
static int prune(const Facts *F, AccPoly *sp, int n)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        bool drop = false;
        for (int j = 0; j < n && !drop; j++) {
            if (j == i)
                continue;
            AccPoly d;
            if (!ac_padd(&d, &sp[i], &sp[j], -1) || access_ptruth(F, &d) != 1)
                continue; /* sp[i] >= sp[j]: drop i, unless equal and i comes first */
            drop = !(ac_peq(&sp[i], &sp[j]) && i < j);
        }
        if (!drop)
            sp[m++] = sp[i];
    }
    return m;
}

bool access_chain(Dec *D, const int *ord, AccCond *cond)
{
    AccPoly span[NSPAN];
    int ns = 1;
    span[0] = D->init;
    /* hist[j]: the spans of the first j variables (a group ord[j..k] that
     * a constraint bounds adds its bound to them) */
    AccPoly hist[AC_NTERM + 1][NSPAN];
    int nh[AC_NTERM + 1] = {1};
    hist[0][0] = D->init;
    cond->n = 0;
    AccPoly one = ac_pconst(1);
    Facts saved = D->F;
    bool ok = true;
    for (int k = 0; k < D->n && ok; k++) {
        const AccPoly *a = &D->coef[ord[k]];
        AccPoly am1, neg, nm1;
        /* a recovered variable with a negative coefficient (a loop walking
         * down) separates like one with |a|: its spans are |a| * extent
         * (group bounds from constraints need coefficients >= 0) */
        if (k >= D->nskip && ac_padd(&neg, &(AccPoly){0}, a, -1) && ac_padd(&nm1, &neg, &one, -1) &&
            access_ptruth(&D->F, &nm1) == 1)
            a = &neg;
        /* a variable that need not be recovered needs a >= 0 only (its span
         * starts at 0); the others a >= 1 */
        if (!ac_padd(&am1, a, &one, k < D->nskip ? 0 : -1) || !access_add_clause(D, cond, &am1, 1)) {
            ok = false;
            break;
        }
        /* the condition requires a >= 1: later steps may assume it */
        if (k >= D->nskip && a->n == 1 && a->m[0].k > 0 && a->m[0].s[0] && !a->m[0].s[1] && a->m[0].s[0] < 64)
            D->F.pos |= (uint64_t)1 << a->m[0].s[0];
        if (k >= D->nskip && (k > 0 || D->init.n)) {
            AccPoly alts[NSPAN];
            int na = 0;
            for (int s = 0; s < ns && na < ACC_NALT; s++)
                if (ac_padd(&alts[na], &am1, &span[s], -1))
                    na++;
            if (!na || !access_add_clause(D, cond, alts, na)) {
                ok = false;
                break;
            }
        }
        /* the span of the first k+1 variables */
        AccPoly ext[ACC_NALT + 1]; /* spans of a * v alone */
        int ne = 0, order[1] = {ord[k]};
        AccPoly mx;
        if (access_var_max(D, D->var[ord[k]], &mx) && ac_pmul(&ext[ne], a, &mx))
            ne++;
        ne += access_group_alts(D, order, 1, &ext[ne], ACC_NALT);
        AccPoly nspan[NSPAN];
        int nn = k > 0 ? access_group_alts(D, ord, k + 1, nspan, ACC_NALT) : 0;
        for (int s = 0; s < ns; s++)
            for (int e = 0; e < ne && nn < NSPAN; e++)
                if (ac_padd(&nspan[nn], &span[s], &ext[e], 1))
                    nn++;
        /* a group ord[j..k] of two or more variables bounded by one
         * constraint (a chunk loop's counter and the lanes under the mask
         * `m0 + lanes < M`): the first j variables' span plus its bound */
        for (int j = 1; j < k && k < AC_NTERM; j++) {
            AccPoly g[ACC_NALT];
            int ng = access_group_alts(D, ord + j, k - j + 1, g, ACC_NALT);
            for (int s = 0; s < nh[j]; s++)
                for (int e = 0; e < ng && nn < NSPAN; e++)
                    if (ac_padd(&nspan[nn], &hist[j][s], &g[e], 1))
                        nn++;
        }
        nn = prune(&D->F, nspan, nn);
        if (!nn && k + 1 < D->n) {
            ok = false; /* an unbounded variable below others */
            break;
        }
        memcpy(span, nspan, sizeof span[0] * (size_t)nn);
        ns = nn;
        if (k + 1 <= AC_NTERM) {
            memcpy(hist[k + 1], nspan, sizeof nspan[0] * (size_t)nn);
            nh[k + 1] = nn;
        }
    }
    D->F = saved;
    return ok;
}

int access_coef_rank(const AccPoly *p)
{
    int deg = 0;
    int64_t mag = 0;
    for (int i = 0; i < p->n; i++) {
        int d = 0;
        while (d < ACC_NSYM && p->m[i].s[d])
            d++;
        if (d > deg)
            deg = d;
        int64_t k = p->m[i].k < 0 ? -p->m[i].k : p->m[i].k;
        if (k > mag)
            mag = k;
    }
    return deg * 1000000 + (int)(mag > 999999 ? 999999 : mag);
}

bool access_next_perm(int *a, int n)
{
    int i = n - 2;
    while (i >= 0 && a[i] >= a[i + 1])
        i--;
    if (i < 0)
        return false;
    int j = n - 1;
    while (a[j] <= a[i])
        j--;
    int t = a[i];
    a[i] = a[j];
    a[j] = t;
    for (int l = i + 1, r = n - 1; l < r; l++, r--) {
        t = a[l];
        a[l] = a[r];
        a[r] = t;
    }
    return true;
}

int64_t access_iabs(int64_t x) { return x < 0 ? -x : x; }

int64_t access_gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* p without its constant term, and that constant. */
static void split_const(const AccPoly *p, AccPoly *rest, int64_t *k)
{
    rest->n = 0;
    *k = 0;
    for (int i = 0; i < p->n; i++) {
        if (p->m[i].s[0])
            rest->m[rest->n++] = p->m[i];
        else
            *k += p->m[i].k;
    }
}

/* Does clause x imply clause y?  When each alternative `q + k >= 0` of x
 * implies one of y: one with the same non-constant part q and a constant
 * at least k. */
bool access_clause_implies(const AccClause *x, const AccClause *y)
{
    for (int i = 0; i < x->n; i++) {
        AccPoly qx, qy;
        int64_t kx, ky;
        split_const(&x->p[i], &qx, &kx);
        bool some = false;
        for (int j = 0; j < y->n && !some; j++) {
            split_const(&y->p[j], &qy, &ky);
            some = ac_peq(&qx, &qy) && ky >= kx;
        }
        if (!some)
            return false;
    }
    return true;
}

/* Drops, in place and keeping the order, the clauses of v[0..*n) another
 * one implies (access_clause_implies; of equivalent ones, the first stays). */
void access_drop_implied(AccClause *v, int *n)
{
    int m = 0;
    for (int j = 0; j < *n; j++) {
        bool implied = false;
        for (int i = 0; i < *n && !implied; i++)
            implied = i != j && access_clause_implies(&v[i], &v[j]) && (i < j || !access_clause_implies(&v[j], &v[i]));
        if (!implied)
            v[m++] = v[j];
    }
    *n = m;
}

/* Drops the clauses another clause implies: of `stride >= 1 and stride >=
 * 16`, `stride >= 16` stays; of `(s >= W + 1 or s >= n) and (s >= W or s
 * >= n)`, the first.  The condition means the same. */
static void cond_tighten(AccCond *c) { access_drop_implied(c->c, &c->n); }

/* x and y (NULL: none) as one condition in the arena. */
const AccCond *access_cond_join(Access *A, const AccCond *x, const AccCond *y)
{
    AccCond *c = arena_alloc(A->a, sizeof *c);
    *c = *x;
    for (int i = 0; y && i < y->n; i++) {
        if (c->n == ACC_NCLAUSE)
            return NULL;
        c->c[c->n++] = y->c[i];
    }
    for (int i = 0; i < c->n; i++) /* the same condition without divisions where exact */
        for (int j = 0; j < c->c[i].n; j++)
            c->c[i].p[j] = undiv(A, &c->c[i].p[j]);
    cond_tighten(c);
    return c;
}

AccResult access_res(AccVerdict v, const char *why, const AccCond *c) { return (AccResult){v, why, c}; }

/* x or y as one conjunction (distributed: every clause of x joined with
 * every clause of y), in *out; false when it does not fit (a clause of
 * more than ACC_NALT alternatives, more than ACC_NCLAUSE clauses), and
 * then *out is unchanged.  Of two alternatives with the same non-constant
 * part the weaker (larger constant) stays: `s - 1 >= 0 or s - 8 >= 0` is
 * `s >= 1`.  Two orders' conditions each suffice, so their disjunction
 * does: the launch passes when either nesting of the strides holds. */
bool access_cond_or(const AccCond *x, const AccCond *y, AccCond *out)
{
    AccClause v[ACC_NCLAUSE * ACC_NCLAUSE];
    int nv = 0;
    for (int i = 0; i < x->n; i++)
        for (int j = 0; j < y->n; j++) {
            AccClause c = x->c[i];
            for (int k = 0; k < y->c[j].n; k++) {
                AccPoly q, qk;
                int64_t kk, kq;
                split_const(&y->c[j].p[k], &qk, &kk);
                bool merged = false;
                for (int a = 0; a < c.n && !merged; a++) {
                    split_const(&c.p[a], &q, &kq);
                    if (ac_peq(&q, &qk)) {
                        if (kk > kq)
                            c.p[a] = y->c[j].p[k];
                        merged = true;
                    }
                }
                if (!merged) {
                    if (c.n == ACC_NALT)
                        return false;
                    c.p[c.n++] = y->c[j].p[k];
                }
            }
            v[nv++] = c;
        }
    access_drop_implied(v, &nv);
    if (nv > ACC_NCLAUSE)
        return false;
    out->n = nv;
    memcpy(out->c, v, sizeof v[0] * (size_t)nv);
    return true;
}

/* Whether two one-alternative clauses of c, each k*s + k0 >= 0 in one
 * symbol s, bound s from both sides with nothing between (`16*s >= 1` and
 * `0 >= 15*s`): c never holds.  An order whose condition cannot hold loses
 * to one whose condition can (every order's condition suffices). */
bool access_cond_unsat(const AccCond *c)
{
    int sym[ACC_NCLAUSE];
    int64_t k[ACC_NCLAUSE], k0[ACC_NCLAUSE];
    for (int i = 0; i < c->n; i++) {
        const AccPoly *p = &c->c[i].p[0];
        sym[i] = 0, k[i] = 0, k0[i] = 0;
        for (int m = 0; c->c[i].n == 1 && m < p->n; m++) {
            if (!p->m[m].s[0])
                k0[i] = p->m[m].k;
            else if (!p->m[m].s[1] && !sym[i])
                sym[i] = p->m[m].s[0], k[i] = p->m[m].k;
            else
                sym[i] = -1;
        }
    }
    for (int i = 0; i < c->n; i++)
        for (int j = 0; j < c->n; j++) {
            if (sym[i] <= 0 || sym[i] != sym[j] || k[i] <= 0 || k[j] >= 0)
                continue;
            /* s >= ceil(-k0i / ki) and s <= floor(k0j / -kj) */
            int64_t num = -k0[i], lo = num >= 0 ? (num + k[i] - 1) / k[i] : -((-num) / k[i]);
            int64_t den = -k[j], hi = k0[j] >= 0 ? k0[j] / den : -((-k0[j] + den - 1) / den);
            if (lo > hi)
                return true;
        }
    return false;
}

/* Whether p >= 0 fails on every launch but degenerate ones: p is
 * k1*s - k2*s*y + k0 with k2 >= k1 > 0 and k0 <= 0 (`s >= 16*nprog0*s`,
 * `s >= M*s`: true only when y <= 1 or s <= 0). */
static bool poly_degenerate(const AccPoly *p)
{
    int s = 0;
    int64_t k1 = 0, k2 = 0;
    for (int m = 0; m < p->n; m++) {
        const AccMono *x = &p->m[m];
        if (!x->s[0]) {
            if (x->k > 0)
                return false;
        } else if (!x->s[1] && x->k > 0 && !k1)
            k1 = x->k, s = x->s[0];
        else if (x->s[1] && !x->s[2] && x->k < 0 && !k2)
            k2 = -x->k;
        else
            return false;
    }
    if (!k1 || k2 < k1)
        return false;
    for (int m = 0; m < p->n; m++) /* the product holds s */
        if (p->m[m].s[1] && p->m[m].s[0] != s && p->m[m].s[1] != s)
            return false;
    return true;
}

/* How demanding c looks, for choosing among orders when the heuristic
 * order's condition cannot hold or holds only on degenerate launches: its
 * alternatives, products of symbols (`16*nprog1*stride >= ...`) counting 4,
 * a clause whose every alternative is degenerate 1000. */
int access_cond_weight(const AccCond *c)
{
    int w = 0;
    for (int i = 0; i < c->n; i++) {
        int deg = 0;
        for (int j = 0; j < c->c[i].n; j++) {
            w++;
            for (int m = 0; m < c->c[i].p[j].n; m++)
                w += c->c[i].p[j].m[m].s[0] && c->c[i].p[j].m[m].s[1] ? 4 : 0;
            deg += poly_degenerate(&c->c[i].p[j]);
        }
        w += deg == c->c[i].n ? 1000 : 0;
    }
    return w;
}

/* The decision over f with constraints cs, for the variables `vary`
 * (a mask over the original variables). */
static AccResult decide(Access *A, const AcForm *f, const Cons *cs, uint64_t vary, int32_t *shape, int rank,
                        bool skip_unused_lanes)
{
    if (f->why)
        return access_res(ACC_UNKNOWN, f->why, NULL);
    Dec D = {A, f, cs, ac_base_facts(A), 0, {0}, {{0}}, shape, rank, 0, {0}};
    ac_add_facts(A, cs, &D.F);
    /* symbols must not vary */
    for (int i = -1; i < f->nt; i++) {
        const AccPoly *p = i < 0 ? &f->c0 : &f->t[i].c;
        for (int k = 0; k < p->n; k++)
            for (int s = 0; s < ACC_NSYM && p->m[k].s[s]; s++) {
                const AcSym *y = &A->syms.v[p->m[k].s[s] - 1];
                if (y->dep & vary)
                    return access_res(ACC_UNKNOWN,
                                      arena_printf(A->a, "the offset depends on '%s', which kad cannot express",
                                            ac_vname(A, y->v)),
                               NULL);
            }
    }
    /* the varied variables of f; each original varied variable must be recoverable */
    for (int i = 0; i < f->nt; i++) {
        int v = f->t[i].var;
        uint64_t d = v < V_DYN ? (uint64_t)1 << v : A->vars.v[v].dep;
        if (!(d & vary) || v == V_HOLE)
            continue;
        D.var[D.n] = v;
        D.coef[D.n] = f->t[i].c;
        D.n++;
    }
    AccCond extra = {0}; /* clauses every order needs */
    AccPoly one = ac_pconst(1);
    for (int i = 0; i < D.n; i++) { /* divisors of fresh variables must be >= 1 */
        const AcVar *x = &A->vars.v[D.var[i]];
        AccPoly dm1;
        if (D.var[i] >= V_DYN && x->kind != VK_LOOP &&
            (!ac_padd(&dm1, &x->d, &one, -1) || !access_add_clause(&D, &extra, &dm1, 1)))
            return access_res(ACC_UNKNOWN, "a divisor that may be < 1", NULL);
    }
    for (int v = 0; v < 64; v++) {
        if (!(vary >> v & 1))
            continue;
        if (v < V_LANE && !(A->pid_axes >> v & 1) && !(ac_fdeps(A, f) >> v & 1)) {
            /* an axis the kernel never reads: injective only on a grid of one program there */
            AccPoly c = ac_pconst(1);
            AccPoly np = ac_psym(ac_sym_intern(A, SYM_NPROG, 0, v, 0));
            if (!ac_padd(&c, &c, &np, -1) || !access_add_clause(&D, &extra, &c, 1))
                return access_res(ACC_UNKNOWN, ac_too_big, NULL);
            continue;
        }
        AccPoly mx;
        int64_t mk;
        bool trivial = v >= V_LANE && v < V_DYN && access_var_max(&D, v, &mx) && ac_pis_const(&mx, &mk) && mk == 0;
        if (trivial)
            continue;
        bool direct = false, via = false, has_div = false, has_mod = false, pair = false;
        int64_t mod_d = 0;
        const AcVar *divs[AC_NTERM];
        int ndiv = 0;
        for (int i = 0; i < D.n; i++) {
            int w = D.var[i];
            if (w == v)
                direct = true;
            else if (w >= V_DYN && A->vars.v[w].kind != VK_LOOP && (A->vars.v[w].dep >> v & 1)) {
                via = true;
                const AcVar *x = &A->vars.v[w];
                AccPoly *c1 = ac_fcoef((AcForm *)x->e, v);
                bool plain = x->e->nt == 1 && c1 && ac_peq(c1, &one);
                if (plain && x->kind == VK_DIV) {
                    has_div = true;
                    divs[ndiv++] = x;
                }
                if (plain && x->kind == VK_MOD) {
                    has_mod = true;
                    if (!ac_pis_const(&x->d, &mod_d))
                        mod_d = 0;
                }
            }
        }
        /* q % d and q // d of one d give q: when q = v // d0 (a 3-D block's (tid / BX) % BY and
         * (tid / BX) / BY), q is there as if it were a term, for the pair below */
        for (int i = 0; i < D.n && has_mod && ndiv < AC_NTERM; i++) {
            const AcVar *y = D.var[i] >= V_DYN ? &A->vars.v[D.var[i]] : NULL;
            int u = y && y->kind == VK_MOD && !y->swz && y->e->nt == 1 && !y->e->base ? y->e->t[0].var : -1;
            const AcVar *q = u >= V_DYN && u < A->vars.n ? &A->vars.v[u] : NULL;
            AccPoly *cq = q && q->kind == VK_DIV && !q->swz && q->e->nt == 1 ? ac_fcoef((AcForm *)q->e, v) : NULL;
            AccPoly *cy = y && u >= 0 ? ac_fcoef((AcForm *)y->e, u) : NULL;
            if (!cq || !ac_peq(cq, &one) || !cy || !ac_peq(cy, &one))
                continue;
            for (int j = 0; j < D.n; j++) {
                const AcVar *z = D.var[j] >= V_DYN ? &A->vars.v[D.var[j]] : NULL;
                if (z && z->kind == VK_DIV && !z->swz && ac_feq(z->e, y->e) && ac_peq(&z->d, &y->d)) {
                    divs[ndiv++] = q;
                    has_div = true;
                    break;
                }
            }
        }
        /* v // d and v % d of one d (and one kind: plain or swizzled) give v */
        for (int i = 0; i < D.n && has_div && has_mod && !pair; i++) {
            const AcVar *y = D.var[i] >= V_DYN ? &A->vars.v[D.var[i]] : NULL;
            for (int j = 0; y && y->kind == VK_MOD && j < ndiv && !pair; j++)
                pair = ac_feq(divs[j]->e, y->e) && ac_peq(&divs[j]->d, &y->d) && divs[j]->swz == y->swz;
        }
        if (direct || pair)
            continue;
        /* a pair e // d, e % d gives e, which may determine v (a tile id
         * pid + nprog * t split into row and column blocks): a sub-question */
        bool paired = false;
        for (int i = 0; i < D.n && !paired && via; i++)
            for (int j = 0; j < D.n && !paired; j++) {
                const AcVar *x = &A->vars.v[D.var[i]], *y = &A->vars.v[D.var[j]];
                if (D.var[i] < V_DYN || D.var[j] < V_DYN || x->kind != VK_DIV || y->kind != VK_MOD ||
                    !ac_feq(x->e, y->e) || !ac_peq(&x->d, &y->d) || x->swz != y->swz ||
                    !(ac_fdeps(A, x->e) >> v & 1))
                    continue;
                AccResult sr = decide(A, x->e, cs, vary & ac_fdeps(A, x->e), shape, rank, skip_unused_lanes);
                if (sr.v == ACC_PROVEN_IF && !access_cond_merge(&extra, sr.cond))
                    return access_res(ACC_UNKNOWN, "the condition is too long", NULL);
                paired = sr.v == ACC_PROVEN || sr.v == ACC_PROVEN_IF;
            }
        if (paired)
            continue;
        if (!via) {
            if (v >= V_LANE && v < V_DYN && skip_unused_lanes)
                continue;
            return access_res(ACC_NOT_INJECTIVE,
                              arena_printf(A->a, "the offset does not depend on %s%s", access_var_str(A, v),
                                    v < V_LANE ? arena_printf(A->a, " (programs along axis %d collide "
                                                                    "when tl.num_programs(%d) > 1)",
                                                              v, v)
                                               : ""),
                       NULL);
        }
        AccPoly mx2;
        int64_t m2;
        if (has_mod && !has_div && mod_d > 0 && access_var_max(&D, v, &mx2) && ac_pis_const(&mx2, &m2) && m2 >= mod_d)
            return access_res(ACC_NOT_INJECTIVE,
                              arena_printf(A->a, "%s = 0 and %s = %lld reach the same element (the offset depends "
                                          "on it only modulo %lld)",
                                    access_var_str(A, v), access_var_str(A, v), (long long)mod_d, (long long)mod_d),
                       NULL);
        return access_res(ACC_UNKNOWN,
                          arena_printf(A->a, "the offset depends on %s only through '//' or '%%'", access_var_str(A, v)),
                          NULL);
    }
    if (D.n == 0)
        return extra.n ? access_res(ACC_PROVEN_IF, NULL, access_cond_join(A, &extra, NULL))
                       : access_res(ACC_PROVEN, NULL, NULL);
    /* a witness: two variables with constant coefficients that cancel */
    for (int i = 0; i < D.n; i++)
        for (int j = i + 1; j < D.n; j++) {
            int64_t a, b;
            if (!ac_pis_const(&D.coef[i], &a) || !ac_pis_const(&D.coef[j], &b) || !a || !b)
                continue;
            int64_t g = access_gcd64(access_iabs(a), access_iabs(b)), di = access_iabs(b) / g, dj = access_iabs(a) / g;
            AccPoly mi, mj;
            int64_t xi, xj;
            bool bi = access_var_max(&D, D.var[i], &mi), bj = access_var_max(&D, D.var[j], &mj);
            bool ki = bi && ac_pis_const(&mi, &xi), kj = bj && ac_pis_const(&mj, &xj);
            bool pi = D.var[i] < V_LANE, pj = D.var[j] < V_LANE; /* num_programs large enough */
            if ((ki ? xi >= di : pi) && (kj ? xj >= dj : pj) && (ki || pi) && (kj || pj))
                return access_res(ACC_NOT_INJECTIVE,
                                  arena_printf(A->a, "%s + %lld and %s %c %lld reach the same element%s%s",
                                        access_var_str(A, D.var[i]), (long long)di, access_var_str(A, D.var[j]),
                                        (a > 0) == (b > 0) ? '-' : '+', (long long)dj,
                                        pi || pj ? " (given enough programs)" : "",
                                        cs->n ? " where both are enabled" : ""),
                           NULL);
        }
    if (D.n > 6)
        return access_res(ACC_UNKNOWN, "too many varying terms", NULL);
    access_facts_of_cond(&D.F, &extra); /* the result requires them: every order may assume them */
    /* the heuristic order: small coefficients first */
    int ord[AC_NTERM];
    for (int i = 0; i < D.n; i++)
        ord[i] = i;
    /* each variable goes with a lane axis: its own, or one a constraint ties
     * it to (`pid_n * BN + rn < N`); the last axis first (row-major tiles),
     * then by the size of the coefficient */
    int assoc[AC_NTERM];
    for (int i = 0; i < D.n; i++) {
        int v = D.var[i];
        assoc[i] = v >= V_LANE && v < V_DYN ? v - V_LANE : -1;
        for (int c = 0; c < cs->n && assoc[i] < 0; c++)
            if (ac_fcoef((AcForm *)cs->v[c], v))
                for (int k = KAD_MAX_RANK - 1; k >= 0 && assoc[i] < 0; k--)
                    if (ac_fcoef((AcForm *)cs->v[c], V_LANE + k))
                        assoc[i] = k;
    }
#define ORD_KEY(i) ((int64_t)(4 - assoc[i]) * 100000000 + access_coef_rank(&D.coef[i]))
    for (int i = 1; i < D.n; i++)
        for (int j = i; j > 0 && ORD_KEY(ord[j]) < ORD_KEY(ord[j - 1]); j--) {
            int t = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = t;
        }
    AccCond *best = arena_alloc(A->a, sizeof *best), tmp;
    bool have = access_chain(&D, ord, best), unsat = have && access_cond_unsat(best);
    bool weak = have && (unsat || access_cond_weight(best) >= 1000); /* other orders may do better */
    have = have && !unsat;
    if (have && best->n == 0)
        return extra.n ? access_res(ACC_PROVEN_IF, NULL, access_cond_join(A, &extra, NULL))
                       : access_res(ACC_PROVEN, NULL, NULL);
    /* the heuristic order ties symbolic strides by axis index: the orders that
     * only exchange the program ids among their places join its condition
     * with `or` (access_cond_or), so the launch, not the kernel's numbering of the
     * axes, decides which stride nests inside the other; an order whose
     * condition holds only on degenerate launches is left out */
    if (have && !weak) {
        int at[V_LANE], np = 0, pp[V_LANE];
        for (int i = 0; i < D.n; i++)
            if (D.var[ord[i]] < V_LANE)
                at[np++] = i;
        for (int i = 0; i < np; i++)
            pp[i] = i;
        while (np > 1 && access_next_perm(pp, np)) {
            int o2[AC_NTERM];
            memcpy(o2, ord, sizeof o2[0] * (size_t)D.n);
            for (int i = 0; i < np; i++)
                o2[at[i]] = ord[at[pp[i]]];
            AccCond orc;
            if (!access_chain(&D, o2, &tmp) || access_cond_unsat(&tmp) || access_cond_weight(&tmp) >= 1000)
                continue;
            if (tmp.n == 0)
                return extra.n ? access_res(ACC_PROVEN_IF, NULL, access_cond_join(A, &extra, NULL))
                               : access_res(ACC_PROVEN, NULL, NULL);
            if (access_cond_or(best, &tmp, &orc) && access_cond_join(A, &extra, &orc))
                *best = orc;
        }
    }
    int perm[AC_NTERM];
    for (int i = 0; i < D.n; i++)
        perm[i] = i;
    do {
        if (access_chain(&D, perm, &tmp) && !access_cond_unsat(&tmp)) {
            if (tmp.n == 0)
                return extra.n ? access_res(ACC_PROVEN_IF, NULL, access_cond_join(A, &extra, NULL))
                               : access_res(ACC_PROVEN, NULL, NULL);
            /* the heuristic order's condition wins over others; when it cannot hold (or only on
             * degenerate launches), the least demanding other one */
            if (!have || (weak && access_cond_weight(&tmp) < access_cond_weight(best))) {
                *best = tmp;
                have = true;
            }
        }
    } while (access_next_perm(perm, D.n));
    if (!have)
        return access_res(ACC_UNKNOWN, "no order of the terms separates them (their extents are unknown, or some "
                                "coefficient is too small)", NULL);
    const AccCond *c = access_cond_join(A, &extra, best);
    return c ? access_res(ACC_PROVEN_IF, NULL, c) : access_res(ACC_UNKNOWN, "the condition is too long", NULL);
}

static uint64_t vary_mask(const AcSite *s, int vary)
{
    uint64_t m = 0;
    if (vary & ACC_VARY_PIDS)
        m |= 7;
    if (vary & ACC_VARY_LANES)
        m |= (uint64_t)0xf << V_LANE;
    if (vary & ACC_VARY_LOOPS)
        m |= s->loops;
    return m;
}

AccResult access_injective(Access *A, const Inst *mem, int vary)
{
    AcSite *s = ac_site_of(A, mem);
    if (!s)
        return access_res(ACC_UNKNOWN, "not a memory access", NULL);
    const AcForm *f = ac_site_form(A, s);
    Cons cs = ac_site_cons(A, s);
    Type t = ac_vty(A, mem->args[0]);
    return decide(A, f, &cs, vary_mask(s, vary), t.shape, t.rank, vary & ACC_SKIP_UNUSED_LANES);
}

bool access_pid_independent(Access *A, const Inst *mem, unsigned *axes)
{
    AcSite *s = ac_site_of(A, mem);
    if (!s)
        return false;
    const AcForm *f = ac_site_form(A, s);
    if (f->why)
        return false;
    uint64_t d = ac_fdeps(A, f);
    *axes = (unsigned)(~d & 7);
    return true;
}

