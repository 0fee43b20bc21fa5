# A host-side tensor descriptor parameter (Triton's TensorDescriptor, typed tensordesc<...>) is
# expanded as Triton's launcher passes it: the base pointer under the parameter's name, the shape
# as i32 parameters <name>_shape_<k>, the strides but the last as i64 parameters
# <name>_stride_<k> (the last is the constant 1). desc.load/desc.store lower like in-kernel
# descriptors (every dimension boundary-checked); desc.shape, desc.strides, desc.block_shape and
# desc.dtype are read; ", nan" in the type makes out-of-bounds lanes read NaN. A constexpr after
# a descriptor keeps its place in the def (the backward's parameter order). Loads and stores keep
# the descriptor's parameters as operands after `desc` (desc_roundtrip.py reads them back).
# RUN: ir %s:rows --sig 'x_desc=tensordesc<fp16[4, 8]>,y_desc=tensordesc<fp32[4, 8], nan>,BM=4'
# RUN: ir %s:attrs --sig 'x_desc=tensordesc<fp32[2, 4, 8]>,out_ptr=*fp32'
import triton
import triton.language as tl


@triton.jit
def rows(x_desc, BM: tl.constexpr, y_desc):
    pm = tl.program_id(0)
    y = y_desc.load([pm * BM, 0])
    x_desc.store([pm * BM, 0], y * 2.0)


@triton.jit
def attrs(x_desc, out_ptr):
    s = x_desc.shape[0] + x_desc.shape[2]
    t = x_desc.strides[0] + x_desc.strides[1] + x_desc.strides[2]
    b = x_desc.block_shape[2]
    tl.store(out_ptr, s.to(tl.float32) + t.to(tl.float32) + b + tl.zeros([1], x_desc.dtype).sum())
