"""Clamping: a general clamp with runtime bounds, and ReLU6 with fixed ones."""
import torch
import triton
import triton.language as tl


@triton.jit
def clamp_kernel(x_ptr, y_ptr, n, lo, hi, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.clamp(x, lo, hi), mask=mask)


@triton.jit
def relu6_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.clamp(x, 0.0, 6.0)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def clamp(x: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
    y = torch.empty_like(x)
    n = x.numel()
    clamp_kernel[(triton.cdiv(n, 1024),)](x, y, n, lo, hi, BLOCK_SIZE=1024)
    return y
