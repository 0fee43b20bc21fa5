# RUN: ast %s
# Module constants: the last binding wins; a rebinding kad cannot read (op=,
# host-only syntax, unpacking of a non-tuple) drops the name, so that a
# kernel using it gets "not defined" instead of a stale value.
import triton
import triton.language as tl

BLOCK = 128
LOG2E: tl.constexpr = 1.4426950408889634
GELU_C = tl.constexpr(0.7978845608028654)
A, B = 1, 2.5
C = D = "relu"
E = 1
E = 2
F = 3
F += 1
G = 4
G = {"dict": "host only"}
H = 5
H, I = some_call()
J: int
CONFIGS = [triton.Config({"BLOCK": b}) for b in (64, 128)]
BIG = 0xFFFFFFFFFFFFFFFF
NAME = f"kernel_{BLOCK}"
DEVICE = triton.runtime.driver.active.get_active_torch_device()
print("host code", BLOCK)
BLOCK2 = BLOCK * 2
S1 = 1; S2 = 2; S1 = 3


@triton.jit
def k(x):
    return x * BLOCK
