// RUN: check %s:lam --block 32 --wrt x,w --out y --grid 2 --shape x=50 --shape w=4 --shape y=50 --arg n=50 --arg alpha=0.7
// Lambdas in device code: [&] capturing a local and a pointer, [=] with a trailing return type
// and an early return, one lambda calling another inside a loop, a lambda of a __device__
// function, and an `auto` device function (its return type from its return).
#include <cuda_runtime.h>

__device__ auto softplus(float v) { return logf(1.0f + expf(v)); }

__device__ float smooth(float v, float t)
{
    auto sq = [](float u) { return u * u; };
    return sq(v) / (sq(v) + t);
}

__global__ void lam(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int n, float alpha)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float a2 = alpha * 2.0f;
    auto scale = [&](float v) { return v * a2 + w[i % 4]; };
    auto clampit = [=](float v) -> float {
        if (v > 2.0f)
            return 2.0f + 0.1f * v;
        return v;
    };
    auto load = [&](int j) { return j < n ? x[j] : 0.0f; };
    float acc = 0.0f;
    for (int k = 0; k < 3; k++)
        acc += clampit(scale(load(i + k)));
    if (i < n)
        y[i] = softplus(acc) + smooth(acc, 0.5f);
}
