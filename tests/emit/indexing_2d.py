# RUN: emit %s:transpose_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,M=i32,N=i32,BM=16,BN=32'
# 2-D tiles: x[:, None] / x[None, :], tl.trans, keep_dims reductions and argmax.
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    x = x - tl.max(x, axis=1, keep_dims=True)
    t = tl.trans(x)
    tl.store(y_ptr + rn[:, None] * M + rm[None, :], t, mask=tl.trans(mask))
