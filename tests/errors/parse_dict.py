# RUN: ast %s
# dict/set displays are refused in kernels
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    d = {"a": 1}
