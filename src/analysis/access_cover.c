/* access_cover.c -- coverage: does a launch write every element of a view?
 *
 * Job: for the one load site through which the forward reads an input x
 * (the backward stores d_x with the same address and mask: write/plain.c,
 * modes 1 and 2), describe the set of elements the launch reaches,
 *     { sum_v c_v * v : 0 <= v < e_v, every mask clause holds },
 * so that the generated launcher can check, for the gradient tensor it is
 * given, that every element of the tensor's view is written -- and then
 * skip zero-filling it (docs/AD.md, "Coverage").  The variables are the
 * address's program ids (extent: the grid), lanes (the tile's size) and
 * `for` iteration counters (bounded by their loop's clause); the clauses
 * are the mask's comparisons, read exactly.  The host check itself (the
 * helper _kad_covers of src/emit/py/cover.py, run by the launcher) bounds each
 * variable by the clauses on it alone, merges variables whose clause is on
 * their mixed-radix index (`offs < n` with offs = pid * BLOCK + lane) into
 * one dense run, and asks that each dimension of the view (positive
 * strides, no overlap) fall in a run with room for it.
 *
 * Soundness: a variable the address does not use is taken at 0 (its clause
 * terms dropped; its range must not be empty); anything kad cannot read
 * exactly -- a mask part that is not a signed integer comparison of affine
 * forms, an enclosing `if` or `while`, `//` and `%` variables (but a lane's
 * digits (lane / s) % e, independent columns of its index: a 2-D block's
 * tid % BX and tid / BX, each a lane variable of its own extent), a nonzero
 * constant offset, symbols that vary inside the launch -- is no
 * description (NULL and the reason): the launcher then zero-fills, which is
 * always right.  The host check only ever answers "covered" with a witness
 * (program, iteration, lane) for every element of the view.
 *
 * Requires: an Access from access_analyze whose Func is unchanged.  All
 * memory lives in the Access's arena.
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "analysis/access_int.h"

/* Where x sits in b: 1 when it is in b, or in `for` bodies and `if`
 * branches only, whose conditions (negated in `else` branches) are
 * appended to *conds, read exactly; -1 under another construct (`while`)
 * or a condition kad cannot read exactly (the reason in *why); 0 not in
 * b. */
static int nest(Access *A, const Block *b, const Inst *x, Cons *conds, const char **why)
{
    for (int k = 0; b && k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        if (in == x)
            return 1;
        for (int r = 0; r < in->nregions; r++) {
            int s = nest(A, in->regions[r], x, conds, why);
            if (!s)
                continue;
            if (s < 0)
                return -1;
            if (in->op == OP_IF) {
                const char *w = ac_cond_cons_exact(A, in->args[0], r == 1, conds);
                if (w)
                    *why = w;
                return w ? -1 : 1;
            }
            if (in->op != OP_FOR)
                *why = "it is read in a `while` loop";
            return in->op == OP_FOR ? 1 : -1;
        }
    }
    return 0;
}

/* Do p's symbols stay fixed for the whole launch? */
static bool invariant(const Access *A, const AccPoly *p)
{
    for (int i = 0; i < p->n; i++)
        for (int s = 0; s < ACC_NSYM && p->m[i].s[s]; s++)
            if (A->syms.v[p->m[i].s[s] - 1].dep)
                return false;
    return true;
}

/* Is the loop variable var one of s's `for` loops? */
static bool is_for_var(const Access *A, const AcSite *s, int var)
{
    for (int i = 0; i < s->fors.n; i++)
        if (A->loops.v[s->fors.v[i]].var == var)
            return true;
    return false;
}

/* Is form f exactly variable v (coefficient 1, no constant, no base)? */
static bool form_is_var(const AcForm *f, int v)
{
    int64_t k;
    return !f->why && !f->base && !f->c0.n && f->nt == 1 && f->t[0].var == v && ac_pis_const(&f->t[0].c, &k) &&
           k == 1;
}

/* Variable v as a digit of a lane: (lane / s) % e of lane axis *k (a `%` by a constant, optional,
 * of `//`s by constants of a lane: a 2-D block's tid % BX, tid / BX, a 3-D block's (tid / BX) % BY
 * and (tid / BX) / BY), with n = the axis's lanes a multiple of s * e. */
static bool lane_digit(const Access *A, int v, Type pt, int *k, int64_t *s, int64_t *e)
{
    const AcVar *x = &A->vars.v[v];
    int64_t c, mod = 0;
    *s = 1;
    for (int depth = 0;; depth++) {
        if ((x->kind != VK_DIV && x->kind != VK_MOD) || (x->kind == VK_MOD && depth) || x->swz ||
            !ac_pis_const(&x->d, &c) || c < 1 || !x->e || x->e->nt != 1)
            return false;
        int u = x->e->t[0].var;
        if (!form_is_var(x->e, u))
            return false;
        if (x->kind == VK_MOD)
            mod = c;
        else if (*s > INT32_MAX / c)
            return false;
        else
            *s *= c;
        if (u >= V_LANE && u < V_DYN) {
            *k = u - V_LANE;
            break;
        }
        if (u < V_DYN || depth > 4)
            return false;
        x = &A->vars.v[u];
    }
    int64_t n = *k < pt.rank ? pt.shape[*k] : 1;
    *e = mod ? mod : n / *s;
    return *e >= 1 && n % (*s * *e) == 0;
}

/* Do the lane digits among c's variables (dig[j]: set, its lane axis lax[j] and (s[j], e[j])) vary
 * independently over all their values: per lane axis, sorted by s, each s a multiple of the one
 * before's s * e (disjoint columns of a mixed radix), and no digit's lane used whole too? */
static bool digits_independent(const AccCover *c, const bool *dig, const int *lax, const int64_t *s,
                               const int64_t *e)
{
    for (int i = 0; i < c->nv; i++) {
        if (!dig[i])
            continue;
        for (int j = 0; j < c->nv; j++) {
            if (j == i)
                continue;
            if (!dig[j] && c->v[j].kind == CV_LANE && c->v[j].var == V_LANE + lax[i])
                return false; /* the lane itself, and a digit of it */
            if (dig[j] && lax[j] == lax[i] && s[j] >= s[i] && s[j] % (s[i] * e[i]))
                return false;
        }
    }
    return true;
}

/* Does clause cl (sum a_u * u < bound over c's variables) imply constraint b < 0 (an affine form
 * over the analysis's variables): b's terms are cl's with the same coefficients, its constant is
 * -bound, and cl's other terms have coefficients >= 0 (the variables are >= 0)? */
static bool clause_implies(Access *A, const AccCover *c, const CovClause *cl, const AcForm *b)
{
    AccPoly nb;
    if (b->why || b->base || !ac_padd(&nb, &(AccPoly){0}, &cl->bound, -1) || !ac_peq(&b->c0, &nb))
        return false;
    bool in[AC_NTERM] = {false};
    for (int t = 0; t < b->nt; t++) {
        int u = -1;
        for (int k = 0; k < cl->n; k++)
            u = c->v[cl->idx[k]].var == b->t[t].var ? k : u;
        if (u < 0 || !ac_peq(&b->t[t].c, &cl->a[u]))
            return false;
        in[u] = true;
    }
    Facts F = ac_base_facts(A);
    for (int k = 0; k < cl->n; k++)
        if (!in[k] && !ac_pnonneg(&F, &cl->a[k]))
            return false;
    return true;
}

/* Does the `for` loop of variable cv.var (lower bound 0, step 1) run at least as long as clause cl
 * (sum a_u * u < bound, a_k on the loop's counter k) holds for some lane: its trip count is
 * div(bound - sum_{u in U} a_u * u + a_k - 1, a_k), possibly max-ed with 0, U some of the clause's
 * other variables, the rest with coefficients >= 0?  (A grid-stride loop `for (i = start; i < n;
 * i += stride)` lowers to k < cdiv(n - start0, stride) with i = start + k * stride.)  Then every
 * k >= 0 where the clause holds is an iteration: a_k * k < bound - sum_all <= bound - sum_U, so the
 * numerator is positive and the truncating division is ceil((bound - sum_U) / a_k) > k. */
static bool clause_implies(Access *A, const AccCover *c, const CovClause *cl, const AcForm *b);

static bool loop_by_clause(Access *A, const AccCover *c, int j, const CovClause *cl, const AcForm *bound)
{
    if (bound && clause_implies(A, c, cl, bound))
        return true; /* the loop runs while `bound` holds, which cl implies */
    const AcLoop *L = NULL;
    for (int i = 0; i < A->loops.n && !L; i++)
        if (A->loops.v[i].var == c->v[j].var)
            L = &A->loops.v[i];
    int at = -1;
    for (int k = 0; k < cl->n; k++)
        at = cl->idx[k] == j ? k : at;
    if (!L || L->in->op != OP_FOR || at < 0)
        return false;
    const AccPoly *lb = ac_poly_of(A, L->in->args[0]), *step = ac_poly_of(A, L->in->args[2]);
    int64_t k0, k1;
    if (!lb || !step || !ac_pis_const(lb, &k0) || k0 || !ac_pis_const(step, &k1) || k1 != 1)
        return false;
    const Inst *ub = A->def[L->in->args[1]];
    if (ub && ub->op == OP_MAXIMUM) { /* max(x, 0): at least x */
        const AccPoly *z0 = ac_poly_of(A, ub->args[0]), *z1 = ac_poly_of(A, ub->args[1]);
        int64_t z;
        int keep = z1 && ac_pis_const(z1, &z) && !z ? 0 : z0 && ac_pis_const(z0, &z) && !z ? 1 : -1;
        ub = keep < 0 ? NULL : A->def[ub->args[keep]];
    }
    if (!ub || ub->op != OP_DIV)
        return false;
    const AccPoly *ak = &cl->a[at], *d = ac_poly_of(A, ub->args[1]);
    const AcForm *e = ac_form_of(A, ub->args[0]);
    Facts F = ac_base_facts(A);
    AccPoly one = ac_pconst(1), akm1, want;
    if (!d || !ac_peq(d, ak) || e->why || e->base || !ac_padd(&akm1, ak, &one, -1) || !ac_pnonneg(&F, &akm1) ||
        !ac_padd(&want, &cl->bound, &akm1, 1) || !ac_peq(&e->c0, &want))
        return false;
    bool inU[AC_NTERM] = {false};
    for (int t = 0; t < e->nt; t++) {
        int u = -1;
        for (int k = 0; k < cl->n; k++)
            u = k != at && c->v[cl->idx[k]].var == e->t[t].var ? k : u;
        AccPoly neg;
        if (u < 0 || !ac_padd(&neg, &(AccPoly){0}, &cl->a[u], -1) || !ac_peq(&e->t[t].c, &neg))
            return false;
        inU[u] = true;
    }
    for (int k = 0; k < cl->n; k++)
        if (k != at && !inU[k] && !ac_pnonneg(&F, &cl->a[k]))
            return false;
    return true;
}

/* Is constraint g the bound `iv < ub` of a `for` loop (ac_site_cons_exact's: form(iv) - form(ub) <
 * 0, iv = lb + step * k) over counter k among c's variables, which the host check could not use as
 * it is: a trip count that varies within the launch (a symbol depending on the program id: a
 * grid-stride loop's cdiv, kad's CUDA C lowering), or terms on other variables (a Triton
 * `range(pid * B, n, P * B)`)?  Its index in c, or -1. */
static int loop_bound_clause(Access *A, const AccCover *c, const AcForm *g)
{
    if (g->why || (g->nt <= 1 && invariant(A, &g->c0)))
        return -1;
    for (int j = 0; j < c->nv; j++) {
        if (c->v[j].kind != CV_LOOP)
            continue;
        for (int i = 0; i < A->loops.n; i++) {
            const Inst *L = A->loops.v[i].in;
            if (A->loops.v[i].var != c->v[j].var || L->op != OP_FOR)
                continue;
            const AcForm *b = ac_fadd(A, ac_form_of(A, L->regions[0]->params[0]), ac_form_of(A, L->args[1]), -1);
            if (!b->why && ac_feq(b, g))
                return j;
        }
    }
    return -1;
}

static const AccCover *refuse(const char **why, const char *w)
{
    if (why)
        *why = w;
    return NULL;
}

const AccCover *access_cover(Access *A, const Inst *mem, const char **why)
{
    AcSite *s = ac_site_of(A, mem);
    if (!s)
        return refuse(why, "not a memory access of the kernel");
    const AcForm *f = ac_site_form(A, s);
    if (f->why)
        return refuse(why, arena_printf(A->a, "its address is not affine (%s)", f->why));
    if (f->c0.n)
        return refuse(why, "its address has a constant offset from the parameter");
    Cons cs = {0}, ifs = {0};
    const char *w = "it is read in a `while` loop";
    if (nest(A, A->f->body, mem, &ifs, &w) != 1)
        return refuse(why, w);
    AcSite s0 = *s; /* the `if`s' conditions: ifs, read exactly (nest) */
    s0.ctx.n = 0;
    const char *inexact = ac_site_cons_exact(A, &s0, &cs);
    if (inexact)
        return refuse(why, inexact);
    for (int i = 0; i < ifs.n; i++)
        vec_push(A->a, cs, ifs.v[i]);
    AccCover *c = arena_alloc(A->a, sizeof *c);
    Type pt = ac_vty(A, mem->args[0]);
    unsigned used = 0;
    bool dig[AC_NTERM] = {0};
    int lax[AC_NTERM] = {0};
    int64_t ds[AC_NTERM] = {0}, de[AC_NTERM] = {0};
    for (int i = 0; i < f->nt; i++) {
        int v = f->t[i].var;
        CovVar cv = {v, 0, 0, f->t[i].c};
        int64_t e64 = 0;
        if (v < V_LANE) {
            cv.kind = CV_PID;
            cv.ext = v - V_PID;
            used |= 1u << cv.ext;
        } else if (v < V_DYN) {
            cv.kind = CV_LANE;
            cv.ext = v - V_LANE < pt.rank ? pt.shape[v - V_LANE] : 1;
        } else if (A->vars.v[v].kind == VK_LOOP && is_for_var(A, s, v)) {
            cv.kind = CV_LOOP;
        } else if (lane_digit(A, v, pt, &lax[c->nv], &ds[c->nv], &e64) && e64 <= INT32_MAX) {
            cv.kind = CV_LANE; /* a digit of a lane: its own extent */
            cv.ext = (int)e64;
            dig[c->nv] = true, de[c->nv] = e64;
        } else {
            return refuse(why, "its address uses `//`, `%` or a `while` loop's iterations");
        }
        if (!invariant(A, &cv.c))
            return refuse(why, "a coefficient of its address changes within the launch");
        c->v[c->nv++] = cv;
    }
    if (!digits_independent(c, dig, lax, ds, de))
        return refuse(why, "its address uses a lane and `//` or `%` of it, or digits of a lane that overlap");
    c->nonempty = 7u & ~used;
    const AcForm *dropped[AC_NTERM] = {NULL}; /* a loop's bound left out: its loop_by_clause must hold */
    for (int i = 0; i < cs.n; i++) {
        const AcForm *g = cs.v[i];
        CovClause cl = {0};
        bool nonpos = true;
        int lj = loop_bound_clause(A, c, g);
        if (lj >= 0) {
            dropped[lj] = g;
            continue;
        }
        if (g->why || !invariant(A, &g->c0))
            return refuse(why, "a clause of its mask kad cannot read");
        for (int k = 0; k < g->nt; k++) {
            int v = g->t[k].var, at = -1;
            for (int j = 0; j < c->nv; j++)
                if (c->v[j].var == v)
                    at = j;
            if (at < 0 && v >= V_DYN && A->vars.v[v].kind != VK_LOOP)
                return refuse(why, "its mask uses `//` or `%`");
            if (at < 0) /* not in the address: taken at 0 */
                continue;
            if (!invariant(A, &g->t[k].c))
                return refuse(why, "a coefficient of its mask changes within the launch");
            int64_t kc;
            nonpos = nonpos && ac_pis_const(&g->t[k].c, &kc) && kc <= 0;
            cl.idx[cl.n] = at;
            cl.a[cl.n++] = g->t[k].c;
        }
        AccPoly zero = {0};
        int64_t k0;
        if (!cl.n || nonpos) { /* largest at 0: holds everywhere iff c0 < 0 */
            if (ac_pis_const(&g->c0, &k0) && k0 < 0)
                continue;
            if (ac_pis_const(&g->c0, &k0))
                return refuse(why, "its mask is never true");
            vec_push(A->a, c->neg, g->c0);
            continue;
        }
        if (!ac_padd(&cl.bound, &zero, &g->c0, -1))
            return refuse(why, ac_too_big);
        vec_push(A->a, c->cl, cl);
    }
    /* every loop variable of the address needs a bound: a clause on it alone, or a clause its loop
     * runs for (a grid-stride loop: the host check then bounds it by that clause's group) */
    for (int j = 0; j < c->nv; j++) {
        bool bounded = c->v[j].kind != CV_LOOP;
        for (int i = 0; i < c->cl.n && !bounded && !dropped[j]; i++)
            bounded = c->cl.v[i].n == 1 && c->cl.v[i].idx[0] == j;
        for (int i = 0; i < c->cl.n && !bounded; i++)
            bounded = c->cl.v[i].n > 1 && loop_by_clause(A, c, j, &c->cl.v[i], dropped[j]);
        if (!bounded)
            return refuse(why, "a loop of its address has no bound kad can read");
    }
    return c;
}

const char *access_cover_host(Access *A, const AccCover *c, const char *tensor, const char *args, const char *grid)
{
    Buf b = {A->a, NULL, 0, 0};
    buf_printf(&b, "_kad_covers(%s, {", tensor);
    for (int j = 0; j < c->nv; j++) {
        const CovVar *v = &c->v[j];
        const char *s = ac_poly_host(A, &v->c, args, grid);
        if (!s)
            return NULL;
        buf_printf(&b, "%s%d: (%s, ", j ? ", " : "", j, s);
        if (v->kind == CV_PID)
            buf_printf(&b, "%s[%d])", grid, v->ext);
        else if (v->kind == CV_LANE)
            buf_printf(&b, "%d)", v->ext);
        else
            buf_puts(&b, "None)");
    }
    buf_puts(&b, "}, [");
    for (int i = 0; i < c->cl.n; i++) {
        const CovClause *cl = &c->cl.v[i];
        const char *s = ac_poly_host(A, &cl->bound, args, grid);
        if (!s)
            return NULL;
        buf_printf(&b, "%s(%s, (", i ? ", " : "", s);
        for (int k = 0; k < cl->n; k++)
            buf_printf(&b, "%s%d", k ? ", " : "", cl->idx[k]);
        buf_puts(&b, cl->n == 1 ? ",), (" : "), (");
        for (int k = 0; k < cl->n; k++) {
            if (!(s = ac_poly_host(A, &cl->a[k], args, grid)))
                return NULL;
            buf_printf(&b, "%s%s", k ? ", " : "", s);
        }
        buf_puts(&b, cl->n == 1 ? ",))" : "))");
    }
    buf_puts(&b, "], [");
    int nn = 0;
    for (int i = 0; i < c->neg.n; i++) {
        const char *s = ac_poly_host(A, &c->neg.v[i], args, grid);
        if (!s)
            return NULL;
        buf_printf(&b, "%s%s", nn++ ? ", " : "", s);
    }
    for (int k = 0; k < 3; k++)
        if (c->nonempty >> k & 1)
            buf_printf(&b, "%s-%s[%d]", nn++ ? ", " : "", grid, k);
    buf_puts(&b, "])");
    return buf_str(&b);
}

/* The host check the calls above make is _kad_covers, in
 * src/emit/py/cover.py: the emitter prints it into the launcher (the
 * analysis only writes the calls).  Everything is a Python int by then.
 * Runs: (stride, extent) sets {stride * u : 0 <= u < extent}; the written set holds every
 * sum of one element per run.  A view dimension of stride st falls in the
 * run (s, e) when s divides st and s <= st < s * e; the dimensions in one
 * run must together stay below its extent (then every element's offset is
 * a sum of one element per run). */

/* The same check in C (the CUDA C launcher's, for a dense gradient of `numel` elements): statements
 * that set the bool `out` by a call of kad_covers (src/emit/emit_cuda_host.c prints it), each of
 * the cover's polynomials printed by poly (NULL: it cannot; then so does this). */
const char *access_cover_c(Access *A, const AccCover *c, const char *numel, const char *out, AccPolyText poly,
                           void *ctx)
{
    Buf st = {A->a, NULL, 0, 0}, ex = {A->a, NULL, 0, 0}, cn = {A->a, NULL, 0, 0}, ci = {A->a, NULL, 0, 0};
    Buf ca = {A->a, NULL, 0, 0}, cb = {A->a, NULL, 0, 0}, ng = {A->a, NULL, 0, 0};
    for (int j = 0; j < c->nv; j++) {
        const CovVar *v = &c->v[j];
        const char *s = poly(ctx, A, &v->c);
        if (!s)
            return NULL;
        buf_printf(&st, "%s, ", s);
        if (v->kind == CV_PID)
            buf_printf(&ex, "(int64_t)grid_%c, ", "xyz"[v->ext]);
        else if (v->kind == CV_LANE)
            buf_printf(&ex, "%dLL, ", v->ext);
        else
            buf_puts(&ex, "-1LL, ");
    }
    for (int i = 0; i < c->cl.n; i++) {
        const CovClause *cl = &c->cl.v[i];
        const char *s = poly(ctx, A, &cl->bound);
        if (!s)
            return NULL;
        buf_printf(&cb, "%s, ", s);
        buf_printf(&cn, "%d, ", cl->n);
        for (int k = 0; k < cl->n; k++) {
            if (!(s = poly(ctx, A, &cl->a[k])))
                return NULL;
            buf_printf(&ci, "%d, ", cl->idx[k]);
            buf_printf(&ca, "%s, ", s);
        }
    }
    int nn = 0;
    for (int i = 0; i < c->neg.n; i++, nn++) {
        const char *s = poly(ctx, A, &c->neg.v[i]);
        if (!s)
            return NULL;
        buf_printf(&ng, "%s, ", s);
    }
    for (int k = 0; k < 3; k++)
        if (c->nonempty >> k & 1)
            buf_printf(&ng, "-(int64_t)grid_%c, ", "xyz"[k]), nn++;
    /* each array ends with an unused 0: none is empty */
    return arena_printf(A->a,
                        "    {\n"
                        "        const int64_t kad_st[] = {%s0}, kad_ext[] = {%s0};\n"
                        "        const int kad_cn[] = {%s0}, kad_ci[] = {%s0};\n"
                        "        const int64_t kad_ca[] = {%s0}, kad_cb[] = {%s0}, kad_neg[] = {%s0};\n"
                        "        %s = kad_covers(%s, %d, kad_st, kad_ext, %d, kad_cn, kad_ci, kad_ca, kad_cb, %d, "
                        "kad_neg);\n"
                        "    }\n",
                        buf_str(&st), buf_str(&ex), buf_str(&cn), buf_str(&ci), buf_str(&ca), buf_str(&cb),
                        buf_str(&ng), out, numel, c->nv, c->cl.n, nn);
}
