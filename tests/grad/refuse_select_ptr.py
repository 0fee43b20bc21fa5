# Pointers selected among several parameters that kad refuses
# (select_ptr.py has those it differentiates):
#   load_in_out: a load through a selection between an input and an
#     output (an output must only be written).
#   store_in_out: a store through a selection between an output and an
#     input (an input must only be read).
#   carried_mixed: a pointer chosen in an `if` between a differentiated
#     input and a buffer that is not: regions do not carry the mask of the
#     lanes that have a gradient.
#   inplace_select: a selection including a buffer updated in place.
# RUN: grad %s:load_in_out --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:store_in_out --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:carried_mixed --ir --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,flag=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:inplace_select --ir --sig 'x_ptr=*fp32,w_ptr=*fp32,BLOCK=16' --wrt x_ptr,w_ptr --out x_ptr
import triton
import triton.language as tl


@triton.jit
def load_in_out(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(tl.where(offs < 8, x_ptr + offs, y_ptr + offs))
    tl.store(y_ptr + offs, v * 2.0)


@triton.jit
def store_in_out(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs)
    tl.store(tl.where(tl.program_id(0) == 0, y_ptr, x_ptr) + offs, v * 2.0)


@triton.jit
def carried_mixed(x_ptr, w_ptr, y_ptr, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if flag > 0:
        p = x_ptr + offs
    else:
        p = w_ptr + offs
    tl.store(y_ptr + offs, tl.load(p) * 2.0)


@triton.jit
def inplace_select(x_ptr, w_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = tl.where(offs < 8, x_ptr, w_ptr) + offs
    v = tl.load(p)
    tl.store(x_ptr + offs, v * 2.0)
