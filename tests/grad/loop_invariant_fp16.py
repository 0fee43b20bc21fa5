# An fp16 value loaded before a loop and used in it (a dot operand): its
# adjoint accumulates across the reverse loop in fp32 (the loop's adjoint
# parameter had the value's fp16 type: an invalid backward).
# RUN: grad %s:k --sig 'q_ptr=*fp16,k_ptr=*fp16,o_ptr=*fp32,N=i32,B=16' --wrt q_ptr,k_ptr --out o_ptr
import triton
import triton.language as tl


@triton.jit
def k(q_ptr, k_ptr, o_ptr, N, B: tl.constexpr):
    r = tl.arange(0, B)
    q = tl.load(q_ptr + r[:, None] * B + r[None, :])
    acc = tl.zeros((B, B), dtype=tl.float32)
    for s in range(0, N, B):
        kk = tl.load(k_ptr + (s + r[:, None]) * B + r[None, :])
        acc += tl.dot(q, kk)
    tl.store(o_ptr + r[:, None] * B + r[None, :], acc)
