# Stores to outputs that kad refuses: an output both stored and
# atomically added to, a used atomic result, every lane of a store writing
# the same address (y_ptr + offs * 0).  (Several store sites:
# store_twice.py, store_before_loop.py; iterations of a loop that write one element,
# the last write winning, are differentiated: tests/kernels/loop_store.py.)
# RUN: grad %s:store_and_atomic --ir --sig 'x_ptr=*fp32,y_ptr=*fp32' --wrt x_ptr --out y_ptr
# RUN: grad %s:same_address_lanes --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=8' --wrt x_ptr --out y_ptr
import triton
import triton.language as tl


@triton.jit
def store_and_atomic(x_ptr, y_ptr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    tl.store(y_ptr + pid, x)
    old = tl.atomic_add(y_ptr + pid, x * x)
    tl.store(y_ptr + pid + 1, old)


@triton.jit
def same_address_lanes(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs * 0, tl.sum(x * x, axis=0) + offs * 0.0)
