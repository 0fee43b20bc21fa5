# tl math functions on fp32 (and numbers), abs on ints, fma, umulhi, fdiv,
# sigmoid, cdiv on a runtime value, bitwise ops and shifts on ints, and the
# unary operators.
# RUN: ir %s:math_kernel --sig 'x_ptr=*fp32,i_ptr=*i32,n=i32,BLOCK=16'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def math_kernel(x_ptr, i_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.exp(x) + tl.exp2(x) + tl.log(x) + tl.log2(x) + tl.sqrt(x) + tl.sqrt_rn(x)
    y += tl.rsqrt(x) + tl.sigmoid(x) + tl.abs(x) + tl.sin(x) + tl.cos(x) + tl.erf(x)
    y += tl.floor(x) + tl.ceil(x) + tl.fma(x, x, 1.0) + tl.fdiv(x, x) + x.exp() + -x
    i = tl.load(i_ptr + offs)
    j = tl.abs(i) + tl.umulhi(i, i) + tl.cdiv(n, BLOCK) + (i & 7) + (i | 1) + (i ^ i)
    j += (i << 2) + (i >> 1) + ~i
    tl.store(x_ptr + offs, y)
    tl.store(i_ptr + offs, j)
