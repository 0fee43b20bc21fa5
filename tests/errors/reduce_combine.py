# tl.reduce: combine_fn must compute on its arguments only (no memory,
# control flow), return one scalar per input, be a @triton.jit function; the
# inputs share one shape; the axis is in range.
# RUN: ir %s:branch --sig 'x_ptr=*fp32,BLOCK=8'
# RUN: ir %s:count --sig 'x_ptr=*fp32,BLOCK=8'
# RUN: ir %s:shapes --sig 'x_ptr=*fp32,BLOCK=8'
# RUN: ir %s:not_jit --sig 'x_ptr=*fp32,BLOCK=8'
# RUN: ir %s:bad_axis --sig 'x_ptr=*fp32,BLOCK=8'
import triton
import triton.language as tl


@triton.jit
def add_if(a, b):
    if a > 0:
        r = a + b
    else:
        r = a - b
    return r


@triton.jit
def pair(a, b):
    return a + b, a * b


@triton.jit
def add(a, b):
    return a + b


@triton.jit
def branch(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr, tl.reduce(x, 0, add_if))


@triton.jit
def count(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr, tl.reduce(x, 0, pair))


@triton.jit
def shapes(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = tl.load(x_ptr + tl.arange(0, 2 * BLOCK))
    a, b = tl.reduce((x, y), 0, add)
    tl.store(x_ptr, a + b)


@triton.jit
def not_jit(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr, tl.reduce(x, 0, 3))


@triton.jit
def bad_axis(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr, tl.reduce(x, 1, add))
