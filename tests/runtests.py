#!/usr/bin/env python3
"""Golden-file test runner for the kad command line (stdlib only).

Every test file under tests/{parse,sema,ir,errors,...} (*.py, *.ir; tests/cuda: *.cu, *.hip, `// RUN:`) holds one or more
lines `# RUN: <kad arguments>`; `%s` stands for the file's path and a trailing
`< %s` feeds the file on stdin.  Expected stdout lives in NAME.out (exit status
0 required), expected stderr in NAME.err (exit status 1 required).  A line
`# ROUNDTRIP` also feeds the output of each RUN line that prints IR (`ir`, `opt`,
`--ir`: a kernel, or a backward's Program) back through `kad opt --pass verify`
and requires the identical text.

Prints one line per test and `golden: N passed, N failed`; exits 1 on failure.
`--update` rewrites expected files from the current output (review the diff).
"""
import argparse
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ["parse", "sema", "ir", "errors", "emit", "grad", "access", "audit", "jvp", "emit_cuda", "cuda"]
CUDA_EXTS = (".cu", ".cuh", ".hip", ".cpp")


def run_lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    runs, roundtrip = [], False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("# RUN:"):
            runs.append(s[len("# RUN:"):].strip())
        elif s.startswith("// RUN:") and path.endswith(CUDA_EXTS):
            runs.append(s[len("// RUN:"):].strip())
        elif s in ("# ROUNDTRIP", "// ROUNDTRIP"):
            roundtrip = True
    return runs, roundtrip


def run_kad(kad, cmd, path, timeout):
    args = shlex.split(cmd)
    stdin = None
    if len(args) >= 2 and args[-2] == "<":
        stdin = args[-1].replace("%s", path)
        args = args[:-2]
    args = [a.replace("%s", path) for a in args]
    inp = open(stdin, "rb") if stdin else subprocess.DEVNULL
    try:
        p = subprocess.run([kad] + args, stdin=inp, capture_output=True, timeout=timeout)
    finally:
        if stdin:
            inp.close()
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def check_file(kad, path, update, timeout):
    """Returns None on success, else a short reason."""
    runs, roundtrip = run_lines(path)
    if not runs:
        return "no '# RUN:' line"
    base = os.path.splitext(path)[0]
    rel = os.path.relpath(path, ROOT)
    outs, errs, codes = [], [], []
    for cmd in runs:
        try:
            rc, out, err = run_kad(kad, cmd, rel, timeout)
        except subprocess.TimeoutExpired:
            return "timed out"
        if rc < 0 or rc > 2:
            return "crashed (exit status %d): %s" % (rc, err.strip()[-400:])
        codes.append(rc)
        outs.append(out)
        errs.append(err)
    want_err = os.path.exists(base + ".err") or (update and any(codes))
    got_out, got_err = "".join(outs), "".join(errs)
    if update:
        if want_err:
            with open(base + ".err", "w") as f:
                f.write(got_err)
        else:
            with open(base + ".out", "w") as f:
                f.write(got_out)
        return None
    if want_err:
        if any(c != 1 for c in codes):
            return "expected exit status 1, got %s (stderr: %s)" % (codes, got_err.strip()[:300])
        with open(base + ".err") as f:
            want = f.read()
        if got_err != want:
            return "stderr differs:\n" + diff(want, got_err)
        if got_out:
            return "a failing run printed to stdout: %s" % got_out.strip()[:300]
        return None
    if any(c != 0 for c in codes):
        return "exit status %s: %s" % (codes, got_err.strip()[:600])
    if not os.path.exists(base + ".out"):
        return "missing expected file %s.out" % os.path.relpath(base, ROOT)
    with open(base + ".out") as f:
        want = f.read()
    if got_out != want:
        return "stdout differs:\n" + diff(want, got_out)
    for cmd, out in zip(runs, outs) if roundtrip else ():
        args = shlex.split(cmd)
        if args[0] not in ("ir", "opt") and "--ir" not in args:
            continue
        p = subprocess.run([kad, "opt", "--pass", "verify"], input=out.encode(),
                           capture_output=True, timeout=timeout)
        back = p.stdout.decode("utf-8", "replace")
        if p.returncode != 0 or back != out:
            return "round trip through the IR parser differs (%s):\n" % cmd + (
                p.stderr.decode()[:600] if p.returncode else diff(out, back))
    return None


def diff(want, got):
    import difflib
    lines = list(difflib.unified_diff(want.splitlines(), got.splitlines(), "expected", "got",
                                      lineterm="", n=1))
    return "\n".join("    " + l for l in lines[:40])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kad", default=os.path.join(ROOT, "build", "kad"))
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--name", default="golden")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("filter", nargs="*", help="substrings of test paths to run")
    a = ap.parse_args()
    kad = os.path.abspath(a.kad)
    os.chdir(ROOT)
    files = []
    for d in DIRS:
        full = os.path.join(ROOT, "tests", d)
        if not os.path.isdir(full):
            continue
        for dirpath, _, names in os.walk(full):
            for n in sorted(names):
                if n.endswith((".py", ".ir")) or (d == "cuda" and n.endswith(CUDA_EXTS)):
                    files.append(os.path.join(dirpath, n))
    files.sort()
    if a.filter:
        files = [f for f in files if any(s in f for s in a.filter)]
    passed = failed = 0
    for path in files:
        why = check_file(kad, path, a.update, a.timeout)
        rel = os.path.relpath(path, ROOT)
        if why is None:
            passed += 1
            print("ok   " + rel)
        else:
            failed += 1
            print("FAIL " + rel + ": " + why)
    print("%s: %d passed, %d failed" % (a.name, passed, failed))
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
