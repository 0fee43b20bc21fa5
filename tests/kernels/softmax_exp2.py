"""Softmax over long rows with an online normalizer, in base 2.

exp(x - m) == exp2((x - m) * log2(e)); scaling the inputs once by log2(e)
lets every exponential be the cheaper exp2 (as in FlashAttention kernels).
Pass 1 computes the running max and the normalizer block by block; pass 2
writes the probabilities.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_online_exp2_kernel(x_ptr, y_ptr, stride_x, stride_y, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y

    m_i = -float("inf")
    l_i = 0.0
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        x = x * 1.4426950408889634  # log2(e)
        m_new = tl.maximum(m_i, tl.max(x, 0))
        l_i = l_i * tl.exp2(m_i - m_new) + tl.sum(tl.exp2(x - m_new), 0)
        m_i = m_new

    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
        p = tl.exp2(x * 1.4426950408889634 - m_i) / l_i
        tl.store(y_row + cols, p.to(y_ptr.dtype.element_ty), mask=mask)


def softmax_online(x: torch.Tensor, block_n: int = 1024) -> torch.Tensor:
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_online_exp2_kernel[(n_rows,)](x, y, x.stride(0), y.stride(0), n_cols, BLOCK_N=block_n)
    return y
