# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n):
    if n > 0:
        y = tl.load(x_ptr)
    tl.store(x_ptr, y)
