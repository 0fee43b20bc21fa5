"""Maxima and minima that look shift-invariant but are not (and some that are).

Each kernel works on one row of n_cols values per program; the row is read
with `other=-inf` (or +inf for minima) past n_cols, like a softmax row.
tests/python/test_grad_adversarial.py differentiates them and compares with
PyTorch autograd.
"""
import triton
import triton.language as tl


@triton.jit
def max_stored_kernel(x_ptr, y_ptr, m_ptr, n_cols, BLOCK: tl.constexpr):
    # exp(x - m) is not normalized and m is stored: m's adjoint matters.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    m = tl.max(x, axis=0)
    tl.store(y_ptr + row * n_cols + cols, tl.exp(x - m), mask=mask)
    tl.store(m_ptr + row, m)


@triton.jit
def max_unnormalized_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    # Looks like a softmax, but the division is missing: y depends on m.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    m = tl.max(x, axis=0)
    z = tl.exp(x - m)
    s = tl.sum(z, axis=0)
    tl.store(y_ptr + row * n_cols + cols, z / (s * s), mask=mask)


@triton.jit
def max_in_mask_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    # The max decides which lanes are kept: m enters a comparison.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    m = tl.max(x, axis=0)
    keep = x > m - 1.0
    z = tl.where(keep, tl.exp(x - m), 0.0)
    tl.store(y_ptr + row * n_cols + cols, z / tl.sum(z, axis=0) + 0.25 * m, mask=mask)


@triton.jit
def max_after_where_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    # m is reused after a where: one side is x - m, the other m itself.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    m = tl.max(x, axis=0)
    z = tl.where(cols % 2 == 0, x - m, m)
    tl.store(y_ptr + row * n_cols + cols, z, mask=mask)


@triton.jit
def max_of_max_kernel(x_ptr, y_ptr, d_ptr, R: tl.constexpr, C: tl.constexpr):
    # A 2-D tile per program: row maxima, then their max.  y is a softmax over
    # the whole tile (invariant), d = x - m is not.
    pid = tl.program_id(0)
    offs = pid * R * C + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    m = tl.max(tl.max(x, axis=1), axis=0)
    e = tl.exp(x - m)
    tl.store(y_ptr + offs, e / tl.sum(tl.sum(e, axis=1), axis=0))
    tl.store(d_ptr + offs, x - m)


@triton.jit
def softmin_kernel(x_ptr, y_ptr, u_ptr, n_cols, BLOCK: tl.constexpr):
    # min with exp(min - x): y = softmin (invariant), u = exp(min - x) (not).
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("inf"))
    mn = tl.min(x, axis=0)
    e = tl.exp(mn - x)
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)
    tl.store(u_ptr + row * n_cols + cols, e, mask=mask)


@triton.jit
def masked_softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    # A plain masked softmax over a row shorter than the block.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    tl.store(y_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


@triton.jit
def max_in_runtime_if_kernel(x_ptr, y_ptr, n_cols, flag, BLOCK: tl.constexpr):
    # The max only exists on one side of a runtime if; the other side shifts
    # by the first element, so y is a softmax either way.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    if flag > 0:
        m = tl.max(x, axis=0)
    else:
        m = tl.load(x_ptr + row * n_cols)
    e = tl.exp(x - m)
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0) * m, mask=mask)


@triton.jit
def logsumexp_kernel(x_ptr, lse_ptr, n_cols, BLOCK: tl.constexpr):
    # m + log(sum(exp(x - m))) does not depend on m.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    m = tl.max(x, axis=0)
    tl.store(lse_ptr + row, m + tl.log(tl.sum(tl.exp(x - m), axis=0)))


@triton.jit
def max_ties_kernel(x_ptr, y_ptr, m_ptr, R: tl.constexpr, C: tl.constexpr):
    # Row maxima with ties (the data repeats the maximum): keep_dims, then
    # broadcast back; both the maxima and x - max are outputs.
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    m = tl.max(x, axis=1, keep_dims=True)
    tl.store(y_ptr + offs, x - m)
    tl.store(m_ptr + tl.arange(0, R)[:, None], m * m)


@triton.jit
def maximum_ties_kernel(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # Elementwise maximum/minimum with ties between the operands.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(w_ptr + offs, mask=mask)
    y = tl.maximum(x, w) * 2.0 + tl.minimum(w, x)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def max_times_x_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    # Softmax whose output is rescaled by the max: not shift-invariant.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    p = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * n_cols + cols, p * tl.exp(m), mask=mask)


@triton.jit
def argmax_gather_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    # max with return_indices; the index selects a lane (piecewise constant).
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    m, i = tl.max(x, axis=0, return_indices=True)
    xi = tl.load(x_ptr + row * n_cols + i)
    tl.store(y_ptr + row, m * xi)
