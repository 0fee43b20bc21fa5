# RUN: ast %s
# a closing bracket must match the opening one (no echo for the outer bracket)
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK]
