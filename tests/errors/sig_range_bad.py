# Signature ranges (`n=i32[lo:hi]`): for runtime int parameters only, lo <= hi inside the type,
# both bounds ints, written '[lo:hi]'.
# RUN: ir %s:k --sig 'x_ptr=*fp32,n=fp32[1:4],BLOCK=4'
# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32[5:4],BLOCK=4'
# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32[1:3000000000],BLOCK=4'
# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32[1.5:4],BLOCK=4'
# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32[1,4],BLOCK=4'
# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32[1:4],BLOCK=i32[1:4]'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        tl.store(x_ptr + cols, 1.0, mask=cols < n)
