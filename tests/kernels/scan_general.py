"""Scans whose combine functions none of kad's special cases recognizes (docs/AD.md, "Scans":
the general rule differentiates them through the combine function's Jacobians).

Each kernel scans a [M, N] tile along AXIS (REVERSE: from the last lane to the first) and stores
every float result; the row-major tile is the whole buffer (no masks).  The combine functions are
associative, so Triton's tree and kad's sequential fold agree up to rounding:

- soft_or: x + y + x * y, a mix of a product and sums ((1 + x)(1 + y) - 1);
- logaddexp: max(x, y) + log(1 + exp(-|x - y|)), a running log-sum-exp;
- sum_prod: pairs (s, p) -> (s1 + s2, p1 * p2), two decoupled slots in one scan;
- mean_count: a running mean with an int count, (m, n) -> ((n1 m1 + n2 m2) / (n1 + n2), n1 + n2);
- welford: (count, mean, M2) merged as Chan et al. (a float count: a 3-slot state);
- online_softmax: (max, sum of exp(x - max)) pairs, rescaled to the larger max (coupled slots);
- segmented_sum: a sum restarted at flagged lanes, (flag, value) with an int flag deciding with
  tl.where (a condition on an int slot feeding a float one);
- complex_linrec: h_t = a_t h_{t-1} + b_t over complex numbers, (ar, ai, br, bi): a 4-slot
  state whose slots all couple.
A 1-D kernel (row_logaddexp_kernel) scans one row per program.
"""
import triton
import triton.language as tl


@triton.jit
def soft_or(x, y):
    return x + y + x * y


@triton.jit
def logaddexp(x, y):
    m = tl.maximum(x, y)
    return m + tl.log(1.0 + tl.exp(-tl.abs(x - y)))


@triton.jit
def sum_prod(s1, p1, s2, p2):
    return s1 + s2, p1 * p2


@triton.jit
def mean_count(m1, n1, m2, n2):
    n = n1 + n2
    return (m1 * n1 + m2 * n2) / n, n


@triton.jit
def welford(n1, mean1, m2_1, n2, mean2, m2_2):
    n = n1 + n2
    delta = mean2 - mean1
    frac = n2 / n
    return n, mean1 + delta * frac, m2_1 + m2_2 + delta * delta * n1 * frac


@triton.jit
def online_softmax(m1, s1, m2, s2):
    m = tl.maximum(m1, m2)
    return m, s1 * tl.exp(m1 - m) + s2 * tl.exp(m2 - m)


@triton.jit
def segmented(f1, v1, f2, v2):
    return f1 | f2, tl.where(f2 != 0, v2, v1 + v2)


@triton.jit
def complex_affine(ar1, ai1, br1, bi1, ar2, ai2, br2, bi2):
    # (a1, b1) then (a2, b2): h -> a2 * (a1 * h + b1) + b2, complex
    return (ar1 * ar2 - ai1 * ai2, ar1 * ai2 + ai1 * ar2,
            ar2 * br1 - ai2 * bi1 + br2, ar2 * bi1 + ai2 * br1 + bi2)


@triton.jit
def _offsets(M: tl.constexpr, N: tl.constexpr):
    return tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]


@triton.jit
def soft_or_kernel(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr):
    offs = _offsets(M, N)
    x = tl.load(x_ptr + offs)
    y = tl.associative_scan(x, AXIS, soft_or, reverse=REVERSE)
    tl.store(y_ptr + offs, y)


@triton.jit
def logaddexp_kernel(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr):
    offs = _offsets(M, N)
    x = tl.load(x_ptr + offs)
    y = tl.associative_scan(x, AXIS, logaddexp, reverse=REVERSE)
    tl.store(y_ptr + offs, y)


@triton.jit
def row_logaddexp_kernel(x_ptr, y_ptr, N: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.associative_scan(x, 0, logaddexp, reverse=REVERSE)
    tl.store(y_ptr + offs, y)


@triton.jit
def sum_prod_kernel(x_ptr, w_ptr, s_ptr, p_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                    REVERSE: tl.constexpr):
    offs = _offsets(M, N)
    x = tl.load(x_ptr + offs)
    w = tl.load(w_ptr + offs)
    s, p = tl.associative_scan((x, w), AXIS, sum_prod, reverse=REVERSE)
    tl.store(s_ptr + offs, s)
    tl.store(p_ptr + offs, p)


@triton.jit
def mean_count_kernel(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                      REVERSE: tl.constexpr):
    offs = _offsets(M, N)
    x = tl.load(x_ptr + offs)
    ones = tl.full([M, N], 1, tl.int32)
    y, _ = tl.associative_scan((x, ones), AXIS, mean_count, reverse=REVERSE)
    tl.store(y_ptr + offs, y)


@triton.jit
def welford_kernel(x_ptr, mean_ptr, m2_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                   REVERSE: tl.constexpr):
    offs = _offsets(M, N)
    x = tl.load(x_ptr + offs)
    _, mean, m2 = tl.associative_scan((tl.full([M, N], 1.0, tl.float32), x, tl.zeros([M, N], tl.float32)),
                                      AXIS, welford, reverse=REVERSE)
    tl.store(mean_ptr + offs, mean)
    tl.store(m2_ptr + offs, m2)


@triton.jit
def complex_linrec_kernel(ar_ptr, ai_ptr, br_ptr, bi_ptr, hr_ptr, hi_ptr, M: tl.constexpr, N: tl.constexpr,
                          AXIS: tl.constexpr, REVERSE: tl.constexpr):
    offs = _offsets(M, N)
    ar = tl.load(ar_ptr + offs)
    ai = tl.load(ai_ptr + offs)
    br = tl.load(br_ptr + offs)
    bi = tl.load(bi_ptr + offs)
    _, _, hr, hi = tl.associative_scan((ar, ai, br, bi), AXIS, complex_affine, reverse=REVERSE)
    tl.store(hr_ptr + offs, hr)
    tl.store(hi_ptr + offs, hi)


@triton.jit
def online_softmax_kernel(x_ptr, m_ptr, s_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                          REVERSE: tl.constexpr):
    offs = _offsets(M, N)
    x = tl.load(x_ptr + offs)
    m, s = tl.associative_scan((x, tl.full([M, N], 1.0, tl.float32)), AXIS, online_softmax, reverse=REVERSE)
    tl.store(m_ptr + offs, m)
    tl.store(s_ptr + offs, s)


@triton.jit
def segmented_sum_kernel(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                         REVERSE: tl.constexpr):
    offs = _offsets(M, N)
    x = tl.load(x_ptr + offs)
    flags = (offs % 5 == 0).to(tl.int32)  # a segment starts at every fifth element
    _, y = tl.associative_scan((flags, x), AXIS, segmented, reverse=REVERSE)
    tl.store(y_ptr + offs, y)
