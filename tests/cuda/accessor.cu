// RUN: check %s:gated_cell --sig scalar_t=fp64 --block 32 --wrt gates,old_cell --out new_h,new_cell --grid 2,3 --shape gates=3x3x40 --shape old_cell=3x40 --shape new_h=3x40 --shape new_cell=3x40
// torch::PackedTensorAccessor32 parameters, as PyTorch's C++/CUDA extensions pass tensors: each is
// kad's data pointer NAME plus NAME_size<k> and NAME_stride<k> (`kad check` fills them from NAME's
// --shape, kad.cuda from the tensor passed), read and written as a[n][i][c], asked a.size(2).
#include <torch/extension.h>

template <typename scalar_t>
__device__ __forceinline__ scalar_t sigmoid(scalar_t z) { return 1.0 / (1.0 + exp(-z)); }

template <typename scalar_t>
__global__ void gated_cell(const torch::PackedTensorAccessor32<scalar_t, 3, torch::RestrictPtrTraits> gates,
                           const torch::PackedTensorAccessor32<scalar_t, 2, torch::RestrictPtrTraits> old_cell,
                           torch::PackedTensorAccessor32<scalar_t, 2, torch::RestrictPtrTraits> new_h,
                           torch::PackedTensorAccessor32<scalar_t, 2, torch::RestrictPtrTraits> new_cell)
{
    const int n = blockIdx.y;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < gates.size(2)) {
        const scalar_t in_gate = sigmoid(gates[n][0][c]);
        const scalar_t out_gate = sigmoid(gates[n][1][c]);
        const scalar_t cand = tanh(gates[n][2][c]);
        const scalar_t cell = old_cell[n][c] + cand * in_gate;
        new_cell[n][c] = cell;
        new_h[n][c] = tanh(cell) * out_gate;
    }
}
