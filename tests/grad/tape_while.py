# RUN: grad %s:halve_until --ir --while-cap 16 --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=8' --wrt x_ptr --out y_ptr
# ROUNDTRIP
# The IR of a `while` loop's tape (a capacity from --while-cap, the overflow flag in the tape's
# head, the iterations counted by the primal sweep and run backwards), parsed back.
import triton
import triton.language as tl


@triton.jit
def halve_until(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs)
    while tl.sum(v * v, axis=0) > 1.0:
        v = v * 0.5
    tl.store(y_ptr + offs, v)
