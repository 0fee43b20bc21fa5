__global__ void dot_partial(const double* __restrict__ a, const double* __restrict__ b, double* __restrict__ out, int n)
{
    double s = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        s += a[i] * b[i];
    atomicAdd(out, s);
}
