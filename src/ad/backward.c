/* backward.c -- ad_backward: the reverse-mode driver and its strategy order.
 *
 * Job: a forward kernel's backward as a Program (plan.h).  The ways of
 * writing an input gradient are tried in this one order:
 *   1. gauge_rewrite (ad_gauge.c): online-softmax loops in two passes;
 *   2. ad_reverse (sweep_rev.c) with write/plain.c's decision per input
 *      (plain stores, read-modify-writes, the fold and site rows of
 *      write/fold.c, scattered sites marked for write/scatter.c), then
 *      simplification (reverse_simplified);
 *   3. gathers (write/gather.c, gather_inputs) for the site-row inputs
 *      whose rule holds;
 *   4. the GEMM form (write/gemm.c, gemm_inputs) for the matmul operands
 *      still written with atomics, unless --atomics or a gather;
 *   5. narrowed adjoint dots (pass_narrow_dots), unless 3 or 4 took kernels;
 *   6. scattered sites split into a kernel of their own (write/scatter.c),
 *      or the backward built again without them;
 *   7. the spread of a loop over programs (write/spread.c);
 *   8. plan_steps: the Program's host steps from its plan data.
 *
 * Requires: a verified fwd.  Guarantees: a Program whose kernels verify, or
 * NULL with located errors; fwd unchanged.  Also the AdSpec helpers
 * ad_mutation_by_name and ad_split_names.
 */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "plan/plan.h"
#include "ad/autodiff.h"
#include "ad/ad.h"
#include "ad/ad_int.h"

int ad_mutation_by_name(const char *name)
{
    static const char *const names[] = {"none", "exp", "mul", "max", "where", "cumsum", "max_drop", "tape",
                                         "libm", "strong_zero", "scan_jac"};
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (name && !strcmp(name, names[i]))
            return i;
    return -1;
}

int ad_split_names(Arena *a, const char *s, const char ***out)
{
    Vec(const char *) v = {0};
    while (s && *s) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        const char *p = s, *q = s + n;
        while (p < q && (*p == ' ' || *p == '\t'))
            p++;
        while (q > p && (q[-1] == ' ' || q[-1] == '\t'))
            q--;
        if (q > p)
            vec_push(a, v, arena_strndup(a, p, (size_t)(q - p)));
        s = e ? e + 1 : NULL;
    }
    *out = v.v;
    return v.n;
}

/* ad_reverse, then simplification and verification. */
Program *reverse_simplified(Arena *a, Diags *d, const Func *orig, const Func *fwd, const AdSpec *spec,
                            const uint8_t *gmode, bool nofold, bool scatter, uint8_t *plain_out)
{
    Program *P = ad_reverse(a, d, fwd, spec, gmode, nofold, scatter, plain_out);
    if (!P)
        return NULL;
    Func *bw = P->main;
    /* A backward that does not verify is a kad bug; say so plainly. */
    bool ok = ad_gauge_fuse(bw) && ir_verify(bw, d) && pass_run(bw, "simplify", d);
    /* Each `while` of a backward recomputes one of the forward's, which
     * terminated: the primal sweep's copy of a loop that only stored is dead. */
    if (ok)
        ok = pass_dce(bw, true);
    if (ok)
        ad_fold_pipeline(a, P);
    if (!ok || !ir_verify(bw, d)) {
        diag_note(d, orig->loc, "kad bug: the backward kernel of '%s' is invalid", orig->name);
        return NULL;
    }
    return P;
}

/* Steps 2 to 5 of the header's list: the backward of fwd (gauge-rewritten;
 * orig: as written), with scattered sites (write/plain.c) marked when scatter. */
static Program *backward_of(Arena *a, Diags *d, const Func *orig, const Func *fwd, const AdSpec *spec,
                            bool scatter)
{
    uint8_t *plain = arena_alloc(a, (size_t)fwd->nparams + 1);
    /* 2. the reverse sweep with write/plain.c's decision per input */
    Program *P = reverse_simplified(a, d, orig, fwd, spec, NULL, false, scatter, plain);
    if (!P)
        return NULL;
    /* 3. gathers for the site-row inputs whose rule holds */
    bool ran = false;
    Program *gb = gather_inputs(a, orig, fwd, spec, plain, &ran);
    if (gb) {
        P = gb;
    } else if (ran) { /* the spec's answers (grad_write, ...) are the last run's: today's again */
        Diags scratch;
        diag_init(&scratch, a);
        P = reverse_simplified(a, &scratch, orig, fwd, spec, NULL, false, scatter, NULL);
    }
    if (!P)
        return NULL;
    Func *bw = P->main;
    /* 4. the GEMM form for the matmul operands still written with atomics */
    if (!spec->atomics && !P->gather && !gemm_inputs(a, d, fwd, P, spec)) {
        diag_note(d, fwd->loc, "kad bug: the GEMM kernels of the backward of '%s' are invalid", fwd->name);
        return NULL;
    }
    /* 5. adjoint dots on widened 16-bit tiles take the tiles as they are (exact); not where the
     * GEMM form or a gather took kernels of their own from bw (they keep its instructions) */
    if (!P->gemm && !P->gather && pass_narrow_dots(bw, fwd->nparams) > 0 &&
        !(pass_dce(bw, true) && ir_verify(bw, d))) {
        diag_note(d, fwd->loc, "kad bug: the backward kernel of '%s' is invalid", fwd->name);
        return NULL;
    }
    return P;
}

Program *ad_backward(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec)
{
    const Func *orig = fwd;
    const char **notes; /* the rewritten loops', the header's and `kad grad --report`'s */
    int nnotes;
    fwd = gauge_rewrite(a, fwd, &notes, &nnotes); /* 1. online-softmax loops: two passes, the max alone taped */
    Program *P = backward_of(a, d, orig, fwd, spec, !spec->atomics);
    /* 6. scattered sites: a kernel of their own after bw, or, where the split does not
     * apply, the backward built without them (every site of those inputs atomic) */
    if (P && ad_has_scatter(P->main->body) && !ad_scatter_split(a, P, fwd->nparams)) {
        Diags scratch;
        diag_init(&scratch, a);
        P = backward_of(a, &scratch, orig, fwd, spec, false);
        if (!P)
            diag_note(d, orig->loc, "kad bug: the backward kernel of '%s' could not be built again", orig->name);
    }
    if (P) { /* 7. a loop sharing nothing between iterations: the launcher may deal them to more programs */
        P->notes.v = notes;
        P->notes.n = P->notes.cap = nnotes;
        ad_spread(a, P);
        if (P->spread && !ir_verify(P->main, d)) {
            diag_note(d, orig->loc, "kad bug: the spread backward kernel of '%s' is invalid", orig->name);
            return NULL;
        }
        plan_steps(P); /* 8. the plan data is final: the host steps in order */
    }
    return P;
}
