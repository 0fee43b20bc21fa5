// RUN: ir %s:k --block 32
// A lambda without `-> T` whose first return is inside a branch: kad deduces a return type from
// a return at the top of the body only.
__global__ void k(const float* x, float* y)
{
    int i = threadIdx.x;
    auto f = [](float v) { if (v > 0) return v; return -v; };
    y[i] = f(x[i]);
}
