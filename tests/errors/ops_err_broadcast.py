# Shapes [64] and [128] do not broadcast.
# RUN: ir %s:k --sig 'x_ptr=*fp32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    a = tl.arange(0, 64)
    b = tl.arange(0, 128)
    tl.store(x_ptr + b, a + b)
