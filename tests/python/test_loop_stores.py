"""Stores inside loops whose address does not depend on the iteration (issue 33, item 4).

A running state written out after every step, or under `if t == T - 1`, a value overwritten by
each iteration, a nested loop whose inner steps rewrite one row, a `while` loop, and iterations
whose rows overlap the next one's (y[i : i + BLOCK]): the output
keeps the last write, so the last write's value gets the output's gradient and every earlier one
none.  kad's backward visits the iterations backwards (the loop's tape) and each store reads its
gradient and clears it (docs/AD.md, "Stores in loops").  Gradients and tangents are compared with
PyTorch autograd of the same math in float64 (on the CPU the interpreter computes in double,
kad.f64_mode(typed_as=torch.float32)); KAD_TEST_DEVICE=cuda runs the Triton forward and the
generated backward module instead, twice, bitwise equal.

Negative cases: programs that store one row race (refused before the forward, the output left
as it was); a loop whose step is a runtime value cannot be visited backwards (refused, located).
"""
import contextlib
import os
import subprocess
import sys

import pytest
import torch

import kad

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from tests.kernels import loop_store as L  # noqa: E402

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
R, S, T, D = 3, 2, 5, 8
KAD = os.path.join(REPO, "build", "kad")


def _mode():
    return kad.f64_mode(typed_as=torch.float32) if DEVICE == "cpu" else contextlib.nullcontext()


def _dt():
    return torch.float64 if DEVICE == "cpu" else torch.float32


def _state(x):
    h = torch.zeros_like(x[:, 0])
    for t in range(x.shape[1]):
        h = torch.sigmoid(0.5 * h + x[:, t]) * 2.0 - 1.0
    return h


def _masked(x):
    h = torch.zeros_like(x[:, 0])
    for t in range(x.shape[1]):
        h = torch.maximum(h * 0.9, x[:, t])
    return h


def _nested(x):
    h = torch.zeros_like(x[:, :, 0])
    for t in range(x.shape[2]):
        h = h * 0.5 + torch.exp(x[:, :, t] * 0.25)
    return h


def _while(x):
    h = torch.zeros_like(x[:, 0])
    for t in range(x.shape[1]):
        h = h * x[:, t] + 1.0
    return h


def _shifted(x, steps=4):
    y = torch.zeros(steps + x.shape[0] - 1, dtype=x.dtype)
    for i in range(steps):
        y[i:i + x.shape[0]] = x * (i + 1.0)
    return y


# name: (x's shape, y's shape, launch(k, x, y), reference(x) in torch)
CASES = {
    "running_state_every_iter": ((R, T, D), (R, D), lambda k, x, y: k[(R,)](x, y, T, D=D), _state),
    "running_sum_if_last": ((R, T, D), (R, D), lambda k, x, y: k[(R,)](x, y, T, D=D), lambda x: (x * x).sum(1)),
    "running_sum_every_iter": ((R, T, D), (R, D), lambda k, x, y: k[(R,)](x, y, T, D=D), lambda x: 3.0 * x.sum(1)),
    "masked_state_every_iter": ((R, T, 6), (R, 6), lambda k, x, y: k[(R,)](x, y, T, 6, BLOCK=8), _masked),
    "last_value": ((R, T, D), (R, D), lambda k, x, y: k[(R,)](x, y, T, D=D), lambda x: x[:, -1] * x[:, -1] * 0.5),
    "nested_rows": ((R, S, T, D), (R, S, D), lambda k, x, y: k[(R,)](x, y, S, T, D=D), _nested),
    "state_while": ((R, T, D), (R, D), lambda k, x, y: k[(R,)](x, y, T, D=D), _while),
    "shifted_rows": ((8,), (11,), lambda k, x, y: k[(1,)](x, y, STEPS=4, BLOCK=8), _shifted),
}


def _inputs(name, seed=0):
    xs, ys, _, _ = CASES[name]
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(xs, generator=g, dtype=torch.float64)
    if name == "state_while":
        x = x * 0.5 + 1.0  # (a product over the steps: keep it near 1)
    dy = torch.randn(ys, generator=g, dtype=torch.float64)
    return x.to(DEVICE, _dt()), dy.to(DEVICE, _dt())


def _run(name, x, dy):
    xs, ys, launch, _ = CASES[name]
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(getattr(L, name))
    x = x.detach().clone().requires_grad_()
    y = torch.full(ys, 7.0, device=DEVICE, dtype=x.dtype)
    with _mode():
        launch(k, x, y)
        (g,) = torch.autograd.grad(y, (x,), dy)
    return y.detach(), g


def _tol():
    return dict(rtol=1e-10, atol=1e-10) if DEVICE == "cpu" else dict(rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_last_write_wins(name):
    x, dy = _inputs(name)
    y, g = _run(name, x, dy)
    xr = x.detach().double().cpu().requires_grad_()
    ref = CASES[name][3](xr)
    (want,) = torch.autograd.grad(ref, (xr,), dy.double().cpu())
    torch.testing.assert_close(y.double().cpu(), ref.detach(), **_tol())
    torch.testing.assert_close(g.double().cpu(), want, **_tol())
    if DEVICE != "cpu":  # deterministic: the same bits again
        y2, g2 = _run(name, x, dy)
        assert torch.equal(g, g2) and torch.equal(y, y2)


def test_overwritten_values_get_no_gradient():
    """last_value: only the last step's x reaches y, the others' gradient is exactly 0."""
    x, dy = _inputs("last_value")
    _, g = _run("last_value", x, dy)
    assert torch.count_nonzero(g[:, :-1]) == 0
    assert torch.count_nonzero(g[:, -1]) == g[:, -1].numel()


@pytest.mark.parametrize("name", ["running_state_every_iter", "last_value", "nested_rows"])
def test_tangents(name):
    """Forward mode: the tangent of y is that of the last write."""
    xs, ys, launch, ref = CASES[name]
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(getattr(L, name))
    x, _ = _inputs(name)
    tx = torch.randn(xs, generator=torch.Generator().manual_seed(3), dtype=torch.float64).to(DEVICE, x.dtype)

    def f(a):
        y = torch.zeros(ys, device=DEVICE, dtype=a.dtype)
        launch(k, a, y)
        return y

    with _mode():
        _, t = torch.func.jvp(f, (x,), (tx,))
    _, t_ref = torch.func.jvp(ref, (x.double().cpu(),), (tx.double().cpu(),))
    torch.testing.assert_close(t.double().cpu(), t_ref, **_tol())


def test_racing_programs_refused_before_the_forward():
    """Every program stores row 0: refused at the launch, located at the store, y untouched."""
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(L.racing_rows)
    x = torch.randn(R, T, D, device=DEVICE, requires_grad=True)
    y = torch.full((D,), 7.0, device=DEVICE)
    with pytest.raises(kad.KadError, match=r"loop_store.py:\d+:\d+: .*another program of the launch also writes"):
        k[(R,)](x, y, T, D=D)
    assert torch.all(y == 7.0)


def test_runtime_step_refused_located():
    """A loop whose step is a runtime value (2 here) cannot be run backwards: a located error that names
    the store whose last write needs it."""
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(L.runtime_step)
    x = torch.randn(R, T, D, device=DEVICE, requires_grad=True)
    y = torch.zeros(R, D, device=DEVICE)
    with pytest.raises(kad.KadError, match=r"loop_store.py:\d+:\d+: error: the store at line \d+ may write one "
                                           r"element of its output in several iterations"):
        k[(R,)](x, y, T, 2, D=D)


@pytest.mark.skipif(not os.path.exists(KAD), reason="build/kad not built (make)")
@pytest.mark.parametrize("name", ["running_state_every_iter", "running_sum_if_last", "last_value", "state_while"])
def test_finite_differences(name):
    """kad check: the backward against float64 finite differences on the interpreter."""
    src = os.path.join(REPO, "tests", "kernels", "loop_store.py")
    r = subprocess.run([KAD, "check", f"{src}:{name}", "--sig", "x_ptr=*fp32,y_ptr=*fp32,T=i32,D=8", "--wrt", "x_ptr",
                        "--out", "y_ptr", "--grid", "3", "--shape", "x_ptr=120", "--shape", "y_ptr=24", "--arg", "T=5"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout + r.stderr


def _scattered(perm):
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(L.scattered_state)
    x, dy = _inputs("running_state_every_iter")
    x = x.detach().clone().requires_grad_()
    idx = torch.tensor(perm, device=DEVICE, dtype=torch.int32)
    y = torch.full((R, D), 7.0, device=DEVICE, dtype=x.dtype)
    with _mode():
        k[(R,)](x, idx, y, T, D=D)
        (g,) = torch.autograd.grad(y, (x,), dy)
    return x, y, dy, g


def test_scattered_rows_checked_on_the_data():
    """Rows scattered through loaded indices: distinct indices pass the one-writer check (whose kernel
    counts a store's repeated writes from its own iterations as the ordered overwrites they are)."""
    x, y, dy, g = _scattered([2, 0, 1])
    xr = x.detach().double().cpu().requires_grad_()
    h = torch.zeros(R, D, dtype=torch.float64)
    for t in range(T):
        h = h * 0.5 + xr[:, t] * xr[:, t]
    ref = torch.empty_like(h)
    ref[[2, 0, 1]] = h
    (want,) = torch.autograd.grad(ref, (xr,), dy.double().cpu())
    torch.testing.assert_close(y.double().cpu(), ref.detach(), **_tol())
    torch.testing.assert_close(g.double().cpu(), want, **_tol())


def test_scattered_rows_duplicate_index_refused():
    """Two programs' rows scattered to one row: refused before the forward, y untouched."""
    with pytest.raises(kad.KadError, match=r"loop_store.py:\d+:\d+: .*another program of the launch also writes"):
        _scattered([1, 0, 1])


def test_rotary_in_place_two_sites_in_a_loop():
    """Two half-head stores in place inside a head loop (rotary embeddings on q): the two sites are
    ordered within each iteration and across them; gradients equal autograd's."""
    Tn, Hn, Dn = 4, 3, 8
    k = kad.differentiable(inputs=["q_ptr"], outputs=["q_ptr"])(L.rotary_inplace_loop)
    g = torch.Generator().manual_seed(5)
    q0, dy = (torch.randn(Tn, Hn, Dn, generator=g, dtype=torch.float64).to(DEVICE, _dt()) for _ in range(2))
    c, s = (torch.randn(Tn, Dn // 2, generator=g, dtype=torch.float64).to(DEVICE, _dt()) for _ in range(2))
    leaf = q0.clone().requires_grad_()
    q = leaf.clone()
    with _mode():
        k[(Tn,)](q, c, s, Hn * Dn, Dn, Hn, HALF=Dn // 2)
        (got,) = torch.autograd.grad(q, (leaf,), dy)
    xr = q0.double().cpu().requires_grad_()
    cc, ss = c.double().cpu()[:, None], s.double().cpu()[:, None]
    x1, x2 = xr[..., :Dn // 2], xr[..., Dn // 2:]
    ref = torch.cat([x1 * cc - x2 * ss, x2 * cc + x1 * ss], -1)
    (want,) = torch.autograd.grad(ref, (xr,), dy.double().cpu())
    torch.testing.assert_close(q.detach().double().cpu(), ref.detach(), **_tol())
    torch.testing.assert_close(got.double().cpu(), want, **_tol())


@pytest.mark.parametrize("n", [16, 40])
def test_store_before_a_loop(n):
    """A store of the first tile before a loop whose first iteration overwrites it (n = 16: only
    the loop's write stays; 40: three tiles)."""
    sys.path.insert(0, os.path.join(REPO, "tests", "grad"))
    import store_before_loop as S
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(S.before_loop)
    g = torch.Generator().manual_seed(2)
    x, dy = (torch.randn(48, generator=g, dtype=torch.float64).to(DEVICE, _dt()) for _ in range(2))
    x = x.requires_grad_()
    y = torch.zeros(48, device=DEVICE, dtype=x.dtype)
    with _mode():
        k[(1,)](x, y, n, BLOCK=16)
        (got,) = torch.autograd.grad(y, (x,), dy)
    xr = x.detach().double().cpu().requires_grad_()
    ref = torch.zeros(48, dtype=torch.float64)
    ref[:16] = xr[:16]
    m = -(-n // 16) * 16
    ref[:m] = xr[:m] * 2.0
    (want,) = torch.autograd.grad(ref, (xr,), dy.double().cpu())
    torch.testing.assert_close(y.detach().double().cpu(), ref.detach(), **_tol())
    torch.testing.assert_close(got.double().cpu(), want, **_tol())
