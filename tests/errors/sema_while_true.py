# RUN: ir %s:k --sig 'x_ptr=*fp32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    x = tl.load(x_ptr)
    while True:
        x = x + 1.0
    tl.store(x_ptr, x)
