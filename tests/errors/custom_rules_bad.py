# Malformed custom rules (rules files in tests/rules/): a rule with the wrong
# number of parameters and a rule for a name that is not a helper
# (custom_rules_bad_decl.py, reported whatever kernel is specialized); a
# helper taking a pointer, a rule returning too few gradients or a gradient
# for an integer argument, a helper with a rule returning an int
# (custom_rules_bad_use.py, reported at the call).
# RUN: ir %s:plain --sig 'x_ptr=*fp32,n=i32,BLOCK=16' --rules tests/rules/custom_rules_bad_decl.py
# RUN: ir %s:ptr_arg --sig 'x_ptr=*fp32,n=i32,BLOCK=16' --rules tests/rules/custom_rules_bad_use.py
# RUN: ir %s:few_grads --sig 'x_ptr=*fp32,n=i32,BLOCK=16' --rules tests/rules/custom_rules_bad_use.py
# RUN: ir %s:int_grad --sig 'x_ptr=*fp32,n=i32,BLOCK=16' --rules tests/rules/custom_rules_bad_use.py
# RUN: ir %s:int_result --sig 'x_ptr=*fp32,n=i32,BLOCK=16' --rules tests/rules/custom_rules_bad_use.py
import triton
import triton.language as tl


@triton.jit
def twice(x):
    return x * 2.0


@triton.jit
def load_twice(p, mask):
    return tl.load(p, mask=mask) * 2.0


@triton.jit
def scale_by(x, k):
    return x * k


@triton.jit
def shifted(x, k):
    return x + k


@triton.jit
def count(x):
    return tl.sum((x > 0).to(tl.int32), axis=0)


@triton.jit
def plain(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, twice(x), mask=offs < n)


@triton.jit
def ptr_arg(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, load_twice(x_ptr + offs, offs < n), mask=offs < n)


@triton.jit
def few_grads(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, scale_by(x, 3.0), mask=offs < n)


@triton.jit
def int_grad(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, shifted(x, offs), mask=offs < n)


@triton.jit
def int_result(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, x * count(x), mask=offs < n)
