"""Every corpus kernel on kad's interpreter, in both modes, against numpy.

For each Case of corpus.py and each mode ("as_written": buffers in their
declared types; "f64": every float buffer in float64), the kernel file is
added to a kad context (with the helper files it imports), specialized for
the case's signature and run over the case's grid; harness.check then
compares every output with the reference, checks that masked-off elements
kept their poison and that inputs were not modified.  The runtime parameters
kad reports must be the signature's, in order and with the same types.
"""
import functools
import os

import pytest

import harness
import kad
from corpus import CASE_IDS, CASES
from kadnum import MODES

KERNELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels")


def read_kernel_file(name):
    with open(os.path.join(KERNELS, name), encoding="utf-8") as f:
        return f.read()


@functools.lru_cache(maxsize=None)
def specialize(case_id):
    """The kad Kernel of a case (cached: both modes share one specialization)."""
    case = CASES[CASE_IDS.index(case_id)]
    ctx = kad.Context()
    for name in (case.file,) + case.extra:
        ctx.add_source(f"tests/kernels/{name}", read_kernel_file(name))
    return ctx.specialize(case.kernel, case.sig)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_corpus_kernel(case, mode):
    k = specialize(case.id)
    p = harness.prepare(case, mode)
    want = [(n, ("*" + t) if kind == "ptr" else t) for n, kind, t in p.runtime]
    assert k.params == want, "runtime parameters differ from the signature"
    k.run(case.grid, p.args, mode=mode)
    problems, _ = harness.check(p)
    assert not problems, f"{case.id} [{mode}]:\n" + "\n".join(problems)


@pytest.mark.parametrize("case", [c for c in CASES if c.id == min(
    (d.id for d in CASES if d.file == c.file and d.kernel == c.kernel))], ids=lambda c: c.id)
def test_corpus_ir_round_trip(case):
    """The printed IR of each corpus kernel reads back to the same text."""
    ir = specialize(case.id).ir
    assert kad.Context().parse_ir(f"{case.id}.ir", ir).ir == ir
