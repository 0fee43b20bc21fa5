# Pointers selected among several parameters (docs/AD.md, "Pointers
# selected among parameters"): the shadow is the same selection over the
# parameters' gradient buffers, d_a1_ptr + ... where the forward used
# a1_ptr + ...; where a candidate is not differentiated, its lanes take
# the other side's shadow and the adjoint access is masked off there.
#   concat_k: c = [a1 a2] @ [b1; b2], the K loop walking a1/b1's K tiles
#     and then a2/b2's (xformers' tiled matmul), scalar-condition selects.
#   scalar_select: one buffer or the other per program.
#   tile_select: lane by lane between two inputs (a tile condition).
#   tile_select with --wrt x_ptr only: lane by lane between a differentiated
#     input and another buffer (w_ptr not in wrt): the atomic into d_x_ptr is masked.
#   half_diff_swapped: the same with the sides swapped and a masked load.
#   if_select: the pointer chosen in the branches of an `if`.
#   loop_carried: a pointer switched to another buffer after the first
#     iteration of a loop.
#   store_select: stores through a selection between two outputs and a
#     scratch buffer (s_ptr, not differentiated: no gradient read there).
# RUN: grad %s:concat_k --ir --sig 'a1_ptr=*fp32,a2_ptr=*fp32,b1_ptr=*fp32,b2_ptr=*fp32,c_ptr=*fp32,M=i32,N=i32,K1=i32,K2=i32,BM=16,BN=16,BK=16' --wrt a1_ptr,a2_ptr,b1_ptr,b2_ptr --out c_ptr
# RUN: grad %s:scalar_select --ir --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,BLOCK=16' --wrt x_ptr,w_ptr --out y_ptr
# RUN: grad %s:tile_select --ir --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,split=i32,BLOCK=16' --wrt x_ptr,w_ptr --out y_ptr
# RUN: grad %s:tile_select --ir --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,split=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:half_diff_swapped --ir --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:if_select --ir --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,flag=i32,BLOCK=16' --wrt x_ptr,w_ptr --out y_ptr
# RUN: grad %s:loop_carried --ir --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,BLOCK=16' --wrt x_ptr,w_ptr --out y_ptr
# RUN: grad %s:store_select --ir --sig 'x_ptr=*fp32,y1_ptr=*fp32,y2_ptr=*fp32,s_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y1_ptr,y2_ptr
import triton
import triton.language as tl


@triton.jit
def concat_k(a1_ptr, a2_ptr, b1_ptr, b2_ptr, c_ptr, M, N, K1, K2,
             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    nk1 = tl.cdiv(K1, BK)
    nk2 = tl.cdiv(K2, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for t in range(0, nk1 + nk2):
        A = tl.where(t < nk1, a1_ptr, a2_ptr)
        B = tl.where(t < nk1, b1_ptr, b2_ptr)
        K = tl.where(t < nk1, K1, K2)
        kt = tl.where(t < nk1, t, t - nk1)
        rk = kt * BK + tl.arange(0, BK)
        a = tl.load(A + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(B + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def scalar_select(x_ptr, w_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    src = tl.where(pid % 2 == 0, x_ptr, w_ptr) + (pid // 2) * BLOCK
    v = tl.load(src + offs)
    tl.store(y_ptr + pid * BLOCK + offs, v * v + tl.sin(v))


@triton.jit
def tile_select(x_ptr, w_ptr, y_ptr, split, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    p = tl.where(offs < split, x_ptr + offs, w_ptr + offs)
    v = tl.load(p)
    tl.store(y_ptr + offs, tl.exp(v) * 2.0)


@triton.jit
def half_diff_swapped(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    p = tl.where(offs % 3 == 0, w_ptr, x_ptr)
    v = tl.load(p + offs, mask=offs < n, other=1.0)
    tl.store(y_ptr + offs, v * tl.load(x_ptr + offs, mask=offs < n, other=0.0), mask=offs < n)


@triton.jit
def if_select(x_ptr, w_ptr, y_ptr, flag, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if flag > 0:
        p = x_ptr + offs
    else:
        p = w_ptr + offs
    v = tl.load(p)
    tl.store(y_ptr + offs, v * 3.0 + tl.load(x_ptr + offs))


@triton.jit
def loop_carried(x_ptr, w_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    p = x_ptr
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    scale = 1.0
    for i in range(0, 3):
        acc += tl.load(p + offs) * scale
        scale += 1.0
        p = w_ptr
    tl.store(y_ptr + offs, acc * acc)


@triton.jit
def store_select(x_ptr, y1_ptr, y2_ptr, s_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * BLOCK + offs)
    dst = tl.where(pid == 0, y1_ptr, tl.where(pid == 1, y2_ptr, s_ptr))
    tl.store(dst + offs, tl.exp(x))
# ROUNDTRIP
