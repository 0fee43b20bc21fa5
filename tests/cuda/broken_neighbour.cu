// RUN: check %s:square --block 32 --wrt x --out y --grid 1 --shape x=20 --shape y=20 --arg n=20
// A file whose other kernels kad cannot read (inline PTX `asm`, GNU's `a ?: b`): each is
// dropped with its errors, reported only where it is asked for or called (errors/broken_*.cu), and
// the kernel asked for is differentiated.
#include <cuda_runtime.h>

__global__ void with_asm(const float* x, float* y)
{
    unsigned lane; asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    y[threadIdx.x] = x[threadIdx.x] * lane;
}

__device__ float elvis(float v) { return v ?: 2.0f; }

__global__ void square(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i] * x[i];
}

__global__ void calls_elvis(const float* x, float* y, int n)
{
    int i = threadIdx.x;
    if (i < n)
        y[i] = elvis(x[i]);
}
