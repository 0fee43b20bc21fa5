__device__ __forceinline__ float clampf(float v, float lo, float hi) { return fminf(fmaxf(v, lo), hi); }
__device__ float huber(float d, float delta)
{
    float a = fabsf(d);
    if (a <= delta)
        return 0.5f * d * d;
    return delta * (a - 0.5f * delta);
}
__global__ void huber_loss(const float* __restrict__ pred, const float* __restrict__ tgt, float* __restrict__ out, int n, float delta)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = huber(clampf(pred[i], -3.f, 3.f) - tgt[i], delta);
}
