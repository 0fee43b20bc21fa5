typedef float acc_t;
constexpr int kTile = 4;
__global__ void poly4(const float* __restrict__ x, const float* __restrict__ coef, float* __restrict__ y, int n)
{
    const int base = (blockIdx.x * blockDim.x + threadIdx.x) * kTile;
    acc_t c[kTile];
#pragma unroll
    for (int k = 0; k < kTile; k++) c[k] = coef[k];
#pragma unroll
    for (int j = 0; j < kTile; j++) {
        int i = base + j;
        if (i < n) {
            acc_t v = x[i], p = 0;
            for (int k = kTile - 1; k >= 0; --k) p = p * v + c[k];
            y[i] = p;
        }
    }
}
