// RUN: check %s:center --block 64 --wrt x --out y --grid 3 --shape x=3x100 --shape y=3x100 --arg n=100
// RUN: check %s:scale_by_max --block 32 --wrt x --out y --grid 2 --shape x=2x40 --shape y=2x40 --arg n=40
// cub::BlockReduce: Sum (with num_valid), Reduce with cub::Sum() and cub::Max(), an int Max, the
// type spelled in full (cub::BlockReduce<float, 64>::TempStorage) and through `using`.
#include <cub/cub.cuh>

__global__ void center(const float* __restrict__ x, float* __restrict__ y, int n)
{
    __shared__ cub::BlockReduce<float, 64>::TempStorage t;
    __shared__ float mean;
    const float* xr = x + blockIdx.x * n;
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += 64)
        s += xr[i];
    float tot = cub::BlockReduce<float, 64>(t).Reduce(s, cub::Sum());
    if (threadIdx.x == 0)
        mean = tot / n;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += 64)
        y[blockIdx.x * n + i] = (xr[i] - mean) * (xr[i] - mean);
}

__global__ void scale_by_max(const float* __restrict__ x, float* __restrict__ y, int n)
{
    using FR = cub::BlockReduce<float, 32>;
    using IR = cub::BlockReduce<int, 32>;
    __shared__ typename FR::TempStorage tf;
    __shared__ typename IR::TempStorage ti;
    __shared__ float s_max;
    __shared__ int s_cnt;
    const float* xr = x + blockIdx.x * n;
    float m = -INFINITY;
    int pos = 0;
    for (int i = threadIdx.x; i < n; i += 32) {
        m = fmaxf(m, fabsf(xr[i]));
        pos += xr[i] > 0.f;
    }
    float bm = FR(tf).Reduce(m, cub::Max());
    int cnt = IR(ti).Sum(pos, 32);
    if (threadIdx.x == 0) {
        s_max = bm;
        s_cnt = cnt;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += 32)
        y[blockIdx.x * n + i] = xr[i] / s_max + (float)s_cnt;
}
