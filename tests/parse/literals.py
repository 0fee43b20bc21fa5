# RUN: ast %s
# Numbers and strings decode as in Python.
import triton


@triton.jit
def k():
    i = (0, 7, 1_000_000, 0x_ff, 0XFF, 0o17, 0b1010, 00, 9223372036854775807)
    f = (1.0, 1., .5, 1e10, 1E-6, 1.5e+3, 1_0.0_1, 0.1, 1e400, 3.14159265358979)
    s = ('single', "double", '''triple
quoted''', """also
triple""", 'esc\t\n\\\'\"\x41\101\u00e9\U0001F600', r'raw\n\d', R"RAW", u'unicode')
    c = "adjacent " 'literals ' """concatenate"""
    b = (True, False, None)
    kw = 1if b else 2
