// RUN: ir %s:shift --block 64
// A read of another thread's element of __shared__ memory without the __syncthreads() it needs.
__global__ void shift(const float* x, float* y)
{
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * 64 + t];
    y[blockIdx.x * 64 + t] = s[(t + 1) % 64];
}
