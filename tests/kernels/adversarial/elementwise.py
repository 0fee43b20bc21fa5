"""Elementwise traps: repeated operands, identities, casts, pow, fma, where.

One 1-D block per program over n elements.  Used by
tests/python/test_grad_adversarial.py.
"""
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def cube_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # x*x*x, x*x + x, x - x, x/x + x: every operand repeated.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = x * x * x + (x - x) * 7.0 + x / x + x + x * (x + x)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def fma_same_kernel(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # fma with the same value in two and three operand slots.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(w_ptr + offs, mask=mask)
    y = tl.fma(x, x, x) + tl.fma(x, w, x) + tl.fma(w, x, w) + libdevice.fma(w, w, x)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def pow_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # pow with constant exponents on negative bases (integer exponents are
    # fine there; the db rule's log(a) must not leak a NaN into da).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = libdevice.pow(x, 3.0) + libdevice.pow(x, 2.0) - libdevice.pow(x * x + 1.0, 0.5)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def pow_both_kernel(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # pow(x, w) and pow(x, x) with positive bases: both operands differentiated.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(w_ptr + offs, mask=mask)
    y = libdevice.pow(x, w) + libdevice.pow(x, x) + libdevice.pow(w, 2.0)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def where_same_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # where with the same value on both sides, and with x on one side and a
    # function of x on the other.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    c = x > 0.25
    y = tl.where(c, x, x) * 3.0 + tl.where(c, x * x, x) + tl.where(offs % 3 == 0, x, -x)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def cast_round_trip_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # fp32 -> fp16 -> fp32: the rounding is in the value, the derivative of a
    # cast is 1 (torch does the same).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    h = x.to(tl.float16)
    r = h.to(tl.float32)
    y = r * x + (h * h).to(tl.float32)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def half_io_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # fp16 buffers, math in fp32, stored back as fp16.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.sigmoid(x) * x
    tl.store(y_ptr + offs, y.to(tl.float16), mask=mask)


@triton.jit
def abs_min_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # abs, sqrt(x*x), minimum against a constant, clamp with constant bounds.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.abs(x) * x + tl.sqrt(x * x + 1.0) + tl.minimum(x, 0.5) + tl.clamp(x, -0.3, 0.7)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def fmod_atan2_kernel(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # float remainder and atan2 with both operands differentiated.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(w_ptr + offs, mask=mask)
    y = x % w + libdevice.atan2(x, w)
    tl.store(y_ptr + offs, y, mask=mask)
