# RUN: ast %s
# a keyword argument may be given once
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    x = tl.load(x_ptr, mask=n > 0, mask=n > 1)
