"""Per-row statistics of a [M, N] matrix, BLOCK_M rows per program.

Outputs: row max and min (kept as [BLOCK_M, 1] columns, stored through
column-shaped pointers), the index of the row max, the mean absolute deviation
from the mid-range, and the row rescaled into [0, 1].  Padding lanes are
neutralized with tl.where so that they cannot win a max or a min.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def row_stats_kernel(
    x_ptr,
    max_ptr,
    min_ptr,
    argmax_ptr,
    mad_ptr,
    unit_ptr,
    M,
    N,
    stride_x,
    stride_unit,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    row_ok = rows[:, None] < M
    mask = row_ok & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)

    hi = tl.max(tl.where(mask, x, float("-inf")), axis=1, keep_dims=True)
    lo = tl.min(tl.where(mask, x, float("inf")), axis=1, keep_dims=True)
    idx = tl.argmax(tl.where(mask, x, float("-inf")), axis=1)

    mid = (hi + lo) * 0.5
    dev = tl.sum(tl.where(mask, tl.abs(x - mid), 0.0), axis=1, keep_dims=True) / N
    spread = tl.maximum(hi - lo, 1e-6)
    unit = (x - lo) / spread

    tl.store(max_ptr + rows[:, None], hi, mask=row_ok)
    tl.store(min_ptr + rows[:, None], lo, mask=row_ok)
    tl.store(argmax_ptr + rows, idx, mask=rows < M)
    tl.store(mad_ptr + rows[:, None], dev, mask=row_ok)
    tl.store(unit_ptr + rows[:, None] * stride_unit + cols[None, :], unit, mask=mask)


def row_stats(x: torch.Tensor):
    M, N = x.shape
    dev = x.device
    hi = torch.empty(M, device=dev)
    lo = torch.empty(M, device=dev)
    idx = torch.empty(M, device=dev, dtype=torch.int32)
    mad = torch.empty(M, device=dev)
    unit = torch.empty_like(x)
    BLOCK_M = 8
    row_stats_kernel[(triton.cdiv(M, BLOCK_M),)](
        x, hi, lo, idx, mad, unit, M, N, x.stride(0), unit.stride(0),
        BLOCK_M=BLOCK_M, BLOCK_N=triton.next_power_of_2(N),
    )
    return hi, lo, idx, mad, unit
