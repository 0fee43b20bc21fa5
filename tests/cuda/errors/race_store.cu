// RUN: ir %s:last --block 64
// Every thread stores its own value to one address: a data race, refused.
__global__ void last(const float* x, float* y)
{
    y[blockIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
}
