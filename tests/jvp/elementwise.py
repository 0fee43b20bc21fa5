# RUN: jvp %s:ew_math --sig 'x_ptr=*bf16,w_ptr=*fp32,y_ptr=*bf16,n=i32,BLOCK=64' --wrt x_ptr,w_ptr --out y_ptr
# RUN: jvp %s:ew_math --sig 'x_ptr=*bf16,w_ptr=*fp32,y_ptr=*bf16,n=i32,BLOCK=64' --wrt x_ptr --out y_ptr --ir
# Forward mode on elementwise math: a bf16 load upcast to fp32 (the tangent is loaded in bf16 and
# cast like its primal), where/maximum/abs with reverse mode's tie rule, a masked load's `other`
# without tangent, and a store cast back to bf16.  With only x_ptr differentiated, w's load has
# no tangent and w's terms get no tangent code.
import triton
import triton.language as tl


@triton.jit
def ew_math(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=m, other=1.0)
    a = tl.exp(x) * w + tl.log(1.0 + x * x) - tl.sqrt(w * w + 1.0)
    b = tl.where(x > 0, tl.sigmoid(x), tl.abs(w) * x)
    c = tl.maximum(a, b) / (1.0 + tl.abs(x))
    y = c + tl.math.rsqrt(1.0 + w * w) * tl.sin(x)
    tl.store(y_ptr + offs, y.to(tl.bfloat16), mask=m)
