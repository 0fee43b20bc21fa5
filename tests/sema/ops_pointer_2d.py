# Pointer arithmetic on 2-D tiles: scalar pointer + [M,N] offsets, ptr - int,
# int + ptr, and masked 2-D loads and stores.
# RUN: ir %s:ptr2d_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,M=i32,N=i32,stride=i32,BM=8,BN=16'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def ptr2d_kernel(x_ptr, out_ptr, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    ptrs = x_ptr + rm[:, None] * stride + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(ptrs, mask=mask, other=0.0)
    back = ptrs - 1
    y = tl.load(back, mask=mask, other=1)
    out = rn[None, :] + out_ptr
    tl.store(out + rm[:, None] * stride, x + y, mask=mask)
