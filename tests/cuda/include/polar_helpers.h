// A kernel's own header, read by tests/cuda/include_refs.cu through a quoted #include relative to
// that file: #pragma once, # and ## in macros, a host struct, a device function with reference
// outputs.
#pragma once
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

#define CHECK_POSITIVE(x) TORCH_CHECK((x) > 0, #x " must be positive")
#define KAD_CAT(a, b) a##b
#define SCALE_OF(name) KAD_CAT(name, _scale)

// host code: a struct of tensors with a constructor, never used by the kernel
struct PolarSpec {
    torch::Tensor xy;
    PolarSpec(torch::Tensor t) : xy(t) {}
    inline void check() { CHECK_POSITIVE(xy.numel()); }
};

// r and t are outputs: written, never read
inline __device__ void to_polar(float x, float y, float &r, float &t)
{
    r = std::sqrt(x * x + y * y);
    t = std::atan2(y, x);
}

// acc is read and written
__device__ __forceinline__ void accumulate(float v, float &acc) { acc += v * v; }
