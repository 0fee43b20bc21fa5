"""Row kernels whose backward is one loop over a row's chunks (src/ad/write/spread.c, docs/AD.md
"Spreading a loop over programs"): one program per row, BLOCK-wide chunks.

row_softplus's backward (dx = dy * sigmoid(x), chunk by chunk) shares nothing between
iterations: kad may deal each row's chunks to several programs.  row_square_inplace's backward
reads and writes the same buffer (the in-place output's gradient is the input's), and
row_center's first reduces the row (a loop before the one that writes): neither is spread.
"""
import triton
import triton.language as tl


@triton.jit
def row_softplus(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < n
        x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
        y = tl.maximum(x, 0.0) + tl.log(1.0 + tl.exp(-tl.abs(x)))
        tl.store(y_ptr + row * stride + cols, y, mask=m)


@triton.jit
def row_square_inplace(x_ptr, n, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < n
        x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
        tl.store(x_ptr + row * stride + cols, x * x, mask=m)


@triton.jit
def row_center(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n, other=0.0)
    mean = tl.sum(acc, axis=0) / n
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < n
        x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
        tl.store(y_ptr + row * stride + cols, x - mean, mask=m)


@triton.jit
def row_softplus_desc(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    # row_softplus through 1-D tensor descriptors: its backward is spread, but a descriptor's tile
    # (its block shape and offsets are the access's own operands) is never split
    row = tl.program_id(0)
    xd = tl.make_tensor_descriptor(x_ptr + row * stride, shape=[n], strides=[1], block_shape=[BLOCK])
    yd = tl.make_tensor_descriptor(y_ptr + row * stride, shape=[n], strides=[1], block_shape=[BLOCK])
    for start in range(0, n, BLOCK):
        x = xd.load([start])
        yd.store([start], tl.maximum(x, 0.0) + tl.log(1.0 + tl.exp(-tl.abs(x))))


@triton.jit
def row_softplus_whole(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    # the whole row in one block, no loop (a row-per-program elementwise kernel): a backward of
    # more than KAD_LANE_TILE lanes runs in parts of that many (split_lanes)
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * stride + cols, tl.maximum(x, 0.0) + tl.log(1.0 + tl.exp(-tl.abs(x))), mask=m)


@triton.jit
def row_center_whole(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    # the row's mean first: not lane by lane, never split
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * stride + cols, x - tl.sum(x, axis=0) / n, mask=m)


@triton.jit
def row_square_inplace_whole(x_ptr, n, stride, BLOCK: tl.constexpr):
    # the output's gradient is read and written in one tile: a part must not read what an
    # earlier part wrote, so never split
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    tl.store(x_ptr + row * stride + cols, x * x, mask=m)
