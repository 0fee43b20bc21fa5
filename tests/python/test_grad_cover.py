"""Input gradients without zero-fill (docs/GRAD.md, docs/AD.md "Coverage").

The gradient buffers given to launch_<kernel>_bwd need no initialization: the launcher zero-fills
each one unless it proves, for the view it is given, that the launch writes every element
(access_cover.c's description against d.shape and d.stride()).  A wrong "covered" leaves garbage
in a gradient, so every test here fills the buffer (the whole storage, padding included) with NaN,
runs the emitted launcher (Triton's CPU interpreter; KAD_GRAD_TEST_DEVICE=cuda: a GPU) and compares
the view with PyTorch autograd of the same math written plainly (0 where the forward does not read
x).  Each case also says whether the launcher must skip the zero-fill (covered) or not, so a lost
proof fails too.  Then the host check itself (_kad_covers) against brute force on small
descriptions and views: it must never say "covered" for a view with an element no variable
assignment reaches.
"""
import itertools
import random

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

import triton_cpu  # noqa: E402

DEVICE = triton_cpu.device_from_env("KAD_GRAD_TEST_DEVICE", "KAD_EMIT_TEST_DEVICE")
HERE = __file__


@pytest.fixture(scope="module", autouse=True)
def _triton_interpreter():
    with triton_cpu.interpreter(DEVICE):
        yield


@triton.jit
def ew(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, x * tl.sin(x), mask=m)


@triton.jit
def ew_half(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n // 2
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, x * tl.sin(x), mask=m)


@triton.jit
def rows(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    s = tl.sum(x * x, axis=0)
    tl.store(y_ptr + row * n_cols + cols, x * s, mask=m)


@triton.jit
def swiglu(a_ptr, b_ptr, c_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    a = tl.load(a_ptr + row * stride + cols, mask=m, other=0.0)
    b = tl.load(b_ptr + row * stride + cols, mask=m, other=0.0)
    tl.store(c_ptr + row * stride + cols, a * tl.sigmoid(a) * b, mask=m)


@triton.jit
def tiles(x_ptr, y_ptr, M, N, sm, sn, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.program_id(0) * BM + tl.arange(0, BM)
    c = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (r < M)[:, None] & (c < N)[None, :]
    x = tl.load(x_ptr + r[:, None] * sm + c[None, :] * sn, mask=m, other=0.0)
    tl.store(y_ptr + r[:, None] * N + c[None, :], tl.sin(x) * x, mask=m)


@triton.jit
def chunked(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        m = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
        tl.store(y_ptr + row * n_cols + cols, tl.exp(x) * x, mask=m)


@triton.jit
def grid_stride(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """A grid-stride loop: program p takes blocks p, p + P, p + 2P, ... (its trip count depends on
    p: kad proves the loop runs while its `offs < n` holds, access_cover.c's loop_by_clause)."""
    for start in range(tl.program_id(0) * BLOCK, n, tl.num_programs(0) * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0.0)
        tl.store(y_ptr + offs, x * tl.sin(x), mask=m)


def _launcher(kernel, sig, wrt, out, file=HERE):
    p = triton_cpu.run_kad(["grad", f"{file}:{kernel}", "--sig", sig, "--wrt", wrt, "--out", out])
    assert p.returncode == 0, p.stderr
    return p.stdout


def _run(tmp_path, kernel, sig, wrt, out, grid, args, douts, dins, file=HERE):
    """Runs launch_<kernel>_bwd; returns the names of the gradients it zero-filled."""
    mod, src = triton_cpu.grad_module(file, kernel, sig, wrt, out, tmp_path, "cover")
    mod._kad_fill = float("nan")  # a folded backward's partials it leaves uninitialized: NaN
    with triton_cpu.calls_of(torch.Tensor, "zero_") as zeroed:
        getattr(mod, f"launch_{kernel}_bwd")(grid, *args, *douts, *dins.values())
    if DEVICE != "cpu":
        torch.cuda.synchronize()
    return {n for (t,) in zeroed for n, d in dins.items() if d is t}, src


def _nan_view(shape, stride=None, dtype=torch.float32):
    """A view of (shape, stride) over a storage filled with NaN, padding included (stride None:
    contiguous)."""
    stride = stride or torch.empty(shape).stride()
    span = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 0
    base = torch.full((max(span, 1),), float("nan"), dtype=dtype, device=DEVICE)
    return base.as_strided(shape, stride)


def _close(got, want, what, src, rtol=1e-4, atol=1e-5):
    got = got.detach().cpu().to(torch.float64)
    assert not torch.isnan(got).any(), f"{what}: NaN left in the gradient (not written, not zero-filled)\n{src}"
    assert torch.allclose(got, want, rtol=rtol, atol=atol), \
        f"{what}: differs from torch (max {(got - want).abs().max()})\n{src}"


def _dev(t):
    return t.to(torch.float32).to(DEVICE)


# ------------------------------------------------------------------ 1-D elementwise


@pytest.mark.parametrize("n,numel,nprog,covered", [
    (1000, 1000, 8, True),     # the launch writes all 1000
    (1000, 1000, 9, True),     # a program more than needed: its lanes are all masked off
    (700, 1000, 8, False),     # masked tail: n < numel, elements 700.. stay 0
    (1000, 1000, 7, False),    # too few programs: 896..999 are never reached
    (1000, 1000, 0, True),     # an empty grid: nothing written, all zero-filled (covered False)
])
def test_elementwise(tmp_path, n, numel, nprog, covered):
    if nprog == 0:
        covered = False
    g = torch.Generator().manual_seed(1)
    x64 = torch.randn(numel, generator=g, dtype=torch.float64)
    dy64 = torch.randn(numel, generator=g, dtype=torch.float64)
    x = _dev(x64)
    y = torch.zeros_like(x)
    d = _nan_view((numel,), (1,))
    filled, src = _run(tmp_path, "ew", "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=128", "x_ptr", "y_ptr",
                       (nprog,), [x, y, n], [_dev(dy64)], {"x_ptr": d})
    assert ("x_ptr" not in filled) == covered, src
    xr = x.cpu().to(torch.float64).requires_grad_()
    reach = min(n, nprog * 128)
    (xr[:reach] * torch.sin(xr[:reach]) * dy64[:reach]).sum().backward()
    _close(d, xr.grad, "d_x", src)


@pytest.mark.parametrize("n,numel,nprog,covered", [
    (1000, 1000, 3, True),     # 3 programs of 128 stride over 1000: every element, in 3 rounds
    (1000, 1000, 9, True),     # more programs than blocks: the last ones run no iteration
    (700, 1000, 3, False),     # n < numel: elements 700.. stay 0
])
def test_grid_stride_loop(tmp_path, n, numel, nprog, covered):
    g = torch.Generator().manual_seed(9)
    x64 = torch.randn(numel, generator=g, dtype=torch.float64)
    dy64 = torch.randn(numel, generator=g, dtype=torch.float64)
    x = _dev(x64)
    d = _nan_view((numel,), (1,))
    filled, src = _run(tmp_path, "grid_stride", "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=128", "x_ptr", "y_ptr",
                       (nprog,), [x, torch.zeros_like(x), n], [_dev(dy64)], {"x_ptr": d})
    assert ("x_ptr" not in filled) == covered, src
    xr = x.cpu().to(torch.float64).requires_grad_()
    (xr[:n] * torch.sin(xr[:n]) * dy64[:n]).sum().backward()
    _close(d, xr.grad, "d_x", src)


def test_half_of_x(tmp_path):
    """The forward reads only x[:n // 2]: the rest of d_x must be 0."""
    g = torch.Generator().manual_seed(2)
    x64, dy64 = torch.randn(512, generator=g, dtype=torch.float64), torch.randn(512, generator=g, dtype=torch.float64)
    x = _dev(x64)
    d = _nan_view((512,), (1,))
    filled, src = _run(tmp_path, "ew_half", "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=128", "x_ptr", "y_ptr",
                       (4,), [x, torch.zeros_like(x), 512], [_dev(dy64)], {"x_ptr": d})
    assert "_tdiv(" in src and "x_ptr" in filled, src
    xr = x.cpu().to(torch.float64).requires_grad_()
    (xr[:256] * torch.sin(xr[:256]) * dy64[:256]).sum().backward()
    _close(d, xr.grad, "d_x", src)


# ------------------------------------------------------------------ rows


@pytest.mark.parametrize("R,C,stride,view,covered", [
    (6, 40, 40, "rows", True),      # stride == n_cols: one dense run
    (6, 40, 48, "slice", True),     # a padded buffer, the view [R, C] of it: every element written
    (6, 40, 48, "padded", False),   # the view is the padded [R, stride] buffer: padding never written
    (6, 40, 0, "broadcast", False), # stride 0: one row read by every program (atomics, zero-fill)
])
def test_rows(tmp_path, R, C, stride, view, covered):
    g = torch.Generator().manual_seed(3)
    W = C if view == "rows" else stride if view != "broadcast" else C
    base64 = torch.randn(R if stride else 1, W, generator=g, dtype=torch.float64)
    dy64 = torch.randn(R, C, generator=g, dtype=torch.float64)
    x = _dev(base64)
    if view == "padded":
        shape, strides = (R, stride), (stride, 1)
    elif view == "broadcast":
        shape, strides = (R, C), (0, 1)
    else:
        shape, strides = (R, C), (stride, 1)
    d = _nan_view(shape, strides)
    filled, src = _run(tmp_path, "rows", "x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,stride=i32,BLOCK=64", "x_ptr",
                       "y_ptr", (R,), [x, torch.zeros(R, C, device=DEVICE), C, stride], [_dev(dy64)],
                       {"x_ptr": d})
    assert ("x_ptr" not in filled) == covered, src
    xr = base64.clone().to(torch.float32).to(torch.float64).requires_grad_()
    xs = xr.expand(R, C) if view == "broadcast" else xr[:, :C]
    ((xs * (xs * xs).sum(1, keepdim=True)) * dy64).sum().backward()
    if view == "broadcast":  # d's one stored row holds the sum over programs
        _close(d[0], xr.grad[0], "d_x", src)
    elif view == "padded":
        _close(d, xr.grad, "d_x", src)
    else:
        _close(d, xr.grad[:, :C], "d_x", src)


@pytest.mark.parametrize("stride", [40, 48])
def test_swiglu(tmp_path, stride):
    R, C = 5, 40
    g = torch.Generator().manual_seed(4)
    a64, b64 = (torch.randn(R, stride, generator=g, dtype=torch.float64) for _ in range(2))
    dc64 = torch.randn(R, stride, generator=g, dtype=torch.float64)
    a, b = _dev(a64), _dev(b64)
    da, db = _nan_view((R, C), (stride, 1)), _nan_view((R, C), (stride, 1))
    filled, src = _run(tmp_path, "swiglu", "a_ptr=*fp32,b_ptr=*fp32,c_ptr=*fp32,stride=i32,n_cols=i32,BLOCK=64",
                       "a_ptr,b_ptr", "c_ptr", (R,), [a, b, torch.zeros_like(a), stride, C], [_dev(dc64)],
                       {"a_ptr": da, "b_ptr": db})
    assert not filled, src
    ar = a.cpu().to(torch.float64)[:, :C].requires_grad_()
    br = b.cpu().to(torch.float64)[:, :C].requires_grad_()
    (ar * torch.sigmoid(ar) * br * dc64[:, :C]).sum().backward()
    _close(da, ar.grad, "d_a", src)
    _close(db, br.grad, "d_b", src)


def test_loop_over_chunks(tmp_path):
    """A `for` loop over column chunks: its iterations count as a run."""
    R, C = 3, 100
    g = torch.Generator().manual_seed(5)
    x64, dy64 = torch.randn(R, C, generator=g, dtype=torch.float64), torch.randn(R, C, generator=g, dtype=torch.float64)
    x = _dev(x64)
    d = _nan_view((R, C), (C, 1))
    filled, src = _run(tmp_path, "chunked", "x_ptr=*fp32,y_ptr=*fp32,n_cols=i32,stride=i32,BLOCK=32", "x_ptr",
                       "y_ptr", (R,), [x, torch.zeros_like(x), C, C], [_dev(dy64)], {"x_ptr": d})
    assert not filled, src
    xr = x.cpu().to(torch.float64).requires_grad_()
    (torch.exp(xr) * xr * dy64).sum().backward()
    _close(d, xr.grad, "d_x", src)


# ------------------------------------------------------------------ 2-D tiles


@pytest.mark.parametrize("layout,grid,covered", [
    ("contiguous", (3, 2), True),
    # x = base.t(), strides (1, M): the plain stores' condition (rows dominate columns) fails, so
    # atomics add into d_x, which is zero-filled
    ("transposed", (3, 2), False),
    ("contiguous", (2, 2), False),      # blocks that do not tile the view: rows 16.. never written
    ("narrow_n", (3, 2), False),        # N below the view's columns (a masked tail in 2-D)
])
def test_tiles(tmp_path, layout, grid, covered):
    M, N = 40, 30
    g = torch.Generator().manual_seed(6)
    x64 = torch.randn(M, N, generator=g, dtype=torch.float64)
    dy64 = torch.randn(M, N, generator=g, dtype=torch.float64)
    if layout == "transposed":
        x = _dev(x64.t().contiguous()).t()
    else:
        x = _dev(x64)
    sm, sn = x.stride()
    d = _nan_view((M, N), (sm, sn))
    n_arg = N - 7 if layout == "narrow_n" else N
    filled, src = _run(tmp_path, "tiles", "x_ptr=*fp32,y_ptr=*fp32,M=i32,N=i32,sm=i32,sn=i32,BM=16,BN=16",
                       "x_ptr", "y_ptr", grid, [x, torch.zeros(M, N, device=DEVICE), M, n_arg, sm, sn],
                       [_dev(dy64)], {"x_ptr": d})
    assert ("x_ptr" not in filled) == covered, src
    xr = x.cpu().to(torch.float64).requires_grad_()
    rr, cc = min(M, grid[0] * 16), min(n_arg, grid[1] * 16)
    dyr = dy64.reshape(-1)[: M * n_arg].reshape(M, n_arg)  # y is written as [M, N_arg] rows
    part = xr[:rr, :cc]
    (torch.sin(part) * part * dyr[:rr, :cc]).sum().backward()
    _close(d, xr.grad, "d_x", src)


def test_old_callers_zero_filled_buffers(tmp_path):
    """A zero-filled buffer (the old contract) gives the same gradient."""
    g = torch.Generator().manual_seed(7)
    x64, dy64 = torch.randn(1000, generator=g, dtype=torch.float64), torch.randn(1000, generator=g, dtype=torch.float64)
    x = _dev(x64)
    res = []
    for fill in (0.0, float("nan")):
        d = torch.full((1000,), fill, device=DEVICE)
        _run(tmp_path, "ew", "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=128", "x_ptr", "y_ptr", (8,),
             [x, torch.zeros_like(x), 1000], [_dev(dy64)], {"x_ptr": d})
        res.append(d.cpu())
    assert torch.equal(res[0], res[1])


# ------------------------------------------------------------------ folded gradients (src/ad/write/fold.c)


@triton.jit
def row_gain(x_ptr, w_ptr, y_ptr, n_cols, stride, WS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    w = tl.load(w_ptr + cols * WS, mask=m, other=0.0)  # read by every program: d_w is folded
    tl.store(y_ptr + row * n_cols + cols, x * tl.sin(w), mask=m)


_GAIN_SIG = "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n_cols=i32,stride=i32,WS={},BLOCK=32"


def _gain(tmp_path, d_w, R=10, C=20):
    """Runs row_gain's launcher with d_w given; returns (zero-filled names, torch.zeros calls, d_x, src)."""
    g = torch.Generator().manual_seed(5)
    x64, w64, dy64 = (torch.randn(*s, generator=g, dtype=torch.float64) for s in ((R, C), (C,), (R, C)))
    d_x = _nan_view((R, C), (C, 1))
    ws = d_w.stride()[0]
    with triton_cpu.calls_of(torch, "zeros") as calls:
        filled, src = _run(tmp_path, "row_gain", _GAIN_SIG.format(ws), "x_ptr,w_ptr", "y_ptr", (R,),
                           [_dev(x64), _dev(w64).as_strided((C,), d_w.stride()) if d_w.stride() == (1,) else
                            torch.repeat_interleave(_dev(w64), d_w.stride()[0]).as_strided((C,), d_w.stride()),
                            torch.empty(R, C, device=DEVICE), C, C], [_dev(dy64)],
                           {"x_ptr": d_x, "w_ptr": d_w})
    x, w = x64.clone().requires_grad_(), w64.clone().requires_grad_()
    want = torch.autograd.grad((x * torch.sin(w)).mul(dy64).sum(), (x, w))
    _close(d_x, want[0], "d_x", src)
    _close(d_w, want[1], "d_w", src)
    return filled, calls, src


def test_folded_gradient_dense_needs_no_zero_fill(tmp_path):
    """A folded gradient given as a dense buffer full of NaN: the sum kernel stores every element
    (no zero-fill of d_w, no read of it), and d_w's partials (nfold rows of d_w's span) are
    allocated uninitialized (filled with NaN here: _kad_fill), each program zeroing its own rows.
    Counted, so that a zero-fill coming back fails here."""
    d_w = _nan_view((20,), (1,))
    filled, calls, src = _gain(tmp_path, d_w)
    assert "_kad_go(row_gain_bwd_sum," in src and "_kad_dense" in src, src  # d_w is folded
    assert filled == set(), f"zero-filled {filled}\n{src}"
    assert len(calls) == 0, f"torch.zeros called {len(calls)} times: {calls}\n{src}"


def test_folded_gradient_with_gaps_is_zero_filled(tmp_path):
    """A strided d_w (gaps between its elements that belong to someone else): zero-filled, the
    sum kernel adds into it and leaves the gaps alone; the same bits as the dense buffer."""
    base = torch.full((40,), float("nan"), device=DEVICE)
    d_w = base.as_strided((20,), (2,))
    filled, _, src = _gain(tmp_path, d_w)
    assert filled == {"w_ptr"}, src
    assert torch.isnan(base[1::2]).all(), "the sum kernel wrote between the view's elements"
    dense = _nan_view((20,), (1,))
    _gain(tmp_path, dense)
    assert torch.equal(d_w.cpu(), dense.cpu()), "dense (stored) and strided (added) sums differ in bits"


# ------------------------------------------------------------------ the host check, brute force


def _helper():
    src = _launcher("ew", "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=128", "x_ptr", "y_ptr")
    start = src.index("_kad_covers_seen = {}")  # the memo, _kad_covers and _kad_covers_now
    end = src.index("\n\n\n", src.index("def _kad_covers_now(", start))
    ns = {}
    exec(src[start:end], ns)
    return ns["_kad_covers"]


def _written(vs, clauses, negs):
    if any(n >= 0 for n in negs):
        return set()
    ids = sorted(vs)
    ranges = [range(vs[v][1] if vs[v][1] is not None else 12) for v in ids]
    out = set()
    for vals in itertools.product(*ranges):
        a = dict(zip(ids, vals))
        if all(sum(c * a[v] for v, c in zip(cid, co)) < b for b, cid, co in clauses):
            out.add(sum(vs[v][0] * a[v] for v in ids))
    return out


def test_host_check_never_claims_an_unwritten_element():
    covers = _helper()
    rnd = random.Random(11)
    claimed = 0
    for _ in range(4000):
        nv = rnd.randint(1, 3)
        vs = {k: (rnd.choice([0, 1, 1, 2, 3, 4, 6, 8, -1]), rnd.choice([1, 2, 3, 4, None])) for k in range(nv)}
        clauses = []
        for _ in range(rnd.randint(0, 2)):
            ids = tuple(rnd.sample(range(nv), rnd.randint(1, nv)))
            clauses.append((rnd.randint(-1, 12), ids, tuple(rnd.choice([1, 1, 2, 3, 4, -1]) for _ in ids)))
        if any(e is None for _, e in vs.values()) and not clauses:
            continue
        negs = [rnd.choice([-1, -1, -1, 0])]
        nd = rnd.randint(1, 2)
        shape = tuple(rnd.randint(1, 4) for _ in range(nd))
        stride = tuple(rnd.choice([0, 1, 2, 3, 4, 6, 8, 12, -1]) for _ in range(nd))
        # a stand-in for the tensor (torch refuses negative strides): shape, stride(), numel()
        view = type("View", (), {"shape": shape, "stride": lambda self, s=stride: s,
                                 "numel": lambda self, n=shape: n[0] * (n[1] if len(n) > 1 else 1)})()
        if not covers(view, vs, clauses, negs):
            continue
        claimed += 1
        reach = _written(vs, clauses, negs)
        elems = {sum(i * s for i, s in zip(idx, stride)) for idx in itertools.product(*(range(n) for n in shape))}
        assert elems <= reach, (vs, clauses, negs, shape, stride)
    assert claimed > 100  # the check does say "covered" often enough to be tested


# ------------------------------------------------------------------ loads under a runtime `if`


@triton.jit
def rows_if(x_ptr, y_ptr, n_rows, lo, n_cols, stride, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """MODE 0: early return past n_rows (the rest is the `else` branch of `row >= n_rows`);
    1: the load in the `then` branch of `(row >= lo) & (row < n_rows)`; 2: early return under
    `(row < lo) | (row >= n_rows)` (its negation is no conjunction: not read); 3: a condition on
    a loaded value (not read)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    if MODE == 0:
        if row >= n_rows:
            return
    if MODE == 2:
        if (row < lo) | (row >= n_rows):
            return
    if MODE == 3:
        if tl.load(x_ptr + row * stride) < -100.0:
            return
    if MODE == 1:
        if (row >= lo) & (row < n_rows):
            x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
            tl.store(y_ptr + row * n_cols + cols, x * tl.sin(x), mask=m)
    else:
        x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
        tl.store(y_ptr + row * n_cols + cols, x * tl.sin(x), mask=m)


@pytest.mark.parametrize("mode,nprog,n_rows,lo,covered", [
    (0, 8, 6, 0, True),    # log-softmax's grid rounded up: programs 6, 7 return
    (0, 5, 6, 0, False),   # too few programs: row 5 never written
    (0, 8, 4, 0, False),   # n_rows below the view's rows: rows 4, 5 stay 0
    (1, 6, 6, 0, True),    # the `then` branch of a conjunction covering every row
    (1, 6, 6, 2, False),   # ... from row 2 only
    (2, 6, 6, 0, False),   # a disjunction's negation: not read, zero-filled
    (3, 6, 6, 0, False),   # a loaded condition: not read, zero-filled
])
def test_under_if(tmp_path, mode, nprog, n_rows, lo, covered):
    R, C = 6, 40
    g = torch.Generator().manual_seed(40 + mode)
    x64, dy64 = torch.randn(R, C, generator=g, dtype=torch.float64), torch.randn(R, C, generator=g, dtype=torch.float64)
    x = _dev(x64)
    d = _nan_view((R, C), (C, 1))
    filled, src = _run(tmp_path, "rows_if",
                       f"x_ptr=*fp32,y_ptr=*fp32,n_rows=i32,lo=i32,n_cols=i32,stride=i32,MODE={mode},BLOCK=64",
                       "x_ptr", "y_ptr", (nprog,), [x, torch.zeros(R, C, device=DEVICE), n_rows, lo, C, C],
                       [_dev(dy64)], {"x_ptr": d})
    assert ("x_ptr" not in filled) == covered, src
    xr = x.cpu().to(torch.float64).requires_grad_()
    rows = torch.arange(R)[:, None]
    keep = ((rows < min(n_rows, nprog)) & (rows >= lo)).to(torch.float64)
    (xr * torch.sin(xr) * dy64 * keep).sum().backward()
    _close(d, xr.grad, "d_x", src)


# ------------------------------------------------------------------ the mean over rows (tests/kernels/mean_dim.py)


@pytest.mark.parametrize("B,M,N,layout,covered", [
    (3, 37, 70, "contiguous", True),   # rows in chunks of 16 under `m < M`: every element written
    (3, 32, 64, "contiguous", True),   # no masked tails
    (2, 20, 70, "padded", True),       # each row padded to 80 columns: the view [B, M, N] written
    (2, 20, 40, "permuted", False),    # x = base.transpose(1, 2): atomics (programs may meet), zero-fill
])
def test_mean_rows(tmp_path, B, M, N, layout, covered):
    """The chunk loop's counter and the row lanes are one group bounded by the mask (access_decide:
    a contiguous x is proven injective, so d_x is stored, and covered)."""
    import os
    g = torch.Generator().manual_seed(50)
    if layout == "padded":
        base = torch.randn(B, M, N + 10, generator=g, dtype=torch.float64)[:, :, :N]
    elif layout == "permuted":
        base = torch.randn(B, N, M, generator=g, dtype=torch.float64).transpose(1, 2)
    else:
        base = torch.randn(B, M, N, generator=g, dtype=torch.float64)
    dout64 = torch.randn(B, N, generator=g, dtype=torch.float64)
    x = torch.empty_strided(base.shape, base.stride(), dtype=torch.float32, device=DEVICE)
    x.copy_(base)
    d = _nan_view(tuple(x.shape), x.stride())
    out = torch.zeros(B, N, device=DEVICE)
    sxb, sxm, sxn = x.stride()
    sig = ("x_ptr=*fp32,out_ptr=*fp32,M=i32,N=i32,stride_xb=i32,stride_xm=i32,stride_xn="
           f"{1 if sxn == 1 else 'i32'},stride_ob=i32,stride_on=1,BLOCK_M=16,BLOCK_N=64")
    filled, src = _run(tmp_path, "mean_dim1_kernel", sig, "x_ptr", "out_ptr", (B, -(-N // 64)),
                       [x, out, M, N, sxb, sxm, sxn, N, 1], [_dev(dout64)], {"x_ptr": d},
                       file=os.path.join(os.path.dirname(HERE), "..", "kernels", "mean_dim.py"))
    assert ("x_ptr" not in filled) == covered, src
    xr = x.cpu().to(torch.float64).requires_grad_()
    (xr.mean(dim=1) * dout64).sum().backward()
    _close(d, xr.grad, "d_x", src)
