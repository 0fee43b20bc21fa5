# A bf16 kernel with a mask, tl.where and casts: loads bf16, computes in fp32, stores bf16; then its
# backward (fp32 gradient arithmetic, bf16 gradient stores rounded to nearest).
# RUN: emit %s:cast_where --sig 'x_ptr=*bf16,y_ptr=*bf16,n=i32,alpha=fp32,BLOCK=128' --emit cuda
# RUN: grad %s:cast_where --sig 'x_ptr=*bf16,y_ptr=*bf16,n=i32,alpha=fp32,BLOCK=128' --wrt x_ptr --out y_ptr --emit cuda
import triton
import triton.language as tl


@triton.jit
def cast_where(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.where(x > 0, x * tl.sigmoid(x), alpha * (tl.exp(x) - 1.0))
    tl.store(y_ptr + offs, y.to(tl.bfloat16), mask=mask)
