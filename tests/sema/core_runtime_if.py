# An `if` on a runtime scalar becomes an IR `if`: variables assigned in a
# branch that exist afterwards are yielded; a constant meeting a value is
# materialized in the value's type; names defined in one branch only vanish.
# RUN: ir %s:clip_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,lo=fp32,n=i32,BLOCK=64'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def clip_kernel(x_ptr, out_ptr, lo, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    scale = 1.0
    if lo > 0:
        x = tl.maximum(x, lo)
        scale = lo
        only_then = x * 2.0
    else:
        shift = x + 1.0
        x = shift
    count = 0
    if pid == 0:
        count = pid + 1
    tl.store(out_ptr + offs, x * scale + count, mask=offs < n)
