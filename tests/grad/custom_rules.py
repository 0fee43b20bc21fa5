# Custom derivatives (docs/AD.md "Custom derivatives"): the rules live in
# tests/rules/custom_rules_vjp.py, which this file never imports, so these
# kernels run unchanged under plain Triton.
#   lse_rows: a naive log(sum(exp(x))) helper; its rule is the stable softmax.
#   round_ste: tl.floor(x + 0.5) with a straight-through rule.
#   scaled: x / max|x| with the max marked kad.nondiff.
#   stopped: x * kad_stop_gradient(x), the helper recognised by its name.
# RUN: grad %s:lse_rows --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,N=i32,BLOCK=16' --wrt x_ptr --out y_ptr --rules tests/rules/custom_rules_vjp.py
# RUN: grad %s:lse_rows --sig 'x_ptr=*fp32,y_ptr=*fp32,N=i32,BLOCK=16' --wrt x_ptr --out y_ptr --rules tests/rules/custom_rules_vjp.py
# RUN: grad %s:round_ste --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr --rules tests/rules/custom_rules_vjp.py
# RUN: grad %s:scaled --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,N=i32,BLOCK=16' --wrt x_ptr --out y_ptr --rules tests/rules/custom_rules_vjp.py
# RUN: grad %s:stopped --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# The forward IR (custom_vjp, stop_gradient, rules): tests/sema/custom_rules_ir.py.
import triton
import triton.language as tl


@triton.jit
def lse_naive(x):
    return tl.log(tl.sum(tl.exp(x), axis=0))


@triton.jit
def lse_rows(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + offs, mask=offs < N, other=-float("inf"))
    tl.store(y_ptr + row, lse_naive(x))


@triton.jit
def round_half(x):
    return tl.floor(x + 0.5)


@triton.jit
def round_ste(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, round_half(x) * 2.0, mask=mask)


@triton.jit
def abs_max(x):
    return tl.max(tl.abs(x), axis=0)


@triton.jit
def scaled(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * N + offs, x / abs_max(x), mask=mask)


@triton.jit
def kad_stop_gradient(x):
    return x


@triton.jit
def stopped(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * kad_stop_gradient(x), mask=mask)
# ROUNDTRIP
