/* write/scatter.c -- scattered sites in a kernel of their own.
 *
 * Job: cross-entropy reads its logits row in a loop (a dense site: each
 * element of d_logits has one writer, a plain store) and the target logit
 * at a loaded label (a scattered site: kad cannot express where it lands).
 * In one kernel the two must both be atomics: another program's label may
 * point into this program's row, and a plain store could overwrite its
 * addition.  scatter_split (the decision, at the end of this file, which
 * write/plain.c asks first) gives the dense sites their plain mode and
 * marks the scattered ones; adj_load adds those with atomic_adds
 * tagged AD_SCATTER_MARK.  Here they move into a kernel of their own,
 * launched after the backward on the forward's grid (docs/AD.md,
 * "Scattered sites"):
 *   - the backward loses them (and what only they needed);
 *   - a copy of the backward per input keeps only that input's marked
 *     atomic_adds and what they need (every store, barrier and other
 *     atomic_add removed, then dead code), so it recomputes only what the
 *     scattered adjoints depend on.
 * Since the backward has stored every dense contribution before the
 * scatter kernel starts, the additions land on the finished values.  The
 * dense sites may be under a launch flag (plain stores when it holds, else
 * atomics): either way they are done before the scatter kernel runs, and
 * the copy, which has no dense site left, takes no flag.  The
 * copy must read nothing a backward kernel writes (it runs later than the
 * backward would have read it): every load's base is a parameter that no
 * store or atomic of either kernel writes through.  Requires a backward
 * without fold, GEMM form, gather or tapes (their kernels and parameters
 * are the backward's alone).
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "plan/plan.h"
#include "ad/ad.h"
#include "ad/ad_int.h"

static bool is_mark(const Inst *in)
{
    return in->op == OP_ATOMIC_ADD && in->sattr && !strcmp(in->sattr, AD_SCATTER_MARK);
}

bool ad_has_scatter(const Block *b)
{
    for (int k = 0; b && k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        if (is_mark(in))
            return true;
        for (int r = 0; r < in->nregions; r++)
            if (ad_has_scatter(in->regions[r]))
                return true;
    }
    return false;
}

/* Marks in used every value b's instructions (regions included) use. */
static void uses_of(const Block *b, uint8_t *used)
{
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        for (int j = 0; j < in->nargs; j++)
            used[in->args[j]] = 1;
        for (int r = 0; r < in->nregions; r++)
            uses_of(in->regions[r], used);
    }
}

bool ad_scatter_split(Arena *a, Program *P, int nfwd)
{
    Func *bw = P->main;
    if (P->fold || P->gemm || P->gather || P->tapes.n)
        return false;
    int nc = plan_nargs(P);
    GatherIn *ins = arena_alloc(a, sizeof *ins * (size_t)(nc + 1));
    int nk = 0;
    for (int slot = nfwd; slot < nc; slot++) {
        const char *dn = bw->vals.v[bw->params[slot]].name;
        if (!dn || strncmp(dn, "d_", 2))
            continue;
        Func *k = ir_func_clone(a, bw, arena_printf(a, "%s_scatter_%s", bw->name, dn + 2));
        uint8_t *der = arena_alloc(a, (size_t)k->vals.n + 1);
        der[k->params[slot]] = 1;
        int n = 0;
        StripSites keep = {.mark = AD_SCATTER_MARK, .keep = true};
        ad_strip_sites(k, k->body, der, &keep, &n);
        if (!n)
            continue;
        pass_dce(k, true);
        /* the launch flags (after the contract) chose between the dense sites' stores and
         * atomics, both gone: the copy takes the contract's parameters only */
        uint8_t *used = arena_alloc(a, (size_t)k->vals.n + 1);
        uses_of(k->body, used);
        for (int i = nc; i < k->nparams; i++)
            if (used[k->params[i]])
                return false;
        k->nparams = nc;
        GatherIn gi = {.name = dn + 2, .slot = slot, .k = k, .nsites = n,
                       .flag = -1, .scatter = true};
        ins[nk++] = gi;
    }
    if (!nk)
        return false;
    /* what the backward keeps: everything but the marked atomic_adds */
    Func *main = ir_func_clone(a, bw, bw->name);
    for (int j = 0; j < nk; j++) {
        uint8_t *der = arena_alloc(a, (size_t)main->vals.n + 1);
        der[main->params[ins[j].slot]] = 1;
        int n = 0;
        StripSites drop = {.mark = AD_SCATTER_MARK};
        ad_strip_sites(main, main->body, der, &drop, &n);
    }
    if (ad_has_scatter(main->body))
        return false; /* a marked atomic_add through no gradient parameter: not expected */
    pass_dce(main, true);
    /* the copies read nothing either kernel writes */
    size_t np = (size_t)bw->nparams + 1;
    uint8_t *w = arena_alloc(a, np), *r = arena_alloc(a, np);
    for (int j = 0; j < nk; j++)
        w[ins[j].slot] = 1;
    if (!access_params(access_analyze(a, main), main->nparams, w, NULL, AD_SCATTER_MARK))
        return false;
    for (int j = 0; j < nk; j++)
        if (!access_params(access_analyze(a, ins[j].k), ins[j].k->nparams, w, r, AD_SCATTER_MARK))
            return false;
    for (size_t p = 0; p < np; p++)
        if (r[p] && w[p])
            return false;
    Diags scratch;
    diag_init(&scratch, a);
    for (int j = 0; j < nk; j++)
        if (!ir_verify(ins[j].k, &scratch))
            return false;
    if (!ir_verify(main, &scratch))
        return false;
    GatherPlan *pl = arena_alloc(a, sizeof *pl);
    pl->n = nk;
    pl->in = ins;
    pl->main = 0;
    bw->body = main->body;
    bw->vals = main->vals;
    P->gather = pl;
    return true;
}

/* ---- The decision (write/plain.c asks, per input) ---- */

/* Scattered sites (docs/AD.md, "Scattered sites"): input i's loads ls
 * split into those whose address depends on a value kad cannot express (a
 * label read from memory: cross-entropy's target logit) and the others.
 * When both exist and the others alone get plain stores (1; 2 under a
 * launch flag) or private read-modify-writes (4, 5), the scattered ones
 * are marked (ad->scat): adj_load adds them with atomic_adds that
 * ad_scatter_split moves into a kernel of their own, run after the
 * backward has written the rest.  True when marked (the mode is decided);
 * else everything is as before the attempt. */
bool scatter_split(Ad *ad, Access **Ap, int i, const InstPtrVec *ls)
{
    if (!ad->scat || ls->n < 2)
        return false;
    if (!*Ap)
        *Ap = ad->acc = access_analyze(ad->a, ad->fw);
    InstPtrVec rest = {0}, scat = {0};
    for (int k = 0; k < ls->n; k++) {
        const Inst *l = ls->v[k];
        bool unknown = ad->root[l->args[0]] == i + 1 &&
                       (access_base(*Ap, l) != i ||
                        access_injective(*Ap, l, ACC_VARY_PIDS | ACC_VARY_LOOPS | ACC_VARY_LANES).v == ACC_UNKNOWN);
        if (unknown)
            vec_push(ad->a, scat, l);
        else
            vec_push(ad->a, rest, l);
    }
    if (!scat.n || !rest.n)
        return false;
    unsigned axes = ad->fold_axes;
    decide_loads(ad, Ap, i, &rest);
    if (ad->plain[i] == 1 || ad->plain[i] == 2 || ad->plain[i] == 4 || ad->plain[i] == 5) {
        for (int k = 0; k < scat.n; k++)
            ad->scat[scat.v[k]->res[0]] = 1;
        return true;
    }
    ad->plain[i] = 0;
    ad->why[i] = ad->when[i] = ad->cover_why[i] = NULL;
    ad->cover[i] = NULL;
    ad->first[i] = NULL;
    ad->cond[i].n = 0;
    ad->fold_axes = axes;
    return false;
}
