"""Pointers selected among parameters (tests/grad/select_ptr.py, docs/AD.md): gradients against
PyTorch autograd of the same math written plainly.

Two paths, each compared with torch (float64 references on the same inputs):
  - the package: @kad.differentiable on the kernel, a forward launch, loss.backward() (kad's C
    interpreter on CPU tensors; Triton with KAD_TEST_DEVICE=cuda);
  - the emitted backward module: `kad grad` prints it, the original forward and the backward run
    on Triton's CPU interpreter (KAD_GRAD_TEST_DEVICE=cuda: compiled by Triton on the GPU).
Objective: L = sum over outputs of <y, dy>, dy random.  Where a candidate buffer is not
differentiated (inputs=["x_ptr"] only), a gradient written through its lanes into x's gradient
would fail the comparison.
"""
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import kad  # noqa: E402
import triton_cpu  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FILE = "tests/grad/select_ptr.py"
PKG_DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
TRITON_DEVICE = triton_cpu.device_from_env("KAD_GRAD_TEST_DEVICE", "KAD_EMIT_TEST_DEVICE")


def _concat_k(v):
    a = torch.cat([v["a1_ptr"].reshape(20, 20), v["a2_ptr"].reshape(20, 9)], 1)
    b = torch.cat([v["b1_ptr"].reshape(20, 18), v["b2_ptr"].reshape(9, 18)], 0)
    return {"c_ptr": (a @ b).reshape(-1)}


def _scalar_select(v):
    x, w = v["x_ptr"], v["w_ptr"]
    src = torch.cat([x[:16], w[:16], x[16:], w[16:]])
    return {"y_ptr": src * src + torch.sin(src)}


def _tile_select(v):
    offs = torch.arange(32)
    return {"y_ptr": torch.exp(torch.where(offs < v["split"], v["x_ptr"], v["w_ptr"])) * 2.0}


def _half_diff_swapped(v):
    offs = torch.arange(32)
    x, w = v["x_ptr"], v["w_ptr"]
    return {"y_ptr": torch.where(offs % 3 == 0, w, x) * x}


def _if_select(v):
    x = v["x_ptr"]
    return {"y_ptr": (x if v["flag"] > 0 else v["w_ptr"]) * 3.0 + x}


def _loop_carried(v):
    acc = v["x_ptr"] * 1.0 + v["w_ptr"] * 2.0 + v["w_ptr"] * 3.0
    return {"y_ptr": acc * acc}


def _store_select(v):
    x = v["x_ptr"]
    return {"y1_ptr": torch.exp(x[:16]), "y2_ptr": torch.exp(x[16:32])}


_X = dict(x_ptr=32, w_ptr=32, y_ptr=32)
# (kernel, grid, {pointer: elements}, {scalar: value}, {constexpr: value}, inputs, outputs, ref)
CASES = {
    "concat_k": ("concat_k", (2, 2), dict(a1_ptr=400, a2_ptr=180, b1_ptr=360, b2_ptr=162, c_ptr=360),
                 dict(M=20, N=18, K1=20, K2=9), dict(BM=16, BN=16, BK=16),
                 ["a1_ptr", "a2_ptr", "b1_ptr", "b2_ptr"], ["c_ptr"], _concat_k),
    "scalar_select": ("scalar_select", (4,), dict(x_ptr=32, w_ptr=32, y_ptr=64), {}, dict(BLOCK=16),
                      ["x_ptr", "w_ptr"], ["y_ptr"], _scalar_select),
    "scalar_select-x_only": ("scalar_select", (4,), dict(x_ptr=32, w_ptr=32, y_ptr=64), {}, dict(BLOCK=16),
                             ["x_ptr"], ["y_ptr"], _scalar_select),
    "tile_select": ("tile_select", (2,), _X, dict(split=20), dict(BLOCK=16), ["x_ptr", "w_ptr"], ["y_ptr"],
                    _tile_select),
    "tile_select-x_only": ("tile_select", (2,), _X, dict(split=20), dict(BLOCK=16), ["x_ptr"], ["y_ptr"],
                           _tile_select),
    "half_diff_swapped": ("half_diff_swapped", (2,), _X, dict(n=32), dict(BLOCK=16), ["x_ptr"], ["y_ptr"],
                          _half_diff_swapped),
    "if_select-taken": ("if_select", (2,), _X, dict(flag=1), dict(BLOCK=16), ["x_ptr", "w_ptr"], ["y_ptr"],
                        _if_select),
    "if_select-not_taken": ("if_select", (2,), _X, dict(flag=0), dict(BLOCK=16), ["x_ptr", "w_ptr"],
                            ["y_ptr"], _if_select),
    "loop_carried": ("loop_carried", (2,), _X, {}, dict(BLOCK=16), ["x_ptr", "w_ptr"], ["y_ptr"],
                     _loop_carried),
    "store_select": ("store_select", (3,), dict(x_ptr=48, y1_ptr=16, y2_ptr=16, s_ptr=16), {}, dict(BLOCK=16),
                     ["x_ptr"], ["y1_ptr", "y2_ptr"], _store_select),
}
PARAMS = {  # the kernels' runtime parameters, in order
    "concat_k": ["a1_ptr", "a2_ptr", "b1_ptr", "b2_ptr", "c_ptr", "M", "N", "K1", "K2"],
    "scalar_select": ["x_ptr", "w_ptr", "y_ptr"],
    "tile_select": ["x_ptr", "w_ptr", "y_ptr", "split"],
    "half_diff_swapped": ["x_ptr", "w_ptr", "y_ptr", "n"],
    "if_select": ["x_ptr", "w_ptr", "y_ptr", "flag"],
    "loop_carried": ["x_ptr", "w_ptr", "y_ptr"],
    "store_select": ["x_ptr", "y1_ptr", "y2_ptr", "s_ptr"],
}


def _data(cid):
    kernel, grid, shapes, scalars, consts, ins, outs, ref = CASES[cid]
    g = torch.Generator().manual_seed(sorted(CASES).index(cid) + 1)
    bufs = {p: torch.randn(n, generator=g, dtype=torch.float64).float() for p, n in shapes.items()}
    dys = {o: torch.randn(shapes[o], generator=g, dtype=torch.float64).float() for o in outs}
    return bufs, dys


def _reference(cid, bufs, dys):
    """Forward outputs and gradients of L = sum <y, dy> from torch, in float64."""
    kernel, grid, shapes, scalars, consts, ins, outs, ref = CASES[cid]
    v = {p: t.double().requires_grad_(p in ins) for p, t in bufs.items()}
    v.update(scalars)
    ys = ref(v)
    loss = sum((ys[o] * dys[o].double()).sum() for o in outs)
    grads = torch.autograd.grad(loss, [v[p] for p in ins], allow_unused=True)
    grads = [torch.zeros_like(v[p]) if g is None else g for p, g in zip(ins, grads)]  # unread: zero
    return {o: y.detach() for o, y in ys.items()}, dict(zip(ins, grads))


# Cases with an fp32 tl.dot at default precision: TF32 on a GPU keeps 10 mantissa bits of each
# operand, so there they get the TF32 tolerance of test_grad_triton.py (rtol, atol 4e-3).
TF32_CASES = {"concat_k"}


def _close(got, want, what, tf32=False):
    got = got.double().cpu()
    r, a = (4e-3, 4e-3) if tf32 else (1e-4, 1e-5)
    tol = r * want.abs() + a * max(float(want.abs().max()), 1e-30)
    bad = (got - want).abs() > tol
    assert not bad.any(), f"{what}: max |diff| {float((got - want).abs().max()):.3g}"


@pytest.fixture(scope="module")
def select_module():
    """tests/grad/select_ptr.py as a module (the package reads its source by module)."""
    mod = triton_cpu.load_module(os.path.join(REPO, FILE), "kad_test_select_ptr")
    sys.modules["kad_test_select_ptr"] = mod
    yield mod
    sys.modules.pop("kad_test_select_ptr", None)


@pytest.mark.parametrize("cid", sorted(CASES))
def test_package_gradients_match_torch(cid, select_module):
    kernel, grid, shapes, scalars, consts, ins, outs, ref = CASES[cid]
    k = kad.differentiable(inputs=ins, outputs=outs)(getattr(select_module, kernel))
    bufs, dys = _data(cid)
    t = {p: b.to(PKG_DEVICE).requires_grad_(p in ins) for p, b in bufs.items()}
    run = {p: (t[p] if p in ins else t[p].detach().clone()) for p in t}
    k[grid](*[run[p] if p in run else scalars[p] for p in PARAMS[kernel]], **consts)
    want_y, want_g = _reference(cid, bufs, dys)
    loss = sum((run[o] * dys[o].to(PKG_DEVICE)).sum() for o in outs)
    loss.backward()
    tf32 = PKG_DEVICE != "cpu" and cid in TF32_CASES
    for o in outs:
        _close(run[o].detach(), want_y[o], f"{cid}: forward {o}", tf32)
    for p in ins:
        _close(t[p].grad, want_g[p], f"{cid}: d{p}", tf32)


@pytest.mark.parametrize("cid", sorted(CASES))
def test_emitted_backward_matches_torch(cid, tmp_path):
    kernel, grid, shapes, scalars, consts, ins, outs, ref = CASES[cid]
    sig = ",".join([f"{p}=*fp32" if p in shapes else f"{p}=i32" for p in PARAMS[kernel]] +
                   [f"{c}={v}" for c, v in consts.items()])
    r = triton_cpu.run_kad(["grad", f"{FILE}:{kernel}", "--sig", sig, "--wrt", ",".join(ins),
                            "--out", ",".join(outs)])
    assert r.returncode == 0, r.stderr
    path = tmp_path / f"{kernel}_bwd.py"
    path.write_text(r.stdout)
    bufs, dys = _data(cid)
    want_y, want_g = _reference(cid, bufs, dys)
    dev = TRITON_DEVICE
    with triton_cpu.interpreter(dev):
        fwd = triton_cpu.load_module(os.path.join(REPO, FILE), f"kad_test_select_fwd_{cid}")
        bwd = triton_cpu.load_module(str(path), f"kad_test_select_bwd_{cid}")
        t = {p: b.to(dev) for p, b in bufs.items()}
        args = [t[p] if p in t else scalars[p] for p in PARAMS[kernel]]
        getattr(fwd, kernel)[grid](*args, **consts)
        tf32 = dev != "cpu" and cid in TF32_CASES
        for o in outs:
            _close(t[o], want_y[o], f"{cid}: forward {o}", tf32)
        d_in = {p: torch.zeros_like(t[p]) for p in ins}
        getattr(bwd, f"launch_{kernel}_bwd")(grid, *args, *[dys[o].to(dev) for o in outs],
                                            *[d_in[p] for p in ins], **consts)
    for p in ins:
        _close(d_in[p], want_g[p], f"{cid}: d{p}", tf32)
