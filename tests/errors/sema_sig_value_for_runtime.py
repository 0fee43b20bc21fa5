# RUN: ir %s:k --sig "x_ptr=*fp32,n='relu',m=i32,BLOCK=16"
# RUN: ir %s:k --sig 'x_ptr=*fp32,n=tl.float16,m=i32,BLOCK=16'
# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32,m=None,BLOCK=16'
# RUN: ir %s:k --sig 'x_ptr=*fp32,n=fp16,m=i32,BLOCK=16'
# RUN: ir %s:k --sig 'x_ptr=None,n=i32,m=i32,BLOCK=16'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, m: tl.int64, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 0.0, mask=offs < n + m)
