"""Strong zeros (docs/AD.md, "Untaken branches: exact zeros"): gradients through a tl.where whose
untaken branch is inf or NaN are the float64 truth, not NaN.

The kernels are tests/kernels/nonfinite.py.  Each is checked, at points where the branch it does
not take is non-finite:
- by kad's float64 finite-difference checker (kad_check, per element, two seeds);
- with the strong zeros turned off (KAD_TEST_MUTATE=strong_zero), the same check must FAIL: the
  tests can fail, and each kernel really meets a non-finite untaken branch;
- against PyTorch autograd of the same math written with the "double where" trick
  (torch.where(x > 0, torch.sqrt(torch.where(x > 0, x, 1)), x)), which gives the true derivative,
  through @kad.differentiable on float64 tensors;
- in forward mode: the jvp kernel's tangent against torch.func.jvp of that reference, and a zero
  tangent through sqrt at 0 (f' = inf) is exactly 0;
- the emitted backward module on Triton's interpreter against the reference.
"""
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import kad  # noqa: E402
import triton_cpu  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))  # tests/ -> `import kernels`

from kernels import nonfinite  # noqa: E402

# the forward's untaken branches compute inf and NaN on purpose (numpy warns under Triton's interpreter)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

FILE = "tests/kernels/nonfinite.py"
F64 = torch.float64
N, BLOCK = 40, 16  # 3 programs, the last one with masked lanes


def _keep(n):
    k = torch.ones(n, dtype=F64)
    k[::4] = 0.0
    return k


def _dw(c, a, fill):
    """a where c holds, fill elsewhere: the inner where of the double-where trick."""
    return torch.where(c, a, torch.full_like(a, fill))


def _sinc(x):
    z = x * _keep(x.numel())
    return torch.where(z == 0, torch.ones_like(z), torch.sin(_dw(z != 0, z, 1.0)) / _dw(z != 0, z, 1.0))


def _div(x):
    z = x * _keep(x.numel())
    return torch.where(z != 0, torch.exp(x) / _dw(z != 0, z, 1.0), x)


def _log(x):
    z = x * _keep(x.numel())
    return torch.where(z > 0, torch.log(_dw(z > 0, z, 1.0)), x)


def _gelu(x):
    z = x * _keep(x.numel())
    gelu = 0.5 * z * (1.0 + torch.erf(z * 0.7071067811865476))
    zs = _dw(z < -10.0, z, -11.0)
    tail = -torch.exp(-0.5 * zs * zs) * 0.3989422804014327 / zs
    return torch.where(z < -10.0, tail, gelu)


# name: (reference, input range)
ELEMENTWISE = {
    "sqrt_branch": (lambda x: torch.where(x > 0, torch.sqrt(_dw(x > 0, x, 1.0)), x), (-2.0, 2.0)),
    "exp_overflow": (lambda x: torch.where(x < 0, torch.exp(1000.0 * _dw(x < 0, x, -1.0)), x), (-0.005, 1.5)),
    "x_exp_overflow": (lambda x: torch.where(x < 0, x * torch.exp(1000.0 * _dw(x < 0, x, -1.0)), x),
                       (-0.005, 1.5)),
    "sinc": (_sinc, (-2.0, 2.0)),
    "div_untaken": (_div, (-2.0, 2.0)),
    "log_untaken": (_log, (-2.0, 2.0)),
    "pow_untaken": (lambda x: torch.where(x > 0, torch.pow(_dw(x > 0, x, 1.0), 1.5), 2.0 * x), (-2.0, 2.0)),
    "gelu_guarded": (_gelu, (-2.0, 2.0)),
}
ROWS, COLS, RBLOCK = 3, 12, 16


def _entropy(p):
    pp = _dw(p > 0, p, 1.0)
    return -torch.where(p > 0, pp * torch.log(pp), torch.zeros_like(p)).sum(dim=1)


NAMES = sorted(ELEMENTWISE) + ["safe_entropy"]


def _setup(name):
    """(kernel param names, grid, sig, shapes, scalars, consts, input, output)."""
    if name == "safe_entropy":
        return (["p_ptr", "h_ptr", "n_cols"], (ROWS,), f"p_ptr=*fp64,h_ptr=*fp64,n_cols=i32,BLOCK={RBLOCK}",
                {"p_ptr": ROWS * COLS, "h_ptr": ROWS}, {"n_cols": COLS}, {"BLOCK": RBLOCK}, "p_ptr", "h_ptr")
    return (["x_ptr", "y_ptr", "n"], ((N + BLOCK - 1) // BLOCK,), f"x_ptr=*fp64,y_ptr=*fp64,n=i32,BLOCK={BLOCK}",
            {"x_ptr": N, "y_ptr": N}, {"n": N}, {"BLOCK": BLOCK}, "x_ptr", "y_ptr")


def _specialized(name, sig):
    ctx = kad.Context()
    with open(os.path.join(REPO, FILE), encoding="utf-8") as f:
        ctx.add_source(FILE, f.read())
    return ctx.specialize(name, sig)


def _range(name):
    return (-1.0, 1.0) if name == "safe_entropy" else ELEMENTWISE[name][1]


def _reference(name, x):
    if name == "safe_entropy":
        return _entropy(x.view(ROWS, COLS))
    return ELEMENTWISE[name][0](x)


def _data(name, seed=0):
    g = torch.Generator().manual_seed(seed)
    params, grid, sig, shapes, scalars, consts, xin, yout = _setup(name)
    lo, hi = _range(name)
    x = lo + (hi - lo) * torch.rand(shapes[xin], generator=g, dtype=F64)
    dy = torch.randn(shapes[yout], generator=g, dtype=F64)
    return x, dy


def _check(name, monkeypatch=None, mutate=None):
    params, grid, sig, shapes, scalars, consts, xin, yout = _setup(name)
    k = _specialized(name, sig)
    if mutate:
        monkeypatch.setenv("KAD_TEST_MUTATE", mutate)
    reports = []
    ok = True
    for seed in (1, 2):
        passed, report = k.check_gradients(grid, [xin], [yout], shapes, scalars, ranges={xin: _range(name)},
                                           seed=seed, elem_limit=4096)
        ok &= passed
        reports.append(report)
    return ok, "\n".join(reports)


@pytest.mark.parametrize("name", NAMES)
def test_finite_differences(name):
    ok, report = _check(name)
    assert ok, report


@pytest.mark.parametrize("name", NAMES)
def test_fails_without_strong_zeros(name, monkeypatch):
    """The same check with the strong zeros off: NaN gradients, FAIL."""
    ok, report = _check(name, monkeypatch, "strong_zero")
    assert not ok, report
    assert "nan" in report, report


def _true_grad(name, x, dy):
    xx = x.clone().requires_grad_()
    y = _reference(name, xx)
    (y * dy).sum().backward()
    return y.detach(), xx.grad


def _close(got, want, what):
    assert torch.isfinite(got).all(), f"{what}: not finite: {got}"
    err = (got - want).abs().max().item()
    assert err <= 1e-9 * max(want.abs().max().item(), 1.0), f"{what}: max err {err:.3g}"


@pytest.mark.parametrize("name", NAMES)
def test_matches_torch(name):
    params, grid, sig, shapes, scalars, consts, xin, yout = _setup(name)
    x, dy = _data(name)
    want_y, want_g = _true_grad(name, x, dy)
    assert torch.isfinite(want_g).all()
    k = kad.differentiable(inputs=[xin], outputs=[yout])(getattr(nonfinite, name))
    xx = x.clone().requires_grad_()
    y = torch.zeros(shapes[yout], dtype=F64)
    args = {xin: xx, yout: y, **scalars}
    k[grid](*[args[p] for p in params], **consts)
    _close(y.detach(), want_y, f"{name}: forward")
    (y * dy).sum().backward()
    _close(xx.grad, want_g, f"{name}: d{xin}")


def _jvp(name, x, v):
    params, grid, sig, shapes, scalars, consts, xin, yout = _setup(name)
    j = _specialized(name, sig).jvp([xin], [yout])
    b = {xin: x.numpy().copy(), yout: np.zeros(shapes[yout]), "t_" + xin: v.numpy().copy(),
         "t_" + yout: np.zeros(shapes[yout]), **scalars}
    j.run(grid, {n: b[n] for n, _ in j.params}, mode="f64")
    return torch.from_numpy(b["t_" + yout])


@pytest.mark.parametrize("name", NAMES)
def test_forward_mode_matches_torch(name):
    x, _ = _data(name)
    v = torch.randn(x.shape, generator=torch.Generator().manual_seed(5), dtype=F64)
    v[1::5] = 0.0  # zero tangents too
    _, want = torch.func.jvp(lambda t: _reference(name, t), (x,), (v,))
    _close(_jvp(name, x, v), want, f"{name}: tangent")


def test_zero_tangent_where_the_derivative_is_infinite(tmp_path):
    """y = sqrt(x * keep) at x * keep = 0, where sqrt' = inf: a zero tangent gives exactly 0."""
    src = tmp_path / "sqrt0.py"
    src.write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def sqrt0(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    m = offs < n\n"
        "    x = tl.load(x_ptr + offs, mask=m, other=1.0)\n"
        "    tl.store(y_ptr + offs, tl.sqrt(x * tl.where(offs % 4 == 0, 0.0, 1.0)), mask=m)\n")
    ctx = kad.Context()
    ctx.add_source(str(src), src.read_text())
    j = ctx.specialize("sqrt0", f"x_ptr=*fp64,y_ptr=*fp64,n=i32,BLOCK={BLOCK}").jvp(["x_ptr"], ["y_ptr"])
    x = np.random.default_rng(0).uniform(0.5, 2.0, N)
    v = np.random.default_rng(1).standard_normal(N)
    b = {"x_ptr": x, "y_ptr": np.zeros(N), "t_x_ptr": v, "t_y_ptr": np.zeros(N), "n": N}
    j.run(((N + BLOCK - 1) // BLOCK,), {n: b[n] for n, _ in j.params}, mode="f64")
    t = b["t_y_ptr"]
    keep = np.ones(N)
    keep[::4] = 0.0
    assert np.all(t[::4] == 0.0), t[::4]
    want = 0.5 * v / np.sqrt(x)
    np.testing.assert_allclose(t[keep == 1], want[keep == 1], rtol=1e-12)


GRAD_DEVICE = os.environ.get("KAD_GRAD_TEST_DEVICE", "cpu")  # cuda: compiled (tests/gpu/run_all.sh)
TRITON_SKIP = {"pow_untaken": "Triton's interpreter has no libdevice.pow stand-in"} if GRAD_DEVICE == "cpu" else {}


@pytest.mark.parametrize("name", NAMES)
def test_emitted_backward_on_triton(name, tmp_path):
    if name in TRITON_SKIP:
        pytest.skip(TRITON_SKIP[name])
    pytest.importorskip("triton")
    params, grid, sig, shapes, scalars, consts, xin, yout = _setup(name)
    sig32 = sig.replace("fp64", "fp32")
    r = triton_cpu.run_kad(["grad", f"{FILE}:{name}", "--sig", sig32, "--wrt", xin, "--out", yout])
    assert r.returncode == 0, r.stderr
    path = tmp_path / f"{name}_bwd.py"
    path.write_text(r.stdout)
    x, dy = _data(name)
    want_y, want_g = _true_grad(name, x.float().double(), dy.float().double())
    dev = GRAD_DEVICE
    with triton_cpu.interpreter(dev):
        fwd = triton_cpu.load_module(os.path.join(REPO, FILE), f"kad_test_nonfinite_fwd_{name}")
        bwd = triton_cpu.load_module(str(path), f"kad_test_nonfinite_bwd_{name}")
        t = {xin: x.float().to(dev), yout: torch.zeros(shapes[yout], device=dev)}
        args = [t[p] if p in t else scalars[p] for p in params]
        getattr(fwd, name)[grid](*args, **consts)
        dx = torch.zeros(shapes[xin], device=dev)
        getattr(bwd, f"launch_{name}_bwd")(grid, *args, dy.float().to(dev), dx, **consts)
    dx = dx.cpu()
    assert torch.isfinite(dx).all(), f"{name}: {dx}"
    err = (dx.double() - want_g).abs().max().item()
    assert err <= 1e-4 * max(want_g.abs().max().item(), 1.0), f"{name}: max err {err:.3g}"


def test_row_that_takes_no_branch():
    """A row with no valid lane: count 0, its mean 0/0 = NaN in the untaken branch on every lane.
    The adjoint reaching the mean is 0 on every lane, so the division's strong zero holds for the
    whole row (a structural zero carried through the reduction): the row's gradient is 0, the
    other rows' PyTorch's (the double-where form), not NaN."""
    import kad
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(nonfinite.masked_center)
    torch.manual_seed(3)
    x0 = torch.randn(3, 10, dtype=torch.float64)
    valid = (torch.rand(3, 10) > 0.4).to(torch.int32)
    valid[1] = 0  # the row that takes no branch
    dy = torch.randn(3, 10, dtype=torch.float64)
    x = x0.clone().requires_grad_()
    y = torch.empty_like(x)
    with kad.f64_mode():
        k[(3,)](x, valid, y, 10, BLOCK=16)
    (y * dy).sum().backward()
    xr = x0.clone().requires_grad_()
    v = valid.bool()
    cnt = v.sum(1, keepdim=True).double()
    safe = torch.where(cnt > 0, cnt, torch.ones_like(cnt))
    mean = torch.where(v, xr, 0.0).sum(1, keepdim=True) / safe
    (torch.where(v, xr - mean, 0.0) * dy).sum().backward()
    assert torch.isfinite(x.grad).all(), x.grad
    torch.testing.assert_close(x.grad, xr.grad)
