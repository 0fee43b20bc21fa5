# A stencil's input gradient as a gather (docs/AD.md, "Gather"): every site
# reading x is a function of the programs' positions pid * BLOCK +
# tl.arange(0, BLOCK), shifted by a constant, so a kernel of its own sums, for
# each element of d_x, the gradients of the sites that read it, in a fixed
# order, and stores it once (no atomics, no partials).
#   box3x3: a 3x3 box filter on 2-D tiles (zero padding); the gather's store
#     is distinct elements when the row stride separates rows (a flag).
#   taps1d: a 1-D three-tap stencil with a nonlinear tap (x[i-1] * sin(x[i+1])):
#     each site's value recomputes the forward at the shifted position.
#   rowmix: the same taps, one scaled by the block's sum: not position-
#     pointwise, so site rows stay (the header says so).
# RUN: grad %s:box3x3 --sig 'src=*fp32,dst=*fp32,H=i32,W=i32,stride_src=i32,stride_dst=i32,BH=16,BW=32' --wrt src --out dst
# RUN: grad %s:taps1d --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=64' --wrt x_ptr --out y_ptr
# RUN: grad %s:taps1d --sig 'x_ptr=*bf16,y_ptr=*bf16,n=i32,BLOCK=64' --wrt x_ptr --out y_ptr
# RUN: grad %s:rowmix --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=64' --wrt x_ptr --out y_ptr
# RUN: check %s:box3x3 --sig 'src=*fp32,dst=*fp32,H=i32,W=i32,stride_src=i32,stride_dst=i32,BH=16,BW=32' --wrt src --out dst --grid 2,2 --shape src=40x70 --shape dst=40x70 --arg H=37 --arg W=61 --arg stride_src=70 --arg stride_dst=70
# RUN: check %s:taps1d --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=64' --wrt x_ptr --out y_ptr --grid 3 --shape x_ptr=200 --shape y_ptr=200 --arg n=170
import triton
import triton.language as tl


@triton.jit
def box3x3(src, dst, H, W, stride_src, stride_dst, BH: tl.constexpr, BW: tl.constexpr):
    rows = tl.program_id(0) * BH + tl.arange(0, BH)
    cols = tl.program_id(1) * BW + tl.arange(0, BW)
    acc = tl.zeros((BH, BW), dtype=tl.float32)
    for dr in tl.static_range(-1, 2):
        for dc in tl.static_range(-1, 2):
            r = rows[:, None] + dr
            c = cols[None, :] + dc
            m = (r >= 0) & (r < H) & (c >= 0) & (c < W)
            acc += tl.load(src + r * stride_src + c, mask=m, other=0.0).to(tl.float32)
    keep = (rows[:, None] < H) & (cols[None, :] < W)
    tl.store(dst + rows[:, None] * stride_dst + cols[None, :], (acc / 9.0).to(dst.dtype.element_ty), mask=keep)


@triton.jit
def taps1d(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    left = tl.load(x_ptr + i - 1, mask=(i >= 1) & (i - 1 < n), other=0.0).to(tl.float32)
    mid = tl.load(x_ptr + i, mask=i < n, other=0.0).to(tl.float32)
    right = tl.load(x_ptr + i + 1, mask=i + 1 < n, other=0.0).to(tl.float32)
    y = left * tl.sin(right) + 0.5 * mid
    tl.store(y_ptr + i, y.to(y_ptr.dtype.element_ty), mask=i < n)


@triton.jit
def rowmix(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    left = tl.load(x_ptr + i - 1, mask=(i >= 1) & (i - 1 < n), other=0.0)
    mid = tl.load(x_ptr + i, mask=i < n, other=0.0)
    right = tl.load(x_ptr + i + 1, mask=i + 1 < n, other=0.0)
    tl.store(y_ptr + i, left * right + mid * tl.sum(mid, axis=0), mask=i < n)
# ROUNDTRIP
