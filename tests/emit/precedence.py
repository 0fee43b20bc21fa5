# RUN: emit %s:prec_kernel --sig 'x_ptr=*i32,y_ptr=*i32,n=i32,BLOCK=64'
# Python precedence: parentheses only where needed; int // and % and shifts.
import triton
import triton.language as tl


@triton.jit
def prec_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    a = (x - (x - 3)) * (x + 2) // 7 % 5
    b = -(x + 1) << 2 | x & 3 ^ (x >> 1)
    c = (a < b) == (b < x)
    tl.store(y_ptr + offs, tl.where(c & m, a - b, -a), mask=m)
