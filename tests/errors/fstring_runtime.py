# RUN: ir %s:kernel --sig 'x_ptr=*fp32,n=i32,BLOCK=16'
# RUN: ir %s:spec --sig 'x_ptr=*fp32,n=i32,BLOCK=16'
# A runtime value in an f-string is an error, as in Triton (it formats only
# constexprs); so is a format spec that does not apply to the value.
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(n > 0, f"n={n} BLOCK={BLOCK} x={x}")


@triton.jit
def spec(x_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK > 0, f"{BLOCK:s} {x_ptr.dtype:>4}")
