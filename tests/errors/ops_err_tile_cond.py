# An `if` condition must be a scalar, not a tile.
# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n):
    offs = tl.arange(0, 16)
    if offs < n:
        tl.store(x_ptr + offs, 0.0)
