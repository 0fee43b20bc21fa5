# RUN: grad %s:rms_norm_kernel --sig 'x_ptr=*bf16,w_ptr=*bf16,y_ptr=*bf16,rstd_ptr=*fp32,stride=i32,n_cols=i32,eps=fp32,BLOCK=256' --wrt x_ptr,w_ptr --out y_ptr
# Backward module of RMSNorm on bf16 with an fp32 statistic saved for a hand-written backward
# (rstd_ptr: a store the backward leaves out); adjoints stay fp32 until the atomic_add.
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, rstd_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * rstd * w
    tl.store(y_ptr + row * stride + cols, y.to(tl.bfloat16), mask=mask)
