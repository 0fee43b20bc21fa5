extern "C" __global__ void softplus_f32(const float* x, float* y, const unsigned int n, const float beta)
{
    unsigned int tid = blockDim.x * blockIdx.x + threadIdx.x;
    if (tid < n) {
        float bx = beta * x[tid];
        y[tid] = bx > 20.0f ? x[tid] : log1pf(__expf(bx)) / beta;
    }
}
