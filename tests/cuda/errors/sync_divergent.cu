// RUN: ir %s:k --block 64
// __syncthreads() that only some threads reach.
__global__ void k(const float* x, float* y, int n)
{
    __shared__ float s[64];
    int i = blockIdx.x * 64 + threadIdx.x;
    if (i < n) {
        s[threadIdx.x] = x[i];
        __syncthreads();
        y[i] = s[63 - threadIdx.x];
    }
}
