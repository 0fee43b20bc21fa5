"""Reductions with tl.reduce and a user combine function.

welford_kernel: the mean and the (correction-adjusted) variance of each row of
an [M, N] matrix, computed as Welford's running (mean, count, M2) over column
blocks of BLOCK_N, then one tl.reduce of the per-lane (mean, count, M2) triples
with Welford's parallel combine (Chan et al.): the form var_mean kernels use.
reduce_sum_kernel: a row sum written as tl.reduce with an `add` combine.
reduce_max_kernel: a row maximum (tl.maximum combine), keep_dims.
argmax_pair_kernel: the maximum of each row and its index, the combine selecting
(value, index) pairs with tl.where.
logsumexp_kernel: a combine kad recognizes neither as a sum nor as a selection:
a streaming log-sum-exp on (max, scaled sum) pairs along the rows of a 2-D tile,
the rows' results summed over all axes (axis=None).
affine_compose_kernel: the composition of affine maps h -> a * h + b along time, a
non-commutative combine.
method_reduce_kernel: the method forms x.reduce and x.associative_scan.
"""
import triton
import triton.language as tl


@triton.jit
def welford_combine(mean_a, count_a, m2_a, mean_b, count_b, m2_b):
    count = count_a + count_b
    safe = tl.maximum(count, 1.0)
    delta = mean_b - mean_a
    mean = mean_a + delta * (count_b / safe)
    m2 = m2_a + m2_b + delta * delta * (count_a * count_b / safe)
    return mean, count, m2


@triton.jit
def add(a, b):
    return a + b


@triton.jit
def larger(a, b):
    return tl.maximum(a, b)


@triton.jit
def arg_larger(va, ia, vb, ib):
    take_a = (va > vb) | ((va == vb) & (ia < ib))
    return tl.where(take_a, va, vb), tl.where(take_a, ia, ib)


@triton.jit
def lse_combine(ma, sa, mb, sb):
    m = tl.maximum(ma, mb)
    return m, sa * tl.exp(ma - m) + sb * tl.exp(mb - m)


@triton.jit
def welford_kernel(x_ptr, var_ptr, mean_ptr, M, N, correction,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    row_ok = rows < M
    mean = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    m2 = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    count = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)[None, :]
        ok = row_ok & (cols < N)
        x = tl.load(x_ptr + rows * N + cols, mask=ok, other=0.0)
        new_count = count + ok.to(tl.float32)
        new_mean = mean + (x - mean) / tl.maximum(new_count, 1.0) * ok.to(tl.float32)
        m2 = m2 + (x - mean) * (x - new_mean) * ok.to(tl.float32)
        mean = new_mean
        count = new_count
    row_mean, _, row_m2 = tl.reduce((mean, count, m2), axis=1, combine_fn=welford_combine)
    var = row_m2 / (N - correction)
    tl.store(mean_ptr + rows, row_mean[:, None], mask=row_ok)
    tl.store(var_ptr + rows, var[:, None], mask=row_ok)


@triton.jit
def reduce_sum_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    tl.store(y_ptr + row, tl.reduce(x, 0, add))


@triton.jit
def reduce_max_kernel(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    cols = tl.arange(0, BLOCK_N)[None, :]
    x = tl.load(x_ptr + rows * N + cols, mask=(rows < M) & (cols < N), other=float("-inf"))
    m = tl.reduce(x, axis=1, combine_fn=larger, keep_dims=True)
    tl.store(y_ptr + rows, m, mask=rows < M)


@triton.jit
def argmax_pair_kernel(x_ptr, y_ptr, i_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=float("-inf"))
    v, i = tl.reduce((x, cols), 0, arg_larger)
    tl.store(y_ptr + row, v)
    tl.store(i_ptr + row, i)


@triton.jit
def logsumexp_kernel(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)[:, None]
    cols = tl.arange(0, BLOCK_N)[None, :]
    ok = (rows < M) & (cols < N)
    x = tl.load(x_ptr + rows * N + cols, mask=ok, other=0.0)
    s = tl.where(ok, 1.0, 0.0)
    m, t = tl.reduce((tl.where(ok, x, -1e30), s), 1, lse_combine)
    r = tl.arange(0, BLOCK_M)
    lse = tl.where(r < M, m + tl.log(tl.maximum(t, 1e-30)), 0.0)
    tl.store(y_ptr, tl.reduce(lse, None, add))


@triton.jit
def compose(a1, b1, a2, b2):
    # the affine maps h -> a1 * h + b1 then h -> a2 * h + b2: associative, not commutative
    return a1 * a2, a2 * b1 + b2


@triton.jit
def affine_compose_kernel(a_ptr, b_ptr, A_ptr, h_ptr, T, D, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    # the composition of T affine maps along axis 0 (time) for each of D columns: a non-commutative
    # combine (checks the order of the prefix and suffix reductions in the general rule)
    t = tl.arange(0, BLOCK_T)[:, None]
    d = tl.arange(0, BLOCK_D)[None, :]
    ok = (t < T) & (d < D)
    a = tl.load(a_ptr + t * D + d, mask=ok, other=1.0)
    b = tl.load(b_ptr + t * D + d, mask=ok, other=0.0)
    A, h = tl.reduce((a, b), 0, compose)
    tl.store(A_ptr + tl.arange(0, BLOCK_D), A, mask=tl.arange(0, BLOCK_D) < D)
    tl.store(h_ptr + tl.arange(0, BLOCK_D), h, mask=tl.arange(0, BLOCK_D) < D)


@triton.jit
def method_reduce_kernel(x_ptr, y_ptr, c_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # the method forms x.reduce(...) and x.associative_scan(...): per row, the sum plus the
    # largest square (keep_dims), and the running sum
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    cols = tl.arange(0, BLOCK_N)[None, :]
    ok = (rows < M) & (cols < N)
    x = tl.load(x_ptr + rows * N + cols, mask=ok, other=0.0)
    y = x.reduce(1, add, keep_dims=True) + (x * x).reduce(axis=1, combine_fn=larger, keep_dims=True)
    tl.store(y_ptr + rows, y, mask=rows < M)
    tl.store(c_ptr + rows * N + cols, x.associative_scan(1, add), mask=ok)
