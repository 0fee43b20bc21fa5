"""fp8 dtypes (issue 10): tl.float8e5, tl.float8e4nv, tl.float8e4b15 as pointee and value dtypes.

- The rounding table: kad's interpreter converts float32 to fp8 as Triton does on NVIDIA GPUs
  (sm_89+: cvt.rn.satfinite, round-to-nearest-even, out-of-range and infinite magnitudes saturate
  to the largest finite value, NaN stays NaN; float8e4b15: Triton's custom conversion). It is
  compared bit for bit with torch's own conversion (torch.Tensor.to(torch.float8_e5m2 /
  float8_e4m3fn) on the CPU) where torch's rule is the same (every finite value in range: ties,
  subnormals, values rounding up to the largest), and with the saturation written plainly beyond.
- Gradients through fp8 casts follow the straight-through rule: the cast's adjoint is the
  incoming adjoint converted back to the source dtype. `kad check` (float64 finite differences:
  in float64 mode a cast is the identity) and PyTorch autograd of the same math with the
  straight-through estimator written plainly (x + (fp8(x) - x).detach()).
The device comes from KAD_TEST_DEVICE (cpu: kad's interpreter; cuda: Triton on the GPU).
"""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import kad
import triton_cpu

sys.path.insert(0, os.path.join(triton_cpu.REPO, "tests", "kernels"))
import fp8_kernels  # noqa: E402

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
KFILE = "tests/kernels/fp8_kernels.py"
MAXF = {torch.float8_e5m2: 57344.0, torch.float8_e4m3fn: 448.0}
TL = {torch.float8_e5m2: tl.float8e5, torch.float8_e4m3fn: tl.float8e4nv}

quant = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(fp8_kernels.fp8_quant)
dequant = kad.differentiable(inputs=["w_ptr"], outputs=["y_ptr"])(fp8_kernels.fp8_dequant)
ste = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])(fp8_kernels.fp8_ste)


def table(fp8):
    """float32 values over the whole fp8 range: every fp8 value, the midpoints between
    neighbours (ties), a point just either side of each midpoint, subnormals, values beyond
    the largest finite value, infinities, NaN, signed zeros."""
    codes = torch.arange(256, dtype=torch.uint8).view(fp8).float()
    fin = torch.unique(codes[torch.isfinite(codes)].double())
    mids = (fin[1:] + fin[:-1]) / 2
    near = torch.cat([mids * (1 + 2.0**-20), mids * (1 - 2.0**-20)])
    m = MAXF[fp8]
    big = torch.tensor([m * 1.01, m * 1.1, m * 2, 1e30, 3e38])
    vals = torch.cat([fin, mids, near, big, -big, torch.tensor([0.0, -0.0, float("inf"), -float("inf")])])
    return vals.float()


def expected(x, fp8):
    """torch's conversion where it saturates like the GPU would too; beyond the largest finite
    value (torch: NaN for e4m3fn, inf for e5m2) the GPU saturates: sign * max."""
    m = MAXF[fp8]
    want = x.to(fp8).float()
    sat = x.abs() > m
    want[sat] = torch.sign(x[sat]) * m
    return want


@pytest.mark.parametrize("fp8", [torch.float8_e5m2, torch.float8_e4m3fn], ids=["e5", "e4nv"])
def test_rounding_table_matches_torch(fp8):
    x = table(fp8)
    x = torch.cat([x, torch.tensor([float("nan")])]).to(DEVICE)
    n = x.numel()
    q = torch.empty(n, dtype=fp8, device=DEVICE)
    y = torch.empty(n, dtype=torch.float32, device=DEVICE)
    ones = torch.ones_like(x)
    quant[(triton.cdiv(n, 64),)](x, q, y, n, 1.0, FMT=TL[fp8], STORE_Q=True, BLOCK=64)
    want = expected(x[:-1].cpu(), fp8)
    got = q.cpu().float()
    assert torch.equal(y.cpu()[:-1], got[:-1])
    assert torch.isnan(got[-1]), "NaN stays NaN"
    bad = (got[:-1] != want).nonzero().flatten()
    assert bad.numel() == 0, [(x[i].item(), got[i].item(), want[i].item()) for i in bad[:8]]
    # torch's fp8 bits for the in-range values, exactly (signed zeros included)
    inr = (x[:-1].cpu().abs() <= MAXF[fp8])
    assert torch.equal(q.cpu()[:-1][inr].view(torch.uint8), x[:-1].cpu()[inr].to(fp8).view(torch.uint8))
    # loading it back: the dequant kernel reads the fp8 buffer
    y2 = torch.empty(n, dtype=torch.float32, device=DEVICE)
    dequant[(triton.cdiv(n, 64),)](q, ones, y2, n, 1.0, BLOCK=64)
    assert torch.equal(y2.cpu()[:-1], got[:-1]) and torch.isnan(y2.cpu()[-1])


def e4b15_reference(x):
    """Triton's float32 -> float8e4b15 on NVIDIA (convert_custom_float8): fp16 rounding toward
    zero, |h| clamped to 1.75 (0x3F00, NaN included), then (2h + 0x80) >> 8 on the bit pattern,
    the sign kept; decoded back: 4 exponent bits with bias 15, 3 mantissa bits."""
    x = np.asarray(x, dtype=np.float32)
    h = x.astype(np.float16)  # nearest-even; step toward zero where it rounded away
    away = np.abs(h.astype(np.float64)) > np.abs(x.astype(np.float64))
    h = np.where(away, np.nextafter(h, np.float16(0)), h).astype(np.float16)
    bits = h.view(np.uint16).astype(np.int64)
    sign, mag = bits & 0x8000, bits & 0x7FFF
    mag = np.where(np.isnan(x) | (mag > 0x3F00), 0x3F00, mag)
    b = ((2 * mag + 0x80) >> 8) & 0x7F
    e, m = b >> 3, b & 7
    val = np.where(e == 0, m * 2.0**-17, (8 + m) * 2.0 ** (e - 18))
    return np.where(sign != 0, -val, val)


def test_e4b15_rounding_table():
    grid = np.concatenate([np.linspace(-2.5, 2.5, 4001), 2.0 ** np.arange(-20, 2, 0.25),
                           -(2.0 ** np.arange(-20, 2, 0.37)), [0.0, 1.75, 1.8125, 1.875, 100.0, np.inf, -np.inf]])
    # midpoints of neighbouring e4b15 values: ties go away from zero
    vals = np.unique(np.abs(e4b15_reference(np.linspace(0, 1.75, 20000))))
    x = np.concatenate([grid, (vals[1:] + vals[:-1]) / 2]).astype(np.float32)
    xt = torch.from_numpy(x).to(DEVICE)
    n = x.size
    y = torch.empty(n, dtype=torch.float32, device=DEVICE)
    dummy = torch.empty(1, dtype=torch.float8_e5m2, device=DEVICE)
    quant[(triton.cdiv(n, 128),)](xt, dummy, y, n, 1.0, FMT=tl.float8e4b15, STORE_Q=False, BLOCK=128)
    got = y.cpu().double().numpy()  # y = fp8(x) / 1.0
    want = e4b15_reference(x)
    ok = got == want
    assert ok.all(), list(zip(x[~ok][:8], got[~ok][:8], want[~ok][:8]))


def _kad_check(kernel, sig, wrt, out, opts):
    return subprocess.run([triton_cpu.KAD, "check", f"{KFILE}:{kernel}", "--sig", sig, "--wrt", wrt, "--out", out,
                           *opts], capture_output=True, text=True, cwd=triton_cpu.REPO)


@pytest.mark.parametrize("fmt", ["fp8e5", "fp8e4nv", "fp8e4b15"])
def test_kad_check_straight_through(fmt):
    p = _kad_check("fp8_ste", f"x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n=i32,FMT=tl.float{fmt[2:]},BLOCK=32",
                   "x_ptr,w_ptr", "y_ptr", ["--grid", "3", "--shape", "x_ptr=70", "--shape", "w_ptr=70",
                                            "--shape", "y_ptr=70", "--arg", "n=70"])
    assert p.returncode == 0 and "PASS" in p.stdout, p.stdout + p.stderr
    p = _kad_check("fp8_quant", f"x_ptr=*fp32,q_ptr=*{fmt if fmt != 'fp8e4b15' else 'fp8e5'},y_ptr=*fp32,n=i32,"
                   f"scale=fp32,FMT=tl.float{fmt[2:]},STORE_Q={int(fmt != 'fp8e4b15')},BLOCK=32", "x_ptr", "y_ptr",
                   ["--grid", "3", "--shape", "x_ptr=70", "--shape", "q_ptr=70", "--shape", "y_ptr=70",
                    "--arg", "n=70", "--arg", "scale=4.0"])
    assert p.returncode == 0 and "PASS" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("fp8", [torch.float8_e5m2, torch.float8_e4m3fn], ids=["e5", "e4nv"])
def test_straight_through_gradient_matches_torch(fp8):
    g = torch.Generator().manual_seed(0)
    n = 77
    x = (torch.randn(n, generator=g) * 3).to(DEVICE).requires_grad_()
    w = torch.randn(n, generator=g).to(DEVICE).requires_grad_()
    y = torch.empty(n, device=DEVICE)
    ste[(triton.cdiv(n, 32),)](x, w, y, n, FMT=TL[fp8], BLOCK=32)
    cot = torch.randn(n, generator=g).to(DEVICE)
    (y * cot).sum().backward()
    # the same math written plainly: the straight-through estimator
    xr = x.detach().clone().requires_grad_()
    wr = w.detach().clone().requires_grad_()
    xq = xr + (xr.detach().cpu().to(fp8).float().to(DEVICE) - xr).detach()
    yr = torch.sigmoid(xq) * wr
    (yr * cot).sum().backward()
    torch.testing.assert_close(y, yr.detach(), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(w.grad, wr.grad, rtol=1e-5, atol=1e-6)


def test_dequant_gradient_matches_torch():
    g = torch.Generator().manual_seed(3)
    n = 50
    q = (torch.randn(n, generator=g) * 10).to(torch.float8_e4m3fn).to(DEVICE)
    w = torch.randn(n, generator=g).to(DEVICE).requires_grad_()
    y = torch.empty(n, device=DEVICE)
    dequant[(2,)](q, w, y, n, 0.125, BLOCK=32)
    y.sum().backward()
    torch.testing.assert_close(w.grad.cpu(), q.cpu().float() * 0.125)


def test_fp8_refusals():
    def err(kernel, sig, extra=()):
        p = subprocess.run([triton_cpu.KAD, *extra, f"{KFILE}:{kernel}", "--sig", sig], capture_output=True,
                           text=True, cwd=triton_cpu.REPO)
        assert p.returncode != 0
        return p.stderr
    # an fp8 buffer is not differentiated (located at the parameter)
    p = subprocess.run([triton_cpu.KAD, "grad", f"{KFILE}:fp8_dequant", "--sig",
                        "q_ptr=*fp8e5,w_ptr=*fp32,y_ptr=*fp32,n=i32,inv_scale=fp32,BLOCK=32", "--wrt", "q_ptr",
                        "--out", "y_ptr"], capture_output=True, text=True, cwd=triton_cpu.REPO)
    assert p.returncode != 0 and "fp8_kernels.py:" in p.stderr and "does not differentiate fp8" in p.stderr
    # the AMD-only formats
    e = err("fp8_ste", "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n=i32,FMT=tl.float8e4b8,BLOCK=32", ["ir"])
    assert "<sig>:1:47: error:" in e and "tl.float8e4b8" in e


@pytest.mark.parametrize("fmt", ["float8e5", "float8e4nv"])
def test_emitted_backward_on_triton(fmt, tmp_path):
    sig = f"x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n=i32,FMT=tl.{fmt},BLOCK=32"
    p = triton_cpu.run_kad(["grad", f"{KFILE}:fp8_ste", "--sig", sig, "--wrt", "x_ptr,w_ptr", "--out", "y_ptr"])
    assert p.returncode == 0, p.stderr
    assert f".to(tl.{fmt})" in p.stdout
    path = tmp_path / "fp8_bwd.py"
    path.write_text(p.stdout)
    fp8 = torch.float8_e5m2 if fmt == "float8e5" else torch.float8_e4m3fn
    g = torch.Generator().manual_seed(5)
    n = 70
    x, w, cot = torch.randn(n, generator=g) * 3, torch.randn(n, generator=g), torch.randn(n, generator=g)
    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    xq = xr + (xr.detach().to(fp8).float() - xr).detach()
    ((torch.sigmoid(xq) * wr) * cot).sum().backward()
    t = [a.to(DEVICE) for a in (x, w)]
    dx, dw = torch.full_like(t[0], float("nan")), torch.full_like(t[1], float("nan"))
    with triton_cpu.interpreter(DEVICE):
        bwd = triton_cpu.load_module(str(path), f"kad_fp8_bwd_{fmt}")
        bwd.launch_fp8_ste_bwd((3,), t[0], t[1], torch.empty(n, device=DEVICE), n, cot.to(DEVICE), dx, dw,
                               FMT=getattr(tl, fmt), BLOCK=32)
    torch.testing.assert_close(dx.cpu(), xr.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(dw.cpu(), wr.grad, rtol=1e-5, atol=1e-6)
