# tl.make_block_ptr and tl.make_tensor_descriptor check their base, shape and strides alike (one
# helper, sema_memory.c's bp_base_shape_strides): a base that is not a scalar pointer, a shape or
# strides that are not integers, each a located error naming the builtin and the argument.
# RUN: ir %s:bp_base --sig 'x_ptr=*fp32,N=i32'
# RUN: ir %s:bp_shape --sig 'x_ptr=*fp32,N=i32'
# RUN: ir %s:bp_offsets --sig 'x_ptr=*fp32,N=i32'
# RUN: ir %s:desc_base --sig 'x_ptr=*fp32,N=i32'
# RUN: ir %s:desc_strides --sig 'x_ptr=*fp32,N=i32'
import triton
import triton.language as tl


@triton.jit
def bp_base(x_ptr, N):
    p = tl.make_block_ptr(N, [N], [1], [0], [16], [0])


@triton.jit
def bp_shape(x_ptr, N):
    p = tl.make_block_ptr(x_ptr, [1.5], [1], [0], [16], [0])


@triton.jit
def bp_offsets(x_ptr, N):
    p = tl.make_block_ptr(x_ptr, [N], [1], [1.5], [16], [0])


@triton.jit
def desc_base(x_ptr, N):
    d = tl.make_tensor_descriptor(x_ptr + tl.arange(0, 16), [N, N], [N, 1], [16, 16])


@triton.jit
def desc_strides(x_ptr, N):
    d = tl.make_tensor_descriptor(x_ptr, [N, N], [N, 1.5], [16, 16])
