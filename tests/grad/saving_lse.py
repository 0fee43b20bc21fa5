# RUN: grad %s:lse_rows --ir --save-forward --sig 'x_ptr=*bf16,y_ptr=*fp32,n_cols=i32,stride=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# ROUNDTRIP
# The saving forward (docs/AD.md, "Saved loop results"): the kernel plus the kad_saved
# parameter and, after the online log-sum-exp loop, a store of its results (the sum and the max,
# in the loop's order) into this program's slot, program = pid0 + G0 * (pid1 + G1 * pid2).
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
