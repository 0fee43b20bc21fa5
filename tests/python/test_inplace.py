"""In-place kernels through the package: a buffer that is both input and
output (docs/PYTHON.md, "In place"), and outputs already in the graph.

Every gradient is compared with PyTorch autograd of the same math written
with torch's own in-place ops (x.mul_(2), s.mul_(a).add_(b), copy_ into a
view), or with torch.autograd.gradcheck in float64.  CPU tensors run on
kad's interpreter; KAD_TEST_DEVICE=cuda runs the same tests with Triton.
"""
import os

import pytest
import torch
import triton
import triton.language as tl

import kad

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
TOL = dict(rtol=1e-5, atol=1e-5)


@triton.jit
def _double(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, x * 2.0, mask=offs < n)


double_out_only = kad.differentiable(inputs=[], outputs=["x_ptr"])(_double)
double_inplace = kad.differentiable(inputs=["x_ptr"], outputs=["x_ptr"])(_double)


@kad.differentiable(inputs=[], outputs=["y_ptr"])
@triton.jit
def bias_add(y_ptr, b_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    y = tl.load(y_ptr + row * N + cols, mask=m)
    tl.store(y_ptr + row * N + cols, y + tl.load(b_ptr + cols, mask=m), mask=m)


@kad.differentiable(inputs=["w_ptr"], outputs=["y_ptr"])
@triton.jit
def write_head(w_ptr, y_ptr, n_head, BLOCK: tl.constexpr):
    """y[:n_head] = 3 * w[:n_head]; y is never read."""
    offs = tl.arange(0, BLOCK)
    m = offs < n_head
    tl.store(y_ptr + offs, tl.load(w_ptr + offs, mask=m) * 3.0, mask=m)


@kad.differentiable(inputs=["s_ptr", "a_ptr", "b_ptr"], outputs=["s_ptr"])
@triton.jit
def state_update(s_ptr, a_ptr, b_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    s = tl.load(s_ptr + offs * stride, mask=m)
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    tl.store(s_ptr + offs * stride, a * s + b, mask=m)


@kad.differentiable(inputs=["q_ptr", "k_ptr", "cos_ptr", "sin_ptr"], outputs=["q_ptr", "k_ptr"])
@triton.jit
def rotary(q_ptr, k_ptr, cos_ptr, sin_ptr, HALF: tl.constexpr):
    """Rotates one row of q and of k in place: (x1, x2) -> (x1 c - x2 s,
    x2 c + x1 s), the halves as a (2, HALF) tile loaded and stored through
    the same pointer (one store per buffer)."""
    row = tl.program_id(0)
    half = tl.arange(0, 2)[:, None]
    cols = tl.arange(0, HALF)[None, :]
    c = tl.load(cos_ptr + row * HALF + tl.arange(0, HALF))
    s = tl.load(sin_ptr + row * HALF + tl.arange(0, HALF))
    qp = q_ptr + row * 2 * HALF + half * HALF + cols
    q = tl.load(qp)
    q1 = tl.sum(tl.where(half == 0, q, 0.0), axis=0)
    q2 = tl.sum(tl.where(half == 1, q, 0.0), axis=0)
    tl.store(qp, tl.where(half == 0, (q1 * c - q2 * s)[None, :], (q2 * c + q1 * s)[None, :]))
    kp = k_ptr + row * 2 * HALF + half * HALF + cols
    k = tl.load(kp)
    k1 = tl.sum(tl.where(half == 0, k, 0.0), axis=0)
    k2 = tl.sum(tl.where(half == 1, k, 0.0), axis=0)
    tl.store(kp, tl.where(half == 0, (k1 * c - k2 * s)[None, :], (k2 * c + k1 * s)[None, :]))


@kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])
@triton.jit
def axpby(x_ptr, y_ptr, n, alpha, beta, BLOCK: tl.constexpr):
    """y = alpha * x + beta * y: y declared only as output, but read."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(y_ptr + offs, alpha * x + beta * y, mask=m)


@kad.differentiable(inputs=["x_ptr"], outputs=["x_ptr"])
@triton.jit
def shift_left(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs + 1, mask=offs + 1 < n)
    tl.store(x_ptr + offs, x, mask=offs + 1 < n)


def _leaf(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype, device=DEVICE).requires_grad_()


def _grads(*ts):
    return [t.grad.clone() for t in ts]


def test_output_in_graph_read_by_kernel_is_updated_and_differentiated():
    """The silent wrong result: x already in the graph, the kernel doubles it
    in place; declared only as output.  x must change and a's gradient must
    go through the doubling (PyTorch: x.mul_(2))."""
    torch.manual_seed(0)
    a = _leaf(37)
    w = torch.randn(37, device=DEVICE)
    x = a * 1.0
    double_out_only[(3,)](x, 37, BLOCK=16)
    torch.testing.assert_close(x, a.detach() * 2, **TOL)
    (x * w).sum().backward()
    ga = _grads(a)[0]
    a.grad = None
    xr = a * 1.0
    xr.mul_(2)
    (xr * w).sum().backward()
    torch.testing.assert_close(ga, a.grad, **TOL)
    assert (ga - 2 * w).abs().max() < 1e-5  # not w, as if the kernel had not run


def test_bias_add_frozen_bias_on_output_in_graph():
    torch.manual_seed(1)
    a = _leaf(4, 13)
    b = torch.randn(13, device=DEVICE)
    w = torch.randn(4, 13, device=DEVICE)
    y = torch.sin(a)
    bias_add[(4,)](y, b, 13, BLOCK=16)
    torch.testing.assert_close(y, torch.sin(a.detach()) + b, **TOL)
    (y * w).sum().backward()
    g = _grads(a)[0]
    a.grad = None
    yr = torch.sin(a)
    yr += b
    (yr * w).sum().backward()
    torch.testing.assert_close(g, a.grad, **TOL)


def test_partial_write_keeps_gradient_of_untouched_elements():
    """y in the graph, the kernel writes only its first half (never reads
    it): the other half keeps its gradient, the written half gets none."""
    torch.manual_seed(2)
    a, wt = _leaf(32), _leaf(32)
    g = torch.randn(32, device=DEVICE)
    y = a * 1.5
    write_head[(1,)](wt, y, 16, BLOCK=32)
    (y * g).sum().backward()
    ga, gw = _grads(a, wt)
    a.grad = wt.grad = None
    yr = a * 1.5
    yr[:16].copy_(wt[:16] * 3.0)
    (yr * g).sum().backward()
    torch.testing.assert_close(ga, a.grad, **TOL)
    torch.testing.assert_close(gw, wt.grad, **TOL)
    assert ga[:16].abs().max() == 0 and (ga[16:] - 1.5 * g[16:]).abs().max() < 1e-5


def test_state_update_twice_on_one_buffer():
    """s = a * s + b twice on one buffer, gradients through both updates."""
    torch.manual_seed(3)
    s0, a, b = _leaf(40), _leaf(40), _leaf(40)
    g = torch.randn(40, device=DEVICE)
    s = s0 * 1.0
    state_update[(3,)](s, a, b, 40, 1, BLOCK=16)
    state_update[(3,)](s, a, b, 40, 1, BLOCK=16)
    ref_s = s0.detach() * 1.0
    for _ in range(2):
        ref_s = a.detach() * ref_s + b.detach()
    torch.testing.assert_close(s, ref_s, **TOL)
    (s * g).sum().backward()
    got = _grads(s0, a, b)
    for t in (s0, a, b):
        t.grad = None
    sr = s0 * 1.0
    sr.mul_(a).add_(b)
    sr.mul_(a).add_(b)
    (sr * g).sum().backward()
    for x, t in zip(got, (s0, a, b)):
        torch.testing.assert_close(x, t.grad, **TOL)


def test_state_update_on_strided_view():
    """The in-place buffer is a column of a matrix (a strided view): the
    rest of the matrix keeps its gradient."""
    torch.manual_seed(4)
    m0, a, b = _leaf(20, 3), _leaf(20), _leaf(20)
    g = torch.randn(20, 3, device=DEVICE)
    m = m0 * 1.0
    col = m[:, 1]
    state_update[(2,)](col, a, b, 20, col.stride(0), BLOCK=16)
    (m * g).sum().backward()
    got = _grads(m0, a, b)
    for t in (m0, a, b):
        t.grad = None
    mr = m0 * 1.0
    mr[:, 1].mul_(a).add_(b)
    (mr * g).sum().backward()
    for x, t in zip(got, (m0, a, b)):
        torch.testing.assert_close(x, t.grad, **TOL)


def _rotate(x, c, s):
    x1, x2 = x[:, :x.shape[1] // 2], x[:, x.shape[1] // 2:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=1)


def test_rotary_on_q_and_k_in_place():
    torch.manual_seed(5)
    q0, k0, c, s = _leaf(6, 16), _leaf(6, 16), _leaf(6, 8), _leaf(6, 8)
    gq, gk = torch.randn(6, 16, device=DEVICE), torch.randn(6, 16, device=DEVICE)
    q, k = q0 * 1.0, k0 * 1.0
    rotary[(6,)](q, k, c, s, HALF=8)
    torch.testing.assert_close(q, _rotate(q0.detach(), c.detach(), s.detach()), **TOL)
    ((q * gq).sum() + (k * gk).sum()).backward()
    got = _grads(q0, k0, c, s)
    for t in (q0, k0, c, s):
        t.grad = None
    qr, kr = q0 * 1.0, k0 * 1.0
    qr.copy_(_rotate(qr.clone(), c, s))
    kr.copy_(_rotate(kr.clone(), c, s))
    ((qr * gq).sum() + (kr * gk).sum()).backward()
    for x, t in zip(got, (q0, k0, c, s)):
        torch.testing.assert_close(x, t.grad, **TOL)


def test_output_read_but_not_in_graph_is_in_place_automatically():
    """axpby reads y (declared only as output): x's gradient is alpha * g,
    and with y in the graph y's old value gets beta * g."""
    torch.manual_seed(6)
    x = _leaf(30)
    g = torch.randn(30, device=DEVICE)
    y = torch.randn(30, device=DEVICE)
    y_before = y.clone()
    axpby[(2,)](x, y, 30, 0.5, -2.0, BLOCK=16)
    torch.testing.assert_close(y, 0.5 * x.detach() - 2.0 * y_before, **TOL)
    (y * g).sum().backward()
    torch.testing.assert_close(x.grad, 0.5 * g, **TOL)
    a = _leaf(30)
    x.grad = None
    y2 = a * 1.0
    axpby[(2,)](x, y2, 30, 0.5, -2.0, BLOCK=16)
    (y2 * g).sum().backward()
    torch.testing.assert_close(x.grad, 0.5 * g, **TOL)
    torch.testing.assert_close(a.grad, -2.0 * g, **TOL)


def test_declared_in_place_without_grad_and_under_no_grad():
    x = torch.randn(20, device=DEVICE)
    x0 = x.clone()
    double_inplace[(2,)](x, 20, BLOCK=16)
    torch.testing.assert_close(x, 2 * x0)
    a = _leaf(20)
    with torch.no_grad():
        y = a * 1.0
        double_inplace[(2,)](y, 20, BLOCK=16)
    torch.testing.assert_close(y, 2 * a.detach())


def test_in_place_on_leaf_is_refused_like_pytorch():
    a = _leaf(20)
    with pytest.raises(RuntimeError, match="leaf"):
        double_inplace[(2,)](a, 20, BLOCK=16)


def test_unprovable_in_place_read_is_a_located_refusal():
    a = _leaf(20)
    x = a * 1.0
    with pytest.raises(Exception, match="cannot prove that it reads the value before the launch") as e:
        shift_left[(2,)](x, 20, BLOCK=16)
    assert "test_inplace.py:" in str(e.value)


@pytest.mark.skipif(DEVICE != "cpu", reason="float64 gradcheck runs on the interpreter")
def test_state_update_gradcheck_f64():
    torch.manual_seed(7)
    s0, a, b = (torch.randn(24, dtype=torch.float64, requires_grad=True) for _ in range(3))

    def f(s0, a, b):
        s = s0 * 1.0
        state_update[(2,)](s, a, b, 24, 1, BLOCK=16)
        state_update[(2,)](s, a, b, 24, 1, BLOCK=16)
        return s

    with kad.f64_mode():
        assert torch.autograd.gradcheck(f, (s0, a, b))
