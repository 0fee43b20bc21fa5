# Conditional expressions (constexpr and runtime conditions), chained
# comparisons, `and`/`or` with constexpr short-circuit.
# RUN: ir %s:ifexp_kernel --sig 'x_ptr=*fp32,n=i32,lo=i32,USE_MAX=True,BLOCK=16'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def ifexp_kernel(x_ptr, n, lo, USE_MAX: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.maximum(x, 0.0) if USE_MAX else x
    s = 2.0 if pid > 0 else 0.5
    inside = lo <= pid < n
    flag = USE_MAX or pid > 3
    both = BLOCK > 8 and pid < n
    tl.store(x_ptr + offs, y * s, mask=(offs < n) & inside & flag & both)
