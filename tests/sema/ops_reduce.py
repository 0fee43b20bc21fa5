# tl.reduce with a combine function: one tile along an axis (negative axis,
# keep_dims), a tuple of tiles (an index carried with the value), and all
# axes (axis=None: the inputs flattened), the combine inlined once on scalars.
# RUN: ir %s:reduce_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,i_ptr=*i32,M=4,N=8'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def add(a, b):
    return a + b


@triton.jit
def arg_smaller(va, ia, vb, ib):
    take_a = (va < vb) | ((va == vb) & (ia < ib))
    return tl.where(take_a, va, vb), tl.where(take_a, ia, ib)


@triton.jit
def reduce_kernel(x_ptr, out_ptr, i_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    s = tl.reduce(x, -1, add, keep_dims=True)
    v, i = tl.reduce((x, tl.broadcast_to(cols, [M, N])), axis=1, combine_fn=arg_smaller)
    t = tl.reduce(x, None, add)
    tl.store(out_ptr + rows, s + v[:, None] + t)
    tl.store(i_ptr + tl.arange(0, M), i)
