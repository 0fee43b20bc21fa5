# kad grad --kernels-only: the backward module up to its `# ---- the launcher` line, the kernels
# alone (RMSNorm's backward and the sum kernel of its folded weight gradient), without the host
# code; the whole module has the same text before that line.
# RUN: grad %s:rms_norm --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,stride=i32,n_cols=i32,eps=fp32,BLOCK=128' --wrt x_ptr,w_ptr --out y_ptr --kernels-only
import triton
import triton.language as tl


@triton.jit
def rms_norm(x_ptr, w_ptr, y_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride + cols, x * rstd * w, mask=mask)
