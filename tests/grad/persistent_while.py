# RUN: grad %s:scale_persistent --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=64' --wrt x_ptr --out y_ptr --ir
# ROUNDTRIP
# A grid-stride while loop whose only effect is a store: the backward keeps
# exactly one while (the adjoint sweep); the primal sweep's copy, which only
# stored, is dead (every while of a backward recomputes a terminating one).
import triton
import triton.language as tl


@triton.jit
def scale_persistent(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    while start < n:
        offs = start + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0.0)
        tl.store(y_ptr + offs, 2.0 * x, mask=m)
        start += tl.num_programs(0) * BLOCK
