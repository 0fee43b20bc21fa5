# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32'
import triton
import triton.language as tl


@triton.jit
def maybe(x, n):
    if n > 0:
        return x * 2.0


@triton.jit
def k(x_ptr, n):
    tl.store(x_ptr, maybe(tl.load(x_ptr), n))
