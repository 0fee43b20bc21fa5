# Every reduction with an axis, with keep_dims and with axis=None; the
# dtypes Triton picks (sum of i8 in i32, max of fp16 in fp32); max with
# return_indices; argmax/argmin.
# RUN: ir %s:red_kernel --sig 'x_ptr=*fp32,h_ptr=*fp16,c_ptr=*i8,out_ptr=*fp32,idx_ptr=*i32,M=4,N=8'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def red_kernel(x_ptr, h_ptr, c_ptr, out_ptr, idx_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    s0 = tl.sum(x, axis=0)
    s1 = tl.sum(x, 1, keep_dims=True)
    sa = tl.sum(x)
    sk = tl.sum(x, keep_dims=True)
    m0 = tl.max(x, axis=0)
    mn = x.min(axis=-1, keep_dims=True)
    mall = tl.min(x)
    v, i = tl.max(x, axis=1, return_indices=True)
    am = tl.argmax(x, axis=0)
    an = tl.argmin(x, 1, keep_dims=True)
    h = tl.load(h_ptr + offs)
    hm = tl.max(h, axis=1)
    c = tl.load(c_ptr + offs)
    cs = tl.sum(c, axis=1)
    tl.store(out_ptr + tl.arange(0, N), s0 + m0 + sa + mall)
    tl.store(out_ptr + tl.arange(0, M), v + hm + cs)
    tl.store(out_ptr + offs, s1 + sk + mn)
    tl.store(idx_ptr + tl.arange(0, N), am)
    tl.store(idx_ptr + tl.arange(0, M), i)
    tl.store(idx_ptr + tl.arange(0, M)[:, None], an)
