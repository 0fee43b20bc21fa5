# Online-softmax loops reversed by a second pass with the final max (src/ad/ad_gauge.c): the report
# and header state the recognition and the tape's bytes before and after; the backward has a loop
# computing the max alone (taped) and a loop of linear accumulators with the final max.  A
# look-alike whose running sum also adds m_new keeps the full tape.  Each is checked against
# float64 finite differences.
# RUN: grad %s:attn --report --sig 'q_ptr=*fp32,k_ptr=*fp32,v_ptr=*fp32,o_ptr=*fp32,N=i32,BLOCK_M=16,BLOCK_N=16,D=16' --wrt q_ptr,k_ptr,v_ptr --out o_ptr
# RUN: grad %s:lse --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: grad %s:not_linear --report --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: check %s:attn --sig 'q_ptr=*fp32,k_ptr=*fp32,v_ptr=*fp32,o_ptr=*fp32,N=i32,BLOCK_M=16,BLOCK_N=16,D=16' --wrt q_ptr,k_ptr,v_ptr --out o_ptr --grid 2 --shape q_ptr=32x16 --shape k_ptr=32x16 --shape v_ptr=32x16 --shape o_ptr=32x16 --arg N=32
# RUN: check %s:lse --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 2 --shape x_ptr=2x21 --shape y_ptr=2 --arg n=21
# RUN: check %s:not_linear --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 2 --shape x_ptr=2x21 --shape y_ptr=2 --arg n=21
import triton
import triton.language as tl


@triton.jit
def attn(q_ptr, k_ptr, v_ptr, o_ptr, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, D), tl.float32)
    for start_n in range(0, N, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + offs_n[:, None] * D + offs_d[None, :])
        v = tl.load(v_ptr + offs_n[:, None] * D + offs_d[None, :])
        qk = tl.dot(q, tl.trans(k), input_precision="ieee")
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    tl.store(o_ptr + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None])


@triton.jit
def lse(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = -float("inf")
    s = 0.0
    for c in range(0, n, BLOCK):
        x = tl.load(x_ptr + row * n + c + cols, mask=c + cols < n, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(y_ptr + row, m + tl.log(s))


@triton.jit
def not_linear(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = -float("inf")
    s = 0.0
    for c in range(0, n, BLOCK):
        x = tl.load(x_ptr + row * n + c + cols, mask=c + cols < n, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new) * tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(y_ptr + row, m + tl.log(s))
