// RUN: ir %s:k --block 64
// A cub::BlockReduce TempStorage used twice without a __syncthreads() between: refused (CUB needs
// the barrier; without it a GPU may reduce garbage, which kad would not reproduce).
#include <cub/cub.cuh>
__global__ void k(const float* x, float* y)
{
    typedef cub::BlockReduce<float, 64> BR;
    __shared__ BR::TempStorage t;
    float a = BR(t).Sum(x[threadIdx.x]);
    float b = BR(t).Reduce(x[threadIdx.x], cub::Max());
    if (threadIdx.x == 0)
        y[0] = a + b;
}
