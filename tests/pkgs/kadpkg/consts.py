import triton.language as tl

# Module constants a kernel reads by name must be tl.constexpr objects for Triton (it refuses
# plain ints, floats, bools, strings and None as globals; dtypes are allowed).  A plain int read
# as a module attribute (`U.BLOCK` in ops/kernels.py) is allowed and tested there.
BLOCK_MAX = tl.constexpr(1024)
SCALE: tl.constexpr = tl.constexpr(2)
HALF = tl.constexpr(0.5)
USE_SHIFT = tl.constexpr(True)
ACC_DTYPE = tl.float32
MODE = tl.constexpr("tanh")
NOTHING = tl.constexpr(None)
