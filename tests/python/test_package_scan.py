"""Scans (tl.associative_scan with a combine function, tl.cumprod), made differentiable with the
package and compared with PyTorch autograd of the same math written plainly (a Python loop over
time for the linear recurrence, torch.cumsum / torch.cumprod / torch.cummax; a product combine written by
hand, differentiated by the general rule); gradcheck'ed in
float64 on kad's interpreter.

The kernels are tests/kernels/scan.py's.  cumprod is checked with zeros in the input (one zero, two
zeros, a zero at the start and at the end): its gradient is computed without dividing by x.
The device comes from KAD_TEST_DEVICE (cpu: kad's interpreter; cuda: Triton).
"""
import os
import sys

import pytest
import torch
import triton

import kad

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/ -> `import kernels`
from kernels import scan  # noqa: E402

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")

lin_rec = kad.differentiable(inputs=["a_ptr", "b_ptr"], outputs=["h_ptr"])(scan.linear_recurrence_kernel)
scan_add = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(scan.scan_add_kernel)
cumprod = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(scan.cumprod_kernel)
running_max = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(scan.running_max_kernel)
scan_mul = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(scan.scan_mul_kernel)


def run_lin_rec(a, b, reverse):
    T, D = a.shape
    h = torch.empty_like(b)
    lin_rec[(triton.cdiv(D, 8),)](a, b, h, T, D, a.stride(0), BLOCK_T=triton.next_power_of_2(T), BLOCK_D=8,
                                  REVERSE=reverse)
    return h


def ref_lin_rec(a, b, reverse):
    # h_t = a_t * h_{t-1} + b_t (reverse: h_{t+1}), from h = 0, a plain loop over time
    T = a.shape[0]
    h = torch.zeros_like(b[0])
    out = [None] * T
    for t in (reversed(range(T)) if reverse else range(T)):
        h = a[t] * h + b[t]
        out[t] = h
    return torch.stack(out)


def run_rows(k, x, **c):
    R, N = x.shape
    y = torch.empty_like(x)
    k[(R,)](x, y, N, BLOCK=triton.next_power_of_2(N), **c)
    return y


def leaves(*ts):
    return [t.detach().clone().requires_grad_() for t in ts]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("T,D", [(16, 8), (13, 21)])
def test_linear_recurrence_matches_torch(reverse, T, D):
    g = torch.Generator().manual_seed(T * D + reverse)
    a0 = (0.5 + 0.6 * torch.rand(T, D, generator=g)).to(DEVICE)
    b0 = torch.randn(T, D, generator=g).to(DEVICE)
    dy = torch.randn(T, D, generator=g).to(DEVICE)
    a, b = leaves(a0, b0)
    h = run_lin_rec(a, b, reverse)
    ar, br = leaves(a0, b0)
    hr = ref_lin_rec(ar.double(), br.double(), reverse)
    torch.testing.assert_close(h.double(), hr.detach(), rtol=1e-5, atol=1e-5)
    (h * dy).sum().backward()
    (hr * dy.double()).sum().backward()
    torch.testing.assert_close(a.grad.double(), ar.grad.double(), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(b.grad.double(), br.grad.double(), rtol=1e-4, atol=1e-5)


def test_linear_recurrence_with_zero_decay_matches_torch():
    # a_t = 0 cuts the recurrence: gradients stop there, exactly
    T, D = 12, 8
    g = torch.Generator().manual_seed(3)
    a0 = torch.rand(T, D, generator=g)
    a0[4] = 0.0
    a0[9, ::2] = 0.0
    b0 = torch.randn(T, D, generator=g)
    for reverse in (False, True):
        a, b = leaves(a0.to(DEVICE), b0.to(DEVICE))
        run_lin_rec(a, b, reverse).sum().backward()
        ar, br = leaves(a0.double(), b0.double())
        ref_lin_rec(ar, br, reverse).sum().backward()
        torch.testing.assert_close(a.grad.cpu().double(), ar.grad, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(b.grad.cpu().double(), br.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(DEVICE != "cpu", reason="float64 gradcheck on kad's interpreter")
@pytest.mark.parametrize("reverse", [False, True])
def test_linear_recurrence_gradcheck(reverse):
    a = (0.5 + 0.5 * torch.rand(7, 10, dtype=torch.float64)).requires_grad_()
    b = torch.randn(7, 10, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: run_lin_rec(a, b, reverse), (a, b))


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_add_matches_cumsum(reverse):
    x0 = torch.randn(5, 37).to(DEVICE)
    dy = torch.randn(5, 37).to(DEVICE)
    (x,) = leaves(x0)
    y = run_rows(scan_add, x, REVERSE=reverse)
    (xr,) = leaves(x0.double())
    yr = xr.flip(1).cumsum(1).flip(1) if reverse else xr.cumsum(1)
    torch.testing.assert_close(y.double(), yr.detach(), rtol=1e-5, atol=1e-5)
    (y * dy).sum().backward()
    (yr * dy.double()).sum().backward()
    torch.testing.assert_close(x.grad.double(), xr.grad, rtol=1e-5, atol=1e-5)


ZEROS = {
    "none": [],
    "one": [5],
    "two": [3, 11],
    "first": [0],
    "last": [16],
    "first_and_last": [0, 16],
}


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("where", list(ZEROS))
def test_cumprod_with_zeros_matches_torch(reverse, where):
    g = torch.Generator().manual_seed(len(where) + 7 * reverse)
    x0 = 0.6 + 0.8 * torch.rand(3, 17, generator=g)
    x0[:, ZEROS[where]] = 0.0
    x0[2, 8] = 0.0  # and one more in one row only
    dy = torch.randn(3, 17, generator=g)
    (x,) = leaves(x0.to(DEVICE))
    y = run_rows(cumprod, x, REVERSE=reverse)
    (xr,) = leaves(x0.double())
    yr = xr.flip(1).cumprod(1).flip(1) if reverse else xr.cumprod(1)
    torch.testing.assert_close(y.cpu().double(), yr.detach(), rtol=1e-5, atol=1e-6)
    (y * dy.to(DEVICE)).sum().backward()
    (yr * dy.double()).sum().backward()
    assert torch.isfinite(x.grad).all()
    torch.testing.assert_close(x.grad.cpu().double(), xr.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(DEVICE != "cpu", reason="float64 gradcheck on kad's interpreter")
def test_cumprod_gradcheck_with_a_zero():
    x = (0.5 + torch.rand(2, 9, dtype=torch.float64))
    x[0, 4] = 0.0
    x.requires_grad_()
    assert torch.autograd.gradcheck(lambda x: run_rows(cumprod, x, REVERSE=False), (x,))


def test_running_max_matches_cummax():
    g = torch.Generator().manual_seed(11)
    x0 = torch.randn(4, 29, generator=g)
    dy = torch.randn(4, 29, generator=g)
    (x,) = leaves(x0.to(DEVICE))
    y = run_rows(running_max, x)
    (xr,) = leaves(x0.double())
    yr = torch.cummax(xr, 1).values
    torch.testing.assert_close(y.cpu().double(), yr.detach())
    (y * dy.to(DEVICE)).sum().backward()
    (yr * dy.double()).sum().backward()
    torch.testing.assert_close(x.grad.cpu().double(), xr.grad, rtol=1e-5, atol=1e-6)


def test_product_combine_matches_cumprod():
    # x * y written by hand: no special case recognizes it, the general rule (docs/AD.md, "Scans")
    # differentiates it; with zeros exactly (its Jacobians are products, nothing is divided)
    g = torch.Generator().manual_seed(5)
    x0 = 0.5 + torch.rand(3, 12, generator=g)
    x0[1, 4] = 0.0
    x0[2, [0, 11]] = 0.0
    dy = torch.randn(3, 12, generator=g)
    (x,) = leaves(x0.to(DEVICE))
    y = run_rows(scan_mul, x)
    (xr,) = leaves(x0.double())
    yr = xr.cumprod(1)
    torch.testing.assert_close(y.cpu().double(), yr.detach(), rtol=1e-5, atol=1e-6)
    (y * dy.to(DEVICE)).sum().backward()
    (yr * dy.double()).sum().backward()
    torch.testing.assert_close(x.grad.cpu().double(), xr.grad, rtol=1e-5, atol=1e-6)
