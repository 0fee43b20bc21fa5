"""A helper module that loaded_user.py loads by path (never in sys.modules)."""
import triton
import triton.language as tl

SHIFT = 0.25


@triton.jit
def shifted_sigmoid(x):
    return tl.sigmoid(x + SHIFT)
