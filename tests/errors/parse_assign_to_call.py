# RUN: ast %s
# a call is not an assignment target
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    tl.load(x_ptr) = 1
