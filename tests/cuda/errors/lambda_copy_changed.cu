// RUN: ir %s:k --block 32
// A lambda capturing by value ([=]) a variable that changes after the lambda is made: kad reads
// captures at the call, so it refuses rather than read the new value.
__global__ void k(const float* x, float* y)
{
    int i = threadIdx.x;
    float s = 1.0f;
    auto f = [=](float v) { return v * s; };
    s = 2.0f;
    y[i] = f(x[i]);
}
