# RUN: ast %s
# lambda is refused in kernels
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    f = lambda v: v + 1
