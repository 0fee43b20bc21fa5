import triton
import triton.language as tl

import kadpkg.ops.utils as U
from kadpkg import ops
from kadpkg.consts import ACC_DTYPE, MODE, NOTHING, USE_SHIFT
from kadpkg.ops import reexported_exp
from kadpkg.ops.utils import host_tanh, libentry

from . import utils
from .utils import calc, exp, silu
from ..consts import BLOCK_MAX, SCALE


@triton.jit
def rel_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # relative imports, a helper and an alias from another module, constants
    tl.static_assert(BLOCK <= BLOCK_MAX)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(ACC_DTYPE)
    y = tl.load(y_ptr + offs, mask=m)
    r = calc(x, y) + exp(x) * SCALE
    if USE_SHIFT:
        r = r + 1.0
    if NOTHING is None:
        r = r - 0.25
    tl.store(out_ptr + offs, r, mask=m)


@triton.jit
def mod_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # module attributes: `import a.b as U`, `from pkg import ops`, `from . import utils`
    offs = tl.program_id(0) * U.BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    r = U.calc(x, x) + ops.utils.safe_exp(x) + utils.silu(x) + reexported_exp(x)
    if MODE == "tanh":
        r = r + host_tanh(x)
    tl.store(out_ptr + offs, r, mask=m)


def _plain_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, silu(x) * 3.0, mask=m)


# kernels made by calls
call_kernel = triton.jit(_plain_kernel, do_not_specialize=["n"])
heur_kernel = triton.heuristics({"BLOCK": lambda args: 64})(triton.jit(_plain_kernel))
tuned_kernel = triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})],
                               key=["n"])(call_kernel)


@libentry()
@triton.jit
def wrapped_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # an unknown wrapper decorator above @triton.jit
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, silu(x) + utils.safe_exp(x), mask=m)
