"""Kernels whose untaken tl.where branch is non-finite (docs/AD.md, "Untaken branches: exact zeros").

Each computes a function that is smooth at the points tested, through a branch that tl.where
does not take and that is inf or NaN there (sqrt of a negative, exp(1000 x) overflowing, sin(x)/x
at 0, log of 0 or of a negative, division by 0, pow of a negative).  The true derivative is the
taken branch's; without strong zeros the backward's 0 * inf makes it NaN.  Elementwise kernels
take (x_ptr, y_ptr, n, BLOCK); `z = x * keep` puts exact zeros on every fourth lane (keep = 0
there) so that random inputs reach the singular point 0.
"""
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def sqrt_branch(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    tl.store(y_ptr + offs, tl.where(x > 0, tl.sqrt(x), x), mask=m)


@triton.jit
def exp_overflow(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, tl.where(x < 0, tl.exp(1000.0 * x), x), mask=m)


@triton.jit
def x_exp_overflow(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, tl.where(x < 0, x * tl.exp(1000.0 * x), x), mask=m)


@triton.jit
def sinc(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    z = x * tl.where(offs % 4 == 0, 0.0, 1.0)
    tl.store(y_ptr + offs, tl.where(z == 0, 1.0, tl.sin(z) / z), mask=m)


@triton.jit
def div_untaken(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    z = x * tl.where(offs % 4 == 0, 0.0, 1.0)
    tl.store(y_ptr + offs, tl.where(z != 0, tl.exp(x) / z, x), mask=m)


@triton.jit
def log_untaken(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    z = x * tl.where(offs % 4 == 0, 0.0, 1.0)
    tl.store(y_ptr + offs, tl.where(z > 0, tl.log(z), x), mask=m)


@triton.jit
def pow_untaken(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    tl.store(y_ptr + offs, tl.where(x > 0, libdevice.pow(x, 1.5), 2.0 * x), mask=m)


@triton.jit
def safe_entropy(p_ptr, h_ptr, n_cols, BLOCK: tl.constexpr):
    """-sum(p log p) of a row, 0 log 0 = 0 and the non-positive entries left out: log of the
    masked lanes' other=0 and of the data's negatives lies in the branch tl.where drops."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    p = tl.load(p_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    h = -tl.sum(tl.where(p > 0, p * tl.log(p), 0.0), axis=0)
    tl.store(h_ptr + row, h)


@triton.jit
def gelu_guarded(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """erf GELU, and for x < -10 its asymptote x * phi(x)/(-x) ~ exp(-x^2/2)/sqrt(2 pi) written
    with a division by x that is 0 on the lanes the branch does not take (x >= -10)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    z = x * tl.where(offs % 4 == 0, 0.0, 1.0)
    gelu = 0.5 * z * (1.0 + tl.erf(z * 0.7071067811865476))
    tail = -tl.exp(-0.5 * z * z) * 0.3989422804014327 / z
    tl.store(y_ptr + offs, tl.where(z < -10.0, tail, gelu), mask=m)


@triton.jit
def masked_center(x_ptr, valid_ptr, y_ptr, N, BLOCK: tl.constexpr):
    # y = x - mean(x over the valid lanes) on the valid lanes, 0 elsewhere: a row with no valid
    # lane has count 0, mean NaN, and y all 0 (every lane takes the where's other side)
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < N
    v = tl.load(valid_ptr + row * N + offs, mask=m, other=0) != 0
    x = tl.load(x_ptr + row * N + offs, mask=m, other=0.0)
    cnt = tl.sum(v.to(tl.float32), axis=0)
    mean = tl.sum(x * v.to(tl.float32), axis=0) / cnt  # a float mask: its adjoint is not selected
    tl.store(y_ptr + row * N + offs, tl.where(v, x - mean, 0.0), mask=m)
