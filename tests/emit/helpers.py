# RUN: emit %s:fused_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=128'
# @triton.jit helpers are inlined: the emitted kernel is one flat function.
import triton
import triton.language as tl


@triton.jit
def _load_block(ptr, offs, n):
    return tl.load(ptr + offs, mask=offs < n, other=0.0)


@triton.jit
def _leaky(x, slope):
    return tl.where(x > 0, x, x * slope)


@triton.jit
def fused_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = _load_block(x_ptr, offs, n)
    y = _leaky(x, 0.1) + tl.sigmoid(x)
    tl.store(y_ptr + offs, y, mask=offs < n)
