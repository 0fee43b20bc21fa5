"""Softplus with PyTorch's beta/threshold convention.

    y = log(1 + exp(beta * x)) / beta    if beta * x <= threshold
    y = x                                 otherwise (exp would overflow; the
                                          two agree to working precision)
"""
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def softplus_kernel(x_ptr, y_ptr, n_elements, beta, threshold, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    bx = x * beta
    # log1p keeps full precision where exp(bx) is tiny (very negative x).
    soft = libdevice.log1p(tl.exp(bx)) / beta
    y = tl.where(bx > threshold, x, soft)
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


def softplus(x: torch.Tensor, beta: float = 1.0, threshold: float = 20.0) -> torch.Tensor:
    y = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, 1024),)
    softplus_kernel[grid](x, y, n, beta, threshold, BLOCK_SIZE=1024)
    return y
