# A wrong jvp rule (tests/python/test_jvp.py checks that finite differences and the dot-product test
# against the (right) vjp rule both catch it).
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
def softplus_jvp_wrong(x, tx):
    return tx * tl.exp(x)  # the derivative of exp, not of log(1 + exp)
