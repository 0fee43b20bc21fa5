// RUN: ir %s:k --block 32
// __activemask() in code only some threads run: kad knows it only as the full mask of converged
// whole warps.
__global__ void k(const float* x, float* y)
{
    float v = x[threadIdx.x];
    if (threadIdx.x < 16) {
        unsigned m = __activemask();
        v += __shfl_down_sync(m, v, 1);
    }
    y[threadIdx.x] = v;
}
