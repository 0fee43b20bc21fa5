import triton.language as tl

BLOCK_MAX = 1024
SCALE: tl.constexpr = tl.constexpr(2)
HALF = 0.5
USE_SHIFT = True
ACC_DTYPE = tl.float32
MODE = "tanh"
NOTHING = None
