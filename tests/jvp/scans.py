# RUN: jvp %s:recurrence --sig 'a_ptr=*fp32,b_ptr=*fp32,h_ptr=*fp32,T=i32,BLOCK=16,REVERSE=False' --wrt a_ptr,b_ptr --out h_ptr
# RUN: jvp %s:recurrence --sig 'a_ptr=*fp32,b_ptr=*fp32,h_ptr=*fp32,T=i32,BLOCK=16,REVERSE=True' --wrt b_ptr --out h_ptr --ir
# RUN: jvp %s:softmax_scan --sig 'x_ptr=*fp32,y_ptr=*fp32,T=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: jvp %s:cumprod_rows --sig 'x_ptr=*fp32,y_ptr=*fp32,T=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: jvp %s:topk_rows --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=16,K=4' --wrt x_ptr --out y_ptr
# Scans in forward mode are scans over dual numbers: each float slot gets a tangent slot, and the
# combine function is differentiated in forward mode (its tangent is J_a f * ta + J_b f * tb, again
# associative), so any combine function works: a linear recurrence (reverse= kept), an online
# softmax denominator (a combine reverse mode does not recognize), tl.cumprod (the scan
# (a, ta), (b, tb) -> (a*b, ta*b + a*tb): exact where x has zeros).  tl.topk's tangents follow the
# values to their ranks.
import triton
import triton.language as tl


@triton.jit
def first_order(a1, b1, a2, b2):
    return a1 * a2, a2 * b1 + b2


@triton.jit
def recurrence(a_ptr, b_ptr, h_ptr, T, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    t = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + t, mask=t < T, other=1.0)
    b = tl.load(b_ptr + t, mask=t < T, other=0.0)
    _, h = tl.associative_scan((a, b), 0, first_order, reverse=REVERSE)
    tl.store(h_ptr + t, h, mask=t < T)


@triton.jit
def online_max_sum(m1, s1, m2, s2):
    # (running max, sum of exp(x - max)): merging two parts rescales the sums to the larger max
    m = tl.maximum(m1, m2)
    return m, s1 * tl.exp(m1 - m) + s2 * tl.exp(m2 - m)


@triton.jit
def softmax_scan(x_ptr, y_ptr, T, BLOCK: tl.constexpr):
    t = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + t, mask=t < T, other=-float("inf"))
    m, s = tl.associative_scan((x, tl.where(t < T, 1.0, 0.0)), 0, online_max_sum)
    tl.store(y_ptr + t, m + tl.log(s), mask=t < T)  # the running log-sum-exp


@triton.jit
def cumprod_rows(x_ptr, y_ptr, T, BLOCK: tl.constexpr):
    t = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + t, mask=t < T, other=1.0)
    tl.store(y_ptr + t, tl.cumprod(x, 0), mask=t < T)


@triton.jit
def topk_rows(x_ptr, y_ptr, BLOCK: tl.constexpr, K: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
    tl.store(y_ptr + tl.program_id(0) * K + tl.arange(0, K), tl.topk(x * x, K))
