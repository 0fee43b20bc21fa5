__global__ void vec4_ldg(const float* __restrict__ x, const float* __restrict__ g, float* __restrict__ y, int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = __ldg(reinterpret_cast<const float4*>(x) + i);
        float4 s = __ldg(reinterpret_cast<const float4*>(g) + i);
        float4 r = make_float4(__fdividef(v.x, 1.f + fabsf(s.x)), powf(fabsf(v.y) + 1.f, 1.5f),
                               fminf(v.z, s.z) + fmaxf(v.z, s.z), v.w * s.w);
        reinterpret_cast<float4*>(y)[i] = r;
    }
}
