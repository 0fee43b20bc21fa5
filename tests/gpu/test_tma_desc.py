"""GPU only: the emitted backward of a tensor-descriptor kernel really uses TMA on sm90+.

tests/kernels/tensor_desc.py:desc_swish_tile's backward (kad grad) is launched directly with its
TMA_d_x_ptr and TMA_d_y_ptr flags True and False: both give PyTorch autograd's gradient, and the
kernel compiled with the flags True holds a descriptor store (d_x stored through a descriptor,
which Triton lowers to TMA on sm90+) and one more descriptor load (d_y) in its TTIR than the one
with False (which still loads x through a descriptor, and stores d_x through pointers).  Also
checks that the launcher sets Triton's allocator (global scratch for in-kernel descriptors) in a
thread that has none, as PyTorch's backward thread has none.
"""
import importlib.util
import os
import subprocess
import sys
import threading

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9:
    pytest.skip("needs a CUDA GPU of compute capability 9.0 or later (TMA)", allow_module_level=True)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KAD = os.environ.get("KAD", os.path.join(REPO, "build", "kad"))


def _module(tmp_path):
    sig = "x_ptr=*fp32,y_ptr=*fp32,M=i32,N=i32,stride=i32,BLOCK_M=64,BLOCK_N=64"
    p = subprocess.run([KAD, "grad", "tests/kernels/tensor_desc.py:desc_swish_tile", "--sig", sig, "--wrt", "x_ptr",
                        "--out", "y_ptr"], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    path = tmp_path / "swish_tma_bwd.py"
    path.write_text(p.stdout)
    spec = importlib.util.spec_from_file_location("swish_tma_bwd", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_tma_store_compiles_and_matches(tmp_path):
    mod = _module(tmp_path)
    mod._kad_tma_allocator([torch.empty(1, device="cuda")])
    # N = 1000: rows of 4000 bytes, the TMA store; N = 1001: 4004 bytes, which the kernel stores through
    # pointers (an H100 wrote past such an extent through a TMA store); columns past N are not written
    for N in (1000, 1001):
        M = 1000
        x = torch.randn(M, 1024, device="cuda")[:, :N]
        y = torch.empty(M, 1024, device="cuda")[:, :N]
        dy = torch.randn(M, 1024, device="cuda")[:, :N]  # the kernel's one stride is every tensor's
        xr = x.double().requires_grad_()
        (xr * torch.sigmoid(1.702 * xr)).backward(dy.double())
        ops = {}
        for tma in (True, False):
            buf = torch.full((M, 1024), 7.0, device="cuda")
            dx = buf[:, :N]
            k = mod.desc_swish_tile_bwd[(16, 16)](x, y, M, N, 1024, 64, 64, dy, dx, True, TMA_d_y_ptr=tma,
                                                  TMA_d_x_ptr=tma)
            torch.testing.assert_close(dx.double(), xr.grad, rtol=1e-5, atol=1e-5)
            assert (buf[:, N:] == 7.0).all(), (N, tma)
            ops[tma] = (k.asm["ttir"].count("tt.descriptor_store"), k.asm["ttir"].count("tt.descriptor_load"))
        # stores: d_x's only under the flag; loads: x's always, d_y's under the flag
        assert ops[True][0] > 0 and ops[False][0] == 0 and ops[True][1] > ops[False][1] > 0, ops


def test_launcher_sets_allocator_in_a_fresh_thread(tmp_path):
    mod = _module(tmp_path)
    M, N = 130, 200
    x = torch.randn(M, 256, device="cuda")[:, :N]
    dy = torch.randn(M, 256, device="cuda")[:, :N]
    dx = torch.zeros(M, 256, device="cuda")[:, :N]
    err = []

    def run():  # a new thread starts with Triton's allocator unset (a ContextVar)
        try:
            mod.launch_desc_swish_tile_bwd((3, 4), x, torch.empty(M, 256, device="cuda")[:, :N], M, N, 256, dy, dx)
        except Exception as e:  # noqa: BLE001
            err.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert not err, err
    xr = x.double().requires_grad_()
    (xr * torch.sigmoid(1.702 * xr)).backward(dy.double())
    torch.testing.assert_close(dx.double(), xr.grad, rtol=1e-5, atol=1e-5)
