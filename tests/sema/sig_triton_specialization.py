# Runtime parameters given values in the signature are specialized as Triton's JIT does:
# None and the int 1 become constants (`is None` folds, `stride == 1` folds, `row * stride` is
# `row * 1`: i32), other ints are typed i32/i64 by range, bools i1, floats fp32, and an annotated
# parameter (`n: tl.int64`) keeps its type.
# RUN: ir %s:affine --sig 'x_ptr=*fp32,b_ptr=None,y_ptr=*fp32,stride=1,n=1,scale=2.5,flag=True,BLOCK=16'
# RUN: ir %s:affine --sig 'x_ptr=*fp32,b_ptr=*fp32,y_ptr=*fp32,stride=5,n=7,scale=fp32,flag=False,BLOCK=16'
# RUN: ir %s:affine --sig 'x_ptr=*fp32,b_ptr=*fp32,y_ptr=*fp32,stride=i32,n=i64,scale=fp32,flag=i1,BLOCK=16'
# RUN: ir %s:offset --sig 'x_ptr=*i64,k=3000000000,j=-5'
# RUN: ir %s:offset --sig 'x_ptr=*i64,k=1,j=None'
import triton
import triton.language as tl


@triton.jit
def affine(x_ptr, b_ptr, y_ptr, stride, n: tl.int64, scale, flag, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    if stride == 1:
        base = row
    else:
        base = row * stride
    x = tl.load(x_ptr + base + cols, mask=mask, other=0.0) * scale
    if b_ptr is not None:
        x = x + tl.load(b_ptr + cols, mask=mask, other=0.0)
    if flag:
        x = -x
    tl.store(y_ptr + base + cols, x, mask=mask)


@triton.jit
def offset(x_ptr, k, j):
    if j is None:
        tl.store(x_ptr, k)
    else:
        tl.store(x_ptr, k + j)
