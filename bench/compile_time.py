"""Compile time against straight-line kernel length: `kad ir/grad/jvp/emit` on N lines.

    python3 bench/compile_time.py [--kad build/kad] [--sizes 1000,2000,4000,8000,16000]
                                  [--variant lines|static_range|both] [--limit SECONDS]
                                  [--commands ir,emit,grad,jvp] [--repeat K] [--line STMT]

The kernel loads a tile, runs `x = x * 1.0001 + 0.5` N times and stores it: written out as N
lines (`lines`), or as `for i in tl.static_range(N):` around the one line (`static_range`), which
sema unrolls into the same straight line.  --line replaces the statement (e.g. `x = x * x * 0.5 +
0.5`: the backward reads every x, so all of them are live at once).  Printed: one row per
(variant, N) with the wall time of each command in seconds (the best of --repeat runs) and, from
the second size on, the ratio to the previous size's time (2.0 per doubling is linear, 4.0
quadratic).  A command that runs past --limit seconds prints `>LIMIT` and the larger sizes of that
command are skipped.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SIG = "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=128"
COMMANDS = {
    "ir": ["ir"],
    "emit": ["emit"],
    "grad": ["grad", "--wrt", "x_ptr", "--out", "y_ptr"],
    "jvp": ["jvp", "--wrt", "x_ptr", "--out", "y_ptr"],
}


LINE = "x = x * 1.0001 + 0.5"


def kernel_source(n, variant, line=LINE):
    """The long kernel: n times line, as lines or as one static_range loop."""
    head = ("import triton\n"
            "import triton.language as tl\n\n\n"
            "@triton.jit\n"
            "def long_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n"
            "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
            "    m = offs < n\n"
            "    x = tl.load(x_ptr + offs, mask=m)\n")
    if variant == "lines":
        body = f"    {line}\n" * n
    else:
        body = f"    for i in tl.static_range({n}):\n        {line}\n"
    return head + body + "    tl.store(y_ptr + offs, x, mask=m)\n"


def time_command(kad, path, cmd, limit, repeat):
    """Best wall time of `kad CMD path:long_kernel --sig SIG` over repeat runs; None past limit."""
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            r = subprocess.run([kad] + COMMANDS[cmd][:1] + [f"{path}:long_kernel", "--sig", SIG]
                               + COMMANDS[cmd][1:], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=limit)
        except subprocess.TimeoutExpired:
            return None
        dt = time.perf_counter() - t0
        if r.returncode != 0:
            sys.exit(f"kad {cmd} failed at {path}: {r.stderr.decode()[:400]}")
        best = dt if best is None else min(best, dt)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kad", default=os.path.join(ROOT, "build", "kad"))
    ap.add_argument("--sizes", default="1000,2000,4000,8000,16000")
    ap.add_argument("--variant", choices=("lines", "static_range", "both"), default="both")
    ap.add_argument("--commands", default="ir,emit,grad,jvp")
    ap.add_argument("--limit", type=float, default=60.0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--line", default=LINE, help="the repeated statement (default: %(default)s)")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    cmds = a.commands.split(",")
    variants = ("lines", "static_range") if a.variant == "both" else (a.variant,)
    print(f"kad compile time, {os.cpu_count()} cores; seconds (ratio to the previous N)")
    print(f"{'variant':<13} {'N':>6} " + " ".join(f"{c:>15}" for c in cmds))
    with tempfile.TemporaryDirectory() as tmp:
        for variant in variants:
            prev = {}
            dead = set()
            for n in sizes:
                path = os.path.join(tmp, f"long_{variant}_{n}.py")
                with open(path, "w") as f:
                    f.write(kernel_source(n, variant, a.line))
                cells = []
                for c in cmds:
                    if c in dead:
                        cells.append(f"{'-':>15}")
                        continue
                    t = time_command(a.kad, path, c, a.limit, a.repeat)
                    if t is None:
                        dead.add(c)
                        cells.append(f"{'>%g' % a.limit:>15}")
                        continue
                    ratio = f" ({t / prev[c]:.1f}x)" if c in prev and prev[c] > 0 else ""
                    cells.append(f"{t:.3f}{ratio}".rjust(15))
                    prev[c] = t
                print(f"{variant:<13} {n:>6} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
