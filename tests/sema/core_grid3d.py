# A 3-D grid: batch, row and column program ids, num_programs.
# RUN: ir %s:batched_kernel --sig 'x_ptr=*fp32,stride_b=i32,stride_r=i32,BLOCK=16'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def batched_kernel(x_ptr, stride_b, stride_r, BLOCK: tl.constexpr):
    b = tl.program_id(axis=2)
    r = tl.program_id(axis=1)
    c = tl.program_id(axis=0)
    cols = c * BLOCK + tl.arange(0, BLOCK)
    ptrs = x_ptr + b * stride_b + r * stride_r + cols
    x = tl.load(ptrs)
    tl.store(ptrs, x * tl.num_programs(2))
