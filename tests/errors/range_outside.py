# A kernel specialized for a range (`N=i32[1:32]`) refuses a launch with a value outside it: the
# interpreter (here through `kad check`, at N=45) as the generated launchers do.
# RUN: check %s:k --sig 'x_ptr=*fp32,y_ptr=*fp32,N=i32[1:32],BLOCK=32' --wrt x_ptr --out y_ptr --grid 1 --shape x_ptr=45 --shape y_ptr=45 --arg N=45
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
        tl.store(y_ptr + cols, x * x, mask=cols < N)
