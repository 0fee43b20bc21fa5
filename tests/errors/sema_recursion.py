# RUN: ir %s:k --sig 'x_ptr=*fp32'
import triton
import triton.language as tl


@triton.jit
def fact(n):
    return n * fact(n - 1)


@triton.jit
def k(x_ptr):
    tl.store(x_ptr, fact(5) * 1.0)
