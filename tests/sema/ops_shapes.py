# Shape ops: x[:, None], x[None, :], reshape (tuple and varargs), view,
# ravel, trans, permute, x.T, expand_dims (int and tuple), broadcast_to.
# RUN: ir %s:shape_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,M=4,N=8'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def shape_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M * N)
    x = tl.load(x_ptr + r)
    col = x[:, None]
    row = x[None, :]
    m = tl.reshape(x, (M, N))
    m2 = x.reshape(M, N)
    t = tl.trans(m)
    p = tl.permute(m2, (1, 0))
    pt = m.T
    e = tl.expand_dims(m, 0)
    e2 = tl.expand_dims(x, (0, 2))
    b = tl.broadcast_to(tl.expand_dims(x, 1), (M * N, 4))
    flat = tl.ravel(t + p + pt)
    v = tl.view(m, (N, M))
    tl.store(out_ptr + r, flat + tl.reshape(v, M * N) + tl.sum(e, axis=0).reshape(M * N))
    wide = out_ptr + r[:, None] * 4 + tl.arange(0, 4)[None, :]
    tl.store(wide, col + tl.sum(row, axis=0)[:, None] + b + tl.sum(e2, axis=0))
