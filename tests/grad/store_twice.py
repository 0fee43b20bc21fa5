# Several stores to one output through the same pointer value in one block:
# the later store's lanes overwrite the earlier one's, so an earlier store's
# value gets the output gradient only on the lanes no later store writes,
# `where(mask2, 0, load(d_y, mask1))`, and nothing after a later unmasked
# store (overwrite_all: exp(x) gets no gradient, and is not recomputed).
# The same in the body of a chunked loop whose iterations write disjoint
# addresses (chunked_twice).  Two stores proven never to write one element
# (disjoint_halves: a row's two halves) each read their own part of d_y;
# the launcher guards the stride condition.  A store before a loop and one in it: store_before_loop.py.
# RUN: grad %s:overwrite_all --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:overwrite_masked --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,k=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:three_stores --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:scalar_twice --ir --sig 'x_ptr=*fp32,y_ptr=*fp32' --wrt x_ptr --out y_ptr
# RUN: grad %s:chunked_twice --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:disjoint_halves --sig 'x_ptr=*fp32,y_ptr=*fp32,stride=i32,HALF=8' --wrt x_ptr --out y_ptr
import triton
import triton.language as tl


@triton.jit
def overwrite_all(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.exp(x), mask=offs % 2 == 0)
    tl.store(y_ptr + offs, x * x)


@triton.jit
def overwrite_masked(x_ptr, y_ptr, n, k, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, tl.exp(x), mask=offs < n)
    tl.store(y_ptr + offs, tl.sin(x), mask=offs < k)


@triton.jit
def three_stores(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * 3.0)
    tl.store(y_ptr + offs, tl.exp(x), mask=offs % 2 == 0)
    tl.store(y_ptr + offs, x * x, mask=offs % 3 == 0)


@triton.jit
def scalar_twice(x_ptr, y_ptr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    tl.store(y_ptr + pid, x)
    tl.store(y_ptr + pid, x * x)


@triton.jit
def chunked_twice(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0) * n
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + row + offs, mask=m)
        tl.store(y_ptr + row + offs, x * 2.0, mask=m)
        tl.store(y_ptr + row + offs, tl.exp(x), mask=m & (x > 0.0))


@triton.jit
def disjoint_halves(x_ptr, y_ptr, stride, HALF: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, HALF)
    a = tl.load(x_ptr + row * stride + offs)
    b = tl.load(x_ptr + row * stride + HALF + offs)
    tl.store(y_ptr + row * stride + offs, a * 2.0 - b * b)
    tl.store(y_ptr + row * stride + HALF + offs, b * 3.0 + a * b)
# ROUNDTRIP
