"""Issue 8's speed criterion as a user pays it: kad's deterministic backward against deterministic=False
(atomics), 4096 x 4096 fp32 and bf16, for SwiGLU, GeGLU, RMSNorm, LayerNorm, softmax and a bias-add.

    make && PYTHONPATH=python python3 bench/det_vs_atomic.py [--rounds N] [--calls N] [--kernel NAME]
    python3 bench/det_vs_atomic.py --device cpu        # a tiny smoke run on kad's interpreter

One run is robust to host drift: the two sides run interleaved, in rounds (ABAB..., which side goes
first alternating), each round timing --calls backwards of each side (torch.autograd.grad, inputs
rotated, synchronized at both ends).  Columns, in microseconds per backward:

  det, atomic      the median over rounds of each side's wall time (host and device, as a user pays it)
  det / atomic     the median of the per-round ratios (drift that hits both sides of a round cancels)
  GPU det, atomic  the device time alone: every kernel's (and memset's) time from torch.profiler,
                   summed per backward
  host det, atomic the host time alone: the wall time of one backward call started with the device
                   idle, until it returns (the launches queued, not finished); median over rounds

GPU only but for the smoke run (--device cpu: 8 x 64, fp32, the interpreter; no GPU column).  Keep
it under ~4 minutes on an H100 with the defaults.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import triton

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", p) for p in ("python", "tests", "bench")]
import gpu as B  # noqa: E402
import kad  # noqa: E402
from kernels import bias_add  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = True


def _kad_bias(t, d):
    x, b = t["x"], t["b"]
    M, N = x.shape
    y = torch.empty_like(x)
    block = min(1024, triton.next_power_of_2(N))
    return (M, triton.cdiv(N, block)), [x, b, y, x.stride(0), y.stride(0), N], dict(BLOCK_N=block), y


def _mk_xb(d, dt, dev, g):
    return dict(x=B._randn(g, dev, d["M"], d["N"]).to(dt), b=B._randn(g, dev, d["N"]).to(dt))


def rows():
    out = [(b.name, b.kad, b.make) for b in B.BENCHES
           if b.name in ("SwiGLU", "GeGLU", "RMSNorm", "LayerNorm", "softmax")]
    out.append(("bias-add", (bias_add.bias_add_kernel, ["x_ptr", "b_ptr"], ["y_ptr"], _kad_bias), _mk_xb))
    return out


def side(fn, ins, outs, launch, make, d, dt, dev, det):
    """The backward of one side, ready to call: (call(), the graphs it rotates through)."""
    k = kad.differentiable(inputs=ins, outputs=outs, deterministic=det)(fn)

    class _Bn:
        kad = (fn, ins, outs, launch)
    gs = B.graphs(B.kad_forward(k, _Bn, d), make, d, dt, dev, 0)
    return B.backward_fn(gs)


def wall(f, calls, sync):
    """Microseconds per call of `calls` calls, synchronized at both ends."""
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        f()
    sync()
    return (time.perf_counter() - t0) / calls * 1e6


def host_only(f, sync):
    """Microseconds until one call returns, started with the device idle."""
    sync()
    t0 = time.perf_counter()
    f()
    t = (time.perf_counter() - t0) * 1e6
    sync()
    return t


def compare(fa, fb, rounds, calls, sync, device):
    """(stats of a, stats of b, median ratio a/b): interleaved rounds, alternating the first."""
    wa, wb, ha, hb, ratio = [], [], [], [], []
    for r in range(rounds):
        order = ((fa, wa, ha), (fb, wb, hb)) if r % 2 == 0 else ((fb, wb, hb), (fa, wa, ha))
        for f, w, h in order:
            w.append(wall(f, calls, sync))
            h.append(host_only(f, sync))
        ratio.append(wa[-1] / wb[-1])
    med = statistics.median
    ga = B.gpu_only(fa, calls) if device == "cuda" else float("nan")
    gb = B.gpu_only(fb, calls) if device == "cuda" else float("nan")
    return (med(wa), ga, med(ha)), (med(wb), gb, med(hb)), med(ratio)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--rounds", type=int, default=0, help="interleaved rounds (default 30; 2 on cpu)")
    ap.add_argument("--calls", type=int, default=0, help="backwards per side and round (default 10; 1 on cpu)")
    ap.add_argument("--kernel", default="", help="only the kernels whose name contains this")
    a = ap.parse_args()
    cpu = a.device == "cpu"
    rounds, calls = a.rounds or (2 if cpu else 30), a.calls or (1 if cpu else 10)
    d = dict(M=8, N=64) if cpu else dict(M=4096, N=4096)
    dtypes = [("fp32", torch.float32)] if cpu else [("fp32", torch.float32), ("bf16", torch.bfloat16)]
    sync = torch.cuda.synchronize if not cpu else (lambda: None)
    if not cpu:
        os.environ.pop("TRITON_INTERPRET", None)
    print(f"kad deterministic vs atomic backward, {d['M']} x {d['N']}, "
          f"{torch.cuda.get_device_name() if not cpu else 'CPU (kad interpreter, smoke)'}, "
          f"{rounds} rounds x {calls} calls, us per backward")
    print("| kernel | dtype | det | atomic | det / atomic | GPU det | GPU atomic | host det | host atomic |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, (fn, ins, outs, launch), make in rows():
        if a.kernel.lower() not in name.lower():
            continue
        for dname, dt in dtypes:
            fa = side(fn, ins, outs, launch, make, d, dt, a.device, True)
            fb = side(fn, ins, outs, launch, make, d, dt, a.device, False)
            for f in (fa, fb):  # compile, warm up
                for _ in range(3):
                    f()
            sa, sb, r = compare(fa, fb, rounds, calls, sync, a.device)
            print(f"| {name} | {dname} | {sa[0]:.1f} | {sb[0]:.1f} | {r:.2f} | {sa[1]:.1f} | {sb[1]:.1f} "
                  f"| {sa[2]:.1f} | {sb[2]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
