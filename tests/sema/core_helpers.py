# @triton.jit helpers are inlined: positional and keyword arguments,
# defaults, constexpr parameters (folded), tuples in and out.
# RUN: ir %s:helper_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=64'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def block_offsets(pid, BLOCK: tl.constexpr, n):
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    return offs, offs < n


@triton.jit
def scale_shift(x, scale=2.0, shift=0.0, SQUARE: tl.constexpr = False):
    if SQUARE:
        x = x * x
    return x * scale + shift


@triton.jit
def swap(pair):
    a, b = pair
    return b, a


@triton.jit
def helper_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs, mask = block_offsets(tl.program_id(0), BLOCK, n)
    x = tl.load(x_ptr + offs, mask=mask)
    y = scale_shift(x, shift=1.0)
    z = scale_shift(x, 3.0, SQUARE=True)
    z, y = swap((y, z))
    tl.store(out_ptr + offs, y - z, mask=mask)
