# Loops whose carried state is not a linear accumulator: kad records it on a tape (docs/AD.md,
# "Tapes").  A state tile [K, V] per program updated by a decayed outer product; chunk states
# passed across chunks with an exp decay (each chunk's state stored); a taped loop inside a
# linear loop and inside an `if` (the tape is rewritten by each recompute before the reverse
# loop reads it); a linear accumulator next to a taped value in one loop.
# RUN: grad %s:state_recurrence --ir --sig 'q_ptr=*fp32,k_ptr=*fp32,v_ptr=*fp32,g_ptr=*fp32,o_ptr=*fp32,T=i32,K=16,V=16' --wrt q_ptr,k_ptr,v_ptr,g_ptr --out o_ptr
# RUN: check %s:state_recurrence --sig 'q_ptr=*fp32,k_ptr=*fp32,v_ptr=*fp32,g_ptr=*fp32,o_ptr=*fp32,T=i32,K=16,V=16' --wrt q_ptr,k_ptr,v_ptr,g_ptr --out o_ptr --grid 2 --shape q_ptr=2x5x16 --shape k_ptr=2x5x16 --shape v_ptr=2x5x16 --shape g_ptr=2x5 --shape o_ptr=2x5x16 --arg T=5
# RUN: check %s:chunk_states --sig 'k_ptr=*fp32,v_ptr=*fp32,g_ptr=*fp32,s_ptr=*fp32,NC=i32,BT=16,K=16,V=16' --wrt k_ptr,v_ptr,g_ptr --out s_ptr --grid 2 --shape k_ptr=2x48x16 --shape v_ptr=2x48x16 --shape g_ptr=2x3 --shape s_ptr=2x3x16x16 --arg NC=3
# RUN: check %s:max_per_row_sum --sig 'x_ptr=*fp32,y_ptr=*fp32,R=i32,C=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 2 --shape x_ptr=2x3x20 --shape y_ptr=2 --arg R=3 --arg C=20
# RUN: check %s:lse_if --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,flag=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 3 --shape x_ptr=3x21 --shape y_ptr=3 --arg n=21 --arg flag=1
# RUN: check %s:lse_if --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,flag=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 3 --shape x_ptr=3x21 --shape y_ptr=3 --arg n=21 --arg flag=0
# RUN: check %s:product_and_sum --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 2 --shape x_ptr=2x24 --shape y_ptr=2x2 --arg n=24 --range x_ptr=0.5:1.5
# RUN: grad %s:chunk_states --sig 'k_ptr=*fp32,v_ptr=*fp32,g_ptr=*fp32,s_ptr=*fp32,NC=i32,BT=16,K=16,V=16' --wrt k_ptr,v_ptr,g_ptr --out s_ptr
# RUN: grad %s:max_per_row_sum --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,R=i32,C=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: grad %s:lse_if --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,flag=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: grad %s:product_and_sum --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: check %s:advancing_pointers --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,stride=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 3 --shape x_ptr=3x40 --shape y_ptr=3x8 --arg n=40 --arg stride=40
# RUN: grad %s:advancing_pointers --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,stride=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: check %s:causal_running_max --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 5 --shape x_ptr=5x8 --shape y_ptr=5x8
# RUN: grad %s:causal_running_max --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: check %s:welford_mean --sig 'x_ptr=*fp32,y_ptr=*fp32,N=i32,TILE=8' --wrt x_ptr --out y_ptr --grid 3 --shape x_ptr=3x21 --shape y_ptr=3 --arg N=21
# RUN: grad %s:welford_mean --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,N=i32,TILE=8' --wrt x_ptr --out y_ptr
# RUN: check %s:taped_in_taped --sig 'x_ptr=*fp32,y_ptr=*fp32,R=i32,C=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 2 --shape x_ptr=2x3x20 --shape y_ptr=2 --arg R=3 --arg C=20
# RUN: check %s:recurrence_fp16 --sig 'x_ptr=*fp16,y_ptr=*fp16,T=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 1 --shape x_ptr=5x8 --shape y_ptr=8 --arg T=5
# RUN: grad %s:recurrence_fp16 --sig 'x_ptr=*fp16,y_ptr=*fp16,T=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: check %s:swap_loop --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,T=i32,BLOCK=8' --wrt x_ptr,w_ptr --out y_ptr --grid 1 --shape x_ptr=16 --shape w_ptr=5x8 --shape y_ptr=8 --arg T=5
# RUN: check %s:down_loop --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 1 --shape x_ptr=40 --shape y_ptr=8 --arg n=40
import triton
import triton.language as tl


@triton.jit
def state_recurrence(q_ptr, k_ptr, v_ptr, g_ptr, o_ptr, T, K: tl.constexpr, V: tl.constexpr):
    # S_t = exp(g_t) * S_{t-1} + k_t v_t^T;  o_t = q_t S_t  (one sequence per program)
    b = tl.program_id(0)
    ks = tl.arange(0, K)
    vs = tl.arange(0, V)
    S = tl.zeros((K, V), tl.float32)
    for t in range(0, T):
        base = (b * T + t)
        q = tl.load(q_ptr + base * K + ks)
        k = tl.load(k_ptr + base * K + ks)
        v = tl.load(v_ptr + base * V + vs)
        g = tl.load(g_ptr + base)
        S = tl.exp(g) * S + k[:, None] * v[None, :]
        o = tl.sum(q[:, None] * S, axis=0)
        tl.store(o_ptr + base * V + vs, o)


@triton.jit
def chunk_states(k_ptr, v_ptr, g_ptr, s_ptr, NC, BT: tl.constexpr, K: tl.constexpr, V: tl.constexpr):
    # each chunk's incoming state is stored, then S = exp(g_c) * S + k_c^T v_c
    b = tl.program_id(0)
    rows = tl.arange(0, BT)
    ks = tl.arange(0, K)
    vs = tl.arange(0, V)
    S = tl.zeros((K, V), tl.float32)
    for c in range(0, NC):
        tl.store(s_ptr + ((b * NC + c) * K + ks[:, None]) * V + vs[None, :], S)
        kc = tl.load(k_ptr + ((b * NC * BT) + c * BT + rows[:, None]) * K + ks[None, :])
        vc = tl.load(v_ptr + ((b * NC * BT) + c * BT + rows[:, None]) * V + vs[None, :])
        g = tl.load(g_ptr + b * NC + c)
        S = S * tl.exp(g) + tl.dot(tl.trans(kc), vc, input_precision="ieee")


@triton.jit
def max_per_row_sum(x_ptr, y_ptr, R, C, BLOCK: tl.constexpr):
    # y[b] = sum over rows r of max(x[b, r, :]) * (r + 1): the taped max inside a linear loop
    b = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = 0.0
    for r in range(0, R):
        m = -float("inf")
        for c in range(0, C, BLOCK):
            x = tl.load(x_ptr + (b * R + r) * C + c + cols, mask=c + cols < C, other=-float("inf"))
            m = tl.maximum(m, tl.max(x, axis=0))
        acc += m * (r + 1)
    tl.store(y_ptr + b, acc)


@triton.jit
def lse_if(x_ptr, y_ptr, n, flag, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    if flag > 0:
        m = -float("inf")
        s = 0.0
        for c in range(0, n, BLOCK):
            x = tl.load(x_ptr + row * n + c + cols, mask=c + cols < n, other=-float("inf"))
            m2 = tl.maximum(m, tl.max(x, axis=0))
            s = s * tl.exp(m - m2) + tl.sum(tl.exp(x - m2), axis=0)
            m = m2
        y = m + tl.log(s)
    else:
        y = tl.sum(tl.load(x_ptr + row * n + cols), axis=0)
    tl.store(y_ptr + row, y)


@triton.jit
def product_and_sum(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # a running product (taped) and a running sum (a linear accumulator) in one loop
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    p = tl.full((BLOCK,), 1.0, tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    for c in range(0, n, BLOCK):
        x = tl.load(x_ptr + row * n + c + cols)
        s += x * p
        p = p * x
    tl.store(y_ptr + row * 2, tl.sum(p, axis=0))
    tl.store(y_ptr + row * 2 + 1, tl.sum(s, axis=0))


@triton.jit
def advancing_pointers(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    # a pointer tile and an int offset carried and advanced by the same step every iteration
    # (recomputed from the iteration number in the reverse loop, not taped) next to a taped value
    row = tl.program_id(0)
    p = x_ptr + row * stride + tl.arange(0, BLOCK)
    off = 0
    h = tl.zeros((BLOCK,), tl.float32)
    for c in range(0, n, BLOCK):
        x = tl.load(p, mask=off + tl.arange(0, BLOCK) < n, other=0.0)
        h = tl.sigmoid(h) * x + x
        p += BLOCK
        off += BLOCK
    tl.store(y_ptr + row * BLOCK + tl.arange(0, BLOCK), h)


@triton.jit
def causal_running_max(x_ptr, y_ptr, BLOCK: tl.constexpr):
    # a trip count that depends on the program id (a causal bound): the host sizes the tape with
    # its largest value over the grid; x is read by every program (the grid is folded for d_x)
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    for k in range(0, row + 1):
        m = tl.maximum(m, tl.load(x_ptr + k * BLOCK + cols))
    tl.store(y_ptr + row * BLOCK + cols, m)


@triton.jit
def welford_mean(x_ptr, y_ptr, N, TILE: tl.constexpr):
    # a running mean per lane (taped) and an int count tile that only feeds itself (not taped,
    # left out of the reverse loop); the trip count is tl.cdiv(N, TILE)
    row = tl.program_id(0)
    m = tl.zeros((TILE,), tl.float32)
    cnt = tl.zeros((TILE,), tl.int32)
    for step in range(0, tl.cdiv(N, TILE)):
        offs = step * TILE + tl.arange(0, TILE)
        mask = offs < N
        x = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0)
        m = tl.where(mask, m + (x - m) / (step + 1), m)
        cnt += mask.to(tl.int32)
    tl.store(y_ptr + row, tl.sum(m * cnt) / N)


@triton.jit
def taped_in_taped(x_ptr, y_ptr, R, C, BLOCK: tl.constexpr):
    # a recurrence over rows whose input is each row's log-sum-exp, itself computed online:
    # a taped loop inside a taped loop
    b = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    h = 0.0
    for r in range(0, R):
        m = -float("inf")
        s = 0.0
        for c in range(0, C, BLOCK):
            x = tl.load(x_ptr + (b * R + r) * C + c + cols, mask=c + cols < C, other=-float("inf"))
            m2 = tl.maximum(m, tl.max(x, axis=0))
            s = s * tl.exp(m - m2) + tl.sum(tl.exp(x - m2), axis=0)
            m = m2
        h = tl.sigmoid(h) * (m + tl.log(s))
    tl.store(y_ptr + b, h)


@triton.jit
def recurrence_fp16(x_ptr, y_ptr, T, BLOCK: tl.constexpr):
    # an fp16 carried tile: the tape holds it in fp32 (exact), the reverse loop casts it back
    cols = tl.arange(0, BLOCK)
    h = tl.zeros((BLOCK,), tl.float16)
    for t in range(0, T):
        x = tl.load(x_ptr + t * BLOCK + cols)
        h = (tl.sigmoid(h.to(tl.float32)) * x.to(tl.float32) + 0.25).to(tl.float16)
    tl.store(y_ptr + cols, h)


@triton.jit
def swap_loop(x_ptr, w_ptr, y_ptr, T, BLOCK: tl.constexpr):
    # b is read only by the yield (a, b = b, f(a)): not recorded, but its adjoint is carried
    cols = tl.arange(0, BLOCK)
    a = tl.load(x_ptr + cols)
    b = tl.load(x_ptr + BLOCK + cols)
    for t in range(0, T):
        w = tl.load(w_ptr + t * BLOCK + cols)
        a, b = b, tl.sigmoid(a) * w
    tl.store(y_ptr + cols, a + 2 * b)


@triton.jit
def down_loop(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # a negative step: trips = cdiv(max(lb - ub, 0), -step)
    cols = tl.arange(0, BLOCK)
    h = tl.zeros((BLOCK,), tl.float32)
    for c in range(n - BLOCK, -1, -BLOCK):
        x = tl.load(x_ptr + c + cols)
        h = tl.sigmoid(h) * x + x
    tl.store(y_ptr + cols, h)
# ROUNDTRIP
