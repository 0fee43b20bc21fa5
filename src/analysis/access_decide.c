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
 * Assumptions: integer offsets do not wrap (as the kernel itself assumes);
 * a symbol bounding an enabled lane from above (`cols < n`) is at least 1
 * when the domain is not empty (an empty domain is trivially injective).
 *
 * Requires: an Access from access_analyze whose Func is unchanged.  Keeps:
 * the Func.  Guarantees: PROVEN and PROVEN_IF are proofs (under their
 * condition); anything kad cannot show is UNKNOWN.  All memory lives in
 * the Access's arena.
 */
#include <string.h>

#include "access_int.h"

/* ------------------------------------------------------------------ */
/* The decision                                                        */
/* ------------------------------------------------------------------ */

static const char *var_str(Access *A, int v);
static const char *poly_str(Access *A, const AccPoly *p, bool py);

typedef struct Dec {
    Access *A;
    const AcForm *f;
    const Cons *cs;
    Facts F;
    int n;
    int var[AC_NTERM];
    AccPoly coef[AC_NTERM];
    int32_t *shape;
    int rank;
    int nskip;    /* chain: the first nskip variables of the order need not be
                   * recovered (access_private's per-program part) */
    AccPoly init; /* chain: the span before the first variable */
} Dec;

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
static bool var_max(Dec *D, int v, AccPoly *mx)
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
static int group_alts(Dec *D, const int *ord, int k, AccPoly *out, int nout)
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
static int ptruth(const Facts *F, const AccPoly *p)
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

static int add_clause(Dec *D, AccCond *cond, const AccPoly *alts, int n)
{
    AccClause c = {0};
    for (int i = 0; i < n; i++) {
        int t = ptruth(&D->F, &alts[i]);
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
static void facts_of_cond(Facts *F, const AccCond *c)
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
            if (!ac_padd(&d, &sp[i], &sp[j], -1) || ptruth(F, &d) != 1)
                continue; /* sp[i] >= sp[j]: drop i, unless equal and i comes first */
            drop = !(ac_peq(&sp[i], &sp[j]) && i < j);
        }
        if (!drop)
            sp[m++] = sp[i];
    }
    return m;
}

static bool chain(Dec *D, const int *ord, AccCond *cond)
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
            ptruth(&D->F, &nm1) == 1)
            a = &neg;
        /* a variable that need not be recovered needs a >= 0 only (its span
         * starts at 0); the others a >= 1 */
        if (!ac_padd(&am1, a, &one, k < D->nskip ? 0 : -1) || !add_clause(D, cond, &am1, 1)) {
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
            if (!na || !add_clause(D, cond, alts, na)) {
                ok = false;
                break;
            }
        }
        /* the span of the first k+1 variables */
        AccPoly ext[ACC_NALT + 1]; /* spans of a * v alone */
        int ne = 0, order[1] = {ord[k]};
        AccPoly mx;
        if (var_max(D, D->var[ord[k]], &mx) && ac_pmul(&ext[ne], a, &mx))
            ne++;
        ne += group_alts(D, order, 1, &ext[ne], ACC_NALT);
        AccPoly nspan[NSPAN];
        int nn = k > 0 ? group_alts(D, ord, k + 1, nspan, ACC_NALT) : 0;
        for (int s = 0; s < ns; s++)
            for (int e = 0; e < ne && nn < NSPAN; e++)
                if (ac_padd(&nspan[nn], &span[s], &ext[e], 1))
                    nn++;
        /* a group ord[j..k] of two or more variables bounded by one
         * constraint (a chunk loop's counter and the lanes under the mask
         * `m0 + lanes < M`): the first j variables' span plus its bound */
        for (int j = 1; j < k && k < AC_NTERM; j++) {
            AccPoly g[ACC_NALT];
            int ng = group_alts(D, ord + j, k - j + 1, g, ACC_NALT);
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

static int coef_rank(const AccPoly *p)
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

static bool next_perm(int *a, int n)
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

static int64_t iabs(int64_t x) { return x < 0 ? -x : x; }

static int64_t gcd64(int64_t a, int64_t b)
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
static bool clause_implies(const AccClause *x, const AccClause *y)
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
 * one implies (clause_implies; of equivalent ones, the first stays). */
static void drop_implied(AccClause *v, int *n)
{
    int m = 0;
    for (int j = 0; j < *n; j++) {
        bool implied = false;
        for (int i = 0; i < *n && !implied; i++)
            implied = i != j && clause_implies(&v[i], &v[j]) && (i < j || !clause_implies(&v[j], &v[i]));
        if (!implied)
            v[m++] = v[j];
    }
    *n = m;
}

/* Drops the clauses another clause implies: of `stride >= 1 and stride >=
 * 16`, `stride >= 16` stays; of `(s >= W + 1 or s >= n) and (s >= W or s
 * >= n)`, the first.  The condition means the same. */
static void cond_tighten(AccCond *c) { drop_implied(c->c, &c->n); }

/* x and y (NULL: none) as one condition in the arena. */
static const AccCond *cond_join(Access *A, const AccCond *x, const AccCond *y)
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

static AccResult res(AccVerdict v, const char *why, const AccCond *c) { return (AccResult){v, why, c}; }

/* x or y as one conjunction (distributed: every clause of x joined with
 * every clause of y), in *out; false when it does not fit (a clause of
 * more than ACC_NALT alternatives, more than ACC_NCLAUSE clauses), and
 * then *out is unchanged.  Of two alternatives with the same non-constant
 * part the weaker (larger constant) stays: `s - 1 >= 0 or s - 8 >= 0` is
 * `s >= 1`.  Two orders' conditions each suffice, so their disjunction
 * does: the launch passes when either nesting of the strides holds. */
static bool cond_or(const AccCond *x, const AccCond *y, AccCond *out)
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
    drop_implied(v, &nv);
    if (nv > ACC_NCLAUSE)
        return false;
    out->n = nv;
    memcpy(out->c, v, sizeof v[0] * (size_t)nv);
    return true;
}


static bool cond_merge(AccCond *c, const AccCond *x);

/* Whether two one-alternative clauses of c, each k*s + k0 >= 0 in one
 * symbol s, bound s from both sides with nothing between (`16*s >= 1` and
 * `0 >= 15*s`): c never holds.  An order whose condition cannot hold loses
 * to one whose condition can (every order's condition suffices). */
static bool cond_unsat(const AccCond *c)
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
static int cond_weight(const AccCond *c)
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
        return res(ACC_UNKNOWN, f->why, NULL);
    Dec D = {A, f, cs, ac_base_facts(A), 0, {0}, {{0}}, shape, rank, 0, {0}};
    ac_add_facts(A, cs, &D.F);
    /* symbols must not vary */
    for (int i = -1; i < f->nt; i++) {
        const AccPoly *p = i < 0 ? &f->c0 : &f->t[i].c;
        for (int k = 0; k < p->n; k++)
            for (int s = 0; s < ACC_NSYM && p->m[k].s[s]; s++) {
                const AcSym *y = &A->syms.v[p->m[k].s[s] - 1];
                if (y->dep & vary)
                    return res(ACC_UNKNOWN,
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
            (!ac_padd(&dm1, &x->d, &one, -1) || !add_clause(&D, &extra, &dm1, 1)))
            return res(ACC_UNKNOWN, "a divisor that may be < 1", NULL);
    }
    for (int v = 0; v < 64; v++) {
        if (!(vary >> v & 1))
            continue;
        if (v < V_LANE && !(A->pid_axes >> v & 1) && !(ac_fdeps(A, f) >> v & 1)) {
            /* an axis the kernel never reads: injective only on a grid of one program there */
            AccPoly c = ac_pconst(1);
            AccPoly np = ac_psym(ac_sym_intern(A, SYM_NPROG, 0, v, 0));
            if (!ac_padd(&c, &c, &np, -1) || !add_clause(&D, &extra, &c, 1))
                return res(ACC_UNKNOWN, ac_too_big, NULL);
            continue;
        }
        AccPoly mx;
        int64_t mk;
        bool trivial = v >= V_LANE && v < V_DYN && var_max(&D, v, &mx) && ac_pis_const(&mx, &mk) && mk == 0;
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
                if (sr.v == ACC_PROVEN_IF && !cond_merge(&extra, sr.cond))
                    return res(ACC_UNKNOWN, "the condition is too long", NULL);
                paired = sr.v == ACC_PROVEN || sr.v == ACC_PROVEN_IF;
            }
        if (paired)
            continue;
        if (!via) {
            if (v >= V_LANE && v < V_DYN && skip_unused_lanes)
                continue;
            return res(ACC_NOT_INJECTIVE,
                       arena_printf(A->a, "the offset does not depend on %s%s", var_str(A, v),
                                    v < V_LANE ? arena_printf(A->a, " (programs along axis %d collide "
                                                                    "when tl.num_programs(%d) > 1)",
                                                              v, v)
                                               : ""),
                       NULL);
        }
        AccPoly mx2;
        int64_t m2;
        if (has_mod && !has_div && mod_d > 0 && var_max(&D, v, &mx2) && ac_pis_const(&mx2, &m2) && m2 >= mod_d)
            return res(ACC_NOT_INJECTIVE,
                       arena_printf(A->a, "%s = 0 and %s = %lld reach the same element (the offset depends "
                                          "on it only modulo %lld)",
                                    var_str(A, v), var_str(A, v), (long long)mod_d, (long long)mod_d),
                       NULL);
        return res(ACC_UNKNOWN,
                   arena_printf(A->a, "the offset depends on %s only through '//' or '%%'", var_str(A, v)),
                   NULL);
    }
    if (D.n == 0)
        return extra.n ? res(ACC_PROVEN_IF, NULL, cond_join(A, &extra, NULL)) : res(ACC_PROVEN, NULL, NULL);
    /* a witness: two variables with constant coefficients that cancel */
    for (int i = 0; i < D.n; i++)
        for (int j = i + 1; j < D.n; j++) {
            int64_t a, b;
            if (!ac_pis_const(&D.coef[i], &a) || !ac_pis_const(&D.coef[j], &b) || !a || !b)
                continue;
            int64_t g = gcd64(iabs(a), iabs(b)), di = iabs(b) / g, dj = iabs(a) / g;
            AccPoly mi, mj;
            int64_t xi, xj;
            bool bi = var_max(&D, D.var[i], &mi), bj = var_max(&D, D.var[j], &mj);
            bool ki = bi && ac_pis_const(&mi, &xi), kj = bj && ac_pis_const(&mj, &xj);
            bool pi = D.var[i] < V_LANE, pj = D.var[j] < V_LANE; /* num_programs large enough */
            if ((ki ? xi >= di : pi) && (kj ? xj >= dj : pj) && (ki || pi) && (kj || pj))
                return res(ACC_NOT_INJECTIVE,
                           arena_printf(A->a, "%s + %lld and %s %c %lld reach the same element%s%s",
                                        var_str(A, D.var[i]), (long long)di, var_str(A, D.var[j]),
                                        (a > 0) == (b > 0) ? '-' : '+', (long long)dj,
                                        pi || pj ? " (given enough programs)" : "",
                                        cs->n ? " where both are enabled" : ""),
                           NULL);
        }
    if (D.n > 6)
        return res(ACC_UNKNOWN, "too many varying terms", NULL);
    facts_of_cond(&D.F, &extra); /* the result requires them: every order may assume them */
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
#define ORD_KEY(i) ((int64_t)(4 - assoc[i]) * 100000000 + coef_rank(&D.coef[i]))
    for (int i = 1; i < D.n; i++)
        for (int j = i; j > 0 && ORD_KEY(ord[j]) < ORD_KEY(ord[j - 1]); j--) {
            int t = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = t;
        }
    AccCond *best = arena_alloc(A->a, sizeof *best), tmp;
    bool have = chain(&D, ord, best), unsat = have && cond_unsat(best);
    bool weak = have && (unsat || cond_weight(best) >= 1000); /* other orders may do better */
    have = have && !unsat;
    if (have && best->n == 0)
        return extra.n ? res(ACC_PROVEN_IF, NULL, cond_join(A, &extra, NULL)) : res(ACC_PROVEN, NULL, NULL);
    /* the heuristic order ties symbolic strides by axis index: the orders that
     * only exchange the program ids among their places join its condition
     * with `or` (cond_or), so the launch, not the kernel's numbering of the
     * axes, decides which stride nests inside the other; an order whose
     * condition holds only on degenerate launches is left out */
    if (have && !weak) {
        int at[V_LANE], np = 0, pp[V_LANE];
        for (int i = 0; i < D.n; i++)
            if (D.var[ord[i]] < V_LANE)
                at[np++] = i;
        for (int i = 0; i < np; i++)
            pp[i] = i;
        while (np > 1 && next_perm(pp, np)) {
            int o2[AC_NTERM];
            memcpy(o2, ord, sizeof o2[0] * (size_t)D.n);
            for (int i = 0; i < np; i++)
                o2[at[i]] = ord[at[pp[i]]];
            AccCond orc;
            if (!chain(&D, o2, &tmp) || cond_unsat(&tmp) || cond_weight(&tmp) >= 1000)
                continue;
            if (tmp.n == 0)
                return extra.n ? res(ACC_PROVEN_IF, NULL, cond_join(A, &extra, NULL)) : res(ACC_PROVEN, NULL, NULL);
            if (cond_or(best, &tmp, &orc) && cond_join(A, &extra, &orc))
                *best = orc;
        }
    }
    int perm[AC_NTERM];
    for (int i = 0; i < D.n; i++)
        perm[i] = i;
    do {
        if (chain(&D, perm, &tmp) && !cond_unsat(&tmp)) {
            if (tmp.n == 0)
                return extra.n ? res(ACC_PROVEN_IF, NULL, cond_join(A, &extra, NULL))
                               : res(ACC_PROVEN, NULL, NULL);
            /* the heuristic order's condition wins over others; when it cannot hold (or only on
             * degenerate launches), the least demanding other one */
            if (!have || (weak && cond_weight(&tmp) < cond_weight(best))) {
                *best = tmp;
                have = true;
            }
        }
    } while (next_perm(perm, D.n));
    if (!have)
        return res(ACC_UNKNOWN, "no order of the terms separates them (their extents are unknown, or some "
                                "coefficient is too small)", NULL);
    const AccCond *c = cond_join(A, &extra, best);
    return c ? res(ACC_PROVEN_IF, NULL, c) : res(ACC_UNKNOWN, "the condition is too long", NULL);
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
        return res(ACC_UNKNOWN, "not a memory access", NULL);
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
        bool negc = ac_padd(&neg, &(AccPoly){0}, c, -1) && ac_padd(&nm1, &neg, &one, -1) && ptruth(&D->F, &nm1) == 1;
        if (!pos && !negc)
            return false;
        if (pos != hi)
            continue; /* this side of the term is its value at 0 */
        if (!var_max(D, v, &mx) || !ac_pmul(&t, c, &mx) || !ac_padd(&b, &b, &t, 1))
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
                return res(ACC_UNKNOWN, "the two addresses differ in more than a constant", NULL);
        }
    for (int k = 0; k < 2; k++) /* symbols fixed where the shared variables are */
        for (int i = -1; i < f[k]->nt; i++) {
            const AccPoly *p = i < 0 ? &f[k]->c0 : &f[k]->t[i].c;
            for (int m = 0; m < p->n; m++)
                for (int y = 0; y < ACC_NSYM && p->m[m].s[y]; y++)
                    if (A->syms.v[p->m[m].s[y] - 1].dep & ~shared)
                        return res(ACC_UNKNOWN, "the two addresses depend on a value kad cannot express", NULL);
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
            return res(ACC_UNKNOWN, "the range of one of the two addresses is unknown", NULL);
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
    if (!na || !add_clause(&D, c, alts, na))
        return res(ACC_UNKNOWN, "the two ranges may overlap", NULL);
    return c->n ? res(ACC_PROVEN_IF, NULL, c) : res(ACC_PROVEN, NULL, NULL);
}

AccResult access_disjoint(Access *A, const Inst *x, const Inst *y)
{
    AcSite *sx = ac_site_of(A, x), *sy = ac_site_of(A, y);
    if (!sx || !sy)
        return res(ACC_UNKNOWN, "not a memory access", NULL);
    const AcForm *fx = ac_site_form(A, sx), *fy = ac_site_form(A, sy);
    if (fx->why || fy->why)
        return res(ACC_UNKNOWN, fx->why ? fx->why : fy->why, NULL);
    if (fx->base != fy->base)
        return res(ACC_PROVEN, NULL, NULL); /* different parameters (aliasing is the caller's matter) */
    /* x's elements lie below y's, or above: max(fx) < min(fy) over the
     * lanes their masks enable.  With equal variable parts, that is a
     * comparison of the constants against the span of the lanes. */
    AcForm *ux = ac_fnew(A), *uy = ac_fnew(A);
    *ux = *fx;
    *uy = *fy;
    ux->base = uy->base = 0;
    const AcForm *dlt = ac_fadd(A, uy, ux, -1);
    if (dlt->why)
        return res(ACC_UNKNOWN, dlt->why, NULL);
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
        ns = group_alts(&D, ord, D.n, spans, ACC_NALT);
        AccPoly sum = ac_pconst(0);
        bool ok = true;
        for (int i = 0; i < D.n && ok; i++) {
            AccPoly mx, t;
            ok = ac_pnonneg(&D.F, &D.coef[i]) && var_max(&D, D.var[i], &mx) && ac_pmul(&t, &D.coef[i], &mx) &&
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
        if (na && add_clause(&D, &c, alts, na)) {
            if (c.n == 0)
                return res(ACC_PROVEN, NULL, NULL);
            if (!cond->n)
                *cond = c;
        }
    }
    if (cond->n)
        return res(ACC_PROVEN_IF, NULL, cond);
    int64_t dk, sk;
    if (!cx.n && !cy.n && ns == 1 && ac_pis_const(&dlt->c0, &dk) && ac_pis_const(&spans[0], &sk) && iabs(dk) <= sk)
        return res(ACC_NOT_INJECTIVE, arena_printf(A->a, "the ranges overlap (%lld apart, each %lld wide)",
                                                   (long long)iabs(dk), (long long)sk + 1), NULL);
    return res(ACC_UNKNOWN, "the two ranges may overlap", NULL);
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
static bool cond_merge(AccCond *c, const AccCond *x)
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
            int64_t g = gcd64(iabs(a), iabs(b)), du = iabs(b) / g, dw = iabs(a) / g;
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
                ptruth(&D.F, &nm1) != 1 || !var_max(&D, v, &mx))
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
            return res(ACC_PROVEN, NULL, NULL);
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
            if (r.v == ACC_PROVEN_IF && !cond_merge(extra, r.cond))
                return res(ACC_UNKNOWN, "the condition is too long", NULL);
            if (r.v == ACC_PROVEN || r.v == ACC_PROVEN_IF)
                return res(ACC_PROVEN, NULL, NULL);
        }
    }
    for (int i = 0; i < nu; i++) { /* pid // d or pid % d alone, d constant: a witness */
        const AcVar *x = &A->vars.v[up[i]];
        int64_t d;
        const AccPoly *c1 = up[i] >= V_DYN && x->kind != VK_LOOP ? ac_fcoef((AcForm *)x->e, k) : NULL;
        if (!c1 || x->e->nt != 1 || !ac_peq(c1, &one) || !ac_pis_const(&x->d, &d) || d < 2)
            continue;
        return res(ACC_NOT_INJECTIVE,
                   x->kind == VK_DIV
                       ? arena_printf(A->a, "programs pid%d = 0 and pid%d = 1 touch the same elements (the "
                                            "address depends on it only through '// %lld')",
                                      k, k, (long long)d)
                       : arena_printf(A->a, "programs pid%d = 0 and pid%d = %lld touch the same elements (the "
                                            "address depends on it only modulo %lld; given enough programs)",
                                      k, k, (long long)d, (long long)d),
                   NULL);
    }
    return res(ACC_UNKNOWN,
               arena_printf(A->a, "the address depends on pid%d only through '//' or '%%' kad cannot invert", k),
               NULL);
}

/* The footprints of programs differing in a pid of `outer` (var bits) are
 * disjoint: every variable depending on those pids is recovered by a
 * dominance chain (the "up" variables, common to every site with equal
 * coefficients), below which each site's other variables and its constant
 * offset form a bounded per-program part that need not be recovered. */
static AccResult priv_core(Access *A, PrivSite *ps, int n, uint64_t outer, int depth)
{
    if (depth > 3)
        return res(ACC_UNKNOWN, "'//' and '%' nested too deeply", NULL);
    AccCond extra = {0};
    Dec D0 = {A, ps[0].f, &ps[0].cs, ac_base_facts(A), 0, {0}, {{0}}, ps[0].shape, ps[0].rank, 0, {0}};
    AccPoly one = ac_pconst(1);
    ps = rev_negative(A, ps, n, outer);
    /* the sites' offsets relative to the lowest one's (site L): d_i - d_L >=
     * 0 on site i's domain, statically, else a clause of the condition */
    AccPoly *off = arena_alloc(A->a, sizeof *off * (size_t)n);
    for (int i = 0; i < n; i++)
        if (!ac_padd(&off[i], &ps[i].f->c0, &ps[0].f->c0, -1))
            return res(ACC_UNKNOWN, ac_too_big, NULL);
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
                int t = ac_padd(&d, &off[i], &off[L], -1) ? ptruth(&F, &d) : 0;
                bool likely = pass == 2;
                for (int k = 0; k < d.n && !likely; k++)
                    likely = d.m[k].s[0] != 0;
                for (int k = 0; k < d.n && likely && pass == 1; k++)
                    likely = !d.m[k].s[0] || d.m[k].k > 0;
                ok = t == 1 || (pass > 0 && likely && t == -1 && add_clause(&D0, &c, &d, 1));
            }
            if (ok && (!c.n || cond_merge(&extra, &c)))
                low = L;
        }
    if (low < 0)
        return res(ACC_UNKNOWN, "the sites' offsets differ by an amount kad cannot order", NULL);
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
                if (!ac_padd(&dm1, &A->vars.v[v].d, &one, -1) || !add_clause(&D0, &extra, &dm1, 1))
                    return res(ACC_UNKNOWN, "a divisor that may be < 1", NULL);
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
                    return res(ACC_UNKNOWN, "the sites place the programs differently", NULL);
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
            return res(ACC_NOT_INJECTIVE,
                       arena_printf(A->a, "the address does not depend on pid%d: the programs along axis %d "
                                          "touch the same elements (when tl.num_programs(%d) > 1)",
                                    k, k, k),
                       NULL);
    }
    for (int i = 0; i < n; i++) {
        const char *w = priv_witness(A, &ps[i], outer);
        if (w)
            return res(ACC_NOT_INJECTIVE, w, NULL);
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
            int64_t kk = (int64_t)(4 - assoc) * 100000000 + coef_rank(&f->t[i].c);
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
                    facts_of_cond(&D.F, &extra);
                    for (int t = 0; t < f->nt; t++) { /* the others, small coefficients first */
                        bool in_up = false;
                        for (int j = 0; j < nuv; j++)
                            in_up |= uv[j] == f->t[t].var;
                        if (in_up)
                            continue;
                        int at = D.n++;
                        while (at > 0 && coef_rank(&D.coef[at - 1]) > coef_rank(&f->t[t].c)) {
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
                    ok = chain(&D, ord, &cs) && cond_merge(&c, &cs);
                }
                if (!ok || cond_unsat(&c))
                    continue;
                if (c.n == 0)
                    return extra.n ? res(ACC_PROVEN_IF, NULL, cond_join(A, &extra, NULL))
                                   : res(ACC_PROVEN, NULL, NULL);
                if (!have) {
                    best = first = c;
                    have = true;
                } else if (size < 0 && cond_weight(&c) < 1000) {
                    cond_or(&best, &c, &best); /* kept alone when the disjunction does not fit */
                }
                /* when its first order gives a condition, the heuristic selection
                 * tries every order of its up variables (up to three: the grid's
                 * axes), their conditions joined by `or` (but for ones that hold
                 * only on degenerate launches): which axis has the larger stride
                 * is the launch's matter, not the order the kernel numbers its
                 * axes in */
            } while ((size >= 0 || (have && nuv <= 3 && !A->priv_one_order)) && next_perm(perm, nuv));
            if (size < 0)
                break;
        }
done:
    if (!have)
        return res(ACC_UNKNOWN, "no order of the terms separates the programs' elements (their extents are "
                                "unknown, or some coefficient is too small)", NULL);
    const AccCond *c = cond_join(A, &extra, &best);
    if (!c) /* the disjunction too long with the divisors' clauses: the first order's alone */
        c = cond_join(A, &extra, &first);
    return c ? res(ACC_PROVEN_IF, NULL, c) : res(ACC_UNKNOWN, "the condition is too long", NULL);
}

AccResult access_private(Access *A, const Inst *const *mems, int n, unsigned axes)
{
    axes &= 7;
    if (n <= 0 || !axes)
        return res(ACC_PROVEN, NULL, NULL);
    PrivSite *ps = arena_alloc(A->a, sizeof *ps * (size_t)n);
    int base = 0;
    uint64_t dep = 0;
    for (int i = 0; i < n; i++) {
        AcSite *s = ac_site_of(A, mems[i]);
        if (!s)
            return res(ACC_UNKNOWN, "not a memory access", NULL);
        const AcForm *f = ac_site_form(A, s);
        if (f->why)
            return res(ACC_UNKNOWN, f->why, NULL);
        if (i && f->base != base)
            return res(ACC_UNKNOWN, "the accesses go through different parameters", NULL);
        base = f->base;
        for (int t = -1; t < f->nt; t++) { /* symbols must be fixed by the launch */
            const AccPoly *p = t < 0 ? &f->c0 : &f->t[t].c;
            for (int k = 0; k < p->n; k++)
                for (int y = 0; y < ACC_NSYM && p->m[k].s[y]; y++)
                    if (A->syms.v[p->m[k].s[y] - 1].dep)
                        return res(ACC_UNKNOWN,
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
            if (!ac_padd(&c, &c, &np, -1) || !add_clause(&D0, &extra, &c, 1))
                return res(ACC_UNKNOWN, ac_too_big, NULL);
            continue;
        }
        outer |= (uint64_t)1 << k;
    }
    AccResult r = outer ? priv_core(A, ps, n, outer, 0) : res(ACC_PROVEN, NULL, NULL);
    if (r.v == ACC_UNKNOWN && outer && !A->priv_one_order) { /* the first orders alone (cond_or) */
        A->priv_one_order = true;
        r = priv_core(A, ps, n, outer, 0);
        A->priv_one_order = false;
    }
    if (!extra.n || (r.v != ACC_PROVEN && r.v != ACC_PROVEN_IF))
        return r;
    const AccCond *c = cond_join(A, &extra, r.cond);
    if (!c && outer && !A->priv_one_order) {
        A->priv_one_order = true;
        r = priv_core(A, ps, n, outer, 0);
        A->priv_one_order = false;
        if (r.v != ACC_PROVEN && r.v != ACC_PROVEN_IF)
            return r;
        c = cond_join(A, &extra, r.cond);
    }
    return c ? res(ACC_PROVEN_IF, NULL, c) : res(ACC_UNKNOWN, "the condition is too long", NULL);
}

/* ------------------------------------------------------------------ */
/* Printing and evaluation                                             */
/* ------------------------------------------------------------------ */

/* A scalar computed from parameters and constants as a Triton expression
 * (`//` and `%` truncate like Triton's), or NULL. */
static const char *val_expr(Access *A, ValId v, int depth)
{
    const Inst *in = A->def[v];
    if (depth > 8)
        return NULL;
    if (!in) {
        for (int p = 0; p < A->f->nparams; p++)
            if (A->f->params[p] == v)
                return A->host_args ? arena_printf(A->a, "%s[\"%s\"]", A->host_args, ac_vname(A, v)) : ac_vname(A, v);
        return NULL;
    }
    if (in->op == OP_CONST && dtype_is_int((Dtype)ac_vty(A, v).dt))
        return arena_printf(A->a, "%lld", (long long)in->ival);
    if (in->op == OP_NUM_PROGRAMS)
        return A->host_grid ? arena_printf(A->a, "%s[%d]", A->host_grid, (int)in->ival)
                            : arena_printf(A->a, "tl.num_programs(%d)", (int)in->ival);
    if (A->host_args && (in->op == OP_DIV || in->op == OP_REM) && in->nargs == 2) {
        /* Python's // and % floor, Triton's truncate: the launcher defines these */
        const char *x = val_expr(A, in->args[0], depth + 1), *y = val_expr(A, in->args[1], depth + 1);
        return x && y ? arena_printf(A->a, "%s(%s, %s)", in->op == OP_DIV ? "_tdiv" : "_trem", x, y) : NULL;
    }
    const char *op = in->op == OP_ADD ? "+" : in->op == OP_SUB ? "-" : in->op == OP_MUL ? "*"
                   : in->op == OP_DIV ? "//" : in->op == OP_REM ? "%" : NULL;
    if (!op || in->nargs != 2)
        return NULL;
    const char *x = val_expr(A, in->args[0], depth + 1), *y = val_expr(A, in->args[1], depth + 1);
    return x && y ? arena_printf(A->a, "(%s %s %s)", x, op, y) : NULL;
}

static const char *sym_str(Access *A, int id, bool py)
{
    const AcSym *s = &A->syms.v[id - 1];
    if (s->kind == SYM_NPROG && A->host_grid)
        return arena_printf(A->a, "%s[%d]", A->host_grid, s->axis);
    if (s->kind == SYM_NPROG)
        return py ? arena_printf(A->a, "tl.num_programs(%d)", s->axis) : arena_printf(A->a, "nprog%d", s->axis);
    if (s->kind == SYM_PARAM && A->host_args)
        return arena_printf(A->a, "%s[\"%s\"]", A->host_args, ac_vname(A, s->v));
    if (s->kind == SYM_PARAM)
        return ac_vname(A, s->v);
    return py ? val_expr(A, s->v, 0) : arena_printf(A->a, "%%%s", ac_vname(A, s->v));
}

static void mono_print(Access *A, Buf *b, const AccMono *m, int64_t k, bool py, bool *ok)
{
    bool any = false;
    if (k != 1 || !m->s[0]) {
        buf_printf(b, "%lld", (long long)k);
        any = true;
    }
    for (int s = 0; s < ACC_NSYM && m->s[s]; s++) {
        const char *n = sym_str(A, m->s[s], py);
        if (!n)
            *ok = false;
        buf_printf(b, "%s%s", any ? "*" : "", n ? n : "?");
        any = true;
    }
}

static const char *poly_str(Access *A, const AccPoly *p, bool py)
{
    Buf b = {A->a, NULL, 0, 0};
    bool ok = true;
    if (!p->n)
        buf_puts(&b, "0");
    for (int i = p->n - 1; i >= 0; i--) { /* symbols first, the constant last */
        int64_t k = p->m[i].k;
        if (i != p->n - 1)
            buf_puts(&b, k < 0 ? " - " : " + ");
        else if (k < 0)
            buf_puts(&b, "-");
        mono_print(A, &b, &p->m[i], k < 0 ? -k : k, py, &ok);
    }
    return ok ? buf_str(&b) : NULL;
}

/* p >= 0 as `lhs >= rhs` with the positive monomials on the left. */
static const char *ineq_str(Access *A, const AccPoly *p, bool py)
{
    AccPoly l = {0}, r = {0};
    for (int i = 0; i < p->n; i++) {
        AccMono m = p->m[i];
        if (m.k > 0)
            ac_padd_mono(&l, m);
        else {
            m.k = -m.k;
            ac_padd_mono(&r, m);
        }
    }
    const char *ls = poly_str(A, &l, py), *rs = poly_str(A, &r, py);
    return ls && rs ? arena_printf(A->a, "%s >= %s", ls, rs) : NULL;
}

static const char *cond_str(Access *A, const AccCond *c, bool py)
{
    Buf b = {A->a, NULL, 0, 0};
    for (int i = 0; i < c->n; i++) {
        if (i)
            buf_puts(&b, " and ");
        bool paren = c->c[i].n > 1 && c->n > 1;
        if (paren)
            buf_putc(&b, '(');
        for (int j = 0; j < c->c[i].n; j++) {
            const char *s = ineq_str(A, &c->c[i].p[j], py);
            if (!s)
                return NULL;
            buf_printf(&b, "%s%s", j ? " or " : "", s);
        }
        if (paren)
            buf_putc(&b, ')');
    }
    return buf_str(&b);
}

const char *access_cond_python(Access *A, const AccCond *c) { return cond_str(A, c, true); }

/* c (or, when NULL, p) as Python for the host: parameters as args["p"],
 * tl.num_programs(k) as grid[k]. */
static const char *host_str(Access *A, const AccCond *c, const AccPoly *p, const char *args, const char *grid)
{
    A->host_args = args;
    A->host_grid = grid;
    const char *s = c ? cond_str(A, c, true) : poly_str(A, p, true);
    A->host_args = A->host_grid = NULL;
    return s;
}

const char *access_cond_host(Access *A, const AccCond *c, const char *args, const char *grid)
{
    return host_str(A, c, NULL, args, grid);
}

const char *ac_poly_host(Access *A, const AccPoly *p, const char *args, const char *grid)
{
    return host_str(A, NULL, p, args, grid);
}

/* A scalar computed from int parameters, constants and num_programs
 * (val_expr's values), with Triton's truncating `//` and `%`. */
static bool val_eval(Access *A, ValId v, const int64_t *params, const int64_t grid[3], int depth, int64_t *out)
{
    const Inst *in = A->def[v];
    if (depth > 8)
        return false;
    if (!in) {
        for (int p = 0; p < A->f->nparams; p++)
            if (A->f->params[p] == v && params) {
                *out = params[p];
                return true;
            }
        return false;
    }
    if (in->op == OP_CONST && dtype_is_int((Dtype)ac_vty(A, v).dt)) {
        *out = in->ival;
        return true;
    }
    if (in->op == OP_NUM_PROGRAMS) {
        *out = grid[in->ival];
        return true;
    }
    int64_t x, y;
    if (in->nargs != 2 || !val_eval(A, in->args[0], params, grid, depth + 1, &x) ||
        !val_eval(A, in->args[1], params, grid, depth + 1, &y) || !ac_in_limit(x) || !ac_in_limit(y))
        return false;
    switch (in->op) {
    case OP_ADD:
        *out = x + y;
        return true;
    case OP_SUB:
        *out = x - y;
        return true;
    case OP_MUL:
        if (iabs(x) > (1 << 20) && iabs(y) > (1 << 20))
            return false;
        *out = x * y;
        return true;
    case OP_DIV:
    case OP_REM:
        if (!y)
            return false;
        *out = in->op == OP_DIV ? x / y : x % y;
        return true;
    default:
        return false;
    }
}

static bool peval(Access *A, const AccPoly *p, const int64_t *params, const int64_t grid[3], int64_t *out)
{
    int64_t r = 0;
    for (int i = 0; i < p->n; i++) {
        int64_t m = p->m[i].k;
        for (int s = 0; s < ACC_NSYM && p->m[i].s[s]; s++) {
            const AcSym *y = &A->syms.v[p->m[i].s[s] - 1];
            int64_t x;
            if (y->kind == SYM_NPROG)
                x = grid[y->axis];
            else if (y->kind == SYM_PARAM) {
                int k = 0;
                while (k < A->f->nparams && A->f->params[k] != y->v)
                    k++;
                if (k == A->f->nparams)
                    return false;
                x = params[k];
            } else if (!val_eval(A, y->v, params, grid, 0, &x))
                return false;
            if (!ac_in_limit(x) || !ac_in_limit(m) || (iabs(m) > (1 << 20) && iabs(x) > (1 << 20)))
                return false;
            m *= x;
        }
        if (!ac_in_limit(m))
            return false;
        r += m;
    }
    *out = r;
    return true;
}

bool access_cond_eval(Access *A, const AccCond *c, const int64_t *params, const int64_t grid[3], bool *holds)
{
    bool all = true;
    for (int i = 0; i < c->n; i++) {
        bool any = false;
        for (int j = 0; j < c->c[i].n; j++) {
            int64_t v;
            if (!peval(A, &c->c[i].p[j], params, grid, &v))
                return false;
            any |= v >= 0;
        }
        all &= any;
    }
    *holds = all;
    return true;
}

static const char *form_str(Access *A, const AcForm *f);

static const char *var_str(Access *A, int v)
{
    if (v < V_LANE)
        return arena_printf(A->a, "pid%d", v);
    if (v < V_DYN)
        return arena_printf(A->a, "lane%d", v - V_LANE);
    if (v == V_HOLE)
        return "?";
    const AcVar *x = &A->vars.v[v];
    if (x->kind == VK_LOOP) {
        const Inst *in = A->loops.v[x->loop].in;
        if (in->op == OP_FOR)
            return arena_printf(A->a, "iter(%%%s)", ac_vname(A, in->regions[0]->params[0]));
        return arena_printf(A->a, "iter(while@%d)", in->loc.line);
    }
    if (x->swz) /* a grouped swizzle's row or column (access.c swizzle) */
        return arena_printf(A->a, "swizzle_%s(%s; %s)", x->kind == VK_DIV ? "m" : "n", form_str(A, x->e),
                            poly_str(A, &x->d, false));
    return arena_printf(A->a, "(%s %s %s)", form_str(A, x->e), x->kind == VK_DIV ? "//" : "%",
                        poly_str(A, &x->d, false));
}

static const char *form_str(Access *A, const AcForm *f)
{
    if (f->why)
        return arena_printf(A->a, "unknown: %s", f->why);
    Buf b = {A->a, NULL, 0, 0};
    if (f->base)
        buf_printf(&b, "%%%s + ", ac_vname(A, A->f->params[f->base - 1]));
    bool any = false;
    for (int i = 0; i < f->nt; i++) {
        const AccPoly *c = &f->t[i].c;
        int64_t k;
        const char *vs = var_str(A, f->t[i].var);
        if (any)
            buf_puts(&b, " + ");
        if (ac_pis_const(c, &k) && k == 1)
            buf_puts(&b, vs);
        else if (c->n == 1)
            buf_printf(&b, "%s*%s", poly_str(A, c, false), vs);
        else
            buf_printf(&b, "(%s)*%s", poly_str(A, c, false), vs);
        any = true;
    }
    if (f->c0.n || !any)
        buf_printf(&b, "%s%s", any ? " + " : "", f->c0.n > 1 && any ? arena_printf(A->a, "(%s)", poly_str(A, &f->c0, false))
                                                                    : poly_str(A, &f->c0, false));
    return buf_str(&b);
}

static const char *verdict_str(Access *A, AccResult r)
{
    switch (r.v) {
    case ACC_PROVEN:
        return "proven";
    case ACC_PROVEN_IF:
        return arena_printf(A->a, "proven if %s", cond_str(A, r.cond, false));
    case ACC_NOT_INJECTIVE:
        return arena_printf(A->a, "not injective: %s", r.why);
    default:
        return arena_printf(A->a, "unknown: %s", r.why);
    }
}

const char *access_report(Access *A)
{
    Buf b = {A->a, NULL, 0, 0};
    for (int i = 0; i < A->sites.n; i++) {
        AcSite *s = &A->sites.v[i];
        const Inst *in = s->in;
        buf_printf(&b, "%s line %d: %s\n", op_info[in->op].name, in->loc.line, form_str(A, ac_site_form(A, s)));
        Cons cs = ac_site_cons(A, s);
        for (int k = 0; k < cs.n; k++)
            buf_printf(&b, "  where %s < 0\n", form_str(A, cs.v[k]));
        buf_printf(&b, "  launch: %s\n", verdict_str(A, access_injective(A, in, ACC_VARY_PIDS | ACC_VARY_LOOPS |
                                                                             ACC_VARY_LANES)));
        if (s->loops)
            buf_printf(&b, "  iterations: %s\n",
                       verdict_str(A, access_injective(A, in, ACC_VARY_LOOPS | ACC_VARY_LANES |
                                                                  ACC_SKIP_UNUSED_LANES)));
        unsigned axes;
        if (access_pid_independent(A, in, &axes) && axes)
            buf_printf(&b, "  independent of:%s%s%s\n", axes & 1 ? " pid0" : "", axes & 2 ? " pid1" : "",
                       axes & 4 ? " pid2" : "");
        for (int j = 0; j < i; j++) {
            const Inst *o = A->sites.v[j].in;
            if (o->op == OP_LOAD && in->op == OP_LOAD)
                continue;
            if (access_base(A, o) != access_base(A, in) || access_base(A, in) < 0)
                continue;
            buf_printf(&b, "  vs line %d: disjoint %s\n", o->loc.line,
                       verdict_str(A, access_disjoint(A, o, in)));
        }
    }
    /* per parameter: is each program's footprint (all its sites) private? */
    for (int p = 0; p < A->f->nparams; p++) {
        const Inst **ms = arena_alloc(A->a, sizeof *ms * (size_t)(A->sites.n + 1));
        int n = 0;
        for (int i = 0; i < A->sites.n; i++)
            if (access_base(A, A->sites.v[i].in) == p)
                ms[n++] = A->sites.v[i].in;
        if (!n)
            continue;
        buf_printf(&b, "footprint of %%%s (%d site%s):\n", ac_vname(A, A->f->params[p]), n, n > 1 ? "s" : "");
        buf_printf(&b, "  private over every axis: %s\n", verdict_str(A, access_private(A, ms, n, 7)));
        int nread = (A->pid_axes & 1) + (A->pid_axes >> 1 & 1) + (A->pid_axes >> 2 & 1);
        for (int k = 0; k < 3 && nread > 1; k++)
            if (A->pid_axes >> k & 1)
                buf_printf(&b, "  private over pid%d: %s\n", k, verdict_str(A, access_private(A, ms, n, 1u << k)));
    }
    return buf_str(&b);
}

int access_sym(Access *A, int id, int *param, int *axis)
{
    if (id < 1 || id > A->syms.n)
        return 0;
    const AcSym *y = &A->syms.v[id - 1];
    if (y->kind == SYM_NPROG) {
        *axis = y->axis;
        return 2;
    }
    for (int k = 0; y->kind == SYM_PARAM && k < A->f->nparams; k++)
        if (A->f->params[k] == y->v) {
            *param = k;
            return 1;
        }
    return 0;
}

bool func_guards_hold(const Func *f, const int64_t *iargs, const int64_t grid[3], Diags *d)
{
    for (int i = 0; i < f->guards.n; i++) {
        const FuncGuard *g = &f->guards.v[i];
        bool holds = false;
        if (!access_cond_eval(g->acc, g->cond, iargs, grid, &holds)) {
            diag_error(d, g->loc, "%s (kad cannot evaluate the condition for this launch)", g->msg);
            return false;
        }
        if (!holds) {
            diag_error(d, g->loc, "%s", g->msg);
            return false;
        }
    }
    return true;
}


void access_cond_conj(Access *A, AccCondVec *out, const AccCond *c)
{
    Vec(AccClause) all = {0}; /* every clause of out and c */
    for (int k = 0; k <= out->n; k++) {
        const AccCond *x = k < out->n ? out->v[k] : c;
        for (int i = 0; i < x->n; i++)
            vec_push(A->a, all, x->c[i]);
    }
    drop_implied(all.v, &all.n);
    out->n = 0;
    for (int i = 0; i < all.n; i += ACC_NCLAUSE) {
        AccCond *one = arena_alloc(A->a, sizeof *one);
        for (int j = i; j < all.n && j < i + ACC_NCLAUSE; j++)
            one->c[one->n++] = all.v[j];
        vec_push(A->a, *out, (const AccCond *)one);
    }
}

bool access_cond_implies(const AccCondVec *x, const AccCond *y)
{
    for (int j = 0; j < y->n; j++) {
        bool some = false;
        for (int k = 0; k < x->n && !some; k++)
            for (int i = 0; i < x->v[k]->n && !some; i++)
                some = clause_implies(&x->v[k]->c[i], &y->c[j]);
        if (!some)
            return false;
    }
    return true;
}

AccResult access_disjoint_all(Access *A, const Inst *x, const Inst *y)
{
    AcSite *sx = ac_site_of(A, x), *sy = ac_site_of(A, y);
    if (!sx || !sy)
        return res(ACC_UNKNOWN, "not a memory access", NULL);
    const AcForm *fx = ac_site_form(A, sx), *fy = ac_site_form(A, sy);
    if (fx->why || fy->why)
        return res(ACC_UNKNOWN, fx->why ? fx->why : fy->why, NULL);
    if (fx->base != fy->base)
        return res(ACC_PROVEN, NULL, NULL);
    if (!sx->loops && !sy->loops)
        return access_disjoint(A, x, y);
    return disjoint_ranges(A, sx, sy, 7);
}
