// A row's L2 norm by one warp: a templated warp sum with the mask from __activemask() and
// __shfl_down_sync (lane 0 ends with the sum), stored by lane 0 alone.
template <typename T>
__device__ __forceinline__ T warp_sum(T v)
{
    unsigned mask = __activemask();
#pragma unroll
    for (int o = warpSize >> 1; o >= 1; o >>= 1)
        v += __shfl_down_sync(mask, v, o);
    return v;
}

__global__ void row_norm_warp(const float* __restrict__ x, float* __restrict__ out, int n)
{
    int row = blockIdx.x;
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += 32)
        s += x[row * n + i] * x[row * n + i];
    s = warp_sum(s);
    if (threadIdx.x == 0)
        out[row] = sqrtf(s);
}
