# RUN: ast %s
# *args parameters are refused in @triton.jit functions
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.jit
def helper(x, *rest):
    return x
