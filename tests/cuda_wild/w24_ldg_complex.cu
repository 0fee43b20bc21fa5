__global__ void cmul(const float2* __restrict__ a, const float2* __restrict__ b, float2* __restrict__ c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float2 x = __ldg(&a[i]);
    float2 y = b[i];
    c[i] = make_float2(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x);
}
