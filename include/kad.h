/* kad.h -- the public C API of kad, a compiler that differentiates GPU kernels.
 *
 * Usage:
 *   kad_ctx *c = kad_ctx_new();
 *   kad_add_source(c, "add.py", text);
 *   kad_kernel *k = kad_specialize(c, "add_kernel", "x_ptr=*fp32,n=i32,BLOCK=1024", 0);
 *   if (!k) fputs(kad_diagnostics(c), stderr);
 *   puts(kad_kernel_ir(k));
 *   kad_run(k, grid, args, nargs, KAD_RUN_AS_WRITTEN);
 *   kad_ctx_free(c);
 *
 * Every object belongs to its context and lives until kad_ctx_free.  No
 * function prints or exits; errors are reported through kad_diagnostics()
 * as "file:line:col: error: message" followed by the source line and a
 * caret.  A context is not thread-safe; distinct contexts are independent
 * (kad has no global mutable state).
 */
#ifndef KAD_H
#define KAD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KAD_VERSION "0.1.0"

/* The shared library exports only this API (built with -fvisibility=hidden). */
#if defined(__GNUC__)
#define KAD_API __attribute__((visibility("default")))
#else
#define KAD_API
#endif

typedef struct kad_ctx kad_ctx;
typedef struct kad_kernel kad_kernel;

/* Flags for kad_specialize. */
enum {
    KAD_UNROLL_CONST_LOOPS = 1 << 0, /* unroll `range` loops with constexpr bounds */
    KAD_NO_SIMPLIFY = 1 << 1,        /* skip the simplify pass */
};

/* Interpreter modes for kad_run. */
enum {
    KAD_RUN_AS_WRITTEN = 0, /* float32 in float32; fp16/bf16 rounded like the GPU stores them */
    KAD_RUN_F64 = 1,        /* every float value in double; float buffers hold float64 */
};

/* One runtime argument of kad_run, in the order of the kernel's runtime
 * (non-constexpr) parameters: pointer params set data/nbytes, integer
 * scalars i, float scalars f. */
typedef struct kad_arg {
    void *data;
    int64_t nbytes;
    int64_t i;
    double f;
} kad_arg;

KAD_API kad_ctx *kad_ctx_new(void); /* NULL if out of memory */
KAD_API void kad_ctx_free(kad_ctx *c);
KAD_API const char *kad_version(void);

/* Adds a Python source file (a module of @triton.jit functions).  Returns 0,
 * or -1 on syntax errors (see kad_diagnostics). */
KAD_API int kad_add_source(kad_ctx *c, const char *filename, const char *text);

/* Specializes a kernel of the added sources for a signature such as
 * "x_ptr=*fp32,y_ptr=*bf16,n=i32,eps=fp32,BLOCK=1024,ACT='gelu'" and lowers
 * it to verified IR.  NULL on error. */
KAD_API kad_kernel *kad_specialize(kad_ctx *c, const char *kernel, const char *sig, unsigned flags);

/* Parses a kernel in textual IR and verifies it.  NULL on error. */
KAD_API kad_kernel *kad_parse_ir(kad_ctx *c, const char *filename, const char *text);

/* Runs a named pass on a kernel in place ("simplify", "dce", "verify").
 * Returns 0 or -1. */
KAD_API int kad_run_pass(kad_kernel *k, const char *pass);

/* The kernel's textual IR (owned by the context).  For a backward (kad_grad), its
 * Program: the main kernel, the other kernels its launcher runs (the fold's sum
 * kernel, the GEMM form's, gather and scattered-site kernels) and its plan with
 * the host steps (docs/IR.md, "Programs"); kad_parse_ir reads it back. */
KAD_API const char *kad_kernel_ir(kad_kernel *k);

/* For a backward built with KAD_GRAD_TRUSTED: the buffers it loads as the
 * forward stored them, comma-separated ("" when it loads none: it is the
 * backward built without the flag). */
KAD_API const char *kad_kernel_trusted(kad_kernel *k);

/* Runtime parameters of a specialized kernel, in call order: what kad_run
 * takes.  Runtime parameters the signature specialized as Triton does
 * (`b_ptr=None`, `stride=1`) are constants of the kernel, not listed. */
KAD_API int kad_kernel_nparams(const kad_kernel *k);
KAD_API const char *kad_kernel_param_name(const kad_kernel *k, int i);
/* Type of parameter i: "*fp32", "i32", "fp32", ... */
KAD_API const char *kad_kernel_param_type(const kad_kernel *k, int i);

/* The signature ranges that would make loops of k straight-line code:
 * "n=1:4096,m=1:128", one entry per (parameter, range), for each
 * `range(start, n, step)` loop (constant start, step > 0; n a runtime int
 * parameter without a range in k's signature) that runs exactly once for n
 * in [start + 1, start + step].  A caller whose value lies inside may
 * specialize again with `n=i32[1:4096]` in the signature (the kernel then
 * refuses values outside).  "" when there are none (also for IR read from
 * text); owned by the context. */
KAD_API const char *kad_kernel_range_hints(const kad_kernel *k);

/* Runs the kernel on the CPU interpreter over grid[0] x grid[1] x grid[2]
 * programs.  Returns 0, or -1 with a diagnostic naming the source line and
 * program id (out-of-bounds access, failed device_assert, ...). */
KAD_API int kad_run(kad_kernel *k, const int64_t grid[3], const kad_arg *args, int nargs, int mode);

/* All diagnostics reported so far in this context, rendered; "" if none. */
KAD_API const char *kad_diagnostics(kad_ctx *c);
/* Forgets the diagnostics reported so far. */
KAD_API void kad_clear_diagnostics(kad_ctx *c);

/* The launch conditions of a backward kernel (its guards: docs/AD.md), checked for a launch of its
 * forward before the forward runs: iargs holds the forward's runtime arguments in order (ints;
 * others ignored), grid the forward's.  Returns 0, or -1 with the located refusal. */
KAD_API int kad_check_launch(kad_kernel *bwd, const int64_t grid[3], const int64_t *iargs, int n);

/* One writer per element (docs/AD.md, "One writer per element"): checks that the launch of
 * k with these arguments (as kad_run takes them) has no two programs, and no two lanes of one
 * store, writing one element of an output in out (comma-separated names): runs kad's check
 * kernel on the interpreter unless kad proves it for the launch.  Returns 0, or -1 with a
 * located diagnostic (the launch would give no right gradient). */
KAD_API int kad_race_check(kad_kernel *k, const char *out, const int64_t grid[3], const kad_arg *args, int nargs,
                           int mode);
/* The same check for a GPU as a Python module (launch_<kernel>_race(grid, *args) raises
 * ValueError with the located message); "" when kad proves every launch; NULL on error. */
KAD_API const char *kad_race_module(kad_kernel *k, const char *out);

/* ---- Reverse-mode AD (docs/AD.md) ---- */

/* The backward kernel of k: same grid, parameters = k's runtime parameters,
 * then d_<out> for each output in `out`, then d_<x> for each input in `wrt`
 * (comma-separated pointer-parameter names, e.g. "x_ptr,w_ptr").  The
 * caller zero-fills the input gradients; output gradients are only read.
 * A name in both wrt and out is a buffer the kernel updates in place: it
 * gets one gradient parameter d_<x>, among the outputs'; the caller passes
 * the value before the launch as x and the gradient of the value after it
 * as d_<x>, which the backward overwrites with the gradient of the value
 * before it (docs/GRAD.md).  NULL with located diagnostics when k cannot
 * be differentiated. */
KAD_API kad_kernel *kad_grad(kad_kernel *k, const char *wrt, const char *out);
/* kad_grad with flags: KAD_GRAD_ATOMICS accumulates every input gradient
 * with tl.atomic_add (the order of float additions, and so the last bits,
 * may change from run to run) instead of the deterministic default: plain
 * stores where each element has one writer, per-program partials reduced
 * in a fixed order where several programs add into one element. */
/* KAD_GRAD_SAVED: the backward of k's saving forward (kad_save_forward):
 * it takes one more runtime parameter, kad_saved (last, after k's runtime
 * parameters and before the gradients), the buffer the saving forward
 * filled on the same arguments and grid, and loads the saved loop results
 * instead of running those loops again.  Refused when k has nothing to
 * save (kad_save_slot(k) == 0). */
/* KAD_GRAD_KERNELS_ONLY (kad_grad_module_ex only): the module's kernels alone,
 * without the host part (the launcher and its helpers) that follows them.
 * KAD_GRAD_TRUSTED: the caller guarantees that k's output and scratch
 * buffers still hold what the forward stored (the Python package checks
 * their version counters): the backward loads a softmax's or log-softmax's
 * output and a norm's stored statistics instead of recomputing them
 * (docs/AD.md, "Trusted saved outputs").  Same parameters; wrong gradients
 * if the buffers were changed, so only for callers that check. */
enum { KAD_GRAD_ATOMICS = 1, KAD_GRAD_SAVED = 2, KAD_GRAD_KERNELS_ONLY = 4, KAD_GRAD_TRUSTED = 8 };
KAD_API kad_kernel *kad_grad_ex(kad_kernel *k, const char *wrt, const char *out, unsigned flags);

/* ---- Saved loop results (docs/AD.md, "Saved loop results") ---- */

/* The fp32 elements per program of k's saved loop results: the results of
 * k's top-level loops over memory that its backward would otherwise run
 * again.  0 when k has none (its backward recomputes everything); -1 on
 * error. */
KAD_API long long kad_save_slot(kad_kernel *k);
/* The saving forward: k, plus one more runtime parameter kad_saved (*fp32,
 * last) into which it stores those results, kad_save_slot(k) elements per
 * program (program p = pid0 + G0 * (pid1 + G1 * pid2) at p * slot).  NULL
 * with a diagnostic when k has nothing to save. */
KAD_API kad_kernel *kad_save_forward(kad_kernel *k);
/* The saving forward as a Python module: @triton.jit <kernel>_fwd and
 * launch_<kernel>_fwd(grid, *args, kad_saved, num_warps=None,
 * num_stages=None).  Owned by the context; NULL with a diagnostic. */
KAD_API const char *kad_save_module(kad_kernel *k);

/* How k uses its runtime parameter i (a pointer): KAD_ACCESS_LOAD if some
 * load may read through it, KAD_ACCESS_STORE if some store or atomic may
 * write through it (a pointer of unknown provenance counts for every
 * pointer parameter); 0 for scalars and unused pointers, -1 on error. */
enum { KAD_ACCESS_LOAD = 1, KAD_ACCESS_STORE = 2 };
KAD_API int kad_kernel_param_access(kad_kernel *k, int i);

/* Options of kad_check.  Zero fields take the defaults. */
typedef struct kad_check_opts {
    const char *wrt, *out; /* as for kad_grad */
    int64_t grid[3];       /* programs; 0 in y/z means 1 */
    const char *shapes;    /* element count of every pointer parameter: "x_ptr=64x128,w_ptr=128" */
    const char *args;      /* value of every scalar parameter: "n_cols=128,eps=1e-5" */
    const char *ranges;    /* optional input distributions: "x_ptr=0.5:2" (default -1:1) */
    uint64_t seed;         /* random inputs, cotangents, directions (default 1) */
    int directions;        /* random directions per input (default 4) */
    int64_t elem_limit;    /* per-element check up to this many elements (default 4096; <0: never) */
    double rtol;           /* relative tolerance (default 1e-6) */
    const char *mutate;    /* testing aid only: NULL, or the name of one adjoint rule
                              ("exp", "mul", "max", "where", "cumsum", "max_drop") to break on purpose,
                              so tests can prove the checker fails */
    int saved;             /* nonzero: check the backward of the saving forward (KAD_GRAD_SAVED), run
                              after the saving forward has filled its buffer on the same inputs */
} kad_check_opts;

/* Checks kad_grad(k) against float64 central finite differences on the
 * interpreter.  Returns the report (one line per input, then PASS or FAIL)
 * and sets *passed to 1 or 0; NULL on error (see kad_diagnostics). */
KAD_API const char *kad_check(kad_kernel *k, const kad_check_opts *o, int *passed);

/* The kernel as a Python module holding one @triton.jit function that
 * computes what k computes (see docs/EMIT.md); owned by the context.  NULL
 * with a located diagnostic when some IR construct has no Triton spelling. */
KAD_API const char *kad_kernel_triton(kad_kernel *k);

/* ---- The backward module (docs/GRAD.md) ---- */

/* The backward of k as a Python module: @triton.jit <kernel>_bwd taking the
 * forward's parameters in the def's order, then d_<out> per output, then
 * d_<x> per input, and the host function launch_<kernel>_bwd(grid, *args,
 * num_warps=None, num_stages=None, **constexprs) that callers use.  wrt and
 * out as for kad_grad.  Owned by the context; NULL with located diagnostics
 * when k cannot be differentiated or printed. */
KAD_API const char *kad_grad_module(kad_kernel *k, const char *wrt, const char *out);
/* kad_grad_module with flags (KAD_GRAD_*, as for kad_grad_ex). */
KAD_API const char *kad_grad_module_ex(kad_kernel *k, const char *wrt, const char *out, unsigned flags);

/* One call from sources to module: specializes `kernel` of the sources
 * added to c for sig (flags as for kad_specialize), then kad_grad_module.
 * For the CPU interpreter, kad_grad(kad_specialize(...), wrt, out) gives
 * the same backward as a kad_kernel. */
KAD_API const char *kad_grad_source(kad_ctx *c, const char *kernel, const char *sig, const char *wrt,
                            const char *out, unsigned flags);

/* ---- Forward mode (docs/AD.md, "Forward mode"; docs/GRAD.md) ---- */

/* The jvp kernel of k: one pass computing k's outputs and their tangents;
 * same grid; parameters = k's runtime parameters, then t_<x> for each input
 * in `wrt`, then t_<y> for each output in `out` (names as for kad_grad; a
 * name in both is updated in place and gets one tangent t_<x>, among the
 * inputs'), in k's parameter order.  Tangent buffers are laid out like
 * their primals.  The caller passes in t_<y> the tangent of y's value
 * before the launch (zeros for a fresh output; elements the kernel does
 * not write keep it).  NULL with located diagnostics when forward mode
 * refuses k. */
KAD_API kad_kernel *kad_jvp(kad_kernel *k, const char *wrt, const char *out);
/* The jvp of k as a Python module: @triton.jit <kernel>_jvp taking the
 * forward's parameters in the def's order, then the tangents as for
 * kad_jvp, and launch_<kernel>_jvp(grid, *args, num_warps=None,
 * num_stages=None, **constexprs), which checks its arguments and launches it.  Owned by the context; NULL with located diagnostics. */
KAD_API const char *kad_jvp_module(kad_kernel *k, const char *wrt, const char *out);

/* The CUDA C modules (docs/EMIT.md, "CUDA C"); hip != 0: HIP spelling.  kad_kernel_cuda: k's
 * kernel and its launcher launch_<kernel>; kad_grad_module_cuda: the backward kernel <kernel>_bwd
 * and launch_<kernel>_bwd (flags: KAD_GRAD_ATOMICS, KAD_GRAD_SAVED); kad_jvp_module_cuda: the
 * jvp kernel and launch_<kernel>_jvp.  NULL after a located diagnostic (also for IR or a
 * backward plan the CUDA C emitter refuses). */
KAD_API const char *kad_kernel_cuda(kad_kernel *k, int hip);
KAD_API const char *kad_grad_module_cuda(kad_kernel *k, const char *wrt, const char *out, unsigned flags, int hip);
KAD_API const char *kad_jvp_module_cuda(kad_kernel *k, const char *wrt, const char *out, int hip);

/* ---- Named modules (docs/LANGUAGE.md, "Imports") ---- */

/* Adds a Python source file as the module of dotted name modname
 * ("pkg.ops.utils"; a package's __init__.py is the package itself, "pkg").
 * Imports between added modules resolve like Python's, relative ones
 * included.  kad_add_source names the module by the file's stem.  A module
 * added again under the same name replaces the earlier one.  Returns 0, or
 * -1 on syntax errors. */
KAD_API int kad_add_module(kad_ctx *c, const char *modname, const char *filename, const char *text);

/* Sets what module-level name `name` of module modname is bound to at
 * launch time, for values only the host knows (chosen by host code at
 * import time).  value is "128", "0.5", "True", "None", "'gelu'", a dtype
 * ("fp16" or "triton.language.float16"), a qualified Triton function
 * ("triton.language.math.exp", "triton.language.extra.cuda.libdevice.fast_expf"),
 * or a function of an added module ("pkg.ops.utils.silu").  The value wins
 * over the module's source.  Returns 0, or -1 with a diagnostic. */
KAD_API int kad_set_global(kad_ctx *c, const char *modname, const char *name, const char *value);

/* The absolute names of the modules module modname imports (with every
 * parent package), one per line; for loaders (the CLI's -I) that add them
 * with kad_add_module.  NULL if no module of that name was added. */
KAD_API const char *kad_module_imports(kad_ctx *c, const char *modname);

/* ---- Determinism audit (docs/AD.md, "Determinism audit") ---- */

/* What makes k nondeterministic or batch-variant, as text owned by the
 * context: one line per finding, "file:line:col: nondeterministic: ..."
 * (a float atomic_add that may add into one element several times: a split
 * reduction), "file:line:col: batch-variant: ..." (a loop accumulating
 * floats whose trip count or stride depends on tl.num_programs or on a
 * size that bounds the program ids), "file:line:col: note: ..." (a float
 * atomic_add into distinct addresses: one add per element, order-free),
 * then "KERNEL: clean: deterministic and batch-invariant[ (see the notes)]"
 * or "KERNEL: N nondeterministic, M batch-variant".  NULL on error. */
KAD_API const char *kad_audit(kad_kernel *k);

/* ---- Tapes (docs/AD.md, "Tapes") ---- */

/* Options of the backwards c builds from now on: while_cap, the tape
 * capacity (iterations) of a `while` loop without a bound kad finds in its
 * condition (0: the default, 1024); tape_budget, the bytes of tape scratch
 * per kernel launch above which kad checkpoints taped `for` loops (0: no
 * budget).  Returns 0, or -1 for a negative value or a capacity above
 * 2**31 - 1. */
KAD_API int kad_set_tape_options(kad_ctx *c, long long while_cap, long long tape_budget);

/* `kad grad --report`: for each tape of backward g (kad_grad's result),
 * its loop, what is taped (values, bytes per iteration and program, trip
 * count or capacity), what is recomputed, the linear accumulators, the
 * checkpoint schedule and recompute factor; the same as the generated
 * module's header.  Text owned by the context; "no tapes" when g has none. */
KAD_API const char *kad_tape_report(kad_kernel *g);

/* ---- CUDA C / HIP kernels (docs/LANGUAGE.md, "CUDA C / HIP kernels") ---- */

/* Adds a .cu/.cuh/.hip/.cpp file: its preprocessor subset runs, its device
 * code is parsed (host code skipped).  0, or -1 with diagnostics. */
KAD_API int kad_add_cuda_source(kad_ctx *c, const char *filename, const char *text);
/* Adds dir to the directories where a quoted #include "h" of the CUDA
 * sources added after it is looked for when it is not beside the file that
 * includes it (nvcc's -I), in the order added.  0, or -1. */
KAD_API int kad_add_cuda_include_dir(kad_ctx *c, const char *dir);
/* Specializes the __global__ function `kernel` of the CUDA sources added to
 * c: targs gives template arguments and extern __shared__ sizes
 * ("scalar_t=fp32,BLOCK=256,smem=512"; NULL or "" when the file's one
 * explicit instantiation or none is needed), block the block's dimensions
 * (blockDim.x, .y, .z; 0 reads as 1).  The result is a kad_kernel like
 * kad_specialize's: kad_grad, kad_jvp, kad_check and kad_run apply, with
 * the grid's programs as the CUDA blocks.  NULL after an error. */
KAD_API kad_kernel *kad_specialize_cuda(kad_ctx *c, const char *kernel, const char *targs, const int block[3],
                                        unsigned flags);

#ifdef __cplusplus
}
#endif
#endif
