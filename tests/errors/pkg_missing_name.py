# Names the modules do not define: a helper and a module attribute.
# RUN: ir %s:k --sig 'x_ptr=*fp32' -I tests/pkgs
import triton
import triton.language as tl

from kadpkg.ops.utils import no_such_helper
import kadpkg.consts as C


@triton.jit
def k(x_ptr):
    tl.store(x_ptr, no_such_helper(1.0) + C.MISSING)
