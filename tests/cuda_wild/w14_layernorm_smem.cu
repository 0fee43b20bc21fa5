template <int BLOCK>
__global__ void layer_norm_fwd(const float* __restrict__ X, const float* __restrict__ W, const float* __restrict__ B,
                               float* __restrict__ Y, float* __restrict__ mean_out, float* __restrict__ rstd_out,
                               int N, float eps)
{
    __shared__ float s_sum[BLOCK];
    __shared__ float s_sq[BLOCK];
    const int row = blockIdx.x;
    const float* x = X + (long)row * N;
    float sum = 0.f, sq = 0.f;
    for (int i = threadIdx.x; i < N; i += BLOCK) { float v = x[i]; sum += v; sq += v * v; }
    s_sum[threadIdx.x] = sum; s_sq[threadIdx.x] = sq;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) { s_sum[threadIdx.x] += s_sum[threadIdx.x + s]; s_sq[threadIdx.x] += s_sq[threadIdx.x + s]; }
        __syncthreads();
    }
    const float mu = s_sum[0] / N;
    const float var = s_sq[0] / N - mu * mu;
    const float rs = rsqrtf(var + eps);
    if (threadIdx.x == 0) { mean_out[row] = mu; rstd_out[row] = rs; }
    for (int i = threadIdx.x; i < N; i += BLOCK)
        Y[(long)row * N + i] = (x[i] - mu) * rs * W[i] + B[i];
}
