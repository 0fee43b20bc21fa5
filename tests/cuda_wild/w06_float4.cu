__global__ void gelu_vec4(const float* __restrict__ x, float* __restrict__ y, int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = reinterpret_cast<const float4*>(x)[i];
        float4 r;
        r.x = 0.5f * v.x * (1.f + erff(v.x * 0.70710678f));
        r.y = 0.5f * v.y * (1.f + erff(v.y * 0.70710678f));
        r.z = 0.5f * v.z * (1.f + erff(v.z * 0.70710678f));
        r.w = 0.5f * v.w * (1.f + erff(v.w * 0.70710678f));
        reinterpret_cast<float4*>(y)[i] = r;
    }
}
