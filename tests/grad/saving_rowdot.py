# RUN: grad %s:row_dot --ir --save-forward --sig 'x_ptr=*bf16,w_ptr=*bf16,y_ptr=*fp32,n_cols=i32,stride=i32,BLOCK=16' --wrt x_ptr,w_ptr --out y_ptr
# ROUNDTRIP
# The saving forward (docs/AD.md, "Saved loop results"): the kernel plus the kad_saved parameter
# and, after the loop, a store of the results the rest reads (a bf16 tile, widened to fp32, then
# a scalar: the slot's offsets 0 and 16) into this program's slot of 17 elements, at
# program * 17 with program = pid0 + G0 * (pid1 + G1 * pid2).
import triton
import triton.language as tl


@triton.jit
def row_dot(x_ptr, w_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.bfloat16)
    total = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
        w = tl.load(w_ptr + cols, mask=m, other=0.0)
        acc += x * w
        total += tl.sum(x.to(tl.float32), axis=0)
    y = tl.sigmoid(acc.to(tl.float32)) * total
    tl.store(y_ptr + row * BLOCK + tl.arange(0, BLOCK), y)
