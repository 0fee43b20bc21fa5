# RUN: grad %s:layer_norm_kernel --sig 'X=*fp32,Y=*fp32,W=*fp32,B=*fp32,stride=i32,N=i32,eps=fp32,BLOCK_N=256' --wrt X,W,B --out Y
# Backward module of a chunked two-pass LayerNorm: the statistics loops are linear accumulators,
# so the backward re-runs them and sweeps the row again (no tape).
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(X, Y, W, B, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        acc += tl.load(X + cols, mask=cols < N, other=0.0)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        x = tl.load(X + cols, mask=cols < N, other=0.0)
        d = tl.where(cols < N, x - mean, 0.0)
        acc += d * d
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0)
        tl.store(Y + cols, (x - mean) * rstd * w + b, mask=mask)
