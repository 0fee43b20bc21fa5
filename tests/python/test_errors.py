"""Errors of the interpreter and of the binding, seen from Python.

An out-of-bounds access (a mask left out) must fail the run with a message
naming the kernel file, the line of the access and the program id; buffers
of the wrong type or count must be refused before kad runs anything.
"""
import os
import re

import numpy as np
import pytest

import kad

HERE = os.path.dirname(os.path.abspath(__file__))
BAD = os.path.join(os.path.dirname(HERE), "kernels", "bad", "oob_copy.py")
BAD_NAME = "tests/kernels/bad/oob_copy.py"
SIG = "src_ptr=*fp32,dst_ptr=*fp32,n=i32,BLOCK_SIZE=256"


def bug_line(kernel):
    """1-based line of the `# BUG` access inside the given kernel."""
    lines = open(BAD, encoding="utf-8").read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(f"def {kernel}("))
    return next(i for i in range(start, len(lines)) if "# BUG" in lines[i]) + 1


def bad_kernel(kernel):
    ctx = kad.Context()
    ctx.add_source(BAD_NAME, open(BAD, encoding="utf-8").read())
    return ctx.specialize(kernel, SIG)


@pytest.mark.parametrize("mode", ["as_written", "f64"])
@pytest.mark.parametrize("kernel", ["copy_no_mask_kernel", "store_no_mask_kernel"])
def test_out_of_bounds_names_file_line_and_program(kernel, mode):
    k = bad_kernel(kernel)
    dt = np.float64 if mode == "f64" else np.float32
    n = 1000  # 4 programs of 256: only program 3 reaches past the end
    src = np.arange(n, dtype=dt)
    dst = np.zeros(n, dtype=dt)
    with pytest.raises(kad.KadError) as err:
        k.run((4,), [src, dst, n], mode=mode)
    msg = str(err.value)
    assert f"{BAD_NAME}:{bug_line(kernel)}:" in msg, msg
    assert re.search(r"program[ _]?(id)?\W{0,6}\(?\s*3\b", msg, re.I) or re.search(r"pid\W{0,6}\(?\s*3\b", msg), msg


def test_in_bounds_grid_of_the_buggy_kernel_runs():
    # The same kernel is fine when every block is full: the error above is
    # about the access, not about the kernel.
    k = bad_kernel("copy_no_mask_kernel")
    src = np.arange(512, dtype=np.float32)
    dst = np.zeros(512, dtype=np.float32)
    k.run((2,), [src, dst, 512])
    assert np.array_equal(src, dst)


def test_wrong_buffer_dtype_is_refused():
    k = bad_kernel("copy_no_mask_kernel")
    with pytest.raises(TypeError, match="src_ptr"):
        k.run((1,), [np.zeros(256), np.zeros(256, np.float32), 256])  # float64 in as_written
    with pytest.raises(TypeError, match="dst_ptr"):
        k.run((1,), [np.zeros(256), np.zeros(256, np.float32), 256], mode="f64")


def test_wrong_argument_count_is_refused():
    k = bad_kernel("copy_no_mask_kernel")
    with pytest.raises(TypeError):
        k.run((1,), [np.zeros(256, np.float32)])
    with pytest.raises(TypeError):
        k.run((1,), {"src_ptr": np.zeros(256, np.float32), "n": 3})


def test_unknown_kernel_is_a_kad_error():
    ctx = kad.Context()
    ctx.add_source(BAD_NAME, open(BAD, encoding="utf-8").read())
    with pytest.raises(kad.KadError, match="no_such_kernel"):
        ctx.specialize("no_such_kernel", SIG)


def test_syntax_error_is_located():
    ctx = kad.Context()
    with pytest.raises(kad.KadError) as err:
        ctx.add_source("broken.py", "import triton\n\n@triton.jit\ndef k(x_ptr:\n    pass\n")
    assert re.search(r"broken\.py:\d+:\d+: error:", str(err.value)), str(err.value)
