# RUN: ir %s:k --sig 'x_ptr=*fp32,BLOCK=32'
# Spellings Triton 3.6 rejects (AttributeError there): names a module does not export, core's
# `math` (Python's module), a tile's block type where a dtype is needed.
import triton
import triton.language as tl
from triton.language import core, standard
from triton.language.extra import libdevice


@triton.jit
def k(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    a = core.exp(x) + standard.exp(x) + tl.math.max(x, 0.0) + libdevice.fmax(x, 0.0)
    b = x * core.math.pi + tl.zeros(x.shape, x.type)
    tl.store(x_ptr + tl.arange(0, BLOCK), a + b)
