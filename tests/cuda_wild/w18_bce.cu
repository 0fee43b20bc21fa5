__global__ void bce_with_logits(const float* __restrict__ x, const float* __restrict__ z, float* __restrict__ loss, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        loss[i] = fmaxf(v, 0.f) - v * z[i] + log1pf(expf(-fabsf(v)));
    }
}
