# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n):
    for i in range(n):
        x = tl.load(x_ptr + i)
        if x < 0.0:
            return
        tl.store(x_ptr + i, x * 2.0)
