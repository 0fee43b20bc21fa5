# RUN: ir %s:missing_kernel --sig 'x_ptr=*fp32'
import triton
import triton.language as tl


@triton.jit
def first(x_ptr):
    tl.store(x_ptr, 1.0)


@triton.jit
def second(x_ptr):
    tl.store(x_ptr, 2.0)
