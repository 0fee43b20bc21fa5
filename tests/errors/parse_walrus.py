# RUN: ast %s
# assignment expressions are refused
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    if (m := n + 1) > 2:
        pass
