# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n):
    acc = 0.0
    for i in tl.static_range(0, n):
        acc += tl.load(x_ptr + i)
    tl.store(x_ptr, acc)
