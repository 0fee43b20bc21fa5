# RUN: jvp %s:through_scratch --sig 'x_ptr=*fp32,tmp_ptr=*fp32,y_ptr=*fp32,BLOCK=16' --wrt x_ptr --out y_ptr
# A value with a tangent goes through a scratch buffer the kernel reads back: the scratch has no
# tangent buffer, so the tangent would be lost.  Refused at the store, naming the buffer.
import triton
import triton.language as tl


@triton.jit
def through_scratch(x_ptr, tmp_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(tmp_ptr + offs, x * 2.0)
    t = tl.load(tmp_ptr + offs)
    tl.store(y_ptr + offs, t)
