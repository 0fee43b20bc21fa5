# libdevice through both import spellings, and a function imported from
# triton.language.math by name.
# RUN: ir %s:ld_kernel --sig 'x_ptr=*fp32,BLOCK=32'
# ROUNDTRIP
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra.cuda import libdevice as cuda_ld
from triton.language.math import rsqrt


@triton.jit
def ld_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    a = libdevice.tanh(x)
    b = cuda_ld.pow(x, 2.0)
    c = rsqrt(x)
    tl.store(x_ptr + offs, a + b + c)
