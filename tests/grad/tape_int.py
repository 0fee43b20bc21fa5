# RUN: check %s:doubling_offset --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr --grid 2 --shape x_ptr=100 --shape y_ptr=32 --arg n=50
# A loop-carried int that does not advance by a loop-invariant step (j doubles) in a loop whose
# reverse sweep reads a tape (the running max m): j is recorded on the tape too, as a float64
# (exact for every int of at most 32 bits), and read back by the reverse loop.
import triton
import triton.language as tl


@triton.jit
def doubling_offset(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    j = 1
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    for k in range(0, n, BLOCK):
        m = tl.maximum(m, tl.load(x_ptr + (j % n) + tl.arange(0, BLOCK)))
        j = j * 2
    tl.store(y_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), m)
