// RUN: check %s:shared_pairs --block 64 --wrt x,w --out y --grid 3 --shape x=150 --shape w=150 --shape y=150 --arg n=150
// Two threads read each element of a __shared__ array (thread t reads tile[t / 2]) and thread t
// also reads its neighbour's (tile[t ^ 1]): the adjoint of the first read adds two threads'
// contributions into one element (the backward's scatter-add takes its ordered path), of the
// second is a permutation (its one-owner path).
#include <cuda_runtime.h>

__global__ void shared_pairs(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int n)
{
    __shared__ float tile[64];
    const int t = threadIdx.x;
    const int i = blockIdx.x * 64 + t;
    tile[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    const float a = tile[t / 2], b = tile[t ^ 1];
    if (i < n)
        y[i] = a * w[i] + b * b;
}
