// RUN: ir %s:bcast --block 64
// Thread 0 writes one element, every thread reads it: without __syncthreads() in between the
// other threads' reads race with the write.
__global__ void bcast(const float* x, float* y)
{
    __shared__ float s[1];
    if (threadIdx.x == 0)
        s[0] = x[blockIdx.x];
    y[blockIdx.x * 64 + threadIdx.x] = s[0] * 2.0f;
}
