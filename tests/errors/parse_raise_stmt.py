# RUN: ast %s
# raise is refused in kernels
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    raise ValueError("no")
