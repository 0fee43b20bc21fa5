# A gather or sort of a rank-4 tile cannot be differentiated: its adjoint needs a tile with one
# more axis (kad's tiles have at most 4); a located refusal, not a guess.
# RUN: grad %s:gather4 --sig 'x_ptr=*fp32,i_ptr=*i32,y_ptr=*fp32' --wrt x_ptr --out y_ptr
import triton
import triton.language as tl


@triton.jit
def gather4(x_ptr, i_ptr, y_ptr):
    o = (tl.arange(0, 2)[:, None, None, None] * 8 + tl.arange(0, 2)[None, :, None, None] * 4
         + tl.arange(0, 2)[None, None, :, None] * 2 + tl.arange(0, 2)[None, None, None, :])
    x = tl.load(x_ptr + o)
    y = tl.gather(x, tl.load(i_ptr + o), 3) + tl.sort(x)
    tl.store(y_ptr + o, y)
