# A loop of one trip under a signature range (`n=i32[1:64]`) is lowered as straight-line code, but
# it is still a loop: a carried variable must keep its type, as in the loop form.
# RUN: ir %s:k --sig 'x_ptr=*fp16,n=i32[1:64],BLOCK=64'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, n, BLOCK):
        acc = tl.load(x_ptr + i + offs)
    tl.store(x_ptr + offs, acc)
