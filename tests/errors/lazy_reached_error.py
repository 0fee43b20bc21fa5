# RUN: ir %s:kern --sig 'x_ptr=*fp32,n=i32,BLOCK=16'
# RUN: ir %s:bad_def --sig 'x=i32'
# RUN: ast %s
# Errors of a @triton.jit function are reported when the kernel reaches it
# (a call, or the kernel itself); `kad ast` reports every function's errors.
import triton
import triton.language as tl


@triton.jit
def broken(x):
    f = lambda y: y + 1
    g = {1: 2}
    return f(x)


@triton.jit
def kern(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, broken(tl.load(x_ptr + offs, mask=m)), mask=m)


@triton.jit
def bad_def(x, *rest):
    return x
