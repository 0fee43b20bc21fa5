# tl.where with scalar and number operands, maximum/minimum with numbers,
# clamp (lowered to maximum then minimum).
# RUN: ir %s:where_kernel --sig 'x_ptr=*fp32,h_ptr=*fp16,n=i32,BLOCK=16'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def where_kernel(x_ptr, h_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    h = tl.load(h_ptr + offs)
    pos = tl.where(x > 0, x, 0.0)
    sel = tl.where(offs < n, h, 1)
    sc = tl.where(n > 3, 1.5, 2)
    mx = tl.maximum(x, 0)
    mn = tl.minimum(h, 0.5)
    cl = tl.clamp(x, -1.0, 1.0)
    tl.store(x_ptr + offs, pos + sel + sc + mx + mn + cl)
