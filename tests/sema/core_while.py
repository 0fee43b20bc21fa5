# `while` on a runtime condition: an IR while whose cond region re-evaluates
# the condition on the carried variables.  A constexpr-false loop vanishes.
# RUN: ir %s:halve_kernel --sig 'x_ptr=*fp32,n=i32,LIMIT=0'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def halve_kernel(x_ptr, n, LIMIT: tl.constexpr):
    x = tl.load(x_ptr)
    steps = 0
    while x > 1.0 and steps < n:
        x = x * 0.5
        steps += 1
    while LIMIT > 0:
        x = x + 1.0
    tl.store(x_ptr, x + steps)
