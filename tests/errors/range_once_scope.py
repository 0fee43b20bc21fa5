# A loop of one trip under a signature range (`n=i32[1:64]`) is lowered as straight-line code, but
# names its body defines still end with it, as in the loop form: `x` is unknown after the loop.
# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32[1:64],BLOCK=64'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for i in range(0, n, BLOCK):
        x = tl.load(x_ptr + i + offs, mask=i + offs < n)
    tl.store(x_ptr + offs, x * 2.0, mask=offs < n)
