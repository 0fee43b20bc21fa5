#include <cuda_fp16.h>
__global__ void silu_half(const __half* __restrict__ x, __half* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = __half2float(x[i]);
        y[i] = __float2half(v / (1.0f + __expf(-v)));
    }
}
