# RUN: ast %s
# positional arguments come before keyword arguments
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    x = tl.load(x_ptr, mask=n > 0, 0.0)
