# tl.exp accepts fp32 and fp64 only (as Triton's math functions).
# RUN: ir %s:k --sig 'x_ptr=*fp16'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, tl.exp(x))
