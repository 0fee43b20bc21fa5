# RUN: ast %s
# A def is a kernel when a decorator resolves to triton.jit through the
# imports; everything else (host functions, classes, other jits) is skipped.
import functools
import triton
import triton as tt
import triton.language as tl
from triton import jit
from numba import jit as numba_jit
from .triton_compat import triton as compat_triton


@triton.jit
def plain(x):
    return x


@tt.jit
def aliased(x):
    return x


@jit
def imported(x):
    return x


@triton.jit(do_not_specialize=["n"])
def called(x, n):
    return x


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def stacked(x, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    return x


@compat_triton.jit
def reexported(x):
    # triton re-exported by a module kad cannot see
    return x


@numba_jit
def not_a_kernel(x):
    return {k: v for k, v in x.items()}


@functools.lru_cache(maxsize=None)
def host_helper(x, *args, **kwargs):
    return lambda y: y


def host(x):
    plain[(1,)](x)


class Wrapper:
    @triton.jit
    def method(x):
        return x


@triton.jit
def plain(x, y):
    # a redefinition replaces the earlier kernel, as in Python
    return y
