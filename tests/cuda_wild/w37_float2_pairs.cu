__global__ void swiglu_pairs(const float* __restrict__ gu, float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float2 p = *reinterpret_cast<const float2*>(&gu[2 * i]);
        float g = p.x, u = p.y;
        out[i] = g / (1.0f + expf(-g)) * u;
    }
}
