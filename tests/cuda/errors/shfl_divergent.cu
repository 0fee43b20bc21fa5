// RUN: ir %s:half_warp --block 32
// A warp shuffle under a condition that depends on the thread: the warp is not converged.
__global__ void half_warp(const float* x, float* y)
{
    float v = x[threadIdx.x];
    if (threadIdx.x < 16)
        v += __shfl_xor_sync(0xffffffff, v, 1);
    y[threadIdx.x] = v;
}
