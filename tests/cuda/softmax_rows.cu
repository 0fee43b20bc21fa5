// RUN: check %s:softmax_rows --sig BLOCK=32 --block 32 --wrt x --out y --grid 3 --shape x=3x50 --shape y=3x50 --arg ncols=50
// A row softmax, one block per row: strided loops over the row's columns, then block
// reductions (max, then sum) in __shared__ memory by a tree with __syncthreads() between steps.
#include <cuda_runtime.h>
#include <math.h>

template <int BLOCK>
__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int ncols)
{
    __shared__ float red[BLOCK];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const float* xr = x + (size_t)row * ncols;

    float m = -INFINITY;
    for (int c = tid; c < ncols; c += BLOCK)
        m = fmaxf(m, xr[c]);
    red[tid] = m;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s)
            red[tid] = fmaxf(red[tid], red[tid + s]);
        __syncthreads();
    }
    const float rmax = red[0];
    __syncthreads();

    float sum = 0.0f;
    for (int c = tid; c < ncols; c += BLOCK)
        sum += expf(xr[c] - rmax);
    red[tid] = sum;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s)
            red[tid] += red[tid + s];
        __syncthreads();
    }
    const float rsum = red[0];

    for (int c = tid; c < ncols; c += BLOCK)
        y[(size_t)row * ncols + c] = expf(xr[c] - rmax) / rsum;
}
