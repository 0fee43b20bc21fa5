# RUN: ast %s
# integer literals in kernels must fit in 64 bits
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    x = n & 0xFFFFFFFFFFFFFFFF1
