# Gradients through tl.split / tl.join / tl.interleave (their adjoints are each other), tl.flip
# (adjoint: flip), tl.gather (adjoint: a scatter-add written as a one-hot compare and a sum, no
# atomics) and tl.sort / tl.topk (adjoint: the output gradient gathered by each input's stable
# rank), against float64 finite differences; then the backward IR of the gather and sort kernel.
# RUN: check %s:pack --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 3 --shape x_ptr=40 --shape y_ptr=40 --arg n=20
# RUN: check %s:pick_sort --sig 'x_ptr=*fp32,i_ptr=*i32,y_ptr=*fp32,t_ptr=*fp32,N=8,K=16' --wrt x_ptr --out y_ptr,t_ptr --grid 3 --shape x_ptr=3x8 --shape i_ptr=3x16 --shape y_ptr=3x16 --shape t_ptr=3x2 --range i_ptr=0:7
# RUN: grad %s:pick_sort --ir --sig 'x_ptr=*fp32,i_ptr=*i32,y_ptr=*fp32,t_ptr=*fp32,N=8,K=16' --wrt x_ptr --out y_ptr,t_ptr
import triton
import triton.language as tl


@triton.jit
def pack(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # pairs (a, b) -> (b * exp(a), flip of a); stored interleaved again
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = 2 * o[:, None] + tl.arange(0, 2)[None, :]
    a, b = tl.split(tl.load(x_ptr + offs, mask=offs < 2 * n, other=0.0))
    y = tl.interleave(b * tl.exp(a), tl.flip(a, 0))
    yo = 2 * tl.program_id(0) * BLOCK + tl.arange(0, 2 * BLOCK)
    tl.store(y_ptr + yo, y, mask=yo < 2 * n)


@triton.jit
def pick_sort(x_ptr, i_ptr, y_ptr, t_ptr, N: tl.constexpr, K: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * N + tl.arange(0, N))
    i = tl.load(i_ptr + row * K + tl.arange(0, K))
    g = tl.gather(x, i, 0)
    tl.store(y_ptr + row * K + tl.arange(0, K), g * tl.sort(g))
    tl.store(t_ptr + row * 2 + tl.arange(0, 2), tl.topk(tl.sin(x), 3))
# ROUNDTRIP
