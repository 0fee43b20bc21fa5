# Adjoint dots on 16-bit tiles (pass_narrow_dots, docs/AD.md "Dots on 16-bit tiles"): in the
# bf16 kernel the adjoint dots whose operands are both bf16 tiles widened to fp32 (the output
# gradient, v, p) take the bf16 tiles as they are (tl.dot(do, tl.trans(v)), no .to(tl.float32));
# the ones with an fp32 adjoint operand (ds against q and k) keep their fp32 form, and so does
# the recomputed forward.  The fp32 kernel has nothing to narrow.  Both checked against float64
# finite differences.
# RUN: grad %s:attn --sig 'q_ptr=*bf16,k_ptr=*bf16,v_ptr=*bf16,o_ptr=*bf16,D=16' --wrt q_ptr,k_ptr,v_ptr --out o_ptr
# RUN: grad %s:attn --ir --sig 'q_ptr=*fp32,k_ptr=*fp32,v_ptr=*fp32,o_ptr=*fp32,D=16' --wrt q_ptr,k_ptr,v_ptr --out o_ptr
# RUN: check %s:attn --sig 'q_ptr=*bf16,k_ptr=*bf16,v_ptr=*bf16,o_ptr=*bf16,D=16' --wrt q_ptr,k_ptr,v_ptr --out o_ptr --grid 2 --shape q_ptr=32x16 --shape k_ptr=32x16 --shape v_ptr=32x16 --shape o_ptr=32x16
import triton
import triton.language as tl


@triton.jit
def attn(q_ptr, k_ptr, v_ptr, o_ptr, D: tl.constexpr):
    rows = tl.program_id(0) * D + tl.arange(0, D)
    cols = tl.arange(0, D)
    offs = rows[:, None] * D + cols[None, :]
    q = tl.load(q_ptr + offs)
    k = tl.load(k_ptr + offs)
    v = tl.load(v_ptr + offs)
    s = tl.dot(q, tl.trans(k)) * 0.25
    p = tl.where(rows[:, None] >= rows[None, :], s, 0.0)
    o = tl.dot(p.to(v.dtype), v)
    tl.store(o_ptr + offs, o.to(o_ptr.dtype.element_ty))
# ROUNDTRIP
