# RUN: ast %s
# a string must end on its line
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    msg = "abc
    tl.store(x_ptr, 1)
