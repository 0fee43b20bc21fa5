# In-place updates kad refuses: a load from a buffer named both in --wrt
# and --out must provably read the value before the launch (a later store
# in the same block through the same pointer value, same mask or none).
#   shifted: reads x[i + 1], which another lane or program writes.
#   after_write: reads an element the same lane wrote before.
#   mask_differs: reads every lane, writes only some of them.
#   output_only: loads from an output not named as an input.
# RUN: grad %s:shifted --ir --sig 'x_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out x_ptr
# RUN: grad %s:after_write --ir --sig 'x_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out x_ptr
# RUN: grad %s:mask_differs --ir --sig 'x_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out x_ptr
# RUN: grad %s:output_only --ir --sig 'x_ptr=*fp32,w_ptr=*fp32,BLOCK=16' --wrt w_ptr --out x_ptr
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
