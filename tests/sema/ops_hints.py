# Hints and checks: multiple_of / max_contiguous kept as IR ops,
# max_constancy ignored, static_assert / static_print / debug_barrier leave
# no IR, device_assert becomes an assert (with a mask folded in).
# RUN: ir %s:hint_kernel --sig 'x_ptr=*fp32,n=i32,BLOCK=16'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def hint_kernel(x_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")
    tl.static_print("BLOCK is", BLOCK)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = tl.multiple_of(offs, BLOCK)
    offs = tl.max_contiguous(offs, [BLOCK])
    offs = tl.max_constancy(offs, 1)
    tl.device_assert(n > 0, "n must be positive")
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.device_assert(x == x, "no NaN", mask=mask)
    tl.debug_barrier()
    tl.store(x_ptr + offs, x, mask=mask)
