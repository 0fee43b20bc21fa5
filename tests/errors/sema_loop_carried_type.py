# RUN: ir %s:k --sig 'x_ptr=*fp16,n=i32,BLOCK=64'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(n):
        acc = tl.load(x_ptr + i * BLOCK + offs)
    tl.store(x_ptr + offs, acc)
