# Pointers support only + and - of integer offsets.
# RUN: ir %s:k --sig 'x_ptr=*fp32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    offs = tl.arange(0, 16)
    p = x_ptr * 2
    tl.store(p + offs, 0.0)
