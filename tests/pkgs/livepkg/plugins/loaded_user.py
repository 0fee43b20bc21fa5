"""Loaded with module_from_spec outside sys.modules, and itself loading
helpers.py the same way: the kernel calls `helpers.shifted_sigmoid(x)`
through a module object that sys.modules does not hold."""
import importlib.util
import os

import triton
import triton.language as tl


def _load(name):
    spec = importlib.util.spec_from_file_location(f"livepkg_plugin_{name}",
                                                  os.path.join(os.path.dirname(__file__), f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


helpers = _load("helpers")


@triton.jit
def sig_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, helpers.shifted_sigmoid(x) * helpers.SHIFT, mask=mask)
