"""A loop over blocks whose state is recorded on a tape, with pointers walked through each block's
sub-blocks by an inner loop (`for j in range(NSUB): p += SUB`), as chunked attention kernels walk
their blocks: the reverse sweep recomputes those pointers from the block number (issue 33)."""
import triton
import triton.language as tl


@triton.jit
def subblock_state(x_ptr, y_ptr, NB, NSUB: tl.constexpr, SUB: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, SUB)
    p = x_ptr + row * NB * NSUB * SUB + offs
    q = y_ptr + row * NB * NSUB * SUB + offs
    h = tl.zeros([SUB], dtype=tl.float32)
    for i in range(NB):
        acc = tl.zeros([SUB], dtype=tl.float32)
        for j in range(NSUB):
            x = tl.load(p)
            tl.store(q, x * h + x)
            acc += x
            p += SUB
            q += SUB
        h = tl.sigmoid(h * 0.5 + acc) - 0.5


@triton.jit
def subblock_state_reverse(x_ptr, y_ptr, NB, NSUB: tl.constexpr, SUB: tl.constexpr):
    # the same walked from the row's end: a pointer and an int offset tile counted down by inner loops
    # over negative ranges (`p -= SUB`, `off -= SUB`), as lightning attention's backward walks its blocks
    row = tl.program_id(0)
    off = row * NB * NSUB * SUB + NB * NSUB * SUB + tl.arange(0, SUB)
    q = y_ptr + row * NB * NSUB * SUB + NB * NSUB * SUB + tl.arange(0, SUB)
    h = tl.zeros([SUB], dtype=tl.float32)
    for i in range(NB - 1, -1, -1):
        acc = tl.zeros([SUB], dtype=tl.float32)
        for j in range(NSUB - 1, -1, -1):
            off -= SUB
            q -= SUB
            x = tl.load(x_ptr + off)
            tl.store(q, x * h + x)
            acc += x
        h = tl.sigmoid(h * 0.5 + acc) - 0.5
