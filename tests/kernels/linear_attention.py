"""Chunked causal linear attention: the intra-chunk part of the forward.

For one chunk of BT time steps of one (batch, head):

    o[i] = sum_{j <= i, j in chunk} (q[i] . k[j]) * scale * v[j]

i.e. o = (tril(q k^T) * scale) v.  The inter-chunk part (the running state
k^T v of the previous chunks) is a separate kernel.  Grid: axis 0 = chunk,
axis 1 = batch * head.  q, k, v, o are [B*H, T, D] with unit last stride.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def chunk_linear_attn_intra_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr,
    scale,
    T,
    stride_qk_bh, stride_qk_t,
    stride_vo_bh, stride_vo_t,
    BT: tl.constexpr,
    K: tl.constexpr,
    V: tl.constexpr,
):
    i_t = tl.program_id(0)
    i_bh = tl.program_id(1)
    offs_t = i_t * BT + tl.arange(0, BT)
    offs_k = tl.arange(0, K)
    offs_v = tl.arange(0, V)
    t_mask = offs_t < T

    qk_off = i_bh * stride_qk_bh + offs_t[:, None] * stride_qk_t + offs_k[None, :]
    q = tl.load(q_ptr + qk_off, mask=t_mask[:, None], other=0.0)
    k = tl.load(k_ptr + qk_off, mask=t_mask[:, None], other=0.0)
    vo_off = i_bh * stride_vo_bh + offs_t[:, None] * stride_vo_t + offs_v[None, :]
    v = tl.load(v_ptr + vo_off, mask=t_mask[:, None], other=0.0)

    s = tl.dot(q, tl.trans(k)) * scale
    # Causal within the chunk: step i sees steps j <= i.
    s = tl.where(offs_t[:, None] >= offs_t[None, :], s, 0.0)
    o = tl.dot(s.to(v.dtype), v)
    tl.store(o_ptr + vo_off, o.to(o_ptr.dtype.element_ty), mask=t_mask[:, None])


def chunk_linear_attn_intra(q, k, v, scale=None, chunk_size=64):
    BH, T, Kd = q.shape
    Vd = v.shape[-1]
    if scale is None:
        scale = Kd ** -0.5
    o = torch.empty_like(v)
    grid = (triton.cdiv(T, chunk_size), BH)
    chunk_linear_attn_intra_kernel[grid](
        q, k, v, o, scale, T, q.stride(0), q.stride(1), v.stride(0), v.stride(1),
        BT=chunk_size, K=Kd, V=Vd,
    )
    return o
