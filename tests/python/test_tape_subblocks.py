"""Pointers advanced by an inner loop of a taped loop (tests/kernels/subblocks.py): the outer loop's
state h is recorded on a tape, and its reverse sweep recomputes the pointers p and q for block i as
their start plus i times the inner loop's trip count times its step (also counted down: `p -= SUB`,
an int offset tile `off -= SUB`, over negative ranges).  Gradients against PyTorch
autograd of the same math in float64 (the interpreter in double on the CPU); KAD_TEST_DEVICE=cuda
runs the Triton forward and the generated backward."""
import contextlib
import os
import sys

import pytest
import torch

import kad

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from tests.kernels.subblocks import subblock_state, subblock_state_reverse  # noqa: E402

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")


def _ref(x, nb, nsub, sub, reverse=False):
    x = x.view(x.shape[0], nb, nsub, sub)
    h = torch.zeros(x.shape[0], sub, dtype=x.dtype)
    ys = [None] * nb
    for i in (range(nb - 1, -1, -1) if reverse else range(nb)):
        ys[i] = x[:, i] * h[:, None] + x[:, i]
        h = torch.sigmoid(h * 0.5 + x[:, i].sum(1)) - 0.5
    return torch.stack(ys, 1).reshape(x.shape[0], -1)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "counted_down"])
@pytest.mark.parametrize("nb,nsub", [(3, 2), (1, 4), (4, 1)])
def test_pointers_walked_by_an_inner_loop(nb, nsub, reverse):
    rows, sub = 2, 8
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(subblock_state_reverse if reverse else subblock_state)
    g = torch.Generator().manual_seed(nb * 10 + nsub)
    dt = torch.float64 if DEVICE == "cpu" else torch.float32
    x0 = torch.randn(rows, nb * nsub * sub, generator=g, dtype=torch.float64)
    dy = torch.randn(rows, nb * nsub * sub, generator=g, dtype=torch.float64)
    x = x0.to(DEVICE, dt).requires_grad_()
    y = torch.empty_like(x)
    mode = kad.f64_mode(typed_as=torch.float32) if DEVICE == "cpu" else contextlib.nullcontext()
    with mode:
        k[(rows,)](x, y, nb, NSUB=nsub, SUB=sub)
        (got,) = torch.autograd.grad(y, (x,), dy.to(DEVICE, dt))
    xr = x0.clone().requires_grad_()
    ref = _ref(xr, nb, nsub, sub, reverse)
    (want,) = torch.autograd.grad(ref, (xr,), dy)
    tol = dict(rtol=1e-10, atol=1e-10) if DEVICE == "cpu" else dict(rtol=2e-5, atol=2e-5)
    torch.testing.assert_close(y.detach().double().cpu(), ref.detach(), **tol)
    torch.testing.assert_close(got.double().cpu(), want, **tol)
