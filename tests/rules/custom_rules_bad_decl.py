# Malformed rule declarations for tests/errors/custom_rules_bad.py.
import triton
import triton.language as tl

import kad
import custom_rules_bad


@kad.vjp_of(custom_rules_bad.twice)
@triton.jit
def twice_vjp(x):  # missing the adjoint parameter
    return x


@kad.vjp_of(custom_rules_bad.no_such_helper)
@triton.jit
def unknown_vjp(x, dout):
    return dout


LIMIT = 4


@kad.vjp_of(LIMIT)
@triton.jit
def const_vjp(x, dout):
    return dout


kad.nondiff(custom_rules_bad.missing_too)
