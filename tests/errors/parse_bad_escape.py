# RUN: ast %s
# \x needs two hex digits
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    x = "\x4"
