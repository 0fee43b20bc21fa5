"""Bias add over the last dimension: y[row, col] = x[row, col] + b[col].

A 2-D grid: program_id(0) is the row, program_id(1) a block of BLOCK_N
columns.  The bias address depends only on program_id(1), so every row
program reads the same bias block: its gradient (the column sums of dy) is
shared by all the programs of axis 0.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def bias_add_kernel(x_ptr, b_ptr, y_ptr, stride_x, stride_y, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
    bias = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride_y + cols, x + bias, mask=mask)


def bias_add(x: torch.Tensor, b: torch.Tensor, block_n: int = 1024) -> torch.Tensor:
    x2d = x.reshape(-1, x.shape[-1])
    n_rows, n_cols = x2d.shape
    y = torch.empty_like(x2d)
    block_n = min(block_n, triton.next_power_of_2(n_cols))
    grid = (n_rows, triton.cdiv(n_cols, block_n))
    bias_add_kernel[grid](x2d, b, y, x2d.stride(0), y.stride(0), n_cols, BLOCK_N=block_n)
    return y.view_as(x)
