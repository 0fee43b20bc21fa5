// RUN: ir %s:swish --sig scalar_t=fp32 --block 128
// RUN: check %s:swish --sig scalar_t=fp64 --block 128 --wrt x --out y --grid 2 --shape x=1000 --shape y=1000 --arg n=1000
// A templated grid-stride Swish in HIP's spelling: the loop's start depends on the thread, so it
// lowers to an IR `for` over k with i = start + k * stride and the lane mask i < n.
#include <hip/hip_runtime.h>

template <typename scalar_t>
__device__ __forceinline__ scalar_t sigmoid(scalar_t v)
{
    return static_cast<scalar_t>(1) / (static_cast<scalar_t>(1) + exp(-v));
}

template <typename scalar_t>
__global__ void __launch_bounds__(256) swish(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n)
{
    const int64_t stride = (int64_t)hipBlockDim_x * hipGridDim_x;
    for (int64_t i = (int64_t)hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x; i < n; i += stride) {
        scalar_t v = x[i];
        y[i] = v * sigmoid(v);
    }
}

template __global__ void swish<float>(const float*, float*, int64_t);
