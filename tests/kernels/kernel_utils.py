"""Small @triton.jit helpers shared by kernels of this package.

Nothing here is a kernel; kernels import the helpers with
`from .kernel_utils import ...`.
"""
import triton
import triton.language as tl


@triton.jit
def relu(x):
    return tl.maximum(x, 0.0)


@triton.jit
def squared_relu(x):
    r = relu(x)
    return r * r


@triton.jit
def silu(x):
    return x * tl.sigmoid(x)


@triton.jit
def row_col_offsets(pid_m, pid_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Row and column indices of the (pid_m, pid_n) tile."""
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    return rows, cols
