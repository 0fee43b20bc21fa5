# '%' on signed and unsigned ints is refused, as in Triton.
# RUN: ir %s:k --sig 'x_ptr=*i32,u=u32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, u):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, offs % u)
