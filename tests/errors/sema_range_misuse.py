# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n):
    r = tl.static_range(4)
    for i in range(0, n, 0):
        tl.store(x_ptr + i, 1.0)
    for j in range(0, 2.5):
        tl.store(x_ptr + j, 1.0)
