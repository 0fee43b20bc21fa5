# RUN: ir %s:kernel --sig "x_ptr=*fp16,n=i32,BLOCK=16,NAME='gelu'"
# f-strings of compile-time values fold to str constants: messages of
# device_assert, static_assert, and constexpr strings compared
# and passed on to helpers.
import triton
import triton.language as tl

PREFIX = "kad"


@triton.jit
def check(x, MSG: tl.constexpr):
    tl.device_assert(x >= 0, MSG)
    return x


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr, NAME: tl.constexpr):
    tl.static_assert(BLOCK % 16 == 0, f"BLOCK must be a multiple of 16, got {BLOCK}")
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    KIND: tl.constexpr = f"{PREFIX}_{NAME}"
    if KIND == "kad_gelu":
        x = x * 2
    x = check(x, f"{NAME!r} needs x >= 0 ({x_ptr.dtype.element_ty}, {BLOCK=}, {BLOCK / 3:.2f})")
    tl.device_assert(x == x, f"{KIND:>10}|")
    tl.store(x_ptr + offs, x, mask=m)
