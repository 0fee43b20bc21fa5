# RUN: emit %s:softmax_kernel --sig 'out_ptr=*fp16,in_ptr=*fp16,in_stride=i32,out_stride=i32,n_cols=i32,BLOCK=128'
# Row softmax on fp16: -inf padding, reductions, fp16 -> fp32 conversion, division.
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, (num / den).to(tl.float16), mask=mask)
