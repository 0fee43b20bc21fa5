# Buffers updated in place: a name given both to --wrt and to --out.  The
# backward gets one gradient buffer d_<name>: on entry the gradient of the
# value after the launch, on exit that of the value before it (the store
# reads its gradient and clears it; the load adds the read's gradient).
#   scale: x = 2 * x under a mask (the masked-off tail passes through).
#   state: s = a * s + b, s updated in place, a and b inputs.
#   bias_add: y += b with b a constant (only y differentiated).
#   rotary: one row of q rotated in place, its two halves as a (2, HALF)
#     tile loaded and stored through the same pointer.
# RUN: grad %s:scale --ir --sig 'x_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out x_ptr
# RUN: grad %s:state --sig 's_ptr=*fp32,a_ptr=*fp32,b_ptr=*fp32,n=i32,BLOCK=16' --wrt s_ptr,a_ptr,b_ptr --out s_ptr
# RUN: grad %s:bias_add --ir --sig 'y_ptr=*fp32,b_ptr=*fp32,N=i32,BLOCK=16' --wrt y_ptr --out y_ptr
# RUN: grad %s:rotary --ir --sig 'q_ptr=*fp32,cos_ptr=*fp32,sin_ptr=*fp32,HALF=8' --wrt q_ptr,cos_ptr,sin_ptr --out q_ptr
import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, x * 2.0, mask=offs < n)


@triton.jit
def state(s_ptr, a_ptr, b_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    s = tl.load(s_ptr + offs, mask=m)
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    tl.store(s_ptr + offs, a * s + b, mask=m)


@triton.jit
def bias_add(y_ptr, b_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    y = tl.load(y_ptr + row * N + cols, mask=m)
    b = tl.load(b_ptr + cols, mask=m)
    tl.store(y_ptr + row * N + cols, y + b, mask=m)


@triton.jit
def rotary(q_ptr, cos_ptr, sin_ptr, HALF: tl.constexpr):
    row = tl.program_id(0)
    half = tl.arange(0, 2)[:, None]
    cols = tl.arange(0, HALF)[None, :]
    ptrs = q_ptr + row * 2 * HALF + half * HALF + cols
    q = tl.load(ptrs)
    x1 = tl.sum(tl.where(half == 0, q, 0.0), axis=0)
    x2 = tl.sum(tl.where(half == 1, q, 0.0), axis=0)
    c = tl.load(cos_ptr + row * HALF + tl.arange(0, HALF))
    s = tl.load(sin_ptr + row * HALF + tl.arange(0, HALF))
    o1 = x1 * c - x2 * s
    o2 = x2 * c + x1 * s
    tl.store(ptrs, tl.where(half == 0, o1[None, :], o2[None, :]))
# ROUNDTRIP
