# A grid-stride persistent kernel: each program accumulates the rows
# pid, pid + P, pid + 2P, ... (P = tl.num_programs(0)) into a private partial
# sum of column blocks, then writes it to its own slot.  Which rows one
# program adds, and in what order, depends on the grid: batch-variant.  The
# second kernel sums whole columns, each in one program in row order: clean.
# The third strides by a constexpr from the program id up to n_rows: the
# rows one program accumulates depend on the batch size n_rows.
# RUN: audit %s:persistent_colsum --sig 'x_ptr=*fp32,part_ptr=*fp32,n_rows=i32,BLOCK=64'
# RUN: audit %s:serial_colsum --sig 'x_ptr=*fp32,part_ptr=*fp32,n_rows=i32,BLOCK=64'
# RUN: audit %s:strided_colsum --sig 'x_ptr=*fp32,part_ptr=*fp32,n_rows=i32,STEP=8,BLOCK=64'
import triton
import triton.language as tl


@triton.jit
def persistent_colsum(x_ptr, part_ptr, n_rows, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for row in range(pid, n_rows, tl.num_programs(0)):
        acc += tl.load(x_ptr + row * BLOCK + cols)
    tl.store(part_ptr + pid * BLOCK + cols, acc)


@triton.jit
def serial_colsum(x_ptr, part_ptr, n_rows, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    row = 0
    while row < n_rows:
        acc += tl.load(x_ptr + row * BLOCK * tl.num_programs(0) + cols)
        row += 1
    tl.store(part_ptr + cols, acc)


@triton.jit
def strided_colsum(x_ptr, part_ptr, n_rows, STEP: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for row in range(pid, n_rows, STEP):
        acc += tl.load(x_ptr + row * BLOCK + cols)
    tl.store(part_ptr + pid * BLOCK + cols, acc)
