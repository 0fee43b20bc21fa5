# Host-side tensor descriptor parameters (tensordesc<...> in the signature) used wrongly are
# located errors: a block narrower than 16 bytes (TMA), a block dimension that is not a power
# of 2, a malformed type (no block shape, an unknown padding, i1 elements), an expanded part's
# name taken by another parameter, 64-bit offsets, tl.load on the descriptor.
# RUN: ir %s:copy --sig 'x_desc=tensordesc<fp32[2]>,y_ptr=*fp32'
# RUN: ir %s:copy --sig 'x_desc=tensordesc<fp32[12]>,y_ptr=*fp32'
# RUN: ir %s:copy --sig 'x_desc=tensordesc<fp32>,y_ptr=*fp32'
# RUN: ir %s:copy --sig 'x_desc=tensordesc<fp32[16], inf>,y_ptr=*fp32'
# RUN: ir %s:copy --sig 'x_desc=tensordesc<i1[16]>,y_ptr=*fp32'
# RUN: ir %s:clash --sig 'x_desc=tensordesc<fp32[16]>,x_desc_shape_0=i32'
# RUN: ir %s:wide --sig 'x_desc=tensordesc<fp32[16]>,o=i64'
# RUN: ir %s:plain_load --sig 'x_desc=tensordesc<fp32[16]>'
import triton
import triton.language as tl


@triton.jit
def copy(x_desc, y_ptr):
    tl.store(y_ptr + tl.arange(0, 16), x_desc.load([0]))


@triton.jit
def clash(x_desc, x_desc_shape_0):
    x_desc.store([0], x_desc.load([x_desc_shape_0]))


@triton.jit
def wide(x_desc, o):
    x_desc.store([0], x_desc.load([o]))


@triton.jit
def plain_load(x_desc):
    x = tl.load(x_desc)
