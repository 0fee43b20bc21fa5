# RUN: ast %s
# a parameter without default cannot follow one with a default
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.jit
def helper(x, y=1, z):
    return x
