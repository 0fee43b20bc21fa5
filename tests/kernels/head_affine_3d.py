"""Per-head affine transform on a [B, H, L] tensor: y[b, h, :] = x[b, h, :] * w[h] + bias[h].

A 3-D grid: axis 0 walks blocks of L, axis 1 the heads, axis 2 the batch, so
that each program loads its head's two parameters once as scalars.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def head_affine_kernel(
    x_ptr,
    w_ptr,
    bias_ptr,
    y_ptr,
    L,
    stride_xb,
    stride_xh,
    stride_yb,
    stride_yh,
    BLOCK_L: tl.constexpr,
):
    pid_l = tl.program_id(0)
    head = tl.program_id(1)
    batch = tl.program_id(2)
    offs = pid_l * BLOCK_L + tl.arange(0, BLOCK_L)
    mask = offs < L
    w = tl.load(w_ptr + head)
    b = tl.load(bias_ptr + head)
    x = tl.load(x_ptr + batch * stride_xb + head * stride_xh + offs, mask=mask)
    y = x * w + b
    tl.store(y_ptr + batch * stride_yb + head * stride_yh + offs, y, mask=mask)


def head_affine(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    B, H, L = x.shape
    y = torch.empty_like(x)
    BLOCK_L = 256
    grid = (triton.cdiv(L, BLOCK_L), H, B)
    head_affine_kernel[grid](x, w, bias, y, L, x.stride(0), x.stride(1), y.stride(0), y.stride(1),
                             BLOCK_L=BLOCK_L)
    return y
