"""kad.cuda.differentiable on CUDA tensors (docs/PYTHON.md, "CUDA C / HIP kernels"): the user's
forward and kad's CUDA C backward compiled by nvcc into shared libraries (cached on disk by hash),
called through ctypes on torch's current stream.

    make && python3 -m pytest -q -s tests/gpu/test_cuda_package_gpu.py

- test_square / test_swish_template: forward against torch, gradients against torch float64
  autograd (the kernels' fp32 rounding: rtol 1e-5); compile times printed (-s).
- test_backward_bitwise: the backward 20 times on the same inputs, every run equal bit for bit to
  the first (plain stores: one writer per element).
- test_refused_before_forward: a backward the CUDA C emitter refuses (tapes) is reported, located,
  before the forward runs, and the output is untouched.
- test_launch_limits: a block above the device's limit is refused by kad.cuda.
Skipped without torch, CUDA or nvcc.
"""
import os
import shutil

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
if not (os.environ.get("KAD_NVCC") or shutil.which("nvcc") or os.path.isfile("/usr/local/cuda/bin/nvcc")):
    pytest.skip("no nvcc", allow_module_level=True)

import kad  # noqa: E402
from kad import cuda as kc  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CUDA = os.path.join(REPO, "tests", "cuda")
DEV = "cuda"
gen = torch.Generator().manual_seed(3)


def randn(*shape):
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


def report_compiles():
    for name, secs, cached in kc.compile_log:
        print(f"\nkad.cuda compile {name}: {secs * 1000:.0f} ms{' (disk cache)' if cached else ''}")
    kc.compile_log.clear()


def grad_check(fn, k, grid, block, x64, extra):
    x = x64.float().to(DEV).requires_grad_()
    y = torch.zeros_like(x)
    k[grid, block](x, y, *extra)
    torch.cuda.synchronize()
    assert torch.allclose(y.double().cpu(), fn(x64), rtol=1e-5, atol=1e-6)
    dy = randn(*x64.shape)
    g, = torch.autograd.grad(y, x, dy.float().to(DEV))
    xr = x64.clone().requires_grad_()
    want, = torch.autograd.grad(fn(xr), xr, dy)
    assert torch.allclose(g.double().cpu(), want, rtol=1e-5, atol=1e-5), (g.double().cpu() - want).abs().max()
    return x, y, dy


def test_square():
    k = kad.cuda.differentiable(os.path.join(CUDA, "square.cu"), "square", inputs=["x"], outputs=["y"])
    n = 100_000
    grad_check(lambda x: x * x, k, (n + 255) // 256, 256, randn(n), (n,))
    report_compiles()


SWISH = os.path.join(REPO, "tests", "cuda", "swish_hip.hip")
HIP_AS_CUDA = """#include <cuda_runtime.h>
#define hipBlockDim_x blockDim.x
#define hipGridDim_x gridDim.x
#define hipBlockIdx_x blockIdx.x
#define hipThreadIdx_x threadIdx.x
"""


def test_swish_template():
    # the HIP file's kernel in CUDA spelling (nvcc compiles CUDA C): the same per-thread code
    with open(SWISH) as f:
        text = f.read()
    text = text.replace("#include <hip/hip_runtime.h>", HIP_AS_CUDA)
    k = kad.cuda.differentiable(text, "swish", inputs=["x"], outputs=["y"], hip=False)
    n = 5000
    grad_check(lambda x: x * torch.sigmoid(x), k, 8, 128, randn(n), (n,))
    report_compiles()


def test_backward_bitwise():
    k = kad.cuda.differentiable(os.path.join(CUDA, "square.cu"), "square", inputs=["x"], outputs=["y"])
    n = 1 << 20
    x = randn(n).float().to(DEV).requires_grad_()
    dy = randn(n).float().to(DEV)
    first = None
    for _ in range(20):
        y = torch.zeros_like(x)
        k[n // 256, 256](x, y, n)
        g, = torch.autograd.grad(y, x, dy)
        if first is None:
            first = g.clone()
        assert torch.equal(g, first)


def test_refused_before_forward():
    # the transpose's padded 16 x 17 __shared__ tile is longer than the block and than a row a thread
    # holds (272 elements), which the CUDA C emitter does not print yet (docs/EMIT.md, "CUDA C"):
    # refused, located, before the forward runs
    k = kad.cuda.differentiable(os.path.join(CUDA, "transpose_tile.cu"), "transpose", inputs=["in"], outputs=["out"])
    x = randn(40, 27).float().to(DEV).requires_grad_()
    out = torch.zeros(27, 40, device=DEV)
    with pytest.raises(kad.KadError, match=r"transpose_tile.cu:\d+:\d+: error: CUDA C emitter"):
        k[(2, 3), (16, 16)](x, out, 40, 27)
    assert torch.all(out == 0)


def test_launch_limits():
    k = kad.cuda.differentiable(os.path.join(CUDA, "square.cu"), "square", inputs=["x"], outputs=["y"])
    x = torch.zeros(10, device=DEV)
    with pytest.raises(ValueError, match="above the device's limit"):
        k[1, 2048](x, torch.zeros_like(x), 10)


def _square_fn():
    k = kad.cuda.differentiable(os.path.join(CUDA, "square.cu"), "square", inputs=["x"], outputs=["y"])

    def f(x):
        y = torch.empty_like(x)
        k[(x.numel() + 255) // 256, 256](x, y, x.numel())
        return y
    return f


def test_compile_func_forward_mode_and_double_backward():
    # the paths of test_cuda_autograd.py on CUDA tensors: torch.compile(fullgraph=True) and torch.func
    # through kad's operators, forward mode through the generated launch_square_jvp, a second
    # derivative through launch_square_jvp and launch_square_jvp_bwd (all compiled by nvcc)
    f = _square_fn()
    n = 3000
    x64, v64, w64 = randn(n), randn(n), randn(n)
    x, v, w = (t.float().to(DEV) for t in (x64, v64, w64))
    xg = x.clone().requires_grad_()
    torch.compile(lambda x: (f(x) * v).sum(), fullgraph=True)(xg).backward()
    assert torch.allclose(xg.grad.double().cpu(), 2 * x64 * v64, rtol=1e-5, atol=1e-5)
    g = torch.func.grad(lambda x: (f(x) * v).sum())(x)
    assert torch.allclose(g.double().cpu(), 2 * x64 * v64, rtol=1e-5, atol=1e-5)
    out, tan = torch.func.jvp(f, (x,), (v,))
    assert torch.allclose(tan.double().cpu(), 2 * x64 * v64, rtol=1e-5, atol=1e-5)
    xg = x.clone().requires_grad_()
    gx, = torch.autograd.grad(f(xg), xg, v, create_graph=True)
    gg, = torch.autograd.grad(gx, xg, w)
    assert torch.allclose(gg.double().cpu(), 2 * v64 * w64, rtol=1e-5, atol=1e-5)
    report_compiles()
