"""Row-wise softmax, one row per program.

The whole row fits in one block (BLOCK_SIZE is the next power of two of
n_cols).  Padding lanes load -inf, so they neither win the max nor add to the
sum.  Rows may be strided (a view of a wider buffer); columns are contiguous.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(
    output_ptr,
    input_ptr,
    input_row_stride,
    output_row_stride,
    n_cols,
    BLOCK_SIZE: tl.constexpr,
):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    row_start = input_ptr + row_idx * input_row_stride
    x = tl.load(row_start + col_offsets, mask=mask, other=-float("inf")).to(tl.float32)
    # Shift by the row max so that exp cannot overflow.
    z = x - tl.max(x, axis=0)
    numerator = tl.exp(z)
    denominator = tl.sum(numerator, axis=0)
    y = numerator / denominator
    out_start = output_ptr + row_idx * output_row_stride
    tl.store(out_start + col_offsets, y.to(output_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_warps = 4
    if BLOCK_SIZE >= 2048:
        num_warps = 8
    if BLOCK_SIZE >= 4096:
        num_warps = 16
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](
        y, x, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps
    )
    return y
