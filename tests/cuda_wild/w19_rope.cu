template <typename scalar_t>
__global__ void rope_fwd(const scalar_t* __restrict__ x, const scalar_t* __restrict__ cos_t, const scalar_t* __restrict__ sin_t,
                         scalar_t* __restrict__ y, int seq, int half_dim)
{
    const int s = blockIdx.x;
    for (int i = threadIdx.x; i < half_dim; i += blockDim.x) {
        const int base = s * 2 * half_dim;
        const scalar_t x0 = x[base + i];
        const scalar_t x1 = x[base + i + half_dim];
        const scalar_t c = cos_t[s * half_dim + i], sn = sin_t[s * half_dim + i];
        y[base + i] = x0 * c - x1 * sn;
        y[base + i + half_dim] = x0 * sn + x1 * c;
    }
}
