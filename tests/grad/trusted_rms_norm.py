# RUN: grad %s:rms_norm --ir --trusted --atomics --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,rstd_ptr=*fp32,n_cols=i32,eps=fp32,BLOCK=32' --wrt x_ptr,w_ptr --out y_ptr
# ROUNDTRIP
# Trusted saved outputs, a norm's statistic: rstd, stored by the forward into a scratch buffer (one
# element per program, which the access analysis proves for grids with one program along axes 1
# and 2: a launch guard), is loaded, and its rule takes the loaded value (d(rsqrt u) = -d*y^3/2):
# the sum of squares is not recomputed.  (--atomics: no grid folding, to keep the IR short.)
import triton
import triton.language as tl


@triton.jit
def rms_norm(x_ptr, w_ptr, y_ptr, rstd_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, x * rstd * w, mask=mask)
