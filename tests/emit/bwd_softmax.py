# RUN: grad %s:softmax_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,stride=i32,n_cols=i32,BLOCK=128' --wrt x_ptr --out y_ptr
# Backward module of a row softmax: max, exp, sum, division; padding lanes load -inf.
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    tl.store(y_ptr + row * stride + cols, num / den, mask=mask)
