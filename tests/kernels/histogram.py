"""Histogram of float data into NUM_BINS equal-width bins with atomic adds.

Bin i counts values in [lo + i * width, lo + (i + 1) * width); values below
lo fall into bin 0 and values past the last edge into the last bin.  hist
must be zeroed by the caller; programs add their counts concurrently.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def histogram_kernel(x_ptr, hist_ptr, n, lo, bin_width, NUM_BINS: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    # Truncation toward zero, then clamping, maps out-of-range values to the end bins.
    bins = ((x - lo) / bin_width).to(tl.int32)
    bins = tl.minimum(tl.maximum(bins, 0), NUM_BINS - 1)
    tl.atomic_add(hist_ptr + bins, 1, mask=mask)


def histogram(x: torch.Tensor, lo: float, hi: float, num_bins: int = 64) -> torch.Tensor:
    hist = torch.zeros(num_bins, dtype=torch.int32, device=x.device)
    n = x.numel()
    width = (hi - lo) / num_bins
    histogram_kernel[(triton.cdiv(n, 1024),)](x, hist, n, lo, width, NUM_BINS=num_bins, BLOCK_SIZE=1024)
    return hist
