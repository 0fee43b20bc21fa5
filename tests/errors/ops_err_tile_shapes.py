# tl.join / split / interleave / flip / gather / sort / topk / histogram misused: located errors,
# checked as Triton 3.6's core.py, standard.py and semantic.py check them (flip without dim fails
# in Triton 3.6 too; sort only along the last axis, dim=-1 included; topk's k at most the axis).
# RUN: ir %s:join_dtypes --sig 'x_ptr=*fp32,y_ptr=*fp16'
# RUN: ir %s:join_rank --sig 'x_ptr=*fp32'
# RUN: ir %s:split_odd --sig 'x_ptr=*fp32'
# RUN: ir %s:split_scalar --sig 'x_ptr=*fp32'
# RUN: ir %s:flip_nodim --sig 'x_ptr=*fp32'
# RUN: ir %s:flip_axis --sig 'x_ptr=*fp32'
# RUN: ir %s:gather_float_index --sig 'x_ptr=*fp32'
# RUN: ir %s:gather_rank --sig 'x_ptr=*fp32,i_ptr=*i32'
# RUN: ir %s:gather_other_axis --sig 'x_ptr=*fp32,i_ptr=*i32'
# RUN: ir %s:sort_dim --sig 'x_ptr=*fp32'
# RUN: ir %s:topk_k --sig 'x_ptr=*fp32'
# RUN: ir %s:hist_float --sig 'x_ptr=*fp32'
# RUN: ir %s:hist_2d --sig 'x_ptr=*i32'
# RUN: ir %s:hist_mask --sig 'x_ptr=*i32'
# RUN: ir %s:join_ptrs --sig 'x_ptr=*fp32'
import triton
import triton.language as tl


@triton.jit
def join_dtypes(x_ptr, y_ptr):
    o = tl.arange(0, 8)
    tl.join(tl.load(x_ptr + o), tl.load(y_ptr + o))


@triton.jit
def join_rank(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 2)[:, None, None, None] + tl.arange(0, 2)[None, None, None, :])
    tl.join(x, x)


@triton.jit
def split_odd(x_ptr):
    a, b = tl.split(tl.load(x_ptr + tl.arange(0, 4)[None, :] + tl.arange(0, 4)[:, None]))


@triton.jit
def split_scalar(x_ptr):
    a, b = tl.split(tl.load(x_ptr))


@triton.jit
def flip_nodim(x_ptr):
    tl.store(x_ptr + tl.arange(0, 8), tl.flip(tl.load(x_ptr + tl.arange(0, 8))))


@triton.jit
def flip_axis(x_ptr):
    tl.store(x_ptr + tl.arange(0, 8), tl.flip(tl.load(x_ptr + tl.arange(0, 8)), 1))


@triton.jit
def gather_float_index(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    tl.gather(x, x, 0)


@triton.jit
def gather_rank(x_ptr, i_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    i = tl.load(i_ptr + tl.arange(0, 8))
    tl.gather(x, i[None, :], 0)


@triton.jit
def gather_other_axis(x_ptr, i_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :])
    i = tl.load(i_ptr + tl.arange(0, 2)[:, None] * 8 + tl.arange(0, 8)[None, :])
    tl.gather(x, i, 1)


@triton.jit
def sort_dim(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :])
    tl.sort(x, dim=-1)


@triton.jit
def topk_k(x_ptr):
    tl.topk(tl.load(x_ptr + tl.arange(0, 8)), 16)


@triton.jit
def hist_float(x_ptr):
    tl.histogram(tl.load(x_ptr + tl.arange(0, 8)), 8)


@triton.jit
def hist_2d(x_ptr):
    tl.histogram(tl.load(x_ptr + tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :]), 8)


@triton.jit
def hist_mask(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    x.histogram(8, mask=x)


@triton.jit
def join_ptrs(x_ptr):
    p = x_ptr + tl.arange(0, 8)
    tl.join(p, p)
