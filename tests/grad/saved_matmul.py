# RUN: grad %s:mm_relu --ir --saved --sig 'a_ptr=*fp32,b_ptr=*fp32,c_ptr=*fp32,M=i32,N=i32,K=i32,stride_am=i32,stride_bk=i32,stride_cm=i32,BM=16,BN=16,BK=16' --wrt a_ptr,b_ptr --out c_ptr
# The backward of a tiled matmul's saving forward: the accumulator of the K loop is loaded from
# kad_saved (a 16 x 16 tile per program, row-major) instead of running the loop again, in the
# backward and in the GEMM form's dacc kernel (its companions below); the adjoint K loop, which
# the GEMM form's operand kernels take over, is unchanged.
import triton
import triton.language as tl


@triton.jit
def mm_relu(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    c = tl.maximum(acc, 0.0)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))
# ROUNDTRIP
