# RUN: grad %s:loaded_bound --sig 'x_ptr=*fp32,n_ptr=*i32,y_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:runtime_step --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,step=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# Refused: loops whose carried value is not a linear accumulator (so the backward records it on a tape)
# but whose tape kad cannot size: a trip count read from memory, a runtime step.
# (A carried int that does not advance by a loop-invariant step is recorded on the tape: tests/grad/tape_int.py.)
import triton
import triton.language as tl


@triton.jit
def loaded_bound(x_ptr, n_ptr, y_ptr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    for k in range(0, tl.load(n_ptr + row)):
        m = tl.maximum(m, tl.load(x_ptr + k * BLOCK + cols))
    tl.store(y_ptr + row * BLOCK + cols, m)


@triton.jit
def runtime_step(x_ptr, y_ptr, n, step, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    for k in range(0, n, step):
        m = tl.maximum(m, tl.load(x_ptr + k * BLOCK + cols))
    tl.store(y_ptr + cols, m)
