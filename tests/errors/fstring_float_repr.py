# A constexpr float in an f-string field and in a message prints as Python's repr: the shortest
# digits that read back, fixed notation for exponents in [-4, 16), else scientific with a 2+
# digit exponent (the IR printer's ir_format_float, which sema_const.c uses for repr()).
# RUN: ir %s:floats --sig 'x_ptr=*fp32,A=0.1,B=3.0'
# RUN: ir %s:floats --sig 'x_ptr=*fp32,A=1e-7,B=1e22'
# RUN: ir %s:floats --sig 'x_ptr=*fp32,A=123456789012345678.0,B=-0.0'
# RUN: ir %s:floats --sig 'x_ptr=*fp32,A=2.5e-5,B=1e16'
import triton
import triton.language as tl


@triton.jit
def floats(x_ptr, A: tl.constexpr, B: tl.constexpr):
    tl.static_assert(A > 1e300, f"{A} {B} {A * B} {A / 3} {-A} {B:} {A!r}")
