# A tl function kad does not know is named in the error.
# RUN: ir %s:k --sig 'x_ptr=*fp32'
import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1))
