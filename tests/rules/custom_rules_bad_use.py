# Rules that fail where the helper is called (tests/errors/custom_rules_bad.py).
import triton
import triton.language as tl

import kad
from custom_rules_bad import count, load_twice, scale_by, shifted


@kad.vjp_of(load_twice)
@triton.jit
def load_twice_vjp(p, mask, dout):
    return None, None


@kad.vjp_of(scale_by)
@triton.jit
def scale_by_vjp(x, k, dout):
    return dout * k  # forgets the gradient of k


@kad.vjp_of(shifted)
@triton.jit
def shifted_vjp(x, k, dout):
    return dout, dout  # k is an integer tile


kad.nondiff(count)
