# RUN: emit %s:lin --sig 'x_ptr=*fp32,w_ptr=*fp32,b_ptr=None,y_ptr=*fp32,stride=1,n=i32,BLOCK=16'
# RUN: grad %s:lin --sig 'x_ptr=*fp32,w_ptr=*fp32,b_ptr=None,y_ptr=*fp32,stride=1,n=i32,BLOCK=16' --wrt x_ptr,w_ptr --out y_ptr
# RUN: grad %s:lin --sig 'x_ptr=*fp32,w_ptr=*fp32,b_ptr=*fp32,y_ptr=*fp32,stride=i32,n=1,BLOCK=16' --wrt x_ptr,w_ptr,b_ptr --out y_ptr
# Runtime parameters Triton specializes (None, the int 1) are constants in the body, plain
# parameters of the emitted kernels (the forward: with their value as the default) and runtime
# arguments of the backward's launcher, which checks their values.
import triton
import triton.language as tl


@triton.jit
def lin(x_ptr, w_ptr, b_ptr, y_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    y = x * w
    if b_ptr is not None:
        y = y + tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride + cols, y, mask=mask)
