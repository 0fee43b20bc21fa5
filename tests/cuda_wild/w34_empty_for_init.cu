#include <stdint.h>
__global__ void axpby(const int64_t n, const float a, const float* __restrict__ x, const float b, float *__restrict__ y, float *__restrict__ out)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        out[i] = fmaf(a, x[i], b * y[i]);
    }
}
