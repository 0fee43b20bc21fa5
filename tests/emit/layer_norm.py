# RUN: emit %s:layer_norm_kernel --sig 'X=*fp32,Y=*fp32,W=*fp32,B=*fp32,stride=i32,N=i32,eps=fp32,BLOCK_N=256'
# A loop over the row in chunks: loop-carried accumulators, pointer increments kept as `X += ...`.
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(X, Y, W, B, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        x = tl.load(X + cols, mask=cols < N, other=0.0)
        acc += x
        acc2 += x * x
    mean = tl.sum(acc, axis=0) / N
    var = tl.sum(acc2, axis=0) / N - mean * mean
    rstd = 1 / tl.sqrt(var + eps)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0)
        tl.store(Y + cols, (x - mean) * rstd * w + b, mask=mask)
