# Tensor descriptors lower like block pointers with every dimension boundary-checked: desc.load
# at offsets is base + sum_d (offset_d + arange(block_d)) * stride_d with the mask
# 0 <= index < shape over all dims and other=0 (padding "nan": other=nan); desc.store stores under
# that mask after converting the value to the descriptor's dtype; tl.load_tensor_descriptor and
# tl.store_tensor_descriptor are the same; desc.block_shape / desc.dtype are constants. The load
# or store keeps its descriptor as operands after `desc` (base, shape, strides but the last,
# offsets: what the emitters print as tl.make_tensor_descriptor / .load / .store;
# desc_roundtrip.py reads them back).
# RUN: ir %s:tile --sig 'x_ptr=*fp16,y_ptr=*fp32,M=i32,N=i32,stride=i64,BM=16,BN=8'
# RUN: ir %s:loop_nan --sig 'x_ptr=*fp32,y_ptr=*fp32,N=i32,B=8'
import triton
import triton.language as tl


@triton.jit
def tile(x_ptr, y_ptr, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    xd = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[stride, 1], block_shape=[BM, BN])
    yd = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    x = xd.load([pm * BM, 0])
    tl.static_assert(xd.block_shape[0] == BM and xd.dtype == tl.float16)
    yd.store([pm * BM, 0], x * 2)
    tl.store_tensor_descriptor(yd, [pm * BM, BN], tl.load_tensor_descriptor(xd, [pm * BM, BN]))


@triton.jit
def loop_nan(x_ptr, y_ptr, N, B: tl.constexpr):
    xd = tl.make_tensor_descriptor(x_ptr, [N], [1], [B], padding_option="nan")
    acc = tl.zeros([B], dtype=tl.float32)
    for i in range(0, N, B):
        acc += xd.load([i])
    tl.store(y_ptr + tl.arange(0, B), acc)
