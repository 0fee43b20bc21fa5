# `kad grad --report`: per taped loop, what is taped (values, bytes per iteration, trip count or
# capacity), what is recomputed, the linear accumulators, the checkpoint schedule and the
# recompute factor (the same text as the generated module's header).  A `for` loop with a taped
# value, a linear accumulator and an advancing pointer; `while` loops (a counter bound in the
# condition, a `<=` bound with a step of 2, no bound: the default capacity and --while-cap); the
# IR of a `while` loop's tape (its capacity, the overflow flag, the counted iterations).
# RUN: grad %s:mixed --report --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: grad %s:newton_sqrt --report --sig 'a_ptr=*fp32,y_ptr=*fp32,n=i32,max_it=i32,tol=fp32,BLOCK=8' --wrt a_ptr --out y_ptr
# RUN: grad %s:newton_sqrt --ir --sig 'a_ptr=*fp32,y_ptr=*fp32,n=i32,max_it=i32,tol=fp32,BLOCK=8' --wrt a_ptr --out y_ptr
# RUN: grad %s:halving --report --sig 'x_ptr=*fp32,y_ptr=*fp32,lim=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: grad %s:unbounded --report --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: grad %s:unbounded --report --while-cap 64 --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: check %s:halving --sig 'x_ptr=*fp32,y_ptr=*fp32,lim=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 2 --shape x_ptr=16 --shape y_ptr=16 --arg lim=9
# RUN: check %s:newton_sqrt --sig 'a_ptr=*fp32,y_ptr=*fp32,n=i32,max_it=i32,tol=fp32,BLOCK=8' --wrt a_ptr --out y_ptr --grid 2 --shape a_ptr=13 --shape y_ptr=13 --arg n=13 --arg max_it=3 --arg tol=0 --range a_ptr=1:4
# RUN: grad %s:mixed --report --tape-budget 4096 --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: check %s:mixed --tape-budget 4096 --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 2 --shape x_ptr=2x80 --shape y_ptr=2 --arg n=80
# RUN: check %s:unbounded --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 1 --shape x_ptr=8 --shape y_ptr=8 --range x_ptr=2:9
# Nesting: a `while` tape inside a linear `for` (and a loop that never runs: max_it=0), a `while`
# tape inside a checkpointed `for`, a taped `for` inside a checkpointed one.
# RUN: check %s:rows_newton --sig 'a_ptr=*fp32,y_ptr=*fp32,R=i32,max_it=i32,BLOCK=8' --wrt a_ptr --out y_ptr --grid 1 --shape a_ptr=3x8 --shape y_ptr=8 --arg R=3 --arg max_it=40 --range a_ptr=0.5:3
# RUN: check %s:rows_newton --sig 'a_ptr=*fp32,y_ptr=*fp32,R=i32,max_it=i32,BLOCK=8' --wrt a_ptr --out y_ptr --grid 1 --shape a_ptr=3x8 --shape y_ptr=8 --arg R=3 --arg max_it=0 --range a_ptr=0.5:3
# RUN: check %s:ckpt_with_while --tape-budget 100000 --sig 'a_ptr=*fp32,y_ptr=*fp32,T=i32,BLOCK=8' --wrt a_ptr --out y_ptr --grid 1 --shape a_ptr=10x8 --shape y_ptr=8 --arg T=10 --range a_ptr=0.5:3
# RUN: check %s:ckpt_nested --tape-budget 100000 --sig 'x_ptr=*fp32,y_ptr=*fp32,T=i32,C=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 1 --shape x_ptr=5x3x8 --shape y_ptr=8 --arg T=5 --arg C=3
import triton
import triton.language as tl


@triton.jit
def mixed(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    p = x_ptr + row * n + tl.arange(0, BLOCK)
    m = -float("inf")
    s = 0.0
    for start in range(0, n, BLOCK):
        x = tl.load(p)
        m = tl.maximum(m, tl.max(x, axis=0))
        s += tl.sum(x * x, axis=0)
        p += BLOCK
    tl.store(y_ptr + row, m * s)


@triton.jit
def newton_sqrt(a_ptr, y_ptr, n, max_it, tol, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs, mask=offs < n, other=1.0)
    z = a
    k = 0
    err = 1.0
    while (err > tol) & (k < max_it):
        z_new = 0.5 * (z + a / z)
        err = tl.max(tl.abs(z_new - z), axis=0)
        z = z_new
        k += 1
    tl.store(y_ptr + offs, z, mask=offs < n)


@triton.jit
def halving(x_ptr, y_ptr, lim, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    h = tl.load(x_ptr + offs)
    i = 1
    while i <= lim:
        h = tl.sin(h) * 0.9 + h * 0.1
        i += 2
    tl.store(y_ptr + offs, h)


@triton.jit
def unbounded(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs)
    big = tl.max(tl.abs(v), axis=0)
    while big > 1.0:
        v = v * 0.5
        big = big * 0.5
    tl.store(y_ptr + offs, v)


@triton.jit
def rows_newton(a_ptr, y_ptr, R, max_it, BLOCK: tl.constexpr):
    # a cube-root Newton solve per row chunk, inside a loop over the rows (a `while` tape
    # inside a linear `for`), summed into y
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for r in range(0, R):
        a = tl.load(a_ptr + r * BLOCK + offs)
        z = a
        it = 0
        err = 1.0
        while (it < max_it) & (err > 1e-7):
            step = (z * z * z - a) / (3.0 * z * z)
            z = z - step
            err = tl.max(tl.abs(step), axis=0)
            it += 1
        acc += z * (r + 1)
    tl.store(y_ptr + offs, acc)


@triton.jit
def ckpt_with_while(a_ptr, y_ptr, T, BLOCK: tl.constexpr):
    # h_t = sin(h_{t-1}) + cbrt(a_t) (Newton, a `while` tape) inside a taped (checkpointable) loop
    offs = tl.arange(0, BLOCK)
    h = tl.zeros((BLOCK,), tl.float32)
    for t in range(0, T):
        a = tl.load(a_ptr + t * BLOCK + offs)
        z = a
        it = 0
        while it < 6:
            z = z - (z * z * z - a) / (3.0 * z * z)
            it += 1
        h = tl.sin(h) * z + z
    tl.store(y_ptr + offs, h)


@triton.jit
def ckpt_nested(x_ptr, y_ptr, T, C, BLOCK: tl.constexpr):
    # a taped inner loop (running max) inside a taped outer loop (a recurrence)
    offs = tl.arange(0, BLOCK)
    h = tl.zeros((BLOCK,), tl.float32)
    for t in range(0, T):
        m = tl.full((BLOCK,), -float("inf"), tl.float32)
        for c in range(0, C):
            m = tl.maximum(m, tl.load(x_ptr + (t * C + c) * BLOCK + offs) + h)
        h = tl.sin(m)
    tl.store(y_ptr + offs, h)


@triton.jit
def decay_causal(x_ptr, y_ptr, T, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    h = tl.zeros((BLOCK,), tl.float32)
    for t in range(0, tl.minimum(T, 2 * pid + 3)):
        h = tl.sin(h) + tl.load(x_ptr + t * BLOCK + offs)
    tl.store(y_ptr + pid * BLOCK + offs, h)


# A trip count that depends on the program id under a budget: two-level checkpointing.
# RUN: grad %s:decay_causal --report --tape-budget 4096 --sig 'x_ptr=*fp32,y_ptr=*fp32,T=i32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: check %s:decay_causal --tape-budget 4096 --sig 'x_ptr=*fp32,y_ptr=*fp32,T=i32,BLOCK=8' --wrt x_ptr --out y_ptr --grid 3 --shape x_ptr=7x8 --shape y_ptr=3x8 --arg T=7
# ROUNDTRIP
