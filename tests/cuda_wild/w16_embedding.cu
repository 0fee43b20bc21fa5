__global__ void embedding_fwd(const float* __restrict__ weight, const long* __restrict__ idx, float* __restrict__ out, int n, int dim)
{
    int row = blockIdx.x;
    if (row >= n) return;
    long src = idx[row];
    for (int d = threadIdx.x; d < dim; d += blockDim.x)
        out[row * dim + d] = weight[src * dim + d];
}
