# RUN: ir %s:k --sig 'x_ptr=*fp32,n=i32'
# A helper's tl.constexpr annotation binds nothing (Triton's call_JitFunction): the runtime n
# reaches tl.arange as a value, which Triton refuses there.
import triton
import triton.language as tl


@triton.jit
def make(x_ptr, SIZE: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, SIZE), 0.0)


@triton.jit
def k(x_ptr, n):
    make(x_ptr, n)
