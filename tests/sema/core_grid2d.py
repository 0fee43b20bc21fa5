# A 2-D grid: two program ids, 2-D tiles, strided pointers.
# RUN: ir %s:copy2d_kernel --sig 'x_ptr=*bf16,out_ptr=*bf16,M=i32,N=i32,stride_m=i32,BM=16,BN=32'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def copy2d_kernel(x_ptr, out_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    offs = rm[:, None] * stride_m + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x, mask=mask)
