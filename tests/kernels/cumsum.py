"""Inclusive prefix sum along rows, forward or reversed (suffix sums).

Each program scans BLOCK_M whole rows at once (BLOCK_N >= n_cols) with
tl.cumsum; sums are accumulated in fp32.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def cumsum_rows_kernel(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    stride_x,
    stride_y,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    REVERSE: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    # Padding loads 0: harmless at the end of a forward scan and at the start
    # of a reversed one.
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
    y = tl.cumsum(x.to(tl.float32), axis=1, reverse=REVERSE)
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y, mask=mask)


def cumsum_rows(x: torch.Tensor, reverse: bool = False) -> torch.Tensor:
    n_rows, n_cols = x.shape
    y = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    BLOCK_M = 4
    grid = (triton.cdiv(n_rows, BLOCK_M),)
    cumsum_rows_kernel[grid](
        x, y, n_rows, n_cols, x.stride(0), y.stride(0),
        BLOCK_M=BLOCK_M, BLOCK_N=triton.next_power_of_2(n_cols), REVERSE=reverse,
    )
    return y
