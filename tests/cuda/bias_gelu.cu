// RUN: ir %s:bias_gelu --block 32
// RUN: check %s:bias_gelu --block 32 --wrt x,bias --out y --grid 2,5 --shape x=5x40 --shape bias=40 --shape y=5x40 --arg rows=5 --arg cols=40
// A __device__ helper (inlined) and a bias shared by all rows: blockIdx.y picks the row, so every
// program along y reads the same bias elements and d_bias sums over them.
#include <cuda_runtime.h>
#include <math.h>

#define SQRT_2_OVER_PI 0.7978845608028654f

__device__ __forceinline__ float gelu_tanh(float v)
{
    const float c = SQRT_2_OVER_PI * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.0f + tanhf(c));
}

__global__ void bias_gelu(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ y,
                          int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y;
    if (c < cols && r < rows) {
        size_t k = (size_t)r * cols + c;
        y[k] = gelu_tanh(x[k] + bias[c]);
    }
}
