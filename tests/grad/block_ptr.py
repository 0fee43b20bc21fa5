# Gradients through block pointers (lowered to tiles of pointers and masks, so the adjoint loads
# and stores honour boundary_check like masks), against float64 finite differences: a 2-D
# elementwise kernel with padding "zero" and a default-padded 1-D weight, an attention-like kernel
# whose K^T and V block pointers advance through a K/V loop (linear accumulator), and a matmul
# with boundary_check on both operands over a tl.range K loop.
# RUN: check %s:scale_bp --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,M=i32,N=i32,stride_m=i32,BM=16,BN=8' --wrt x_ptr,w_ptr --out y_ptr --grid 3,2 --shape x_ptr=37x13 --shape w_ptr=13 --shape y_ptr=37x13 --arg M=37 --arg N=13 --arg stride_m=13
# RUN: check %s:attn_bp --sig 'q_ptr=*fp32,k_ptr=*fp32,v_ptr=*fp32,o_ptr=*fp32,N=i32,stride_qm=i32,stride_kn=i32,stride_vn=i32,stride_om=i32,BM=16,BN=16,D=16' --wrt q_ptr,k_ptr,v_ptr --out o_ptr --grid 3 --shape q_ptr=37x16 --shape k_ptr=37x16 --shape v_ptr=37x16 --shape o_ptr=37x16 --arg N=37 --arg stride_qm=16 --arg stride_kn=16 --arg stride_vn=16 --arg stride_om=16
# RUN: check %s:matmul_bp --sig 'a_ptr=*fp32,b_ptr=*fp32,c_ptr=*fp32,M=i32,N=i32,K=i32,stride_am=i32,stride_bk=i32,stride_cm=i32,BM=16,BN=16,BK=16' --wrt a_ptr,b_ptr --out c_ptr --grid 2,2 --shape a_ptr=21x35 --shape b_ptr=35x19 --shape c_ptr=21x19 --arg M=21 --arg N=19 --arg K=35 --arg stride_am=35 --arg stride_bk=19 --arg stride_cm=19
# RUN: grad %s:matmul_bp --ir --sig 'a_ptr=*fp32,b_ptr=*fp32,c_ptr=*fp32,M=i32,N=i32,K=i32,stride_am=i32,stride_bk=i32,stride_cm=i32,BM=16,BN=16,BK=16' --wrt a_ptr,b_ptr --out c_ptr
import triton
import triton.language as tl


@triton.jit
def scale_bp(x_ptr, w_ptr, y_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    xb = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(stride_m, 1), offsets=(pm * BM, pn * BN),
                           block_shape=(BM, BN), order=(1, 0))
    wb = tl.make_block_ptr(w_ptr, (N,), (1,), (pn * BN,), (BN,), (0,))
    x = tl.load(xb, boundary_check=(0, 1), padding_option="zero")
    w = tl.load(wb, boundary_check=(0,))
    y = x * w[None, :] + tl.exp(x)
    yb = tl.make_block_ptr(y_ptr, (M, N), (stride_m, 1), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tl.store(yb, y, boundary_check=(1, 0))


@triton.jit
def attn_bp(q_ptr, k_ptr, v_ptr, o_ptr, N, stride_qm, stride_kn, stride_vn, stride_om,
            BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    pm = tl.program_id(0)
    q_bp = tl.make_block_ptr(q_ptr, (N, D), (stride_qm, 1), (pm * BM, 0), (BM, D), (1, 0))
    kt_bp = tl.make_block_ptr(k_ptr, (D, N), (1, stride_kn), (0, 0), (D, BN), (0, 1))
    v_bp = tl.make_block_ptr(v_ptr, (N, D), (stride_vn, 1), (0, 0), (BN, D), (1, 0))
    q = tl.load(q_bp, boundary_check=(0,), padding_option="zero")
    acc = tl.zeros((BM, D), dtype=tl.float32)
    for start in range(0, N, BN):
        kt = tl.load(kt_bp, boundary_check=(1,), padding_option="zero")
        v = tl.load(v_bp, boundary_check=(0,), padding_option="zero")
        p = tl.sigmoid(tl.dot(q, kt, input_precision="ieee"))
        acc += tl.dot(p, v, input_precision="ieee")
        kt_bp = tl.advance(kt_bp, (0, BN))
        v_bp = v_bp.advance((BN, 0))
    o_bp = tl.make_block_ptr(o_ptr, (N, D), (stride_om, 1), (pm * BM, 0), (BM, D), (1, 0))
    tl.store(o_bp, acc, boundary_check=(0, 1))


@triton.jit
def matmul_bp(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_bp = tl.make_block_ptr(a_ptr, (M, K), (stride_am, 1), (pid_m * BM, 0), (BM, BK), (1, 0))
    b_bp = tl.make_block_ptr(b_ptr, (K, N), (stride_bk, 1), (0, pid_n * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in tl.range(0, tl.cdiv(K, BK), num_stages=3):
        a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_bp, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_bp = tl.advance(a_bp, (0, BK))
        b_bp = tl.advance(b_bp, (BK, 0))
    c_bp = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(c_bp, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))
# ROUNDTRIP
