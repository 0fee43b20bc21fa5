# RUN: ast %s
# f-strings are refused in kernels
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    tl.device_assert(n > 0, f"n={n}")
