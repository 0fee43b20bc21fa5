# RUN: ir %s:kern --sig 'x_ptr=*fp32,n=i32,BLOCK=16'
# A syntax kad does not support in a @triton.jit function the kernel does
# not reach does not block the kernel (the errors are kept on that function).
import triton
import triton.language as tl


@triton.jit
def broken(x):
    f = lambda y: y + 1
    return f(x)


@triton.jit
def twice(x):
    return x * 2


@triton.jit
def kern(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, twice(tl.load(x_ptr + offs, mask=m)), mask=m)


@triton.jit
def bad_def(x, *rest):
    return x
