// RUN: ir %s:k --block 32 --sig a=32,b=32
// Two extern __shared__ arrays: CUDA gives them one address (they alias), so kad refuses the second.
__global__ void k(const float* x, float* y)
{
    extern __shared__ float a[];
    extern __shared__ float b[];
    a[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = a[31 - threadIdx.x] + b[0];
}
