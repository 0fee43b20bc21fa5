"""Kernels whose top-level loops give results kad's saving forward stores for the backward
(docs/AD.md, "Saved loop results"), and some whose loops it must leave alone.

row_dot_bf16: a loop accumulating bf16 products in a bf16 tile (a 16-bit saved value, widened
to fp32 in the buffer); y = sigmoid(acc) * rowsum.
last_index: a loop whose int result (the last column index over a threshold) the rest uses:
nothing of that loop is saved.
wide_acc: a loop over a few elements accumulating into a tile far larger than the tensors: the
saved buffer would outgrow the launch's tensors, so the package does not save it.
"""
import triton
import triton.language as tl


@triton.jit
def row_dot_bf16(x_ptr, w_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.bfloat16)
    total = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
        w = tl.load(w_ptr + cols, mask=m, other=0.0)
        acc += x * w
        total += tl.sum(x.to(tl.float32), axis=0)
    y = tl.sigmoid(acc.to(tl.float32)) * total
    tl.store(y_ptr + row * BLOCK + tl.arange(0, BLOCK), y)


@triton.jit
def last_index(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    s = 0.0
    last = 0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        s += tl.sum(x * x, axis=0)
        last = tl.maximum(last, tl.max(tl.where(x > 0.5, cols, 0), axis=0))
    tl.store(y_ptr + row, s * last)


@triton.jit
def wide_acc(x_ptr, y_ptr, n, WIDE: tl.constexpr):
    acc = tl.zeros([WIDE], dtype=tl.float32)
    for i in range(0, n):
        acc += tl.load(x_ptr + i) * (tl.arange(0, WIDE) + 1.0)
    tl.store(y_ptr + tl.program_id(0), tl.sum(tl.sin(acc), axis=0))


@triton.jit
def rms_chunked(x_ptr, w_ptr, y_ptr, n_cols, stride, eps, BLOCK: tl.constexpr):
    # two top-level loops: the sum of squares, then y = x * rstd * w chunk by chunk; w is read by
    # every row's program, so its gradient is folded (src/ad/write/fold.c) while the sum is saved
    row = tl.program_id(0)
    ss = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        ss += tl.sum(x * x, axis=0)
    rstd = 1.0 / tl.sqrt(ss / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
        w = tl.load(w_ptr + cols, mask=m, other=0.0)
        tl.store(y_ptr + row * stride + cols, x * rstd * w, mask=m)


@triton.jit
def mean_var(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    # two planned loops, the second reading the first's result in its body: mean, then the
    # centred sum of squares; y = var * mean
    row = tl.program_id(0)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        s += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    mean = tl.sum(s, axis=0) / n_cols
    v = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        d = tl.where(cols < n_cols, x - mean, 0.0)
        v += tl.sum(d * d, axis=0)
    tl.store(y_ptr + row, v / n_cols * mean)
