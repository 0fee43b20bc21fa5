# A runtime-bounded `for` becomes an IR `for` whose loop-carried variables
# (assigned in the body, defined before it) are iter_args.  Names first
# defined inside the loop are not visible after it.
# RUN: ir %s:row_sum_kernel --sig 'x_ptr=*fp16,out_ptr=*fp32,n_cols=i32,stride=i64,BLOCK=128'
# ROUNDTRIP
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    count = 0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
        count += 1
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr + row, total / count)
