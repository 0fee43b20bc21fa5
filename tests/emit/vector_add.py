# RUN: emit %s:add_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=1024'
# Elementwise: scalar pointers and offsets broadcast implicitly, other= as a literal.
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x + y, mask=mask)
