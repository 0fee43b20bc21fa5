/* emit_cuda.h -- the CUDA C / HIP emitter's entry points (docs/EMIT.md, "CUDA C").
 *
 * The emitter prints any IR Func (a forward, a backward from ad_backward, a
 * jvp from ad_forward) as one `__global__` kernel whose block's threads are
 * the lanes of the IR's 1-D tiles: a tile [L] is one variable per thread
 * (thread i holds lane i), a scalar is a variable every thread computes
 * alike.  It reads the IR alone: it does not know which front end made the
 * kernel.  IR it cannot print exactly is a located error, never wrong code.
 *
 * Included by emit_cuda.c, emit_cuda_host.c and kad.c (the API).
 */
#ifndef KAD_EMIT_CUDA_H
#define KAD_EMIT_CUDA_H

#include "base/base.h"
#include "ir/ir.h"
#include "plan/plan.h"
#include "ad/autodiff.h"

typedef struct EmitCudaOpts {
    bool hip;          /* HIP spelling: hip_runtime.h, __hip_bfloat16, hipLaunchKernelGGL */
    const char *name;  /* the kernel's name (NULL: the Func's) */
} EmitCudaOpts;

/* The `__global__` kernel of f alone (no includes, no helpers): appended
 * to out.  *lanes (may be NULL) gets the block size L it must be launched
 * with; *helpers (may be NULL) ORs in the CU_H_* helpers it calls.  False
 * after a located error in d. */
enum {
    CU_H_REDUCE = 1,  /* kad_block_reduce and its combine functors */
    CU_H_ARG = 2,     /* kad_block_argreduce */
    CU_H_SCAN = 4,    /* kad_block_scan */
    CU_H_GATHER = 8,  /* kad_block_gather */
    CU_H_RAND = 16,   /* kad_rand, kad_randn, kad_randint (Philox 4x32-10, as tl.rand) */
    CU_H_HALF = 32,   /* __half / __nv_bfloat16 values: the fp16 and bf16 headers (slow to compile) */
    CU_H_SCATTER = 64, /* kad_block_scatter_add */
    CU_H_SCATTER_ROW = 128, /* kad_block_scatter_row */
};
bool emit_cuda_kernel(Buf *out, Arena *a, Diags *d, const Func *f, const EmitCudaOpts *o, int *lanes,
                      unsigned *helpers);
/* The includes and the device helpers of the CU_H_* set helpers (a module's prelude). */
/* The lane count emit_cuda_kernel gives f (the first axis of its largest [M, N] tile, else its
 * largest 1-D tile; 1 without tiles), before any check of its shapes. */
int emit_cuda_lane_count(const Func *f);
void emit_cuda_prelude(Buf *out, const EmitCudaOpts *o, unsigned helpers);

/* A forward kernel f as a module (emit_cuda_host.c): header comment, prelude, the kernel, and
 * `extern "C" int launch_<name>(grid_x, grid_y, grid_z, params..., stream)`. */
bool emit_cuda_module(Buf *out, Arena *a, Diags *d, const Func *f, const EmitCudaOpts *o);
/* The backward module (bwd = ad_backward(fwd, spec)): the kernel <fwd>_bwd and
 * `extern "C" int launch_<fwd>_bwd(grid, params..., <d_x>_numel..., stream)`, which checks the
 * launch conditions, computes the plain-store flags, zero-fills the input gradients and launches.
 * Refuses (located error) a plan it does not print: fold, gemm, gather, tapes, spread, cleared
 * output gradients. */
bool emit_cuda_backward(Buf *out, Arena *a, Diags *d, const Func *fwd, const Program *bwd, const AdSpec *spec,
                        const EmitCudaOpts *o);
/* The jvp module (jv = ad_forward(fwd, spec)): the kernel <fwd>_jvp and launch_<fwd>_jvp. */
bool emit_cuda_jvp(Buf *out, Arena *a, Diags *d, const Func *fwd, const Func *jv, const AdSpec *spec,
                   const EmitCudaOpts *o);

/* A C identifier made of an IR name (emit_cuda.c): other characters become '_', a leading
 * digit gets a 'v', C/C++/CUDA keywords and kad_* get a trailing '_'. */
const char *cuda_ident(Arena *a, const char *name);
/* The C spelling of a scalar dtype ("float", "__half", "int32_t"); NULL when it has none. */
const char *cuda_dtype(Dtype dt, bool hip);

#endif
