# RUN: ast %s
# a dedent must return to an enclosing indentation level
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    if n > 0:
        x = 1
      y = 2
