"""Kernels whose proofs must not depend on how the grid is spelled (issue 33, item 4).

rotary_th / rotary_ht: a rotary embedding on x[t, h, 0:D] that rotates the
two halves of each head in place-like fashion (two loads, two stores of one
output with x's strides); the first launches on grid (tokens, heads), the
second on grid (heads, tokens).  The stores' distinctness across programs
holds for either axis order: it follows from the strides' magnitudes.

swizzled_tiles: a persistent tile loop whose tile ids come from the grouped
GEMM ordering (quotient and remainder by the group width, a remainder by the
group size); persistent_tiles: the same without the grouping.
"""
import triton
import triton.language as tl


@triton.jit
def rotary_th(x_ptr, cos_ptr, sin_ptr, y_ptr, stride_t, stride_h, HALF: tl.constexpr):
    t = tl.program_id(0)
    h = tl.program_id(1)
    offs = tl.arange(0, HALF)
    base = t * stride_t + h * stride_h
    x1 = tl.load(x_ptr + base + offs)
    x2 = tl.load(x_ptr + base + HALF + offs)
    c = tl.load(cos_ptr + t * HALF + offs)
    s = tl.load(sin_ptr + t * HALF + offs)
    tl.store(y_ptr + base + offs, x1 * c - x2 * s)
    tl.store(y_ptr + base + HALF + offs, x2 * c + x1 * s)


@triton.jit
def rotary_ht(x_ptr, cos_ptr, sin_ptr, y_ptr, stride_t, stride_h, HALF: tl.constexpr):
    h = tl.program_id(0)
    t = tl.program_id(1)
    offs = tl.arange(0, HALF)
    base = t * stride_t + h * stride_h
    x1 = tl.load(x_ptr + base + offs)
    x2 = tl.load(x_ptr + base + HALF + offs)
    c = tl.load(cos_ptr + t * HALF + offs)
    s = tl.load(sin_ptr + t * HALF + offs)
    tl.store(y_ptr + base + offs, x1 * c - x2 * s)
    tl.store(y_ptr + base + HALF + offs, x2 * c + x1 * s)


@triton.jit
def persistent_tiles(a_ptr, c_ptr, M, N, stride_am, stride_cm, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_tiles = num_pid_m * num_pid_n
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    for tile in range(pid, num_tiles, nprog):
        pid_m = tile // num_pid_n
        pid_n = tile % num_pid_n
        om = pid_m * BM + rm
        on = pid_n * BN + rn
        m = (om[:, None] < M) & (on[None, :] < N)
        a = tl.load(a_ptr + om[:, None] * stride_am + on[None, :], mask=m, other=0.0)
        tl.store(c_ptr + om[:, None] * stride_cm + on[None, :], tl.sin(a) * a, mask=m)


@triton.jit
def swizzled_tiles(a_ptr, c_ptr, M, N, stride_am, stride_cm, BM: tl.constexpr, BN: tl.constexpr,
                   GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_tiles = num_pid_m * num_pid_n
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    for tile in range(pid, num_tiles, nprog):
        width = GROUP_M * num_pid_n
        group_id = tile // width
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (tile % group_size_m)
        pid_n = (tile % width) // group_size_m
        om = pid_m * BM + rm
        on = pid_n * BN + rn
        m = (om[:, None] < M) & (on[None, :] < N)
        a = tl.load(a_ptr + om[:, None] * stride_am + on[None, :], mask=m, other=0.0)
        tl.store(c_ptr + om[:, None] * stride_cm + on[None, :], tl.sin(a) * a, mask=m)


@triton.jit
def swizzled_tall_tiles(a_ptr, c_ptr, M, N, stride_am, stride_cm, BM: tl.constexpr, BN: tl.constexpr,
                        GROUP_M: tl.constexpr):
    # wrong on purpose: each tile stores 2*BM rows from pid_m*BM, so neighbouring tiles overlap
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_tiles = num_pid_m * num_pid_n
    rm = tl.arange(0, 2 * BM)
    rn = tl.arange(0, BN)
    for tile in range(pid, num_tiles, nprog):
        width = GROUP_M * num_pid_n
        group_id = tile // width
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (tile % group_size_m)
        pid_n = (tile % width) // group_size_m
        om = pid_m * BM + rm
        on = pid_n * BN + rn
        m = (om[:, None] < M) & (on[None, :] < N)
        a = tl.load(a_ptr + om[:, None] * stride_am + on[None, :], mask=m, other=0.0)
        tl.store(c_ptr + om[:, None] * stride_cm + on[None, :], tl.sin(a) * a, mask=m)


@triton.jit
def swizzled_past_the_tiles(a_ptr, c_ptr, M, N, stride_am, stride_cm, BM: tl.constexpr, BN: tl.constexpr,
                            GROUP_M: tl.constexpr):
    # wrong on purpose: tile ids run a row of tiles past num_pid_m * num_pid_n, where the
    # group size is 0 or negative and the map tile -> (pid_m, pid_n) is no longer a bijection
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_tiles = num_pid_m * num_pid_n + num_pid_n
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    for tile in range(pid, num_tiles, nprog):
        width = GROUP_M * num_pid_n
        group_id = tile // width
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (tile % group_size_m)
        pid_n = (tile % width) // group_size_m
        om = pid_m * BM + rm
        on = pid_n * BN + rn
        m = (om[:, None] < M) & (on[None, :] < N)
        a = tl.load(a_ptr + om[:, None] * stride_am + on[None, :], mask=m, other=0.0)
        tl.store(c_ptr + om[:, None] * stride_cm + on[None, :], tl.sin(a) * a, mask=m)


@triton.jit
def swizzled_tiles_tutorial(a_ptr, c_ptr, M, N, stride_am, stride_cm, BM: tl.constexpr, BN: tl.constexpr,
                            GROUP_M: tl.constexpr):
    # the row spelled as in Triton's matmul tutorial: first_pid_m + (tile % width) % group_size_m
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_tiles = num_pid_m * num_pid_n
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    for tile in range(pid, num_tiles, nprog):
        width = GROUP_M * num_pid_n
        group_id = tile // width
        first_pid_m = group_id * GROUP_M
        group_size_m = tl.minimum(GROUP_M, num_pid_m - first_pid_m)
        pid_m = first_pid_m + ((tile % width) % group_size_m)
        pid_n = (tile % width) // group_size_m
        om = pid_m * BM + rm
        on = pid_n * BN + rn
        m = (om[:, None] < M) & (on[None, :] < N)
        a = tl.load(a_ptr + om[:, None] * stride_am + on[None, :], mask=m, other=0.0)
        tl.store(c_ptr + om[:, None] * stride_cm + on[None, :], tl.sin(a) * a, mask=m)
