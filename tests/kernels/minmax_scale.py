"""Row-wise min-max scaling: y = (x - min) / (max - min + eps) * (hi - lo) + lo.

Written with small @triton.jit helpers, one of which returns a tuple, the way
kernel libraries factor shared reductions.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _masked_minmax(x, mask):
    """(min, max) of the valid lanes of a 1-D block."""
    lo = tl.min(tl.where(mask, x, float("inf")), axis=0)
    hi = tl.max(tl.where(mask, x, float("-inf")), axis=0)
    return lo, hi


@triton.jit
def _rescale(x, x_min, x_max, eps, new_lo, new_hi):
    unit = (x - x_min) / (x_max - x_min + eps)
    return unit * (new_hi - new_lo) + new_lo


@triton.jit
def minmax_scale_kernel(
    x_ptr, y_ptr, stride_x, stride_y, n_cols, eps, new_lo, new_hi, BLOCK_N: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    x_min, x_max = _masked_minmax(x, mask)
    y = _rescale(x, x_min, x_max, eps, new_lo, new_hi)
    tl.store(y_ptr + row * stride_y + cols, y, mask=mask)


def minmax_scale(x: torch.Tensor, lo: float = 0.0, hi: float = 1.0, eps: float = 1e-12):
    n_rows, n_cols = x.shape
    y = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    minmax_scale_kernel[(n_rows,)](x, y, x.stride(0), y.stride(0), n_cols, eps, lo, hi,
                                   BLOCK_N=triton.next_power_of_2(n_cols))
    return y
