#include <cuda_bf16.h>
__global__ void scale_bias_bf16(const __nv_bfloat16* __restrict__ x, const float* __restrict__ scale, __nv_bfloat16* __restrict__ y, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y;
    if (c < cols && r < rows) {
        float v = __bfloat162float(x[r * cols + c]);
        y[r * cols + c] = __float2bfloat16(v * scale[c]);
    }
}
