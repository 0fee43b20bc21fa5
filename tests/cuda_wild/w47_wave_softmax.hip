#include <hip/hip_runtime.h>
__global__ void wave_softmax(const float* x, float* y, int n)
{
    // one 64-wide wavefront per row on AMD (warpSize 64 in .hip)
    int row = hipBlockIdx_x;
    int lane = hipThreadIdx_x;
    float v = lane < n ? x[row * n + lane] : -INFINITY;
    float m = v;
    for (int o = 32; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor(m, o));
    float e = lane < n ? expf(v - m) : 0.f;
    float s = e;
    for (int o = 32; o > 0; o >>= 1) s += __shfl_xor(s, o);
    if (lane < n) y[row * n + lane] = e / s;
}
