"""GELU, exact (erf form) or with the tanh approximation of Hendrycks & Gimpel.

    exact: 0.5 * x * (1 + erf(x / sqrt(2)))
    tanh:  0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))

Inputs of any float type are computed in fp32 and stored in the output type.
"""
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

# Module-level constants must be tl.constexpr to be visible inside kernels.
M_SQRT1_2 = tl.constexpr(0.7071067811865476)  # 1 / sqrt(2)
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)  # sqrt(2 / pi)
GELU_COEF = tl.constexpr(0.044715)


@triton.jit
def gelu_erf(x):
    return 0.5 * x * (1.0 + tl.erf(x * M_SQRT1_2))


@triton.jit
def gelu_tanh(x):
    inner = SQRT_2_OVER_PI * (x + GELU_COEF * x * x * x)
    return 0.5 * x * (1.0 + libdevice.tanh(inner))


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n_elements, APPROXIMATE: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    if APPROXIMATE == "tanh":
        y = gelu_tanh(x)
    else:
        y = gelu_erf(x)
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


def gelu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    if approximate not in ("none", "tanh"):
        raise ValueError(f"unknown approximation {approximate!r}")
    y = torch.empty_like(x)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    gelu_kernel[grid](x, y, n, APPROXIMATE=approximate, BLOCK_SIZE=1024)
    return y
