# A deliberately wrong rule for tests/grad/custom_rules.py's lse_naive (the
# softmax without its normalization): `kad check` must catch it.
import triton
import triton.language as tl

import kad
from custom_rules import lse_naive


@kad.vjp_of(lse_naive)
@triton.jit
def lse_vjp_wrong(x, dout):
    m = tl.max(x, axis=0)
    return dout * tl.exp(x - m)
