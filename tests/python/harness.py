"""Runs a corpus Case through some runner and judges the outcome.

prepare() builds the buffers of one run (inputs rounded to their declared
types, outputs poisoned) and the reference's view of the inputs; check()
compares every output and in/out buffer with the reference and verifies that
inputs were left alone.  The runner itself (kad's interpreter through the C
library, or Triton's interpreter) is the caller's business.
"""
import dataclasses
import zlib

import numpy as np

import kadnum
from corpus import parse_sig


@dataclasses.dataclass
class Prepared:
    case: object
    mode: str
    runtime: list  # [(name, kind, dtype)] of the runtime parameters, in order
    consts: dict  # constexpr name -> text as in the signature
    args: dict  # name -> buffer (numpy) or scalar, as passed to the kernel
    initial: dict  # name -> copy of each buffer before the run
    values: dict  # name -> what the reference sees


def case_seed(case):
    return zlib.crc32(case.id.encode())


def prepare(case, mode):
    params = parse_sig(case.sig)
    runtime = [(n, k, t) for n, k, t in params if k != "const"]
    consts = {n: t for n, k, t in params if k == "const"}
    made = case.make(np.random.default_rng(case_seed(case)))
    missing = [n for n, _, _ in runtime if n not in made]
    assert not missing, f"{case.id}: make() gives no value for {missing}"
    args, initial, values = {}, {}, {}
    for name, kind, dt in runtime:
        v = made[name]
        if kind != "ptr":
            args[name] = values[name] = v
            continue
        shape = np.shape(v)
        if name in case.outputs:
            buf = kadnum.poison(shape, dt, mode)
            values[name] = np.full(shape, np.nan)
        else:
            q = kadnum.quantize(v, dt)
            buf = kadnum.encode(q, dt, mode)
            values[name] = q
        args[name] = buf
        initial[name] = buf.copy()
    return Prepared(case, mode, runtime, consts, args, initial, values)


def _tolerance(case, name, dt, mode, values):
    table = case.tol64 if mode == "f64" else case.tol
    if name in table:
        t = table[name]
        return t(values) if callable(t) else t
    if mode == "f64":
        return kadnum.TOL_F64
    return kadnum.TOL_AS_WRITTEN.get(dt, (0.0, 0.0))


def check(p):
    """Returns (problems, report) after the run: problems is a list of
    strings (empty when everything matched), report maps each output to
    its largest absolute error."""
    case = p.case
    expected = case.ref(dict(p.values))
    problems, report = [], {}
    for name, kind, dt in p.runtime:
        if kind != "ptr":
            continue
        final = p.args[name]
        if name in case.outputs or name in case.inouts:
            if name not in expected:
                problems.append(f"{name}: the reference gives no expected value")
                continue
            exp = np.asarray(expected[name], dtype=np.float64)
            if exp.size != final.size:
                problems.append(f"{name}: reference has {exp.size} elements, buffer {final.size}")
                continue
            exp = exp.reshape(final.shape)
            actual = kadnum.decode(final, dt, p.mode)
            rtol, atol = _tolerance(case, name, dt, p.mode, p.values)
            problems += kadnum.compare(name, dt, p.initial[name], final, exp, actual, rtol, atol)
            report[name] = kadnum.max_abs_err(exp, actual)
        else:
            changed = ~kadnum.same_bits(p.initial[name], final)
            if changed.any():
                problems.append(f"{name}: input buffer modified at {int(changed.sum())} element(s)")
    return problems, report
