# RUN: ir %s:k --sig 'x_ptr=*fp32,BLOCK=8'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, BLOCK: tl.constexpr):
    assert BLOCK % 16 == 0, "BLOCK must be a multiple of 16"
    tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)
