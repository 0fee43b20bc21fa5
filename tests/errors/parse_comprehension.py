# RUN: ast %s
# comprehensions are refused in kernels
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    xs = [i * 2 for i in range(4)]
