# An outer product: x[None, :] moves the block's lanes into a row every thread holds (an all-gather
# through shared memory), then each thread holds its row of x[:, None] * x[None, :] as an array.
# Run on the CPU stand-in by tests/python/test_emit_cuda_cpu.py (test_outer_allgather).
# RUN: emit %s:outer --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=16' --emit cuda
import triton
import triton.language as tl


@triton.jit
def outer(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    xy = x[:, None] * x[None, :]
    tl.store(y_ptr + offs[:, None] * BLOCK + offs[None, :], xy)
