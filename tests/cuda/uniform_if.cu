// RUN: ir %s:uniform_scale --block 64
// RUN: check %s:uniform_scale --block 64 --wrt x --out y --grid 2 --shape x=100 --shape y=100 --arg n=100 --arg mode=0
// The uniformity analysis: `mode` and `x[0]` are the same in every thread, so `if (mode > 0)` is an
// IR `if` with a scalar condition and a scalar result; `i < n` depends on the thread: a lane mask.
__global__ void uniform_scale(const float* x, float* y, int n, int mode)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s;
    if (mode > 0)
        s = 2.0f;
    else
        s = x[0];
    if (i < n)
        y[i] = s * x[i];
}
