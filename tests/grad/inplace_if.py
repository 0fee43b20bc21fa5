# In-place loads under control flow: a load from a buffer in both --wrt and
# --out inside a runtime `if` (then or else, nested ifs too) whose store
# through the same pointer value and mask comes after the `if` in an
# enclosing block, so it runs whenever the load did.
#   axpby: y = alpha * x + beta * y, y read only when beta != 0.
#   nested: the load two ifs deep, the store after both.
#   both_branches: each branch loads, one store after the if.
# RUN: grad %s:axpby --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,alpha=fp32,beta=fp32,BLOCK=16' --wrt x_ptr,y_ptr --out y_ptr
# RUN: check %s:axpby --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,alpha=fp32,beta=fp32,BLOCK=16' --wrt x_ptr,y_ptr --out y_ptr --grid 3 --shape x_ptr=40 --shape y_ptr=40 --arg n=37 --arg alpha=1.5 --arg beta=-0.75
# RUN: check %s:axpby --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,alpha=fp32,beta=fp32,BLOCK=16' --wrt x_ptr,y_ptr --out y_ptr --grid 3 --shape x_ptr=40 --shape y_ptr=40 --arg n=37 --arg alpha=1.5 --arg beta=0
# RUN: check %s:nested --sig 'y_ptr=*fp32,n=i32,a=fp32,b=fp32,BLOCK=16' --wrt y_ptr --out y_ptr --grid 3 --shape y_ptr=40 --arg n=37 --arg a=0.5 --arg b=2
# RUN: check %s:nested --sig 'y_ptr=*fp32,n=i32,a=fp32,b=fp32,BLOCK=16' --wrt y_ptr --out y_ptr --grid 3 --shape y_ptr=40 --arg n=37 --arg a=0.5 --arg b=-2
# RUN: check %s:both_branches --sig 'y_ptr=*fp32,n=i32,a=fp32,BLOCK=16' --wrt y_ptr --out y_ptr --grid 3 --shape y_ptr=40 --arg n=37 --arg a=0.5
# RUN: check %s:both_branches --sig 'y_ptr=*fp32,n=i32,a=fp32,BLOCK=16' --wrt y_ptr --out y_ptr --grid 3 --shape y_ptr=40 --arg n=37 --arg a=-0.5
import triton
import triton.language as tl


@triton.jit
def axpby(x_ptr, y_ptr, n, alpha, beta, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if beta == 0.0:
        out = alpha * x
    else:
        y = tl.load(y_ptr + offs, mask=mask)
        out = alpha * x + beta * y
    tl.store(y_ptr + offs, out, mask=mask)


@triton.jit
def nested(y_ptr, n, a, b, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    out = tl.zeros((BLOCK,), tl.float32) + a
    if a > 0.0:
        if b > 0.0:
            y = tl.load(y_ptr + offs, mask=mask)
            out = y * y * b
    tl.store(y_ptr + offs, out, mask=mask)


@triton.jit
def both_branches(y_ptr, n, a, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = y_ptr + offs
    if a > 0.0:
        out = tl.exp(tl.load(p, mask=mask)) * a
    else:
        out = tl.load(p, mask=mask) * a
    tl.store(p, out, mask=mask)
# ROUNDTRIP
