# RUN: grad %s:attn_bp --sig 'q_ptr=*fp32,k_ptr=*fp32,v_ptr=*fp32,o_ptr=*fp32,N=i32,stride_qm=i32,stride_kn=i32,stride_vn=i32,stride_om=i32,BM=32,BN=32,D=16' --wrt q_ptr,k_ptr,v_ptr --out o_ptr
# Backward module of an attention-like kernel written with block pointers: Q fixed, K^T and V
# block pointers advanced through the K/V loop (the loop carries their offsets); the backward
# uses tiles of pointers and the boundary checks' masks.
import triton
import triton.language as tl


@triton.jit
def attn_bp(q_ptr, k_ptr, v_ptr, o_ptr, N, stride_qm, stride_kn, stride_vn, stride_om,
            BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    pm = tl.program_id(0)
    q_bp = tl.make_block_ptr(q_ptr, (N, D), (stride_qm, 1), (pm * BM, 0), (BM, D), (1, 0))
    kt_bp = tl.make_block_ptr(k_ptr, (D, N), (1, stride_kn), (0, 0), (D, BN), (0, 1))
    v_bp = tl.make_block_ptr(v_ptr, (N, D), (stride_vn, 1), (0, 0), (BN, D), (1, 0))
    q = tl.load(q_bp, boundary_check=(0,), padding_option="zero")
    acc = tl.zeros((BM, D), dtype=tl.float32)
    for start in tl.range(0, N, BN):
        kt = tl.load(kt_bp, boundary_check=(1,), padding_option="zero")
        v = tl.load(v_bp, boundary_check=(0,), padding_option="zero")
        p = tl.sigmoid(tl.dot(q, kt))
        acc += tl.dot(p, v)
        kt_bp = tl.advance(kt_bp, (0, BN))
        v_bp = tl.advance(v_bp, (BN, 0))
    o_bp = tl.make_block_ptr(o_ptr, (N, D), (stride_om, 1), (pm * BM, 0), (BM, D), (1, 0))
    tl.store(o_bp, acc, boundary_check=(0, 1))
