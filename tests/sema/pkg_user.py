# A kernel file outside the package importing it through -I: `import a.b as
# m` then m.f(...)/m.CONST, `from pkg import submodule`, a re-export
# (kadpkg.ops re-exports safe_exp from kadpkg.ops.utils), absolute
# `from a.b import name`, a helper made jit by a call (silu).
# RUN: ir %s:user --sig 'x_ptr=*fp32,out_ptr=*fp32,n=i32' -I tests/pkgs
# RUN: grad %s:user --sig 'x_ptr=*fp32,out_ptr=*fp32,n=i32' --wrt x_ptr --out out_ptr -I tests/pkgs --ir
import triton
import triton.language as tl

import kadpkg.ops.utils as U
from kadpkg import ops, consts
from kadpkg.ops import reexported_exp
from kadpkg.ops.utils import silu


@triton.jit
def user(x_ptr, out_ptr, n):
    offs = tl.program_id(0) * U.BLOCK + tl.arange(0, U.BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = U.calc(x, x) + ops.utils.exp(x) + reexported_exp(x) + silu(x) * consts.HALF
    tl.store(out_ptr + offs, y, mask=m)
