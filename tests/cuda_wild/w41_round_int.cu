__global__ void quant_dequant(const float* x, float* y, int n, float scale)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i] / scale;
        int q = __float2int_rn(v);
        q = min(max(q, -127), 127);
        float r = __int2float_rn(q) * scale;
        // straight-through: the rounding's derivative is zero, so y's gradient flows through x * 0 + r
        y[i] = r + 0.1f * x[i];
    }
}
