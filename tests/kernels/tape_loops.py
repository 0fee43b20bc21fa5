"""Loops whose carried state is not a linear accumulator (kad records it on a tape).

Written for kad's tests: each kernel carries a value through a `for` loop and uses it
non-linearly (a running max, a sum rescaled by it, a recurrence), so the backward must
know the carried value at the start of every iteration.
"""
import triton
import triton.language as tl


@triton.jit
def online_softmax(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    # Pass 1: running max m and the sum l of exp(x - m), rescaled when m grows.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = -float("inf")
    l = 0.0
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + row * stride + offs, mask=offs < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    # Pass 2: the normalized values.
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + row * stride + offs, mask=offs < n_cols, other=-float("inf"))
        tl.store(y_ptr + row * stride + offs, tl.exp(x - m) / l, mask=offs < n_cols)


@triton.jit
def running_max(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    # y[row, :] = the elementwise maximum over the column chunks of row, times the
    # chunk-wise running max reached so far (a carried tile used non-linearly).
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.full((BLOCK,), -float("inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + row * n_cols + start + cols)
        acc = tl.maximum(acc, x)
    tl.store(y_ptr + row * BLOCK + cols, acc)


@triton.jit
def gated_recurrence(x_ptr, a_ptr, h0_ptr, y_ptr, T, D, BLOCK_D: tl.constexpr):
    # h_t = a_t * h_{t-1} + x_t per feature; every h_t is stored.  h is a tile per program.
    pid = tl.program_id(0)
    offs = pid * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = offs < D
    h = tl.load(h0_ptr + offs, mask=mask, other=0.0)
    for t in range(0, T):
        x = tl.load(x_ptr + t * D + offs, mask=mask, other=0.0)
        a = tl.load(a_ptr + t * D + offs, mask=mask, other=0.0)
        h = a * h + x
        tl.store(y_ptr + t * D + offs, h, mask=mask)


@triton.jit
def cross_entropy(logits_ptr, labels_ptr, loss_ptr, V, stride, BLOCK_V: tl.constexpr):
    # loss[row] = logsumexp(logits[row, :]) - logits[row, label], the log-sum-exp computed
    # online over vocabulary chunks.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_V)
    label = tl.load(labels_ptr + row)
    m = -float("inf")
    s = 0.0
    for start in range(0, V, BLOCK_V):
        offs = start + cols
        z = tl.load(logits_ptr + row * stride + offs, mask=offs < V, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(z, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(z - m_new), axis=0)
        m = m_new
    picked = tl.load(logits_ptr + row * stride + label)
    tl.store(loss_ptr + row, m + tl.log(s) - picked)


@triton.jit
def causal_attention(q_ptr, k_ptr, v_ptr, o_ptr, N, sm_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     D: tl.constexpr):
    # An attention-like forward: a block of queries per program, a running max m_i, a rescaled
    # running sum l_i and a rescaled accumulator over the K/V blocks up to the diagonal (causal:
    # the loop's trip count depends on the program id).  N is a multiple of BLOCK_M.
    start_m = tl.program_id(0)
    base = tl.program_id(1) * N * D
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + base + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, D), tl.float32)
    for start_n in range(0, (start_m + 1) * BLOCK_M, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + base + offs_n[:, None] * D + offs_d[None, :])
        v = tl.load(v_ptr + base + offs_n[:, None] * D + offs_d[None, :])
        qk = tl.dot(q, tl.trans(k), input_precision="ieee") * sm_scale
        qk = tl.where(offs_m[:, None] >= offs_n[None, :], qk, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    tl.store(o_ptr + base + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None])


@triton.jit
def newton_cbrt(a_ptr, y_ptr, n, max_it, tol, BLOCK: tl.constexpr):
    # y = a ** (1/3) per element by Newton's method on z**3 - a, in a `while` loop that stops
    # when the block's largest step is below tol or after max_it iterations (no closed-form
    # trip count: kad bounds it by max_it).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=1.0)
    z = a
    it = 0
    err = 1.0
    while (it < max_it) & (err > tol):
        step = (z * z * z - a) / (3.0 * z * z)
        z = z - step
        err = tl.max(tl.abs(step), axis=0)
        it += 1
    tl.store(y_ptr + offs, z, mask=mask)


@triton.jit
def newton_lambert(y_ptr, w_ptr, n, tol, BLOCK: tl.constexpr):
    # w with w * exp(w) = y per element (Lambert's W), Newton's method until the block's
    # largest step is below tol: no counter in the condition, so kad gives the loop's tape a
    # default capacity and the backward fails loudly past it.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask, other=1.0)
    w = tl.log(1.0 + y)
    err = 1.0
    while err > tol:
        ew = tl.exp(w)
        step = (w * ew - y) / (ew * (1.0 + w))
        w = w - step
        err = tl.max(tl.abs(step), axis=0)
    tl.store(w_ptr + offs, w, mask=mask)
