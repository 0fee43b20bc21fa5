/* emit_triton.h -- the Triton emitter's entry points: any IR Func as a
 * @triton.jit function (emit_triton.c), and the modules of a backward
 * Program, a jvp, a saving forward and a race check with their launchers
 * (emit_grad.c).
 *
 * Included by the emitter's files and by the API (kad.c; tests/c).
 * emit/emit.h is the private header of the Triton emitter's files
 * (emit_triton.c, emit_passes.c, emit_expr.c, emit_stmt.c),
 * emit/emit_grad.h that of the modules' emitters; the CUDA C emitter's
 * entry points are emit/emit_cuda.h.
 */
#ifndef KAD_EMIT_TRITON_H
#define KAD_EMIT_TRITON_H

#include "base/base.h"
#include "ir/ir.h"
#include "plan/plan.h"
#include "ad/autodiff.h"

/* ------------------------------------------------------------------ */
/* emit_triton.c                                                       */
/* ------------------------------------------------------------------ */

typedef struct EmitOptions {
    const char *name;   /* name of the @triton.jit function (NULL: the Func's) */
    const char *header; /* header comment text, may span lines (NULL: names the kernel) */
    /* A backward kernel (emit_triton_backward sets these): params [0, nfwd) are the
     * forward's, then nouts output gradients, then the input gradients.  The header is
     * then the whole module comment, parameters follow the def's order (ConstParam.pos,
     * constexprs without defaults), and the body is split into the sections "recompute
     * the forward" and "reverse sweep" (from the first statement reading an output
     * gradient). */
    bool backward;
    int nfwd, nouts;
    bool fragment;      /* only the @triton.jit function: no module comment, no imports (a
                         * second kernel of a module) */
    const char *jit_args; /* inside @triton.jit(...), e.g. do_not_specialize=[...]; NULL: none */
    bool jvp;           /* with backward: a jvp kernel (ad_forward): the def's order, then the
                         * tangent pointers, the body printed as one section */
    bool combine;       /* a scan's combine function (emit_triton builds these itself): the Func's
                         * params are the region's, its body the region, whose yield prints as
                         * `return` */
    /* With backward: the main kernel's plan as its Program holds it (src/plan/plan.h); NULL and 0
     * for any other kernel (companions, forwards, jvps). */
    const struct FoldPlan *fold; /* Program.fold: the fold loop and its hidden parameters, which
                                  * Triton does not specialize */
    const struct FuncFlag *flags; /* Program.flags: the parameters printed as tl.constexpr */
    int nflags;
} EmitOptions;

/* Appends to out a Python module holding f as one @triton.jit function
 * (runtime params, then the constexprs with their specialized values as
 * defaults) that computes what f computes.  IR without a Triton spelling
 * is a located error in d; returns false after any error.  opt may be NULL. */
bool emit_triton(Buf *out, const Func *f, const EmitOptions *opt, Diags *d);
/* One parameter of a kernel's def: a runtime parameter (index into
 * Func.params) or a constexpr (index into Func.consts). */
typedef struct DefParam {
    bool cnst;
    int i;
} DefParam;
/* The def's parameters in order: the first nfwd runtime parameters and every
 * constexpr at its ConstParam.pos; when a position is unknown (IR read from
 * text), the constexprs follow the runtime ones.  nfwd + consts.n entries. */
DefParam *emit_def_order(Arena *a, const Func *f, int nfwd);
/* Whether f holds an access made from a tensor descriptor (IF_DESC), which
 * emit_triton prints as tl.make_tensor_descriptor: Triton then needs a
 * global-scratch allocator at launch (triton.set_allocator). */
bool emit_has_desc(const Func *f);
/* A backward's descriptor stores into gradient parameters (params from nfwd
 * on): the distinct such parameters, in parameter order, into out (room for
 * f->nparams); returns their number.  Each store runs as TMA only under the
 * kernel's constexpr emit_tma_flag(p) (default False: pointer stores), which
 * the launcher sets when the gradient's base is 16-byte aligned. */
int emit_tma_grads(const Func *f, int nfwd, ValId *out);
const char *emit_tma_flag(Arena *a, const Func *f, ValId p);

/* emit_grad.c: appends the backward module of docs/GRAD.md: bwd (= ad_backward(fwd, spec)) as
 * @triton.jit <fwd>_bwd with the forward's parameters in the def's order, then the
 * gradient pointers, a header naming kernel, signature, inputs and outputs, and the
 * host launcher launch_<fwd>_bwd.  Every kernel comes before the host part, which a
 * separator comment opens; kernels_only: the module ends there (KAD_GRAD_KERNELS_ONLY).
 * Returns false after a located error in d. */
bool emit_triton_backward(Buf *out, const Func *fwd, const Program *bwd, const AdSpec *spec, bool kernels_only,
                          Diags *d);
/* emit_grad.c: the jvp module (docs/GRAD.md, "Forward mode"): jv (= ad_forward(fwd, spec)) as
 * @triton.jit <fwd>_jvp (the forward's parameters in the def's order, then the tangent pointers),
 * a header, and the host launcher launch_<fwd>_jvp.  False after a located error in d. */
bool emit_triton_jvp(Buf *out, const Func *fwd, const Func *jv, const AdSpec *spec, Diags *d);
/* The saving forward (ad_save.c: sv = save_kernel(fwd, plan, true)) as a
 * Python module: the kernel <name>_fwd and its launcher launch_<name>_fwd,
 * which takes the forward's runtime arguments, then the kad_saved buffer
 * (slot fp32 elements per program). */
bool emit_triton_saving(Buf *out, const Func *fwd, const Func *sv, int64_t slot, Diags *d);
/* The one-writer check of fwd's outputs (ad_race.c's plan p) as a Python module: its check
 * kernel <kernel>_race with launch_<kernel>_race, and check_<kernel>_races(grid, *args). */
struct RacePlan;
bool emit_triton_race(Buf *out, const Func *fwd, const struct RacePlan *p, Diags *d);

#endif
