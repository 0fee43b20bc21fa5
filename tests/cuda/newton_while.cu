// RUN: check %s:newton --block 32 --wrt x --out y --grid 1 --shape x=32 --shape y=32
// A while loop whose condition depends on the thread (Newton's iteration for sqrt(x^2 + 1), each
// thread until its own convergence): an IR `while` on "some lane still runs", the lanes' mask
// carried as a float tile of 0.0/1.0 that the backward's tape records.
__global__ void newton(const float* x, float* y)
{
    int t = threadIdx.x;
    float v = x[t];
    float r = 1.0f;
    v = v * v + 1.0f;
    while (fabsf(r * r - v) > 1e-6f * v)
        r = 0.5f * (r + v / r);
    y[t] = r;
}
