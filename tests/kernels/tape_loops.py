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
