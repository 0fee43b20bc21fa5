# RUN: grad %s:decay_causal --ir --tape-budget 4096 --sig 'x_ptr=*fp32,y_ptr=*fp32,T=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# ROUNDTRIP
# The IR of a checkpointed `for` tape (a tape budget) whose trip count depends on the program
# id, parsed back: no single revolve plan serves every program, so two-level (the primal sweep
# records every k-th iteration, k = ceil(sqrt(trips)); the adjoint sweep recomputes each
# segment from its checkpoint, then reverses it).  tape_report.py checks and reports it.
import triton
import triton.language as tl


@triton.jit
def decay_causal(x_ptr, y_ptr, T, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    h = tl.zeros((BLOCK,), tl.float32)
    for t in range(0, tl.minimum(T, 2 * pid + 3)):
        h = tl.sin(h) + tl.load(x_ptr + t * BLOCK + offs)
    tl.store(y_ptr + pid * BLOCK + offs, h)
