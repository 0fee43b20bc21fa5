"""Kernels whose writes may meet: several programs or lanes storing one element (races in the
forward, which kad refuses before the forward runs), several stores of one output whose last
writer decides each element, and atomics other than atomic_add (tests/python/test_writers.py)."""
import triton
import triton.language as tl


@triton.jit
def every_program_stores(x_ptr, o_ptr):
    # every program writes o[0]: on a grid of more than one program the forward races
    pid = tl.program_id(0)
    tl.store(o_ptr, tl.load(x_ptr + pid))


@triton.jit
def scatter_rows(x_ptr, idx_ptr, o_ptr, n, BLOCK: tl.constexpr):
    # o[idx[i]] = 2 x[i]: distinct indices (a permutation) are fine, duplicates race
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    i = tl.load(idx_ptr + offs, mask=m, other=0)
    tl.store(o_ptr + i, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


@triton.jit
def index_add_inplace(y_ptr, idx_ptr, src_ptr, n, alpha, BLOCK: tl.constexpr):
    # y[idx[i]] += alpha * src[i] in place (an index_add): duplicate indices race
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    i = tl.load(idx_ptr + offs, mask=m, other=0)
    y = tl.load(y_ptr + i, mask=m)
    tl.store(y_ptr + i, y + alpha * tl.load(src_ptr + offs, mask=m), mask=m)


@triton.jit
def strided_rows(x_ptr, o_ptr, stride, n_cols, BLOCK: tl.constexpr):
    # rows of o `stride` apart: they overlap when stride < n_cols
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < n_cols
    tl.store(o_ptr + r * stride + c, tl.exp(tl.load(x_ptr + r * n_cols + c, mask=m)), mask=m)


@triton.jit
def store_then_if(x_ptr, y_ptr, flag):
    # the second store, when it runs, overwrites the first
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    tl.store(y_ptr + pid, x)
    if flag > 0:
        tl.store(y_ptr + pid, x * x)


@triton.jit
def if_then_store(x_ptr, y_ptr, flag):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    if flag > 0:
        tl.store(y_ptr + pid, tl.exp(x))
    tl.store(y_ptr + pid, x * x)


@triton.jit
def shifted_overwrite(x_ptr, y_ptr, n, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    # a row written twice, the second store shifted: y[j] = x[j - SHIFT]^2 where it lands, else exp(x[j])
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + offs, mask=offs < n)
    tl.store(y_ptr + row * n + offs, tl.exp(x), mask=offs < n)
    tl.store(y_ptr + row * n + offs + SHIFT, x * x, mask=offs + SHIFT < n)


@triton.jit
def scale_with_amax(x_ptr, y_ptr, amax_ptr, s, n, BLOCK: tl.constexpr):
    # an fp8-style scaling kernel: y = x * s, and the running max of |x| over every program
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.atomic_max(amax_ptr, tl.max(tl.abs(x), 0))
    tl.atomic_min(amax_ptr + 1, tl.min(tl.where(m, x, float("inf")), 0))
    tl.store(y_ptr + offs, x * s, mask=m)


@triton.jit
def select_destination(x_ptr, y1_ptr, y2_ptr, BLOCK: tl.constexpr):
    # even programs write y1, odd ones y2, at offsets that ignore the program: with more than two
    # programs two of them write one element
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    dst = tl.where(pid % 2 == 0, y1_ptr, y2_ptr)
    tl.store(dst + offs, tl.exp(tl.load(x_ptr + pid * BLOCK + offs)))


@triton.jit
def scatter_positive(x_ptr, idx_ptr, o_ptr, BLOCK: tl.constexpr):
    # o[idx[i]] = x[i] where x[i] > 0: duplicate indices are fine where the mask drops all but one
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + tl.load(idx_ptr + offs), x, mask=x > 0)


@triton.jit
def exp_rows_inplace(x_ptr, stride, n_cols, BLOCK: tl.constexpr):
    # rows `stride` apart updated in place: they overlap when stride < n_cols
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < n_cols
    p = x_ptr + r * stride + c
    tl.store(p, tl.exp(tl.load(p, mask=m)), mask=m)
