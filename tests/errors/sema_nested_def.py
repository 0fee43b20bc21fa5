# RUN: ir %s:k --sig 'x_ptr=*fp32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    def inner(x):
        return x
    tl.store(x_ptr, 1.0)
