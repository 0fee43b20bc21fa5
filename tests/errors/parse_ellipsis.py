# RUN: ast %s
# Ellipsis is refused
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    x = tl.load(x_ptr)[...]
