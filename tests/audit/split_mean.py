# A split-reduction mean: each program sums one chunk of the row and adds its
# partial sum into the row's output with tl.atomic_add; the programs of axis 1
# share one address, so the order of the adds varies between runs.
# RUN: audit %s:split_mean --sig 'x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,stride=i32,BLOCK=128'
import triton
import triton.language as tl


@triton.jit
def split_mean(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    cols = chunk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.atomic_add(y_ptr + row, tl.sum(x, axis=0) / n_cols)
