# RUN: ast %s
# imaginary literals are refused
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    x = n * 2j
