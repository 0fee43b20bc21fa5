// bias + residual + relu, 2-D grid of 2-D blocks, bias shared by all rows
__global__ void bias_residual_relu(const float* __restrict__ x, const float* __restrict__ bias,
                                   const float* __restrict__ res, float* __restrict__ out, int M, int N)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        const int idx = row * N + col;
        float v = x[idx] + bias[col] + res[idx];
        out[idx] = v > 0.f ? v : 0.f;
    }
}
