# Module constants in the three spellings, constant expressions over other
# globals, and a global read through an import alias of triton.language.
# RUN: ir %s:consts_kernel --sig 'x_ptr=*fp32,BLOCK=64'
# ROUNDTRIP
import triton
import triton.language as tl
from triton.language import constexpr

PLAIN = 3
WRAPPED = tl.constexpr(0.5)
ANNOTATED: tl.constexpr = 2
DERIVED = PLAIN * ANNOTATED + 1
NAME = "gelu"
DTYPE = tl.float16


@triton.jit
def consts_kernel(x_ptr, BLOCK: constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if NAME == "gelu":
        x = x * WRAPPED
    y = x * DERIVED
    tl.store(x_ptr + offs, y.to(DTYPE).to(tl.float32))
