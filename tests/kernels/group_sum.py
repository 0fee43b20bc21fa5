"""Grouped channel sums, written out channel-group-major.

x is [M, GROUPS * GROUP_SIZE]; out is [GROUPS, M] with
out[g, m] = sum_j x[m, g * GROUP_SIZE + j].  The row tile is reshaped to
[BLOCK_M, GROUPS, GROUP_SIZE], reduced over the last axis, and permuted to
[GROUPS, BLOCK_M] so that the store is contiguous along m.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def group_sum_kernel(
    x_ptr,
    out_ptr,
    M,
    stride_xm,
    stride_og,
    GROUPS: tl.constexpr,
    GROUP_SIZE: tl.constexpr,
    BLOCK_M: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, GROUPS * GROUP_SIZE)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=rows[:, None] < M, other=0.0)
    grouped = x.reshape(BLOCK_M, GROUPS, GROUP_SIZE)
    sums = tl.sum(grouped, axis=2)  # [BLOCK_M, GROUPS]
    sums_t = tl.permute(sums, (1, 0))  # [GROUPS, BLOCK_M]
    g = tl.arange(0, GROUPS)
    tl.store(out_ptr + g[:, None] * stride_og + rows[None, :], sums_t, mask=rows[None, :] < M)


def group_sum(x: torch.Tensor, groups: int) -> torch.Tensor:
    M, C = x.shape
    out = torch.empty((groups, M), dtype=x.dtype, device=x.device)
    group_sum_kernel[(triton.cdiv(M, 16),)](
        x, out, M, x.stride(0), out.stride(0), GROUPS=groups, GROUP_SIZE=C // groups, BLOCK_M=16
    )
    return out
