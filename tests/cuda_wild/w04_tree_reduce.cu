// classic shared-memory tree reduction: per-row sum of squares, then normalize
__global__ void l2norm_rows(const float* __restrict__ x, float* __restrict__ y, int cols, float eps)
{
    __shared__ float sdata[256];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    float acc = 0.0f;
    for (int c = tid; c < cols; c += blockDim.x) {
        float v = x[row * cols + c];
        acc += v * v;
    }
    sdata[tid] = acc;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    const float inv = rsqrtf(sdata[0] + eps);
    for (int c = tid; c < cols; c += blockDim.x)
        y[row * cols + c] = x[row * cols + c] * inv;
}
