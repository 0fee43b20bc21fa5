# RUN: ir %s:k --sig 'a_ptr=*fp64,b_ptr=*fp64,c_ptr=*fp64'
# Triton asserts that an accumulator's dtype equals out_dtype (default tl.float32).
import triton
import triton.language as tl


@triton.jit
def k(a_ptr, b_ptr, c_ptr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
    acc = tl.zeros([16, 16], dtype=tl.float64)
    acc = tl.dot(a, b, acc)
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], acc)
