# RUN: emit %s:lin_rec --sig 'a_ptr=*fp32,b_ptr=*fp32,h_ptr=*fp32,T=i32,BT=16,REVERSE=True'
# RUN: grad %s:lin_rec --sig 'a_ptr=*fp32,b_ptr=*fp32,h_ptr=*fp32,T=i32,BT=16,REVERSE=True' --wrt a_ptr,b_ptr --out h_ptr
# RUN: grad %s:running_max --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# A scan's combine function prints as a @triton.jit function of its own before the kernel, called
# by tl.associative_scan; the backward's scans (a linear recurrence the other way, shifts by one,
# a segmented sum for the running maximum) print the same way.
import triton
import triton.language as tl


@triton.jit
def step(a1, b1, a2, b2):
    return a1 * a2, a2 * b1 + b2


@triton.jit
def larger(x, y):
    return tl.maximum(x, y)


@triton.jit
def lin_rec(a_ptr, b_ptr, h_ptr, T, BT: tl.constexpr, REVERSE: tl.constexpr):
    t = tl.arange(0, BT)
    a = tl.load(a_ptr + t, mask=t < T, other=1.0)
    b = tl.load(b_ptr + t, mask=t < T, other=0.0)
    _, h = tl.associative_scan((a, b), 0, step, reverse=REVERSE)
    tl.store(h_ptr + t, h, mask=t < T)


@triton.jit
def running_max(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < n, other=float("-inf"))
    tl.store(y_ptr + i, tl.associative_scan(x, 0, larger), mask=i < n)
