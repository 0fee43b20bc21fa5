// RUN: ir %s:k --block 64
// RUN: ir %s:k2 --block 64
// A cub::BlockReduce that only some threads reach (every thread of the block must call it), and one
// declared for another number of threads than the block has.
#include <cub/cub.cuh>
__global__ void k(const float* x, float* y)
{
    typedef cub::BlockReduce<float, 64> BR;
    __shared__ BR::TempStorage t;
    if (threadIdx.x < 32) {
        float a = BR(t).Sum(x[threadIdx.x]);
        y[threadIdx.x] = a;
    }
}
__global__ void k2(const float* x, float* y)
{
    __shared__ cub::BlockReduce<float, 128>::TempStorage t;
    float a = cub::BlockReduce<float, 128>(t).Sum(x[threadIdx.x]);
    y[threadIdx.x] = a;
}
