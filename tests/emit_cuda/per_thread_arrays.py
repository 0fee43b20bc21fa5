# Tiles [BM, BN] of a small BN as per-thread arrays: thread i holds row i (`float x[4]`), a tile
# [BN] or [1, BN] is a row that every thread holds alike (w), a sum along axis 1 is a loop in each
# thread in a fixed order; then the backward with respect to x (w's gradient needs grid folding,
# which the CUDA C launcher refuses).
# RUN: emit %s:scale_rows2d --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n_rows=i32,BM=32,BN=4' --emit cuda
# RUN: grad %s:scale_rows2d --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n_rows=i32,BM=32,BN=4' --wrt x_ptr --out y_ptr --emit cuda
import triton
import triton.language as tl


@triton.jit
def scale_rows2d(x_ptr, w_ptr, y_ptr, n_rows, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = rows[:, None] < n_rows
    x = tl.load(x_ptr + rows[:, None] * BN + cols[None, :], mask=mask, other=0.0)
    w = tl.load(w_ptr + cols)
    y = x * w[None, :]
    s = tl.sum(y * y, axis=1) + 1.0
    tl.store(y_ptr + rows[:, None] * BN + cols[None, :], y / s[:, None], mask=mask)
