__device__ float activate(float v, int kind)
{
    switch (kind) {
    case 0:
        return v > 0.f ? v : 0.f;
    case 1:
        return tanhf(v);
    case 2: {
        float s = 1.f / (1.f + expf(-v));
        return v * s;
    }
    default:
        return v;
    }
}
__global__ void act_kernel(const float* x, float* y, int n, int kind)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = activate(x[i], kind);
}
