# fp8 dtypes: pointers to fp8e5/fp8e4nv/fp8e4b15, casts to and from fp32/fp16/bf16, dtype
# comparisons in constexpr branches (the element type of a pointer, a constexpr dtype, the
# is_fp8*() methods), where on fp8 values, different fp8 types meeting in fp16; constants of an
# fp8 dtype keep their exact value in the IR (rounded where they are used, as for fp16).
# ROUNDTRIP (the other specializations: ops_fp8_more.py)
# RUN: ir %s:quant --sig 'x_ptr=*fp32,q_ptr=*fp8e4nv,n=i32,FMT=tl.float8e5,B=16'
import triton
import triton.language as tl


@triton.jit
def quant(x_ptr, q_ptr, n, FMT: tl.constexpr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    if q_ptr.dtype.element_ty == tl.float8e5:
        q = x.to(tl.float8e5)
    else:
        q = x.to(q_ptr.dtype.element_ty)
    if FMT.is_fp8e4b15():
        if x.dtype == tl.float32:
            r = x.to(FMT).to(tl.float32)
        else:
            r = x.to(tl.float32)
    else:
        r = tl.where(offs < 4, q, tl.full([B], 448.5, q_ptr.dtype.element_ty)).to(tl.float32)
    tl.static_assert(FMT.is_fp8() and not FMT.is_standard_floating())
    tl.store(q_ptr + offs, tl.where(r > 0.3, q, tl.full([B], 0.3, q.dtype)), mask=offs < n)
