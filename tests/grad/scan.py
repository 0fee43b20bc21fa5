# Gradients of scans against float64 finite differences: the first-order linear recurrence
# written with fma and both of its results stored (the running product A gets the cumprod
# adjoint), along axis 1 of a 2-D tile; tl.cumprod reversed along axis 0; a running minimum with
# the operands swapped, reversed; a sum combine `y + x`, reversed; a decay sigmoid(w) shared by
# every program (its gradient summed over the folded grid, the scans inside the fold's loop).  The last RUN prints the
# backward IR of the recurrence: reverse linear-recurrence scans, shifts made by scans.
# RUN: check %s:lin_rec_fma --sig 'a_ptr=*fp32,b_ptr=*fp32,A_ptr=*fp32,h_ptr=*fp32,R=i32,T=i32,BR=4,BT=16' --wrt a_ptr,b_ptr --out A_ptr,h_ptr --grid 2 --shape a_ptr=7x13 --shape b_ptr=7x13 --shape A_ptr=7x13 --shape h_ptr=7x13 --arg R=7 --arg T=13 --range a_ptr=0.4:1.2
# RUN: check %s:cumprod_rev --sig 'x_ptr=*fp32,y_ptr=*fp32,T=i32,N=i32,BT=8,BN=4' --wrt x_ptr --out y_ptr --grid 3 --shape x_ptr=6x10 --shape y_ptr=6x10 --arg T=6 --arg N=10
# RUN: check %s:running_min_rev --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=32' --wrt x_ptr --out y_ptr --grid 1 --shape x_ptr=27 --shape y_ptr=27 --arg n=27
# RUN: check %s:sum_rev --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=32' --wrt x_ptr --out y_ptr --grid 1 --shape x_ptr=27 --shape y_ptr=27 --arg n=27
# RUN: check %s:decay_scan --sig 'w_ptr=*fp32,x_ptr=*fp32,h_ptr=*fp32,T=i32,D=8,BT=16' --wrt w_ptr,x_ptr --out h_ptr --grid 3 --shape w_ptr=8 --shape x_ptr=3x13x8 --shape h_ptr=3x13x8 --arg T=13
# RUN: grad %s:lin_rec_fma --sig 'a_ptr=*fp32,b_ptr=*fp32,A_ptr=*fp32,h_ptr=*fp32,R=i32,T=i32,BR=4,BT=16' --wrt a_ptr,b_ptr --out A_ptr,h_ptr --ir
import triton
import triton.language as tl


@triton.jit
def affine(a1, b1, a2, b2):
    return a1 * a2, tl.fma(a2, b1, b2)


@triton.jit
def smaller(x, y):
    return tl.minimum(y, x)


@triton.jit
def plus(x, y):
    return y + x


@triton.jit
def lin_rec_fma(a_ptr, b_ptr, A_ptr, h_ptr, R, T, BR: tl.constexpr, BT: tl.constexpr):
    rows = tl.program_id(0) * BR + tl.arange(0, BR)
    t = tl.arange(0, BT)
    m = (rows[:, None] < R) & (t[None, :] < T)
    offs = rows[:, None] * T + t[None, :]
    a = tl.load(a_ptr + offs, mask=m, other=1.0)
    b = tl.load(b_ptr + offs, mask=m, other=0.0)
    A, h = tl.associative_scan((a, b), 1, affine)
    tl.store(A_ptr + offs, A, mask=m)
    tl.store(h_ptr + offs, h, mask=m)


@triton.jit
def cumprod_rev(x_ptr, y_ptr, T, N, BT: tl.constexpr, BN: tl.constexpr):
    t = tl.arange(0, BT)
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    m = (t[:, None] < T) & (cols[None, :] < N)
    offs = t[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    tl.store(y_ptr + offs, tl.cumprod(x, 0, reverse=True), mask=m)


@triton.jit
def running_min_rev(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < n, other=float("inf"))
    tl.store(y_ptr + i, tl.associative_scan(x, 0, smaller, reverse=True), mask=i < n)


@triton.jit
def sum_rev(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < n, other=0.0)
    tl.store(y_ptr + i, tl.associative_scan(x, 0, plus, reverse=True), mask=i < n)


@triton.jit
def decay_scan(w_ptr, x_ptr, h_ptr, T, D: tl.constexpr, BT: tl.constexpr):
    b = tl.program_id(0)
    t = tl.arange(0, BT)
    d = tl.arange(0, D)
    m = t[:, None] < T
    offs = b * T * D + t[:, None] * D + d[None, :]
    w = tl.load(w_ptr + d)
    a = tl.sigmoid(w)[None, :] + tl.zeros([BT, D], dtype=tl.float32)
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    _, h = tl.associative_scan((a, x), 0, affine)
    tl.store(h_ptr + offs, h, mask=m)
# ROUNDTRIP
