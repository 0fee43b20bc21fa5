# RUN: ast %s
# one error per statement, parsing continues with the next statement
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    a = lambda: 0
    b = 1 +
    c = {1, 2}
    tl.store(x_ptr, a)
