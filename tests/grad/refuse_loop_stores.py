# Stores to outputs that kad refuses: iterations of a loop that may write
# the same address (the step does not exceed the span of the offsets, or
# its sign is unknown, or the offsets tile was hoisted out of the loop so
# that its lanes overlap the next iteration's), an output both stored and
# atomically added to, a used atomic result, every lane of a store writing
# the same address (y_ptr + offs * 0).  Several store sites:
# refuse_store_twice.py.
# RUN: grad %s:short_stride_while --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=64' --wrt x_ptr --out y_ptr
# RUN: grad %s:unknown_step_for --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,step=i32,BLOCK=64' --wrt x_ptr --out y_ptr
# RUN: grad %s:store_and_atomic --ir --sig 'x_ptr=*fp32,y_ptr=*fp32' --wrt x_ptr --out y_ptr
# RUN: grad %s:hoisted_arange_for --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=8' --wrt x_ptr --out y_ptr
# RUN: grad %s:same_address_lanes --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=8' --wrt x_ptr --out y_ptr
import triton
import triton.language as tl


@triton.jit
def short_stride_while(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    while start < n:
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(y_ptr + offs, x * 2.0, mask=offs < n)
        start += tl.num_programs(0) * 32


@triton.jit
def unknown_step_for(x_ptr, y_ptr, n, step, BLOCK: tl.constexpr):
    for start in range(0, n, step):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(y_ptr + offs, x * 2.0, mask=offs < n)


@triton.jit
def store_and_atomic(x_ptr, y_ptr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    tl.store(y_ptr + pid, x)
    old = tl.atomic_add(y_ptr + pid, x * x)
    tl.store(y_ptr + pid + 1, old)


@triton.jit
def hoisted_arange_for(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    for i in range(0, 4):
        tl.store(y_ptr + i + offs, x * (i + 1.0))


@triton.jit
def same_address_lanes(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs * 0, tl.sum(x * x, axis=0) + offs * 0.0)
