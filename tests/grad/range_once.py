# A row normalization swept in chunks (three loops over the row, as kernels written for any row
# length are), differentiated under a signature range that makes each loop one trip
# (`N=i32[1:32]`, BLOCK=32: docs/AD.md, "Loops of one trip"): the backward is one pass over the
# row, x loaded once (the simplifier reuses equal loads), d_x stored once. Checked against float64
# finite differences at N=27 (masked lanes) and N=32 under the range, and at N=45 (two trips)
# without it.
# RUN: grad %s:norm_rows --ir --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,stride=i32,N=i32[1:32],BLOCK=32' --wrt x_ptr,w_ptr --out y_ptr
# RUN: check %s:norm_rows --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,stride=i32,N=i32[1:32],BLOCK=32' --wrt x_ptr,w_ptr --out y_ptr --grid 3 --shape x_ptr=3x27 --shape w_ptr=27 --shape y_ptr=3x27 --arg stride=27 --arg N=27
# RUN: check %s:norm_rows --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,stride=i32,N=i32[1:32],BLOCK=32' --wrt x_ptr,w_ptr --out y_ptr --grid 2 --shape x_ptr=2x32 --shape w_ptr=32 --shape y_ptr=2x32 --arg stride=32 --arg N=32
# RUN: check %s:norm_rows --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,stride=i32,N=i32,BLOCK=32' --wrt x_ptr,w_ptr --out y_ptr --grid 2 --shape x_ptr=2x45 --shape w_ptr=45 --shape y_ptr=2x45 --arg stride=45 --arg N=45
import triton
import triton.language as tl


@triton.jit
def norm_rows(x_ptr, w_ptr, y_ptr, stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * stride
    y_ptr += row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < N, other=0.0)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
        d = tl.where(cols < N, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + 1e-5)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < N
        x = tl.load(x_ptr + cols, mask=m, other=0.0)
        w = tl.load(w_ptr + cols, mask=m, other=0.0)
        tl.store(y_ptr + cols, (x - mean) * rstd * w, mask=m)
# ROUNDTRIP
