# fp8 (see ops_fp8.py): a constexpr fp8e4b15 format for a bf16 source (through fp32, the
# conversion Triton has), and two fp8 types meeting in fp16 inside tl.where.
# RUN: ir %s:e4b15 --sig 'x_ptr=*bf16,y_ptr=*fp32,FMT=tl.float8e4b15,B=16'
# RUN: ir %s:mixed --sig 'a_ptr=*fp8e5,b_ptr=*fp8e4nv,y_ptr=*fp16,B=16'
import triton
import triton.language as tl


@triton.jit
def e4b15(x_ptr, y_ptr, FMT: tl.constexpr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    if FMT.is_fp8e4b15() and not FMT.is_fp8e5():
        y = x.to(tl.float32).to(FMT).to(tl.float32)
    else:
        y = x.to(tl.float32)
    tl.store(y_ptr + tl.arange(0, B), y)


@triton.jit
def mixed(a_ptr, b_ptr, y_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    c = tl.where(offs < 8, a, b)
    tl.store(y_ptr + offs, c.to(tl.float32).to(tl.float16))
