"""Loop traps: linear accumulators (and ones that are not), pointers carried
through loops, zero-trip loops, runtime steps, early returns, while loops,
grid-stride loops and stores inside loops.

Used by tests/python/test_grad_adversarial.py.
"""
import triton
import triton.language as tl


@triton.jit
def chunk_sum_kernel(x_ptr, init_ptr, w_ptr, y_ptr, n_chunks, BLOCK: tl.constexpr):
    # acc starts from a differentiated value and adds n_chunks chunks, each
    # scaled by a loop-invariant weight read once; n_chunks may be 0.
    offs = tl.arange(0, BLOCK)
    acc = tl.load(init_ptr + offs) * 2.0
    w = tl.load(w_ptr + offs)
    for i in range(0, n_chunks):
        acc += tl.load(x_ptr + i * BLOCK + offs) * w
    tl.store(y_ptr + offs, acc * acc)


@triton.jit
def scaled_acc_kernel(x_ptr, y_ptr, n_chunks, BLOCK: tl.constexpr):
    # acc = acc * 0.5 + x is not a linear accumulator: recorded on a tape.
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    for i in range(0, n_chunks):
        acc = acc * 0.5 + tl.load(x_ptr + i * BLOCK + offs)
    tl.store(y_ptr + offs, acc)


@triton.jit
def acc_under_if_kernel(x_ptr, flag_ptr, y_ptr, n_chunks, BLOCK: tl.constexpr):
    # The accumulator is updated only under a runtime if inside the loop.
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    for i in range(0, n_chunks):
        if tl.load(flag_ptr + i) != 0:
            acc += tl.load(x_ptr + i * BLOCK + offs)
    tl.store(y_ptr + offs, acc)


@triton.jit
def acc_masked_where_kernel(x_ptr, flag_ptr, y_ptr, n_chunks, BLOCK: tl.constexpr):
    # The same update written with a where: a linear accumulator.
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    for i in range(0, n_chunks):
        x = tl.load(x_ptr + i * BLOCK + offs)
        acc += tl.where(tl.load(flag_ptr + i) != 0, x * x, 0.0)
    tl.store(y_ptr + offs, acc)


@triton.jit
def carried_pointer_kernel(x_ptr, w_ptr, y_ptr, n_chunks, BLOCK: tl.constexpr):
    # Pointers advanced through the loop (not recomputed from the counter),
    # two accumulators, a scalar one and a tile one.
    offs = tl.arange(0, BLOCK)
    p = x_ptr + offs
    q = w_ptr
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    tot = tl.zeros([], dtype=tl.float64)
    for i in range(0, n_chunks):
        x = tl.load(p)
        w = tl.load(q)
        acc += x * w
        tot += tl.sum(x * x, axis=0)
        p += BLOCK
        q += 1
    tl.store(y_ptr + offs, acc + tot)


@triton.jit
def two_acc_variance_kernel(x_ptr, mean_ptr, var_ptr, n_cols, BLOCK: tl.constexpr):
    # Chunked one-pass variance: sum and sum of squares, combined after.
    row = tl.program_id(0)
    s1 = tl.zeros([BLOCK], dtype=tl.float64)
    s2 = tl.zeros([BLOCK], dtype=tl.float64)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        s1 += x
        s2 -= -x * x
    mean = tl.sum(s1, axis=0) / n_cols
    tl.store(mean_ptr + row, mean)
    tl.store(var_ptr + row, tl.sum(s2, axis=0) / n_cols - mean * mean)


@triton.jit
def runtime_step_kernel(x_ptr, y_ptr, hi, lo, step, BLOCK: tl.constexpr):
    # A runtime (negative) step: the adjoint loop must run the same iterations.
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    for i in range(hi, lo, step):
        x = tl.load(x_ptr + i * BLOCK + offs)
        acc += x * x * (i + 1.0)
    tl.store(y_ptr + offs, acc)


@triton.jit
def early_return_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    # Some programs return in the middle, after computing; the others store
    # one of two results depending on the row.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    s = tl.sum(x * x, axis=0)
    if row >= n_rows:
        return
    if row % 2 == 0:
        tl.store(y_ptr + row * n_cols + cols, x * s, mask=mask)
        return
    tl.store(y_ptr + row * n_cols + cols, x + s, mask=mask)


@triton.jit
def grid_stride_for_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # Persistent grid-stride loop storing in every iteration.
    pid = tl.program_id(0)
    for start in range(pid * BLOCK, n, tl.num_programs(0) * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(y_ptr + offs, tl.sin(x) * x, mask=mask)


@triton.jit
def grid_stride_while_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # The same as a while loop, the arange hoisted out of the loop.
    start = tl.program_id(0) * BLOCK
    lanes = tl.arange(0, BLOCK)
    while start < n:
        offs = start + lanes
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(y_ptr + offs, tl.exp(x) - x, mask=offs < n)
        start += tl.num_programs(0) * BLOCK


@triton.jit
def overlapping_loop_store_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    # Iteration i stores at y[i : i + BLOCK]: the windows overlap, each
    # element keeps the last write (the arange is hoisted out of the loop).
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    for i in range(0, 4):
        tl.store(y_ptr + i + offs, x * (i + 1.0))


@triton.jit
def overlapping_loop_store_2d_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    # The same with a 2-D tile whose row offsets are loop-invariant:
    # iteration i writes rows i and i + 1 of a [5, BLOCK] output.
    r = tl.arange(0, 2)[:, None] * BLOCK
    c = tl.arange(0, BLOCK)[None, :]
    x = tl.load(x_ptr + r + c)
    for i in range(0, 4):
        tl.store(y_ptr + i * BLOCK + r + c, x * (i + 1.0))


@triton.jit
def fixed_address_loop_store_kernel(x_ptr, y_ptr, n_chunks, BLOCK: tl.constexpr):
    # Every iteration stores to the same addresses: y keeps the last write.
    offs = tl.arange(0, BLOCK)
    for i in range(0, n_chunks):
        x = tl.load(x_ptr + i * BLOCK + offs)
        tl.store(y_ptr + offs, x * x)


@triton.jit
def nested_loops_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    # Outer loop over rows stores one value per row; the inner loop
    # accumulates the row in chunks.
    for r in range(0, n_rows):
        acc = tl.zeros([BLOCK], dtype=tl.float64)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + r * n_cols + cols, mask=cols < n_cols, other=float("-inf"))
            acc += tl.exp(x)
        tl.store(y_ptr + r, tl.log(tl.sum(acc, axis=0)))


@triton.jit
def matmul_loop_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                       BK: tl.constexpr):
    # K loop with carried pointers; b is stored [N, K] and transposed.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rn[:, None] * K + rk[None, :]
    acc = tl.zeros([M, N], dtype=tl.float64)
    for k in range(0, K, BK):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, tl.trans(b), acc, out_dtype=tl.float64)
        a_ptrs += BK
        b_ptrs += BK
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def while_counter_acc_kernel(x_ptr, y_ptr, n_chunks, BLOCK: tl.constexpr):
    # An accumulator carried by a while loop: recorded on a tape bounded by n_chunks.
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    i = 0
    while i < n_chunks:
        acc += tl.load(x_ptr + i * BLOCK + offs)
        i += 1
    tl.store(y_ptr + offs, acc)


@triton.jit
def recurrence_kernel(x_ptr, y_ptr, n_chunks, BLOCK: tl.constexpr):
    # h = sigmoid(h + x): a recurrence, recorded on a tape.
    offs = tl.arange(0, BLOCK)
    h = tl.zeros([BLOCK], dtype=tl.float64)
    for i in range(0, n_chunks):
        h = tl.sigmoid(h + tl.load(x_ptr + i * BLOCK + offs))
    tl.store(y_ptr + offs, h)


@triton.jit
def acc_used_in_loop_kernel(x_ptr, y_ptr, z_ptr, n_chunks, BLOCK: tl.constexpr):
    # The accumulator is also read inside the loop (to store a running
    # value): not a linear accumulator, recorded on a tape.
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    for i in range(0, n_chunks):
        acc += tl.load(x_ptr + i * BLOCK + offs)
        tl.store(z_ptr + i * BLOCK + offs, acc)
    tl.store(y_ptr + offs, acc)


@triton.jit
def if_in_loop_kernel(x_ptr, y_ptr, n_chunks, BLOCK: tl.constexpr):
    # A runtime if inside the loop computes the increment; the accumulator
    # itself stays outside the if (a linear accumulator).
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    for i in range(0, n_chunks):
        x = tl.load(x_ptr + i * BLOCK + offs)
        if i % 2 == 0:
            v = tl.exp(x)
        else:
            v = x * x
        acc += v
    tl.store(y_ptr + offs, acc)


@triton.jit
def running_max_mask_kernel(x_ptr, y_ptr, n_chunks, BLOCK: tl.constexpr):
    # A running maximum carried through the loop, used only in a comparison:
    # it is not differentiated (piecewise constant) but must be recomputed
    # in the same order by the backward loop.
    offs = tl.arange(0, BLOCK)
    mx = tl.full([BLOCK], float("-inf"), tl.float64)
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    for i in range(0, n_chunks):
        x = tl.load(x_ptr + i * BLOCK + offs)
        mx = tl.maximum(mx, x)
        acc += tl.where(x >= mx, x * x, x)
    tl.store(y_ptr + offs, acc)


@triton.jit
def overlapping_while_store_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # overlapping_loop_store_kernel as a while loop advancing by 1.
    lanes = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + lanes)
    start = 0
    while start < n:
        tl.store(y_ptr + start + lanes, x * (start + 1.0))
        start += 1
