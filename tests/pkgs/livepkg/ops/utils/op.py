"""Fast or exact versions of exp2 and tanh, chosen at import time, as a
library chooses on an environment variable or a device capability."""
import os

import triton
import triton.language as tl

if os.environ.get("LIVEPKG_EXP2", "exact") == "fast":
    @triton.jit
    def exp2(x):
        # the "fast" one: the test never selects it, and its factor is wrong,
        # so a kernel reading the first def of the text would be caught
        return tl.exp(x * 0.5)
else:
    @triton.jit
    def exp2(x):
        return tl.exp(x * 0.6931471805599453)

try:
    from triton.language.extra import libdevice  # noqa: F401

    @triton.jit
    def tanh(x):
        return 2.0 * tl.sigmoid(2.0 * x) - 1.0
except ImportError:  # pragma: no cover - triton always has it
    @triton.jit
    def tanh(x):
        e = tl.exp(-2.0 * x)
        return (1.0 - e) / (1.0 + e)
