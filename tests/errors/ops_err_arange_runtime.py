# tl.arange bounds must be constexprs, not runtime values.
# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n):
    offs = tl.arange(0, n)
    tl.store(x_ptr + offs, 0.0)
