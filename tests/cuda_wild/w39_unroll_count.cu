#define VEC 4
__global__ void scale_rows(const float* __restrict__ x, const float* __restrict__ s, float* __restrict__ y, int cols)
{
    const int row = blockIdx.x;
    const int base = threadIdx.x * VEC;
#pragma unroll 4
    for (int k = 0; k < VEC; ++k) {
        const int c = base + k;
        if (c < cols) y[row * cols + c] = x[row * cols + c] * s[row];
    }
    __syncwarp();
}
