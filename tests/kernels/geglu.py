"""GeGLU forward: c = gelu_tanh(a) * b, the gated MLP of T5/Gemma-style models.

GELU with the tanh approximation:

    gelu_tanh(a) = 0.5 * a * (1 + tanh(sqrt(2 / pi) * (a + 0.044715 * a^3)))

Triton has no tl.tanh: it comes from libdevice.  One program per row of the
[n_rows, n_cols] halves a and b (a common row stride; c has its own), the
whole row in one block.  The gate is computed in fp32 and rounded to b's type
before the product, as the PyTorch module does with a half-precision b.
"""
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)
CUBIC = tl.constexpr(0.044715)


@triton.jit
def gelu_tanh(x):
    inner = SQRT_2_OVER_PI * (x + CUBIC * x * x * x)
    return 0.5 * x * (1.0 + libdevice.tanh(inner))


@triton.jit
def geglu_fwd_kernel(a_ptr, b_ptr, c_ptr, stride_in, stride_out, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    a = tl.load(a_ptr + row * stride_in + cols, mask=mask, other=0).to(tl.float32)
    b = tl.load(b_ptr + row * stride_in + cols, mask=mask, other=0)
    c = gelu_tanh(a).to(b.dtype) * b
    tl.store(c_ptr + row * stride_out + cols, c, mask=mask)


def geglu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    shape = a.shape
    a = a.reshape(-1, shape[-1])
    b = b.reshape(-1, shape[-1])
    assert a.stride(0) == b.stride(0)
    n_rows, n_cols = a.shape
    c = torch.empty((n_rows, n_cols), dtype=a.dtype, device=a.device)
    geglu_fwd_kernel[(n_rows,)](a, b, c, a.stride(0), c.stride(0), n_cols,
                                BLOCK_SIZE=triton.next_power_of_2(n_cols))
    return c.view(*shape)
