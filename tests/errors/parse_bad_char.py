# RUN: ast %s
# a character that is not Python is a lexical error
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    x = n $ 2
