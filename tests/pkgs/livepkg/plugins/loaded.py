"""Loaded with importlib.util.module_from_spec + exec_module and never
entered in sys.modules (a plugin loader, a test harness): the kernels, their
helper and the combine_fn of their scan live in this one file."""
import triton
import triton.language as tl


@triton.jit
def cube(x):
    return x * x * x


@triton.jit
def add(a, b):
    return a + b


@triton.jit
def cube_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, cube(x) + x, mask=mask)


@triton.jit
def cumsum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.associative_scan(cube(x), 0, add)
    tl.store(out_ptr + offs, y, mask=mask)
