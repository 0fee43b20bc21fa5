#include <cstdint>
template <typename T>
__global__ void clamp_mul(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int64_t numel, T lo, T hi)
{
    const auto idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= numel) return;
    auto v = a[idx] * b[idx];
    c[idx] = min(max(v, lo), hi) + fmaf(a[idx], b[idx], T(0));
}
