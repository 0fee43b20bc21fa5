#include "hip/hip_runtime.h"
#define TANH_C 0.7978845608f
__global__ void gelu_tanh_kernel(float* out, const float* in, size_t n) {
    size_t i = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x;
    if (i < n) {
        float v = in[i];
        float u = TANH_C * (v + 0.044715f * v * v * v);
        out[i] = 0.5f * v * (1.0f + tanhf(u));
    }
}
void launch(float* out, const float* in, size_t n, hipStream_t s) {
    hipLaunchKernelGGL(gelu_tanh_kernel, dim3((n + 255) / 256), dim3(256), 0, s, out, in, n);
}
