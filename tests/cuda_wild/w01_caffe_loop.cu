#include <cuda.h>
#include <cuda_runtime.h>
#include <cfloat>

#define CUDA_KERNEL_LOOP(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

namespace {
template <typename scalar_t>
__global__ void elu_forward_kernel(const int nthreads, const scalar_t* __restrict__ in,
                                   scalar_t* __restrict__ out, const float alpha) {
  CUDA_KERNEL_LOOP(index, nthreads) {
    const scalar_t v = in[index];
    out[index] = v > 0 ? v : static_cast<scalar_t>(alpha * (expf(v) - 1.f));
  }
}
}  // namespace
