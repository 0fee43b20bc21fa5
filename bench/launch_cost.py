"""Host cost of one Triton launch: through the JIT, and through the compiled kernel's own launcher.

    python3 bench/launch_cost.py [--iters N]      (on the GPU machine)

A kernel with 14 parameters (6 tensors, 7 scalars, a constexpr) doing almost nothing, grid (4,), so
that the host is the bottleneck.  Microseconds per call (time.perf_counter over N calls,
torch.cuda.synchronize only at the ends, median of 7 repetitions) of:

  kernel[grid](...)        Triton's JIT: binding, specialization, cache key, hooks, launch
  binder + key + run       the JIT's own binder (its native specialization of every argument), a
                           dict lookup by the specialization, and CompiledKernel.run
  CompiledKernel.run       the compiled kernel's launcher alone (what a generated backward's
                           _kad_go calls for a launch it has seen: docs/GRAD.md, "Direct launches")
  binder alone, device + stream   the pieces

Used for the figures in docs/GRAD.md ("Direct launches") and docs/BENCHMARKS.md.
"""
import argparse
import statistics
import sys
import time

import torch
import triton
import triton.language as tl


@triton.jit
def k14(a, b, c, d, e, f, s0, s1, n, m, eps, p, q, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(a + offs, mask=offs < n)
    tl.store(b + offs, x * eps, mask=offs < n)


def per_call(f, n, reps=7):
    r = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        r.append((time.perf_counter() - t0) / n * 1e6)
    torch.cuda.synchronize()
    return statistics.median(r)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--iters", type=int, default=3000)
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench/launch_cost.py: needs CUDA")
    dev = torch.cuda.current_device()
    ts = [torch.randn(4096, device="cuda") for _ in range(6)]
    args = (*ts, 4096, 1, 4096, 7, 0.5, 3, 16, 1024)
    grid = (4,)
    ck = k14[grid](*args)
    torch.cuda.synchronize()
    binder = k14.device_caches[dev][4]
    stream_of = torch._C._cuda_getCurrentRawStream
    cache = {(dev, tuple(binder(*args)[1])): ck}

    def jit():
        k14[grid](*args)

    def bound():
        d = torch._C._cuda_getDevice()
        c = cache[(d, tuple(binder(*args)[1]))]
        c.run(4, 1, 1, stream_of(d), c.function, c.packed_metadata, None, None, None, *args)

    st = stream_of(dev)

    def run():
        ck.run(4, 1, 1, st, ck.function, ck.packed_metadata, None, None, None, *args)

    print(f"Triton launch host cost, {torch.cuda.get_device_name()}, torch {torch.__version__}, triton "
          f"{triton.__version__}, {a.iters} calls x 7, median, us per call")
    for name, f in (("kernel[grid](...)", jit), ("binder + key + run", bound), ("CompiledKernel.run", run),
                    ("binder alone", lambda: binder(*args)),
                    ("device + stream", lambda: stream_of(torch._C._cuda_getDevice()))):
        print(f"{name:22s} {per_call(f, a.iters):7.2f}", flush=True)


if __name__ == "__main__":
    main()
