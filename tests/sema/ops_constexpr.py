# constexpr arithmetic folds with Python semantics (floor division and
# modulo round toward -inf, / is true division, ** on ints), builtins on
# constants, string switches, cdiv and next_power_of_2.
# RUN: ir %s:const_kernel --sig "x_ptr=*fp32,N=100,ACT='gelu',EPS=1e-06"
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def const_kernel(x_ptr, N: tl.constexpr, ACT: tl.constexpr, EPS: tl.constexpr):
    BLOCK: tl.constexpr = triton.next_power_of_2(N)
    NB: tl.constexpr = tl.cdiv(N, 32)
    a = -7 // 2
    b = -7 % 2
    c = 7 / 2
    d = 2 ** 10 + (1 << 4) - (-9 >> 1)
    e = -7.5 % 2
    f = min(3, N, 5) + max((1, 9, 4)) + abs(-2) + int(3.9) + len((1, 2, 3))
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < N)
    if ACT == "gelu":
        x = x * 0.5
    elif ACT in ("relu", "leaky"):
        x = tl.maximum(x, 0.0)
    if ACT != "none" and NB == 4:
        x = x + EPS
    tl.store(x_ptr + offs, x + a + b + c + d + e + f, mask=offs < N)
