# Inputs read at several sites that neighbouring programs share (stencil
# taps), each site alone reading distinct elements over the launch.  Site rows
# (each site storing into its own row of partials, a sum kernel adding the
# rows in order, docs/AD.md) were their form; every site here is a function of
# the programs' positions, so the gather (docs/AD.md, "Gather") replaces them:
#   taps3: a 1-D three-tap stencil: gathered (a flag: one program along the
#     axes without positions).
#   taps3_weighted: the same with a weight every program reads (w: folded
#     along axis 0, x: gathered next to the fold).
#   cross2d: a 2-D five-point stencil over a strided image: gathered when the
#     row stride separates rows (a launcher flag), else atomics.
# tests/grad/gather.py keeps site rows where the gather does not apply.
# RUN: grad %s:taps3 --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=64' --wrt x_ptr --out y_ptr
# RUN: grad %s:taps3 --sig 'x_ptr=*bf16,y_ptr=*bf16,n=i32,BLOCK=64' --wrt x_ptr --out y_ptr
# RUN: grad %s:taps3_weighted --ir --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=64' --wrt x_ptr,w_ptr --out y_ptr
# RUN: grad %s:cross2d --sig 'x_ptr=*fp32,y_ptr=*fp32,H=i32,W=i32,stride=i32,BH=8,BW=16' --wrt x_ptr --out y_ptr
import triton
import triton.language as tl


@triton.jit
def taps3(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    left = tl.load(x_ptr + offs - 1, mask=(offs >= 1) & (offs < n + 1), other=0.0)
    mid = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    right = tl.load(x_ptr + offs + 1, mask=offs + 1 < n, other=0.0)
    tl.store(y_ptr + offs, 0.25 * left + 0.5 * mid + 0.25 * right * right, mask=offs < n)


@triton.jit
def taps3_weighted(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    taps = tl.arange(0, 4)
    w = tl.load(w_ptr + taps, mask=taps < 3, other=0.0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in tl.static_range(3):
        x = tl.load(x_ptr + offs + k - 1, mask=(offs + k >= 1) & (offs + k - 1 < n), other=0.0)
        acc += tl.sum(tl.where(taps == k, w, 0.0), axis=0) * x
    tl.store(y_ptr + offs, tl.sin(acc), mask=offs < n)


@triton.jit
def cross2d(x_ptr, y_ptr, H, W, stride, BH: tl.constexpr, BW: tl.constexpr):
    r = tl.program_id(0) * BH + tl.arange(0, BH)[:, None]
    c = tl.program_id(1) * BW + tl.arange(0, BW)[None, :]
    acc = tl.zeros((BH, BW), dtype=tl.float32)
    for d in tl.static_range(5):
        dr = (d == 1) * -1 + (d == 2) * 1
        dc = (d == 3) * -1 + (d == 4) * 1
        rr = r + dr
        cc = c + dc
        m = (rr >= 0) & (rr < H) & (cc >= 0) & (cc < W)
        v = tl.load(x_ptr + rr * stride + cc, mask=m, other=0.0)
        acc += v * v if d == 0 else v
    tl.store(y_ptr + r * W + c, acc, mask=(r < H) & (c < W))
# ROUNDTRIP
