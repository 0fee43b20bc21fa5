"""What kad's one-writer check costs (docs/AD.md, "One writer per element").

    python3 bench/race_check.py [--n ELEMENTS] [--reps R]      (on the GPU machine)

Kernels of tests/kernels/writers.py, CUDA tensors, medians of R repetitions (time.perf_counter
around each call with torch.cuda.synchronize on both sides: what the caller waits for):

  scatter_rows, n elements through a permutation (kad cannot prove the indices distinct: the
  check kernel runs): the plain Triton forward; check_scatter_rows_races alone (two int64 tag and
  info allocations, the check kernel, the host reading the counts); the decorated forward of a
  new launch key (check + forward) and of a key seen before (forward only: the check ran once).
  strided_rows, 4096 x 4096 with stride = n_cols (proven on the host): the check call, which
  evaluates the condition and runs nothing.
Prints one table; docs/BENCHMARKS.md records the figures with the date, device and command.
"""
import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [os.path.join(REPO, "python"), os.path.join(REPO, "tests")]
import kad  # noqa: E402
from kernels import writers  # noqa: E402


def timed(f, reps):
    ts = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        f()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6


def module(kernel, sig, out):
    ctx = kad._capi.Context()
    path = os.path.join(REPO, "tests", "kernels", "writers.py")
    ctx.add_source(path, open(path).read())
    text = ctx.specialize(kernel, sig).race_module(out)
    path = os.path.join(tempfile.mkdtemp(), f"race_{kernel}.py")  # Triton reads a kernel's file
    with open(path, "w") as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location(f"race_{kernel}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, f"check_{kernel}_races")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=1 << 24)
    p.add_argument("--reps", type=int, default=30)
    a = p.parse_args()
    n, B = a.n, 1024
    grid = (triton_cdiv(n, B),)
    x = torch.randn(n, device="cuda")
    idx = torch.randperm(n, device="cuda").to(torch.int32)
    o = torch.zeros(n, device="cuda")
    check = module("scatter_rows", "x_ptr=*fp32,idx_ptr=*i32,o_ptr=*fp32,n=i32,BLOCK=1024", "o_ptr")
    rows = [("scatter_rows fwd (Triton)", timed(lambda: writers.scatter_rows[grid](x, idx, o, n, BLOCK=B), a.reps))]
    check(grid, x, idx, o, n)  # compile
    rows.append(("scatter_rows check_races", timed(lambda: check(grid, x, idx, o, n), a.reps)))
    k = kad.differentiable(inputs=["x_ptr"], outputs=["o_ptr"])(writers.scatter_rows)
    xg = x.clone().requires_grad_()
    k[grid](xg, idx, o, n, BLOCK=B)  # compiles the backward module and the check
    seen = timed(lambda: k[grid](xg, idx, o, n, BLOCK=B), a.reps)
    fresh = []
    for i in range(a.reps):  # a new launch key each time: another n, the check runs again
        m = n - 1 - i
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        k[(triton_cdiv(m, B),)](xg, idx, o, m, BLOCK=B)
        torch.cuda.synchronize()
        fresh.append(time.perf_counter() - t0)
    rows.append(("decorated fwd, key seen", seen))
    rows.append(("decorated fwd, new key (check runs)", statistics.median(fresh) * 1e6))
    R, C = 4096, 4096
    xr, orow = torch.randn(R * C, device="cuda"), torch.zeros(R * C, device="cuda")
    crow = module("strided_rows", "x_ptr=*fp32,o_ptr=*fp32,stride=i32,n_cols=i32,BLOCK=4096", "o_ptr")
    assert crow((R,), xr, orow, C, C) is False
    rows.append(("strided_rows 4096^2 check_races (proven)", timed(lambda: crow((R,), xr, orow, C, C), a.reps)))
    rows.append(("strided_rows 4096^2 fwd (Triton)",
                 timed(lambda: writers.strided_rows[(R,)](xr, orow, C, C, BLOCK=C), a.reps)))
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, n = {n}, median of {a.reps}")
    print(f"{'what':44s} {'us':>10s}")
    for name, us in rows:
        print(f"{name:44s} {us:10.1f}")


def triton_cdiv(a, b):
    return -(-a // b)


if __name__ == "__main__":
    main()
