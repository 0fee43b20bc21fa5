# Misused block pointers are located errors, checked as Triton's semantic.py checks them: mask and
# other with a block pointer, 64-bit offsets, a boundary_check dimension out of range, a stored
# value of another shape or dtype, a loop changing more than the offsets, a bad padding option,
# boundary_check on a tile of pointers.
# RUN: ir %s:with_mask --sig 'x_ptr=*fp32,M=i32'
# RUN: ir %s:wide_offsets --sig 'x_ptr=*fp32,M=i32,off=i64'
# RUN: ir %s:bad_check --sig 'x_ptr=*fp32,M=i32'
# RUN: ir %s:bad_shape --sig 'x_ptr=*fp32,M=i32'
# RUN: ir %s:bad_dtype --sig 'x_ptr=*fp32,M=i32'
# RUN: ir %s:new_base --sig 'x_ptr=*fp32,y_ptr=*fp32,M=i32'
# RUN: ir %s:bad_padding --sig 'x_ptr=*fp32,M=i32'
# RUN: ir %s:not_block --sig 'x_ptr=*fp32,M=i32'
import triton
import triton.language as tl


@triton.jit
def with_mask(x_ptr, M):
    p = tl.make_block_ptr(x_ptr, shape=(M,), strides=(1,), offsets=(0,), block_shape=(16,), order=(0,))
    tl.store(p, tl.load(p, mask=tl.arange(0, 16) < M))


@triton.jit
def wide_offsets(x_ptr, M, off):
    p = tl.make_block_ptr(x_ptr, (M,), (1,), (off,), (16,), (0,))
    tl.store(p, tl.load(p))


@triton.jit
def bad_check(x_ptr, M):
    p = tl.make_block_ptr(x_ptr, (M,), (1,), (0,), (16,), (0,))
    tl.store(p, tl.load(p, boundary_check=(1,)))


@triton.jit
def bad_shape(x_ptr, M):
    p = tl.make_block_ptr(x_ptr, (M,), (1,), (0,), (16,), (0,))
    tl.store(p, tl.zeros((8,), dtype=tl.float32))


@triton.jit
def bad_dtype(x_ptr, M):
    p = tl.make_block_ptr(x_ptr, (M,), (1,), (0,), (16,), (0,))
    tl.store(p, tl.zeros((16,), dtype=tl.float16))


@triton.jit
def new_base(x_ptr, y_ptr, M):
    p = tl.make_block_ptr(x_ptr, (M,), (1,), (0,), (16,), (0,))
    for i in range(3):
        tl.store(p, tl.load(p) + 1.0)
        p = tl.make_block_ptr(y_ptr, (M,), (1,), (16 * i,), (16,), (0,))


@triton.jit
def bad_padding(x_ptr, M):
    p = tl.make_block_ptr(x_ptr, (M,), (1,), (0,), (16,), (0,))
    tl.store(p, tl.load(p, boundary_check=(0,), padding_option="one"))


@triton.jit
def not_block(x_ptr, M):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, boundary_check=(0,)))
