// RUN: check %s:pairs --block 32 --wrt x --out y --grid 1 --shape x=32 --shape y=16
// Two threads write one element of __shared__ memory: the forward's data race is reported when
// it runs (kad check), never differentiated.
__global__ void pairs(const float* x, float* y)
{
    __shared__ float s[16];
    int t = threadIdx.x;
    s[t / 2] = x[t];
    __syncthreads();
    if (t < 16)
        y[t] = s[t];
}
