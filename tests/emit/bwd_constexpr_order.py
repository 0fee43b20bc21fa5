# RUN: grad %s:act_kernel --sig "x_ptr=*fp32,ACT='gelu',y_ptr=*fp32,n=i32,alpha=fp32,BLOCK=512" --wrt x_ptr --out y_ptr
# A constexpr between runtime parameters: the backward keeps the def's order (ACT second),
# the launcher puts the specialized values in their places.  Runtime `if` on a scalar.
import triton
import triton.language as tl


@triton.jit
def act_kernel(x_ptr, ACT: tl.constexpr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if ACT == "gelu":
        y = 0.5 * x * (1 + tl.erf(x * 0.7071067811865476))
    else:
        y = tl.maximum(x, 0.0)
    if alpha != 1.0:
        y = y * alpha
    tl.store(y_ptr + offs, y, mask=mask)
