"""First writers: input gradients added at several private sites (docs/AD.md, "First writers").

An input read at several sites, each program's elements its own (LayerNorm reads its row in three
chunk loops), gets its gradient by read-modify-writes of d_x.  When kad proves that the site the
backward reaches first stores every element a later site reads (the same address and mask, loops
of the same bounds), that site stores without reading, and the launcher zero-fills d_x only when
those stores do not cover the view it is given.  A wrong proof leaves garbage in a gradient: every
test fills the gradient buffer (padding included) with NaN, runs the emitted launcher (Triton's CPU
interpreter; KAD_GRAD_TEST_DEVICE=cuda: a GPU) and compares with PyTorch autograd of the same math
in float64.  Each case also says whether the first site must store without reading and whether
the zero-fill must be skipped, so that a lost proof fails as well as a wrong one.
"""
import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

import triton_cpu  # noqa: E402
from test_grad_cover import _close, _nan_view, _run as _cover_run  # noqa: E402

DEVICE = triton_cpu.device_from_env("KAD_GRAD_TEST_DEVICE", "KAD_EMIT_TEST_DEVICE")
HERE = __file__
FIRST = "stores its gradient without reading"


def _first(src):
    """Does the module's header say that the first site stores without reading?"""
    return FIRST in " ".join(src.replace("#", " ").split())


@pytest.fixture(scope="module", autouse=True)
def _triton_interpreter():
    with triton_cpu.interpreter(DEVICE):
        yield


@triton.jit
def norm3(x_ptr, y_ptr, n_cols, stride, sc, BLOCK: tl.constexpr):
    """LayerNorm without affine, the row swept in chunks three times (three load sites)."""
    row = tl.program_id(0)
    base = x_ptr + row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(base + cols * sc, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc += x
    mean = tl.sum(acc, axis=0) / n_cols
    acc2 = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(base + cols * sc, mask=cols < n_cols, other=0.0).to(tl.float32)
        dev = tl.where(cols < n_cols, x - mean, 0.0)
        acc2 += dev * dev
    rstd = 1.0 / tl.sqrt(tl.sum(acc2, axis=0) / n_cols + 1e-5)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        m = cols < n_cols
        x = tl.load(base + cols * sc, mask=m, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * n_cols + cols, ((x - mean) * rstd).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def two(x_ptr, y_ptr, n_cols, n_last, flag, stride, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """Two loops over a row: s = sum(x*x) over n_cols (the earlier site), then y = v * s (the last
    site, which the backward reaches first).  MODE varies the last site:
    0: the same loop and mask; 1: mask cols < n_last (it stores fewer elements than the earlier
    site adds into); 2: loop bound n_last (fewer chunks); 3: the earlier site under a runtime `if`;
    4: the last site under a runtime `if`; 5: the last site in a nested loop reading each chunk
    twice (not one write per element); 6: both sites in one loop."""
    row = tl.program_id(0)
    base = x_ptr + row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    if MODE != 6:
        for off in range(0, n_cols, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            if MODE == 3:
                if flag > 0:
                    x = tl.load(base + cols, mask=cols < n_cols, other=0.0)
                    acc += x * x
            else:
                x = tl.load(base + cols, mask=cols < n_cols, other=0.0)
                acc += x * x
    s = tl.sum(acc, axis=0) + 1.0
    ub = n_cols
    if MODE == 2:
        ub = n_last
    lim = n_cols
    if MODE == 1:
        lim = n_last
    for off in range(0, ub, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        m = cols < lim
        if MODE == 4:
            if flag > 0:
                x = tl.load(base + cols, mask=m, other=0.0)
                tl.store(y_ptr + row * n_cols + cols, x * s, mask=m)
        elif MODE == 5:
            v = tl.zeros([BLOCK], dtype=tl.float32)
            for rep in range(2):
                v += tl.load(base + cols, mask=m, other=0.0) * (rep + 1)
            tl.store(y_ptr + row * n_cols + cols, v * s, mask=m)
        elif MODE == 6:
            x = tl.load(base + cols, mask=m, other=0.0)
            x2 = tl.load(base + cols, mask=cols < n_last, other=0.0)
            tl.store(y_ptr + row * n_cols + cols, x * s + x2 * x2, mask=m)
        else:
            x = tl.load(base + cols, mask=m, other=0.0)
            tl.store(y_ptr + row * n_cols + cols, x * s, mask=m)


def _run(tmp_path, kernel, sig, wrt, out, grid, args, douts, dins):
    """Runs launch_<kernel>_bwd of this file's kernel; returns the names of the gradients it
    zero-filled, and its source (test_grad_cover's runner)."""
    return _cover_run(tmp_path, kernel, sig, wrt, out, grid, args, douts, dins, file=HERE)


def _norm_ref(x, eps=1e-5):
    mean = x.mean(1, keepdim=True)
    var = ((x - mean) ** 2).mean(1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps)


# ------------------------------------------------------------------ LayerNorm-like, three sites


@pytest.mark.parametrize("C,stride,view,covered", [
    (100, 100, "rows", True),       # dense rows: the first site writes every element
    (100, 112, "slice", True),      # a padded buffer, the view [R, C] of it
    (100, 112, "padded", False),    # the view is the padded buffer: padding never written
    (64, 64, "rows", True),         # no masked tail
])
def test_norm3(tmp_path, C, stride, view, covered):
    R, BLOCK = 5, 32
    g = torch.Generator().manual_seed(11)
    base64 = torch.randn(R, stride, generator=g, dtype=torch.float64)
    dy64 = torch.randn(R, C, generator=g, dtype=torch.float64)
    x = base64.to(torch.float32).to(DEVICE)
    shape = (R, stride) if view == "padded" else (R, C)
    d = _nan_view(shape, (stride, 1))
    filled, src = _run(tmp_path, "norm3", f"x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,stride=i32,sc=1,BLOCK={BLOCK}",
                       "x_ptr", "y_ptr", (R,), [x, torch.zeros(R, C, device=DEVICE), C, stride, 1],
                       [dy64.to(torch.float32).to(DEVICE)], {"x_ptr": d})
    assert _first(src), src
    assert ("x_ptr" not in filled) == covered, src
    xr = x.cpu().to(torch.float64).requires_grad_()
    (_norm_ref(xr[:, :C]) * dy64).sum().backward()
    _close(d, xr.grad if view == "padded" else xr.grad[:, :C], "d_x", src)


def test_norm3_bf16(tmp_path):
    """bf16: the first site's store rounds once, as the read-modify-write of zero did."""
    R, C, BLOCK = 4, 80, 32
    g = torch.Generator().manual_seed(12)
    x64 = torch.randn(R, C, generator=g, dtype=torch.float64)
    dy64 = torch.randn(R, C, generator=g, dtype=torch.float64)
    x = x64.to(torch.bfloat16).to(DEVICE)
    d = _nan_view((R, C), (C, 1), torch.bfloat16)
    filled, src = _run(tmp_path, "norm3", f"x_ptr=*bf16,y_ptr=*bf16,n_cols=i32,stride=i32,sc=1,BLOCK={BLOCK}",
                       "x_ptr", "y_ptr", (R,), [x, torch.zeros(R, C, dtype=torch.bfloat16, device=DEVICE), C, C, 1],
                       [dy64.to(torch.bfloat16).to(DEVICE)], {"x_ptr": d})
    assert _first(src) and not filled, src
    xr = x.cpu().to(torch.float64).requires_grad_()
    (_norm_ref(xr) * dy64.to(torch.bfloat16).to(torch.float64)).sum().backward()
    _close(d, xr.grad, "d_x", src, rtol=5e-2, atol=5e-2)


def test_norm3_transposed(tmp_path):
    """x a transposed view (row stride 1, column stride R): with a runtime column stride the sites
    get rows of partials (site rows) under a condition this launch fails, so atomics add into one
    row, which the sum kernel stores into d_x (dense: no zero-fill).  No first writer there."""
    R, C, BLOCK = 6, 40, 16
    g = torch.Generator().manual_seed(13)
    x64 = torch.randn(R, C, generator=g, dtype=torch.float64)
    dy64 = torch.randn(R, C, generator=g, dtype=torch.float64)
    x = x64.t().contiguous().to(torch.float32).to(DEVICE).t()
    d = _nan_view((R, C), x.stride())
    filled, src = _run(tmp_path, "norm3", f"x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,stride=i32,sc=i32,BLOCK={BLOCK}",
                       "x_ptr", "y_ptr", (R,), [x, torch.zeros(R, C, device=DEVICE), C, x.stride(0), x.stride(1)],
                       [dy64.to(torch.float32).to(DEVICE)], {"x_ptr": d})
    assert not _first(src), src
    xr = x.cpu().to(torch.float64).requires_grad_()
    (_norm_ref(xr) * dy64).sum().backward()
    _close(d, xr.grad, "d_x", src)


# ------------------------------------------------------------------ two sites, what must not be proven


@pytest.mark.parametrize("mode,flag,first,covered", [
    (0, 1, True, True),     # same loops and masks: the first site writes every element
    (1, 1, True, False),    # the later site reads more elements than the first stores: zero-fill
    (2, 1, True, False),    # the first site's loop has fewer chunks: zero-fill
    (3, 1, True, True),     # the later site under an `if` (taken)
    (3, 0, True, True),     # ... (not taken)
    (4, 1, True, True),     # the first site under `if flag > 0`: covered when the launch's flag > 0
    (4, 0, True, False),    # ... and not otherwise: zero-fill
    (5, 1, False, False),   # the first site reads each element twice (two iterations): no first writer
    (6, 1, False, False),   # both sites in one loop: a later iteration's first site runs after the other
])
def test_two_sites(tmp_path, mode, flag, first, covered):
    R, C, n_last, BLOCK = 4, 70, 37, 16
    g = torch.Generator().manual_seed(20 + mode)
    x64 = torch.randn(R, C, generator=g, dtype=torch.float64)
    dy64 = torch.randn(R, C, generator=g, dtype=torch.float64)
    x = x64.to(torch.float32).to(DEVICE)
    d = _nan_view((R, C), (C, 1))
    filled, src = _run(tmp_path, "two",
                       f"x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,n_last=i32,flag=i32,stride=i32,MODE={mode},BLOCK={BLOCK}",
                       "x_ptr", "y_ptr", (R,), [x, torch.zeros(R, C, device=DEVICE), C, n_last, flag, C],
                       [dy64.to(torch.float32).to(DEVICE)], {"x_ptr": d})
    assert "atomic_add" in src and "plain_d_x_ptr" in src, src  # private read-modify-writes (or atomics)
    assert _first(src) == first, src
    assert ("x_ptr" not in filled) == covered, src
    xr = x.cpu().to(torch.float64).requires_grad_()
    cols = torch.arange(C)
    s = ((xr * xr).sum(1, keepdim=True) if (mode != 3 or flag) and mode != 6 else torch.zeros(R, 1)) + 1.0
    lim = n_last if mode == 1 else C
    ub = (n_last + BLOCK - 1) // BLOCK * BLOCK if mode == 2 else C
    keep = ((cols < lim) & (cols < ub)).to(torch.float64)
    if mode == 4 and not flag:
        keep = keep * 0
    v = xr * 3 if mode == 5 else xr
    y = v * s * keep
    if mode == 6:
        y = y + (xr * (cols < n_last)) ** 2 * keep
    (y * dy64).sum().backward()
    _close(d, xr.grad, "d_x", src)


@triton.jit
def interleaved(x_ptr, y_ptr, n_cols, n_last, stride, BLOCK: tl.constexpr):
    """Three loads at the top level: a and c one site (one pointer, one mask: adj_load writes them
    at a, the earliest), b another between them.  The backward reaches b before a: no first
    writer (c is last, but its site is written where a is).  c's `other` differs from a's so that
    the simplifier does not make them one load."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    p = x_ptr + row * stride + cols
    m = cols < n_cols
    a = tl.load(p, mask=m, other=0.0)
    b = tl.load(p, mask=cols < n_last, other=0.0)
    c = tl.load(p, mask=m, other=1.0)
    s = tl.sum(b * b, axis=0)
    tl.store(y_ptr + row * n_cols + cols, a * s + tl.exp(c), mask=m)


def test_interleaved_sites(tmp_path):
    R, C, n_last, BLOCK = 3, 50, 30, 64
    g = torch.Generator().manual_seed(30)
    x64 = torch.randn(R, C, generator=g, dtype=torch.float64)
    dy64 = torch.randn(R, C, generator=g, dtype=torch.float64)
    x = x64.to(torch.float32).to(DEVICE)
    d = _nan_view((R, C), (C, 1))
    filled, src = _run(tmp_path, "interleaved", f"x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,n_last=i32,stride=i32,BLOCK={BLOCK}",
                       "x_ptr", "y_ptr", (R,), [x, torch.zeros(R, C, device=DEVICE), C, n_last, C],
                       [dy64.to(torch.float32).to(DEVICE)], {"x_ptr": d})
    assert not _first(src) and "x_ptr" in filled, src
    xr = x.cpu().to(torch.float64).requires_grad_()
    s = (xr[:, :n_last] ** 2).sum(1, keepdim=True)
    ((xr * s + torch.exp(xr)) * dy64).sum().backward()
    _close(d, xr.grad, "d_x", src)
