"""Second derivatives through kad kernels: backward with create_graph=True (docs/PYTHON.md, "Second
derivatives"; docs/AD.md, "Second derivatives").

- torch.autograd.gradgradcheck in kad.f64_mode() (CPU interpreter, float64 finite differences of
  the first derivatives as the independent reference) for elementwise kernels (GELU, SwiGLU),
  normalizations (RMSNorm and LayerNorm, both storing undeclared statistics; LayerNorm's rows
  swept in chunks by loops), softmax and a matmul with a fused activation (tl.dot, typed fp32);
- a Hessian-vector product of a small MLP of kad kernels (matmul + activation, matmul,
  cross-entropy) against the same model written with torch operations;
- tl.cumprod's second derivatives, with zeros too, against torch.cumprod's double backward;
- refusals: in-place outputs, third derivatives, torch.func's forward-over-reverse (not done yet);
- the CUDA branch's generated modules, run by Triton's CPU interpreter, against kad's interpreter.

CPU tensors run kad's interpreter; KAD_TEST_DEVICE=cuda runs the HVP and the refusals on a GPU
(Triton forward, generated launch_<kernel>_jvp and launch_<kernel>_jvp_bwd); gradgradcheck needs
f64_mode, which is the interpreter's.
"""
import os
import sys

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

import kad
import test_package_models as m

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from kernels import gelu as gelu_mod  # noqa: E402
from kernels import layer_norm as ln_mod  # noqa: E402
from kernels import matmul as mm_mod  # noqa: E402

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
cpu_only = pytest.mark.skipif(DEVICE != "cpu", reason="f64_mode is the CPU interpreter's")

gelu_k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(gelu_mod.gelu_kernel)
ln_k = kad.differentiable(inputs=["X", "W", "B"], outputs=["Y"])(ln_mod.layer_norm_fwd_kernel)
mm_k = kad.differentiable(inputs=["a_ptr", "b_ptr"], outputs=["c_ptr"])(mm_mod.matmul_kernel.fn)


def gelu(x, approximate="tanh"):
    y = torch.empty_like(x)
    n = x.numel()
    gelu_k[(triton.cdiv(n, 32),)](x, y, n, APPROXIMATE=approximate, BLOCK_SIZE=32)
    return y


def layer_norm(x, w, b, eps=1e-5, block=8):
    n_rows, n = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(n_rows, dtype=x.dtype, device=x.device)  # undeclared statistics
    rstd = torch.empty(n_rows, dtype=x.dtype, device=x.device)
    ln_k[(n_rows,)](x, y, w, b, mean, rstd, x.stride(0), y.stride(0), n, eps, BLOCK_N=block)
    return y


def matmul(a, b, activation="fast_gelu"):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    BM, BN, BK = 16, 16, 16
    mm_k[(triton.cdiv(M, BM) * triton.cdiv(N, BN),)](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_SIZE_M=2, ACTIVATION=activation)
    return c


def rnd(*shape, seed=0, scale=1.0, shift=0.0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return (scale * torch.randn(*shape, generator=g, dtype=torch.float64) + shift).to(DEVICE, dtype)


def leaf(*shape, **kw):
    return rnd(*shape, **kw).requires_grad_()


CASES = {  # name -> (function, argument shapes and (scale, shift), f64_mode's typed_as)
    "gelu_tanh": (lambda x: gelu(x, "tanh"), [((3, 21), 1.0, 0.0)], None),
    "gelu_erf": (lambda x: gelu(x, "erf"), [((37,), 1.5, 0.0)], None),
    "swiglu": (m.swiglu, [((3, 10), 1.0, 0.0), ((3, 10), 1.0, 0.0)], None),
    "rms_norm": (m.rms_norm, [((4, 12), 1.0, 0.0), ((12,), 0.2, 1.0)], None),
    "layer_norm": (layer_norm, [((3, 20), 1.0, 0.5), ((20,), 0.2, 1.0), ((20,), 0.5, 0.0)], None),
    "softmax": (m.softmax, [((4, 12), 1.5, 0.0)], None),
    "matmul_fast_gelu": (matmul, [((20, 18), 0.5, 0.0), ((18, 17), 0.5, 0.0)], torch.float32),
    "cumprod": (lambda x: cumprod_rows(x), [((3, 8), 0.8, 0.3)], None),  # defined below
}


@cpu_only
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradgradcheck_f64(name):
    f, shapes, typed_as = CASES[name]
    xs = tuple(leaf(*s, seed=i, scale=sc, shift=sh) for i, (s, sc, sh) in enumerate(shapes))
    with kad.f64_mode(typed_as):
        assert torch.autograd.gradcheck(f, xs, eps=1e-6, atol=1e-7)
        assert torch.autograd.gradgradcheck(f, xs, eps=1e-6, atol=1e-6)


@cpu_only
def test_gradgradcheck_fails_on_a_wrong_second_derivative(monkeypatch):
    """The check above can fail: with the Hessian term dropped (x's second-order gradient zeroed),
    gradgradcheck of GELU reports a mismatch."""
    import kad.autograd as ka
    real = ka._KadBackward.backward

    def broken(ctx, *vs):
        r = list(real(ctx, *vs))
        return tuple(None if i == 2 else t for i, t in enumerate(r))  # x's H v dropped
    monkeypatch.setattr(ka._KadBackward, "backward", staticmethod(broken))
    x = leaf(3, 7, seed=5)
    with kad.f64_mode():
        with pytest.raises(Exception, match="Jacobian mismatch|gradient"):
            torch.autograd.gradgradcheck(lambda v: gelu(v), (x,), eps=1e-6, atol=1e-6)


def test_gradient_of_gradient_when_the_output_gradient_is_a_constant():
    """torch.autograd.grad(y.sum(), x, create_graph=True) then a penalty on that gradient: the
    case that used to come back as a silent constant.  Against the same math in torch."""
    dt = torch.float64 if DEVICE == "cpu" else torch.float32
    x = leaf(4, 12, seed=1, dtype=dt)
    w = leaf(12, seed=2, scale=0.2, shift=1.0, dtype=dt)
    ctx = kad.f64_mode() if DEVICE == "cpu" else torch.enable_grad()

    def ref(x, w, eps=1e-6):
        return x * torch.rsqrt(x.square().mean(-1, keepdim=True) + eps) * w
    with ctx:
        gx, = torch.autograd.grad(m.rms_norm(x, w).sum(), x, create_graph=True)
        gg = torch.autograd.grad(gx.square().sum(), (x, w))
    rx, = torch.autograd.grad(ref(x, w).sum(), x, create_graph=True)
    rg = torch.autograd.grad(rx.square().sum(), (x, w))
    tol = 1e-9 if DEVICE == "cpu" else 1e-3
    torch.testing.assert_close(gx, rx, rtol=tol, atol=tol)
    for a, b in zip(gg, rg):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)


# ---------------------------------------------------------------- HVP of a small MLP

def mlp(x, w1, w2, labels):
    h = matmul(x, w1, "fast_gelu")
    logits = matmul(h, w2, "")
    return m.cross_entropy(logits, labels)


def mlp_ref(x, w1, w2, labels):
    z = x @ w1
    h = z * torch.sigmoid(1.702 * z)
    return F.cross_entropy(h @ w2, labels)


def hvp(f, params, vs):
    loss = f(*params)
    gs = torch.autograd.grad(loss, params, create_graph=True)
    dot = sum((g * v).sum() for g, v in zip(gs, vs))
    return [g.detach() for g in gs], torch.autograd.grad(dot, params)


def test_hvp_of_an_mlp_matches_torch():
    """Hessian-vector product of cross_entropy(matmul(fast_gelu(matmul(x, W1))), W2) w.r.t. (W1, W2),
    every op a kad kernel, against the same model in torch.  CPU: float64 buffers in
    f64_mode(typed_as=float32); CUDA: float32 (tl.dot in TF32, hence the looser tolerance)."""
    dt = torch.float64 if DEVICE == "cpu" else torch.float32
    x = rnd(24, 20, seed=1, dtype=dt)
    w1 = leaf(20, 32, seed=2, scale=0.3, dtype=dt)
    w2 = leaf(32, 10, seed=3, scale=0.3, dtype=dt)
    labels = torch.randint(0, 10, (24,), generator=torch.Generator().manual_seed(4)).to(DEVICE)
    vs = [rnd(20, 32, seed=5, dtype=dt), rnd(32, 10, seed=6, dtype=dt)]
    ctx = kad.f64_mode(torch.float32) if DEVICE == "cpu" else torch.enable_grad()
    with ctx:
        g, hv = hvp(lambda a, b: mlp(x, a, b, labels), [w1, w2], vs)
    gr, hvr = hvp(lambda a, b: mlp_ref(x.double(), a.double(), b.double(), labels), [w1, w2],
                  [v.double() for v in vs])
    tol = 1e-9 if DEVICE == "cpu" else 2e-2
    for a, b in zip(g + list(hv), gr + list(hvr)):
        scale = b.abs().max().item()
        torch.testing.assert_close(a.double(), b.double(), rtol=tol, atol=tol * scale)
    assert any(h.abs().max() > 0 for h in hv)


# ---------------------------------------------------------------- refusals

@kad.differentiable(inputs=["s_ptr", "x_ptr"], outputs=["s_ptr"])
@triton.jit
def _square_acc(s_ptr, x_ptr, n, BLOCK: tl.constexpr):
    # s = s * x (in place)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(s_ptr + offs, mask=mask)
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(s_ptr + offs, s * x, mask=mask)


def test_in_place_outputs_are_refused():
    x = leaf(16, seed=7, dtype=torch.float32)
    s0 = leaf(16, seed=8, dtype=torch.float32)
    s = s0.clone()
    _square_acc[(1,)](s, x, 16, BLOCK=16)
    with pytest.raises(RuntimeError, match=r"second derivatives through the kad kernel '_square_acc'.*in place"):
        torch.autograd.grad(s.sum(), x, create_graph=True)
    gx, = torch.autograd.grad(s.sum(), x)  # first derivatives still work
    torch.testing.assert_close(gx, s0.detach())


def test_third_derivatives_are_refused():
    x = leaf(9, seed=9, dtype=torch.float32)
    y = gelu(x)
    gx, = torch.autograd.grad(y.sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match=r"third derivatives through the kad kernel 'gelu_kernel'"):
        torch.autograd.grad(gx.sum(), x, create_graph=True)  # the second backward made differentiable
    ggx, = torch.autograd.grad(gx.sum(), x)  # without create_graph: the second derivative
    xr = x.detach().clone().requires_grad_()
    gr, = torch.autograd.grad(F.gelu(xr, approximate="tanh").sum(), xr, create_graph=True)
    ggr, = torch.autograd.grad(gr.sum(), xr)
    torch.testing.assert_close(ggx, ggr, rtol=1e-4, atol=1e-5)


def test_torch_func_forward_over_reverse_is_refused():
    """torch.func's hessian (jacfwd(jacrev(f))) and grad of grad go through kad's custom-operator path,
    whose backward is not differentiable yet: a clear error, never a silent constant."""
    x = rnd(8, seed=10, dtype=torch.float32)
    f = lambda v: gelu(v).sum()  # noqa: E731
    with pytest.raises(RuntimeError, match="second derivatives are not supported yet"):
        torch.func.hessian(f)(x)
    with pytest.raises(RuntimeError, match="second derivatives are not supported yet"):
        torch.func.grad(lambda v: torch.func.grad(f)(v).sum())(x)


# ---------------------------------------------------------------- the CUDA branch, on Triton's CPU interpreter

@cpu_only
@pytest.mark.parametrize("name", ["swiglu", "rms_norm", "softmax", "cumprod"])
def test_generated_modules_agree_with_the_interpreter(name, monkeypatch, tmp_path):
    """_KadBackward's CUDA branch (the generated launch_<kernel>_jvp and launch_<kernel>_jvp_bwd,
    run by Triton's interpreter on CPU tensors) gives the HVP kad's interpreter gives."""
    import triton_cpu
    import kad.autograd as ka
    monkeypatch.setenv("KAD_CACHE_DIR", str(tmp_path))
    f, shapes, _ = CASES[name]
    real = ka._KadBackward.backward

    def as_cuda(ctx, *vs):
        launch = ctx.run.launch
        launch.device = "cuda"  # this launch's second backward only: the generated modules' branch
        try:
            with triton_cpu.interpreter():
                return real(ctx, *vs)
        finally:
            launch.device = "cpu"

    def hvp_of(backward):
        monkeypatch.setattr(ka._KadBackward, "backward", staticmethod(backward))
        xs = [rnd(*s, seed=i, scale=sc, shift=sh, dtype=torch.float32).requires_grad_()
              for i, (s, sc, sh) in enumerate(shapes)]
        vs = [rnd(*s, seed=20 + i, dtype=torch.float32) for i, (s, _, _) in enumerate(shapes)]
        gs = torch.autograd.grad(f(*xs).square().sum(), xs, create_graph=True)
        return torch.autograd.grad(sum((g * v).sum() for g, v in zip(gs, vs)), xs)
    ref = hvp_of(real)
    got = hvp_of(as_cuda)
    assert any(r.abs().max() > 0 for r in ref)
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    made = [p.name for p in tmp_path.iterdir()]  # the generated modules ran, not the interpreter
    assert any("_jvp_bwd_" in n for n in made) and any("_jvp_" in n and "_jvp_bwd_" not in n for n in made)


# ---------------------------------------------------------------- tl.cumprod

@kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])
@triton.jit
def _cumprod_rows(x_ptr, y_ptr, N: tl.constexpr, REVERSE: tl.constexpr):
    # y[r, :] = cumprod(x[r, :]) (reverse: from the right)
    offs = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(y_ptr + offs, tl.cumprod(tl.load(x_ptr + offs), 0, reverse=REVERSE))


def cumprod_rows(x, reverse=False):
    y = torch.empty_like(x)
    _cumprod_rows[(x.shape[0],)](x, y, N=x.shape[1], REVERSE=reverse)
    return y


def _with_zeros(x):
    x = x.detach().clone()
    x[0, 2] = 0.0  # one zero
    x[1, 1] = x[1, 5] = 0.0  # two zeros in a row
    x[2, 0] = 0.0  # a zero first
    return x.requires_grad_()


@cpu_only
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("zeros", [False, True])
def test_cumprod_second_derivative(reverse, zeros):
    """The second derivatives of tl.cumprod (reverse over forward: the tangent is a linear
    recurrence scan over x and tx times y shifted by one, which reverse mode differentiates):
    gradgradcheck against float64 finite differences, and torch.cumprod's double backward,
    with zeros in the rows too (the rule divides by nothing)."""
    x = leaf(3, 8, seed=11, scale=0.8, shift=0.3)
    if zeros:
        x = _with_zeros(x)
    f = lambda v: cumprod_rows(v, reverse)  # noqa: E731
    with kad.f64_mode():
        assert torch.autograd.gradcheck(f, (x,), eps=1e-6, atol=1e-7)
        assert torch.autograd.gradgradcheck(f, (x,), eps=1e-6, atol=1e-6)
        w = rnd(3, 8, seed=12)
        gx, = torch.autograd.grad((f(x) * w).sum(), x, create_graph=True)
        v = rnd(3, 8, seed=13)
        hv, = torch.autograd.grad((gx * v).sum(), x)

    def ref(u):
        return (u.flip(1).cumprod(1).flip(1) if reverse else u.cumprod(1))
    rx, = torch.autograd.grad((ref(x) * w).sum(), x, create_graph=True)
    rh, = torch.autograd.grad((rx * v).sum(), x)
    torch.testing.assert_close(gx, rx, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(hv, rh, rtol=1e-10, atol=1e-12)
    assert hv.abs().max() > 0
