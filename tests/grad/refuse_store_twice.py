# Several stores to one output that kad refuses: it cannot tell which
# write reaches the output last.  Accepted are only stores through the same
# pointer value in one block (store_twice.py) and stores in the two
# branches of one `if` (loop_stores.py).
#   different_ptrs: y_ptr + pid and y_ptr + 2 * pid meet at pid == 0 (and
#     across programs): equal addresses through different values are not
#     analysed.
#   before_loop: a store before a loop and one inside it.
#   before_if, after_if: the same pointer value, but one store runs
#     conditionally (different blocks).
# RUN: grad %s:different_ptrs --ir --sig 'x_ptr=*fp32,y_ptr=*fp32' --wrt x_ptr --out y_ptr
# RUN: grad %s:before_loop --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# RUN: grad %s:before_if --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,flag=i32' --wrt x_ptr --out y_ptr
# RUN: grad %s:after_if --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,flag=i32' --wrt x_ptr --out y_ptr
import triton
import triton.language as tl


@triton.jit
def different_ptrs(x_ptr, y_ptr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    tl.store(y_ptr + pid, x)
    tl.store(y_ptr + 2 * pid, x * x)


@triton.jit
def before_loop(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols)
    tl.store(y_ptr + cols, x)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2.0)


@triton.jit
def before_if(x_ptr, y_ptr, flag):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    tl.store(y_ptr + pid, x)
    if flag > 0:
        tl.store(y_ptr + pid, x * x)


@triton.jit
def after_if(x_ptr, y_ptr, flag):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    if flag > 0:
        tl.store(y_ptr + pid, x)
    tl.store(y_ptr + pid, x * x)
