// RUN: check %s:affine_act --block 32 --wrt x --out y --grid 2 --shape x=50 --shape y=50 --arg n=50 --arg p_scale=1.5 --arg p_shift=-0.25 --arg p_mode=1
// RUN: check %s:iterate --block 32 --wrt x --out y --grid 2 --shape x=40 --shape y=40 --arg n=40 --arg maxit=6
// RUN: check %s:dot_atomic --block 64 --wrt a,b --out out --grid 3 --shape a=150 --shape b=150 --shape out=1 --arg n=150
// RUN: check %s:window_sum --sig tile=40 --block 32 --wrt x --out y --grid 2 --shape x=64 --shape y=64 --arg n=64
// Constructs beyond the basic kernels, each checked against float64 finite differences: a struct
// passed by value (one kernel parameter per member: p_scale, p_shift, p_mode), ?:, a switch-free
// select by an int, a local array, per-thread while/do loops with break, compound assignment and
// ++, a per-thread trip count, a do-while loop, a device function with an early return, __ldg, __shfl_down_sync and atomicAdd into one
// element per block, an extern __shared__ array sized at launch (--sig tile=40).
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <stdint.h>

struct Affine {
    float scale, shift;
    int mode;
};

__device__ float act(float v, int mode)
{
    if (mode == 0)
        return v;
    if (v < 0.0f)
        return 0.1f * v;
    return v * v;
}

__global__ void affine_act(const float* __restrict__ x, float* __restrict__ y, int n, Affine p)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (unsigned)n)
        return;
    float w[3] = {1.0f, 0.5f, 0.25f};
    float v = __ldg(&x[i]) * p.scale + p.shift;
    float acc = 0.0f;
    for (int k = 0; k < 3; ++k)
        acc += w[k] * act(v, p.mode);
    y[i] = i % 2 == 0 ? acc : -acc;
}

__global__ void iterate(const float* __restrict__ x, float* __restrict__ y, int n, int maxit)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = x[i];
    int steps = 1 + i % 4; /* per thread: a loop bound that depends on the thread */
    for (int it = 0; it < min(steps, maxit); ++it)
        v = v * 0.5f + sinf(v);
    int k = 0;
    do {
        v += 0.125f * (float)k;
        k += 2;
    } while (k < 5);
    y[i] = v;
}

__global__ void dot_atomic(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? a[i] * b[i] : 0.0f;
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffff, v, o);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(out, v);
}

__global__ void window_sum(const float* __restrict__ x, float* __restrict__ y, int n)
{
    extern __shared__ float tile[];
    int base = blockIdx.x * blockDim.x;
    int t = threadIdx.x;
    tile[t] = base + t < n ? x[base + t] : 0.0f;
    if (t < 8)
        tile[32 + t] = base + 32 + t < n ? x[base + 32 + t] : 0.0f;
    __syncthreads();
    float s = 0.0f;
    for (int k = 0; k < 8; k++)
        s += tile[t + k] * (k + 1);
    if (base + t < n)
        y[base + t] = s;
}
