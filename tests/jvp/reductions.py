# RUN: jvp %s:row_softmax_norm --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,s_ptr=*fp32,n=i32,BLOCK=32' --wrt x_ptr,w_ptr --out y_ptr,s_ptr --ir
# RUN: jvp %s:dot_act --sig 'a_ptr=*fp32,b_ptr=*fp32,c_ptr=*fp32,K=i32,BM=16,BN=16,BK=16' --wrt a_ptr,b_ptr --out c_ptr --ir
# Reductions and dot in forward mode: max (lanes equal to the result share the tangent evenly,
# reverse mode's rule), sum, min; a K loop whose accumulator's tangent is carried next to it.
import triton
import triton.language as tl


@triton.jit
def row_softmax_norm(x_ptr, w_ptr, y_ptr, s_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=m, other=-float("inf"))
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    e = tl.exp(x - tl.max(x, axis=0))
    p = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * n + cols, p * w, mask=m)
    tl.store(s_ptr + row, tl.min(tl.where(m, x, float("inf")), axis=0))


@triton.jit
def dot_act(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.sigmoid(acc))
