# RUN: emit %s:scale_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,n=i32,flag=i32,alpha=fp32,BLOCK=64'
# A runtime if with a result assigned in both branches, and one without results.
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, flag, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if flag > 0:
        y = x * alpha
    else:
        y = x - alpha
    tl.store(out_ptr + offs, y, mask=mask)
    if flag == 2:
        tl.store(out_ptr + offs, y + 1.0, mask=mask & (offs % 2 == 0))
