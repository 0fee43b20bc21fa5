"""Online-softmax loops that kad reverses by a second pass with the final max (issue 9), and
look-alikes that it must keep taped.

Written for kad's tests.  The recognized form: a running max m_new = maximum(m, y), values c
starting at 0 updated as c * exp(m - m_new) + (terms linear in exp(s - m_new)).
"""
import triton
import triton.language as tl


@triton.jit
def online_lse_stats(x_ptr, m_ptr, lse_ptr, n_cols, stride, BLOCK: tl.constexpr):
    # Per row: the max and the log-sum-exp, both stored (the max's own gradient matters).
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = -float("inf")
    l = 0.0
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + row * stride + offs, mask=offs < n_cols, other=-float("inf"))
        m_new = tl.maximum(tl.max(x, axis=0), m)
        alpha = tl.exp(m - m_new)
        l = alpha * l + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(m_ptr + row, m)
    tl.store(lse_ptr + row, m + tl.log(l))


@triton.jit
def softmax_exp2_rows(x_ptr, y_ptr, w_ptr, n_cols, scale, BLOCK_R: tl.constexpr, BLOCK: tl.constexpr):
    # BLOCK_R rows per program, base-2 exponentials of scaled logits, the running max a vector,
    # the sum weighted by w (a loaded weight per column: linear in the exponentials).
    # y[r] = sum_j w_j 2^(s_rj) / sum_j 2^(s_rj), s = x * scale.
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK)
    m = tl.full((BLOCK_R,), -float("inf"), tl.float32)
    l = tl.zeros((BLOCK_R,), tl.float32)
    num = tl.zeros((BLOCK_R,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + rows[:, None] * n_cols + offs[None, :], mask=offs[None, :] < n_cols,
                    other=-float("inf"))
        w = tl.load(w_ptr + offs, mask=offs < n_cols, other=0.0)
        s = x * scale
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.math.exp2(m - m_new)
        p = tl.math.exp2(s - m_new[:, None])
        l = l * alpha + tl.sum(p, axis=1)
        num = num * alpha + tl.sum(p * w[None, :], axis=1)
        m = m_new
    tl.store(y_ptr + rows, num / l)


@triton.jit
def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, N, sm_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  D: tl.constexpr):
    # Non-causal attention, N a multiple of BLOCK_N; p masked by where (a zero on one side) and
    # the accumulator's update written alpha-first.
    start_m = tl.program_id(0)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, D), tl.float32)
    for start_n in range(0, N, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + offs_n[:, None] * D + offs_d[None, :])
        v = tl.load(v_ptr + offs_n[:, None] * D + offs_d[None, :])
        qk = tl.dot(q, tl.trans(k), input_precision="ieee") * sm_scale
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.where(offs_n[None, :] < N, tl.exp(qk - m_new[:, None]), 0.0)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = alpha[:, None] * acc + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    tl.store(o_ptr + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None])


@triton.jit
def lse_plus_max(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    # Looks like an online log-sum-exp, but the running sum also adds m_new itself: not linear in
    # the exponentials, so kad keeps the tape of l and m.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = -float("inf")
    l = 0.0
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0) + 0.125 * m_new
        m = m_new
    tl.store(y_ptr + row, m + tl.log(l))


@triton.jit
def cross_rows(x_ptr, y_ptr, BLOCK: tl.constexpr, N: tl.constexpr):
    # A running max per row, but the sum runs down the columns (axis 0): each sum mixes the
    # rows' different maxima, so the rescaling does not match; kad keeps the tape.
    rows = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    l = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        x = tl.load(x_ptr + rows[:, None] * N + start + rows[None, :])
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=0)
        m = m_new
    tl.store(y_ptr + rows, l)


@triton.jit
def lse_from_one(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    # The running sum starts at 1, not 0 (exp(m0 - M) would be needed): kad keeps the tape.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = 0.0
    l = 1.0
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(y_ptr + row, m + tl.log(l))
