"""kad kernels as PyTorch citizens (docs/PYTHON.md, "torch.compile, torch.func, second derivatives"):

- second derivatives: a create_graph=True backward through a kad kernel is differentiable (whether
  the output gradient requires grad or not; gradgradcheck passes), a gradient penalty through a
  model of kad kernels matches PyTorch's, and one through an in-place kad kernel is refused
  (tests/python/test_package_double_backward.py has more); torch.func's second derivatives are
  refused;
- torch.compile(fullgraph=True) of a small model made of three kad kernels (an RMSNorm, a SwiGLU,
  an in-place residual add) has no graph break, its values and gradients equal eager's and
  PyTorch's autograd of the same math, and a second call with the same shapes compiles nothing;
- torch.func.grad / vjp / vmap over a function launching a kad kernel.

Every gradient is compared with PyTorch autograd of the same math written plainly.
KAD_TEST_DEVICE=cuda runs them with CUDA tensors.
"""
import os

import pytest
import torch
import triton
import triton.language as tl

import kad

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")


@triton.jit
def _rmsnorm(x_ptr, w_ptr, y_ptr, stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n + eps)
    tl.store(y_ptr + row * stride + cols, x * r * w, mask=m)


@triton.jit
def _swiglu(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=0.0)
    b = tl.load(b_ptr + offs, mask=m, other=0.0)
    tl.store(c_ptr + offs, a * tl.sigmoid(a) * b, mask=m)


@triton.jit
def _add_into(y_ptr, r_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    r = tl.load(r_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, y + r, mask=m)


rmsnorm_k = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])(_rmsnorm)
swiglu_k = kad.differentiable(inputs=["a_ptr", "b_ptr"], outputs=["c_ptr"])(_swiglu)
add_into_k = kad.differentiable(inputs=["y_ptr", "r_ptr"], outputs=["y_ptr"])(_add_into)


def rmsnorm(x, w, eps=1e-6):
    y = torch.empty_like(x)
    rmsnorm_k[(x.shape[0],)](x, w, y, x.stride(0), x.shape[1], eps, BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


def swiglu(a, b):
    c = torch.empty_like(a)
    n = a.numel()
    swiglu_k[(triton.cdiv(n, 64),)](a, b, c, n, BLOCK=64)
    return c


def add_into(y, r):
    """y += r, in place, by a kad kernel."""
    n = y.numel()
    add_into_k[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](y, r, n, BLOCK=64)
    return y


def model(x, w, w1, w2, w3):
    h = rmsnorm(x, w)
    g = swiglu(h @ w1, h @ w2)
    out = g @ w3
    add_into(out, x)
    return out


def model_ref(x, w, w1, w2, w3, eps=1e-6):
    h = x * torch.rsqrt(x.square().mean(-1, keepdim=True) + eps) * w
    a, b = h @ w1, h @ w2
    return (a * torch.sigmoid(a) * b) @ w3 + x


def _params(seed=0, rows=8, dim=32, hidden=48, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    ts = [torch.randn(rows, dim, generator=g), 1 + 0.1 * torch.randn(dim, generator=g),
          torch.randn(dim, hidden, generator=g) / dim ** 0.5, torch.randn(dim, hidden, generator=g) / dim ** 0.5,
          torch.randn(hidden, dim, generator=g) / hidden ** 0.5]
    return [t.to(DEVICE, dtype).requires_grad_() for t in ts]


def _grads(fn, ps):
    ps = [p.detach().clone().requires_grad_() for p in ps]
    out = fn(*ps)
    loss = (out * torch.linspace(-1, 1, out.numel(), device=out.device).view_as(out)).square().sum()
    gs = torch.autograd.grad(loss, ps)
    return out.detach(), gs


# ---------------------------------------------------------------- second derivatives

def _square(x):
    c = torch.empty_like(x)
    n = x.numel()
    swiglu_k[(triton.cdiv(n, 64),)](x, x.detach() * 0 + 1, c, n, BLOCK=64)
    return c


def _rms_ref(x, w, eps=1e-6):
    return x * torch.rsqrt(x.square().mean(-1, keepdim=True) + eps) * w


def _leaves(*ts):
    return [t.detach().clone().requires_grad_() for t in ts]


def test_create_graph_when_the_output_gradient_is_a_constant():
    """torch.autograd.grad(y.sum(), x, create_graph=True): the output gradient (ones) does not
    require grad; the first gradient must not come back as a constant (it once silently did):
    a penalty on it has PyTorch's gradient."""
    x, w = _params()[:2]
    gx, = torch.autograd.grad(rmsnorm(x, w).sum(), x, create_graph=True)
    assert gx.requires_grad
    gg = torch.autograd.grad(gx.square().sum(), (x, w))
    x2, w2 = _leaves(x, w)
    rx, = torch.autograd.grad(_rms_ref(x2, w2).sum(), x2, create_graph=True)
    rg = torch.autograd.grad(rx.square().sum(), (x2, w2))
    torch.testing.assert_close(gx, rx, rtol=1e-4, atol=1e-5)
    for a, b in zip(gg, rg):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-4)


def test_create_graph_when_the_output_gradient_requires_grad():
    """The first gradient depends on the output gradient v too: its gradient w.r.t. v is J(x) u."""
    x, w = _params()[:2]
    v = torch.randn(x.shape, generator=torch.Generator().manual_seed(5)).to(DEVICE).requires_grad_()
    u = torch.randn(x.shape, generator=torch.Generator().manual_seed(6)).to(DEVICE)
    gx, = torch.autograd.grad(rmsnorm(x, w), x, grad_outputs=v, create_graph=True)
    gg = torch.autograd.grad((gx * u).sum(), (x, w, v))
    x2, w2, v2 = _leaves(x, w, v)
    rx, = torch.autograd.grad(_rms_ref(x2, w2), x2, grad_outputs=v2, create_graph=True)
    rg = torch.autograd.grad((rx * u).sum(), (x2, w2, v2))
    for a, b in zip(gg, rg):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-4)


def model_no_inplace(x, w, w1, w2, w3):
    h = rmsnorm(x, w)
    return swiglu(h @ w1, h @ w2) @ w3 + x


def test_gradient_penalty_through_a_model():
    """A gradient penalty over a model whose middle layers are kad kernels (their inputs are not the
    leaves) matches PyTorch's; through the in-place residual add of `model` it is refused."""
    ps = _params()
    out = model_no_inplace(*ps)
    g3, = torch.autograd.grad(out.square().sum(), ps[2], create_graph=True)
    pen = torch.autograd.grad(g3.square().sum(), ps)
    qs = _leaves(*ps)
    r3, = torch.autograd.grad(model_ref(*qs).square().sum(), qs[2], create_graph=True)
    rpen = torch.autograd.grad(r3.square().sum(), qs)
    for a, b in zip(pen, rpen):
        torch.testing.assert_close(a, b, rtol=2e-3, atol=2e-3 * b.abs().max().item())
    out = model(*ps)
    with pytest.raises(RuntimeError, match=r"second derivatives through the kad kernel '_add_into'.*in place"):
        out.square().sum().backward(create_graph=True)


def test_gradgradcheck_passes():
    if DEVICE != "cpu":
        pytest.skip("f64_mode is the CPU interpreter's")
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 16, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(16, generator=g, dtype=torch.float64, requires_grad=True)
    with kad.f64_mode():
        assert torch.autograd.gradcheck(rmsnorm, (x, w), eps=1e-6, atol=1e-7)
        assert torch.autograd.gradgradcheck(rmsnorm, (x, w), eps=1e-6, atol=1e-6)


# ---------------------------------------------------------------- torch.compile

def test_compile_fullgraph_three_kernels_equals_eager():
    from torch._dynamo.testing import CompileCounterWithBackend
    torch._dynamo.reset()
    ps = _params(seed=1)
    out_e, g_e = _grads(model, ps)
    out_r, g_r = _grads(model_ref, ps)
    torch.testing.assert_close(out_e, out_r, rtol=1e-4, atol=1e-5)
    for a, b in zip(g_e, g_r):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    cnt = CompileCounterWithBackend("inductor")
    compiled = torch.compile(model, backend=cnt, fullgraph=True)
    for seed in (1, 2):  # the second call: other values, same shapes
        ps = _params(seed=seed)
        out_c, g_c = _grads(compiled, ps)
        out_e, g_e = _grads(model, ps)
        torch.testing.assert_close(out_c, out_e, rtol=1e-5, atol=1e-6)
        for a, b in zip(g_c, g_e):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert cnt.frame_count == 1, f"recompiled: {cnt.frame_count} frames"
    ops = [n.target for n in cnt.graphs[0].graph.nodes if n.op == "call_function"] if cnt.graphs else []
    assert sum(op is torch.ops.kad.launch.default or op is torch.ops.kad.launch for op in ops) == 3, ops


def test_compile_explain_no_graph_break():
    torch._dynamo.reset()
    ps = _params(seed=4)
    ex = torch._dynamo.explain(model)(*ps)
    assert ex.graph_break_count == 0, ex.break_reasons
    assert ex.graph_count == 1


def test_compile_no_grad_and_inference():
    """Under no_grad the compiled model runs the kernels and gives eager's values."""
    torch._dynamo.reset()
    ps = _params(seed=5)
    with torch.no_grad():
        ref = model(*ps)
        out = torch.compile(model, backend="aot_eager", fullgraph=True)(*ps)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)


def test_compile_partial_write_keeps_the_rest():
    """A launch writing half of a buffer: the other half keeps its value and its gradient."""
    torch._dynamo.reset()

    def half(a, b, base):
        c = base * 2  # in the graph
        n = a.numel() // 2
        swiglu_k[(triton.cdiv(n, 64),)](a, b, c, n, BLOCK=64)
        return c

    def half_ref(a, b, base):
        c = base * 2
        k = a.numel() // 2
        return torch.cat([(a[:k] * torch.sigmoid(a[:k]) * b[:k]), c[k:]])

    g = torch.Generator().manual_seed(6)
    ts = [torch.randn(200, generator=g).to(DEVICE).requires_grad_() for _ in range(3)]
    outs = {}
    for name, fn in (("ref", half_ref), ("eager", half),
                     ("compiled", torch.compile(half, backend="aot_eager", fullgraph=True))):
        xs = [t.detach().clone().requires_grad_() for t in ts]
        y = fn(*xs)
        gs = torch.autograd.grad((y * y).sum(), xs)
        outs[name] = (y.detach(), gs)
    for name in ("eager", "compiled"):
        torch.testing.assert_close(outs[name][0], outs["ref"][0], rtol=1e-5, atol=1e-6)
        for a, b in zip(outs[name][1], outs["ref"][1]):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_compile_refuses_an_undeclared_tensor_that_requires_grad():
    torch._dynamo.reset()
    a, b = (torch.randn(64, device=DEVICE, requires_grad=True) for _ in range(2))
    k = kad.differentiable(inputs=["a_ptr"], outputs=["c_ptr"])(_swiglu)

    def f(a, b):
        c = torch.empty_like(a)
        k[(1,)](a, b, c, 64, BLOCK=64)
        return c
    with pytest.raises(Exception, match="'b_ptr' is not in kad.differentiable's inputs"):
        torch.compile(f, backend="aot_eager", fullgraph=True)(a, b)


def test_compile_loss_sum_expanded_output_gradient():
    """y.sum() hands the backward an expanded (stride 0) output gradient."""
    torch._dynamo.reset()
    ps = _params(seed=7)
    f = torch.compile(lambda *a: model(*a).sum(), backend="aot_eager", fullgraph=True)
    gc = torch.autograd.grad(f(*ps), ps)
    qs = [p.detach().clone().requires_grad_() for p in ps]
    gr = torch.autograd.grad(model_ref(*qs).sum(), qs)
    for a, b in zip(gc, gr):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- torch.func

def _ref_grads(fn, ps):
    qs = [p.detach().clone().requires_grad_() for p in ps]
    return torch.autograd.grad(fn(*qs).square().sum(), qs)


def test_func_grad_and_vjp():
    ps = [p.detach() for p in _params(seed=8)]
    loss = lambda *a: model(*a).square().sum()  # noqa: E731
    gs = torch.func.grad(loss, argnums=tuple(range(5)))(*ps)
    for a, b in zip(gs, _ref_grads(model_ref, ps)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    out, vjp_fn = torch.func.vjp(model, *ps)
    torch.testing.assert_close(out, model_ref(*ps), rtol=1e-4, atol=1e-5)
    for a, b in zip(vjp_fn(2 * out), _ref_grads(model_ref, ps)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_func_vmap_and_per_sample_grads():
    ps = [p.detach() for p in _params(seed=9)]
    x = ps[0]  # 8 samples of one row each
    row = lambda xi, *w: model(xi.unsqueeze(0), *w).squeeze(0)  # noqa: E731
    out = torch.func.vmap(row, in_dims=(0, None, None, None, None))(x, *ps[1:])
    torch.testing.assert_close(out, model_ref(*ps), rtol=1e-4, atol=1e-5)
    per = torch.func.vmap(torch.func.grad(lambda xi, w: row(xi, w, *ps[2:]).square().sum(), argnums=1),
                          in_dims=(0, None))(x, ps[1])
    for i in range(x.shape[0]):
        w = ps[1].clone().requires_grad_()
        ref, = torch.autograd.grad(model_ref(x[i:i + 1], w, *ps[2:]).square().sum(), w)
        torch.testing.assert_close(per[i], ref, rtol=1e-4, atol=1e-5)
    jac = torch.func.jacrev(lambda v: swiglu(v, ps[1]))(ps[1])
    v = ps[1]
    torch.testing.assert_close(jac, torch.diag(torch.sigmoid(v) * (1 + v * (1 - torch.sigmoid(v))) * v),
                               rtol=1e-4, atol=1e-5)


def test_func_second_derivative_refused_forward_mode_works():
    x = _params(seed=10)[1].detach()
    f = lambda v: swiglu(v, v).sum()  # noqa: E731
    with pytest.raises(RuntimeError, match=r"second derivatives are not supported yet.*'_swiglu'"):
        torch.func.grad(lambda v: torch.func.grad(f)(v).sum())(x)
    with pytest.raises(RuntimeError, match=r"second derivatives are not supported yet"):
        torch.func.hessian(f)(x)  # jacfwd(jacrev(f)): forward mode over kad's backward
    with pytest.raises(RuntimeError, match=r"second derivatives are not supported yet"):
        torch.func.jacrev(torch.func.jacrev(f))(x)
    # forward mode (kad's jvp kernel; tests/python/test_package_jvp.py has more) against PyTorch's
    v = torch.randn(x.shape, generator=torch.Generator().manual_seed(4)).to(x.device)
    _, t = torch.func.jvp(lambda u: swiglu(u, u), (x,), (v,))
    _, tr = torch.func.jvp(lambda u: u * torch.sigmoid(u) * u, (x,), (v,))
    torch.testing.assert_close(t, tr, rtol=1e-4, atol=1e-5)
    jf = torch.func.jacfwd(lambda u: swiglu(u, x))(x)
    jr = torch.func.jacrev(lambda u: swiglu(u, x))(x)
    torch.testing.assert_close(jf, jr, rtol=1e-4, atol=1e-5)
