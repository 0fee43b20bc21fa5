"""A declared input passed None is absent (docs/PYTHON.md, "Optional inputs and outputs"): Triton
specializes it (`b_ptr=None` in the signature, a constant; `if b_ptr is not None:` folds) and it gets no
gradient, while the same decorated kernel launched with a tensor differentiates it.  Two kernels,
an optional bias (y = x * w + b) and an optional residual inside a nonlinearity
(h = x * s + r, y = h * sigmoid(h)), each launched with None and with a tensor from one decorated
object, in both orders (the caches are keyed by signature), under eager autograd (float64
gradcheck in kad.f64_mode on the CPU), double backward, torch.func.grad, torch.func.jvp, forward
mode and torch.compile; gradients against PyTorch autograd of the same math.  A declared output
passed None is absent too (an optional residual-stream output); None for every output is refused
before the forward.

KAD_TEST_DEVICE=cuda runs them with CUDA tensors (Triton forward, generated backward module).
"""
import os

import pytest
import torch
import torch.autograd.forward_ad as fwAD
import triton
import triton.language as tl

import kad

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
ROWS, COLS = 4, 6


@triton.jit
def _bias_rows(x_ptr, w_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    y = tl.load(x_ptr + row * n + cols, mask=m, other=0.0) * tl.load(w_ptr + cols, mask=m, other=0.0)
    if b_ptr is not None:
        y = y + tl.load(b_ptr + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * n + cols, y, mask=m)


@triton.jit
def _residual_silu(x_ptr, r_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    h = tl.load(x_ptr + offs, mask=m, other=0.0) * scale
    if r_ptr is not None:
        h = h + tl.load(r_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, h * tl.sigmoid(h), mask=m)


def _kernels():
    """Fresh decorated objects (their caches empty), one per kernel."""
    return (kad.differentiable(inputs=["x_ptr", "w_ptr", "b_ptr"], outputs=["y_ptr"])(_bias_rows),
            kad.differentiable(inputs=["x_ptr", "r_ptr"], outputs=["y_ptr"])(_residual_silu))


def bias(k, x, w, b):
    y = torch.empty_like(x)
    k[(x.shape[0],)](x, w, b, y, x.shape[1], BLOCK=8)
    return y


def bias_ref(k, x, w, b):
    return x * w + (0 if b is None else b)


def residual(k, x, r):
    y = torch.empty_like(x)
    n = x.numel()
    k[(triton.cdiv(n, 16),)](x, r, y, n, 0.75, BLOCK=16)
    return y


def residual_ref(k, x, r):
    h = x * 0.75 + (0 if r is None else r)
    return h * torch.sigmoid(h)


CASES = {"bias": (0, bias, bias_ref, [(ROWS, COLS), (COLS,), (COLS,)]),
         "residual": (1, residual, residual_ref, [(ROWS, COLS), (ROWS, COLS)])}


def _tensors(shapes, present, seed=0, dtype=torch.float32):
    """The arguments: random tensors, None for the optional last one unless present."""
    g = torch.Generator().manual_seed(seed)
    ts = [torch.randn(s, generator=g, dtype=torch.float64).to(DEVICE, dtype) for s in shapes]
    if not present:
        ts[-1] = None
    return ts


def _orders():
    return pytest.mark.parametrize("order", [(False, True), (True, False)], ids=["none_first", "tensor_first"])


def _case():
    return pytest.mark.parametrize("case", list(CASES))


def _leaves(ts):
    return [None if t is None else t.detach().clone().requires_grad_() for t in ts]


def _autograd(fn, k, ts):
    """(output, gradients of the present arguments) of (fn(...) * ramp).sum()."""
    ts = _leaves(ts)
    y = fn(k, *ts)
    ramp = torch.linspace(-1, 1, y.numel(), device=y.device, dtype=y.dtype).view_as(y)
    gs = torch.autograd.grad((y * ramp).sum(), [t for t in ts if t is not None])
    return y.detach(), gs


def _close(a, b):
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@_case()
@_orders()
def test_eager_gradients(case, order):
    i, fn, ref, shapes = CASES[case]
    k = _kernels()[i]
    for present in order:
        ts = _tensors(shapes, present)
        y, gs = _autograd(fn, k, ts)
        yr, grs = _autograd(ref, k, ts)
        _close(y, yr)
        assert len(gs) == len(shapes) - (not present)
        for a, b in zip(gs, grs):
            _close(a, b)


def test_absent_input_is_specialized_like_triton():
    """The signature says b_ptr=None (a constant); the backward's wrt leaves it out; the Function
    returns None for it (x and w still get .grad)."""
    k = _kernels()[0]
    x, w, b = _leaves(_tensors(CASES["bias"][3], False))
    y = torch.empty_like(x)
    launch = k.bind((ROWS,), (x, w, b, y, COLS), {"BLOCK": 8})
    assert ",b_ptr=None," in launch.sig
    prep = k._prep(launch)
    assert prep.inputs == ["x_ptr", "w_ptr"] and prep.ins == ["x_ptr", "w_ptr"]
    k[(ROWS,)](x, w, b, y, COLS, BLOCK=8)
    assert [key[0] for key in prep.bwd] == [("x_ptr", "w_ptr")]
    y.sum().backward()
    _close(x.grad, w.detach().expand(ROWS, COLS))
    _close(w.grad, x.detach().sum(0))


@_case()
@_orders()
def test_gradcheck_f64(case, order):
    if DEVICE != "cpu":
        pytest.skip("f64_mode is the CPU interpreter's")
    i, fn, _, shapes = CASES[case]
    k = _kernels()[i]
    for present in order:
        ts = _leaves(_tensors(shapes, present, dtype=torch.float64))
        args = [t for t in ts if t is not None]
        f = (lambda *a: fn(k, *a)) if present else (lambda *a: fn(k, *a, None))
        with kad.f64_mode():
            assert torch.autograd.gradcheck(f, args, eps=1e-6, atol=1e-7)
            assert torch.autograd.gradgradcheck(f, args, eps=1e-6, atol=1e-6)


@_case()
@_orders()
def test_double_backward(case, order):
    """create_graph=True through the kernel with and without the optional input."""
    i, fn, ref, shapes = CASES[case]
    k = _kernels()[i]
    for present in order:
        ts = _tensors(shapes, present)
        outs = []
        for f in (fn, ref):
            xs = _leaves(ts)
            live = [t for t in xs if t is not None]
            g = torch.autograd.grad(f(k, *xs).square().sum(), live, create_graph=True)
            outs.append(torch.autograd.grad(sum((gi * gi).sum() for gi in g), live))
        for a, b in zip(*outs):
            _close(a, b)


@_case()
@_orders()
def test_func_grad(case, order):
    i, fn, ref, shapes = CASES[case]
    k = _kernels()[i]
    for present in order:
        ts = _tensors(shapes, present)
        live = [t for t in ts if t is not None]
        argnums = tuple(range(len(live)))

        def loss(f, *a):
            return f(k, *a, *([] if present else [None])).square().sum()
        gs = torch.func.grad(lambda *a: loss(fn, *a), argnums=argnums)(*live)
        grs = torch.func.grad(lambda *a: loss(ref, *a), argnums=argnums)(*live)
        for a, b in zip(gs, grs):
            _close(a, b)


@_case()
@_orders()
def test_func_jvp_and_forward_ad(case, order):
    i, fn, ref, shapes = CASES[case]
    k = _kernels()[i]
    for present in order:
        ts = _tensors(shapes, present)
        live = [t for t in ts if t is not None]
        tangents = tuple(torch.randn_like(t) for t in live)
        rest = [] if present else [None]
        y, t = torch.func.jvp(lambda *a: fn(k, *a, *rest), tuple(live), tangents)
        yr, tr = torch.func.jvp(lambda *a: ref(k, *a, *rest), tuple(live), tangents)
        _close(y, yr)
        _close(t, tr)
        with fwAD.dual_level():
            duals = [fwAD.make_dual(p, tp) for p, tp in zip(live, tangents)]
            _close(fwAD.unpack_dual(fn(k, *duals, *rest)).tangent, tr)


@_case()
@_orders()
def test_compile(case, order):
    torch._dynamo.reset()
    i, fn, ref, shapes = CASES[case]
    k = _kernels()[i]
    compiled = torch.compile(lambda *a: fn(k, *a), backend="aot_eager", fullgraph=True)
    for present in order:
        ts = _tensors(shapes, present)
        y, gs = _autograd(lambda _, *a: compiled(*a), k, ts)
        yr, grs = _autograd(ref, k, ts)
        _close(y, yr)
        assert len(gs) == len(shapes) - (not present)
        for a, b in zip(gs, grs):
            _close(a, b)
    with torch.no_grad():  # inference: the direct path on CUDA, the interpreter on the CPU
        for present in order:
            ts = _tensors(shapes, present)
            _close(fn(k, *ts), ref(k, *ts))


@triton.jit
def _silu_res_out(x_ptr, r_ptr, y_ptr, h_ptr, n, BLOCK: tl.constexpr):
    """y = silu(x + r), and h = x + r (the residual stream) when h_ptr is given."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    h = tl.load(x_ptr + offs, mask=m, other=0.0) + tl.load(r_ptr + offs, mask=m, other=0.0)
    if h_ptr is not None:
        tl.store(h_ptr + offs, h, mask=m)
    tl.store(y_ptr + offs, h * tl.sigmoid(h), mask=m)


def silu_res(k, x, r, keep):
    """(y, h or None) of one launch; h is allocated (an output present) only when keep."""
    y = torch.empty_like(x)
    h = torch.empty_like(x) if keep else None
    k[(triton.cdiv(x.numel(), 16),)](x, r, y, h, x.numel(), BLOCK=16)
    return y, h


def _loss_of(y, h):
    """A loss depending on every output present."""
    ramp = torch.linspace(-1, 1, y.numel(), device=y.device, dtype=y.dtype).view_as(y)
    return (y * ramp).sum() + (0 if h is None else (h * h).sum())


def _silu_res_ref(x, r, keep):
    h = x + r
    return h * torch.sigmoid(h), (h if keep else None)


@_orders()
def test_optional_output(order):
    """A declared output passed None is absent too (`if h_ptr is not None:` folds): the loss depends
    on the outputs present; eager, torch.func.grad and jvp, torch.compile."""
    k = kad.differentiable(inputs=["x_ptr", "r_ptr"], outputs=["y_ptr", "h_ptr"])(_silu_res_out)
    torch._dynamo.reset()
    compiled = torch.compile(lambda x, r, keep: _loss_of(*silu_res(k, x, r, keep)), backend="aot_eager",
                             fullgraph=True)
    for keep in order:
        x, r = _tensors([(ROWS, COLS), (ROWS, COLS)], True)
        want = torch.func.grad(lambda a, b: _loss_of(*_silu_res_ref(a, b, keep)), argnums=(0, 1))(x, r)
        xs = _leaves([x, r])
        got = torch.autograd.grad(_loss_of(*silu_res(k, *xs, keep)), xs)
        for a, b in zip(got, want):
            _close(a, b)
        got = torch.func.grad(lambda a, b: _loss_of(*silu_res(k, a, b, keep)), argnums=(0, 1))(x, r)
        for a, b in zip(got, want):
            _close(a, b)
        xs = _leaves([x, r])
        for a, b in zip(torch.autograd.grad(compiled(*xs, keep), xs), want):
            _close(a, b)
        tx, tr = torch.randn_like(x), torch.randn_like(r)
        _, t = torch.func.jvp(lambda a, b: silu_res(k, a, b, keep)[0], (x, r), (tx, tr))
        _, t_ref = torch.func.jvp(lambda a, b: _silu_res_ref(a, b, keep)[0], (x, r), (tx, tr))
        _close(t, t_ref)
        if DEVICE == "cpu":
            with kad.f64_mode():
                xs = _leaves(_tensors([(ROWS, COLS), (ROWS, COLS)], True, dtype=torch.float64))
                assert torch.autograd.gradcheck(lambda a, b: _loss_of(*silu_res(k, a, b, keep)), xs, eps=1e-6,
                                                atol=1e-7)


def test_none_for_every_output_is_refused_before_the_forward():
    k = _kernels()[0]
    x, w, b = _leaves(_tensors(CASES["bias"][3], True))
    msg = r"every declared output \(y_ptr\) is None"
    for grad in (True, False):
        with torch.set_grad_enabled(grad), pytest.raises(TypeError, match=msg):
            k[(ROWS,)](x, w, b, None, COLS, BLOCK=8)
    with pytest.raises(TypeError, match=msg):
        torch.func.grad(lambda v: (k[(ROWS,)](v, w, b, None, COLS, BLOCK=8), v.sum())[1])(x.detach())
    torch._dynamo.reset()
    with pytest.raises(Exception, match=msg):
        torch.compile(lambda v: k[(ROWS,)](v, w, b, None, COLS, BLOCK=8), backend="aot_eager",
                      fullgraph=True)(x)
    two = kad.differentiable(inputs=["x_ptr", "r_ptr"], outputs=["y_ptr", "h_ptr"])(_silu_res_out)
    with pytest.raises(TypeError, match=r"every declared output \(y_ptr, h_ptr\) is None"):
        two[(1,)](x, x.detach(), None, None, x.numel(), BLOCK=16)


def test_backward_tools_skip_an_absent_input():
    """kad.backward and kad.check_backward line the present inputs up; wrt naming the absent one is refused."""
    k = _kernels()[0]
    x, w, _ = _tensors(CASES["bias"][3], False)
    y = torch.empty_like(x)
    dy = torch.ones_like(x)
    d = kad.backward(k, (ROWS,), x, w, None, y, COLS, BLOCK=8, grads={"y_ptr": dy})
    assert sorted(d) == ["w_ptr", "x_ptr"]
    _close(d["w_ptr"], x.sum(0))

    def mine(x_ptr, w_ptr, b_ptr, y_ptr, n, d_y, BLOCK):
        return d_y * w_ptr, (d_y * x_ptr).sum(0), None
    assert kad.check_backward(k, (ROWS,), (x, w, None, y, COLS), mine, {"BLOCK": 8}).ok
    with pytest.raises(ValueError, match="wrt names 'b_ptr', which is passed None"):
        kad.backward(k, (ROWS,), x, w, None, y, COLS, BLOCK=8, grads={"y_ptr": dy}, wrt=["b_ptr"])
