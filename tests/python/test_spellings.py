"""Issue 33, items 2 and 3 (part): the spellings of Triton's functions (tests/kernels/spellings.py)
through kad.differentiable on the CPU interpreter, forward against PyTorch and gradients against
PyTorch autograd; each kernel through `kad ir` with signatures for both output dtypes; the
spellings Triton itself rejects (no such name in that module) as located kad errors."""
import os
import subprocess
import sys

import pytest
import torch

import kad
import triton_cpu

sys.path.insert(0, os.path.join(triton_cpu.REPO, "tests", "kernels"))
import spellings as S  # noqa: E402

SRC = os.path.join(triton_cpu.REPO, "tests", "kernels", "spellings.py")
TOL = dict(rtol=1e-5, atol=1e-5)
N = 100
BLOCK = 64


def _elementwise(kernel, ref, extra=()):
    torch.manual_seed(0)
    x = (torch.randn(N) * 0.7).requires_grad_()
    out = torch.empty(N)
    k = kad.differentiable(inputs=["x_ptr"], outputs=["out_ptr"])(kernel)
    k[((N + BLOCK - 1) // BLOCK,)](x, out, N, *extra, BLOCK=BLOCK)
    r = x.detach().clone().requires_grad_()
    want = ref(r)
    torch.testing.assert_close(out, want.detach(), **TOL)
    g = torch.randn(N)
    (out * g).sum().backward()
    (want * g).sum().backward()
    torch.testing.assert_close(x.grad, r.grad, **TOL)


def test_core_math_and_module_aliases():
    _elementwise(S.core_spelled, lambda x: torch.exp(x) + torch.sin(x) + x.clamp(min=0) +
                 torch.where(x > 0, x * x, -x) + torch.sqrt(x * x + 1) + 2 * x.clamp(max=0))


def test_libdevice_every_import_path():
    _elementwise(S.libdevice_spelled, lambda x: 3 * torch.tanh(x) + torch.log1p(x * x) + torch.expm1(x) +
                 torch.erf(x) + torch.atan(x))


def test_helper_constexpr_parameter_given_values():
    _elementwise(S.helper_constexpr_spelled, lambda x: x * x + 1.5 * x + 2 * x, extra=(1.5,))


def test_type_attributes_in_casts():
    _elementwise(S.attrs_spelled, lambda x: 3 * x + 1)


def test_standard_reductions_and_softmax():
    torch.manual_seed(0)
    R, C = 3, 10
    x = torch.randn(R, C).requires_grad_()
    out = torch.empty(R, C)
    k = kad.differentiable(inputs=["x_ptr"], outputs=["out_ptr"])(S.standard_spelled)
    k[(R,)](x, out, C, BLOCK=16)
    r = x.detach().clone().requires_grad_()
    want = torch.softmax(r, 1) + r.sum(1, keepdim=True) / C + r.max(1, keepdim=True).values
    torch.testing.assert_close(out, want.detach(), **TOL)
    g = torch.randn(R, C)
    (out * g).sum().backward()
    (want * g).sum().backward()
    torch.testing.assert_close(x.grad, r.grad, **TOL)


def test_block_pointer_types():
    torch.manual_seed(0)
    M, Nn = 20, 24
    x = torch.randn(M, Nn).requires_grad_()
    out = torch.empty(M, Nn)
    k = kad.differentiable(inputs=["x_ptr"], outputs=["out_ptr"])(S.block_ptr_attrs_spelled)
    k[(2, 2)](x, out, M, Nn, BM=16, BN=16)
    torch.testing.assert_close(out, 2 * x.detach(), **TOL)
    g = torch.randn(M, Nn)
    (out * g).sum().backward()
    torch.testing.assert_close(x.grad, 2 * g, **TOL)


def _ir(kernel, sig, src=SRC):
    return subprocess.run([triton_cpu.KAD, "ir", f"{src}:{kernel}", "--sig", sig], capture_output=True, text=True)


@pytest.mark.parametrize("out", ["fp32", "fp16"])
@pytest.mark.parametrize("kernel", ["core_spelled", "libdevice_spelled", "standard_spelled", "attrs_spelled"])
def test_ir(kernel, out):
    p = _ir(kernel, f"x_ptr=*fp32,out_ptr=*{out},n=i32,BLOCK=64")
    assert p.returncode == 0, p.stderr
    if kernel == "attrs_spelled":
        # the casts to the output's element type are there (fp16) or folded away (fp32)
        assert (": fp16[64]" in p.stdout) == (out == "fp16"), p.stdout


def test_ir_block_pointer_cast():
    p = _ir("block_ptr_attrs_spelled", "x_ptr=*fp32,out_ptr=*fp16,M=i32,N=i32,BM=16,BN=16")
    assert p.returncode == 0, p.stderr
    assert "cast %y : fp16[16,16]" in p.stdout, p.stdout


BAD = '''import triton
import triton.language as tl
from triton.language import core, standard
from triton.language import math as tmath
from triton.language.extra import libdevice


@triton.jit
def k(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), EXPR)
'''


@pytest.mark.parametrize("expr,msg", [
    ("core.exp(x)", "'triton.language.core' exports no 'exp'"),
    ("standard.exp(x)", "'triton.language.standard' exports no 'exp'"),
    ("tmath.max(x, 0.0)", "'triton.language.math' exports no 'max' that kad supports"),
    ("tl.math.softmax(x)", "'triton.language.math' exports no 'softmax'"),
    ("libdevice.fmax(x, 0.0)", "'libdevice.fmax' does not exist in Triton's libdevice"),
    ("x * core.math.pi", "Python's math module"),
    ("x + tl.zeros(x.shape, x.type)", "a tile's '.type' is a block type"),
    ("x.to(x_ptr.type)", "pointer"),
])
def test_spellings_triton_rejects(tmp_path, expr, msg):
    src = tmp_path / "bad.py"
    src.write_text(BAD.replace("EXPR", expr))
    p = _ir("k", "x_ptr=*fp32,BLOCK=32", str(src))
    assert p.returncode != 0
    assert f"bad.py:11:" in p.stderr and msg in p.stderr, p.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="Triton's own compiler needs a GPU")
def test_triton_itself_accepts_each_spelling():
    # the same kernels compiled by Triton (no kad): every spelling is one Triton resolves
    x = torch.randn(N, device="cuda") * 0.7
    for kern, ref, extra in [
        (S.core_spelled, lambda x: torch.exp(x) + torch.sin(x) + x.clamp(min=0) + torch.where(x > 0, x * x, -x) +
         torch.sqrt(x * x + 1) + 2 * x.clamp(max=0), ()),
        (S.libdevice_spelled, lambda x: 3 * torch.tanh(x) + torch.log1p(x * x) + torch.expm1(x) + torch.erf(x) +
         torch.atan(x), ()),
        (S.helper_constexpr_spelled, lambda x: x * x + 1.5 * x + 2 * x, (1.5,)),
        (S.attrs_spelled, lambda x: 3 * x + 1, ()),
    ]:
        for dt in (torch.float32, torch.float16):
            out = torch.empty(N, device="cuda", dtype=dt)
            kern[((N + BLOCK - 1) // BLOCK,)](x, out, N, *extra, BLOCK=BLOCK)
            torch.testing.assert_close(out.float(), ref(x), rtol=2e-3, atol=2e-3)
    xr = torch.randn(3, 10, device="cuda")
    out = torch.empty(3, 10, device="cuda")
    S.standard_spelled[(3,)](xr, out, 10, BLOCK=16)
    want = torch.softmax(xr, 1) + xr.sum(1, keepdim=True) / 10 + xr.max(1, keepdim=True).values
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)
    xb = torch.randn(20, 24, device="cuda")
    out = torch.empty(20, 24, device="cuda", dtype=torch.float16)
    S.block_ptr_attrs_spelled[(2, 2)](xb, out, 20, 24, BM=16, BN=16)
    torch.testing.assert_close(out.float(), 2 * xb, rtol=2e-3, atol=2e-3)
