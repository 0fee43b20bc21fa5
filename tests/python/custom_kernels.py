"""Kernels whose helpers get custom derivatives in custom_kernels_rules.py and
custom_kernels_wrong.py (test_custom_rules.py).  Plain Triton: this module
never imports kad or the rules."""
import triton
import triton.language as tl


@triton.jit
def lse_naive(x):
    return tl.log(tl.sum(tl.exp(x), axis=0))


@triton.jit
def lse_rows(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + offs, mask=offs < N, other=-float("inf"))
    tl.store(y_ptr + row, lse_naive(x))


@triton.jit
def lse_auto(x):  # the same math, no rule: kad differentiates it
    return tl.log(tl.sum(tl.exp(x), axis=0))


@triton.jit
def lse_rows_auto(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + offs, mask=offs < N, other=-float("inf"))
    tl.store(y_ptr + row, lse_auto(x))


@triton.jit
def lse_wrong(x):  # gets a wrong rule (custom_kernels_wrong.py)
    return tl.log(tl.sum(tl.exp(x), axis=0))


@triton.jit
def lse_rows_wrong(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + offs, mask=offs < N, other=-float("inf"))
    tl.store(y_ptr + row, lse_wrong(x))


@triton.jit
def round_half(x):
    return tl.floor(x + 0.5)


@triton.jit
def round_ste(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, round_half(x) * 2.0, mask=mask)


@triton.jit
def abs_max(x):
    return tl.max(tl.abs(x), axis=0)


@triton.jit
def scaled(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * N + offs, x / abs_max(x), mask=mask)


@triton.jit
def kad_stop_gradient(x):
    return x


@triton.jit
def stopped(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * kad_stop_gradient(x), mask=mask)


@triton.jit
def scale_by(x, k):
    return x * k


@triton.jit
def scale_rows(x_ptr, k_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0)
    k = tl.load(k_ptr + row)
    tl.store(y_ptr + row * N + offs, scale_by(x, k), mask=mask)
