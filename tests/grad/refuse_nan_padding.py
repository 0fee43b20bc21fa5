# A differentiated load whose masked-off lanes are NaN (padding_option="nan", other=nan) is
# refused: the backward multiplies their zero adjoints by NaN (here in w's sum over the rows).
# RUN: grad %s:scale_nan --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,M=i32,N=i32,BM=16,BN=8' --wrt x_ptr,w_ptr --out y_ptr
import triton
import triton.language as tl


@triton.jit
def scale_nan(x_ptr, w_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    xb = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    x = tl.load(xb, boundary_check=(0, 1), padding_option="nan")
    w = tl.load(w_ptr + tl.arange(0, BN))
    yb = tl.make_block_ptr(y_ptr, (M, N), (N, 1), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    tl.store(yb, x * w[None, :], boundary_check=(0, 1))
