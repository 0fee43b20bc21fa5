# Kernels that reshape data inside a tile with tl.split / tl.join / tl.interleave, tl.gather,
# tl.flip, tl.sort / tl.topk and tl.histogram (written for kad's tests).
import triton
import triton.language as tl


@triton.jit
def complex_mul(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    # x, y, z: n complex numbers stored interleaved (re, im, re, im, ...)
    pid = tl.program_id(0)
    o = pid * BLOCK + tl.arange(0, BLOCK)
    offs = 2 * o[:, None] + tl.arange(0, 2)[None, :]
    m = offs < 2 * n
    xr, xi = tl.split(tl.load(x_ptr + offs, mask=m, other=0.0))
    yr, yi = tl.load(y_ptr + offs, mask=m, other=0.0).split()
    zr = xr * yr - xi * yi
    zi = xr * yi + xi * yr
    z = tl.interleave(zr, zi)
    zo = 2 * pid * BLOCK + tl.arange(0, 2 * BLOCK)
    tl.store(z_ptr + zo, z, mask=zo < 2 * n)


@triton.jit
def rotary_half(x_ptr, cos_ptr, sin_ptr, y_ptr, rows, D: tl.constexpr, BLOCK: tl.constexpr):
    # rotate-half rotary embedding: the two halves of each row are paired through split/join
    pid = tl.program_id(0)
    r = pid * BLOCK + tl.arange(0, BLOCK)
    cols = tl.arange(0, D)
    m = (r < rows)[:, None]
    x = tl.load(x_ptr + r[:, None] * D + cols[None, :], mask=m, other=0.0)
    h = tl.arange(0, D // 2)
    c = tl.load(cos_ptr + h)
    s = tl.load(sin_ptr + h)
    pairs = tl.permute(tl.reshape(x, (BLOCK, 2, D // 2)), (0, 2, 1))
    x1, x2 = tl.split(pairs)
    o1 = x1 * c[None, :] - x2 * s[None, :]
    o2 = x2 * c[None, :] + x1 * s[None, :]
    y = tl.reshape(tl.permute(tl.join(o1, o2), (0, 2, 1)), (BLOCK, D))
    tl.store(y_ptr + r[:, None] * D + cols[None, :], y, mask=m)


@triton.jit
def embed_gather(table_ptr, ids_ptr, scale_ptr, out_ptr, n, V: tl.constexpr, D: tl.constexpr,
                 BLOCK: tl.constexpr):
    # an embedding lookup inside a tile: the whole (small) table is one tile
    pid = tl.program_id(0)
    r = pid * BLOCK + tl.arange(0, BLOCK)
    cols = tl.arange(0, D)
    table = tl.load(table_ptr + tl.arange(0, V)[:, None] * D + cols[None, :])
    ids = tl.load(ids_ptr + r, mask=r < n, other=0)
    idx = tl.broadcast_to(ids[:, None], (BLOCK, D))
    e = tl.gather(table, idx, 0)
    sc = tl.load(scale_ptr + r, mask=r < n, other=0.0)
    tl.store(out_ptr + r[:, None] * D + cols[None, :], e * sc[:, None], mask=(r < n)[:, None])


@triton.jit
def gather_cols(x_ptr, perm_ptr, y_ptr, N: tl.constexpr, K: tl.constexpr):
    # each row picks K of its N entries (repeats allowed) along axis 1, then squares them
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * N + tl.arange(0, N))
    p = tl.load(perm_ptr + row * K + tl.arange(0, K))
    g = x[None, :].gather(p[None, :], axis=1)
    tl.store(y_ptr + row * K + tl.arange(0, K)[None, :], g * g)


@triton.jit
def flip_mix(x_ptr, w_ptr, y_ptr, N: tl.constexpr, M: tl.constexpr):
    row = tl.program_id(0)
    offs = row * N * M + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :]
    x = tl.load(x_ptr + offs)
    w = tl.load(w_ptr + tl.arange(0, M))
    y = tl.flip(x, 1) * w[None, :] + tl.flip(x, 0) * tl.sin(x)
    tl.store(y_ptr + offs, y)


@triton.jit
def sort_rows(x_ptr, y_ptr, t_ptr, N: tl.constexpr, K: tl.constexpr, DESC: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * N + tl.arange(0, N))
    y = tl.sort(x * x + x, descending=DESC)
    tl.store(y_ptr + row * N + tl.arange(0, N), y * tl.arange(0, N).to(tl.float32))
    t = tl.topk(tl.exp(x), K)
    tl.store(t_ptr + row * K + tl.arange(0, K), t)


@triton.jit
def hist(x_ptr, h_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    o = pid * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + o, mask=o < n, other=0)
    h = tl.histogram(v, BINS, mask=o < n)
    tl.store(h_ptr + pid * BINS + tl.arange(0, BINS), h)
