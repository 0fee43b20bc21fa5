# Stores and atomics to differentiated outputs that kad accepts: a
# grid-stride while loop, a `for` with a runtime positive step, the two
# branches of one `if`, atomic_add from a loop and across programs.
# RUN: grad %s:grid_stride_while --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=64' --wrt x_ptr --out y_ptr
# RUN: grad %s:grid_stride_for --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=64' --wrt x_ptr --out y_ptr
# RUN: grad %s:if_else_stores --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,flag_ptr=*i32' --wrt x_ptr --out y_ptr
# RUN: grad %s:atomic_colsum --ir --sig 'x_ptr=*fp32,out_ptr=*fp32,M=i32,BLOCK=16' --wrt x_ptr --out out_ptr
import triton
import triton.language as tl


@triton.jit
def grid_stride_while(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    while start < n:
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(y_ptr + offs, tl.exp(x) * 0.5, mask=offs < n)
        start += tl.num_programs(0) * BLOCK


@triton.jit
def grid_stride_for(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    for start in range(tl.program_id(0) * BLOCK, n, tl.num_programs(0) * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(y_ptr + offs, x * x, mask=offs < n)


@triton.jit
def if_else_stores(x_ptr, y_ptr, flag_ptr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    if tl.load(flag_ptr + pid) > 0:
        tl.store(y_ptr + pid, x * x)
    else:
        tl.store(y_ptr + pid, tl.sin(x))


@triton.jit
def atomic_colsum(x_ptr, out_ptr, M, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    for r in range(tl.program_id(0), M, tl.num_programs(0)):
        x = tl.load(x_ptr + r * BLOCK + cols)
        tl.atomic_add(out_ptr + cols, x * x)
# ROUNDTRIP
