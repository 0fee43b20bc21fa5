# RUN: emit %s:collatz_kernel --sig 'x_ptr=*i32,steps_ptr=*i32,n=i32'
# A while loop with two carried scalars and integer // and % (C semantics in Triton).
import triton
import triton.language as tl


@triton.jit
def collatz_kernel(x_ptr, steps_ptr, n):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    steps = 0
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps += 1
    tl.store(steps_ptr + pid, steps)
