# tl.associative_scan: combine_fn must compute on its arguments only (no
# memory, control flow); it returns one scalar per input; the inputs have one
# shape; combine_fn is a @triton.jit function.
# RUN: ir %s:branch --sig 'x_ptr=*fp32,BLOCK=8'
# RUN: ir %s:count --sig 'x_ptr=*fp32,BLOCK=8'
# RUN: ir %s:shapes --sig 'x_ptr=*fp32,BLOCK=8'
# RUN: ir %s:not_jit --sig 'x_ptr=*fp32,BLOCK=8'
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
    y = tl.associative_scan(x, 0, add_if)
    tl.store(x_ptr + tl.arange(0, BLOCK), y)


@triton.jit
def count(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = tl.associative_scan(x, 0, pair)
    tl.store(x_ptr + tl.arange(0, BLOCK), y)


@triton.jit
def shapes(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    z = tl.zeros([BLOCK // 2], dtype=tl.float32)
    y, w = tl.associative_scan((x, z), 0, pair)
    tl.store(x_ptr + tl.arange(0, BLOCK), y)


@triton.jit
def not_jit(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    y = tl.associative_scan(x, 0, BLOCK, reverse=True)
    tl.store(x_ptr + tl.arange(0, BLOCK), y)
