enum class Act { kRelu, kGelu, kSilu };
template <Act A>
__device__ __forceinline__ float apply(float v)
{
    if (A == Act::kRelu) return fmaxf(v, 0.f);
    if (A == Act::kGelu) return 0.5f * v * (1.f + erff(v * 0.70710678f));
    return v / (1.f + __expf(-v));
}
template <Act A, int BLOCK = 128>
__global__ void __launch_bounds__(BLOCK) bias_act(const float* __restrict__ x, const float* __restrict__ b, float* __restrict__ y, int rows, int cols)
{
    static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of the warp");
    int r = blockIdx.y;
    for (int c = blockIdx.x * BLOCK + threadIdx.x; c < cols; c += gridDim.x * BLOCK)
        y[r * cols + c] = apply<A>(x[r * cols + c] + b[c]);
}
template __global__ void bias_act<Act::kSilu, 128>(const float*, const float*, float*, int, int);
