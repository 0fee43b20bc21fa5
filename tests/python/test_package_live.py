"""Helpers kad finds through the live objects, not by name in module text
(tests/pkgs/livepkg): @triton.jit helpers defined inside module-level
if/else (chosen by an environment variable) and try/except, imported from
another module of the package and through a chain of re-exports; a module
and a function of the same name; a plugin file loaded with importlib's
module_from_spec + exec_module and never entered in sys.modules (kernel,
helper and a tl.associative_scan combine_fn in one file); an error inside
such a helper reported at its real file and line.  Each kernel runs through
kad.differentiable on CPU tensors; gradients are compared with PyTorch
autograd and gradcheck'ed in float64 (kad.f64_mode)."""
import importlib.util
import os
import sys

import pytest
import torch

import kad

HERE = os.path.dirname(os.path.abspath(__file__))
PKGS = os.path.join(os.path.dirname(HERE), "pkgs")
sys.path.insert(0, PKGS)
os.environ.setdefault("LIVEPKG_EXP2", "exact")  # the else branch: not the first def in the text

import livepkg.ops.kernels as K  # noqa: E402

N = 100
BLOCK = 128


def _load_plugin(name="loaded"):
    """plugins/NAME.py as a module that sys.modules does not hold."""
    path = os.path.join(PKGS, "livepkg", "plugins", f"{name}.py")
    spec = importlib.util.spec_from_file_location("livepkg_plugin_not_in_sys_modules", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert spec.name not in sys.modules
    return mod


def _grid(meta):
    return ((N + BLOCK - 1) // BLOCK,)


def _apply(kernel, x):
    out = torch.empty_like(x)
    kernel[_grid](x, out, N, BLOCK=BLOCK)
    return out


def _check(kernel, ref, scale=1.0):
    k = kad.differentiable(inputs=["x_ptr"], outputs=["out_ptr"])(kernel)
    torch.manual_seed(0)
    x0 = torch.randn(N) * scale
    x = x0.clone().requires_grad_()
    y = _apply(k, x)
    xr = x0.clone().requires_grad_()
    want = ref(xr)
    torch.testing.assert_close(y, want.detach(), rtol=1e-5, atol=1e-5)
    g = torch.randn(N)
    (y * g).sum().backward()
    (want * g).sum().backward()
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-5, atol=1e-5)
    xd = x0.double().requires_grad_()
    with kad.f64_mode():
        assert torch.autograd.gradcheck(lambda t: _apply(k, t), (xd,))


def test_helper_chosen_in_if_else_and_try_except_imported_across_modules():
    # exp2 from utils.op (its else branch), tanh as utils.tanh (a re-export of a try/except def)
    _check(K.exp2_kernel, lambda x: torch.exp2(x) + torch.tanh(x))


def test_re_export_chain_and_helpers_calling_helpers():
    # act.smooth (if/else) calls exp2 and tanh re-exported by utils; act.bump (try/except)
    _check(K.chain_kernel, lambda x: (torch.tanh(x) + torch.exp2(x * 0.5)) * (x * torch.sigmoid(x)))


def test_module_and_function_of_the_same_name():
    _check(K.softplus_kernel, lambda x: torch.nn.functional.softplus(x) + torch.nn.functional.softplus(-x), scale=3.0)


def test_kernel_chosen_in_a_module_level_if_else():
    _check(K.picked_kernel, lambda x: torch.exp2(x) * torch.nn.functional.softplus(x))


def test_module_loaded_with_module_from_spec_not_in_sys_modules():
    mod = _load_plugin()
    _check(mod.cube_kernel, lambda x: x ** 3 + x)


def test_associative_scan_combine_fn_in_a_module_not_in_sys_modules():
    mod = _load_plugin()
    _check(mod.cumsum_kernel, lambda x: torch.cumsum(x ** 3, 0))


def test_module_attribute_of_a_module_not_in_sys_modules():
    # loaded_user.py loads helpers.py by path too: helpers.shifted_sigmoid, helpers.SHIFT
    mod = _load_plugin("loaded_user")
    _check(mod.sig_kernel, lambda x: torch.sigmoid(x + 0.25) * 0.25)


def test_error_in_a_live_helper_is_reported_at_its_file_and_line():
    path = os.path.join(PKGS, "livepkg", "ops", "bad.py")
    with open(path) as f:
        line = next(i for i, t in enumerate(f, 1) if "LIVEPKG-ERROR-HERE" in t)
    k = kad.differentiable(inputs=["x_ptr"], outputs=["out_ptr"])(K.broken_kernel)
    x = torch.randn(N, requires_grad=True)
    with pytest.raises(Exception) as e:
        _apply(k, x).sum().backward()
    msg = str(e.value)
    assert f"{path}:{line}:" in msg, msg
