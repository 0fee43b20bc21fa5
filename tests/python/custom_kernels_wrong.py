"""A deliberately wrong rule (the softmax without its normalization) for
custom_kernels.lse_wrong: gradient checks must catch it."""
import triton
import triton.language as tl

import kad
from custom_kernels import lse_wrong


@kad.vjp_of(lse_wrong)
@triton.jit
def lse_wrong_vjp(x, dout):
    m = tl.max(x, axis=0)
    return dout * tl.exp(x - m)
