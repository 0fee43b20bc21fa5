"""Softmax spellings for tests/python/test_trusted.py: exp2 with a scale and a reciprocal, row tiles
reduced along axis 1, and two kernels whose stored output kad must not trust (the value recomputed)."""
import triton
import triton.language as tl


@triton.jit
def softmax_exp2(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    z = (x - tl.max(x, axis=0)) * 1.4426950408889634
    e = tl.exp2(z)
    y = e * (1.0 / tl.sum(e, axis=0))
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)


@triton.jit
def softmax_rows(x_ptr, y_ptr, n_rows, n_cols, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    y = e / tl.sum(e, axis=1)[:, None]
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def log_softmax_rows(x_ptr, y_ptr, n_rows, n_cols, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=1, keep_dims=True)
    y = z - tl.log(tl.sum(tl.exp(z), axis=1, keep_dims=True))
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def softmax_half_stored(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    # the whole row is read (other lanes 0 past n_cols would change the sum: the row is n_cols
    # long and all of it is live), but only its first half is stored: y off the store's mask is not
    # zero, so kad must not load it (it recomputes)
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * BLOCK + cols)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * BLOCK + cols, y, mask=cols < n_cols)
