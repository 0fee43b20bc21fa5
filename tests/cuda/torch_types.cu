// RUN: check %s:gelu_acc --block 128 --sig scalar_t=fp64 --wrt x --out y --grid 2 --shape x=200 --shape y=200 --arg n=200
// RUN: check %s:gelu_acc --block 128 --sig scalar_t=fp32 --wrt x --out y --grid 2 --shape x=200 --shape y=200 --arg n=200
// RUN: ir %s:gelu_acc --block 128
// PyTorch's device spellings in an extension's kernel: C10_LAUNCH_BOUNDS_1, at::acc_type<T, true>
// (float for half, double for double), at::opmath_type<T>, at::Half in the explicit
// instantiation (the one `kad ir` takes without --sig: fp16 loads, float arithmetic).
#include <torch/extension.h>
#include <ATen/AccumulateType.h>

template <typename scalar_t>
__global__ void C10_LAUNCH_BOUNDS_1(128) gelu_acc(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n)
{
    using acc_t = at::acc_type<scalar_t, true>;
    using op_t = at::opmath_type<scalar_t>;
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        acc_t v = static_cast<acc_t>(x[i]);
        op_t h = static_cast<op_t>(0.5);
        y[i] = static_cast<scalar_t>(h * v * (acc_t(1) + erff(v * acc_t(0.70710678118654752))));
    }
}
template __global__ void gelu_acc<at::Half>(const at::Half*, at::Half*, int64_t);
