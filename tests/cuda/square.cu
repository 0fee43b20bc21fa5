// RUN: ir %s:square --block 256
// RUN: check %s:square --block 256 --wrt x --out y --grid 3 --shape x=700 --shape y=700 --arg n=700
// RUN: grad %s:square --block 256 --wrt x --out y --kernels-only
// RUN: jvp %s:square --block 256 --wrt x --out y --ir
// The per-thread square kernel: one lane per thread, the guard i < n a lane mask; its IR, the
// float64 check, the backward as Triton (plain stores: access.c proves one reader per element)
// and the forward-mode IR.
#include <cuda_runtime.h>

__global__ void square(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i] * x[i];
}
