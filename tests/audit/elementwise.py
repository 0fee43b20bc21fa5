# An elementwise kernel: no atomics, no accumulation.  Clean.
# RUN: audit %s:scale_add --sig 'x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=256'
import triton
import triton.language as tl


@triton.jit
def scale_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, 2.0 * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
