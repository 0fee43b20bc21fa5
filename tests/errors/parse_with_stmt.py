# RUN: ast %s
# with is refused in kernels
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    with tl.device_assert(n > 0):
        pass
