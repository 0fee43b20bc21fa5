# RUN: ast %s
# parameter names must be unique
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.jit
def helper(x, x):
    return x
