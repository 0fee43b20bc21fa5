"""The native backward node (docs/PYTHON.md, "Native backward nodes") on a GPU: after a launch
key's first backwards (compiled, then recorded), later forwards attach the C++ node, which replays
the generated launcher's kernels with cuLaunchKernel.  Checked per kernel (SwiGLU, RMSNorm with a
folded weight gradient, LayerNorm, softmax with its trusted saved output, the matmul's GEMM form):
the node is the native one from the third step on; its gradients are bitwise those of the Python
path's steps and right against float64 PyTorch autograd; an output changed in place after the
forward still gets the right gradient (the recomputing recipe or the Python fallback); a gradient
the recipe does not cover (non-contiguous, None) takes the Python path; create_graph=True too.

Skipped without CUDA.
"""
import os
import sys

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
if not torch.cuda.is_available():
    pytest.skip("needs CUDA", allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
for p in (os.path.join(REPO, "python"), os.path.join(REPO, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

import kad  # noqa: E402
from kad import _native  # noqa: E402
from kernels import layer_norm, rms_norm, softmax, swiglu  # noqa: E402

F = torch.nn.functional


def _swiglu(dev, dt):
    g = torch.Generator(device=dev).manual_seed(0)
    a = torch.randn(64, 1000, device=dev, generator=g).to(dt).requires_grad_()
    b = torch.randn(64, 1000, device=dev, generator=g).to(dt).requires_grad_()

    def fwd(k):
        c = torch.empty_like(a)
        k[(64, 1)](a, b, c, a.stride(0), 1000, BLOCK_SIZE=1024)
        return c
    return (swiglu.swiglu_fwd_kernel, ["a_ptr", "b_ptr"], ["c_ptr"]), [a, b], fwd, lambda a, b: F.silu(a) * b


def _rms(dev, dt):
    g = torch.Generator(device=dev).manual_seed(1)
    x = torch.randn(256, 1000, device=dev, generator=g).to(dt).requires_grad_()
    w = torch.randn(1000, device=dev, generator=g).to(dt).requires_grad_()

    def fwd(k):
        y = torch.empty_like(x)
        rstd = torch.empty(256, device=dev)
        k[(256,)](x, w, y, rstd, x.stride(0), y.stride(0), 1000, 1e-6, BLOCK_SIZE=1024)
        return y
    return ((rms_norm.rms_norm_fwd_kernel, ["x_ptr", "w_ptr"], ["y_ptr"]), [x, w], fwd,
            lambda x, w: F.rms_norm(x, (1000,), w, 1e-6))


def _ln(dev, dt):
    g = torch.Generator(device=dev).manual_seed(2)
    x = torch.randn(256, 1000, device=dev, generator=g).to(dt).requires_grad_()
    w = torch.randn(1000, device=dev, generator=g).to(dt).requires_grad_()
    b = torch.randn(1000, device=dev, generator=g).to(dt).requires_grad_()

    def fwd(k):
        y = torch.empty_like(x)
        mean, rstd = torch.empty(256, device=dev), torch.empty(256, device=dev)
        k[(256,)](x, y, w, b, mean, rstd, x.stride(0), y.stride(0), 1000, 1e-5, BLOCK_N=1024)
        return y
    return ((layer_norm.layer_norm_fwd_kernel, ["X", "W", "B"], ["Y"]), [x, w, b], fwd,
            lambda x, w, b: F.layer_norm(x, (1000,), w, b, 1e-5))


def _softmax(dev, dt):
    g = torch.Generator(device=dev).manual_seed(3)
    x = torch.randn(64, 1000, device=dev, generator=g).to(dt).requires_grad_()

    def fwd(k):
        y = torch.empty_like(x)
        k[(64,)](y, x, x.stride(0), y.stride(0), 1000, BLOCK_SIZE=1024, num_warps=4)
        return y
    return (softmax.softmax_kernel, ["input_ptr"], ["output_ptr"]), [x], fwd, lambda x: torch.softmax(x, -1)


CASES = {"swiglu": _swiglu, "rmsnorm": _rms, "layernorm": _ln, "softmax": _softmax}


@pytest.fixture(scope="module", autouse=True)
def native_built():
    m = _native.module(wait=True)
    assert m is not None, f"the native node did not build: {_native.why()}"


def _tol(dt):
    return 1e-4 if dt == torch.float32 else 3e-2


@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_native_node_matches_the_python_path(name, dt):
    (fn, ins_, outs_), ins, fwd, ref_fn = CASES[name]("cuda", dt)
    k = kad.differentiable(inputs=ins_, outputs=outs_)(fn)
    dy = torch.randn(ins[0].shape[0], 1000, device="cuda").to(dt)
    got, nodes = [], []
    for step in range(5):
        y = fwd(k)
        nodes.append(y.grad_fn.name())
        got.append(torch.autograd.grad(y, ins, dy))
    assert not nodes[0].startswith("KadBackward<"), nodes  # the Python Function until recorded
    assert all(n.startswith("KadBackward<") for n in nodes[3:]), (nodes, [p.native_why for p in k._plans.values()])
    # and the forward launched by the C++ forward (_native_forward) from then on
    assert any(p.nfwd is not None for p in k._plans.values()), [p.nfwd_tried for p in k._plans.values()]
    for g in got[1:]:  # deterministic backwards: the same bits on either path
        for a, b in zip(g, got[0]):
            assert torch.equal(a, b)
    x64 = [t.detach().double().requires_grad_() for t in ins]
    ref = torch.autograd.grad(ref_fn(*x64), x64, dy.double())
    for a, r in zip(got[-1], ref):
        err = ((a.double() - r).abs().max() / r.abs().max()).item()
        assert err < _tol(dt), (name, err)


@pytest.mark.parametrize("name", sorted(CASES))
def test_native_node_falls_back_where_the_recipe_does_not_apply(name):
    (fn, ins_, outs_), ins, fwd, ref_fn = CASES[name]("cuda", torch.float32)
    k = kad.differentiable(inputs=ins_, outputs=outs_)(fn)
    dy = torch.randn(ins[0].shape[0], 1000, device="cuda")
    for _ in range(3):
        torch.autograd.grad(fwd(k), ins, dy)
    x64 = [t.detach().double().requires_grad_() for t in ins]
    ref = torch.autograd.grad(ref_fn(*x64), x64, dy.double())

    def close(gs):
        for a, r in zip(gs, ref):
            assert ((a.double() - r).abs().max() / r.abs().max()).item() < 1e-4

    y = fwd(k)
    assert y.grad_fn.name().startswith("KadBackward<")
    # a non-contiguous output gradient
    dyt = torch.empty(1000, ins[0].shape[0], device="cuda").t().copy_(dy)
    close(torch.autograd.grad(y, ins, dyt, retain_graph=True))
    # create_graph=True (the Python fallback's differentiable backward)
    close(torch.autograd.grad(y, ins, dy, create_graph=True))
    # an output changed in place after the forward: the backward must not trust it
    y = fwd(k)
    with torch.no_grad():
        y.mul_(3.0)
    close(torch.autograd.grad(y, ins, dy))


@pytest.mark.parametrize("grad_mode", [True, False], ids=["grad-on", "no-grad"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_launches_without_autograd_take_the_cpp_launch(name, grad_mode):
    """A launch autograd has nothing to do with (nothing requires grad, or grad mode off) repeats
    through the kernel Triton compiled for its first launch, launched from C++ (_Direct): the same
    bits as the plain Triton launch, the output's version bumped."""
    (fn, ins_, outs_), ins, fwd, _ = CASES[name]("cuda", torch.float32)
    k = kad.differentiable(inputs=ins_, outputs=outs_)(fn)
    saved = [t.requires_grad for t in ins]
    for t in ins:
        t.requires_grad_(False)
    try:
        with torch.set_grad_enabled(grad_mode):
            ref = fwd(fn)  # the plain Triton launch
            ys = [fwd(k) for _ in range(4)]
    finally:
        for t, r in zip(ins, saved):
            t.requires_grad_(r)
    assert all(y.grad_fn is None for y in ys)
    assert any(d.nf is not None for d in k._dplans.values()), list(k._dplans.values())
    for y in ys:
        assert torch.equal(y, ref)
        assert y._version >= 1


@pytest.mark.parametrize("name", sorted(CASES))
def test_repeats_of_the_previous_key_are_checked_in_cpp(name, monkeypatch):
    """A repeat of the previous native launch's key (a training loop's step) is recognized by the
    C++ forward (Forward.launch_keyed) without DifferentiableKernel._plan_key, also with other
    tensors of the same key; a call of another key (an input that does not require grad) computes
    its key in Python and takes its own plan."""
    (fn, ins_, outs_), ins, fwd, ref_fn = CASES[name]("cuda", torch.float32)
    k = kad.differentiable(inputs=ins_, outputs=outs_)(fn)
    dy = torch.randn(ins[0].shape[0], 1000, device="cuda")
    first = [torch.autograd.grad(fwd(k), ins, dy) for _ in range(4)][-1]
    assert k._hot and k._hot[0][2].has_key
    calls = []
    key = type(k)._plan_key

    def counted(self, *a):
        calls.append(1)
        return key(self, *a)
    monkeypatch.setattr(type(k), "_plan_key", counted)
    y = fwd(k)
    assert not calls and y.grad_fn.name().startswith("KadBackward<")
    for a, b in zip(torch.autograd.grad(y, ins, dy), first):
        assert torch.equal(a, b)

    def close(gs, xs, wrt):
        x64 = [t.detach().double().requires_grad_(i in wrt) for i, t in enumerate(xs)]
        ref = torch.autograd.grad(ref_fn(*x64), [x64[i] for i in wrt], dy.double())
        for a, r in zip(gs, ref):
            assert ((a.double() - r).abs().max() / r.abs().max()).item() < 1e-4
    # new values in the same tensors: still no key computed, the gradient of the new values
    with torch.no_grad():
        ins[0].mul_(0.5).add_(0.25)
    y = fwd(k)
    assert not calls
    close(torch.autograd.grad(y, ins, dy), ins, range(len(ins)))
    if len(ins) > 1:
        ins[-1].requires_grad_(False)
        try:
            y = fwd(k)
            assert calls  # another key: computed in Python
            close(torch.autograd.grad(y, ins[:-1], dy), ins, range(len(ins) - 1))
        finally:
            ins[-1].requires_grad_(True)
