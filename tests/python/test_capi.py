"""The ctypes binding itself: loading, IR text, parameters, IR round trip."""
import os

import numpy as np
import pytest

import kad

HERE = os.path.dirname(os.path.abspath(__file__))
ADD = os.path.join(os.path.dirname(HERE), "kernels", "vector_add.py")
ADD_SIG = "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n_elements=i32,BLOCK_SIZE=128"

# A kernel written directly in kad's textual IR: y = 2 * x, masked.
DOUBLE_IR = """\
# doubles a vector, 64 elements per program
kernel @double_kernel(%x_ptr: *fp32, %y_ptr: *fp32, %n: i32) [BLOCK = 64] {
  %pid = program_id 0 : i32
  %0 = const 64 : i32
  %1 = mul %pid, %0 : i32
  %offs = arange 0 : i32[64]
  %2 = broadcast %1 : i32[64]
  %3 = add %2, %offs : i32[64]
  %4 = broadcast %n : i32[64]
  %mask = lt %3, %4 : i1[64]
  %5 = broadcast %x_ptr : *fp32[64]
  %6 = addptr %5, %3 : *fp32[64]
  %x = load %6, mask %mask : fp32[64]
  %7 = add %x, %x : fp32[64]
  %8 = broadcast %y_ptr : *fp32[64]
  %9 = addptr %8, %3 : *fp32[64]
  store %9, %7, mask %mask
}
"""


def add_kernel():
    ctx = kad.Context()
    ctx.add_source("tests/kernels/vector_add.py", open(ADD, encoding="utf-8").read())
    return ctx.specialize("add_kernel", ADD_SIG)


def test_library_loads_and_has_a_version():
    assert os.path.exists(kad.library_path()) or "KAD_LIB" in os.environ
    assert kad.version().count(".") == 2


def test_params_and_ir_of_a_specialized_kernel():
    k = add_kernel()
    assert k.params == [("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("out_ptr", "*fp32"),
                        ("n_elements", "i32")]
    ir = k.ir
    assert ir.startswith("kernel @add_kernel(%x_ptr: *fp32, %y_ptr: *fp32, %out_ptr: *fp32, %n_elements: i32)")
    assert "BLOCK_SIZE = 128" in ir.splitlines()[0]


def test_ir_round_trips_through_the_parser():
    k = add_kernel()
    again = kad.Context().parse_ir("add.ir", k.ir)
    assert again.ir == k.ir


def test_run_positional_and_by_name_agree():
    k = add_kernel()
    x = np.arange(300, dtype=np.float32)
    y = np.full(300, 0.5, dtype=np.float32)
    out1 = np.zeros(300, np.float32)
    out2 = np.zeros(300, np.float32)
    k.run((3,), [x, y, out1, 300])
    k.run(3, dict(n_elements=300, out_ptr=out2, y_ptr=y, x_ptr=x))
    assert np.array_equal(out1, x + y) and np.array_equal(out2, x + y)


def test_parse_ir_and_run_a_handwritten_kernel():
    k = kad.Context().parse_ir("double.ir", DOUBLE_IR)
    assert k.params == [("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("n", "i32")]
    x = np.linspace(-1, 1, 100).astype(np.float32)
    y = np.full(100, np.nan, np.float32)
    k.run((2,), [x, y, 100])
    assert np.array_equal(y, 2 * x)
    y64 = np.zeros(100)
    k.run((2,), [x.astype(np.float64), y64, 100], mode="f64")
    assert np.array_equal(y64, 2 * x.astype(np.float64))


def test_ir_parse_error_is_located():
    with pytest.raises(kad.KadError) as err:
        kad.Context().parse_ir("bad.ir", DOUBLE_IR.replace("%7 = add %x, %x", "%7 = add %x, %nope"))
    assert "bad.ir:" in str(err.value)


def test_bad_mode_is_refused():
    k = kad.Context().parse_ir("double.ir", DOUBLE_IR)
    with pytest.raises(ValueError):
        k.run(1, [np.zeros(1, np.float32)] * 2 + [1], mode="fp64")
