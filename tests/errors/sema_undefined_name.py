# RUN: ir %s:k --sig 'x_ptr=*fp32,BLOCK=16'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offz)
