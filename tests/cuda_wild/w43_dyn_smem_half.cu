#include <cuda_fp16.h>
#define DIV_UP(a, b) (((a) + (b) - 1) / (b))
#if defined(__HIP_PLATFORM_AMD__)
#define WARP 64
#else
#define WARP 32
#endif
__device__ __forceinline__ float warp_reduce(float v)
{
#pragma unroll
    for (int off = WARP / 2; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off, WARP);
    return v;
}
// dynamic shared memory sized at launch, one block per row, shuffle-then-shared reduction
__global__ void row_sumsq_norm(const __half* __restrict__ x, __half* __restrict__ y, int cols)
{
    extern __shared__ float warp_sums[];
    const int row = blockIdx.x, tid = threadIdx.x;
    float acc = 0.f;
    for (int c = tid; c < cols; c += blockDim.x) {
        float v = __half2float(x[(size_t)row * cols + c]);
        acc += v * v;
    }
    acc = warp_reduce(acc);
    if (tid % WARP == 0) warp_sums[tid / WARP] = acc;
    __syncthreads();
    float tot = 0.f;
    for (int w = 0; w < DIV_UP(blockDim.x, WARP); ++w) tot += warp_sums[w];
    const float inv = rsqrtf(tot / cols + 1e-6f);
    for (int c = tid; c < cols; c += blockDim.x)
        y[(size_t)row * cols + c] = __float2half_rn(__half2float(x[(size_t)row * cols + c]) * inv);
}
