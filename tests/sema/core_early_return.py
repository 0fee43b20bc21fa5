# Early return at kernel level: the statements after an `if` whose branch
# returns run only when that branch was not taken (they move into the else).
# RUN: ir %s:guard_kernel --sig 'x_ptr=*fp32,n_rows=i32,n=i32,BLOCK=32'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def guard_kernel(x_ptr, n_rows, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if row >= n_rows:
        return
    offs = row * n + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32))
