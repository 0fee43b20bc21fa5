# RUN: emit %s:carry --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,m=i32,k=i32,BLOCK=16'
# RUN: grad %s:carry --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,m=i32,k=i32,BLOCK=16' --wrt x_ptr --out y_ptr
# Scalars computed from int parameters only are constexprs when Triton specializes a parameter
# equal to 1: the emitted code converts them with tl.cast (a constexpr has no .to()) and copies
# them into a loop-carried or if-yielded variable with tl.cast (Triton refuses to reassign a
# constexpr in a loop, and an if whose branches give a constexpr and a tensor).
import triton
import triton.language as tl


@triton.jit
def carry(x_ptr, y_ptr, n, m, k, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = n
    for i in range(0, k):
        acc = acc * 2 + i
    if pid > 3:
        v = m
    else:
        v = n + 1
    j = n
    while j < k:
        j = j + m
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * acc.to(tl.float32) + v + j)
