# A reduction axis out of range for the tile's rank.
# RUN: ir %s:k --sig 'x_ptr=*fp32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    offs = tl.arange(0, 8)[:, None] * 8 + tl.arange(0, 8)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + tl.arange(0, 8), tl.sum(x, axis=2))
