# RUN: ast %s
# try is refused; its except/finally clauses are skipped, later errors still reported
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    try:
        x = 1
    except Exception:
        x = 2
    finally:
        x = 3
    y = lambda: 1
