# tl.rand / tl.randn / tl.randint on int32 offsets with a runtime and a
# constexpr seed.
# RUN: ir %s:rand_kernel --sig 'out_ptr=*fp32,seed=i32,BLOCK=16'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def rand_kernel(out_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    u = tl.rand(seed, offs)
    g = tl.randn(seed, offs)
    r = tl.randint(42, offs)
    tl.store(out_ptr + offs, u + g + r)
