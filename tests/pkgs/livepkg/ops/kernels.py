"""Kernels using the import-time helpers of the package."""
import os

import triton
import triton.language as tl

from livepkg.ops.utils.op import exp2
from livepkg.ops import utils
from livepkg.ops.act import smooth, bump
from livepkg.ops.softplus import softplus
from livepkg.ops import softplus as sp  # the function: the package re-exports it over the submodule
from livepkg.ops.bad import broken


@triton.jit
def exp2_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, exp2(x) + utils.tanh(x), mask=mask)


@triton.jit
def chain_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, smooth(x) * bump(x), mask=mask)


@triton.jit
def softplus_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, softplus(x) + sp(-x), mask=mask)


@triton.jit
def broken_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, broken(x), mask=mask)


# the kernel itself chosen at import time (the else branch: not the first def in the text)
if os.environ.get("LIVEPKG_KERNEL", "exact") == "fast":
    @triton.jit
    def picked_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
else:
    @triton.jit
    def picked_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, exp2(x) * softplus(x), mask=mask)
