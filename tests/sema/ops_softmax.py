# tl.softmax as Triton defines it: x - max(x, dim), exp, sum, divide
# (dim defaults to 0; keep_dims makes the 2-D row softmax broadcast).
# RUN: ir %s:softmax_kernel --sig 'x_ptr=*fp32,h_ptr=*fp16,out_ptr=*fp32,M=4,N=8'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, h_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rn)
    y = tl.softmax(x)
    offs = tl.arange(0, M)[:, None] * N + rn[None, :]
    x2 = tl.load(x_ptr + offs)
    rows = tl.softmax(x2, dim=1, keep_dims=True)
    h = tl.load(h_ptr + rn)
    hs = h.softmax()
    tl.store(out_ptr + rn, y + hs)
    tl.store(out_ptr + offs, rows)
