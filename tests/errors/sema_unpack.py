# RUN: ir %s:k --sig 'x_ptr=*fp32,BLOCK=16'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, BLOCK: tl.constexpr):
    a, b = (1, 2, 3)
    c, d = tl.arange(0, BLOCK)
    tl.store(x_ptr, 1.0)
