# RUN: grad %s:log_softmax_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,n_rows=i32,n_cols=i32,BLOCK=64' --wrt x_ptr --out y_ptr
# Early return: programs past the last row do nothing, in the backward too (an `if`).
import triton
import triton.language as tl


@triton.jit
def log_softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if row >= n_rows:
        return
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    lse = tl.log(tl.sum(tl.exp(z), axis=0))
    tl.store(y_ptr + row * n_cols + cols, z - lse, mask=mask)
