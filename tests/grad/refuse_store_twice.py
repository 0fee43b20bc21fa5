# Several stores to one output that kad refuses: a store before a loop and one inside it (the
# adjoint loop runs forward, so the loop's stores cannot read and clear their gradient in
# reverse order).  Stores outside loops are accepted whatever their addresses: the later store
# wins where they meet (tests/python/test_writers.py; docs/AD.md, "Several stores of one output").
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
