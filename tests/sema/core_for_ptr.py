# Pointer tiles as loop-carried variables (x_ptrs += BLOCK * stride), an i64
# bound making the induction variable i64, tl.range with scheduling hints.
# RUN: ir %s:colsum_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,n_rows=i64,stride=i32,BLOCK=16,COLS=64'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def colsum_kernel(x_ptr, out_ptr, n_rows, stride, BLOCK: tl.constexpr, COLS: tl.constexpr):
    rows = tl.arange(0, BLOCK)
    cols = tl.arange(0, COLS)
    x_ptrs = x_ptr + rows[:, None] * stride + cols[None, :]
    acc = tl.zeros([COLS], dtype=tl.float32)
    for r in tl.range(0, n_rows, BLOCK, num_stages=2):
        mask = (r + rows)[:, None] < n_rows
        acc += tl.sum(tl.load(x_ptrs, mask=mask, other=0.0), axis=0)
        x_ptrs += BLOCK * stride
    tl.store(out_ptr + cols, acc)
