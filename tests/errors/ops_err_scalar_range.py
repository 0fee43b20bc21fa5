# A number that does not fit the tensor's integer type (Triton keeps i32).
# RUN: ir %s:k --sig 'x_ptr=*i32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, offs + 2**40)
