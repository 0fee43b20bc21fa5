// RUN: ir %s:k --sig scalar_t=fp32 --block 32
// An accessor indexed with fewer subscripts than its dimensions (a row of it), and an accessor
// used as a value: refused, located.
#include <torch/extension.h>
template <typename scalar_t>
__global__ void k(torch::PackedTensorAccessor32<scalar_t, 2, torch::RestrictPtrTraits> x)
{
    x[blockIdx.x] = 0;
    auto y = x;
}
