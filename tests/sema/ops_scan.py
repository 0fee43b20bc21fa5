# cumsum and cumprod: axis, negative axis, reverse, the i32 accumulation of
# narrow ints and the fp32 promotion of bf16.
# RUN: ir %s:scan_kernel --sig 'x_ptr=*fp32,b_ptr=*bf16,c_ptr=*i16,out_ptr=*fp32,M=4,N=8'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def scan_kernel(x_ptr, b_ptr, c_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    a = tl.cumsum(x, axis=1)
    r = tl.cumsum(x, 0, reverse=True)
    p = x.cumprod(axis=-1)
    b = tl.load(b_ptr + offs)
    bs = tl.cumsum(b, 1)
    c = tl.load(c_ptr + offs)
    cs = tl.cumsum(c, 1)
    tl.store(out_ptr + offs, a + r + p + bs + cs)
