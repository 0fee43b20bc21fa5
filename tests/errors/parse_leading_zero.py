# RUN: ast %s
# 0755 is not Python 3
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    x = n + 0755
