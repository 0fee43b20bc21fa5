# RUN: ast %s
# a block must follow a compound statement header
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    for i in range(n):
    tl.store(x_ptr, 1)
