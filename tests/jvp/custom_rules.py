# RUN: jvp %s:softplus_rows --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr --rules tests/rules/custom_rules_jvp.py
# RUN: jvp %s:scale_rows --sig 'x_ptr=*fp32,k_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr,k_ptr --out y_ptr --rules tests/rules/custom_rules_jvp.py
# RUN: jvp %s:clip_ste --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr --rules tests/rules/custom_rules_jvp.py
# Custom forward-mode rules (@kad.jvp_of in tests/rules/custom_rules_jvp.py, which these kernels never
# import): the rule's body computes the helper's tangent from its arguments and theirs; the helper's
# own (automatic) tangent is not used.  softplus_naive has a vjp rule too (reverse mode uses that one),
# scale_by takes two float arguments, clip01 has a straight-through jvp rule only.
import triton
import triton.language as tl


@triton.jit
def softplus_naive(x):
    return tl.log(1.0 + tl.exp(x))


@triton.jit
def softplus_rows(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, softplus_naive(x) * 2.0, mask=offs < n)


@triton.jit
def scale_by(x, k):
    return x * k


@triton.jit
def scale_rows(x_ptr, k_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    k = tl.load(k_ptr)
    tl.store(y_ptr + offs, scale_by(x, k), mask=offs < n)


@triton.jit
def clip01(x):
    return tl.minimum(tl.maximum(x, 0.0), 1.0)


@triton.jit
def clip_ste(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, clip01(x), mask=offs < n)
