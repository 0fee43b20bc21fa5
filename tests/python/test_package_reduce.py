"""tl.reduce with a combine function, made differentiable with the package and compared with
PyTorch autograd of the same math written plainly (torch.var_mean, torch.sum, torch.amax,
torch.logsumexp); gradcheck'ed in float64 on kad's interpreter.

The kernels are tests/kernels/reduce.py's: Welford's (mean, count, M2) combine is differentiated
by the general rule (the VJP of f(f(P_i, x_i), S_i), docs/AD.md, "Reduces").
The device comes from KAD_TEST_DEVICE (cpu: kad's interpreter; cuda: Triton).
"""
import os
import sys

import pytest
import torch
import triton

import kad

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/ -> `import kernels`
from kernels import reduce as red  # noqa: E402

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")

welford = kad.differentiable(inputs=["x_ptr"], outputs=["var_ptr", "mean_ptr"])(red.welford_kernel)
rsum = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(red.reduce_sum_kernel)
rmax = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(red.reduce_max_kernel)
lse = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(red.logsumexp_kernel)


def run_welford(x, correction=1.0, block_n=8):
    M, N = x.shape
    var = torch.empty(M, device=x.device, dtype=x.dtype)
    mean = torch.empty(M, device=x.device, dtype=x.dtype)
    welford[(triton.cdiv(M, 2),)](x, var, mean, M, N, correction, BLOCK_M=2, BLOCK_N=block_n)
    return var, mean


@pytest.mark.parametrize("shape,block_n", [((5, 19), 8), ((3, 4), 8), ((4, 33), 16)])
def test_welford_matches_var_mean(shape, block_n):
    x0 = (torch.randn(*shape) + 0.5).to(DEVICE)
    dv, dm = torch.randn(shape[0]).to(DEVICE), torch.randn(shape[0]).to(DEVICE)
    x = x0.clone().requires_grad_()
    var, mean = run_welford(x, block_n=block_n)
    xr = x0.double().clone().requires_grad_()
    vr, mr = torch.var_mean(xr, 1, correction=1)
    torch.testing.assert_close(var.double(), vr.detach(), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(mean.double(), mr.detach(), rtol=1e-4, atol=1e-5)
    ((var * dv).sum() + (mean * dm).sum()).backward()
    ((vr * dv.double()).sum() + (mr * dm.double()).sum()).backward()
    torch.testing.assert_close(x.grad.double(), xr.grad, rtol=1e-4, atol=1e-5)


def test_sum_max_lse_match_torch():
    x0 = torch.randn(3, 13).to(DEVICE)
    x = x0.clone().requires_grad_()
    xr = x0.double().clone().requires_grad_()
    y = torch.empty(3, device=DEVICE)
    rsum[(3,)](x, y, 13, BLOCK=16)
    m = torch.empty(3, device=DEVICE)
    rmax[(2,)](x, m, 3, 13, BLOCK_M=2, BLOCK_N=16)
    s = torch.empty(1, device=DEVICE)
    lse[(1,)](x, s, 3, 13, BLOCK_M=4, BLOCK_N=16)
    yr, mr, sr = xr.sum(1), xr.amax(1), torch.logsumexp(xr, 1).sum().reshape(1)
    for a, b in ((y, yr), (m, mr), (s, sr)):
        torch.testing.assert_close(a.double(), b.detach(), rtol=1e-5, atol=1e-5)
    w = torch.randn(7).to(DEVICE)
    (w[:3] @ y + w[3:6] @ m + w[6] * s[0]).backward()
    (w[:3].double() @ yr + w[3:6].double() @ mr + w[6].double() * sr[0]).backward()
    torch.testing.assert_close(x.grad.double(), xr.grad, rtol=1e-5, atol=1e-5)


def test_max_combine_ties_share_like_amax():
    # values rounded to 0.5: several lanes of a row hold its maximum; a tl.maximum combine has
    # tl.max's rule (ties share the adjoint evenly), as torch.amax
    x0 = (torch.randint(-2, 3, (3, 13)) * 0.5).float().to(DEVICE)
    x = x0.clone().requires_grad_()
    xr = x0.double().clone().requires_grad_()
    m = torch.empty(3, device=DEVICE)
    rmax[(2,)](x, m, 3, 13, BLOCK_M=2, BLOCK_N=16)
    mr = xr.amax(1)
    torch.testing.assert_close(m.double(), mr.detach())
    w = torch.randn(3).to(DEVICE)
    (m * w).sum().backward()
    (mr * w.double()).sum().backward()
    torch.testing.assert_close(x.grad.double(), xr.grad, rtol=1e-6, atol=1e-6)


methods = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr", "c_ptr"])(red.method_reduce_kernel)


def test_method_forms_match_torch():
    # x.reduce(1, add, keep_dims=True) + (x * x).reduce(axis=1, combine_fn=larger, keep_dims=True)
    # and x.associative_scan(1, add): torch's sum + amax of squares and cumsum, with gradients
    x0 = torch.randn(5, 13).to(DEVICE)
    x = x0.clone().requires_grad_()
    xr = x0.double().clone().requires_grad_()
    y = torch.empty(5, device=DEVICE)
    c = torch.empty(5, 13, device=DEVICE)
    methods[(3,)](x, y, c, 5, 13, BLOCK_M=2, BLOCK_N=16)
    yr, cr = xr.sum(1) + (xr * xr).amax(1), xr.cumsum(1)
    torch.testing.assert_close(y.double(), yr.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(c.double(), cr.detach(), rtol=1e-5, atol=1e-5)
    wy, wc = torch.randn(5).to(DEVICE), torch.randn(5, 13).to(DEVICE)
    ((y * wy).sum() + (c * wc).sum()).backward()
    ((yr * wy.double()).sum() + (cr * wc.double()).sum()).backward()
    torch.testing.assert_close(x.grad.double(), xr.grad, rtol=1e-4, atol=1e-5)
