"""Stores inside loops at an address that does not depend on the iteration (issue 33, item 4):
the output keeps the last write, and the values written before it get no gradient."""
import triton
import triton.language as tl


@triton.jit
def running_state_every_iter(x_ptr, y_ptr, T, D: tl.constexpr):
    # a running state h = tanh(0.5 h + x_t), written out after every step: y keeps the last
    row = tl.program_id(0)
    offs = tl.arange(0, D)
    h = tl.zeros([D], dtype=tl.float32)
    for t in range(T):
        x = tl.load(x_ptr + (row * T + t) * D + offs)
        h = tl.sigmoid(0.5 * h + x) * 2.0 - 1.0
        tl.store(y_ptr + row * D + offs, h)


@triton.jit
def running_sum_if_last(x_ptr, y_ptr, T, D: tl.constexpr):
    # a linear running sum, written out under `if t == T - 1`
    row = tl.program_id(0)
    offs = tl.arange(0, D)
    acc = tl.zeros([D], dtype=tl.float32)
    for t in range(T):
        x = tl.load(x_ptr + (row * T + t) * D + offs)
        acc += x * x
        if t == T - 1:
            tl.store(y_ptr + row * D + offs, acc)


@triton.jit
def running_sum_every_iter(x_ptr, y_ptr, T, D: tl.constexpr):
    # a linear running sum, written out after every step
    row = tl.program_id(0)
    offs = tl.arange(0, D)
    acc = tl.zeros([D], dtype=tl.float32)
    for t in range(T):
        x = tl.load(x_ptr + (row * T + t) * D + offs)
        acc += x * 3.0
        tl.store(y_ptr + row * D + offs, acc)


@triton.jit
def masked_state_every_iter(x_ptr, y_ptr, T, D, BLOCK: tl.constexpr):
    # the same over a masked row, with the running max of the step's values kept as well
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < D
    h = tl.zeros([BLOCK], dtype=tl.float32)
    for t in range(0, T):
        x = tl.load(x_ptr + (row * T + t) * D + offs, mask=m, other=0.0)
        h = tl.maximum(h * 0.9, x)
        tl.store(y_ptr + row * D + offs, h, mask=m)


@triton.jit
def racing_rows(x_ptr, y_ptr, T, D: tl.constexpr):
    # negative case: every program writes row 0 (two programs write one element)
    row = tl.program_id(0)
    offs = tl.arange(0, D)
    acc = tl.zeros([D], dtype=tl.float32)
    for t in range(T):
        x = tl.load(x_ptr + (row * T + t) * D + offs)
        acc += x
        tl.store(y_ptr + offs, acc)


@triton.jit
def last_value(x_ptr, y_ptr, T, D: tl.constexpr):
    # nothing carried: each step's value overwrites the last one's
    row = tl.program_id(0)
    offs = tl.arange(0, D)
    for t in range(T):
        x = tl.load(x_ptr + (row * T + t) * D + offs)
        tl.store(y_ptr + row * D + offs, x * x * 0.5)


@triton.jit
def nested_rows(x_ptr, y_ptr, S, T, D: tl.constexpr):
    # y[row, s] keeps step T - 1 of the inner loop: the address depends on s, not on t
    row = tl.program_id(0)
    offs = tl.arange(0, D)
    for s in range(S):
        h = tl.zeros([D], dtype=tl.float32)
        for t in range(T):
            x = tl.load(x_ptr + ((row * S + s) * T + t) * D + offs)
            h = h * 0.5 + tl.exp(x * 0.25)
            tl.store(y_ptr + (row * S + s) * D + offs, h)


@triton.jit
def state_while(x_ptr, y_ptr, T, D: tl.constexpr):
    # a `while` loop over the steps, the running state written out each time
    row = tl.program_id(0)
    offs = tl.arange(0, D)
    h = tl.zeros([D], dtype=tl.float32)
    t = 0
    while t < T:
        x = tl.load(x_ptr + (row * T + t) * D + offs)
        h = h * x + 1.0
        tl.store(y_ptr + row * D + offs, h)
        t += 1


@triton.jit
def runtime_step(x_ptr, y_ptr, T, step, D: tl.constexpr):
    # negative case: a loop whose step is a runtime value cannot be visited backwards yet
    row = tl.program_id(0)
    offs = tl.arange(0, D)
    for t in range(0, T, step):
        x = tl.load(x_ptr + (row * T + t) * D + offs)
        tl.store(y_ptr + row * D + offs, x * 2.0)


@triton.jit
def shifted_rows(x_ptr, y_ptr, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    # iteration i writes y[i : i + BLOCK]: neighbouring iterations overlap, each element keeps the
    # value of the last iteration that wrote it.  (With a runtime STEPS kad proves the iterations
    # distinct under `1 >= STEPS` and keeps that as a launch condition: docs/AD.md, "Stores in loops".)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    for i in range(0, STEPS):
        tl.store(y_ptr + i + offs, x * (i + 1.0))


@triton.jit
def scattered_state(x_ptr, idx_ptr, y_ptr, T, D: tl.constexpr):
    # the running state of row `row` written out to row idx[row] every step: programs write distinct
    # rows only when the indices are distinct, which the one-writer check decides on the launch's data
    row = tl.program_id(0)
    offs = tl.arange(0, D)
    dst = tl.load(idx_ptr + row)
    h = tl.zeros([D], dtype=tl.float32)
    for t in range(T):
        x = tl.load(x_ptr + (row * T + t) * D + offs)
        h = h * 0.5 + x * x
        tl.store(y_ptr + dst * D + offs, h)


@triton.jit
def rotary_inplace_loop(q_ptr, cos_ptr, sin_ptr, stride_t, stride_h, H, HALF: tl.constexpr):
    # rotary embedding in place, one program per token, a loop over the heads: the two halves of
    # each head are loaded, rotated and stored back by two tl.store calls (two sites in a loop)
    t = tl.program_id(0)
    offs = tl.arange(0, HALF)
    c = tl.load(cos_ptr + t * HALF + offs)
    s = tl.load(sin_ptr + t * HALF + offs)
    for h in range(H):
        base = q_ptr + t * stride_t + h * stride_h
        x1 = tl.load(base + offs)
        x2 = tl.load(base + HALF + offs)
        tl.store(base + offs, x1 * c - x2 * s)
        tl.store(base + HALF + offs, x2 * c + x1 * s)
