"""Partials of folded backwards without zero-fill (docs/AD.md "Grid folding", docs/GRAD.md).

A folded backward's partials (nfold rows of each shared gradient's span, or a row per load site for
site rows) are one allocation the launcher leaves uninitialized where it may: each program zeroes
its own rows when the grid has one program along every unfolded axis, or the launch provably
writes every element of every row (a top-level site stored once per program through the load's
address and mask, which covers a dense d).  Everywhere else the buffer is zero-filled.  A wrong
choice is a silently wrong gradient, so every launch here fills what the launcher leaves
uninitialized with NaN (the module's test switch `_kad_fill`; kad's interpreter fills such
partials with NaN itself) and compares against PyTorch autograd of the same math in float64.
Each case also states whether the launcher must zero-fill the partials (counted `torch.zeros`
calls), so a lost proof fails too.  The emitted launcher runs on Triton's CPU interpreter
(KAD_GRAD_TEST_DEVICE=cuda: a GPU); the package's CPU path runs kad's interpreter (bf16 there).
"""
import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

import kad  # noqa: E402
import triton_cpu  # noqa: E402
from test_grad_cover import _close, _dev, _nan_view  # noqa: E402

DEVICE = triton_cpu.device_from_env("KAD_GRAD_TEST_DEVICE", "KAD_EMIT_TEST_DEVICE")
HERE = __file__


@pytest.fixture(scope="module")
def _triton_interpreter():
    with triton_cpu.interpreter(DEVICE):
        yield


@triton.jit
def rms_like(x_ptr, w_ptr, y_ptr, n_cols, stride, eps, BLOCK: tl.constexpr, WS: tl.constexpr = 1):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols * WS, mask=m, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def ln_like(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    # the weight and bias are read in a column loop: their sites add by read-modify-writes
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=m, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * n_cols + cols, ((x - mean) * w + b).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def bias2d(x_ptr, b_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    # a 2-D grid: the column blocks (axis 1) share each row of partials
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0)
    b = tl.load(b_ptr + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, x * tl.sigmoid(b), mask=m)


@triton.jit
def tri_weight(x_ptr, w_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    # row r reads the first n_cols - r weights: what a fold program stores depends on its rows
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = cols < n_cols - row
    x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0)
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, x * tl.cos(w), mask=m)


@triton.jit
def taps3(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # three taps that neighbouring programs share: site rows
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(x_ptr + offs, mask=m, other=0.0)
    b = tl.load(x_ptr + offs + 1, mask=m, other=0.0)
    c = tl.load(x_ptr + offs + 2, mask=m, other=0.0)
    tl.store(y_ptr + offs, a * b + tl.sin(c), mask=m)


@triton.jit
def taps3_rowsum(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # three shared taps, one value through a sum over the program's block (not
    # position-pointwise: no gather): site rows
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(x_ptr + offs, mask=m, other=0.0)
    b = tl.load(x_ptr + offs + 1, mask=m, other=0.0)
    c = tl.load(x_ptr + offs + 2, mask=m, other=0.0)
    tl.store(y_ptr + offs, a * b + tl.sin(c) * tl.sum(a, axis=0), mask=m)


# ------------------------------------------------------------------ the emitted launcher


def _module(kernel, sig, wrt, out, tmp_path):
    mod, src = triton_cpu.grad_module(HERE, kernel, sig, wrt, out, tmp_path, "foldparts")
    mod._kad_fill = float("nan")  # what the launcher leaves uninitialized: NaN
    return mod, src


def _launch(mod, kernel, grid, args, nfold=None):
    """Runs launch_<kernel>_bwd; returns the number of torch.zeros calls (zero-filled partials)."""
    with triton_cpu.calls_of(torch, "zeros") as calls:
        kw = {} if nfold is None else {"nfold": nfold}
        getattr(mod, f"launch_{kernel}_bwd")(grid, *args, **kw)
    if DEVICE != "cpu":
        torch.cuda.synchronize()
    return len(calls)


def _randn(*shape, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def _ref_grads(f, inputs, dy):
    leaves = [t.clone().requires_grad_() for t in inputs]
    return torch.autograd.grad((f(*leaves) * dy).sum(), leaves)


def _rms_ref(x, w, eps=1e-5):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


@pytest.mark.parametrize("R,nfold", [(10, None), (7, 2), (1, None), (5, 64)])
def test_rms_like_partials_uninitialized(tmp_path, _triton_interpreter, R, nfold):
    """One program per row (nothing along the other axes): each fold program zeroes its own row,
    so no torch.zeros at all; nfold above the rows is clamped (every program has a row)."""
    C = 20
    mod, src = _module("rms_like", "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n_cols=i32,stride=i32,eps=fp32,BLOCK=32,WS=1",
                       "x_ptr,w_ptr", "y_ptr", tmp_path)
    assert "alone = " in src and "if alone:" in src and "tl.debug_barrier()" in src, src
    x, w, dy = _randn(R, C), _randn(C, seed=1), _randn(R, C, seed=2)
    d_x, d_w = _nan_view((R, C)), _nan_view((C,))
    n = _launch(mod, "rms_like", (R,), [_dev(x), _dev(w), torch.empty(R, C, device=DEVICE), C, C, 1e-5,
                                        _dev(dy), d_x, d_w], nfold)
    want = _ref_grads(_rms_ref, [x, w], dy)
    _close(d_x, want[0], "d_x", src)
    _close(d_w, want[1], "d_w", src)
    assert n == 0, f"torch.zeros called {n} times\n{src}"


def test_rms_like_bitwise_repeatable(tmp_path, _triton_interpreter):
    R, C = 9, 20
    mod, src = _module("rms_like", "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n_cols=i32,stride=i32,eps=fp32,BLOCK=32,WS=1",
                       "x_ptr,w_ptr", "y_ptr", tmp_path)
    x, w, dy = _randn(R, C), _randn(C, seed=1), _randn(R, C, seed=2)
    outs = []
    for _ in range(2):
        d_x, d_w = _nan_view((R, C)), _nan_view((C,))
        _launch(mod, "rms_like", (R,), [_dev(x), _dev(w), torch.empty(R, C, device=DEVICE), C, C, 1e-5,
                                        _dev(dy), d_x, d_w], 3)
        outs.append(d_w.cpu().clone())
    assert torch.equal(outs[0], outs[1])


def test_strided_weight_gradient_adds(tmp_path, _triton_interpreter):
    """A d_w with gaps (stride 2) that belong to someone else: zero-filled, the sum kernel adds
    into it and leaves the gaps alone; the partials (a full span each row) are zeroed in-kernel."""
    R, C = 6, 20
    mod, src = _module("rms_like", "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n_cols=i32,stride=i32,eps=fp32,BLOCK=32,WS=2",
                       "x_ptr,w_ptr", "y_ptr", tmp_path)
    x, w, dy = _randn(R, C), _randn(C, seed=1), _randn(R, C, seed=2)
    base = torch.full((2 * C,), float("nan"), device=DEVICE)
    d_w = base.as_strided((C,), (2,))
    d_x = _nan_view((R, C))
    wd = torch.repeat_interleave(_dev(w), 2).as_strided((C,), (2,))
    n = _launch(mod, "rms_like", (R,), [_dev(x), wd, torch.empty(R, C, device=DEVICE), C, C, 1e-5, _dev(dy), d_x,
                                        d_w])
    want = _ref_grads(_rms_ref, [x, w], dy)
    _close(d_w, want[1], "d_w", src)
    assert torch.isnan(base[1::2]).all().item(), "the sum kernel wrote between the view's elements"
    assert n == 0, src


@pytest.mark.parametrize("C,BLOCK", [(20, 8), (16, 16), (5, 8)])
def test_ln_like_nested_sites(tmp_path, _triton_interpreter, C, BLOCK):
    """Read-modify-write sites in a column loop read their row before writing it: the program's
    own zeroing (before a barrier) is what makes an uninitialized buffer right; W and B share one
    allocation and one sum kernel."""
    R = 7
    mod, src = _module("ln_like", f"x_ptr=*fp32,w_ptr=*fp32,b_ptr=*fp32,y_ptr=*fp32,n_cols=i32,BLOCK={BLOCK}",
                       "x_ptr,w_ptr,b_ptr", "y_ptr", tmp_path)
    assert "def ln_like_bwd_sum(" in src and src.count("@triton.jit") == 2, src
    assert "args[7], args[8] = part.split_with_sizes(sizes)" in src, src
    x, w, b, dy = _randn(R, C), _randn(C, seed=1), _randn(C, seed=3), _randn(R, C, seed=2)
    d_x, d_w, d_b = _nan_view((R, C)), _nan_view((C,)), _nan_view((C,))
    n = _launch(mod, "ln_like", (R,), [_dev(x), _dev(w), _dev(b), torch.empty(R, C, device=DEVICE), C, _dev(dy),
                                       d_x, d_w, d_b], 3)

    def ref(x, w, b):
        return (x - x.mean(-1, keepdim=True)) * w + b
    want = _ref_grads(ref, [x, w, b], dy)
    for got, exp, nm in zip((d_x, d_w, d_b), want, ("d_x", "d_w", "d_b")):
        _close(got, exp, nm, src)
    assert n == 0, src


@pytest.mark.parametrize("C,BLOCK,extra,zeroed", [
    (20, 8, 0, False),   # 3 column blocks share each row: the site covers every element of d_b
    (20, 8, 5, True),    # d_b longer than what the kernel reads: not covered, zero-filled
    (20, 32, 0, False),  # one column block: each program zeroes its own row
])
def test_bias_2d_grid(tmp_path, _triton_interpreter, C, BLOCK, extra, zeroed):
    R = 9
    mod, src = _module("bias2d", f"x_ptr=*fp32,b_ptr=*fp32,y_ptr=*fp32,n_cols=i32,BLOCK={BLOCK}", "x_ptr,b_ptr",
                       "y_ptr", tmp_path)
    x, b, dy = _randn(R, C), _randn(C + extra, seed=1), _randn(R, C, seed=2)
    d_x, d_b = _nan_view((R, C)), _nan_view((C + extra,))
    grid = (R, triton.cdiv(C, BLOCK))
    n = _launch(mod, "bias2d", grid, [_dev(x), _dev(b), torch.empty(R, C, device=DEVICE), C, _dev(dy), d_x, d_b], 4)

    def ref(x, b):
        return x * torch.sigmoid(b[:C])
    want = _ref_grads(ref, [x, b], dy)
    _close(d_x, want[0], "d_x", src)
    _close(d_b, want[1], "d_b", src)
    assert n == (1 if zeroed else 0), f"torch.zeros called {n} times\n{src}"


@pytest.mark.parametrize("BLOCK,zeroed", [(8, True), (32, False)])
def test_store_set_depends_on_the_program(tmp_path, _triton_interpreter, BLOCK, zeroed):
    """The weight's mask depends on the row (folded): a fold program stores through the union of
    its rows' masks, which need not cover d_w, so with several column blocks the partials are
    zero-filled; with one, each program zeroes its own row."""
    R, C = 9, 20
    mod, src = _module("tri_weight", f"x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n_cols=i32,BLOCK={BLOCK}", "x_ptr,w_ptr",
                       "y_ptr", tmp_path)
    assert "touched" in src, src
    x, w, dy = _randn(R, C), _randn(C, seed=1), _randn(R, C, seed=2)
    d_x, d_w = _nan_view((R, C)), _nan_view((C,))
    n = _launch(mod, "tri_weight", (R, triton.cdiv(C, BLOCK)),
                [_dev(x), _dev(w), torch.empty(R, C, device=DEVICE), C, _dev(dy), d_x, d_w], 3)
    keep = (torch.arange(C)[None, :] < (C - torch.arange(R))[:, None]).to(torch.float64)

    def ref(x, w):
        return x * torch.cos(w) * keep
    want = _ref_grads(ref, [x, w], dy)
    _close(d_x, want[0], "d_x", src)
    _close(d_w, want[1], "d_w", src)
    assert n == (1 if zeroed else 0), f"torch.zeros called {n} times\n{src}"


def test_site_rows_partials_zero_filled(tmp_path, _triton_interpreter):
    """Site rows: neighbouring programs' sites share the rows, so the partials are zero-filled
    (one torch.zeros), and the result is right with the fill switch on.  A block sum in a site's
    value keeps the gather (docs/AD.md, "Gather") from applying."""
    n_, BLOCK = 30, 8
    mod, src = _module("taps3_rowsum", f"x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK={BLOCK}", "x_ptr", "y_ptr", tmp_path)
    assert "at 3 sites" in src and "def taps3_rowsum_bwd_sum(" in src and "gather" not in src, src
    x, dy = _randn(n_ + 2), _randn(n_, seed=2)
    d_x = _nan_view((n_ + 2,))
    zeros = _launch(mod, "taps3_rowsum", (triton.cdiv(n_, BLOCK),), [_dev(x), torch.empty(n_, device=DEVICE), n_,
                                                                     _dev(dy), d_x])

    def ref(x):
        a = x[:n_]
        s = torch.nn.functional.pad(a, (0, (-n_) % BLOCK)).reshape(-1, BLOCK).sum(1).repeat_interleave(BLOCK)[:n_]
        return a * x[1:-1] + torch.sin(x[2:]) * s
    want = _ref_grads(ref, [x], dy)
    _close(d_x, want[0], "d_x", src)
    assert zeros == 1, src


def test_gather_taps3(tmp_path, _triton_interpreter):
    """The same three taps without the block sum: gathered (no partials, no torch.zeros), d_x
    filled with NaN before the launch (the launcher zero-fills it)."""
    n_, BLOCK = 30, 8
    mod, src = _module("taps3", f"x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK={BLOCK}", "x_ptr", "y_ptr", tmp_path)
    assert "def taps3_bwd_gather_x_ptr(" in src and "atomic" in src and "_bwd_sum" not in src, src
    x, dy = _randn(n_ + 2), _randn(n_, seed=2)
    d_x = _nan_view((n_ + 2,))
    zeros = _launch(mod, "taps3", (triton.cdiv(n_, BLOCK),), [_dev(x), torch.empty(n_, device=DEVICE), n_, _dev(dy),
                                                              d_x])

    def ref(x):
        return x[:-2] * x[1:-1] + torch.sin(x[2:])
    want = _ref_grads(ref, [x], dy)
    _close(d_x, want[0], "d_x", src)
    assert zeros == 0, src


# ------------------------------------------------------------------ the package, kad's interpreter


def test_package_cpu_bf16_and_fp32():
    """The CPU path runs the plan on kad's interpreter, which fills the partials it leaves to the
    kernel with NaN: RMSNorm-like and LayerNorm-like in fp32 and bf16 against PyTorch."""
    rms = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])(rms_like)
    ln = kad.differentiable(inputs=["x_ptr", "w_ptr", "b_ptr"], outputs=["y_ptr"])(ln_like)
    R, C = 6, 24
    for dt, tol in ((torch.float32, 1e-4), (torch.bfloat16, 3e-2)):
        x64, w64, b64, dy64 = _randn(R, C), _randn(C, seed=1), _randn(C, seed=3), _randn(R, C, seed=2)
        x, w, b = (t.to(dt).requires_grad_() for t in (x64, w64, b64))
        y = torch.empty(R, C, dtype=dt)
        rms[(R,)](x, w, y, C, C, 1e-5, BLOCK=32)
        gx, gw = torch.autograd.grad(y, (x, w), dy64.to(dt))
        want = _ref_grads(_rms_ref, [x.detach().double(), w.detach().double()], dy64.to(dt).double())
        for got, exp in zip((gx, gw), want):
            assert not torch.isnan(got).any()
            assert torch.allclose(got.double(), exp, rtol=tol, atol=tol * 4), (dt, got, exp)
        y2 = torch.empty(R, C, dtype=dt)
        ln[(R,)](x, w, b, y2, C, BLOCK=8)
        g3 = torch.autograd.grad(y2, (x, w, b), dy64.to(dt))
        want = _ref_grads(lambda x, w, b: (x - x.mean(-1, keepdim=True)) * w + b,
                          [x.detach().double(), w.detach().double(), b.detach().double()], dy64.to(dt).double())
        for got, exp in zip(g3, want):
            assert not torch.isnan(got).any()
            assert torch.allclose(got.double(), exp, rtol=tol, atol=tol * 4), (dt, got, exp)


def test_package_cpu_bias_2d():
    k = kad.differentiable(inputs=["x_ptr", "b_ptr"], outputs=["y_ptr"])(bias2d)
    R, C, B = 7, 20, 8
    x64, b64, dy64 = _randn(R, C), _randn(C, seed=1), _randn(R, C, seed=2)
    x, b = x64.float().requires_grad_(), b64.float().requires_grad_()
    y = torch.empty(R, C)
    k[(R, triton.cdiv(C, B))](x, b, y, C, BLOCK=B)
    got = torch.autograd.grad(y, (x, b), dy64.float())
    want = _ref_grads(lambda x, b: x * torch.sigmoid(b), [x64, b64], dy64)
    for g, w in zip(got, want):
        assert torch.allclose(g.double(), w, rtol=1e-4, atol=1e-5)
