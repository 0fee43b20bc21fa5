template <int N>
__global__ void ring_conv(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float buf[N];
#pragma unroll
    for (int k = 0; k < N; ++k) buf[k] = x[(i + k) % n];
    float acc = 0.f;
    int k = 0;
    do {
        acc += w[k] * buf[(k * 3) % N];
        ++k;
    } while (k < N);
    y[i] = acc;
}
template __global__ void ring_conv<5>(const float*, const float*, float*, int);
