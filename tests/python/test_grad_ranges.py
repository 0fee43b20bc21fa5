"""Signature ranges: loops of one trip as straight-line code (docs/AD.md, "Loops of one trip";
docs/PYTHON.md, "Ranges").

A kernel written for rows of any length sweeps each row in chunks, `for start in range(0, N,
BLOCK)`, and its launcher usually picks BLOCK >= N, so every loop runs once.  kad reports which
int parameters bound such loops (kad_kernel_range_hints); a signature that gives the parameter
the range (`N=i32[1:BLOCK]`) makes those loops straight-line code, so the backward is one pass
over the row instead of a read-modify-write of the gradient per loop.  The package adds the range
when the launch's value lies inside.  These tests check the hints, the package's choice, the
emitted module (run on Triton's CPU interpreter, or a GPU with KAD_GRAD_TEST_DEVICE=cuda) against
PyTorch autograd in float64, and that a kernel specialized for a range refuses values outside it.
"""
import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

import kad  # noqa: E402
from kad import _capi  # noqa: E402
import triton_cpu  # noqa: E402
from test_grad_cover import _close, _nan_view, _run as _cover_run  # noqa: E402

DEVICE = triton_cpu.device_from_env("KAD_GRAD_TEST_DEVICE", "KAD_EMIT_TEST_DEVICE")
PKG_DEVICE = triton_cpu.device_from_env("KAD_TEST_DEVICE")  # test_package: "cuda" runs the package's GPU path
HERE = __file__


@pytest.fixture(scope="module", autouse=True)
def _triton_interpreter():
    with triton_cpu.interpreter(DEVICE):
        yield


@triton.jit
def norm_chunks(x_ptr, w_ptr, y_ptr, stride, N, eps, BLOCK: tl.constexpr):
    """y = (x - mean) * rstd * w per row, the row swept in three chunk loops (mean, variance,
    output)."""
    row = tl.program_id(0)
    x_ptr += row * stride
    y_ptr += row * stride
    acc = tl.zeros([BLOCK], dtype=x_ptr.dtype.element_ty)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < N, other=0.0)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BLOCK], dtype=x_ptr.dtype.element_ty)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
        d = tl.where(cols < N, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < N
        x = tl.load(x_ptr + cols, mask=m, other=0.0)
        w = tl.load(w_ptr + cols, mask=m, other=0.0)
        tl.store(y_ptr + cols, (x - mean) * rstd * w, mask=m)


@triton.jit
def two_steps(x_ptr, y_ptr, N, A: tl.constexpr, B: tl.constexpr):
    """Two loops over one row with different chunk sizes: sum of squares, then a scaled copy."""
    s = tl.zeros([], dtype=x_ptr.dtype.element_ty)
    for start in range(0, N, A):
        cols = start + tl.arange(0, A)
        x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
        s += tl.sum(x * x, axis=0)
    for start in range(0, N, B):
        cols = start + tl.arange(0, B)
        x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
        tl.store(y_ptr + cols, x * s, mask=cols < N)


def _ref(x, w, eps=1e-5):
    mean = x.mean(1, keepdim=True)
    var = ((x - mean) ** 2).mean(1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w


def _kernel(sig, name="norm_chunks"):
    ctx = _capi.Context()
    with open(HERE) as f:
        ctx.add_source("test_ranges.py", f.read())
    return ctx.specialize(name, sig)


def test_hints():
    """The general signature names N with the range that makes each loop one trip; a signature
    with the range has no loop left (and no hint); the two loops of two_steps give two hints."""
    k = _kernel("x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,stride=i32,N=i32,eps=fp32,BLOCK=32")
    assert k.range_hints() == [("N", 1, 32)]
    assert " for " in k.ir
    k = _kernel("x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,stride=i32,N=i32[1:32],eps=fp32,BLOCK=32")
    assert k.range_hints() == []
    assert " for " not in k.ir and "%N: i32 in [1, 32]" in k.ir
    k = _kernel("x_ptr=*fp32,y_ptr=*fp32,N=i32,A=16,B=64", "two_steps")
    assert k.range_hints() == [("N", 1, 16), ("N", 1, 64)]


@pytest.mark.parametrize("C,stride,ranged", [
    (27, 27, True),    # masked tail, one trip
    (32, 40, True),    # a full chunk, padded rows
    (45, 45, False),   # two trips: the loop form
])
def test_emitted(tmp_path, C, stride, ranged):
    """The backward module of the ranged signature, run as its launcher runs it (gradient buffers
    full of NaN): d_x stored once per element, no zero-fill, right against autograd; the same
    kernel without the range for a row of two chunks."""
    R, BLOCK = 4, 32
    g = torch.Generator().manual_seed(5)
    x64 = torch.randn(R, stride, generator=g, dtype=torch.float64)
    w64 = torch.randn(C, generator=g, dtype=torch.float64)
    dy64 = torch.randn(R, C, generator=g, dtype=torch.float64)
    sig = f"x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,stride=i32,N=i32{'[1:32]' if ranged else ''},eps=fp32,BLOCK={BLOCK}"
    dx = _nan_view((R, C), (stride, 1))
    dw = _nan_view((C,))
    dy = torch.zeros(R, stride, dtype=torch.float32, device=DEVICE)
    dy[:, :C] = dy64.to(torch.float32)
    x = x64.to(torch.float32).to(DEVICE)
    filled, src = _cover_run(tmp_path, "norm_chunks", sig, "x_ptr,w_ptr", "y_ptr", (R,),
                             [x, w64.to(torch.float32).to(DEVICE), torch.zeros(R, stride, device=DEVICE),
                              stride, C, 1e-5], [dy], {"x_ptr": dx, "w_ptr": dw}, file=HERE)
    assert ("for start in range" in src) != ranged, src
    if ranged:
        assert "x_ptr" not in filled, src
        assert "specialized for N in [1, 32]" in src
    xr = x.cpu().to(torch.float64)[:, :C].requires_grad_()
    wr = w64.clone().requires_grad_()
    (_ref(xr, wr) * dy64).sum().backward()
    _close(dx, xr.grad, "d_x", src)
    _close(dw, wr.grad, "d_w", src)


def test_launcher_refuses(tmp_path):
    """A ranged backward's launcher refuses a value outside its range before launching anything."""
    mod, src = triton_cpu.grad_module(HERE, "norm_chunks",
                                      "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,stride=i32,N=i32[1:32],eps=fp32,BLOCK=32",
                                      "x_ptr,w_ptr", "y_ptr", tmp_path, "range")
    with pytest.raises(ValueError, match=r"specialized for N in \[1, 32\], got 33"):
        mod.launch_norm_chunks_bwd((2,), None, None, None, 33, 33, 1e-5, None, None, None)


@pytest.mark.parametrize("C,BLOCK,want", [
    (48, 64, "N=i32[1:64]"),   # inside: the range
    (64, 64, "N=i32[1:64]"),
    (100, 64, "N=i32,"),       # two trips: no range
])
def test_package(C, BLOCK, want):
    """kad.differentiable gives N the range when the launch's value lies inside (the launch's
    signature says which kernel kad specialized), and the gradients match autograd either way."""
    k = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])(norm_chunks)
    R = 3
    cuda = PKG_DEVICE == "cuda"  # fp32 CUDA tensors: the generated module through its launcher
    dt = torch.float32 if cuda else torch.float64
    g = torch.Generator().manual_seed(C)
    x64 = torch.randn(R, C, generator=g, dtype=torch.float64)
    w64 = torch.randn(C, generator=g, dtype=torch.float64)
    dy = torch.randn(R, C, generator=g, dtype=torch.float64)
    x = x64.to(dt).to(PKG_DEVICE).requires_grad_()
    w = w64.to(dt).to(PKG_DEVICE).requires_grad_()
    y = torch.empty_like(x)
    args = (x, w, y, C, C, 1e-5)
    with kad.f64_mode():
        assert want.replace("fp64", "fp32" if cuda else "fp64") in k.bind((R,), args, {"BLOCK": BLOCK}).sig
        k[(R,)](*args, BLOCK=BLOCK)
    got = torch.autograd.grad(y, (x, w), dy.to(dt).to(PKG_DEVICE))
    xr, wr = x64.clone().requires_grad_(), w64.clone().requires_grad_()
    ref = torch.autograd.grad(_ref(xr, wr), (xr, wr), dy)
    tol = 1e-4 if cuda else 1e-9
    for a, b in zip(got, ref):
        assert torch.allclose(a.cpu().to(torch.float64), b, rtol=tol, atol=tol), (a.cpu() - b).abs().max()


def test_package_two_hints():
    """Two loops of one parameter with chunks of 16 and 64: at N=40 only the second is one trip
    (range [1, 64]); at N=10 both are (the ranges' intersection, [1, 16])."""
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(two_steps)
    for n, want in ((40, "N=i32[1:64]"), (10, "N=i32[1:16]")):
        x = torch.randn(n, dtype=torch.float64, requires_grad=True)
        y = torch.empty_like(x)
        with kad.f64_mode():
            assert want in k.bind((1,), (x, y, n), {"A": 16, "B": 64}).sig
            k[(1,)](x, y, n, A=16, B=64)
        dy = torch.randn(n, dtype=torch.float64)
        (got,) = torch.autograd.grad(y, x, dy)
        (ref,) = torch.autograd.grad(x * (x * x).sum(), x, dy)
        assert torch.allclose(got, ref, rtol=1e-9, atol=1e-9)


def _norm_call(k, C, BLOCK):
    def run(x, w):
        y = torch.empty_like(x)
        k[(x.shape[0],)](x, w, y, C, C, 1e-5, BLOCK=BLOCK)
        return y
    return run


@pytest.mark.parametrize("C", [48, 100])
def test_jvp_and_compile(C):
    """The ranged signature through torch.func.jvp (the jvp kernel of the ranged signature) and
    torch.compile (kad's custom operator), against the same math in torch; C=100 (two chunks)
    keeps the general signature."""
    k = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])(norm_chunks)
    run = _norm_call(k, C, 64)
    cuda = PKG_DEVICE == "cuda"
    dt = torch.float32
    g = torch.Generator().manual_seed(C + 1)
    x, w, tx, tw = (torch.randn(*s, generator=g, dtype=torch.float64).to(dt).to(PKG_DEVICE)
                    for s in ((3, C), (C,), (3, C), (C,)))
    tol = dict(rtol=1e-4, atol=1e-4)
    y, ty = torch.func.jvp(run, (x, w), (tx, tw))
    y_r, ty_r = torch.func.jvp(_ref, (x.double(), w.double()), (tx.double(), tw.double()))
    torch.testing.assert_close(y.double(), y_r, **tol)
    torch.testing.assert_close(ty.double(), ty_r, **tol)
    torch._dynamo.reset()
    compiled = torch.compile(run, backend="aot_eager", fullgraph=True)
    xs, ws = x.clone().requires_grad_(), w.clone().requires_grad_()
    out = compiled(xs, ws)
    dy = torch.randn(3, C, generator=g, dtype=torch.float64).to(dt).to(PKG_DEVICE)
    gx, gw = torch.autograd.grad(out, (xs, ws), dy)
    xr, wr = x.double().requires_grad_(), w.double().requires_grad_()
    rx, rw = torch.autograd.grad(_ref(xr, wr), (xr, wr), dy.double())
    torch.testing.assert_close(gx.double(), rx, **tol)
    torch.testing.assert_close(gw.double(), rw, **tol)
    assert not cuda or gx.is_cuda
