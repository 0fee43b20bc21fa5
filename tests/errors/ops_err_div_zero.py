# Division by zero in constexpr arithmetic.
# RUN: ir %s:k --sig 'x_ptr=*fp32,BLOCK=16,SPLIT=0'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, BLOCK: tl.constexpr, SPLIT: tl.constexpr):
    offs = tl.arange(0, BLOCK // SPLIT)
    tl.store(x_ptr + offs, 0.0)
