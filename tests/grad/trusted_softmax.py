# RUN: grad %s:softmax --ir --trusted --sig 'x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,BLOCK=32' --wrt x_ptr --out y_ptr
# ROUNDTRIP
# Trusted saved outputs (docs/AD.md, src/ad/ad_trust.c): the backward loads y where the forward stored
# it (under the store's mask, 0 elsewhere, which is y's value there: x is -inf off the mask) and
# applies dx = y * (dy - sum(dy * y)); neither the row max nor exp nor the sum is recomputed.
import triton
import triton.language as tl


@triton.jit
def softmax(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)
