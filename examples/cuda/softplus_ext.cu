// A CUDA C extension's kernel pair, as one writes it for a pybind11 / torch.utils.cpp_extension
// module: a forward and a hand-written backward.  docs/TUTORIAL.md, section 9, checks the
// backward with kad.cuda.check_backward and then replaces it with kad's.
//
//   y[r, c] = w[c] * softplus(x[r, c]),  softplus(v) = log(1 + exp(v))
//
// Launch: one block per row (grid = rows), the block's threads striding over the row's columns.
#include <cuda_runtime.h>
#include <math.h>

__global__ void softplus_scale(const float* __restrict__ x, const float* __restrict__ w,
                               float* __restrict__ y, int cols)
{
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = w[c] * logf(1.0f + expf(xr[c]));
}

// dx = dy * w * sigmoid(x); dw[c] = sum over rows of dy * softplus(x), added with atomicAdd into
// dw (zero-filled by the caller): the usual hand-written shortcut, whose order of float additions
// changes from run to run on a GPU
__global__ void softplus_scale_bwd(const float* __restrict__ x, const float* __restrict__ w,
                                   const float* __restrict__ dy, float* __restrict__ dx,
                                   float* __restrict__ dw, int cols)
{
    const size_t row = (size_t)blockIdx.x * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = x[row + c];
        float g = dy[row + c];
        float s = 1.0f / (1.0f + expf(-v));
        dx[row + c] = g * w[c] * s;
        atomicAdd(&dw[c], g * logf(1.0f + expf(v)));
    }
}
