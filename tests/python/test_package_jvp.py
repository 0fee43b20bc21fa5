"""Forward mode through the package: torch.func.jvp and torch.autograd.forward_ad on decorated kernels.

The kernels of test_package_models (SwiGLU, RMSNorm, softmax with heuristics, cross-entropy; its
LayerNorm stores undeclared statistics, which kad's operators refuse under torch.func) against PyTorch's forward AD of the same math written plainly in torch
(test_package_models' references), and scans (a linear recurrence by tl.associative_scan, tl.cumprod) and
tl.sort against torch's loop, torch.cumprod and torch.sort.  CPU tensors run kad's interpreter, CUDA tensors the generated
launch_<kernel>_jvp (KAD_TEST_DEVICE=cuda, as the other package tests).  Also: jvp in kad.f64_mode()
matches to 1e-10, and a tangent given to an argument the decorator does not declare is refused.
"""
import os

import pytest
import torch
import torch.autograd.forward_ad as fwAD

import torch.nn.functional as F
import triton
import triton.language as tl

import kad
import test_package_models as m

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")


def rnd(*shape, scale=1.0, shift=0.0, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (scale * torch.randn(*shape, generator=g, dtype=torch.float64) + shift).to(device=DEVICE, dtype=dtype)


@kad.differentiable(inputs=["X_ptr", "W_ptr"], outputs=["Y_ptr", "RSTD_ptr"])
@triton.jit
def rms_norm_kernel(Y_ptr, X_ptr, W_ptr, RSTD_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    # RMSNorm whose saved statistic is a declared output (torch.func refuses undeclared stores)
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(W_ptr + cols, mask=mask, other=0.0)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(RSTD_ptr + row, rstd)
    tl.store(Y_ptr + row * n_cols + cols, x * rstd * w, mask=mask)


def rms_norm(x, w, eps=1e-6):
    y, rstd = torch.empty_like(x), torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    rms_norm_kernel[(x.shape[0],)](y, x, w, rstd, x.shape[1], eps, BLOCK_SIZE=triton.next_power_of_2(x.shape[1]))
    return y, rstd


def ref_rms_norm(x, w, eps=1e-6):
    rstd = torch.rsqrt((x * x).mean(-1) + eps)
    return x * rstd[:, None] * w, rstd


@triton.jit
def _first_order(a1, b1, a2, b2):
    return a1 * a2, a2 * b1 + b2


@kad.differentiable(inputs=["a_ptr", "b_ptr"], outputs=["h_ptr"])
@triton.jit
def recurrence_kernel(a_ptr, b_ptr, h_ptr, T, BLOCK: tl.constexpr):
    # h_t = a_t * h_{t-1} + b_t along each row: an associative scan on (a, b) pairs
    row = tl.program_id(0)
    t = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + row * T + t, mask=t < T, other=1.0)
    b = tl.load(b_ptr + row * T + t, mask=t < T, other=0.0)
    _, h = tl.associative_scan((a, b), 0, _first_order)
    tl.store(h_ptr + row * T + t, h, mask=t < T)


def recurrence(a, b):
    h = torch.empty_like(b)
    recurrence_kernel[(a.shape[0],)](a, b, h, a.shape[1], BLOCK=triton.next_power_of_2(a.shape[1]))
    return h


def ref_recurrence(a, b):
    hs, h = [], torch.zeros_like(b[:, 0])
    for t in range(a.shape[1]):
        h = a[:, t] * h + b[:, t]
        hs.append(h)
    return torch.stack(hs, 1)


@kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr", "s_ptr"])
@triton.jit
def cumprod_sort_kernel(x_ptr, y_ptr, s_ptr, T, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    t = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * BLOCK + t)
    tl.store(y_ptr + row * BLOCK + t, tl.cumprod(x, 0))
    tl.store(s_ptr + row * BLOCK + t, tl.sort(x, descending=True))


def cumprod_sort(x):
    y, s = torch.empty_like(x), torch.empty_like(x)
    cumprod_sort_kernel[(x.shape[0],)](x, y, s, x.shape[1], BLOCK=x.shape[1])
    return y, s


labels = torch.randint(0, 50, (8,), generator=torch.Generator().manual_seed(3))

CASES = {  # name -> (kad function, torch reference, primal shapes (scale, shift))
    "swiglu": (m.swiglu, lambda a, b: a * torch.sigmoid(a) * b, [((6, 70), 1.0, 0.0), ((6, 70), 1.0, 0.0)]),
    "rms_norm": (rms_norm, ref_rms_norm, [((5, 90), 1.0, 0.0), ((90,), 0.1, 1.0)]),
    "softmax": (m.softmax, lambda x: torch.softmax(x, dim=-1), [((5, 40), 2.0, 0.0)]),
    "recurrence": (recurrence, ref_recurrence, [((3, 20), 0.5, 0.5), ((3, 20), 1.0, 0.0)]),
    "cumprod_sort": (cumprod_sort, lambda x: (torch.cumprod(x, 1), torch.sort(x, 1, descending=True)[0]),
                     [((4, 16), 0.5, 1.0)]),
    "cross_entropy": (lambda x: m.cross_entropy(x, labels.to(DEVICE)),
                      lambda x: F.cross_entropy(x, labels.to(DEVICE)), [((8, 50), 1.0, 0.0)]),
}
TOL = 1e-5 if DEVICE == "cpu" else 1e-3


def primals_tangents(shapes, dtype=torch.float32):
    xs = tuple(rnd(*s, scale=sc, shift=sh, seed=i, dtype=dtype) for i, (s, sc, sh) in enumerate(shapes))
    vs = tuple(rnd(*s, seed=100 + i, dtype=dtype) for i, (s, _, _) in enumerate(shapes))
    return xs, vs


@pytest.mark.parametrize("name", sorted(CASES))
def test_torch_func_jvp_matches_torch(name):
    f, ref, shapes = CASES[name]
    xs, vs = primals_tangents(shapes)
    y, t = torch.func.jvp(f, xs, vs)
    yr, tr = torch.func.jvp(ref, xs, vs)
    torch.testing.assert_close(y, yr, rtol=TOL, atol=TOL)
    torch.testing.assert_close(t, tr, rtol=TOL, atol=TOL)
    assert all(ti.abs().max() > 0 for ti in (t if isinstance(t, tuple) else (t,)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_ad_dual_tensors_match_torch(name):
    f, ref, shapes = CASES[name]
    xs, vs = primals_tangents(shapes)
    with fwAD.dual_level():
        ys = f(*[fwAD.make_dual(x, v) for x, v in zip(xs, vs)])
        yrs = ref(*[fwAD.make_dual(x, v) for x, v in zip(xs, vs)])
        for y, yr in zip(ys if isinstance(ys, tuple) else (ys,), yrs if isinstance(yrs, tuple) else (yrs,)):
            (p, t), (pr, tr) = fwAD.unpack_dual(y), fwAD.unpack_dual(yr)
            torch.testing.assert_close(p, pr, rtol=TOL, atol=TOL)
            assert t is not None
            torch.testing.assert_close(t, tr, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("name", ["rms_norm", "softmax", "swiglu"])
def test_jvp_f64_mode(name):
    if DEVICE != "cpu":
        pytest.skip("kad.f64_mode() runs kad's interpreter (CPU tensors)")
    f, ref, shapes = CASES[name]
    xs, vs = primals_tangents(shapes, dtype=torch.float64)
    with kad.f64_mode():
        y, t = torch.func.jvp(f, xs, vs)
    yr, tr = torch.func.jvp(ref, xs, vs)
    torch.testing.assert_close(t, tr, rtol=1e-10, atol=1e-12)


def test_wrong_tangent_is_caught():
    """The comparison can fail: a perturbed tangent direction gives another JVP."""
    f, ref, shapes = CASES["softmax"]
    xs, vs = primals_tangents(shapes)
    _, t = torch.func.jvp(f, xs, vs)
    _, tr = torch.func.jvp(ref, xs, (vs[0] * 1.01,))
    with pytest.raises(AssertionError):
        torch.testing.assert_close(t, tr, rtol=TOL, atol=TOL)
