# RUN: ast %s
# a compound statement header ends in a colon
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    if n > 0
        tl.store(x_ptr, 1)
