"""Kernels of a package (tests/pkgs/kadpkg) through the Python package:
relative and absolute imports, module attributes, constants, aliases of
tl/libdevice functions, an alias chosen by host code at import time (read
from the live globals), re-exports, kernels made by triton.jit(f) and by
heuristics/autotune calls, and a wrapper class unknown to kad exposing .fn.
Forward against PyTorch of the same math, backward against PyTorch
autograd.  KAD_TEST_DEVICE=cuda runs them with CUDA tensors (Triton)."""
import os
import sys

import pytest
import torch

import kad

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "pkgs"))

import kadpkg.ops.kernels as K  # noqa: E402
import kadpkg.ops.utils as U  # noqa: E402

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")
TOL = dict(rtol=1e-5, atol=1e-5) if DEVICE == "cpu" else dict(rtol=1e-4, atol=1e-4)
N = 200


def calc(x, y):
    return x * y * 2 + torch.exp(y)


def safe_exp(x):
    return torch.exp(x - 1.0) * 0.5


def silu(x):
    return x * torch.sigmoid(x)


def _run(kernel, inputs, ref, kwargs=None, block=64):
    """Forward and backward of kernel(x..., out, n) vs ref(x...)."""
    torch.manual_seed(0)
    xs = [torch.randn(N, device=DEVICE, dtype=torch.float32, requires_grad=True) * 0.5 for _ in inputs]
    xs = [x.detach().requires_grad_() for x in xs]
    out = torch.empty(N, device=DEVICE)
    k = kad.differentiable(inputs=list(inputs), outputs=["out_ptr"])(kernel)
    grid = lambda meta: (triton_cdiv(N, meta.get("BLOCK", block)),)  # noqa: E731
    k[grid](*xs, out, N, **(kwargs if kwargs is not None else {"BLOCK": block}))
    rs = [x.detach().clone().requires_grad_() for x in xs]
    want = ref(*rs)
    torch.testing.assert_close(out, want.detach(), **TOL)
    g = torch.randn(N, device=DEVICE)
    (out * g).sum().backward()
    (want * g).sum().backward()
    for x, r in zip(xs, rs):
        torch.testing.assert_close(x.grad, r.grad, **TOL)


def triton_cdiv(a, b):
    return (a + b - 1) // b


def test_relative_imports_constants_and_aliases():
    _run(K.rel_kernel, ["x_ptr", "y_ptr"], lambda x, y: calc(x, y) + torch.exp(x) * 2 + 1.0 - 0.25)


def test_module_attributes_reexport_and_host_chosen_alias():
    _run(K.mod_kernel, ["x_ptr"],
         lambda x: calc(x, x) + safe_exp(x) + silu(x) + safe_exp(x) + torch.tanh(x))


@pytest.mark.skipif(DEVICE != "cpu", reason="Triton fixes a kernel's global values at its first compile "
                    "(JITFunction.used_global_vals): an earlier test compiled mod_kernel, so Triton's forward would "
                    "keep the old host_tanh; kad's interpreter reads the live value at each launch")
def test_host_value_is_read_from_the_live_globals(monkeypatch):
    # the kernel's module binds host_tanh; what it is at launch time counts
    monkeypatch.setattr(K, "host_tanh", U.exp)
    _run(K.mod_kernel, ["x_ptr"],
         lambda x: calc(x, x) + safe_exp(x) + silu(x) + safe_exp(x) + torch.exp(x))


@pytest.mark.parametrize("name", ["call_kernel", "heur_kernel", "tuned_kernel"])
def test_kernels_made_by_calls(name):
    kw = {} if name != "call_kernel" else None
    _run(getattr(K, name), ["x_ptr"], lambda x: silu(x) * 3.0, kwargs=kw)


def test_unknown_wrapper_with_fn_is_transparent():
    assert type(K.wrapped_kernel).__name__ == "Entry"
    _run(K.wrapped_kernel, ["x_ptr"], lambda x: silu(x) + safe_exp(x))


def test_sources_are_named_modules():
    from kad._sources import host_values, load_sources
    from kad import _capi
    ctx = _capi.Context()
    mods = {s.module for s in load_sources(ctx, K.mod_kernel)}
    assert {"kadpkg.ops.kernels", "kadpkg.ops.utils", "kadpkg.consts", "kadpkg.ops", "kadpkg"} <= mods
    hv = {(m, n): v for m, n, v in host_values(K.mod_kernel, mods)}
    assert hv[("kadpkg.ops.kernels", "host_tanh")] == "triton.language.extra.libdevice.tanh"
