# RUN: ast %s
# an indent without a block opener
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    x = 1
        y = 2
