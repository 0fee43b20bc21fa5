# A batched (3-D) dot: the adjoint dots transpose the last two axes of
# their operands and keep the leading batch axis (da = d @ b^T, db = a^T @ d
# per batch).
# RUN: grad %s:dot_batched --ir --sig 'a_ptr=*fp32,b_ptr=*fp32,c_ptr=*fp32,B=2,M=16,N=16,K=16' --wrt a_ptr,b_ptr --out c_ptr
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def dot_batched(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    ib = tl.arange(0, B)[:, None, None]
    a = tl.load(a_ptr + ib * M * K + tl.arange(0, M)[None, :, None] * K + tl.arange(0, K)[None, None, :])
    b = tl.load(b_ptr + ib * K * N + tl.arange(0, K)[None, :, None] * N + tl.arange(0, N)[None, None, :])
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + ib * M * N + tl.arange(0, M)[None, :, None] * N + tl.arange(0, N)[None, None, :], c)
