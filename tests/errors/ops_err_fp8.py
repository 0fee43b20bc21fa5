# fp8 misuse is a located error: arithmetic computed in fp8 (two fp8 operands, an fp8 tile with a
# Python number, a sum, a scan, a negation), conversions Triton's NVIDIA backend does not have
# (fp64, another fp8 type, bf16 to fp8e4b15), fp8 with an integer, and the AMD-only formats.
# RUN: ir %s:add_fp8 --sig 'x_ptr=*fp8e5,B=16'
# RUN: ir %s:scale_fp8 --sig 'x_ptr=*fp8e4nv,B=16'
# RUN: ir %s:to_fp64 --sig 'x_ptr=*fp8e5,y_ptr=*fp64,B=16'
# RUN: ir %s:fp8_to_fp8 --sig 'x_ptr=*fp8e5,y_ptr=*fp8e4nv,B=16'
# RUN: ir %s:bf16_to_e4b15 --sig 'x_ptr=*bf16,B=16'
# RUN: ir %s:with_int --sig 'x_ptr=*fp8e5,i_ptr=*i32,B=16'
# RUN: ir %s:amd --sig 'x_ptr=*fp32,B=16'
# RUN: ir %s:sum_fp8 --sig 'x_ptr=*fp8e5,y_ptr=*fp32,B=16'
# RUN: ir %s:cumsum_fp8 --sig 'x_ptr=*fp8e4nv,B=16'
# RUN: ir %s:neg_fp8 --sig 'x_ptr=*fp8e5,B=16'
import triton
import triton.language as tl


@triton.jit
def add_fp8(x_ptr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    tl.store(x_ptr + tl.arange(0, B), x + x)


@triton.jit
def scale_fp8(x_ptr, B: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, B))
    tl.store(x_ptr + tl.arange(0, B), x * 2.0)


@triton.jit
def to_fp64(x_ptr, y_ptr, B: tl.constexpr):
    tl.store(y_ptr + tl.arange(0, B), tl.load(x_ptr + tl.arange(0, B)).to(tl.float64))


@triton.jit
def fp8_to_fp8(x_ptr, y_ptr, B: tl.constexpr):
    tl.store(y_ptr + tl.arange(0, B), tl.load(x_ptr + tl.arange(0, B)).to(tl.float8e4nv))


@triton.jit
def bf16_to_e4b15(x_ptr, B: tl.constexpr):
    y = tl.load(x_ptr + tl.arange(0, B)).to(tl.float8e4b15)
    tl.store(x_ptr + tl.arange(0, B), y.to(tl.float16))


@triton.jit
def with_int(x_ptr, i_ptr, B: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, B), tl.load(x_ptr + tl.arange(0, B)) + tl.load(i_ptr + tl.arange(0, B)))


@triton.jit
def amd(x_ptr, B: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, B), tl.load(x_ptr + tl.arange(0, B)).to(tl.float8e4b8).to(tl.float32))


@triton.jit
def sum_fp8(x_ptr, y_ptr, B: tl.constexpr):
    tl.store(y_ptr, tl.sum(tl.load(x_ptr + tl.arange(0, B)), axis=0))


@triton.jit
def cumsum_fp8(x_ptr, B: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, B), tl.cumsum(tl.load(x_ptr + tl.arange(0, B)), 0))


@triton.jit
def neg_fp8(x_ptr, B: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, B), -tl.load(x_ptr + tl.arange(0, B)))
