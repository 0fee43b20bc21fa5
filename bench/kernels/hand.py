"""Hand-written Triton backwards: the "hand" peer of bench/gpu.py.

Each benchmark operation as a torch.autograd.Function whose forward launches a Triton forward
kernel written here (saving what its backward needs: rstd, mean, the output, lse) and whose
backward launches Triton kernels written by hand for that operation:

  swiglu(a, b)            c = silu(a) * b            one fused elementwise kernel for da and db
  geglu(a, b)             c = gelu_tanh(a) * b       the same
  rms_norm(x, w, eps)     rows; dx per row, dw as per-program fp32 partials (each program walks a
                          range of rows) added by a second column-sum kernel
  layer_norm(x, w, b)     the same with dw and db
  softmax(x)              dx = y * (dy - sum(y * dy)) per row, from the saved output
  log_softmax(x)          dx = dy - exp(y) * sum(dy) per row
  cross_entropy(x, lab)   loss per row; dx = dloss * (exp(x - lse) - onehot), a 2-D grid of
                          (row, vocabulary chunk) programs from the saved lse
  mean_dim1(x)            out[b, n] = mean_m x[b, m, n]; dx = dout[b, n] / M broadcast
  matmul_act(a, b)        c = leaky_relu(a @ b); dA = G B^T and dB = A^T G with G = dc * act'(c)
                          formed on load inside the two matmul kernels
  box_filter(x)           3x3 mean, zero padding: self-adjoint, so the backward is the same
                          filter applied to dy (a gather, no atomics)
  linear_attn(q, k, v)    o = (tril(q k^T) * scale) v per chunk of BT steps; one program per
                          chunk computes dq, dk and dv from q, k, v, do

Everything accumulates in fp32 and casts once on store.  Activations are [rows, cols] with a
unit last stride (the Functions make inputs contiguous).  The SM count sizes the partials of the
norms (two programs per SM); on the CPU (Triton's interpreter, tests/python/test_bench_hand.py)
a small fixed count.  Launch options (num_warps) follow the block size: Triton ignores them on
the interpreter.
"""
import functools

import torch
import triton
import triton.language as tl



def _warps(block):
    """num_warps for a 1-D block of `block` elements: about 8 to 16 elements per thread."""
    return max(1, min(16, block // 256))


@functools.lru_cache(maxsize=None)
def _sm_count(device):
    return torch.cuda.get_device_properties(device).multi_processor_count


def _programs(rows, device):
    if device.type == "cuda":
        return max(1, min(rows, 2 * _sm_count(device)))
    return max(1, min(rows, 3))


# ---------------------------------------------------------------- elementwise: SwiGLU, GeGLU


@triton.jit
def _swiglu_fwd(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=m, other=0)
    tl.store(c_ptr + offs, (a * tl.sigmoid(a)).to(b.dtype) * b, mask=m)


@triton.jit
def _swiglu_bwd(a_ptr, b_ptr, dc_ptr, da_ptr, db_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=m, other=0).to(tl.float32)
    dc = tl.load(dc_ptr + offs, mask=m, other=0).to(tl.float32)
    s = tl.sigmoid(a)
    silu = (a * s).to(db_ptr.dtype.element_ty).to(tl.float32)  # the forward rounds silu to b's type
    tl.store(db_ptr + offs, (dc * silu).to(db_ptr.dtype.element_ty), mask=m)
    tl.store(da_ptr + offs, (dc * b * s * (1.0 + a * (1.0 - s))).to(da_ptr.dtype.element_ty), mask=m)


@triton.jit
def _geglu_fwd(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=m, other=0)
    u = 0.7978845608028654 * (a + 0.044715 * a * a * a)
    gelu = a * tl.sigmoid(2.0 * u)  # 0.5 a (1 + tanh u) = a sigmoid(2u)
    tl.store(c_ptr + offs, gelu.to(b.dtype) * b, mask=m)


@triton.jit
def _geglu_bwd(a_ptr, b_ptr, dc_ptr, da_ptr, db_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=m, other=0).to(tl.float32)
    dc = tl.load(dc_ptr + offs, mask=m, other=0).to(tl.float32)
    a2 = a * a
    u = 0.7978845608028654 * (a + 0.044715 * a2 * a)
    half_1pt = tl.sigmoid(2.0 * u)  # (1 + tanh u) / 2
    gelu = (a * half_1pt).to(db_ptr.dtype.element_ty).to(tl.float32)
    # d/da [a (1 + t) / 2] = (1 + t) / 2 + a (1 - t^2) / 2 * du/da, and (1 - t^2) / 2 = 2 h (1 - h)
    dgelu = half_1pt + a * 2.0 * half_1pt * (1.0 - half_1pt) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * a2)
    tl.store(db_ptr + offs, (dc * gelu).to(db_ptr.dtype.element_ty), mask=m)
    tl.store(da_ptr + offs, (dc * b * dgelu).to(da_ptr.dtype.element_ty), mask=m)


def _gated(fwd, bwd):
    class Gated(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            a, b = a.contiguous(), b.contiguous()
            c = torch.empty_like(a)
            n, block = a.numel(), 1024
            fwd[(triton.cdiv(n, block),)](a, b, c, n, BLOCK=block, num_warps=4)
            ctx.save_for_backward(a, b)
            return c

        @staticmethod
        def backward(ctx, dc):
            a, b = ctx.saved_tensors
            dc = dc.contiguous()
            da, db = torch.empty_like(a), torch.empty_like(b)
            n, block = a.numel(), 1024
            bwd[(triton.cdiv(n, block),)](a, b, dc, da, db, n, BLOCK=block, num_warps=4)
            return da, db
    return Gated


_SwiGLU = _gated(_swiglu_fwd, _swiglu_bwd)
_GeGLU = _gated(_geglu_fwd, _geglu_bwd)


def swiglu(a, b):
    return _SwiGLU.apply(a, b)


def geglu(a, b):
    return _GeGLU.apply(a, b)


# ---------------------------------------------------------------- norms: RMSNorm, LayerNorm


@triton.jit
def _rms_fwd(x_ptr, w_ptr, y_ptr, rstd_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=m, other=0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + cols, mask=m, other=0).to(tl.float32)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def _rms_bwd(x_ptr, w_ptr, dy_ptr, rstd_ptr, dx_ptr, dw_part_ptr, M, N, rows_per_prog, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    w = tl.load(w_ptr + cols, mask=m, other=0).to(tl.float32)
    dw = tl.zeros([BLOCK], dtype=tl.float32)
    first = pid * rows_per_prog
    last = tl.minimum(first + rows_per_prog, M)
    for i in range(0, last - first):
        row = first + i  # a tensor (the interpreter's loop counter is a Python int)
        off = row.to(tl.int64) * N + cols
        x = tl.load(x_ptr + off, mask=m, other=0).to(tl.float32)
        dy = tl.load(dy_ptr + off, mask=m, other=0).to(tl.float32)
        rstd = tl.load(rstd_ptr + row)
        xhat = x * rstd
        wdy = w * dy
        c = tl.sum(xhat * wdy, axis=0) / N
        tl.store(dx_ptr + off, ((wdy - xhat * c) * rstd).to(dx_ptr.dtype.element_ty), mask=m)
        dw += dy * xhat
    tl.store(dw_part_ptr + pid * N + cols, dw, mask=m)


@triton.jit
def _colsum(part_ptr, out_ptr, P, N, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[n] = sum_p part[p, n] (fp32 partials, rows in order), cast to out's type."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    cm = cols < N
    acc = tl.zeros([BLOCK_P, BLOCK_N], dtype=tl.float32)
    for p0 in range(0, P, BLOCK_P):
        rows = p0 + tl.arange(0, BLOCK_P)
        acc += tl.load(part_ptr + rows[:, None] * N + cols[None, :], mask=(rows[:, None] < P) & cm[None, :], other=0)
    tl.store(out_ptr + cols, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty), mask=cm)


def _colsum_into(part, out):
    P, N = part.shape
    block_n = 64
    _colsum[(triton.cdiv(N, block_n),)](part, out, P, N, BLOCK_P=32, BLOCK_N=block_n, num_warps=4)


class _RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, eps):
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        rstd = torch.empty(M, dtype=torch.float32, device=x.device)
        block = triton.next_power_of_2(N)
        _rms_fwd[(M,)](x, w, y, rstd, N, eps, BLOCK=block, num_warps=_warps(block))
        ctx.save_for_backward(x, w, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w, rstd = ctx.saved_tensors
        dy = dy.contiguous()
        M, N = x.shape
        P = _programs(M, x.device)
        rows_per = triton.cdiv(M, P)
        P = triton.cdiv(M, rows_per)
        dx = torch.empty_like(x)
        part = torch.empty(P, N, dtype=torch.float32, device=x.device)
        block = triton.next_power_of_2(N)
        _rms_bwd[(P,)](x, w, dy, rstd, dx, part, M, N, rows_per, BLOCK=block, num_warps=_warps(block))
        dw = torch.empty_like(w)
        _colsum_into(part, dw)
        return dx, dw, None


@triton.jit
def _ln_fwd(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=m, other=0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    d = tl.where(m, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(d * d, axis=0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + cols, mask=m, other=0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=m, other=0).to(tl.float32)
    tl.store(y_ptr + row * N + cols, (d * rstd * w + b).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def _ln_bwd(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr, M, N, rows_per_prog,
            BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    w = tl.load(w_ptr + cols, mask=m, other=0).to(tl.float32)
    dw = tl.zeros([BLOCK], dtype=tl.float32)
    db = tl.zeros([BLOCK], dtype=tl.float32)
    first = pid * rows_per_prog
    last = tl.minimum(first + rows_per_prog, M)
    for i in range(0, last - first):
        row = first + i  # a tensor (the interpreter's loop counter is a Python int)
        off = row.to(tl.int64) * N + cols
        x = tl.load(x_ptr + off, mask=m, other=0).to(tl.float32)
        dy = tl.load(dy_ptr + off, mask=m, other=0).to(tl.float32)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        xhat = tl.where(m, (x - mean) * rstd, 0.0)
        wdy = w * dy
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        tl.store(dx_ptr + off, ((wdy - (xhat * c1 + c2)) * rstd).to(dx_ptr.dtype.element_ty), mask=m)
        dw += dy * xhat
        db += dy
    tl.store(dw_part_ptr + pid * N + cols, dw, mask=m)
    tl.store(db_part_ptr + pid * N + cols, db, mask=m)


class _LayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, eps):
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        mean = torch.empty(M, dtype=torch.float32, device=x.device)
        rstd = torch.empty(M, dtype=torch.float32, device=x.device)
        block = triton.next_power_of_2(N)
        _ln_fwd[(M,)](x, w, b, y, mean, rstd, N, eps, BLOCK=block, num_warps=_warps(block))
        ctx.save_for_backward(x, w, mean, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w, mean, rstd = ctx.saved_tensors
        dy = dy.contiguous()
        M, N = x.shape
        P = _programs(M, x.device)
        rows_per = triton.cdiv(M, P)
        P = triton.cdiv(M, rows_per)
        dx = torch.empty_like(x)
        part = torch.empty(2, P, N, dtype=torch.float32, device=x.device)
        block = triton.next_power_of_2(N)
        _ln_bwd[(P,)](x, w, dy, mean, rstd, dx, part[0], part[1], M, N, rows_per, BLOCK=block,
                      num_warps=_warps(block))
        dw, db = torch.empty_like(w), torch.empty_like(w)
        _colsum_into(part[0], dw)
        _colsum_into(part[1], db)
        return dx, dw, db, None


def rms_norm(x, w, eps=1e-6):
    return _RMSNorm.apply(x, w, eps)


def layer_norm(x, w, b, eps=1e-5):
    return _LayerNorm.apply(x, w, b, eps)


# ---------------------------------------------------------------- softmax, log-softmax


@triton.jit
def _softmax_fwd(x_ptr, y_ptr, N, LOG: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=m, other=float("-inf")).to(tl.float32)
    z = x - tl.max(x, axis=0)
    e = tl.exp(z)
    s = tl.sum(e, axis=0)
    if LOG:
        y = z - tl.log(s)
    else:
        y = e / s
    tl.store(y_ptr + row * N + cols, y.to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def _softmax_bwd(y_ptr, dy_ptr, dx_ptr, N, LOG: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    y = tl.load(y_ptr + row * N + cols, mask=m, other=0).to(tl.float32)
    dy = tl.load(dy_ptr + row * N + cols, mask=m, other=0).to(tl.float32)
    if LOG:
        dx = dy - tl.exp(y) * tl.sum(dy, axis=0)
    else:
        dx = y * (dy - tl.sum(y * dy, axis=0))
    tl.store(dx_ptr + row * N + cols, dx.to(dx_ptr.dtype.element_ty), mask=m)


def _softmax_fn(log):
    class Softmax(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x = x.contiguous()
            M, N = x.shape
            y = torch.empty_like(x)
            block = triton.next_power_of_2(N)
            _softmax_fwd[(M,)](x, y, N, LOG=log, BLOCK=block, num_warps=_warps(block))
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, dy):
            (y,) = ctx.saved_tensors
            dy = dy.contiguous()
            M, N = y.shape
            dx = torch.empty_like(y)
            block = triton.next_power_of_2(N)
            _softmax_bwd[(M,)](y, dy, dx, N, LOG=log, BLOCK=block, num_warps=_warps(block))
            return dx
    return Softmax


_Softmax = _softmax_fn(False)
_LogSoftmax = _softmax_fn(True)


def softmax(x):
    return _Softmax.apply(x)


def log_softmax(x):
    return _LogSoftmax.apply(x)


# ---------------------------------------------------------------- cross-entropy over a large vocabulary


@triton.jit
def _ce_fwd(x_ptr, labels_ptr, loss_ptr, lse_ptr, V, ignore_index, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = x_ptr + row * V
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # lanes that have seen only -inf keep a zero sum
        s = tl.where(m_new == float("-inf"), 0.0, s * tl.exp(m - m_new) + tl.exp(x - m_new))
        m = m_new
    mx = tl.max(m, axis=0)
    lse = mx + tl.log(tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - mx)), axis=0))
    tl.store(lse_ptr + row, lse)
    label = tl.load(labels_ptr + row)
    if label == ignore_index:
        tl.store(loss_ptr + row, 0.0)
    else:
        tl.store(loss_ptr + row, lse - tl.load(base + label).to(tl.float32))


@triton.jit
def _ce_bwd(x_ptr, labels_ptr, lse_ptr, dloss_ptr, dx_ptr, V, ignore_index, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = cols < V
    label = tl.load(labels_ptr + row)
    g = tl.load(dloss_ptr + row).to(tl.float32)
    g = tl.where(label == ignore_index, 0.0, g)
    lse = tl.load(lse_ptr + row)
    x = tl.load(x_ptr + row * V + cols, mask=m, other=0).to(tl.float32)
    dx = g * (tl.exp(x - lse) - tl.where(cols == label, 1.0, 0.0))
    tl.store(dx_ptr + row * V + cols, dx.to(dx_ptr.dtype.element_ty), mask=m)


class _CrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, labels, ignore_index):
        x = x.contiguous()
        R, V = x.shape
        loss = torch.empty(R, dtype=torch.float32, device=x.device)
        lse = torch.empty(R, dtype=torch.float32, device=x.device)
        _ce_fwd[(R,)](x, labels, loss, lse, V, ignore_index, BLOCK=4096, num_warps=16)
        ctx.save_for_backward(x, labels, lse)
        ctx.ignore_index = ignore_index
        return loss

    @staticmethod
    def backward(ctx, dloss):
        x, labels, lse = ctx.saved_tensors
        R, V = x.shape
        dx = torch.empty_like(x)
        block = 4096
        _ce_bwd[(R, triton.cdiv(V, block))](x, labels, lse, dloss.contiguous(), dx, V, ctx.ignore_index,
                                           BLOCK=block, num_warps=_warps(block))
        return dx, None, None


def cross_entropy(x, labels, ignore_index=-100):
    """Per-row loss (fp32): logsumexp(x[r]) - x[r, labels[r]], 0 where labels[r] == ignore_index."""
    return _CrossEntropy.apply(x, labels, ignore_index)


# ---------------------------------------------------------------- mean over the middle dimension


@triton.jit
def _mean_dim1_fwd(x_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    cm = cols < N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        rows = m0 + tl.arange(0, BLOCK_M)
        acc += tl.load(x_ptr + b * M * N + rows[:, None] * N + cols[None, :],
                       mask=(rows[:, None] < M) & cm[None, :], other=0).to(tl.float32)
    tl.store(out_ptr + b * N + cols, tl.sum(acc, axis=0) / M, mask=cm)


@triton.jit
def _mean_dim1_bwd(dout_ptr, dx_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    rows = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(2) * BLOCK_N + tl.arange(0, BLOCK_N)
    cm = cols < N
    g = tl.load(dout_ptr + b * N + cols, mask=cm, other=0).to(tl.float32) / M
    tile = tl.broadcast_to(g[None, :], [BLOCK_M, BLOCK_N])
    tl.store(dx_ptr + b * M * N + rows[:, None] * N + cols[None, :], tile.to(dx_ptr.dtype.element_ty),
             mask=(rows[:, None] < M) & cm[None, :])


class _MeanDim1(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        B, M, N = x.shape
        out = torch.empty(B, N, dtype=torch.float32, device=x.device)
        _mean_dim1_fwd[(B, triton.cdiv(N, 128))](x, out, M, N, BLOCK_M=16, BLOCK_N=128, num_warps=4)
        ctx.shape, ctx.dtype = (B, M, N), x.dtype
        return out

    @staticmethod
    def backward(ctx, dout):
        B, M, N = ctx.shape
        dx = torch.empty(B, M, N, dtype=ctx.dtype, device=dout.device)
        bm, bn = 16, 256
        _mean_dim1_bwd[(B, triton.cdiv(M, bm), triton.cdiv(N, bn))](dout.contiguous(), dx, M, N, BLOCK_M=bm,
                                                                      BLOCK_N=bn, num_warps=8)
        return dx


def mean_dim1(x):
    """out[b, n] = mean over m of x[b, m, n], in fp32."""
    return _MeanDim1.apply(x)


# ---------------------------------------------------------------- matmul with a fused leaky ReLU


@triton.jit
def _mm(x_ptr, y_ptr, out_ptr, c_ptr, M, N, K,
        sxm, sxk, syk, syn, som, son, scm, scn,
        GRAD: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
        GROUP_M: tl.constexpr):
    """out = X @ Y with grouped tile order, fp32 accumulation.  GRAD = 0: out = leaky_relu(X @ Y)
    (the forward).  GRAD = 1: X is dC, multiplied on load by leaky_relu'(C) (C read through
    scm, scn with X's indexing): dA = G @ B^T.  GRAD = 2: Y is dC, the same on load: dB = A^T @ G."""
    pid = tl.program_id(0)
    npm, npn = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * npn
    first_m = (pid // per_group) * GROUP_M
    gm = min(npm - first_m, GROUP_M)
    pm = first_m + (pid % per_group) % gm
    pn = (pid % per_group) // gm
    rm = pm * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pn * BLOCK_N + tl.arange(0, BLOCK_N)
    mm, nm = rm < M, rn < N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        km = rk < K
        xmask = mm[:, None] & km[None, :]
        ymask = km[:, None] & nm[None, :]
        x = tl.load(x_ptr + rm[:, None] * sxm + rk[None, :] * sxk, mask=xmask, other=0)
        y = tl.load(y_ptr + rk[:, None] * syk + rn[None, :] * syn, mask=ymask, other=0)
        if GRAD == 1:
            c = tl.load(c_ptr + rm[:, None] * scm + rk[None, :] * scn, mask=xmask, other=0)
            x = tl.where(c >= 0, x, x * 0.01).to(x.dtype)
        if GRAD == 2:
            c = tl.load(c_ptr + rk[:, None] * scm + rn[None, :] * scn, mask=ymask, other=0)
            y = tl.where(c >= 0, y, y * 0.01).to(y.dtype)
        acc = tl.dot(x, y, acc)
    if GRAD == 0:
        acc = tl.where(acc >= 0, acc, 0.01 * acc)
    tl.store(out_ptr + rm[:, None] * som + rn[None, :] * son, acc.to(out_ptr.dtype.element_ty),
             mask=mm[:, None] & nm[None, :])


def _mm_launch(x, y, out, c, grad, M, N, K, sx, sy, sc):
    if x.is_cuda:
        bm, bn, bk, warps, stages = 128, 128, 32 if x.element_size() == 4 else 64, 8, 3
    else:
        bm, bn, bk, warps, stages = 16, 16, 16, 4, 1
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    _mm[grid](x, y, out, c, M, N, K, sx[0], sx[1], sy[0], sy[1], out.stride(0), out.stride(1), sc[0], sc[1],
              GRAD=grad, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages)


class _MatmulAct(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty(M, N, dtype=a.dtype, device=a.device)
        _mm_launch(a, b, c, c, 0, M, N, K, a.stride(), b.stride(), (0, 0))
        ctx.save_for_backward(a, b, c)
        return c

    @staticmethod
    def backward(ctx, dc):
        a, b, c = ctx.saved_tensors
        M, K = a.shape
        N = b.shape[1]
        da, db = torch.empty_like(a), torch.empty_like(b)
        # dA[M, K] = G[M, N] @ B^T[N, K]; G = dc * act'(c) on load (c indexed like dc)
        _mm_launch(dc, b.t(), da, c, 1, M, K, N, dc.stride(), (b.stride(1), b.stride(0)), c.stride())
        # dB[K, N] = A^T[K, M] @ G[M, N]
        _mm_launch(a.t(), dc, db, c, 2, K, N, M, (a.stride(1), a.stride(0)), dc.stride(), c.stride())
        return da, db


def matmul_act(a, b):
    """leaky_relu(a @ b, 0.01), in a's dtype (fp32 inputs: tl.dot's default TF32)."""
    return _MatmulAct.apply(a, b)


# ---------------------------------------------------------------- 3x3 box filter


@triton.jit
def _box3(src_ptr, dst_ptr, H, W, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_H + tl.arange(0, BLOCK_H)
    cols = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)
    acc = tl.zeros([BLOCK_H, BLOCK_W], dtype=tl.float32)
    for dr in tl.static_range(-1, 2):
        for dc in tl.static_range(-1, 2):
            r = rows[:, None] + dr
            c = cols[None, :] + dc
            acc += tl.load(src_ptr + r.to(tl.int64) * W + c, mask=(r >= 0) & (r < H) & (c >= 0) & (c < W),
                           other=0).to(tl.float32)
    tl.store(dst_ptr + rows[:, None].to(tl.int64) * W + cols[None, :], (acc / 9.0).to(dst_ptr.dtype.element_ty),
             mask=(rows[:, None] < H) & (cols[None, :] < W))


def _box_launch(src, dst):
    H, W = src.shape
    bh, bw = (32, 64) if src.is_cuda else (8, 16)
    _box3[(triton.cdiv(H, bh), triton.cdiv(W, bw))](src, dst, H, W, BLOCK_H=bh, BLOCK_W=bw, num_warps=4)


class _Box(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _box_launch(x, y)
        return y

    @staticmethod
    def backward(ctx, dy):
        dx = torch.empty_like(dy, memory_format=torch.contiguous_format)
        _box_launch(dy.contiguous(), dx)  # the zero-padded 3x3 mean is its own adjoint
        return dx


def box_filter(x):
    return _Box.apply(x)


# ---------------------------------------------------------------- chunked linear attention (intra-chunk)


@triton.jit
def _la_fwd(q_ptr, k_ptr, v_ptr, o_ptr, scale, T, BT: tl.constexpr, D: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1).to(tl.int64)
    t = i_t * BT + tl.arange(0, BT)
    d = tl.arange(0, D)
    tm = t < T
    off = i_bh * T * D + t[:, None] * D + d[None, :]
    q = tl.load(q_ptr + off, mask=tm[:, None], other=0)
    k = tl.load(k_ptr + off, mask=tm[:, None], other=0)
    v = tl.load(v_ptr + off, mask=tm[:, None], other=0)
    s = tl.where(t[:, None] >= t[None, :], tl.dot(q, tl.trans(k)) * scale, 0.0)
    o = tl.dot(s.to(v.dtype), v)
    tl.store(o_ptr + off, o.to(o_ptr.dtype.element_ty), mask=tm[:, None])


@triton.jit
def _la_bwd(q_ptr, k_ptr, v_ptr, do_ptr, dq_ptr, dk_ptr, dv_ptr, scale, T, BT: tl.constexpr, D: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1).to(tl.int64)
    t = i_t * BT + tl.arange(0, BT)
    d = tl.arange(0, D)
    tm = t < T
    off = i_bh * T * D + t[:, None] * D + d[None, :]
    q = tl.load(q_ptr + off, mask=tm[:, None], other=0)
    k = tl.load(k_ptr + off, mask=tm[:, None], other=0)
    v = tl.load(v_ptr + off, mask=tm[:, None], other=0)
    do = tl.load(do_ptr + off, mask=tm[:, None], other=0)
    causal = t[:, None] >= t[None, :]
    s = tl.where(causal, tl.dot(q, tl.trans(k)) * scale, 0.0).to(v.dtype)  # as the forward rounds it
    dv = tl.dot(tl.trans(s), do)
    ds = tl.where(causal, tl.dot(do, tl.trans(v)) * scale, 0.0).to(q.dtype)
    dq = tl.dot(ds, k)
    dk = tl.dot(tl.trans(ds), q)
    tl.store(dq_ptr + off, dq.to(dq_ptr.dtype.element_ty), mask=tm[:, None])
    tl.store(dk_ptr + off, dk.to(dk_ptr.dtype.element_ty), mask=tm[:, None])
    tl.store(dv_ptr + off, dv.to(dv_ptr.dtype.element_ty), mask=tm[:, None])


class _LinearAttn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, scale, bt):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        BH, T, D = q.shape
        o = torch.empty_like(v)
        _la_fwd[(triton.cdiv(T, bt), BH)](q, k, v, o, scale, T, BT=bt, D=D, num_warps=4)
        ctx.save_for_backward(q, k, v)
        ctx.scale, ctx.bt = scale, bt
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v = ctx.saved_tensors
        BH, T, D = q.shape
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        _la_bwd[(triton.cdiv(T, ctx.bt), BH)](q, k, v, do.contiguous(), dq, dk, dv, ctx.scale, T, BT=ctx.bt, D=D,
                                              num_warps=4)
        return dq, dk, dv, None, None


def linear_attn(q, k, v, scale, chunk=64):
    """o = (tril(q k^T) * scale) v within each chunk of `chunk` steps; q, k, v: [BH, T, D]."""
    return _LinearAttn.apply(q, k, v, scale, chunk)
