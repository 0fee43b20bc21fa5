# Loads of one pointer under one mask in one block (the same ValIds: the
# same addresses and live lanes) add their adjoints in registers and share
# one atomic_add into d_x_ptr: `twice` loads x three times (two `other`
# values; the two equal loads are one after the simplifier, which reuses a
# load when nothing writes memory between) and issues a single atomic.  `two_masks` loads through the same
# pointer under two different masks: two atomics, one per mask.
# RUN: grad %s:twice --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:two_masks --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr
import triton
import triton.language as tl


@triton.jit
def twice(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(x_ptr + offs, mask=m, other=0.0)
    b = tl.exp(tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32))
    c = tl.load(x_ptr + offs, mask=m, other=1.0)
    tl.store(y_ptr + offs, a * b * c, mask=m)


@triton.jit
def two_masks(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(x_ptr + offs, mask=m, other=0.0)
    b = tl.load(x_ptr + offs, mask=m & (offs % 2 == 0), other=0.0)
    tl.store(y_ptr + offs, a * tl.exp(b), mask=m)
# ROUNDTRIP
