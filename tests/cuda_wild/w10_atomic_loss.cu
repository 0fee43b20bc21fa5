// per-element squared error, summed into a scalar with atomicAdd
__global__ void mse_sum(const float* pred, const float* target, float* loss, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float d = pred[i] - target[i];
        atomicAdd(loss, d * d / n);
    }
}
