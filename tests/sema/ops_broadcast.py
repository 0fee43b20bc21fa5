# numpy broadcasting: [M,1] + [1,N], [N] with [M,N] (expand_dims then
# broadcast), rank-0 values with tiles, and tl.broadcast.
# RUN: ir %s:bcast_kernel --sig 'x_ptr=*fp32,s=fp32,M=8,N=16'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def bcast_kernel(x_ptr, s, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    col = rm[:, None]
    row = rn[None, :]
    grid = col + row
    xn = tl.load(x_ptr + rn)
    g = grid + xn
    t = g * s
    a, b = tl.broadcast(col, row)
    tl.store(x_ptr + grid, t + a + b)
