// RUN: ir %s:k --block 32
// An extern __shared__ array is sized at launch: kad needs its size (--sig buf=N), and a
// divergent __syncthreads() after a per-thread return.
__global__ void k(const float* x, float* y, int n)
{
    extern __shared__ float buf[];
    int i = blockIdx.x * 32 + threadIdx.x;
    if (i >= n)
        return;
    __syncthreads();
    y[i] = x[i];
}
