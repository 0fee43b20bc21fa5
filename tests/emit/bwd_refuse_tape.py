# RUN: grad %s:online_softmax_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,BLOCK=64' --wrt x_ptr --out y_ptr
# Refused: the online softmax's running max rescales its running sum (not a linear accumulator),
# so the backward would need a tape of per-iteration values.  (The output is one block.)
import triton
import triton.language as tl


@triton.jit
def online_softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    s = 0.0
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(y_ptr + row * n_cols + cols, tl.exp(x - m) / s, mask=cols < n_cols)
