# Constexpr conditions select a branch at specialization time: only the taken
# branch is lowered (no IR `if`), elif chains and string switches included.
# RUN: ir %s:act_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,n=i32,ACT="relu",HAS_SCALE=True,SCALE=2.0,BLOCK=128'
# RUN: ir %s:act_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,n=i32,ACT="neg",HAS_SCALE=False,SCALE=2.0,BLOCK=128'
import triton
import triton.language as tl


@triton.jit
def act_kernel(x_ptr, out_ptr, n, ACT: tl.constexpr, HAS_SCALE: tl.constexpr, SCALE: tl.constexpr,
               BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if ACT == "relu":
        y = tl.maximum(x, 0.0)
    elif ACT == "neg":
        y = -x
    else:
        y = x
    if HAS_SCALE and SCALE != 1.0:
        y = y * SCALE
    if not HAS_SCALE:
        pass
    tl.store(out_ptr + offs, y, mask=mask)
