# Conversions: x.to(), tl.cast, bitcast, to bool (ne 0), dtype attributes
# (x.dtype, ptr.dtype.element_ty, primitive_bitwidth, is_floating()).
# RUN: ir %s:cast_kernel --sig 'x_ptr=*fp32,h_ptr=*fp16,i_ptr=*i32,BLOCK=16'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def cast_kernel(x_ptr, h_ptr, i_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    h = x.to(tl.float16)
    i = tl.cast(x, tl.int32)
    bits = x.to(tl.int32, bitcast=True)
    nz = x.to(tl.int1)
    back = h.to(x.dtype)
    out = back.to(h_ptr.dtype.element_ty)
    if h.dtype.primitive_bitwidth == 16:
        out = out * 2
    if x.dtype.is_floating():
        i = i + bits + nz
    tl.store(h_ptr + offs, out)
    tl.store(i_ptr + offs, i)
    tl.store(x_ptr + offs, tl.cast(3, tl.float32) + x)
