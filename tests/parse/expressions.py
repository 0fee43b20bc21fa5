# RUN: ast %s
# Operator precedence and associativity follow Python: the dump shows the tree.
import triton
import triton.language as tl


@triton.jit
def k(a, b, c, d, x, n):
    e1 = a + b * c - d / a // b % c
    e2 = -a ** 2 ** b
    e3 = 2 ** -1
    e4 = a | b ^ c & d << 1 >> 2
    e5 = ~a + +b - -c
    e6 = a < b <= c == d != x > n >= a
    e7 = a in b, a not in b, a is None, a is not None
    e8 = not a and b or c and not d
    e9 = a if b else c if d else x
    e10 = (a + b) * (c - d)
    e11 = x[:, None] + x[None, :] + x[1:2, ::2, 3:] + x[a]
    e12 = x[(0, 1)]
    e13 = f(a)(b).g[c].h(d, key=x, other=-1)
    e14 = (a,), (), [a, b,], [], (a)
    e15 = a @ b
    e16 = not a < b
    e17 = -9223372036854775808
    e18 = 1 if a else 2 if b else 3
    e19 = a - b - c, a ** b ** c, a / b / c
