# RUN: ast %s
# argument unpacking is refused in kernels
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    args = (1, 2)
    x = tl.load(*args)
