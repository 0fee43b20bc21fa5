# range() with constexpr bounds: an IR `for` by default, unrolled with --unroll.
# RUN: ir %s:unroll_kernel --sig 'x_ptr=*fp32,N=3,BLOCK=8'
# RUN: ir %s:unroll_kernel --sig 'x_ptr=*fp32,N=3,BLOCK=8' --unroll
import triton
import triton.language as tl


@triton.jit
def unroll_kernel(x_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offs)
    for k in range(N):
        acc = acc * 2.0 + k
    tl.store(x_ptr + offs, acc)
