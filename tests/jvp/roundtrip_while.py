# RUN: jvp %s:newton_if --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr --ir
# ROUNDTRIP
# The jvp IR of a while loop and a runtime if (tangents carried and yielded next to their
# primals) reads back through the IR parser unchanged.
import triton
import triton.language as tl


@triton.jit
def newton_if(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    y = a
    it = 0
    while it < 20:
        y = 0.5 * (y + a / y)
        it += 1
    if n > 8:
        y = y * y * a
    tl.store(y_ptr + offs, y, mask=offs < n)
