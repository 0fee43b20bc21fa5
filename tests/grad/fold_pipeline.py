# The fold loop of a folded backward is pipelined (`hints {num_stages = 3}`) only when no load
# reads through a parameter the loop stores or adds into: `scale_rows` (loads x, w, d_y; stores
# d_x and w's partials) is; `scale_rows_inplace` (x updated in place: the loop loads d_x, the
# gradient of the value after, and stores d_x, the gradient of the value before) is not; nor is
# `scale_chunks`, whose fold loop holds a loop.
# RUN: grad %s:scale_rows --ir --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,BLOCK=8' --wrt x_ptr,w_ptr --out y_ptr
# RUN: grad %s:scale_rows_inplace --ir --sig 'x_ptr=*fp32,w_ptr=*fp32,BLOCK=8' --wrt x_ptr,w_ptr --out x_ptr
# RUN: grad %s:scale_chunks --ir --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8' --wrt x_ptr,w_ptr --out y_ptr
import triton
import triton.language as tl


@triton.jit
def scale_rows(x_ptr, w_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    w = tl.load(w_ptr + tl.arange(0, BLOCK))
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * w)


@triton.jit
def scale_rows_inplace(x_ptr, w_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    w = tl.load(w_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * w)


@triton.jit
def scale_chunks(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    w = tl.load(w_ptr + tl.arange(0, BLOCK))
    for start in range(0, n, BLOCK):
        offs = tl.program_id(0) * n + start + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs) * w)
# ROUNDTRIP
