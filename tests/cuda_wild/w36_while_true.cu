// per-thread fixed-point iteration with while (true) and a break
__global__ void fixed_point(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i], z = 0.f;
    int it = 0;
    while (true) {
        float z2 = 0.5f * (z + v / (1.f + z * z));
        ++it;
        if (fabsf(z2 - z) < 1e-6f || it >= 50) { z = z2; break; }
        z = z2;
    }
    y[i] = z;
}
