# libdevice through both import paths and tl.math: ops the IR has, log10
# its own op, isnan/isinf returning int32 like libdevice, pow with an int
# exponent as powi (libdevice's __nv_powif), div_rn as div_round {round = rn}.
# RUN: ir %s:libdevice_kernel --sig 'x_ptr=*fp32,d_ptr=*fp64,i_ptr=*i32,BLOCK=16'
# ROUNDTRIP
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra.cuda import libdevice as ld2


@triton.jit
def libdevice_kernel(x_ptr, d_ptr, i_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    d = tl.load(d_ptr + offs)
    a = libdevice.tanh(x) + libdevice.expm1(x) + libdevice.log1p(x) + libdevice.log10(x)
    b = ld2.pow(x, 2) + ld2.atan2(x, x) + tl.maximum(x, 1.0) + ld2.rint(x) + ld2.trunc(x)
    c = libdevice.fma(x, x, x) + libdevice.fast_expf(x) + libdevice.div_rn(x, x)
    e = tl.math.exp(x) + tl.math.rsqrt(x) + tl.maximum(x, 0.0)
    dd = libdevice.sinh(d) + libdevice.asin(d)
    tl.store(x_ptr + offs, a + b + c + e)
    tl.store(d_ptr + offs, dd)
    tl.store(i_ptr + offs, libdevice.isnan(x) + libdevice.isinf(d) + libdevice.finitef(x))
