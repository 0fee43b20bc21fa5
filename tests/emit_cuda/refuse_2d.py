# Tiles of rank 2 have no per-thread spelling yet: a located error naming the value and its shape.
# RUN: emit %s:outer --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=16' --emit cuda
import triton
import triton.language as tl


@triton.jit
def outer(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    xy = x[:, None] * x[None, :]
    tl.store(y_ptr + offs[:, None] * BLOCK + offs[None, :], xy)
