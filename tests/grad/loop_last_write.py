# Stores inside loops that write one element in several iterations: the last write wins.  The
# backward runs the loop backwards (a tape; without slots when nothing carried needs recording)
# and each store reads its gradient and clears it (docs/AD.md; the package tests:
# tests/python/test_loop_stores.py); the first two kernels are tests/kernels/loop_store.py's.
# RUN: grad tests/kernels/loop_store.py:last_value --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,T=i32,D=8' --wrt x_ptr --out y_ptr
# RUN: grad tests/kernels/loop_store.py:state_while --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,T=i32,D=8' --wrt x_ptr --out y_ptr
# RUN: grad %s:subblocks_down --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,NB=i32,NSUB=2,SUB=8' --wrt x_ptr --out y_ptr
import triton
import triton.language as tl


@triton.jit
def subblocks_down(x_ptr, y_ptr, NB, NSUB: tl.constexpr, SUB: tl.constexpr):
    # a taped state, an int offset tile counted down by an inner loop over a negative range
    row = tl.program_id(0)
    off = row * NB * NSUB * SUB + NB * NSUB * SUB + tl.arange(0, SUB)
    h = tl.zeros([SUB], dtype=tl.float32)
    for i in range(NB - 1, -1, -1):
        acc = tl.zeros([SUB], dtype=tl.float32)
        for j in range(NSUB - 1, -1, -1):
            off -= SUB
            x = tl.load(x_ptr + off)
            tl.store(y_ptr + off, x * h + x)
            acc += x
        h = tl.sigmoid(h * 0.5 + acc) - 0.5
# ROUNDTRIP
