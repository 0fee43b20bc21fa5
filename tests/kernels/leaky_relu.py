"""Leaky ReLU with a compile-time slope: y = x if x >= 0 else slope * x."""
import torch
import triton
import triton.language as tl


@triton.jit
def leaky_relu_kernel(
    x_ptr,
    y_ptr,
    n_elements,
    NEGATIVE_SLOPE: tl.constexpr = 0.01,
    BLOCK_SIZE: tl.constexpr = 512,
):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.where(x >= 0, x, x * NEGATIVE_SLOPE)
    tl.store(y_ptr + offsets, y, mask=mask)


def leaky_relu(x: torch.Tensor, negative_slope: float = 0.01) -> torch.Tensor:
    y = torch.empty_like(x)
    n = x.numel()
    leaky_relu_kernel[(triton.cdiv(n, 512),)](x, y, n, NEGATIVE_SLOPE=negative_slope)
    return y
