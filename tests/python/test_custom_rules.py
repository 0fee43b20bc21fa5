"""Custom derivatives (docs/AD.md "Custom derivatives") through the package, and
kad.backward (the generated backward launched directly).

The rules of custom_kernels.py live in custom_kernels_rules.py, registered with
kad.vjp_of / kad.nondiff when it is imported; the kernels never import them.
Every gradient is compared with PyTorch autograd of the same math written
plainly, or with float64 finite differences (gradcheck in kad.f64_mode).
CPU tensors run on kad's interpreter; KAD_TEST_DEVICE=cuda runs them with Triton.
"""
import os
import subprocess

import pytest
import torch

import custom_kernels as ck
import custom_kernels_rules  # noqa: F401  (registers the rules)
import custom_kernels_wrong  # noqa: F401  (a wrong rule for ck.lse_wrong only)
import kad

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KAD = os.environ.get("KAD_BIN", os.path.join(REPO, "build", "kad"))

lse_rows = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(ck.lse_rows)
lse_rows_auto = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(ck.lse_rows_auto)
lse_rows_wrong = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(ck.lse_rows_wrong)
round_ste = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(ck.round_ste)
scaled = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(ck.scaled)
stopped = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(ck.stopped)
scale_rows = kad.differentiable(inputs=["x_ptr", "k_ptr"], outputs=["y_ptr"])(ck.scale_rows)


def lse(kernel, x):
    M, N = x.shape
    y = torch.empty(M, dtype=x.dtype, device=x.device)
    kernel[(M,)](x, y, N, BLOCK=16)
    return y


def test_rules_are_registered():
    kinds = {(k, h.fn.__name__, r.fn.__name__ if r is not None else None)
             for k, h, r, _ in kad.rules.registered_rules()}
    assert ("vjp_of", "lse_naive", "lse_vjp") in kinds
    assert ("jvp_of", "scale_by", "scale_by_jvp") in kinds
    assert ("nondiff", "abs_max", None) in kinds


def test_stable_rule_fixes_the_overflowing_automatic_derivative():
    torch.manual_seed(0)
    x0 = 100.0 + 3 * torch.randn(4, 13, device=DEVICE)  # exp overflows fp32
    dy = torch.randn(4, device=DEVICE)
    xa = x0.clone().requires_grad_()
    lse(lse_rows_auto, xa).backward(dy)
    assert not torch.isfinite(xa.grad).all()  # kad's own derivative of the naive helper
    x = x0.clone().requires_grad_()
    lse(lse_rows, x).backward(dy)
    xr = x0.clone().requires_grad_()
    torch.logsumexp(xr, dim=1).backward(dy)
    assert torch.isfinite(x.grad).all()
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-5, atol=1e-6)


def test_rule_forward_is_the_helper_and_gradcheck_passes():
    torch.manual_seed(1)
    x = torch.randn(3, 11, device=DEVICE)
    torch.testing.assert_close(lse(lse_rows, x), torch.logsumexp(x, dim=1), rtol=1e-5, atol=1e-5)
    if DEVICE == "cpu":
        xd = x.double().requires_grad_()
        with kad.f64_mode():
            assert torch.autograd.gradcheck(lambda t: lse(lse_rows, t), (xd,))


def test_wrong_rule_is_caught_by_gradcheck():
    torch.manual_seed(2)
    x = torch.randn(3, 11, dtype=torch.float64).requires_grad_()
    with kad.f64_mode():
        assert torch.autograd.gradcheck(lambda t: lse(lse_rows_auto, t), (x,))
        with pytest.raises(RuntimeError, match="Jacobian mismatch"):
            torch.autograd.gradcheck(lambda t: lse(lse_rows_wrong, t), (x,))


def _cli_check(rules):
    cmd = [KAD, "check", "tests/grad/custom_rules.py:lse_rows", "--sig", "x_ptr=*fp32,y_ptr=*fp32,N=i32,BLOCK=16",
           "--wrt", "x_ptr", "--out", "y_ptr", "--grid", "3", "--shape", "x_ptr=39", "--shape", "y_ptr=3",
           "--arg", "N=13", "--rules", rules]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)


def test_kad_check_passes_the_rule_and_fails_the_wrong_one():
    good = _cli_check("tests/rules/custom_rules_vjp.py")
    assert good.returncode == 0 and "PASS" in good.stdout, good.stdout + good.stderr
    bad = _cli_check("tests/rules/custom_rules_wrong.py")
    assert bad.returncode == 1 and "FAIL" in bad.stdout, bad.stdout + bad.stderr


def test_straight_through_rounding():
    torch.manual_seed(3)
    x0 = 4 * torch.randn(37, device=DEVICE)
    dy = torch.randn(37, device=DEVICE)
    x = x0.clone().requires_grad_()
    y = torch.empty_like(x)
    round_ste[(3,)](x, y, 37, BLOCK=16)
    y.backward(dy)
    xr = x0.clone().requires_grad_()
    yr = (xr + (torch.floor(xr + 0.5) - xr).detach()) * 2.0
    yr.backward(dy)
    torch.testing.assert_close(y, yr.detach())
    torch.testing.assert_close(x.grad, xr.grad)


def test_nondiff_helper():
    torch.manual_seed(4)
    x0 = torch.randn(5, 13, device=DEVICE)
    dy = torch.randn(5, 13, device=DEVICE)
    x = x0.clone().requires_grad_()
    y = torch.empty_like(x)
    scaled[(5,)](x, y, 13, BLOCK=16)
    y.backward(dy)
    xr = x0.clone().requires_grad_()
    (xr / xr.abs().amax(dim=1, keepdim=True).detach()).backward(dy)
    torch.testing.assert_close(x.grad, xr.grad)


def test_kad_stop_gradient_by_name():
    torch.manual_seed(5)
    x0 = torch.randn(21, device=DEVICE)
    dy = torch.randn(21, device=DEVICE)
    x = x0.clone().requires_grad_()
    y = torch.empty_like(x)
    stopped[(2,)](x, y, 21, BLOCK=16)
    y.backward(dy)
    xr = x0.clone().requires_grad_()
    (xr * xr.detach()).backward(dy)
    torch.testing.assert_close(x.grad, xr.grad)


def test_rule_with_two_gradients():
    torch.manual_seed(6)
    x0, k0 = torch.randn(4, 13, device=DEVICE), torch.randn(4, device=DEVICE)
    dy = torch.randn(4, 13, device=DEVICE)
    x, k = x0.clone().requires_grad_(), k0.clone().requires_grad_()
    y = torch.empty_like(x)
    scale_rows[(4,)](x, k, y, 13, BLOCK=16)
    y.backward(dy)
    xr, kr = x0.clone().requires_grad_(), k0.clone().requires_grad_()
    (xr * kr[:, None]).backward(dy)
    torch.testing.assert_close(x.grad, xr.grad)
    torch.testing.assert_close(k.grad, kr.grad, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- kad.backward


def test_backward_api_matches_the_decorated_path():
    torch.manual_seed(7)
    x0, k0 = torch.randn(4, 13, device=DEVICE), torch.randn(4, device=DEVICE)
    dy = torch.randn(4, 13, device=DEVICE)
    y = torch.empty_like(x0)
    scale_rows[(4,)](x0, k0, y, 13, BLOCK=16)  # no grad: a plain launch
    g = kad.backward(scale_rows, (4,), x0, k0, y, 13, BLOCK=16, grads={"y_ptr": dy})
    assert set(g) == {"x_ptr", "k_ptr"}
    x, k = x0.clone().requires_grad_(), k0.clone().requires_grad_()
    y2 = torch.empty_like(x0)
    scale_rows[(4,)](x, k, y2, 13, BLOCK=16)
    y2.backward(dy)
    torch.testing.assert_close(g["x_ptr"], x.grad, rtol=0, atol=0)
    torch.testing.assert_close(g["k_ptr"], k.grad, rtol=0, atol=0)
    only = kad.backward(scale_rows, (4,), x0, k0, y, 13, BLOCK=16, grads={"y_ptr": dy}, wrt=["k_ptr"])
    assert set(only) == {"k_ptr"}
    torch.testing.assert_close(only["k_ptr"], k.grad, rtol=0, atol=0)
    zero = kad.backward(scale_rows, (4,), x0, k0, y, 13, BLOCK=16, grads={})
    assert not zero["x_ptr"].any() and not zero["k_ptr"].any()


def test_backward_api_inside_a_custom_autograd_function():
    class LSE(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
            ck.lse_rows[(x.shape[0],)](x, y, x.shape[1], BLOCK=16) if x.is_cuda else \
                lse_rows.run(x, y, x.shape[1], BLOCK=16, grid=(x.shape[0],))
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, dy):
            x, y = ctx.saved_tensors
            return kad.backward(lse_rows, (x.shape[0],), x, y, x.shape[1], BLOCK=16, grads={"y_ptr": dy})["x_ptr"]

    torch.manual_seed(8)
    x0 = torch.randn(3, 13, device=DEVICE)
    dy = torch.randn(3, device=DEVICE)
    x = x0.clone().requires_grad_()
    LSE.apply(x).backward(dy)
    xr = x0.clone().requires_grad_()
    torch.logsumexp(xr, dim=1).backward(dy)
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-5, atol=1e-6)


def test_backward_api_errors():
    x, y = torch.randn(2, 13, device=DEVICE), torch.empty(2, device=DEVICE)
    with pytest.raises(ValueError, match="not an output"):
        kad.backward(lse_rows, (2,), x, y, 13, BLOCK=16, grads={"x_ptr": y})
    with pytest.raises(ValueError, match="not an input"):
        kad.backward(lse_rows, (2,), x, y, 13, BLOCK=16, grads={"y_ptr": y}, wrt=["y_ptr"])
    with pytest.raises(TypeError, match="kad.differentiable"):
        kad.backward(ck.lse_rows, (2,), x, y, 13, BLOCK=16, grads={"y_ptr": y})


def test_vjp_of_needs_jit_functions():
    with pytest.raises(TypeError, match="@triton.jit"):
        kad.vjp_of(lambda x: x)
    with pytest.raises(TypeError, match="above @triton.jit"):
        kad.vjp_of(ck.lse_naive)(lambda x, d: d)


def test_jvp_rule_through_torch_func():
    # scale_by has a jvp rule (custom_kernels_rules.scale_by_jvp): forward mode uses it
    torch.manual_seed(4)
    x, k = torch.randn(4, 13, device=DEVICE), torch.randn(4, device=DEVICE)
    tx, tk = torch.randn(4, 13, device=DEVICE), torch.randn(4, device=DEVICE)

    def f(x, k):
        y = torch.empty_like(x)
        scale_rows[(4,)](x, k, y, 13, BLOCK=16)
        return y

    y, t = torch.func.jvp(f, (x, k), (tx, tk))
    yr, tr = torch.func.jvp(lambda x, k: x * k[:, None], (x, k), (tx, tk))
    torch.testing.assert_close(y, yr)
    torch.testing.assert_close(t, tr)


def test_vjp_only_rule_refused_in_forward_mode():
    # lse_naive has a vjp rule only: its automatic tangent could disagree with it, so forward mode refuses
    x, v = torch.randn(4, 13, device=DEVICE), torch.randn(4, 13, device=DEVICE)
    with pytest.raises(kad.KadError, match=r"custom_kernels\.py:\d+:\d+: error: forward mode: .*needs a @kad.jvp_of rule"):
        torch.func.jvp(lambda u: lse(lse_rows, u), (x,), (v,))


def test_straight_through_jvp_rule():
    # round_half's jvp rule is the identity (the automatic tangent of floor would be 0): the tangent
    # of round_half(x) * 2 is 2 tx, and reverse mode (its vjp rule) agrees: <J v, w> = <v, J^T w>
    torch.manual_seed(8)
    x, v, w = (torch.randn(37, device=DEVICE) for _ in range(3))

    def f(u):
        y = torch.empty_like(u)
        round_ste[(3,)](u, y, 37, BLOCK=16)
        return y

    y, t = torch.func.jvp(f, (x,), (v,))
    torch.testing.assert_close(y, torch.floor(x + 0.5) * 2)
    torch.testing.assert_close(t, 2 * v)
    xg = x.clone().requires_grad_()
    f(xg).backward(w)
    torch.testing.assert_close((t * w).sum(), (v * xg.grad).sum())
