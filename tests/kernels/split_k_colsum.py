"""Column sums of a tall [M, N] matrix, split over M across programs.

A 2-D grid: axis 0 splits the rows into SPLIT_M-row slabs, axis 1 the columns
into BLOCK_N blocks.  Each program reduces its slab in registers and adds the
partial sums into the fp32 output with atomic_add, which must be zeroed first.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def colsum_split_kernel(
    x_ptr, out_ptr, M, N, stride_xm,
    SPLIT_M: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    slab_start = pid_m * SPLIT_M
    for m0 in range(slab_start, slab_start + SPLIT_M, BLOCK_M):
        rows = m0 + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < M) & col_mask[None, :]
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    tl.atomic_add(out_ptr + cols, acc, mask=col_mask)


def colsum(x: torch.Tensor, split_m: int = 256) -> torch.Tensor:
    M, N = x.shape
    out = torch.zeros(N, dtype=torch.float32, device=x.device)
    grid = (triton.cdiv(M, split_m), triton.cdiv(N, 64))
    colsum_split_kernel[grid](x, out, M, N, x.stride(0), SPLIT_M=split_m, BLOCK_M=32, BLOCK_N=64)
    return out
