# RUN: grad %s:lse_rows --ir --saved --sig 'x_ptr=*bf16,y_ptr=*fp32,n_cols=i32,stride=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# ROUNDTRIP
# The backward of the saving forward (docs/AD.md, "Saved loop results"): the online log-sum-exp
# loop, which the backward splits into a max loop and a sum loop (src/ad/ad_gauge.c), is not run:
# its max and sum (the original loop's results, by value) are loaded from this program's slot
# of kad_saved (the last runtime parameter), and only the adjoint's pass over the row remains.
import triton
import triton.language as tl


@triton.jit
def lse_rows(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = float("-inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(y_ptr + row, m + tl.log(s))
