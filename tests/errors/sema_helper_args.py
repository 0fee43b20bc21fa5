# RUN: ir %s:k --sig 'x_ptr=*fp32'
import triton
import triton.language as tl


@triton.jit
def add(a, b, scale=1.0):
    return (a + b) * scale


@triton.jit
def k(x_ptr):
    x = tl.load(x_ptr)
    y = add(x)
    z = add(x, x, 2.0, 3.0)
    w = add(x, x, factor=2.0)
    v = add(x, a=x)
    tl.store(x_ptr, x)
