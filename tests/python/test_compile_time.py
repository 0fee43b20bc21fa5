"""Compile time grows linearly with the length of straight-line code (issue 32, item 5).

A fully unrolled loop is a kernel of thousands of `x = x * c + d` lines.  kad's stages once
compared every value with every earlier one (the printer's names, the emitter's variable
sharing, sema's scopes): `kad grad` took 3.4 s at 1,000 lines and over a minute at 4,000.  These
tests time kad on the kernel of bench/compile_time.py at 2,000 and 8,000 lines and require the
ratio to stay well below quadratic (linear: 4x; quadratic: 16x).  The time is the CPU time the
command used (getrusage of the children, the best of a few runs), not the wall clock, so a loaded
machine slows both sizes alike; the bound leaves room for noise at the small size.
"""
import os
import resource
import subprocess
import sys
import time

import pytest

import kad

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import compile_time  # noqa: E402

KAD = os.path.join(REPO, "build", "kad")
SMALL, LARGE = 2000, 8000
RATIO = 9.0  # LARGE / SMALL is 4: linear reads ~4x, quadratic 16x
LARGE_SECONDS = 10.0  # a generous bound on one command at LARGE (under 1 s on a laptop core)

# the statement repeated: an affine chain (each x dead after the next line), and a chain whose
# every x the backward reads (all live at once: no two may share a variable)
LINES = {"affine": compile_time.LINE, "square": "x = x * x * 0.5 + 0.5"}
COMMANDS = ("ir", "emit", "grad", "jvp")


def cpu_seconds(argv, repeat):
    """The least CPU time (user + system) of repeat runs of argv, which must succeed."""
    best = None
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert r.returncode == 0, r.stderr[:500]
        t = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = t if best is None else min(best, t)
    return best


def write_kernel(tmp_path, n, variant, line):
    path = tmp_path / f"long_{variant}_{n}.py"
    path.write_text(compile_time.kernel_source(n, variant, line))
    return str(path)


@pytest.mark.parametrize("variant", ("lines", "static_range"))
@pytest.mark.parametrize("line", sorted(LINES))
@pytest.mark.parametrize("cmd", COMMANDS)
def test_cli_compile_time_is_linear(tmp_path, cmd, line, variant):
    if variant == "static_range" and line == "square":
        pytest.skip("the unrolled loop is the same straight line as the lines")
    times = {}
    for n, repeat in ((SMALL, 3), (LARGE, 2)):
        path = write_kernel(tmp_path, n, variant, LINES[line])
        argv = [KAD, compile_time.COMMANDS[cmd][0], f"{path}:long_kernel", "--sig", compile_time.SIG]
        times[n] = cpu_seconds(argv + compile_time.COMMANDS[cmd][1:], repeat)
    assert times[LARGE] < LARGE_SECONDS, f"kad {cmd} at {LARGE} lines: {times[LARGE]:.2f} s CPU"
    # below 20 ms at SMALL, process start and noise dominate: compare against 20 ms
    ratio = times[LARGE] / max(times[SMALL], 0.02)
    assert ratio < RATIO, (f"kad {cmd} ({line}, {variant}): {times[SMALL]:.3f} s at {SMALL} lines, "
                           f"{times[LARGE]:.3f} s at {LARGE}: {ratio:.1f}x for 4x the lines")


def test_package_compile_time_is_linear():
    """The library path (kad.Context: specialize, grad_module, jvp_module) scales the same."""
    def run(n):
        src = compile_time.kernel_source(n, "lines", LINES["square"])
        best = None
        for _ in range(2):
            t0 = time.process_time()
            ctx = kad.Context()
            ctx.add_source(f"long_{n}.py", src)
            k = ctx.specialize("long_kernel", compile_time.SIG)
            k.grad_module("x_ptr", "y_ptr")
            k.jvp_module("x_ptr", "y_ptr")
            t = time.process_time() - t0
            best = t if best is None else min(best, t)
        return best
    small, large = run(SMALL), run(LARGE)
    assert large < 3 * LARGE_SECONDS, f"{large:.2f} s CPU at {LARGE} lines"
    assert large / max(small, 0.02) < RATIO, f"{small:.3f} s at {SMALL} lines, {large:.3f} s at {LARGE}"
