"""Memory traps: aliasing loads, masks, gathers, shared weights, scans, dots,
reductions with keep_dims, masked stores, and stores kad must refuse.

Used by tests/python/test_grad_adversarial.py.
"""
import triton
import triton.language as tl


@triton.jit
def two_masks_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # The same pointer under two masks and two `other`s, and the same loads
    # repeated (one atomic per pointer and mask must still add all of them).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    p = x_ptr + offs
    a = tl.load(p, mask=offs < n)
    b = tl.load(p, mask=offs < n - 3, other=2.0)
    c = tl.load(p, mask=offs < n, other=-1.0)
    d = tl.load(p, mask=offs < n)
    tl.store(y_ptr + offs, a * b + c * c * d, mask=offs < n)


@triton.jit
def other_from_input_kernel(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # `other` is a differentiated value: masked-off lanes carry w's gradient.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    w = tl.load(w_ptr)
    v = tl.load(x_ptr + offs, mask=offs < n - 5, other=w * w)
    tl.store(y_ptr + offs, v * v, mask=offs < n)


@triton.jit
def alias_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # One buffer through three pointer expressions that alias, one shifted.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + offs, mask=mask)
    b = tl.load(x_ptr + offs + 0, mask=mask)
    c = tl.load(x_ptr + (offs + 1) - 1, mask=mask)
    nxt = tl.load(x_ptr + offs + 1, mask=offs + 1 < n, other=0.0)
    tl.store(y_ptr + offs, a * b * c + nxt * a, mask=mask)


@triton.jit
def shared_weight_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # A scalar weight and bias read by every program and broadcast to every
    # lane: their gradients sum over all programs (colliding atomics).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(w_ptr)
    b = tl.load(b_ptr + offs * 0)  # the same address in every lane, as a tile
    tl.store(y_ptr + offs, tl.exp(w) * x * x + b * w, mask=mask)


@triton.jit
def gather_kernel(idx_ptr, w_ptr, x_ptr, y_ptr, n, D: tl.constexpr, BLOCK: tl.constexpr):
    # Embedding-style gather with repeated indices: rows of w are read by
    # several lanes and several programs.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    cols = tl.arange(0, D)
    v = tl.load(w_ptr + idx[:, None] * D + cols[None, :], mask=mask[:, None])
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs[:, None] * D + cols[None, :], v * x[:, None] + v * v, mask=mask[:, None])


@triton.jit
def cumsum_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    # Scans both ways over a masked row, one of them of a product.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n + cols, tl.cumsum(x * x, axis=0, reverse=True), mask=mask)
    tl.store(z_ptr + row * n + cols, tl.cumsum(x, axis=0) * x, mask=mask)


@triton.jit
def cumsum_2d_kernel(x_ptr, y_ptr, R: tl.constexpr, C: tl.constexpr):
    # Reverse scan along axis 1 and forward scan along axis 0 of a 2-D tile.
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    y = tl.cumsum(x, axis=1, reverse=True) + tl.cumsum(x * x, axis=0)
    tl.store(y_ptr + offs, y)


@triton.jit
def dot_trans_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # c = a^T @ b^T + (a^T @ a) @ b^T-free terms: operands loaded row-major
    # and transposed in registers, a used twice.
    am = tl.arange(0, M)
    an = tl.arange(0, N)
    ak = tl.arange(0, K)
    a = tl.load(a_ptr + ak[:, None] * M + am[None, :])  # [K, M]
    b = tl.load(b_ptr + an[:, None] * K + ak[None, :])  # [N, K]
    c = tl.dot(tl.trans(a), tl.trans(b))  # [M, N]
    g = tl.dot(tl.trans(a), a)  # [M, M]
    c = tl.dot(g, c, c, out_dtype=tl.float64)
    tl.store(c_ptr + am[:, None] * N + an[None, :], c)


@triton.jit
def dot_3d_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # Batched 3-D dot.
    ib = tl.arange(0, B)[:, None, None]
    a = tl.load(a_ptr + ib * M * K + tl.arange(0, M)[None, :, None] * K + tl.arange(0, K)[None, None, :])
    b = tl.load(b_ptr + ib * K * N + tl.arange(0, K)[None, :, None] * N + tl.arange(0, N)[None, None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + ib * M * N + tl.arange(0, M)[None, :, None] * N + tl.arange(0, N)[None, None, :], c)


@triton.jit
def keep_dims_kernel(x_ptr, y_ptr, s_ptr, R: tl.constexpr, C: tl.constexpr):
    # Reductions with keep_dims, broadcast back; a reduction over all axes
    # (axis=None) of a 2-D tile; a permute.
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    mean = tl.sum(x, axis=1, keep_dims=True) / C
    col = tl.sum(x * x, axis=0, keep_dims=True)
    y = (x - mean) * col + tl.sum(x) + tl.sum(x, keep_dims=True)
    tl.store(y_ptr + offs, y)
    t = tl.permute(x, (1, 0))
    tl.store(s_ptr + tl.arange(0, C)[:, None] * R + tl.arange(0, R)[None, :], t * mean.reshape(1, R))


@triton.jit
def masked_store_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # The store skips odd lanes: their x gets no gradient through y.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x * x, mask=(offs < n) & (offs % 2 == 0))


@triton.jit
def output_loaded_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # y is stored, then read back: must be refused.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, y * x, mask=mask)


@triton.jit
def store_twice_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # The same addresses stored twice: the last store wins.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x, mask=mask)
    tl.store(y_ptr + offs, x * x, mask=mask)


@triton.jit
def store_partial_overwrite_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # Three stores through one pointer, the later ones masked: each lane
    # keeps the last store whose mask covers it.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    p = y_ptr + offs
    tl.store(p, x, mask=mask)
    tl.store(p, x * x, mask=mask & (offs % 3 == 0))
    tl.store(p, tl.exp(x), mask=mask & (offs % 5 == 0))


@triton.jit
def store_twice_alias_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # Two stores to the same addresses through different pointer expressions.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x, mask=mask)
    tl.store(y_ptr + (offs + 1) - 1, x * x, mask=mask)


@triton.jit
def store_shifted_overlap_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # The second store is shifted by one element: partial overlap.
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x, mask=mask)
    tl.store(y_ptr + offs + 1, x * x, mask=mask)


@triton.jit
def store_then_if_store_kernel(x_ptr, y_ptr, n, flag, BLOCK: tl.constexpr):
    # A store, then a store through the same pointer under a runtime if.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    p = y_ptr + offs
    tl.store(p, x, mask=mask)
    if flag > 0:
        tl.store(p, x * x, mask=mask)


@triton.jit
def same_address_lanes_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # Every lane stores the same value at the same address (y_ptr + 0): the
    # forward is well defined (one element, written with one value).
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    s = tl.sum(x * x, axis=0)
    tl.store(y_ptr + offs * 0, s + offs * 0.0)


@triton.jit
def scalar_store_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # A scalar pointer broadcast to every lane: must be refused.
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    s = tl.sum(x * x, axis=0)
    tl.store(tl.broadcast_to(y_ptr, [BLOCK]), s + x * 0.0)


@triton.jit
def zeros_address_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # As same_address_lanes_kernel, the offsets spelled tl.zeros.
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    s = tl.sum(x * x, axis=0)
    tl.store(y_ptr + tl.zeros([BLOCK], dtype=tl.int32), s + x * 0.0)


@triton.jit
def atomic_out_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Every program adds its partial sum of squares into out[0] and
    # its values into out[1 + offs % 4]: colliding atomics on an output.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x * x, axis=0))
    tl.atomic_add(out_ptr + 1 + offs % 4, x, mask=mask)


@triton.jit
def shapes_kernel(x_ptr, y_ptr, z_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    # 3-D tile: a permutation that is not its own inverse, reshapes, ravel,
    # expand_dims, 3-D reductions with and without keep_dims, and the
    # softmax builtin over rows.
    ia = tl.arange(0, A)[:, None, None]
    ib = tl.arange(0, B)[None, :, None]
    ic = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + ia * B * C + ib * C + ic)  # [A, B, C]
    p = tl.permute(x, (1, 2, 0))  # [B, C, A]
    r = tl.reshape(p, (B, C * A))
    s = tl.softmax(r, dim=1, keep_dims=True)
    m = tl.max(x, axis=1)  # [A, C]
    t = tl.sum(x * x, axis=2, keep_dims=True)  # [A, B, 1]
    u = tl.expand_dims(m, 1) * t + x  # [A, B, C]
    tl.store(y_ptr + tl.arange(0, B * C * A), tl.ravel(s) * tl.ravel(tl.permute(u, (1, 2, 0))))
    tl.store(z_ptr + ia * B * C + ib * C + ic, u)


@triton.jit
def data_mask_store_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # The store's mask depends on the data: lanes with x <= 0 keep y's old value.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-1.0)
    tl.store(y_ptr + offs, x * x * x, mask=x > 0)
