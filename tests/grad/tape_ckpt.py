# RUN: grad %s:decay --ir --tape-budget 4096 --sig 'x_ptr=*fp32,y_ptr=*fp32,T=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: grad %s:decay_causal --ir --tape-budget 4096 --sig 'x_ptr=*fp32,y_ptr=*fp32,T=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: check %s:decay_causal --tape-budget 4096 --sig 'x_ptr=*fp32,y_ptr=*fp32,T=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 3 --shape x_ptr=7x8 --shape y_ptr=3x8 --arg T=7
# ROUNDTRIP
# The IR of checkpointed `for` tapes (a tape budget), parsed back.  decay: revolve (the adjoint
# sweep interprets the plan in the tape's head: advance, store, restore, reverse, each a loop
# of 0 or 1 trips but the advance); decay_causal, whose trip count depends on the program id:
# two-level (the primal sweep records every k-th iteration, k = ceil(sqrt(trips)); the adjoint
# sweep recomputes each segment from its checkpoint, then reverses it).
import triton
import triton.language as tl


@triton.jit
def decay(x_ptr, y_ptr, T, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    h = tl.zeros((BLOCK,), tl.float32)
    for t in range(0, T):
        h = tl.sin(h) + tl.load(x_ptr + t * BLOCK + offs)
    tl.store(y_ptr + offs, h)


@triton.jit
def decay_causal(x_ptr, y_ptr, T, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    h = tl.zeros((BLOCK,), tl.float32)
    for t in range(0, tl.minimum(T, 2 * pid + 3)):
        h = tl.sin(h) + tl.load(x_ptr + t * BLOCK + offs)
    tl.store(y_ptr + pid * BLOCK + offs, h)
