"""A module and a function of the same name: `from livepkg.ops.softplus import softplus`."""
import triton
import triton.language as tl


@triton.jit
def softplus(x):
    return tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(tl.minimum(x, 20.0))))
