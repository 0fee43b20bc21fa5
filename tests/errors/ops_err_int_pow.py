# '**' on integer tiles has no Triton lowering.
# RUN: ir %s:k --sig 'x_ptr=*i32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, offs ** 2)
