# Tile creation: zeros, full with a number and with a runtime scalar,
# zeros_like, arange with a nonzero start, and atomic_add.
# RUN: ir %s:create_kernel --sig 'x_ptr=*fp32,c_ptr=*i32,v=fp32,BLOCK=16'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def create_kernel(x_ptr, c_ptr, v, BLOCK: tl.constexpr):
    offs = tl.arange(BLOCK, 2 * BLOCK)
    z = tl.zeros((BLOCK,), dtype=tl.float32)
    z2 = tl.zeros([2, BLOCK], tl.int8)
    f = tl.full((BLOCK,), 1.5, tl.bfloat16)
    fv = tl.full([BLOCK], v, tl.float32)
    zl = tl.zeros_like(fv)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, x + z + f + fv + zl + tl.sum(z2, axis=0))
    old = tl.atomic_add(c_ptr + offs, 1, mask=offs < 20)
    tl.atomic_add(x_ptr, v)
    tl.store(c_ptr + offs, old)
