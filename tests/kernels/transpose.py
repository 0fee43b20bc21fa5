"""Out-of-place 2-D transpose, y = x^T, tiled on a 2-D grid.

Each program loads a BLOCK_M x BLOCK_N tile of x, transposes it in registers
with tl.trans and writes it as a BLOCK_N x BLOCK_M tile of y.  Any dtype.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(
    x_ptr, y_ptr, M, N, stride_xm, stride_ym, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tile = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :],
                   mask=(rm[:, None] < M) & (rn[None, :] < N))
    tl.store(y_ptr + rn[:, None] * stride_ym + rm[None, :], tl.trans(tile),
             mask=(rn[:, None] < N) & (rm[None, :] < M))


def transpose(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty((N, M), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    transpose_kernel[grid](x, y, M, N, x.stride(0), y.stride(0), BLOCK_M=32, BLOCK_N=32)
    return y
