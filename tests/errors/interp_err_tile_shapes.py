# On kad's interpreter a tl.gather index outside the source's axis and a tl.histogram value
# outside its bins stop the run with the lane (Triton's results are undefined there).
# RUN: check %s:pick --sig 'x_ptr=*fp32,i_ptr=*i32,y_ptr=*fp32' --wrt x_ptr --out y_ptr --grid 1 --shape x_ptr=8 --shape i_ptr=8 --shape y_ptr=8 --range i_ptr=8:12
# RUN: check %s:count --sig 'x_ptr=*fp32,i_ptr=*i32,y_ptr=*fp32' --wrt x_ptr --out y_ptr --grid 1 --shape x_ptr=8 --shape i_ptr=8 --shape y_ptr=8 --range i_ptr=-9:-5
import triton
import triton.language as tl


@triton.jit
def pick(x_ptr, i_ptr, y_ptr):
    o = tl.arange(0, 8)
    tl.store(y_ptr + o, tl.gather(tl.load(x_ptr + o), tl.load(i_ptr + o), 0))


@triton.jit
def count(x_ptr, i_ptr, y_ptr):
    o = tl.arange(0, 8)
    h = tl.histogram(tl.load(i_ptr + o), 8)
    tl.store(y_ptr + o, tl.load(x_ptr + o) * h)
