# A row-wise mean written the batch-invariant way: one program per row, a
# fixed-order loop over the row whose chunking depends only on the row
# length and a constexpr.  Clean.
# RUN: audit %s:row_mean --sig 'x_ptr=*fp32,y_ptr=*fp32,n_rows=i32,n_cols=i32,stride=i32,BLOCK=128'
import triton
import triton.language as tl


@triton.jit
def row_mean(x_ptr, y_ptr, n_rows, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if row < n_rows:
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for off in range(0, n_cols, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        tl.store(y_ptr + row, tl.sum(acc, axis=0) / n_cols)
