# Early return at any nesting depth, after a constexpr `if` and inside
# nested runtime `if`s: the rest of each enclosing list runs in the
# branches that fall through.
# RUN: ir %s:nested_kernel --sig 'x_ptr=*fp32,n=i32,FAST=False,BLOCK=32'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def nested_kernel(x_ptr, n, FAST: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if FAST:
        return
    if pid < n:
        if pid == 0:
            return
        tl.store(x_ptr + pid + offs, tl.full([BLOCK], 1.0, tl.float32))
    tl.store(x_ptr + offs, tl.full([BLOCK], 2.0, tl.float32))
