"""Host-side tensor descriptors (issue 10): a kernel parameter given a
triton.tools.tensor_descriptor.TensorDescriptor (Triton's JIT types it tensordesc<fp32[8, 8]>).
kad expands it as Triton's launcher does: the base pointer, the shape (i32) and the strides but
the last (i64; the last is 1), and lowers desc.load/desc.store like in-kernel descriptors. The
gradient of a descriptor argument is the gradient of its base tensor.

The kernel (tests/kernels/tensor_desc_host.py) loads [8, 8] tiles through descriptors in a loop
over column chunks, computes a non-linear row statistic and stores through a descriptor.
Checked by `kad check` (float64 finite differences), against PyTorch autograd of the same math
written plainly through @kad.differentiable, and by launching the generated backward module with
the user's TensorDescriptor objects on Triton (its CPU interpreter, or CUDA with
KAD_TEST_DEVICE=cuda: the lead runs that on an H100; TMA needs 16-byte aligned bases and row
strides, hence aligned()).
"""
import math
import os
import subprocess
import sys

import pytest
import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

import kad
import triton_cpu

sys.path.insert(0, os.path.join(triton_cpu.REPO, "tests", "kernels"))
import tensor_desc_host  # noqa: E402

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
KFILE = "tests/kernels/tensor_desc_host.py:host_desc_chunked"
SIG = ("x_desc=tensordesc<fp32[8, 8]>,w_desc=tensordesc<fp32[8]>,y_desc=tensordesc<fp32[8, 8]>,"
       "BLOCK_M=8,BLOCK_N=8")

chunked = kad.differentiable(inputs=["x_desc", "w_desc"], outputs=["y_desc"])(tensor_desc_host.host_desc_chunked)


def aligned(t):
    """t in a buffer whose rows start 16 bytes apart (TMA and TensorDescriptor need it)."""
    rows, cols = t.shape
    buf = torch.zeros(rows, -(-cols // 4) * 4, dtype=t.dtype, device=t.device)
    buf[:, :cols] = t
    return buf[:, :cols]


def descs(x, w, y):
    return (TensorDescriptor.from_tensor(x, [8, 8]), TensorDescriptor.from_tensor(w, [8]),
            TensorDescriptor.from_tensor(y, [8, 8]))


def ref(x, w):
    z = x * w[None, :]
    s = (torch.nn.functional.softplus(z) - math.log(2.0)).sum(dim=1)
    return x * torch.sigmoid(s)[:, None]


def run(x, w):
    M = x.shape[0]
    y = aligned(torch.empty_like(x))
    chunked[(triton.cdiv(M, 8),)](*descs(x, w, y), BLOCK_M=8, BLOCK_N=8)
    return y


def test_kad_check_host_descriptors():
    # the descriptors' parts by their expanded names; x's rows 24 apart (a view of a wider buffer)
    p = triton_cpu.run_kad(["check", KFILE, "--sig", SIG, "--wrt", "x_desc,w_desc", "--out", "y_desc",
                            "--grid", "3", "--shape", "x_desc=19x24", "--shape", "w_desc=21",
                            "--shape", "y_desc=19x24", "--arg", "x_desc_shape_0=19", "--arg", "x_desc_shape_1=21",
                            "--arg", "x_desc_stride_0=24", "--arg", "w_desc_shape_0=21",
                            "--arg", "y_desc_shape_0=19", "--arg", "y_desc_shape_1=21",
                            "--arg", "y_desc_stride_0=24"])
    assert p.returncode == 0 and p.stdout.count("PASS") == 3, p.stdout + p.stderr


@pytest.mark.parametrize("shape", [(19, 21), (16, 16), (5, 40)])
def test_host_descriptors_match_torch(shape):
    g = torch.Generator().manual_seed(0)
    x = aligned((torch.randn(*shape, generator=g) * 0.5).to(DEVICE)).requires_grad_()
    w = torch.randn(shape[1], generator=g).to(DEVICE).requires_grad_()
    y = run(x, w)
    cot = torch.randn(*shape, generator=g).to(DEVICE)
    dx, dw = torch.autograd.grad(y, [x, w], cot)
    xr, wr = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    yr = ref(xr, wr)
    rx, rw = torch.autograd.grad(yr, [xr, wr], cot)
    torch.testing.assert_close(y, yr.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(dx, rx, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(dw, rw, rtol=1e-4, atol=1e-5)


def test_host_descriptors_gradcheck_float64():
    if DEVICE != "cpu":
        pytest.skip("f64_mode is the CPU interpreter's")
    g = torch.Generator().manual_seed(1)
    x = aligned(torch.randn(11, 13, generator=g, dtype=torch.float64) * 0.5).requires_grad_()
    w = torch.randn(13, generator=g, dtype=torch.float64).requires_grad_()
    with kad.f64_mode():
        assert torch.autograd.gradcheck(run, (x, w), eps=1e-6, atol=1e-7, rtol=1e-5)


def test_nan_padding_is_part_of_the_signature():
    x = aligned(torch.randn(9, 12))
    w = torch.randn(12)
    y = aligned(torch.empty(9, 12))
    xd, wd, yd = descs(x, w, y)
    xd.padding = "nan"
    launch = chunked.bind((2,), (xd, wd, yd), {"BLOCK_M": 8, "BLOCK_N": 8})
    assert "x_desc=tensordesc<fp32[8, 8], nan>" in launch.sig and "w_desc=tensordesc<fp32[8]>" in launch.sig
    # expanded as the kernel takes it: the base tensor, the shape, the strides but the last
    assert launch.values["x_desc"] is x and launch.values["x_desc_shape_1"] == 12
    assert launch.values["x_desc_stride_0"] == 12 and "x_desc_stride_1" not in launch.values
    # nan padding: columns 12..15 of x's last chunk read NaN, which reaches every row's sum
    chunked[(2,)](xd, wd, yd, BLOCK_M=8, BLOCK_N=8)
    assert torch.isnan(y).all()
    # zero padding: they read 0 (softplus(0) - log 2 = 0), rows 9..15 read 0 and are not stored
    chunked[(2,)](*descs(x, w, y), BLOCK_M=8, BLOCK_N=8)
    torch.testing.assert_close(y, ref(x, w), rtol=1e-5, atol=1e-5)


def test_generated_backward_takes_the_descriptors(tmp_path):
    """launch_K_bwd gets the forward's TensorDescriptor arguments unchanged, gradient tensors laid
    out like their bases, and runs on Triton (its interpreter on CPU)."""
    p = triton_cpu.run_kad(["grad", KFILE, "--sig", SIG, "--wrt", "x_desc,w_desc", "--out", "y_desc"])
    assert p.returncode == 0, p.stderr
    text = p.stdout
    assert "args = _kad_descs(args, ((0, 2, (8, 8), \"zero\"), (4, 1, (8,), \"zero\"), (6, 2, (8, 8), \"zero\")))" \
        in text
    path = tmp_path / "bwd.py"
    path.write_text(text)
    M, N = 19, 21
    g = torch.Generator().manual_seed(4)
    x = aligned((torch.randn(M, N, generator=g) * 0.5).to(DEVICE))
    w = torch.randn(N, generator=g).to(DEVICE)
    y = aligned(torch.empty(M, N, device=DEVICE))
    dy = aligned(torch.randn(M, N, generator=g).to(DEVICE))
    dx = aligned(torch.full((M, N), float("nan"), device=DEVICE))  # no initialization needed
    dw = torch.empty(N, device=DEVICE)
    with triton_cpu.interpreter(DEVICE):
        mod = triton_cpu.load_module(str(path), "kad_bwd_host_desc")
        xd, wd, yd = descs(x, w, y)
        # the output gradient and one input gradient as descriptors of the gradient tensors
        mod.launch_host_desc_chunked_bwd((triton.cdiv(M, 8),), xd, wd, yd, TensorDescriptor.from_tensor(dy, [8, 8]),
                                         dx, TensorDescriptor.from_tensor(dw, [8]), BLOCK_M=8, BLOCK_N=8)
        with pytest.raises(ValueError, match="specialized for \\[8, 8\\]"):
            mod.launch_host_desc_chunked_bwd((3,), TensorDescriptor.from_tensor(x, [4, 8]), wd, yd, dy, dx, dw)
    if DEVICE != "cpu":
        torch.cuda.synchronize()
    xr, wr = x.double().cpu().requires_grad_(), w.double().cpu().requires_grad_()
    rx, rw = torch.autograd.grad(ref(xr, wr), [xr, wr], dy.double().cpu())
    torch.testing.assert_close(dx.double().cpu(), rx, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(dw.double().cpu(), rw, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cols", [20, 21])  # 80 bytes a row: TMA store; 84: pointer stores (docs/AD.md)
@pytest.mark.parametrize("shift", [0, 1])
def test_swish_tile_gradient_through_descriptor_store(tmp_path, shift, cols):
    # host-side descriptors rebuilt in the backward from their parameters: the recomputation loads
    # x through one, and d_x (read once per element) is stored through a descriptor of it when its
    # base is 16-byte aligned (the launcher's TMA_d_x_desc), else through pointers; columns past
    # the descriptor's shape are not written
    sig = "x_desc=tensordesc<fp32[8, 8]>,y_desc=tensordesc<fp32[8, 8]>,BLOCK_M=8,BLOCK_N=8"
    p = triton_cpu.run_kad(["grad", "tests/kernels/tensor_desc_host.py:host_desc_swish_tile", "--sig", sig,
                            "--wrt", "x_desc", "--out", "y_desc"])
    assert p.returncode == 0, p.stderr
    assert "x_tma.load([" in p.stdout and "if TMA_d_x_desc:" in p.stdout and "d_x_tma.store([" in p.stdout
    assert "d_y_tma.load([tmp0, tmp1]) if TMA_d_y_desc else tl.load(" in p.stdout  # the output gradient too
    path = tmp_path / "hswish_bwd.py"
    path.write_text(p.stdout)
    g = torch.Generator().manual_seed(7)
    x = torch.randn(19, cols, generator=g, dtype=torch.float64)
    cot = torch.randn(19, cols, generator=g, dtype=torch.float64)
    xr = x.clone().requires_grad_()
    (xr * torch.sigmoid(1.702 * xr) * cot).sum().backward()
    xt, yt, ct = (triton_cpu.rows_apart(a.float().to(DEVICE), 24) for a in (x, torch.zeros(19, cols), cot))
    buf = torch.full((19 * 24 + 4,), 7.0, device=DEVICE)
    dx = buf[shift:shift + 19 * 24].view(19, 24)[:, :cols]
    with triton_cpu.interpreter(DEVICE):
        bwd = triton_cpu.load_module(str(path), f"kad_hswish_bwd_{shift}_{cols}")
        assert bwd._kad_tma_ok(dx) == (shift == 0)
        bwd.launch_host_desc_swish_tile_bwd((3, 3), TensorDescriptor.from_tensor(xt, [8, 8]),
                                            TensorDescriptor.from_tensor(yt, [8, 8]), ct, dx)
    torch.testing.assert_close(dx.cpu().double(), xr.grad, rtol=1e-5, atol=1e-6)
    assert (buf[shift:shift + 19 * 24].view(19, 24)[:, cols:] == 7.0).all()
