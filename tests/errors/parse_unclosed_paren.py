# RUN: ast %s
# an unclosed bracket is reported at the bracket
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK)
    tl.store(x_ptr, x)
