// RUN: check %s:newton --block 32 --wrt x --out y --grid 1 --shape x=32 --shape y=32
// A while loop whose condition depends on the thread carries the per-lane mask; its backward
// would need that mask on a tape, which kad does not record (only float values): refused, located.
__global__ void newton(const float* x, float* y)
{
    int t = threadIdx.x;
    float v = x[t];
    float r = 1.0f;
    while (fabsf(r * r - v) > 1e-3f * v)
        r = 0.5f * (r + v / r);
    y[t] = r;
}
