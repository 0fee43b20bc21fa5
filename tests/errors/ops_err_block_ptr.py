# Block pointers are refused with a located error.
# RUN: ir %s:k --sig 'x_ptr=*fp32,M=i32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, M):
    p = tl.make_block_ptr(x_ptr, shape=(M,), strides=(1,), offsets=(0,), block_shape=(16,), order=(0,))
    tl.store(p, tl.load(p))
