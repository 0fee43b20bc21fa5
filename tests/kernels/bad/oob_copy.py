"""A copy kernel with a bug: the tail block is not masked.

Used by tests/python/test_errors.py: the interpreter must report the
out-of-bounds access with this file, the line of the access, and the program.
"""
import triton
import triton.language as tl


@triton.jit
def copy_no_mask_kernel(src_ptr, dst_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(src_ptr + offs)  # BUG: no mask=offs < n
    tl.store(dst_ptr + offs, x, mask=offs < n)


@triton.jit
def store_no_mask_kernel(src_ptr, dst_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(src_ptr + offs, mask=offs < n, other=0.0)
    tl.store(dst_ptr + offs, x * 2.0)  # BUG: no mask=offs < n
