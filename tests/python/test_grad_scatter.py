"""Scattered sites in a kernel of their own (docs/AD.md, "Scattered sites"; src/ad/write/scatter.c).

An input read densely (each element by one program) and at an index loaded from memory: the
backward stores the dense part, then `<kernel>_bwd_scatter_<x>` adds the scattered part with
atomic_add.  Each case runs the emitted launcher (Triton's CPU interpreter;
KAD_GRAD_TEST_DEVICE=cuda: a GPU) with the gradient buffer filled with NaN where the launcher may
leave it (what neither kernel writes shows), against PyTorch autograd of the same math in
float64, and the package's CPU path (kad's interpreter) on the cross-entropy kernel.
"""
import os

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import kad  # noqa: E402
import triton_cpu  # noqa: E402
from test_grad_cover import _close as _cover_close, _nan_view  # noqa: E402
from test_grad_fold_partials import _randn, _ref_grads  # noqa: E402

DEVICE = triton_cpu.device_from_env("KAD_GRAD_TEST_DEVICE", "KAD_EMIT_TEST_DEVICE")
GOLDEN = os.path.join(triton_cpu.TESTS, "grad", "scatter_site.py")
golden = triton_cpu.load_module(GOLDEN, "kad_scatter_golden")
CE_SIG = "x_ptr=*{dt},lab_ptr=*i64,loss_ptr=*fp32,stride=i32,V=i32,ignore=i32,BLOCK=16"


@pytest.fixture(scope="module")
def _triton_interpreter():
    with triton_cpu.interpreter(DEVICE):
        yield


def _module(kernel, sig, wrt, out, tmp_path):
    return triton_cpu.grad_module(GOLDEN, kernel, sig, wrt, out, tmp_path, "scatter")


def _ce_ref(R, V, labels, ignore):
    def ref(x):
        loss = torch.nn.functional.cross_entropy(x[:, :V], labels.clamp(0, V - 1), reduction="none")
        return torch.where(labels == ignore, torch.zeros_like(loss), loss)
    return ref


@pytest.mark.parametrize("dt,tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
@pytest.mark.parametrize("stride", [40, 37])
def test_cross_entropy_rows(tmp_path, _triton_interpreter, dt, tol, stride):
    """Rows of 37 logits (stride 40: padding the launcher need not touch; 37: dense), one row's
    label the ignore index: the dense part is stored, the target logit added afterwards."""
    if dt == torch.bfloat16 and DEVICE == "cpu":
        pytest.skip("Triton's CPU interpreter has no bf16 atomic_add (run with KAD_GRAD_TEST_DEVICE=cuda)")
    R, V, ignore = 6, 37, -100
    name = {torch.float32: "fp32", torch.bfloat16: "bf16"}[dt]
    mod, src = _module("ce_rows", CE_SIG.format(dt=name), "x_ptr", "loss_ptr", tmp_path)
    assert "def ce_rows_bwd_scatter_x_ptr(" in src and "d_x_ptr is written in two kernels" in src, src
    x64 = _randn(R, stride)
    labels = torch.tensor([3, 36, ignore, 0, 17, 36], dtype=torch.int64)
    dy = _randn(R, seed=2).float()
    d_x = _nan_view((R, V), (stride, 1), dt)
    x = x64.to(dt).to(DEVICE)
    mod.launch_ce_rows_bwd((R,), x, labels.to(DEVICE), torch.empty(R, device=DEVICE), stride, V, ignore,
                           dy.to(DEVICE), d_x)
    if DEVICE != "cpu":
        torch.cuda.synchronize()
    want = _ref_grads(_ce_ref(R, V, labels, ignore), [x.cpu().double()], dy.double())[0][:, :V]
    _cover_close(d_x, want, "d_x", src, rtol=tol, atol=tol)


def test_rows_overlapping_in_memory(tmp_path, _triton_interpreter):
    """A row stride below the row length: the dense stores' flag is false, so the backward adds
    them with atomics, then the scatter kernel adds the labels' part: still right."""
    R, V, S, ignore = 4, 20, 12, -100
    mod, src = _module("ce_rows", CE_SIG.format(dt="fp32"), "x_ptr", "loss_ptr", tmp_path)
    span = (R - 1) * S + V
    x = _randn(span).float().to(DEVICE)
    labels = torch.tensor([0, 19, 5, 12], dtype=torch.int64)
    dy = _randn(R, seed=2).float()
    d = torch.zeros(span, dtype=torch.float32, device=DEVICE)
    mod.launch_ce_rows_bwd((R,), x, labels.to(DEVICE), torch.empty(R, device=DEVICE), S, V, ignore,
                           dy.to(DEVICE), d)
    xs = x.cpu().double().requires_grad_()
    view = xs.as_strided((R, V), (S, 1))
    (_ce_ref(R, V, labels, ignore)(view) * dy.double()).sum().backward()
    _cover_close(d, xs.grad, "d_x (overlapping rows)", src, rtol=1e-5, atol=1e-5)


def test_indices_colliding_across_programs(tmp_path, _triton_interpreter):
    """Indices not relative to a row, several programs picking one element: every addition lands."""
    n, B = 150, 32
    mod, src = _module("pick_any", f"x_ptr=*fp32,idx_ptr=*i32,y_ptr=*fp32,n=i32,BLOCK={B}", "x_ptr", "y_ptr",
                       tmp_path)
    assert "def pick_any_bwd_scatter_x_ptr(" in src, src
    G = triton.cdiv(n, B)
    idx = torch.tensor([2, 2, 140, 2, 31], dtype=torch.int32)
    x, dy = _randn(n), _randn(n, seed=2)
    d_x = _nan_view((n,))
    mod.launch_pick_any_bwd((G,), x.float().to(DEVICE), idx.to(DEVICE), torch.empty(n, device=DEVICE), n,
                            dy.float().to(DEVICE), d_x)
    if DEVICE != "cpu":
        torch.cuda.synchronize()

    def ref(x):
        w = x[idx.long()].repeat_interleave(B)[:n]
        return x * x * w
    want = _ref_grads(ref, [x.float().double()], dy.float().double())[0]
    _cover_close(d_x, want, "d_x", src, rtol=1e-5, atol=1e-5)


def test_package_cross_entropy_cpu():
    """The decorator on CPU tensors (kad's interpreter runs both kernels) against PyTorch."""
    R, V, ignore = 5, 37, 2
    f = kad.differentiable(inputs=["x_ptr"], outputs=["loss_ptr"])(golden.ce_rows)
    x = _randn(R, V).float().requires_grad_()
    labels = torch.tensor([1, 2, 36, 0, 2], dtype=torch.int64)
    loss = torch.empty(R)
    f[(R,)](x, labels, loss, V, V, ignore, BLOCK=16)
    dy = _randn(R, seed=3).float()
    (loss * dy).sum().backward()
    want = _ref_grads(_ce_ref(R, V, labels, ignore), [x.detach().double()], dy.double())[0]
    assert torch.allclose(x.grad.double(), want, rtol=1e-5, atol=1e-6), (x.grad, want)


def test_scattered_site_in_a_loop(tmp_path, _triton_interpreter):
    """The scattered load inside the row loop, its index anywhere in the rows (other rows' too)."""
    R, N, B = 3, 30, 8
    mod, src = _module("loop_pick", f"x_ptr=*fp32,idx_ptr=*i32,y_ptr=*fp32,stride=i32,N=i32,BLOCK={B}", "x_ptr",
                       "y_ptr", tmp_path)
    assert "def loop_pick_bwd_scatter_x_ptr(" in src, src
    # row r reads x_ptr + r * N + idx[4 r + chunk]: into its own row or a later one, two equal picks
    idx = torch.tensor([3, 40, 40, 89, 0, 7, 59, 31, 29, 0, 2, 29], dtype=torch.int32)
    x, dy = _randn(R, N), _randn(R, seed=2)
    d_x = _nan_view((R, N))
    mod.launch_loop_pick_bwd((R,), x.float().to(DEVICE), idx.to(DEVICE), torch.empty(R, device=DEVICE), N, N,
                             dy.float().to(DEVICE), d_x)
    if DEVICE != "cpu":
        torch.cuda.synchronize()

    def ref(x):
        flat = x.reshape(-1)
        out = []
        for r in range(R):
            acc = x.new_zeros(())
            for c in range(-(-N // B)):
                acc = acc + (x[r, c * B:(c + 1) * B] ** 2).sum() * flat[r * N + int(idx[r * 4 + c])]
            out.append(acc)
        return torch.stack(out)
    want = _ref_grads(ref, [x.float().double()], dy.float().double())[0]
    _cover_close(d_x, want, "d_x", src, rtol=1e-5, atol=1e-5)


def test_two_inputs_each_with_a_scatter_kernel(tmp_path, _triton_interpreter):
    R, N = 4, 13
    mod, src = _module("two_inputs", "x_ptr=*fp32,w_ptr=*fp32,idx_ptr=*i32,y_ptr=*fp32,N=i32,BLOCK=16",
                       "x_ptr,w_ptr", "y_ptr", tmp_path)
    assert "def two_inputs_bwd_scatter_x_ptr(" in src and "def two_inputs_bwd_scatter_w_ptr(" in src, src
    idx = torch.tensor([5, 5, 51, 14], dtype=torch.int32)
    x, w, dy = _randn(R, N), _randn(R, N, seed=1), _randn(R, N, seed=2)
    d_x, d_w = _nan_view((R, N)), _nan_view((R, N))
    mod.launch_two_inputs_bwd((R,), x.float().to(DEVICE), w.float().to(DEVICE), idx.to(DEVICE),
                              torch.empty(R, N, device=DEVICE), N, dy.float().to(DEVICE), d_x, d_w)
    if DEVICE != "cpu":
        torch.cuda.synchronize()

    def ref(x, w):
        s = x.reshape(-1)[idx.long()] + w.reshape(-1)[idx.long()] * 2.0
        return torch.sin(x) * w * s[:, None]
    want = _ref_grads(ref, [x.float().double(), w.float().double()], dy.float().double())
    _cover_close(d_x, want[0], "d_x", src, rtol=1e-5, atol=1e-5)
    _cover_close(d_w, want[1], "d_w", src, rtol=1e-5, atol=1e-5)
