"""SwiGLU forward: c = silu(a) * b, the gated MLP of LLaMA-style models.

a and b are the two halves of the up-projection, laid out as [n_rows, n_cols]
with a common row stride.  The grid is 2-D: one row per program along axis 0,
one BLOCK_SIZE slice of columns along axis 1.  silu is evaluated in fp32, then
rounded to the input type before the product, as the PyTorch module does.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def silu(x):
    return x * tl.sigmoid(x)


@triton.jit
def swiglu_fwd_kernel(a_ptr, b_ptr, c_ptr, row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    col_block = tl.program_id(1)
    cols = col_block * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    a_ptr += row * row_stride
    b_ptr += row * row_stride
    c_ptr += row * row_stride
    a = tl.load(a_ptr + cols, mask=mask, other=0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0)
    c = silu(a).to(b.dtype) * b
    tl.store(c_ptr + cols, c, mask=mask)


def swiglu_forward(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    shape = a.shape
    a = a.view(-1, shape[-1])
    b = b.view(-1, shape[-1])
    c = torch.empty_like(a)
    n_rows, n_cols = a.shape
    BLOCK_SIZE = min(4096, triton.next_power_of_2(n_cols))
    grid = (n_rows, triton.cdiv(n_cols, BLOCK_SIZE))
    swiglu_fwd_kernel[grid](a, b, c, a.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE)
    return c.view(*shape)
