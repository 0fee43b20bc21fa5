# RUN: grad %s:log_softmax --ir --trusted --sig 'x_ptr=*fp32,y_ptr=*fp32,n_rows=i32,n_cols=i32,BM=4,BN=32' --wrt x_ptr --out y_ptr
# ROUNDTRIP
# Trusted saved outputs, log-softmax over the rows of a [BM, BN] tile: y is loaded (other=-inf off
# the mask, y's value there) and dx = dy - exp(y) * sum(dy) along axis 1; the max, the exp of the
# shifted row and the log of its sum are not recomputed.
import triton
import triton.language as tl


@triton.jit
def log_softmax(x_ptr, y_ptr, n_rows, n_cols, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=1)[:, None]
    y = z - tl.log(tl.sum(tl.exp(z), axis=1))[:, None]
    tl.store(y_ptr + offs, y, mask=mask)
