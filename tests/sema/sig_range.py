# A runtime int given a range in the signature (`n=i32[1:64]`): a `range(start, n, step)` loop
# with constant start and step that runs the same 0 or 1 times for every n in the range is
# straight-line code (its variable an i32 constant: the loop's type; an i64 bound makes it i64);
# the range is kept on the parameter (`in [1, 64]`). `chunked` with n in [1, 64] and BLOCK=64:
# one trip; in [65, 128]: one or two, a loop; in [-5, 0]: no trip, the loop gone. `two_loops`:
# the loop of step 32 stays a loop for n in [1, 64], the loop of step 64 does not.
# RUN: ir %s:chunked --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32[1:64],BLOCK=64'
# RUN: ir %s:chunked --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32[65:128],BLOCK=64'
# RUN: ir %s:chunked --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32[-5:0],BLOCK=64'
# RUN: ir %s:chunked --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i64[1:64],BLOCK=64'
# RUN: ir %s:two_loops --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32[1:64]'
import triton
import triton.language as tl


@triton.jit
def chunked(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def two_loops(x_ptr, y_ptr, n):
    s = 0.0
    for start in range(0, n, 32):
        cols = start + tl.arange(0, 32)
        s += tl.sum(tl.load(x_ptr + cols, mask=cols < n, other=0.0), axis=0)
    for start in range(0, n, 64):
        cols = start + tl.arange(0, 64)
        s += tl.sum(tl.load(x_ptr + cols, mask=cols < n, other=0.0), axis=0)
    tl.store(y_ptr, s)
