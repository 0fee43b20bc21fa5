// RUN: ir %s:k --block 32
// A lambda that assigns a variable of the enclosing function ([&] s += v): refused, located at
// the call, with what to write instead.
__global__ void k(const float* x, float* y)
{
    int i = threadIdx.x;
    float s = 0.0f;
    auto add = [&](float v) { s += v; };
    add(x[i]);
    y[i] = s;
}
