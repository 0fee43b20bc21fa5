"""Seeded dropout: out = x / (1 - p) where rand > p, else 0.

The keep decision for element i is a pure function of (seed, i) via Philox
(tl.rand), so the backward pass regenerates the same mask from the seed
instead of storing it.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def seeded_dropout_kernel(x_ptr, out_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    random = tl.rand(seed, offsets)
    keep = random > p
    # Scale the survivors so that the expectation is unchanged.
    out = tl.where(keep, x / (1 - p), 0.0)
    tl.store(out_ptr + offsets, out, mask=mask)


def seeded_dropout(x: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    out = torch.empty_like(x)
    assert x.is_contiguous()
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    seeded_dropout_kernel[grid](x, out, n, p, seed, BLOCK_SIZE=1024)
    return out
