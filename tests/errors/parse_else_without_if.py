# RUN: ast %s
# a stray else is reported once
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    x = 1
    else:
        x = 2
