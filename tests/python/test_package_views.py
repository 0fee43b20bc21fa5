"""Views that overlap themselves through the package (docs/PYTHON.md, "Views that overlap
themselves"): several elements of the view are one memory element, and the kernel reads and
writes memory.

- An input (b.as_strided((2, 2), (1, 1)), b.unfold(0, 8, 3), b.expand(...)): its gradient goes to
  one view element per memory element, so that PyTorch's view backward adds it once (before, each
  view element carried the memory element's whole gradient: [1, 4, 1] instead of [1, 2, 1]).
- An output (torch.empty(8).as_strided((2, 4), (2, 1))): the gradient of a memory element is the
  sum of the gradients of the view elements reading it (before, the last one's only).

Every gradient is compared with PyTorch autograd of the same math on the same views and with
float64 finite differences (gradcheck on kad's interpreter in f64 mode), in eager mode, under
torch.compile and torch.func (grad, jvp), and through a second derivative.  CPU tensors run on
kad's interpreter; KAD_TEST_DEVICE=cuda runs the same tests with Triton.
"""
import os

import pytest
import torch
import triton
import triton.language as tl

import kad
from kad.autograd import may_overlap, memory_grad, overlaps, view_grad

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
TOL = dict(rtol=1e-5, atol=1e-6)


@kad.differentiable(inputs=["x_ptr"], outputs=["o_ptr"])
@triton.jit
def copy2d(x_ptr, o_ptr, sx0, sx1, R: tl.constexpr, C: tl.constexpr):
    """o = x, x read through its strides."""
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    tl.store(o_ptr + r * C + c, tl.load(x_ptr + r * sx0 + c * sx1))


@kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["o_ptr"])
@triton.jit
def window_softmax(x_ptr, w_ptr, o_ptr, sx0, sx1, K: tl.constexpr):
    """o[r] = softmax(x[r] * w): one window of a sliding-window view per program."""
    row = tl.program_id(0)
    c = tl.arange(0, K)
    z = tl.load(x_ptr + row * sx0 + c * sx1) * tl.load(w_ptr + c)
    e = tl.exp(z - tl.max(z, axis=0))
    tl.store(o_ptr + row * K + c, e / tl.sum(e, axis=0))


@kad.differentiable(inputs=["x_ptr"], outputs=["o_ptr"])
@triton.jit
def sin_mem(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    """o's memory = sin(x) * x, element by element (o may be a view reading it several times)."""
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(o_ptr + offs, tl.sin(x) * x, mask=m)


@kad.differentiable(inputs=["s_ptr"], outputs=["s_ptr"])
@triton.jit
def double_mem(s_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(s_ptr + offs, tl.load(s_ptr + offs, mask=m) * 2.0, mask=m)


def _copy(x):
    o = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    copy2d[(1,)](x, o, x.stride(0), x.stride(1), R=x.shape[0], C=x.shape[1])
    return o


def _windows(x, w):
    o = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    window_softmax[(x.shape[0],)](x, w, o, x.stride(0), x.stride(1), K=x.shape[1])
    return o


def _windows_ref(x, w):
    return torch.softmax(x * w, dim=1)


OUT_SIZE, OUT_STRIDE, OUT_SPAN = (2, 4), (2, 1), 6  # 8 view elements on 6 memory elements


def _sin_out(x, fresh=False):
    """sin(x) * x written into an output view overlapping itself (a view of a larger buffer, or with
    fresh=True a tensor of its own with these strides)."""
    if fresh:
        o = torch.empty_strided(OUT_SIZE, OUT_STRIDE, dtype=x.dtype, device=x.device)
    else:
        o = torch.empty(8, dtype=x.dtype, device=x.device).as_strided(OUT_SIZE, OUT_STRIDE)
    sin_mem[(1,)](x, o, OUT_SPAN, BLOCK=8)
    return o


def _sin_out_ref(x):
    return (torch.sin(x) * x).as_strided(OUT_SIZE, OUT_STRIDE)


def _leaf(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype).to(DEVICE).requires_grad_()


# ---------------------------------------------------------------- overlap detection

@pytest.mark.parametrize("make, expect", [
    (lambda b: b.view(4, 6), False), (lambda b: b.view(4, 6).t(), False), (lambda b: b[::2], False),
    (lambda b: b.as_strided((3, 2), (2, 3)), False),  # fails the sorted-strides test: counted exactly
    (lambda b: b.as_strided((2, 2), (1, 1)), True), (lambda b: b.unfold(0, 8, 3), True),
    (lambda b: b[:6].expand(3, 6), True), (lambda b: b[:0].as_strided((0, 3), (1, 1)), False)])
def test_overlaps(make, expect):
    t = make(torch.arange(24.0))
    assert overlaps(t) is expect
    assert may_overlap(t.shape, t.stride()) or not expect  # the sufficient test never misses one


def test_translations_are_transposes():
    """memory_grad (Q^T: a view's gradient summed per memory element) and view_grad (P^T: a memory
    gradient at each memory element's first view element) against dense matrices."""
    x = torch.zeros(26, dtype=torch.float64).unfold(0, 8, 3)
    idx = torch.arange(26).unfold(0, 8, 3).reshape(-1)
    q = torch.zeros(idx.numel(), 26, dtype=torch.float64)
    q[torch.arange(idx.numel()), idx] = 1  # view element <- memory element
    g = torch.randn(x.shape, dtype=torch.float64)
    dm = memory_grad(x, g)
    torch.testing.assert_close(dm.as_strided((26,), (1,)), q.t() @ g.reshape(-1), rtol=0, atol=1e-12)
    m = torch.randn(26, dtype=torch.float64)
    dv = view_grad(x, m.as_strided(x.shape, x.stride()))
    torch.testing.assert_close(q.t() @ dv.reshape(-1), m, rtol=0, atol=0)  # each memory element once
    per_memory = q.t() @ (dv.reshape(-1) != 0).double()  # view elements carrying each memory element's
    assert per_memory.tolist() == [1.0] * 26


# ---------------------------------------------------------------- inputs overlapping themselves

def test_as_strided_input_copy_is_1_2_1():
    b = torch.tensor([1.0, 2.0, 3.0], device=DEVICE, requires_grad=True)
    x = b.as_strided((2, 2), (1, 1))
    o = _copy(x)
    torch.testing.assert_close(o.detach(), x.detach())
    o.sum().backward()
    assert b.grad.tolist() == [1.0, 2.0, 1.0]
    assert b.grad.tolist() != [1.0, 4.0, 1.0]  # the double-counted gradient kad gave before


def test_as_strided_input_copy_weighted_against_torch():
    b = _leaf(3, seed=1)
    wo = torch.randn(2, 2, device=DEVICE)
    gk, = torch.autograd.grad((_copy(b.as_strided((2, 2), (1, 1))) * wo).sum(), b)
    gr, = torch.autograd.grad((b.as_strided((2, 2), (1, 1)) * wo).sum(), b)
    torch.testing.assert_close(gk, gr, **TOL)


@pytest.mark.parametrize("view", ["unfold", "as_strided"])
def test_sliding_windows_match_torch(view):
    """A softmax over the windows of unfold(0, 8, 3) (each element of b in up to 3 windows), with a
    weight per window position: both gradients as PyTorch's of the same math on the same view."""
    b, w = _leaf(26, seed=2), _leaf(8, seed=3)
    gy = torch.randn(7, 8, device=DEVICE)

    def win(t):
        return t.unfold(0, 8, 3) if view == "unfold" else t.as_strided((7, 8), (3, 1))
    gk = torch.autograd.grad((_windows(win(b), w) * gy).sum(), (b, w))
    b2, w2 = (t.detach().clone().requires_grad_() for t in (b, w))
    gr = torch.autograd.grad((_windows_ref(win(b2), w2) * gy).sum(), (b2, w2))
    for a, r in zip(gk, gr):
        torch.testing.assert_close(a, r, rtol=1e-4, atol=1e-5)


def test_expanded_input_matches_torch():
    """A stride of 0 (expand) is a view overlapping itself too: differentiated, no longer refused."""
    b, w = _leaf(8, seed=4), _leaf(8, seed=5)
    gy = torch.randn(5, 8, device=DEVICE)
    gk = torch.autograd.grad((_windows(b.expand(5, 8), w) * gy).sum(), (b, w))
    b2, w2 = (t.detach().clone().requires_grad_() for t in (b, w))
    gr = torch.autograd.grad((_windows_ref(b2.expand(5, 8), w2) * gy).sum(), (b2, w2))
    for a, r in zip(gk, gr):
        torch.testing.assert_close(a, r, rtol=1e-4, atol=1e-5)


def test_overlapping_leaf_gets_one_gradient_per_memory_element():
    """A leaf that overlaps itself: its .grad is per view element, each memory element's at its
    first view element (row-major) and 0 at the others; the sum over the aliases is the truth."""
    x = torch.tensor([1.0, 2.0, 3.0], device=DEVICE).as_strided((2, 2), (1, 1)).requires_grad_()
    _copy(x).sum().backward()
    assert x.grad.tolist() == [[1.0, 2.0], [0.0, 1.0]]


@pytest.mark.skipif(DEVICE != "cpu", reason="f64_mode is the CPU interpreter's")
def test_inputs_gradcheck_float64():
    b = _leaf(3, seed=6, dtype=torch.float64)
    b26, w = _leaf(26, seed=7, dtype=torch.float64), _leaf(8, seed=8, dtype=torch.float64)
    with kad.f64_mode():
        assert torch.autograd.gradcheck(lambda t: _copy(t.as_strided((2, 2), (1, 1))), (b,), eps=1e-6, atol=1e-7)
        assert torch.autograd.gradcheck(lambda t, u: _windows(t.unfold(0, 8, 3), u), (b26, w), eps=1e-6,
                                        atol=1e-7)
        assert torch.autograd.gradcheck(lambda t, u: _windows(t[:8].expand(3, 8), u), (b26, w), eps=1e-6,
                                        atol=1e-7)


@pytest.mark.skipif(DEVICE != "cpu", reason="f64_mode is the CPU interpreter's")
def test_inputs_gradgradcheck_float64():
    """Second derivatives (create_graph=True: _KadBackward) through an unfolded input."""
    b, w = _leaf(26, seed=9, dtype=torch.float64), _leaf(8, seed=10, dtype=torch.float64)
    with kad.f64_mode():
        assert torch.autograd.gradgradcheck(lambda t, u: _windows(t.unfold(0, 8, 3), u), (b, w), eps=1e-6,
                                            atol=1e-6)


# ---------------------------------------------------------------- outputs overlapping themselves

@pytest.mark.parametrize("fresh", [False, True])
def test_overlapping_output_matches_torch(fresh):
    x = _leaf(OUT_SPAN, seed=11)
    w = torch.randn(OUT_SIZE, device=DEVICE)
    o = _sin_out(x, fresh)
    torch.testing.assert_close(o.detach(), _sin_out_ref(x.detach()), **TOL)
    gk, = torch.autograd.grad((o * w).sum(), x)
    x2 = x.detach().clone().requires_grad_()
    gr, = torch.autograd.grad((_sin_out_ref(x2) * w).sum(), x2)
    torch.testing.assert_close(gk, gr, **TOL)
    # memory elements 2 and 3 are read by two view elements each: the last one's gradient alone
    # (what a copy into the overlapping layout keeps) is not it
    last = torch.zeros(OUT_SPAN, device=DEVICE).as_strided(OUT_SIZE, OUT_STRIDE).copy_(w)
    wrong = (torch.sin(x2) + x2 * torch.cos(x2)).detach() * last.as_strided((OUT_SPAN,), (1,))
    assert not torch.allclose(gk, wrong)


@pytest.mark.skipif(DEVICE != "cpu", reason="f64_mode is the CPU interpreter's")
@pytest.mark.parametrize("fresh", [False, True])
def test_overlapping_output_gradcheck_float64(fresh):
    x = _leaf(OUT_SPAN, seed=12, dtype=torch.float64)
    with kad.f64_mode():
        assert torch.autograd.gradcheck(lambda t: _sin_out(t, fresh) * 1.0, (x,), eps=1e-6, atol=1e-7)
        if fresh:  # (second derivatives refuse an output that is a view of another tensor)
            assert torch.autograd.gradgradcheck(lambda t: _sin_out(t, fresh) * 1.0, (x,), eps=1e-6, atol=1e-6)


def test_inplace_overlapping_buffer_refused_before_the_forward():
    base = torch.arange(8.0, device=DEVICE).requires_grad_() * 1.0  # in the graph
    s = base.as_strided(OUT_SIZE, OUT_STRIDE)
    before = s.detach().clone()
    with pytest.raises(ValueError, match=r"'s_ptr' is updated in place .* overlapping itself.*contiguous"):
        double_mem[(1,)](s, OUT_SPAN, BLOCK=8)
    assert torch.equal(s.detach(), before)


# ---------------------------------------------------------------- torch.compile and torch.func

def test_compile_inputs_and_outputs():
    torch._dynamo.reset()

    def f(b, w, x):
        return (_copy(b[:3].as_strided((2, 2), (1, 1))).sum() + (_windows(b.unfold(0, 8, 3), w) ** 2).sum()
                + (_sin_out(x) * torch.arange(8.0, device=x.device).view(OUT_SIZE)).sum())

    def f_ref(b, w, x):
        return (b[:3].as_strided((2, 2), (1, 1)).sum() + (_windows_ref(b.unfold(0, 8, 3), w) ** 2).sum()
                + (_sin_out_ref(x) * torch.arange(8.0, device=x.device).view(OUT_SIZE)).sum())
    ts = [_leaf(26, seed=13), _leaf(8, seed=14), _leaf(OUT_SPAN, seed=15)]
    gr = torch.autograd.grad(f_ref(*ts), ts)
    for backend in ("aot_eager", "inductor"):
        torch._dynamo.reset()
        gc = torch.autograd.grad(torch.compile(f, backend=backend, fullgraph=True)(*ts), ts)
        for a, r in zip(gc, gr):
            torch.testing.assert_close(a, r, rtol=1e-4, atol=1e-5)


def test_func_grad_and_vjp():
    def f(b, x):
        return _windows(b.unfold(0, 8, 3), torch.ones(8, device=b.device)).square().sum() + _sin_out(x).sum()

    def f_ref(b, x):
        return _windows_ref(b.unfold(0, 8, 3), torch.ones(8, device=b.device)).square().sum() + \
            _sin_out_ref(x).sum()
    b, x = _leaf(26, seed=16).detach(), _leaf(OUT_SPAN, seed=17).detach()
    gk = torch.func.grad(f, argnums=(0, 1))(b, x)
    gr = torch.func.grad(f_ref, argnums=(0, 1))(b, x)
    for a, r in zip(gk, gr):
        torch.testing.assert_close(a, r, rtol=1e-4, atol=1e-5)


def test_jvp_of_views():
    """Forward mode: a tangent of b reaches the overlapping views through PyTorch's view rules (each
    alias the same tangent); kad reads each memory element's from its first view element."""
    b, w = _leaf(26, seed=18).detach(), _leaf(8, seed=19).detach()
    tb, tw = torch.randn(26, device=DEVICE), torch.randn(8, device=DEVICE)
    _, tk = torch.func.jvp(lambda t, u: _windows(t.unfold(0, 8, 3), u), (b, w), (tb, tw))
    _, tr = torch.func.jvp(lambda t, u: _windows_ref(t.unfold(0, 8, 3), u), (b, w), (tb, tw))
    torch.testing.assert_close(tk, tr, rtol=1e-4, atol=1e-5)
    x, tx = _leaf(OUT_SPAN, seed=20).detach(), torch.randn(OUT_SPAN, device=DEVICE)
    _, tk = torch.func.jvp(lambda t: _sin_out(t) * 1.0, (x,), (tx,))
    _, tr = torch.func.jvp(lambda t: _sin_out_ref(t) * 1.0, (x,), (tx,))
    torch.testing.assert_close(tk, tr, **TOL)


def test_jvp_tangent_of_an_overlapping_tensor():
    """A tangent given per view element of a tensor overlapping itself may differ between aliases;
    PyTorch lays it out like its primal first (one value per memory element), and kad's jvp reads
    that: the result is PyTorch's own for the same math."""
    x = torch.tensor([1.0, 2.0, 3.0], device=DEVICE).as_strided((2, 2), (1, 1))
    t = torch.tensor([[10.0, 20.0], [30.0, 40.0]], device=DEVICE)  # aliases (0, 1) and (1, 0) differ
    _, to = torch.func.jvp(_copy, (x,), (t,))
    _, tr = torch.func.jvp(lambda u: u * 1.0, (x,), (t,))
    assert to.tolist() == tr.tolist()
    assert to[0, 1] == to[1, 0]
