# Custom rules for the kernels of tests/jvp/custom_rules.py (kad jvp --rules, kad grad --rules).
import triton
import triton.language as tl

import kad
import custom_rules as k


@kad.vjp_of(k.softplus_naive)
@triton.jit
def softplus_vjp(x, dout):
    return dout * tl.sigmoid(x)


@kad.jvp_of(k.softplus_naive)
@triton.jit
def softplus_jvp(x, tx):
    return tx * tl.sigmoid(x)  # the stable form of exp(x) / (1 + exp(x))


@kad.jvp_of(k.scale_by)
@triton.jit
def scale_by_jvp(x, kk, tx, tk):
    return tx * kk + x * tk


@kad.jvp_of(k.clip01)
@triton.jit
def clip01_jvp(x, tx):
    return tx  # straight-through: forward mode only (reverse mode refuses without a vjp rule)
