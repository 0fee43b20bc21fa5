# A load and a store made from tensor descriptors keep the descriptor as operands after `desc`
# (base, shape, strides but the last, offsets; ir/ir.h ir_desc_at): the printed IR reads back
# unchanged through kad's IR parser (padding "nan": the load's other is a NaN constant).
# ROUNDTRIP
# RUN: ir %s:tile --sig 'x_ptr=*fp16,y_ptr=*fp32,M=i32,N=i32,stride=i64,BM=16,BN=8'
import triton
import triton.language as tl


@triton.jit
def tile(x_ptr, y_ptr, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    xd = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[stride, 1], block_shape=[BM, BN],
                                   padding_option="nan")
    yd = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    pm = tl.program_id(0)
    x = xd.load([pm * BM, 8])
    yd.store([pm * BM, 8], x.to(tl.float32) * 2.0)
