# tl.load of something that is not a pointer.
# RUN: ir %s:k --sig 'x_ptr=*fp32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(offs)
    tl.store(x_ptr + offs, x)
