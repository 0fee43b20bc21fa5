// RUN: ir %s:polar --block 64
// RUN: check %s:polar --block 64 --wrt xy,w --out rt,s --grid 2 --shape xy=200 --shape w=100 --shape rt=200 --shape s=100 --arg n=100 --range xy=0.5:2
// A kernel that uses its library's header as such libraries ship them: a quoted #include read
// relative to this file (twice: #pragma once), # and ## macros, a struct with tensor members
// that only host code uses, std:: math in an expression statement, and reference parameters
// bound to elements of global memory (copied in, and back when the function assigns them;
// const& never stored).
#include <cuda_runtime.h>
#include "include/polar_helpers.h"
#include "include/polar_helpers.h"

__device__ float weighted(const float &w, float v) { return w * v; }

__global__ void polar(const float *xy, const float *w, float *rt, float *s, int n)
{
    float SCALE_OF(w) = 2.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        to_polar(xy[2 * i], xy[2 * i + 1], rt[2 * i], rt[2 * i + 1]);
        float acc = weighted(w[i], w_scale);
        accumulate(xy[2 * i], acc);
        s[i] = acc;
    }
}
