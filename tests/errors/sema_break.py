# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n):
    acc = 0.0
    for i in range(n):
        acc += tl.load(x_ptr + i)
        if acc > 10.0:
            break
    tl.store(x_ptr, acc)
