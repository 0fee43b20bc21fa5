# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32,BLOCK=64'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if n > 0:
        x = tl.load(x_ptr + offs)
    else:
        x = offs
    tl.store(x_ptr + offs, x)
