// the loop variable declared before the loop and read after it (its exit value)
__global__ void k(const float* x, float* y, float* last, int n)
{
    int i = threadIdx.x;
    float acc = 0.f;
    for (; i < n; i += 32)
        acc += x[i] * x[i];
    y[threadIdx.x] = acc;
    last[threadIdx.x] = (float)i * x[threadIdx.x];
}
