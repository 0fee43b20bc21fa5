// RUN: ir %s:scale_sq4 --block 64
// RUN: check %s:scale_sq4 --block 64 --wrt x --out y --grid 2 --shape x=400 --shape y=400 --arg alpha=0.75 --arg n4=100
// float4 lanes: each thread loads and stores four consecutive floats through a float4 pointer
// (element 4*i + k), with member access and make_float4.
__global__ void scale_sq4(const float* __restrict__ x, float* __restrict__ y, float alpha, int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4)
        return;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4 v = x4[i];
    float4 r = make_float4(alpha * v.x * v.x, alpha * v.y * v.y, 0.0f, 0.0f);
    r.z = alpha * v.z * v.z;
    r.w = alpha * v.w * v.w + v.x;
    reinterpret_cast<float4*>(y)[i] = r;
}
