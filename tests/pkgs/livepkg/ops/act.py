"""Helpers calling the import-time choices of .utils.op through a re-export
chain (act -> utils -> utils.op), themselves chosen at import time."""
import os

import triton
import triton.language as tl

from livepkg.ops.utils import exp2, tanh

if os.environ.get("LIVEPKG_ACT", "smooth") == "smooth":
    @triton.jit
    def smooth(x):
        return tanh(x) + exp2(x * 0.5)
else:
    @triton.jit
    def smooth(x):
        return x

try:
    import livepkg_not_installed  # noqa: F401
except ImportError:
    @triton.jit
    def bump(x):
        return x * tl.sigmoid(x)
else:  # pragma: no cover
    @triton.jit
    def bump(x):
        return x
