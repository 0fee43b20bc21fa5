# Two stores of one output, one before a loop and one inside it, meeting where the loop's
# first tile covers the first store's: the later write wins.  The backward's reverse sweep
# runs the loop backwards (a tape without slots: nothing carried), each store reading its
# gradient and clearing it (docs/AD.md, "Several stores of one output"; the finite-difference
# check: tests/python/test_grad_check.py).
# RUN: grad %s:before_loop --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr
import triton
import triton.language as tl


@triton.jit
def before_loop(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    tl.store(y_ptr + cols, x)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2.0)
# ROUNDTRIP
