# Gradients through host-side tensor descriptor parameters (tensordesc<...>, expanded into the
# base pointer, shape and strides) against float64 finite differences: a chunked row statistic
# whose loads and store go through descriptors over views with padded rows (stride 24 > 21
# columns) and a last row block that is partly out of bounds; in-place through one descriptor; a
# tile per program whose gradient is one plain store (a descriptor store in the emitted backward),
# with host-side and in-kernel descriptors.
# RUN: check tests/kernels/tensor_desc_host.py:host_desc_chunked --sig 'x_desc=tensordesc<fp32[8, 8]>,w_desc=tensordesc<fp32[8]>,y_desc=tensordesc<fp32[8, 8]>,BLOCK_M=8,BLOCK_N=8' --wrt x_desc,w_desc --out y_desc --grid 3 --shape x_desc=19x24 --shape w_desc=21 --shape y_desc=19x24 --arg x_desc_shape_0=19 --arg x_desc_shape_1=21 --arg x_desc_stride_0=24 --arg w_desc_shape_0=21 --arg y_desc_shape_0=19 --arg y_desc_shape_1=21 --arg y_desc_stride_0=24
# RUN: check %s:scale_inplace --sig 's_desc=tensordesc<fp32[4, 8]>,w_ptr=*fp32' --wrt s_desc,w_ptr --out s_desc --grid 3,2 --shape s_desc=10x16 --shape w_ptr=16 --arg s_desc_shape_0=10 --arg s_desc_shape_1=13 --arg s_desc_stride_0=16
# RUN: check tests/kernels/tensor_desc_host.py:host_desc_swish_tile --sig 'x_desc=tensordesc<fp32[8, 8]>,y_desc=tensordesc<fp32[8, 8]>,BLOCK_M=8,BLOCK_N=8' --wrt x_desc --out y_desc --grid 3,3 --shape x_desc=19x24 --shape y_desc=19x24 --arg x_desc_shape_0=19 --arg x_desc_shape_1=21 --arg x_desc_stride_0=24 --arg y_desc_shape_0=19 --arg y_desc_shape_1=21 --arg y_desc_stride_0=24
# RUN: check tests/kernels/tensor_desc.py:desc_swish_tile --sig 'x_ptr=*fp32,y_ptr=*fp32,M=i32,N=i32,stride=i32,BLOCK_M=8,BLOCK_N=8' --wrt x_ptr --out y_ptr --grid 3,3 --shape x_ptr=19x24 --shape y_ptr=19x24 --arg M=19 --arg N=21 --arg stride=24
# RUN: grad %s:scale_inplace --sig 's_desc=tensordesc<fp32[4, 8]>,w_ptr=*fp32' --wrt s_desc,w_ptr --out s_desc
import triton
import triton.language as tl


@triton.jit
def scale_inplace(s_desc, w_ptr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    s = s_desc.load([pm * 4, pn * 8])
    cols = pn * 8 + tl.arange(0, 8)
    w = tl.load(w_ptr + cols, mask=cols < s_desc.shape[1], other=0.0)
    s_desc.store([pm * 4, pn * 8], tl.sin(s) * w[None, :])
