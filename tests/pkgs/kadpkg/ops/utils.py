import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

from ..consts import HALF, SCALE

# aliases of Triton functions, plain assignments
exp = tl.exp
fast_exp = libdevice.exp

# chosen by host code at import time: kad cannot run this, the host sets it
if torch.version.hip:
    host_tanh = libdevice.tanh
else:
    host_tanh = getattr(libdevice, "tanh")

BLOCK = 64


@triton.jit
def safe_exp(x):
    return exp(x - 1.0) * HALF


@triton.jit
def calc(x, y):
    return x * y * SCALE + fast_exp(y)


def _silu(x):
    return x * tl.sigmoid(x)


silu = triton.jit(_silu)


class Entry:
    """A caching wrapper kad does not know: it exposes the kernel as .fn."""

    def __init__(self, fn):
        self.fn = fn
        self.arg_names = getattr(fn, "arg_names", None)

    def __getitem__(self, grid):
        return self.fn[grid]


def libentry():
    return Entry
