__global__ void index_add(const float* src, const int* index, float* out, int n, int dim)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n * dim) {
        int r = i / dim, c = i % dim;
        atomicAdd(&out[index[r] * dim + c], src[i]);
    }
}
