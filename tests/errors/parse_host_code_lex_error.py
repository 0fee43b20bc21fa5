# RUN: ast %s
# lexical errors anywhere in the file are errors (the file is not Python)
import triton


def host(x):
    return x ? 1 : 0
