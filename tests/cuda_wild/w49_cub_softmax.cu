// A row softmax with CUB: the row's max by BlockReduce::Reduce(v, cuda::maximum<>()) (CUDA 13 has no
// cub::Max), its sum by Sum with
// num_valid (the threads past the row's end hold nothing), `using` for the BlockReduce type.
#include <cub/cub.cuh>

template <int THREADS>
__global__ void cub_softmax(const float* __restrict__ x, float* __restrict__ y, int cols)
{
    using BR = cub::BlockReduce<float, THREADS>;
    __shared__ typename BR::TempStorage tmp;
    __shared__ float s_max, s_sum;
    const float* xr = x + (long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += THREADS)
        m = fmaxf(m, xr[c]);
    float bm = BR(tmp).Reduce(m, cuda::maximum<>());
    if (threadIdx.x == 0)
        s_max = bm;
    __syncthreads();
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += THREADS)
        s += expf(xr[c] - s_max);
    __syncthreads(); // tmp is reused
    float bs = BR(tmp).Sum(s, min(cols, THREADS));
    if (threadIdx.x == 0)
        s_sum = bs;
    __syncthreads();
    for (int c = threadIdx.x; c < cols; c += THREADS)
        y[(long)blockIdx.x * cols + c] = expf(xr[c] - s_max) / s_sum;
}
template __global__ void cub_softmax<128>(const float*, float*, int);
