# RUN: ast %s
# Malformed f-strings in kernels: located errors (one per statement).
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    a = f"{}"
    b = f"x}"
    c = f"{BLOCK!x}"
    d = f"{BLOCK:{BLOCK}}"
    e = f"{BLOCK BLOCK}"
    g = f"{lambda: 1}"
    h = t"{BLOCK}"
