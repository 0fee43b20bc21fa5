# Misused tensor descriptors are located errors, checked as Triton's semantic.py checks them: a
# last stride that is not the constant 1, fewer than 16 bytes in the last block dimension, lengths
# that differ, a wrong number of offsets, 64-bit offsets, a stored value of another shape,
# tl.load/tl.advance on a descriptor, descriptor atomics (not supported yet). Host-side
# descriptors' errors: tests/errors/sig_err_tensordesc.py.
# RUN: ir %s:strided_last --sig 'x_ptr=*fp32,N=i32,S=i32'
# RUN: ir %s:narrow --sig 'x_ptr=*fp32,N=i32'
# RUN: ir %s:lengths --sig 'x_ptr=*fp32,N=i32'
# RUN: ir %s:offsets --sig 'x_ptr=*fp32,N=i32,o=i64'
# RUN: ir %s:bad_value --sig 'x_ptr=*fp32,N=i32'
# RUN: ir %s:plain_load --sig 'x_ptr=*fp32,N=i32'
# RUN: ir %s:advance --sig 'x_ptr=*fp32,N=i32'
# RUN: ir %s:atomic --sig 'x_ptr=*fp32,N=i32'
import triton
import triton.language as tl


@triton.jit
def strided_last(x_ptr, N, S):
    d = tl.make_tensor_descriptor(x_ptr, [N, N], [S, S], [16, 16])


@triton.jit
def narrow(x_ptr, N):
    d = tl.make_tensor_descriptor(x_ptr, [N, N], [N, 1], [16, 2])


@triton.jit
def lengths(x_ptr, N):
    d = tl.make_tensor_descriptor(x_ptr, [N, N], [1], [16, 16])


@triton.jit
def offsets(x_ptr, N, o):
    d = tl.make_tensor_descriptor(x_ptr, [N, N], [N, 1], [16, 16])
    x = d.load([0])
    y = d.load([o, 0])


@triton.jit
def bad_value(x_ptr, N):
    d = tl.make_tensor_descriptor(x_ptr, [N, N], [N, 1], [16, 16])
    d.store([0, 0], tl.zeros([16], tl.float32))


@triton.jit
def plain_load(x_ptr, N):
    d = tl.make_tensor_descriptor(x_ptr, [N], [1], [16])
    tl.store(d, tl.load(d))


@triton.jit
def advance(x_ptr, N):
    d = tl.make_tensor_descriptor(x_ptr, [N], [1], [16])
    d = tl.advance(d, [16])


@triton.jit
def atomic(x_ptr, N):
    d = tl.make_tensor_descriptor(x_ptr, [N], [1], [16])
    d.atomic_add([0], tl.zeros([16], tl.float32))

