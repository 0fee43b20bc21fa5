/* write/plain.c -- how each input gradient of a backward is written.
 *
 * Job: decide, per differentiated input, whether the backward can write its
 * gradient without atomics (docs/AD.md, "Deterministic input gradients"):
 * plain stores where each element has one reader in the launch (1, or 2
 * under a condition the launcher evaluates), read-modify-writes private to
 * the program for several load sites (4, or 5 under a condition), per-program
 * partials for an input every program along some grid axes reads (3: grid
 * folding, write/fold.c); otherwise atomics, with the reason in ad->why.
 *
 * Requires: ad_analyze's facts (roles, provenance, activity) and ad->spec.
 * Fills ad->plain, why, when, cond, cover (what a plain store reaches, for
 * the launcher's zero-fill: access_cover) and fold_axes; ad->acc holds the
 * forward's access analysis when one was needed.  Emits nothing: adj_load
 * (sweep_rev.c) writes what was decided.
 *
 * ad_plain_inputs asks each way in turn, per input: the scattered sites
 * (scatter_split, write/scatter.c), the plain stores and read-modify-writes
 * (decide_loads, here), the fold and site rows (fold_candidate, site_rows,
 * write/fold.c).  The gathers (write/gather.c) and the GEMM form
 * (write/gemm.c) decide after the reverse sweep, in backward.c's order.
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "ad/ad.h"
#include "ad/ad_int.h"

/* The loads of fw (regions included) that may read through parameter i
 * and get an adjoint: the only writers of d_<i> in the backward. */
static void input_loads(const Ad *ad, const Block *b, int i, InstPtrVec *out)
{
    for (int k = 0; b && k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        if (in->op == OP_LOAD && ad_root_has(ad, in->args[0], i) && ad_active(ad, in->res[0]))
            vec_push(ad->a, *out, in);
        for (int r = 0; r < in->nregions; r++)
            input_loads(ad, in->regions[r], i, out);
    }
}

/* The block of fw holding instruction x, or NULL. */
static const Block *block_of(const Block *b, const Inst *x)
{
    for (int k = 0; b && k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        if (in == x)
            return b;
        for (int r = 0; r < in->nregions; r++) {
            const Block *f = block_of(in->regions[r], x);
            if (f)
                return f;
        }
    }
    return NULL;
}

/* Can the launcher evaluate the condition (a Python expression over its
 * arguments and grid)?  Then the input's flag is a constexpr parameter. */
bool cond_checkable(Access *A, const AccCond *c)
{
    return access_cond_host(A, c, "_a", "_g") != NULL;
}

/* Decides, per differentiated input, whether its gradient may be written
 * with plain stores instead of atomic_adds: whether every element of d_x
 * gets at most one write in the whole launch.  The writers are the active
 * loads of x (adj_load); they must all be one site in registers (one
 * block, one pointer value, one mask: adj_load's PendingLoad sums them and
 * writes once) whose (program ids, loop iterations, lanes) -> element map
 * access.c proves injective for every launch.  d_x starts zero-filled,
 * so elements never read stay 0, as with atomics.  Distinct sites stay
 * atomic: access_disjoint compares two sites in one program and one
 * iteration only, and a site of one program may meet another program's.
 * Anything else (several sites, a pointer selected among parameters, a
 * runtime condition, an unknown address) keeps the atomics, with the
 * reason in ad->why.  (The conditions of this rule: decide_loads, below.)
 *
 * Input i's gradient mode from a verdict: `proven` when r is PROVEN; when
 * it is PROVEN_IF, `cond` under r's condition (the launcher's flag) if the
 * launcher can evaluate it, with why_if (a format taking the condition)
 * saying why the atomics remain when it fails.  False for other verdicts. */
static bool take_verdict(Ad *ad, Access *A, int i, AccResult r, int proven, int cond, const char *why_if)
{
    if (r.v == ACC_PROVEN) {
        ad->plain[i] = (uint8_t)proven;
        ad->why[i] = NULL;
        return true;
    }
    if (r.v != ACC_PROVEN_IF)
        return false;
    const char *py = access_cond_python(A, r.cond);
    ad->why[i] = arena_printf(ad->a, why_if, py ? py : "a condition on runtime values holds");
    if (py && cond_checkable(A, r.cond)) {
        ad->plain[i] = (uint8_t)cond;
        ad->cond[i].n = 0;
        vec_push(ad->a, ad->cond[i], r.cond);
        ad->when[i] = py;
    }
    return true;
}

/* Has c a clause whose every alternative is `k - (positive terms) >= 0`
 * (k >= 0, some k > 0 when there is one alternative: an upper bound on
 * sizes or program counts, as `63 >= n`, or `W <= 0 || 3 * W <= 17` of a
 * 2-D stencil's rows private to a block) that the conjunction x does not
 * imply? */
static bool bounds_size(const AccCondVec *x, const AccCond *c)
{
    for (int j = 0; j < c->n; j++) {
        const AccClause *cl = &c->c[j];
        bool upper = cl->n > 0, pos = false;
        for (int d = 0; d < cl->n && upper; d++) {
            const AccPoly *p = &cl->p[d];
            int64_t k0 = 0;
            bool neg = p->n > 0, sym = false;
            for (int m = 0; m < p->n; m++) {
                if (!p->m[m].s[0])
                    k0 += p->m[m].k;
                else
                    neg = neg && p->m[m].k < 0, sym = true;
            }
            upper = neg && sym && k0 >= 0;
            pos = pos || k0 > 0;
        }
        AccCond one = {.n = 1, .c = {*cl}};
        if (upper && (pos || cl->n > 1) && !access_cond_implies(x, &one))
            return true;
    }
    return false;
}

/* Input i is loaded at several sites (LayerNorm reads x's row in three
 * loops): its gradient needs no atomics when the elements one program
 * reads, through all the sites, are read by no other program
 * (access_private over every grid axis) and each site's lanes are distinct
 * elements.  Then each site adds its adjoint by a read-modify-write of
 * d_<x> between barriers (adj_load, plain 4), in program order; under a
 * runtime condition, with atomics when it fails (plain 5). */
static void private_sites(Ad *ad, Access *A, int i, const InstPtrVec *ls)
{
    const char **why = &ad->why[i];
    *why = "it is loaded at several sites, which kad does not prove disjoint across programs";
    bool lanes = true;
    for (int k = 0; k < ls->n; k++) {
        if (access_base(A, ls->v[k]) != i)
            return;
        lanes = lanes && access_injective(A, ls->v[k], ACC_VARY_LANES).v == ACC_PROVEN;
    }
    AccResult r = {.v = ACC_UNKNOWN};
    if (lanes)
        r = access_private(A, ls->v, ls->n, 7);
    /* private read-modify-writes (no partials) when proven; else site rows
     * when proven for every launch; both under conditions: private ones
     * unless their condition bounds the launch's size where the site rows'
     * does not (a 1-D stencil's taps are private only to one program) */
    if (r.v == ACC_PROVEN) {
        take_verdict(ad, A, i, r, 4, 5, "");
        return;
    }
    if (r.v == ACC_PROVEN_IF && cond_checkable(A, r.cond)) {
        if (site_rows(ad, A, i, ls) && (ad->plain[i] == 6 || bounds_size(&ad->cond[i], r.cond)))
            return;
        take_verdict(ad, A, i, r, 4, 5, "it is loaded at several sites, whose elements no two programs share "
                                        "only when %s");
        return;
    }
    if (site_rows(ad, A, i, ls))
        return;
    if (!lanes)
        *why = "it is loaded at several sites, and kad cannot prove that a load's lanes read distinct elements";
    else if (!take_verdict(ad, A, i, r, 4, 5, "it is loaded at several sites, whose elements no two programs "
                                              "share only when %s") && r.why)
        *why = arena_printf(ad->a, "it is loaded at several sites, and programs may share elements (%s)", r.why);
}

/* The index in body of the top-level instruction holding x, or -1. */
static int top_index(const Block *body, const Inst *x)
{
    for (int k = 0; k < body->insts.n; k++) {
        const Inst *in = &body->insts.v[k];
        if (in == x)
            return k;
        for (int r = 0; r < in->nregions; r++)
            if (block_of(in->regions[r], x))
                return k;
    }
    return -1;
}

/* Are loads a and b one site (adj_load adds their adjoints in registers and
 * writes once): one block, one pointer value, one mask? */
static bool same_site(const Block *body, const Inst *a, const Inst *b)
{
    ValId ma = a->flags & IF_HAS_MASK ? a->args[1] : 0, mb = b->flags & IF_HAS_MASK ? b->args[1] : 0;
    return a->args[0] == b->args[0] && ma == mb && block_of(body, a) == block_of(body, b);
}

/* Input i (plain 4, 5: read-modify-writes private to the program at
 * several sites): the backward runs the adjoints of the forward's
 * top-level statements in reverse, so the site in the last top-level
 * statement (S) runs entirely before every other site when all their loads
 * lie in earlier statements than S's earliest load (adj_load writes a site
 * where the reverse walk reaches its earliest load).  When S also writes each element at most once per
 * program (access_injective over loops and lanes: no iteration of S adds
 * into another's element), S may store its adjoint without reading d_x:
 *   - no other program touches S's elements (access_private, all sites),
 *     and nothing of this program touches them before S;
 *   - an element S stores then holds exactly its adjoint so far, as the
 *     read-modify-write of a zero-filled d_x would have left it, and the
 *     later sites add to it in order;
 *   - an element S does not store stays as the launcher left it: zero-
 *     filled, unless S's stores cover the whole view (access_cover of S,
 *     checked by the launcher), when there is no such element of the view.
 * So no inclusion of the later sites' elements in S's is needed: the
 * zero-fill decision is S's coverage.  S under an `if` is fine (it runs
 * once or not at all; access_cover then describes nothing: zero-fill). */
static void first_writer(Ad *ad, Access *A, int i, const InstPtrVec *ls)
{
    const Block *body = ad->fw->body;
    int best = -1, at = -1;
    for (int k = 0; k < ls->n; k++) {
        int t = top_index(body, ls->v[k]);
        if (t < 0)
            return;
        if (t > best)
            best = t, at = k;
    }
    if (at < 0)
        return;
    const Inst *s = ls->v[at];
    for (int k = 0; k < at; k++) /* the site's earliest load: the one adj_load writes at */
        if (same_site(body, ls->v[k], s)) {
            s = ls->v[k];
            break;
        }
    /* adj_load writes a site at its earliest load: s's statement must
     * follow every load of the other sites (they write at or before theirs) */
    int ts = top_index(body, s);
    for (int k = 0; k < ls->n; k++)
        if (!same_site(body, ls->v[k], s) && top_index(body, ls->v[k]) >= ts)
            return;
    if (access_injective(A, s, ACC_VARY_LOOPS | ACC_VARY_LANES).v != ACC_PROVEN)
        return;
    ad->first[i] = s;
    ad->cover[i] = access_cover(A, s, &ad->cover_why[i]);
}

/* Decides input i's mode from its active loads ls (ad_plain_inputs). */
void decide_loads(Ad *ad, Access **Ap, int i, const InstPtrVec *ls)
{
    const Func *fw = ad->fw;
    const char **why = &ad->why[i];
    bool one = true, several = false;
    for (int k = 0; k < ls->n && one; k++) {
        const Inst *l = ls->v[k], *l0 = ls->v[0];
        ValId m = l->flags & IF_HAS_MASK ? l->args[1] : 0, m0 = l0->flags & IF_HAS_MASK ? l0->args[1] : 0;
        if (ad->root[l->args[0]] != i + 1) {
            *why = "a pointer selected among several parameters or read from memory reaches it";
            one = false;
        } else if (k && (l->args[0] != l0->args[0] || m != m0 || block_of(fw->body, l) != block_of(fw->body, l0))) {
            several = true;
        }
    }
    if (!one)
        return;
    if (several) {
        if (!*Ap)
            *Ap = ad->acc = access_analyze(ad->a, fw);
        private_sites(ad, *Ap, i, ls);
        if (ad->plain[i] == 4 || ad->plain[i] == 5) {
            first_writer(ad, *Ap, i, ls);
            /* an input the forward also writes (in place) has its gradient read at the
             * stores' addresses too: keep the barriers */
            if (!ad->first_store[i] && !ad->first_atomic[i] && !access_lane_private(*Ap, ls->v, ls->n, 7, &ad->rmw_lanes[i]))
                ad->rmw_lanes[i] = 0;
        }
        return;
    }
    if (!ls->n) { /* nothing writes d_x */
        ad->plain[i] = 1;
        return;
    }
    if (!*Ap)
        *Ap = ad->acc = access_analyze(ad->a, fw);
    Access *A = *Ap;
    const Inst *l = ls->v[0];
    if (access_base(A, l) != i) {
        *why = "its address is not an affine form kad can analyze";
        return;
    }
    AccResult r = access_injective(A, l, ACC_VARY_PIDS | ACC_VARY_LOOPS | ACC_VARY_LANES);
    if (take_verdict(ad, A, i, r, 1, 2, "elements are distinct per lane, iteration and program only when %s")) {
        if (ad->plain[i] == 1 || ad->plain[i] == 2) /* the launcher may skip the zero-fill */
            ad->cover[i] = access_cover(A, l, &ad->cover_why[i]);
        return;
    }
    /* the grid axes the kernel tells apart (axis 0 when it uses none) */
    unsigned axes = 0, used = used_axes(fw->body), told = used ? used : 1;
    if (r.v == ACC_NOT_INJECTIVE && access_pid_independent(A, l, &axes) && (axes & told)) {
        int k = 0;
        while (!(axes & told & (1u << k)))
            k++;
        *why = arena_printf(ad->a, "it is shared across programs (its address does not depend on "
                                   "tl.program_id(%d))", k);
        fold_candidate(ad, A, i, l, axes);
    }
    else if (r.v == ACC_NOT_INJECTIVE)
        *why = arena_printf(ad->a, "the load is not injective (%s)", r.why);
    else
        *why = arena_printf(ad->a, "kad cannot tell whether the load is injective (%s)", r.why);
}

void ad_plain_inputs(Ad *ad)
{
    const Func *fw = ad->fw;
    Access *A = NULL;
    for (int i = 0; i < fw->nparams; i++) {
        if (ad->role[i] != AD_ROLE_IN)
            continue;
        const char **why = &ad->why[i];
        InstPtrVec ls = {0};
        input_loads(ad, fw->body, i, &ls);
        if (ad->stored[i]) {
            *why = "the kernel also writes it";
            continue;
        }
        if (ad->spec->atomics) {
            *why = "atomics were asked for (deterministic=False)";
            continue;
        }
        if (!scatter_split(ad, &A, i, &ls))
            decide_loads(ad, &A, i, &ls);
    }
}
