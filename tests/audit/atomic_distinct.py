# Float atomics into distinct addresses: every element receives at most one
# add per launch, so the order of the atomics cannot change the result (a
# note, not a finding).  The scalar-address atomic of the second kernel is a
# split reduction (every program adds into out_ptr[0]): nondeterministic.
# RUN: audit %s:add_into --sig 'x_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=256'
# RUN: audit %s:total --sig 'x_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=256'
# RUN: audit %s:count --sig 'x_ptr=*fp32,cnt_ptr=*i32,n=i32,BLOCK=256'
import triton
import triton.language as tl


@triton.jit
def add_into(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@triton.jit
def total(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))


@triton.jit
def count(x_ptr, cnt_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(cnt_ptr, tl.sum((x > 0).to(tl.int32), axis=0))
