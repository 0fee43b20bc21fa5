# A stored value must broadcast to the pointer's shape (it cannot grow it).
# RUN: ir %s:k --sig 'x_ptr=*fp32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, x[:, None] + x[None, :])
