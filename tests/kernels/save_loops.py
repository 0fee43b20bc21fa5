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
