# A helper returning early from a runtime `if`: the rest of the helper runs
# in the other branch and the returned value is the `if`'s result.
# RUN: ir %s:select_kernel --sig 'x_ptr=*fp32,flag=i32,BLOCK=16'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def pick(x, flag):
    if flag > 0:
        return x * 2.0
    y = x + 1.0
    return y


@triton.jit
def select_kernel(x_ptr, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, pick(x, flag))
