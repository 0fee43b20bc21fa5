// RUN: check %s:layernorm --sig BLOCK=64 --block 64 --wrt x,gamma,beta --out y --grid 3 --shape x=3x80 --shape gamma=80 --shape beta=80 --shape y=3x80 --arg n=80 --arg eps=1e-5
// LayerNorm, one block per row: per-thread partial sums over a strided loop, warp sums by
// __shfl_xor_sync (a gather across the lanes of each warp), the warps' partials through
// __shared__ memory, mean and variance, then the affine normalization.
#include <cuda_runtime.h>

#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = warpSize / 2; o > 0; o /= 2)
        v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

template <int BLOCK>
__global__ void layernorm(const float* __restrict__ x, const float* __restrict__ gamma,
                          const float* __restrict__ beta, float* __restrict__ y, int n, float eps)
{
    __shared__ float part[BLOCK / 32];
    const int tid = threadIdx.x, lane = tid % warpSize, wid = tid / warpSize;
    const float* xr = x + (size_t)blockIdx.x * n;

    float s = 0.0f;
    for (int c = tid; c < n; c += BLOCK)
        s += xr[c];
    s = warp_sum(s);
    if (lane == 0)
        part[wid] = s;
    __syncthreads();
    float mean = 0.0f;
    for (int w = 0; w < BLOCK / 32; w++)
        mean += part[w];
    mean /= n;
    __syncthreads();

    float q = 0.0f;
    for (int c = tid; c < n; c += BLOCK) {
        float d = xr[c] - mean;
        q += d * d;
    }
    q = warp_sum(q);
    if (lane == 0)
        part[wid] = q;
    __syncthreads();
    float var = 0.0f;
    for (int w = 0; w < BLOCK / 32; w++)
        var += part[w];
    var /= n;
    const float rstd = rsqrtf(var + eps);

    for (int c = tid; c < n; c += BLOCK)
        y[(size_t)blockIdx.x * n + c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}
