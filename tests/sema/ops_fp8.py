# fp8 dtypes: pointers to fp8e5/fp8e4nv/fp8e4b15, casts to and from fp32/fp16/bf16, dtype
# comparisons in constexpr branches (the element type of a pointer, a constexpr dtype, the
# is_fp8*() methods), where on fp8 values, different fp8 types meeting in fp16; constants of an
# fp8 dtype keep their exact value in the IR (rounded where they are used, as for fp16).
# ROUNDTRIP
# RUN: ir %s:quant --sig 'x_ptr=*fp32,q_ptr=*fp8e4nv,n=i32,FMT=tl.float8e5,B=16'
# RUN: ir %s:quant --sig 'x_ptr=*bf16,q_ptr=*fp8e5,n=i32,FMT=tl.float8e4b15,B=16'
# RUN: ir %s:mixed --sig 'a_ptr=*fp8e5,b_ptr=*fp8e4nv,y_ptr=*fp16,B=16'
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


@triton.jit
def mixed(a_ptr, b_ptr, y_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    c = tl.where(offs < 8, a, b)
    tl.store(y_ptr + offs, c.to(tl.float32).to(tl.float16))
