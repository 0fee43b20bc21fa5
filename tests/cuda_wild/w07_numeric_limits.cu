#include <limits>
template <typename scalar_t, int K>
__global__ void row_logsumexp(const scalar_t* x, scalar_t* out, int n)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    scalar_t m = -std::numeric_limits<scalar_t>::infinity();
    #pragma unroll
    for (int k = 0; k < K; ++k) m = max(m, x[r * K + k]);
    scalar_t s = 0;
    #pragma unroll
    for (int k = 0; k < K; ++k) s += exp(x[r * K + k] - m);
    out[r] = m + log(s);
}
