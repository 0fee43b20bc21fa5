# Stores in loops whose iterations write distinct elements only under a
# runtime condition (a grid-stride step of 32*nprog against a 64-wide
# block, a runtime step): accepted; the backward carries the condition as
# a launch guard, which the generated launcher checks on the host (tuple or
# callable grid) before launching, raising ValueError with the store's
# location, and kad's interpreter checks before running.
# RUN: grad %s:short_stride_while --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=64' --wrt x_ptr --out y_ptr
# RUN: grad %s:unknown_step_for --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,step=i32,BLOCK=64' --wrt x_ptr --out y_ptr
import triton
import triton.language as tl


@triton.jit
def short_stride_while(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    while start < n:
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(y_ptr + offs, x * 2.0, mask=offs < n)
        start += tl.num_programs(0) * 32


@triton.jit
def unknown_step_for(x_ptr, y_ptr, n, step, BLOCK: tl.constexpr):
    for start in range(0, n, step):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(y_ptr + offs, x * 2.0, mask=offs < n)
