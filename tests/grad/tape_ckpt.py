# RUN: grad %s:decay --ir --tape-budget 4096 --sig 'x_ptr=*fp32,y_ptr=*fp32,T=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# ROUNDTRIP
# The IR of a checkpointed `for` tape (a tape budget) by revolve, parsed back: the adjoint sweep
# interprets the plan in the tape's head (advance, store, restore, reverse: each a loop of 0 or
# 1 trips but the advance).  tape_ckpt_causal.py: the two-level form.
import triton
import triton.language as tl


@triton.jit
def decay(x_ptr, y_ptr, T, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    h = tl.zeros((BLOCK,), tl.float32)
    for t in range(0, T):
        h = tl.sin(h) + tl.load(x_ptr + t * BLOCK + offs)
    tl.store(y_ptr + offs, h)

