__device__ float softclip(float v, float t)
{
    if (v > t) {
        return t + logf(1.f + v - t);
    } else if (v < -t) {
        return -t - logf(1.f - v - t);
    } else {
        return v;
    }
}
__global__ void softclip_kernel(const float* x, float* y, int n, float t)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (unsigned)n) {
        y[i] = softclip(x[i], t);
    } else {
        return;
    }
}
