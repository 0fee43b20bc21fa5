"""One line per corpus case on kad: PASS, or FAIL with the first error line.

A quick overview for kad developers (pytest gives the details):

    .venv/bin/python tests/python/corpus_status.py [-k SUBSTRING]

Prints "status: N passed, N failed" last; exits 1 on any failure.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

import harness  # noqa: E402
import kad  # noqa: E402
from corpus import CASES  # noqa: E402
from kadnum import MODES  # noqa: E402
from test_corpus import read_kernel_file  # noqa: E402


def run(case, mode):
    try:
        ctx = kad.Context()
        for name in (case.file,) + case.extra:
            ctx.add_source(f"tests/kernels/{name}", read_kernel_file(name))
        k = ctx.specialize(case.kernel, case.sig)
        p = harness.prepare(case, mode)
        k.run(case.grid, p.args, mode=mode)
        problems, _ = harness.check(p)
        return problems[0] if problems else None
    except (kad.KadError, TypeError, ValueError) as e:
        return f"{type(e).__name__}: {e}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default="")
    args = ap.parse_args()
    npass = nfail = 0
    for case in CASES:
        if args.k not in case.id:
            continue
        for mode in MODES:
            err = run(case, mode)
            if err is None:
                npass += 1
                print(f"PASS {case.id} [{mode}]")
            else:
                nfail += 1
                print(f"FAIL {case.id} [{mode}]: {err.splitlines()[0][:300]}")
    print(f"status: {npass} passed, {nfail} failed")
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
