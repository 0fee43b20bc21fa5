# In-place updates kad refuses: a load from a buffer named both in --wrt
# and --out must provably read the value before the launch (a later store
# in the same block through the same pointer value, same mask or none).
#   shifted: reads x[i + 1], which another lane or program writes.
#   after_write: reads an element the same lane wrote before.
#   mask_differs: reads every lane, writes only some of them.
#   output_only: loads from an output not named as an input.
#   if_store_one_branch: the load before an `if`, the store only in its then branch.
#   if_store_other_branch: the load in the then branch, the store in the else branch.
#   if_mask_differs: the load in an `if`, the store after it under another mask.
#   if_store_before: the load in an `if`, a store into the buffer before the `if`.
#   if_store_in_earlier_if: a store in an earlier `if` of the load's block.
#   if_in_loop: the load in an `if` in a loop, the store after the loop.
# RUN: grad %s:shifted --ir --sig 'x_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out x_ptr
# RUN: grad %s:after_write --ir --sig 'x_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out x_ptr
# RUN: grad %s:mask_differs --ir --sig 'x_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out x_ptr
# RUN: grad %s:output_only --ir --sig 'x_ptr=*fp32,w_ptr=*fp32,BLOCK=16' --wrt w_ptr --out x_ptr
# RUN: grad %s:if_store_one_branch --ir --sig 'x_ptr=*fp32,n=i32,c=fp32,BLOCK=16' --wrt x_ptr --out x_ptr
# RUN: grad %s:if_store_other_branch --ir --sig 'x_ptr=*fp32,n=i32,c=fp32,BLOCK=16' --wrt x_ptr --out x_ptr
# RUN: grad %s:if_mask_differs --ir --sig 'x_ptr=*fp32,n=i32,c=fp32,BLOCK=16' --wrt x_ptr --out x_ptr
# RUN: grad %s:if_store_before --ir --sig 'x_ptr=*fp32,n=i32,c=fp32,BLOCK=16' --wrt x_ptr --out x_ptr
# RUN: grad %s:if_store_in_earlier_if --ir --sig 'x_ptr=*fp32,n=i32,c=fp32,BLOCK=16' --wrt x_ptr --out x_ptr
# RUN: grad %s:if_in_loop --ir --sig 'x_ptr=*fp32,n=i32,c=fp32,BLOCK=16' --wrt x_ptr --out x_ptr
import triton
import triton.language as tl


@triton.jit
def shifted(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs + 1, mask=offs + 1 < n)
    tl.store(x_ptr + offs, x, mask=offs + 1 < n)


@triton.jit
def after_write(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.zeros((BLOCK,), tl.float32) + 1.0)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, x * 3.0)


@triton.jit
def mask_differs(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, x * 3.0, mask=offs < n)


@triton.jit
def output_only(x_ptr, w_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, x * tl.load(w_ptr + offs))


@triton.jit
def if_store_one_branch(x_ptr, n, c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if c > 0:
        tl.store(x_ptr + offs, x * 2.0, mask=offs < n)


@triton.jit
def if_store_other_branch(x_ptr, n, c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    if c > 0:
        x = tl.load(x_ptr + offs, mask=m)
        y = x * 2.0
    else:
        tl.store(x_ptr + offs, tl.zeros((BLOCK,), tl.float32), mask=m)
        y = tl.zeros((BLOCK,), tl.float32)
    tl.store(x_ptr + offs + n, y, mask=m)


@triton.jit
def if_mask_differs(x_ptr, n, c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    y = tl.zeros((BLOCK,), tl.float32)
    if c > 0:
        y = tl.load(x_ptr + offs, mask=offs < n) * c
    tl.store(x_ptr + offs, y, mask=offs < n - 1)


@triton.jit
def if_store_before(x_ptr, n, c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.zeros((BLOCK,), tl.float32) + 1.0, mask=m)
    y = tl.zeros((BLOCK,), tl.float32)
    if c > 0:
        y = tl.load(x_ptr + offs, mask=m) * c
    tl.store(x_ptr + offs, y, mask=m)


@triton.jit
def if_store_in_earlier_if(x_ptr, n, c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    if c > 1:
        tl.store(x_ptr + offs, tl.zeros((BLOCK,), tl.float32) + 1.0, mask=m)
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(x_ptr + offs, x * c, mask=m)


@triton.jit
def if_in_loop(x_ptr, n, c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    y = tl.zeros((BLOCK,), tl.float32)
    for i in range(2):
        if c > i:
            y += tl.load(x_ptr + offs, mask=m)
    tl.store(x_ptr + offs, y, mask=m)

