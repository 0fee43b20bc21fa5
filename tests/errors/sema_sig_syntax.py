# RUN: ir %s:k --sig 'x_ptr=*fp32, BLOCK 16'
# RUN: ir %s:k --sig 'x_ptr=*float,BLOCK=16'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)
