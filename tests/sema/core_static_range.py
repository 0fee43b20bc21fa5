# tl.static_range is always unrolled: the body is lowered once per
# iteration with the loop variable a constexpr.
# RUN: ir %s:poly_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,DEGREE=3,BLOCK=16'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def poly_kernel(x_ptr, out_ptr, DEGREE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.zeros([BLOCK], dtype=tl.float32)
    for i in tl.static_range(DEGREE, 0, -1):
        y = y * x + i
    tl.store(out_ptr + offs, y)
