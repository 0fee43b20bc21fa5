"""Bias add fused with an activation: y = act(x + bias[None, :]) on [M, N].

The activations and the tile-index helper come from the package's shared
helpers module, imported the way kernel libraries usually do.
"""
import torch
import triton
import triton.language as tl

from .kernel_utils import row_col_offsets, silu, squared_relu


@triton.jit
def bias_act_kernel(
    x_ptr,
    bias_ptr,
    y_ptr,
    M,
    N,
    stride_xm,
    stride_ym,
    ACTIVATION: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    rows, cols = row_col_offsets(tl.program_id(0), tl.program_id(1), BLOCK_M, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0)
    bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0)
    h = x.to(tl.float32) + bias[None, :].to(tl.float32)
    if ACTIVATION == "silu":
        h = silu(h)
    elif ACTIVATION == "squared_relu":
        h = squared_relu(h)
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], h.to(y_ptr.dtype.element_ty), mask=mask)


def bias_act(x: torch.Tensor, bias: torch.Tensor, activation: str = "silu") -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 64))
    bias_act_kernel[grid](x, bias, y, M, N, x.stride(0), y.stride(0),
                          ACTIVATION=activation, BLOCK_M=32, BLOCK_N=64)
    return y
