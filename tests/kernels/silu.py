"""SiLU (swish): y = x * sigmoid(x).

Half-precision inputs are upcast to fp32 for the sigmoid and the product, and
the result is rounded once, to the output's element type.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = x * tl.sigmoid(x)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def silu(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    silu_kernel[(triton.cdiv(n, 2048),)](x, out, n, BLOCK_SIZE=2048)
    return out
