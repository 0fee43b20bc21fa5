"""kad's GPU benchmark: the backward as a user pays it through the Python package.

    python3 bench/gpu.py [--quick] [--device cuda|cpu] [--write-doc]

For SwiGLU (a, b), GeGLU (a, b), RMSNorm (x, w), LayerNorm (x, w, b), softmax (x) and bias-add
(x, b) at 4096 x 4096 (weights of 4096), fp32 and bf16, it times

  kad        the kernel of tests/kernels under @kad.differentiable (deterministic, the default)
  atomics    the same with deterministic=False (input gradients accumulated with tl.atomic_add)
  eager      PyTorch autograd of the same math written with torch ops

What is timed: `torch.autograd.grad(y, inputs, dy, retain_graph=True)` on a graph built once
before timing, so only the backward runs: kad's autograd Function (argument binding, gradient
allocation, zero-fill where the module needs it, the generated kernels) or eager's backward
kernels.  Each call cycles through ROTATE graphs built on different random inputs, and
triton.testing.do_bench clears the L2 cache before each call: nothing is served from a warm cache.
The figure is do_bench's median (ms): the time a user pays, host work included.  The "GPU only"
columns are the summed durations of the kernels one call launches (torch.profiler, mean over 40
calls): the generated kernels' cost without the host's launch path.

The floor: the bytes a backward that materializes every input gradient must move (read the
inputs it needs and dy, write each gradient once; per kernel in FLOOR_BYTES), divided by the copy
bandwidth measured in the same run (a device-to-device copy of COPY_BYTES: 2 x bytes / time).
Each time is printed as a multiple of that floor.  Eager bias-add passes dy through as dx
without a copy, so it can beat the floor.

--quick: 1024 x 1024 and shorter do_bench runs.  --device cpu: tiny shapes on kad's C
interpreter and eager CPU torch, timed with perf_counter (meaningless numbers; it exercises
every path: see tests/python/test_bench_gpu.py).  --write-doc replaces the section of
docs/BENCHMARKS.md between the markers `<!-- gpu.py begin -->` and `<!-- gpu.py end -->`.
"""
import argparse
import datetime
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for p in (os.path.join(REPO, "python"), os.path.join(REPO, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402

import kad  # noqa: E402
from kernels import bias_add, box_filter, geglu, layer_norm, rms_norm, softmax, swiglu  # noqa: E402

DOC = os.path.join(REPO, "docs", "BENCHMARKS.md")
BEGIN, END = "<!-- gpu.py begin -->", "<!-- gpu.py end -->"
ROTATE = 3
COPY_BYTES = 1 << 30


def cdiv(a, b):
    return -(-a // b)


def npo2(n):
    return triton.next_power_of_2(n)


# ---------------------------------------------------------------- kernels
#
# Each: inputs (make(M, N, dtype, device, gen) -> {name: tensor}), the kad launch
# (launch(k, t) -> (grid, args, kwargs, y)), the eager math (eager(t) -> y), and the floor's byte
# count floor(M, N, s) for element size s.


def _two(M, N, dt, dev, g):
    return dict(a=2 * torch.randn(M, N, generator=g, device=dev).to(dt),
                b=torch.randn(M, N, generator=g, device=dev).to(dt))


def _x_w(M, N, dt, dev, g):
    return dict(x=torch.randn(M, N, generator=g, device=dev).to(dt),
                w=(1 + 0.2 * torch.randn(N, generator=g, device=dev)).to(dt))


def _x_w_b(M, N, dt, dev, g):
    t = _x_w(M, N, dt, dev, g)
    t["b"] = (0.2 * torch.randn(N, generator=g, device=dev)).to(dt)
    return t


def _x(M, N, dt, dev, g):
    return dict(x=3 * torch.randn(M, N, generator=g, device=dev).to(dt))


def _x_b(M, N, dt, dev, g):
    return dict(x=torch.randn(M, N, generator=g, device=dev).to(dt), b=torch.randn(N, generator=g, device=dev).to(dt))


def _swiglu(t):
    a, b = t["a"], t["b"]
    M, N = a.shape
    c = torch.empty_like(a)
    block = min(1024, npo2(N))
    return (M, cdiv(N, block)), [a, b, c, a.stride(0), N], dict(BLOCK_SIZE=block), c


def _geglu(t):
    a, b = t["a"], t["b"]
    M, N = a.shape
    c = torch.empty_like(a)
    return (M,), [a, b, c, a.stride(0), c.stride(0), N], dict(BLOCK_SIZE=npo2(N)), c


def _rms_norm(t):
    x, w = t["x"], t["w"]
    M, N = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty(M, dtype=torch.float32, device=x.device)
    return (M,), [x, w, y, rstd, x.stride(0), y.stride(0), N, 1e-6], dict(BLOCK_SIZE=npo2(N)), y


def _layer_norm(t):
    x, w, b = t["x"], t["w"], t["b"]
    M, N = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(M, dtype=torch.float32, device=x.device)
    rstd = torch.empty(M, dtype=torch.float32, device=x.device)
    block = min(65536 // x.element_size(), npo2(N))  # as tests/kernels/layer_norm.py's wrapper
    return (M,), [x, y, w, b, mean, rstd, x.stride(0), y.stride(0), N, 1e-5], dict(BLOCK_N=block), y


def _softmax(t):
    x = t["x"]
    M, N = x.shape
    y = torch.empty_like(x)
    block = npo2(N)
    opts = dict(num_warps=16 if block >= 4096 else 8 if block >= 2048 else 4) if x.is_cuda else {}
    return (M,), [y, x, x.stride(0), y.stride(0), N], dict(BLOCK_SIZE=block, **opts), y


def _bias_add(t):
    x, b = t["x"], t["b"]
    M, N = x.shape
    y = torch.empty_like(x)
    block = min(1024, npo2(N))
    return (M, cdiv(N, block)), [x, b, y, x.stride(0), y.stride(0), N], dict(BLOCK_N=block), y


def _box(t):
    x = t["x"]
    H, W = x.shape
    y = torch.empty_like(x)
    return (cdiv(H, 16), cdiv(W, 32)), [x, y, H, W, x.stride(0), y.stride(0)], dict(BLOCK_H=16, BLOCK_W=32), y


def _eager_rms(t):
    x, w = t["x"], t["w"]
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w, 1e-6)
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


KERNELS = [
    # name, fn, inputs, outputs, make, launch, eager, floor bytes (M, N, s)
    ("SwiGLU", swiglu.swiglu_fwd_kernel, ["a_ptr", "b_ptr"], ["c_ptr"], _two, _swiglu,
     lambda t: F.silu(t["a"]) * t["b"], lambda M, N, s: 5 * M * N * s),  # read a, b, dc; write da, db
    ("GeGLU", geglu.geglu_fwd_kernel, ["a_ptr", "b_ptr"], ["c_ptr"], _two, _geglu,
     lambda t: F.gelu(t["a"], approximate="tanh") * t["b"], lambda M, N, s: 5 * M * N * s),
    ("RMSNorm", rms_norm.rms_norm_fwd_kernel, ["x_ptr", "w_ptr"], ["y_ptr"], _x_w, _rms_norm, _eager_rms,
     lambda M, N, s: 3 * M * N * s + 2 * N * s),  # read x, dy, w; write dx, dw
    ("LayerNorm", layer_norm.layer_norm_fwd_kernel, ["X", "W", "B"], ["Y"], _x_w_b, _layer_norm,
     lambda t: F.layer_norm(t["x"], (t["x"].shape[-1],), t["w"], t["b"], 1e-5),
     lambda M, N, s: 3 * M * N * s + 3 * N * s),  # read x, dy, w; write dx, dw, db
    ("softmax", softmax.softmax_kernel, ["input_ptr"], ["output_ptr"], _x, _softmax,
     lambda t: torch.softmax(t["x"], -1), lambda M, N, s: 3 * M * N * s),  # read x (or y), dy; write dx
    ("bias-add", bias_add.bias_add_kernel, ["x_ptr", "b_ptr"], ["y_ptr"], _x_b, _bias_add,
     lambda t: t["x"] + t["b"], lambda M, N, s: 2 * M * N * s + N * s),  # read dy; write dx, db
    ("box filter 3x3", box_filter.box_filter3x3_kernel, ["src_ptr"], ["dst_ptr"], _x, _box,
     lambda t: F.avg_pool2d(t["x"][None], 3, 1, 1, count_include_pad=True)[0],
     lambda M, N, s: 2 * M * N * s),  # read dy; write dx
]

DTYPES = [("fp32", torch.float32), ("bf16", torch.bfloat16)]


# ---------------------------------------------------------------- timing


class Timer:
    def __init__(self, device, quick):
        self.device, self.quick = device, quick

    def __call__(self, fn):
        """Median milliseconds of fn()."""
        if self.device == "cuda":
            warmup, rep = (5, 20) if self.quick else (25, 100)
            return triton.testing.do_bench(fn, warmup=warmup, rep=rep, return_mode="median")
        fn()
        times = []
        for _ in range(2 if self.quick else 5):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)


def copy_bandwidth(timer, device, nbytes):
    """Bytes per second of a device-to-device copy (read + write)."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)
    ms = timer(lambda: dst.copy_(src))
    del src, dst
    return 2 * nbytes / (ms * 1e-3)


def graphs(launch_y, make, M, N, dt, device, seed):
    """ROTATE (inputs, y, dy) triples with the forward done, ready for autograd.grad."""
    out = []
    for i in range(ROTATE):
        g = torch.Generator(device=device).manual_seed(seed + i)
        t = {n: v.requires_grad_() for n, v in make(M, N, dt, device, g).items()}
        y = launch_y(t)
        dy = torch.randn(y.shape, generator=g, device=device).to(y.dtype)
        out.append((list(t.values()), y, dy))
    return out


def backward_timer(timer, gs):
    it = [0]

    def fn():
        inputs, y, dy = gs[it[0] % len(gs)]
        it[0] += 1
        torch.autograd.grad(y, inputs, dy, retain_graph=True)
    return timer(fn)


def gpu_timer(gs, quick):
    """Milliseconds of GPU work per backward call: the durations of every kernel (memsets and
    copies included) the call launches, summed over many calls under torch.profiler and divided
    by their number.  The host's Python work (autograd, kad's launch path, Triton's launcher) and
    the gaps it leaves on the GPU are not counted: this isolates the generated kernels from the
    launch overhead (the speed issue's subject).  None if the profiler gives no kernel times."""
    from torch.profiler import ProfilerActivity, profile
    it = [0]

    def fn():
        inputs, y, dy = gs[it[0] % len(gs)]
        it[0] += 1
        torch.autograd.grad(y, inputs, dy, retain_graph=True)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    n = 10 if quick else 40
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    total_us = 0.0
    for e in prof.key_averages():
        total_us += getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0.0) or 0.0
    return total_us / n / 1e3 if total_us > 0 else None


def kad_launcher(k, launch):
    def run(t):
        grid, args, kwargs, y = launch(t)
        k[grid](*args, **kwargs)
        return y
    return run


def max_rel_diff(gs_a, gs_b):
    """max over inputs of max|ga - gb| / max|gb| on the first graph of each (same inputs)."""
    (ia, ya, dya), (ib, yb, dyb) = gs_a[0], gs_b[0]
    ga = torch.autograd.grad(ya, ia, dya, retain_graph=True)
    gb = torch.autograd.grad(yb, ib, dyb, retain_graph=True)
    return max(((a.double() - b.double()).abs().max() / b.double().abs().max().clamp_min(1e-30)).item()
               for a, b in zip(ga, gb))


def run(args):
    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit("bench/gpu.py: CUDA is not available (use --device cpu for a smoke run)")
    if device == "cuda":
        M = N = 1024 if args.quick else 4096
        copy_bytes = (256 << 20) if args.quick else COPY_BYTES
    else:
        (M, N), copy_bytes = ((8, 128) if args.quick else (64, 512)), 64 << 20
    timer = Timer(device, args.quick)
    bw = copy_bandwidth(timer, device, copy_bytes)
    rows = []
    for name, fn, inputs, outputs, make, launch, eager, floor in KERNELS:
        k_det = kad.differentiable(inputs=inputs, outputs=outputs)(fn)
        k_atom = kad.differentiable(inputs=inputs, outputs=outputs, deterministic=False)(fn)
        for dname, dt in DTYPES:
            s = torch.empty((), dtype=dt).element_size()
            nbytes = floor(M, N, s)
            floor_ms = nbytes / bw * 1e3
            g_det = graphs(kad_launcher(k_det, launch), make, M, N, dt, device, 0)
            g_atom = graphs(kad_launcher(k_atom, launch), make, M, N, dt, device, 0)
            g_eager = graphs(eager, make, M, N, dt, device, 0)
            err = max_rel_diff(g_det, g_eager)
            t = {}
            for label, gs in (("kad", g_det), ("atomics", g_atom), ("eager", g_eager)):
                t[label] = backward_timer(timer, gs)
                t[label + "_gpu"] = gpu_timer(gs, args.quick) if device == "cuda" else None
            del g_det, g_atom, g_eager
            rows.append(dict(kernel=name, dtype=dname, bytes=nbytes, floor=floor_ms, err=err, **t))
            print(f"{name:9} {dname}: kad {t['kad']:.4f} ms, atomics {t['atomics']:.4f} ms, "
                  f"eager {t['eager']:.4f} ms, floor {floor_ms:.4f} ms", file=sys.stderr, flush=True)
    return dict(M=M, N=N, bw=bw, copy_bytes=copy_bytes, rows=rows, device=device)


def table(res):
    out = [f"Copy bandwidth: {res['bw'] / 1e9:.0f} GB/s (device-to-device copy of {res['copy_bytes'] >> 20} MiB, "
           f"read + write). Shape {res['M']} x {res['N']}; times are medians in microseconds, "
           f"(x floor) = time / (bytes / bandwidth).",
           "",
           "| kernel | dtype | floor bytes | floor µs | kad (deterministic) µs | kad atomics µs | eager µs | "
           "kad / atomics | kad / eager | GPU only: kad µs | GPU only: atomics µs | GPU only: eager µs | "
           "GPU only: kad / atomics | max rel diff kad vs eager |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in res["rows"]:
        f = r["floor"]

        def cell(ms):
            return f"{ms * 1e3:.1f} ({ms / f:.2f}x)"
        size = f"{r['bytes'] / 2**20:.1f} MiB" if r["bytes"] >= 2**20 else f"{r['bytes']} B"
        def gcell(ms):
            return "n/a" if ms is None else cell(ms)
        ka, aa = r.get("kad_gpu"), r.get("atomics_gpu")
        ratio = f"{ka / aa:.2f}" if ka and aa else "n/a"
        out.append(f"| {r['kernel']} | {r['dtype']} | {size} | {f * 1e3:.1f} | {cell(r['kad'])} | "
                   f"{cell(r['atomics'])} | {cell(r['eager'])} | {r['kad'] / r['atomics']:.2f} | "
                   f"{r['kad'] / r['eager']:.2f} | {gcell(ka)} | {gcell(aa)} | {gcell(r.get('eager_gpu'))} | "
                   f"{ratio} | {r['err']:.1e} |")
    return "\n".join(out)


def device_name(device):
    if device == "cuda":
        return torch.cuda.get_device_name(0)
    import platform
    return f"CPU ({platform.processor() or platform.machine()})"


def section(res, argv):
    cmd = " ".join(["python3", "bench/gpu.py"] + argv)
    return "\n".join([
        BEGIN,
        f"Measured {datetime.date.today().isoformat()} on {device_name(res['device'])}, torch {torch.__version__}, "
        f"triton {triton.__version__}, kad {kad.version()}. Command: `PYTHONPATH=python {cmd}` (after `make`).",
        "",
        table(res),
        END,
    ])


def write_doc(text, path=DOC):
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    a, b = doc.find(BEGIN), doc.find(END)
    if a < 0 or b < a:
        raise SystemExit(f"{path}: markers {BEGIN} ... {END} not found")
    doc = doc[:a] + text + doc[b + len(END):]
    with open(path, "w", encoding="utf-8") as f:
        f.write(doc)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="smaller shapes and shorter timing runs")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--write-doc", action="store_true", help="replace the gpu.py section of docs/BENCHMARKS.md")
    p.add_argument("--doc", default=DOC, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    res = run(args)
    shown = (["--quick"] if args.quick else []) + (["--device", args.device] if args.device != "cuda" else []) + \
        (["--write-doc"] if args.write_doc else [])
    text = section(res, shown)
    print(text)
    if args.write_doc:
        write_doc(text, args.doc)
    return res


if __name__ == "__main__":
    main()
