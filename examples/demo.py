"""kad demo: four small Triton kernels specialized and run on kad's interpreter.

For each example: specialize it for a signature, print the start of its IR,
run it on the CPU interpreter in both modes ("as_written": fp32/fp16 buffers,
every operation rounded like on the GPU; "f64": every float in float64), and
compare with a numpy reference.  Prints one PASS or FAIL line per example and
exits with status 1 if any failed.

Then the backward of each example: the start of the backward kernel that
`kad grad` prints (docs/AD.md), and a "PASS name backward" line from kad's
gradient checker (forward and backward on the interpreter in float64 against
central finite differences, relative tolerance 1e-6).

    make demo                  # or: .venv/bin/python examples/demo.py [-q]
"""
import dataclasses
import os
import re
import subprocess
import sys
from typing import Callable

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import kad  # noqa: E402

IR_LINES = 25
BACKWARD_LINES = 30
KAD = os.path.join(os.path.dirname(HERE), "build", "kad")


@dataclasses.dataclass
class Example:
    name: str
    file: str
    kernel: str
    sig: str
    grid: tuple
    make: Callable  # rng -> {param: float64 array or scalar}; outputs zero-filled
    ref: Callable  # inputs -> {output: expected float64 array}
    outputs: tuple
    dtypes: dict  # buffer -> as_written numpy dtype
    tol: float  # as_written: max |err| / max(1, |expected|)


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


EXAMPLES = [
    Example(
        "vector_add", "vector_add.py", "add_kernel",
        "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=256", (4,),
        lambda r: dict(x_ptr=r.standard_normal(1000), y_ptr=r.standard_normal(1000),
                       out_ptr=np.zeros(1000), n=1000),
        lambda i: dict(out_ptr=i["x_ptr"] + i["y_ptr"]),
        ("out_ptr",), dict(x_ptr=np.float32, y_ptr=np.float32, out_ptr=np.float32), 1e-6),
    Example(
        "softmax", "softmax.py", "softmax_kernel",
        "x_ptr=*fp32,y_ptr=*fp32,stride=i32,n_cols=i32,BLOCK=128", (8,),
        lambda r: dict(x_ptr=3 * r.standard_normal((8, 100)), y_ptr=np.zeros((8, 100)),
                       stride=100, n_cols=100),
        lambda i: dict(y_ptr=_softmax(i["x_ptr"])),
        ("y_ptr",), dict(x_ptr=np.float32, y_ptr=np.float32), 1e-6),
    Example(
        "rms_norm", "rms_norm.py", "rms_norm_kernel",
        "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,stride=i32,n_cols=i32,eps=fp32,BLOCK=256", (6,),
        lambda r: dict(x_ptr=r.standard_normal((6, 200)), w_ptr=1 + 0.1 * r.standard_normal(200),
                       y_ptr=np.zeros((6, 200)), stride=200, n_cols=200, eps=1e-6),
        lambda i: dict(y_ptr=i["x_ptr"] / np.sqrt((i["x_ptr"] ** 2).mean(1, keepdims=True) + i["eps"])
                       * i["w_ptr"]),
        ("y_ptr",), dict(x_ptr=np.float32, w_ptr=np.float32, y_ptr=np.float32), 1e-5),
    Example(
        "matmul", "matmul.py", "matmul_kernel",
        "a_ptr=*fp16,b_ptr=*fp16,c_ptr=*fp32,M=i32,N=i32,K=i32,BLOCK_M=32,BLOCK_N=32,BLOCK_K=32",
        (3, 2),
        lambda r: dict(a_ptr=r.standard_normal((70, 100)), b_ptr=r.standard_normal((100, 50)),
                       c_ptr=np.zeros((70, 50)), M=70, N=50, K=100),
        lambda i: dict(c_ptr=i["a_ptr"] @ i["b_ptr"]),
        ("c_ptr",), dict(a_ptr=np.float16, b_ptr=np.float16, c_ptr=np.float32),
        5e-5),  # fp32 accumulation over K = 100
]


# The backward of each example: differentiated inputs and outputs.
BACKWARD = {
    "vector_add": (("x_ptr", "y_ptr"), ("out_ptr",)),
    "softmax": (("x_ptr",), ("y_ptr",)),
    "rms_norm": (("x_ptr", "w_ptr"), ("y_ptr",)),
    "matmul": (("a_ptr", "b_ptr"), ("c_ptr",)),
}


def backward_source(ex):
    """What `kad grad` prints for the example (the backward kernel)."""
    wrt, out = BACKWARD[ex.name]
    p = subprocess.run([KAD, "grad", f"{os.path.join(HERE, ex.file)}:{ex.kernel}", "--sig", ex.sig,
                        "--wrt", ",".join(wrt), "--out", ",".join(out)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise kad.KadError(p.stderr.strip() or f"kad grad exited with status {p.returncode}")
    return p.stdout


def check_backward(ex, kernel):
    """kad's float64 gradient check of the example; returns (passed, max rel err, report)."""
    wrt, out = BACKWARD[ex.name]
    made = ex.make(np.random.default_rng(0))
    shapes = {n: int(np.size(v)) for n, v in made.items() if isinstance(v, np.ndarray)}
    args = {n: v for n, v in made.items() if not isinstance(v, np.ndarray)}
    passed, report = kernel.check_gradients(ex.grid, wrt, out, shapes, args)
    errs = [float(x) for x in re.findall(r"max rel err ([0-9.e+-]+)", report)]
    return passed, max(errs, default=float("nan")), report


def specialize(ex):
    ctx = kad.Context()
    with open(os.path.join(HERE, ex.file), encoding="utf-8") as f:
        ctx.add_source(f"examples/{ex.file}", f.read())
    return ctx.specialize(ex.kernel, ex.sig)


def run_example(ex, kernel, mode):
    """Runs one example in one mode; returns (max abs err, max relative err)."""
    made = ex.make(np.random.default_rng(0))
    args, inputs = {}, {}
    for name, v in made.items():
        if isinstance(v, np.ndarray):
            # Inputs are rounded to their storage type once, so that both
            # modes and the reference see the same values.
            v = v.astype(ex.dtypes[name]).astype(np.float64)
            args[name] = np.ascontiguousarray(v if mode == "f64" else v.astype(ex.dtypes[name]))
        else:
            args[name] = v
        inputs[name] = v
    kernel.run(ex.grid, args, mode=mode)
    expected = ex.ref(inputs)
    abs_err = rel_err = 0.0
    for name in ex.outputs:
        got = args[name].astype(np.float64)
        err = np.abs(got - expected[name])
        abs_err = max(abs_err, float(np.max(err)))
        rel_err = max(rel_err, float(np.max(err / np.maximum(1.0, np.abs(expected[name])))))
    return abs_err, rel_err


def main(argv):
    quiet = "-q" in argv
    failed = 0
    for ex in EXAMPLES:
        try:
            k = specialize(ex)
            if not quiet:
                lines = k.ir.splitlines()
                print(f"== {ex.name}: {ex.kernel} [{ex.sig}]")
                print("\n".join(lines[:IR_LINES]))
                if len(lines) > IR_LINES:
                    print(f"  ... ({len(lines) - IR_LINES} more lines)")
            aw_abs, aw_rel = run_example(ex, k, "as_written")
            f64_abs, f64_rel = run_example(ex, k, "f64")
            ok = aw_rel <= ex.tol and f64_rel <= 1e-12
            verdict = "PASS" if ok else "FAIL"
            print(f"{verdict} {ex.name} (max abs err {aw_abs:.3g} as written, {f64_abs:.3g} in f64)")
            failed += not ok
        except (kad.KadError, TypeError, ValueError) as e:
            print(f"FAIL {ex.name}: {e}")
            failed += 1
            continue
        try:
            if not quiet:
                lines = backward_source(ex).splitlines()
                print(f"-- {ex.name} backward: kad grad --wrt {','.join(BACKWARD[ex.name][0])} "
                      f"--out {','.join(BACKWARD[ex.name][1])}")
                print("\n".join(lines[:BACKWARD_LINES]))
                if len(lines) > BACKWARD_LINES:
                    print(f"  ... ({len(lines) - BACKWARD_LINES} more lines)")
            passed, err, report = check_backward(ex, k)
            print(f"{'PASS' if passed else 'FAIL'} {ex.name} backward (kad check: max rel err {err:.2g})")
            if not passed:
                print(report)
            failed += not passed
        except (kad.KadError, OSError) as e:
            print(f"FAIL {ex.name} backward: {e}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
