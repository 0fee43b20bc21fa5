# Without -I the package is not found: the error names the module and -I.
# RUN: ir %s:k --sig 'x_ptr=*fp32'
import triton
import triton.language as tl

import kadpkg.ops.utils as U
from kadpkg.consts import HALF


@triton.jit
def k(x_ptr):
    tl.store(x_ptr, U.calc(1.0, 2.0) * HALF)
