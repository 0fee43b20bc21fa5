# Scalar max/min reductions whose adjoint kad drops as exactly zero (the
# outputs provably do not depend on them: docs/AD.md, "Shift-invariant
# maxima"), and ones where the adjoint must be kept.  In the expected
# output a dropped max shows no `eq` tie mask and no `sum` of its adjoint.
#   dropped: where_exp (a zero joins exp(x - m)), scratch_max (m only stored
#     to a scratch buffer), lse_out (m + log(sum(exp(x - m)))), max_out with
#     m_ptr not differentiated, min_shift (exp(min - x)), masked_softmax
#     (padded lanes load -inf).
#   kept: raw_shift (x - m is stored), unnormalized (exp(x - m) is stored),
#     times_max (the output is scaled by m), where_shift (a 0 replaces
#     x - m on some lanes), rows2d (a max per row: only scalar maxima are
#     proved), max_out with m_ptr an output, in_if (m flows through an
#     `if`: not analysed), masked_shift.
#   loops: a running max over chunks (a `for` result: its loop carries
#     nothing but the max) is a candidate too, and sums over later loops
#     keep their class from iteration to iteration.  Dropped: loop_lse,
#     online_lse (split into those two loops first: docs/AD.md, "Online
#     softmax"), persistent_lse (one max per row of an outer loop).  Kept:
#     loop_lse_max_out with m_ptr an output, loop_unnormalized,
#     carried_scale (a max per iteration of a loop whose carried values
#     depend on it: one m per iteration, not one number).
# RUN: grad %s:raw_shift --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:unnormalized --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:times_max --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:where_shift --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:where_exp --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:rows2d --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:scratch_max --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,m_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:lse_out --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,lse_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y_ptr,lse_ptr
# RUN: grad %s:max_out --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,m_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:max_out --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,m_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y_ptr,m_ptr
# RUN: grad %s:min_shift --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:in_if --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,flag=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:masked_softmax --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:masked_shift --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:loop_lse --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: grad %s:online_lse --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: grad %s:loop_lse_max_out --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,m_ptr=*fp32,n=i32,BLOCK=8' --wrt x_ptr --out y_ptr,m_ptr
import triton
import triton.language as tl


@triton.jit
def raw_shift(x_ptr, y_ptr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    tl.store(y_ptr + cols, x - tl.max(x, axis=0))


@triton.jit
def unnormalized(x_ptr, y_ptr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    tl.store(y_ptr + cols, tl.exp(x - tl.max(x, axis=0)))


@triton.jit
def times_max(x_ptr, y_ptr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    tl.store(y_ptr + cols, e / tl.sum(e, axis=0) * m)


@triton.jit
def where_shift(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    z = tl.where(cols < n, x - tl.max(x, axis=0), 0.0)
    e = tl.exp(z)
    tl.store(y_ptr + cols, e / tl.sum(e, axis=0))


@triton.jit
def where_exp(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    e = tl.where(cols < n, tl.exp(x - tl.max(x, axis=0)), 0.0)
    tl.store(y_ptr + cols, e / tl.sum(e, axis=0))


@triton.jit
def rows2d(x_ptr, y_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, 4)[:, None]
    c = tl.arange(0, BLOCK)[None, :]
    x = tl.load(x_ptr + r * BLOCK + c)
    e = tl.exp(x - tl.max(x, axis=1, keep_dims=True))
    tl.store(y_ptr + r * BLOCK + c, e / tl.sum(e, axis=1, keep_dims=True))


@triton.jit
def scratch_max(x_ptr, y_ptr, m_ptr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    m = tl.max(x, axis=0)
    tl.store(m_ptr, m)
    e = tl.exp(x - m)
    tl.store(y_ptr + cols, e / tl.sum(e, axis=0))


@triton.jit
def lse_out(x_ptr, y_ptr, lse_ptr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    s = tl.sum(e, axis=0)
    tl.store(lse_ptr, m + tl.log(s))
    tl.store(y_ptr + cols, e / s)


@triton.jit
def max_out(x_ptr, y_ptr, m_ptr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    m = tl.max(x, axis=0)
    tl.store(m_ptr, m)
    e = tl.exp(x - m)
    tl.store(y_ptr + cols, e / tl.sum(e, axis=0))


@triton.jit
def min_shift(x_ptr, y_ptr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    e = tl.exp(tl.min(x, axis=0) - x)
    tl.store(y_ptr + cols, e / tl.sum(e, axis=0))


@triton.jit
def in_if(x_ptr, y_ptr, flag, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    m = tl.max(x, axis=0)
    if flag > 0:
        m = m * 1.0
    e = tl.exp(x - m)
    tl.store(y_ptr + cols, e / tl.sum(e, axis=0))


@triton.jit
def masked_softmax(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols, mask=cols < n, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + cols, e / tl.sum(e, axis=0), mask=cols < n)


@triton.jit
def masked_shift(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols, mask=cols < n, other=-float("inf"))
    tl.store(y_ptr + cols, x - tl.max(x, axis=0), mask=cols < n)


@triton.jit
def loop_lse(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # a running max over chunks, then a running sum with the final max
    cols = tl.arange(0, BLOCK)
    m = -float("inf")
    for c in range(0, n, BLOCK):
        x = tl.load(x_ptr + c + cols, mask=c + cols < n, other=-float("inf"))
        m = tl.maximum(m, tl.max(x, axis=0))
    s = 0.0
    for c in range(0, n, BLOCK):
        x = tl.load(x_ptr + c + cols, mask=c + cols < n, other=-float("inf"))
        s += tl.sum(tl.exp(x - m), axis=0)
    tl.store(y_ptr, m + tl.log(s))


@triton.jit
def loop_lse_max_out(x_ptr, y_ptr, m_ptr, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    m = -float("inf")
    for c in range(0, n, BLOCK):
        x = tl.load(x_ptr + c + cols, mask=c + cols < n, other=-float("inf"))
        m = tl.maximum(tl.max(x, axis=0), m)
    s = 0.0
    for c in range(0, n, BLOCK):
        x = tl.load(x_ptr + c + cols, mask=c + cols < n, other=-float("inf"))
        s += tl.sum(tl.exp(x - m), axis=0)
    tl.store(y_ptr, m + tl.log(s))
    tl.store(m_ptr, m)


@triton.jit
def loop_unnormalized(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    m = -float("inf")
    for c in range(0, n, BLOCK):
        x = tl.load(x_ptr + c + cols, mask=c + cols < n, other=-float("inf"))
        m = tl.maximum(m, tl.max(x, axis=0))
    for c in range(0, n, BLOCK):
        x = tl.load(x_ptr + c + cols, mask=c + cols < n, other=0.0)
        tl.store(y_ptr + c + cols, tl.exp(x - m), mask=c + cols < n)


@triton.jit
def online_lse(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # the online form: kad's gauge rewrite splits it into the two loops of loop_lse
    cols = tl.arange(0, BLOCK)
    m = -float("inf")
    s = 0.0
    for c in range(0, n, BLOCK):
        x = tl.load(x_ptr + c + cols, mask=c + cols < n, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(y_ptr, m + tl.log(s))


@triton.jit
def carried_scale(x_ptr, y_ptr, R, BLOCK: tl.constexpr):
    # one max per row of the loop, and both sums carry it: c * d depends on every row's max
    # (shifting all of them by one amount would cancel, but they are not one number)
    cols = tl.arange(0, BLOCK)
    c = 0.0
    d = 0.0
    for r in range(0, R):
        x = tl.load(x_ptr + r * BLOCK + cols)
        m = tl.max(x, axis=0)
        c = c + tl.exp(m)
        d = d + tl.sum(tl.exp(x - m), axis=0)
    tl.store(y_ptr, c * d)


@triton.jit
def persistent_lse(x_ptr, y_ptr, R, n, BLOCK: tl.constexpr):
    # rows taken in turn by a loop (a persistent kernel): a running max over each row's chunks,
    # one per row; nothing that depends on it is carried from row to row, so it is dropped
    cols = tl.arange(0, BLOCK)
    for r in range(tl.program_id(0), R, tl.num_programs(0)):
        m = -float("inf")
        for c in range(0, n, BLOCK):
            x = tl.load(x_ptr + r * n + c + cols, mask=c + cols < n, other=-float("inf"))
            m = tl.maximum(m, tl.max(x, axis=0))
        s = 0.0
        for c in range(0, n, BLOCK):
            x = tl.load(x_ptr + r * n + c + cols, mask=c + cols < n, other=-float("inf"))
            s += tl.sum(tl.exp(x - m), axis=0)
        tl.store(y_ptr + r, m + tl.log(s))
# ROUNDTRIP
