# RUN: jvp %s:online_lse --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr --ir
# RUN: jvp %s:newton --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr --ir
# RUN: jvp %s:split_k --sig 'x_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out out_ptr
# Loops in forward mode need no tape: the tangents of the carried values (a running max and a
# rescaled sum; a Newton iteration in a while loop) are carried next to them.  A runtime `if`
# yields tangents next to its results.  An atomic_add into an output adds the tangent with an
# atomic_add into the output's tangent.
import triton
import triton.language as tl


@triton.jit
def online_lse(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = -float("inf")
    s = 0.0
    for start in range(0, n, BLOCK):
        x = tl.load(x_ptr + row * n + start + cols, mask=start + cols < n, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(y_ptr + row, m + tl.log(s))


@triton.jit
def newton(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
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


@triton.jit
def split_k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x * x, axis=0))
