# RUN: ast %s
# Every statement of the kernel subset, with its location (line:col).
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    """Docstrings are expression statements."""
    pid = tl.program_id(0); offs = pid * BLOCK + tl.arange(0, BLOCK)
    a = b = 0
    lo, hi = hi, lo = 1, 2
    t = 1,
    acc: tl.constexpr = 3
    x = 1
    x += 1; x -= 1; x *= 2; x /= 2; x //= 2; x %= 3; x **= 2
    x &= 1; x |= 1; x ^= 1; x <<= 1; x >>= 1
    x_ptr += BLOCK
    if n > 0:
        pass
    elif n < -1:
        x = 2
    elif n == 0: x = 3
    else:
        x = 4
    for i in range(0, n, BLOCK):
        if i > 4:
            break
        continue
    for i, j in zip(a, b):
        pass
    for i in tl.static_range(4):
        x = x \
            + i
    else:
        x = 0
    while x < 10:
        x += 1
    else:
        pass
    assert n > 0, "n must be positive"
    assert BLOCK % 16 == 0

    def nested(v):
        return v
    if n > 100:
        return
    return x, offs
