# tl.dot: fp16 inputs accumulate into fp32, an accumulator, input_precision
# and allow_tf32 for fp32 inputs, and a batched 3-D product.
# RUN: ir %s:dot_kernel --sig 'a_ptr=*fp16,b_ptr=*fp16,f_ptr=*fp32,out_ptr=*fp32,M=16,N=16,K=16'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def dot_kernel(a_ptr, b_ptr, f_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    acc = tl.zeros((M, N), dtype=tl.float32)
    acc = tl.dot(a, b, acc)
    acc += tl.dot(a, b)
    f = tl.load(f_ptr + rm[:, None] * N + rn[None, :])
    p = tl.dot(f, f, input_precision="ieee")
    q = tl.dot(f, f, allow_tf32=True)
    f3 = tl.reshape(f, (2, 8, 16))
    g = tl.reshape(f, 2, 16, 8)
    r = tl.dot(f3, g)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc + p + q + tl.sum(r))
