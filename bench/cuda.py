"""kad.cuda's benchmark: CUDA C kernels' backwards, kad's generated one against its peers.

    PYTHONPATH=python python3 bench/cuda.py [--quick] [--only NAME,...] [--device cuda|cpu]
                                            [--write-doc] [--save F.json] [--keep-cache]
                                            [--breakdown]

Benchmarks (forwards from tests/cuda, the kernels kad.cuda.differentiable differentiates):
  Swish       the grid-stride Swish (tests/cuda/swish_hip.hip, spelled as CUDA C), fp32
  box 3x3     the 3x3 box filter (tests/cuda/box3x3.cu), fp32, 2-D grid of 16x16 blocks
  softmax     the shared-memory row softmax (tests/cuda/softmax_rows.cu), one block per row
  LayerNorm   the warp-shuffle LayerNorm (tests/cuda/layernorm_warp.cu), one block per row
Peers, each timed in the same run:
  kad         kad.cuda.differentiable(the forward): the forward compiled as written, kad's backward
  eager       PyTorch autograd of the same math in torch ops
  compile     torch.compile of that torch function (GPU only)
  hand        the same forward with a hand-written CUDA C backward (bench/kernels/cuda_hand.cu)
              in an autograd.Function; the box filter has two: hand-scatter (atomicAdd) and
              hand-gather (each input sums the taps that read it); the Swish's forward is the
              hand-written one too
Per peer: the backward as the user pays it (`torch.autograd.grad(y, inputs, dy,
retain_graph=True)` on a graph built before timing), forward + backward as the user pays it
(the forward, then that grad call), both medians of many calls timed by CUDA events around each
call; the backward's device time (every kernel's and memset's duration from torch.profiler,
summed, per call over 10 calls).  Correctness first: every peer's gradients against float64
autograd of the torch function on the row's inputs (max |g - ref| / max |ref|); a hand peer off by
more than 1e-3 stops the run.  Also per kad row: the first launch's wall time and the nvcc compile
time of each module (kad.cuda.compile_log, in a fresh cache directory unless --keep-cache), and
the atomics in kad's generated backward (its CUDA C module, kad.cuda.backward_source).

A peer that cannot be built or run shows "—" with the reason in the notes (today kad's CUDA C
emitter refuses some backwards: grid folding, tapes).  --device cpu: tiny shapes, kad's
interpreter for kad and the hand kernels (kad.cuda.kernel), eager only besides, perf_counter
timings: meaningless numbers, it exercises the paths (tests/python/test_bench_cuda.py).
--write-doc replaces the section of docs/BENCHMARKS.md between `<!-- cuda.py begin -->` and
`<!-- cuda.py end -->`; --save writes the results as JSON.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, HERE)  # bench/gpu.py (gpu_only)

import torch  # noqa: E402

# the timed backward runs on one graph again and again (retain_graph=True), which a compiled
# backward with donated buffers refuses: every peer's graph is kept the same way
try:
    torch._functorch.config.donated_buffer = False
except AttributeError:
    pass

import kad  # noqa: E402

CUDA_DIR = os.path.join(REPO, "tests", "cuda")
HAND = os.path.join(HERE, "kernels", "cuda_hand.cu")
DOC = os.path.join(REPO, "docs", "BENCHMARKS.md")
BEGIN, END = "<!-- cuda.py begin -->", "<!-- cuda.py end -->"
PEERS = ("kad", "eager", "compile", "hand", "hand-scatter", "hand-gather")


def cdiv(a, b):
    return (a + b - 1) // b


def _read(name):
    with open(os.path.join(CUDA_DIR, name), encoding="utf-8") as f:
        return f.read()


def swish_cuda_source():
    """tests/cuda/swish_hip.hip in CUDA C's spelling (kad.cuda compiles CUDA C with nvcc)."""
    text = _read("swish_hip.hip").replace("#include <hip/hip_runtime.h>", "#include <cuda_runtime.h>")
    for hip, cu in (("hipBlockDim_x", "blockDim.x"), ("hipGridDim_x", "gridDim.x"),
                    ("hipBlockIdx_x", "blockIdx.x"), ("hipThreadIdx_x", "threadIdx.x")):
        text = text.replace(hip, cu)
    return text


class Bench:
    """name; make(shape, dev, gen) -> inputs (list of tensors) and constants; torch_fn(*inputs, **c);
    kad_fn() -> (CudaKernel, forward(*inputs) -> y, backward_source(*inputs)); hands: {peer:
    forward(*inputs) -> y}; launch: the launch's grid and ints by name."""

    def __init__(self, name, shapes, make, torch_fn, kad_fn, hands, launch):
        self.name, self.shapes, self.make, self.torch_fn, self.kad_fn, self.hands = \
            name, shapes, make, torch_fn, kad_fn, hands
        self.launch = launch  # grid_x.. and the int arguments by name (count_atomics)


def _grid_names(grid, **ints):
    g = (grid,) if isinstance(grid, int) else tuple(grid)
    g = g + (1,) * (3 - len(g))
    return {"grid_x": g[0], "grid_y": g[1], "grid_z": g[2], **ints}


def _hand_fn(fwd, bwd, n_in):
    """An autograd.Function around a forward and a hand-written backward: fwd(*ins) -> (y, saved),
    bwd(saved, dy) -> input gradients."""
    class Hand(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *ins):
            y, saved = fwd(*ins)
            ctx.saved = saved
            return y

        @staticmethod
        def backward(ctx, dy):
            return bwd(ctx.saved, dy.contiguous())
    return Hand.apply


# ---- the benchmarks ----

def _swish(dev, quick):
    n = 3000 if dev == "cpu" else (1 << 22 if quick else 1 << 24)
    block = 128 if dev == "cpu" else 256
    grid = 2 if dev == "cpu" else min(cdiv(n, block), 8 * torch.cuda.get_device_properties(0).multi_processor_count)
    fwd_k = kad.cuda.kernel(HAND, "swish_fwd")
    bwd_k = kad.cuda.kernel(HAND, "swish_bwd")

    def make(g):
        return [torch.randn(n, generator=g).to(dev)], {}

    def kad_fn():
        k = kad.cuda.differentiable(swish_cuda_source(), "swish", inputs=["x"], outputs=["y"])

        def run(x):
            y = torch.empty_like(x)
            k[grid, block](x, y, n)
            return y
        return k, run, lambda x: kad.cuda.backward_source(k, block, x, torch.empty_like(x), n)

    def fwd(x):
        y = torch.empty_like(x)
        fwd_k[grid, block](x, y, n)
        return y, x

    def bwd(x, dy):
        dx = torch.empty_like(x)
        bwd_k[grid, block](x, dy, dx, n)
        return dx
    return Bench("Swish", f"n={n}", make, lambda x: x * torch.sigmoid(x), kad_fn, {"hand": _hand_fn(fwd, bwd, 1)},
                 _grid_names(grid, n=n))


def _box(dev, quick):
    H, W = (13, 21) if dev == "cpu" else ((1024, 1024) if quick else (4096, 4096))
    block = (8, 4) if dev == "cpu" else (16, 16)
    grid = (cdiv(W, block[0]), cdiv(H, block[1]))
    fwd_k = kad.cuda.kernel(os.path.join(CUDA_DIR, "box3x3.cu"), "box3x3")
    scatter = kad.cuda.kernel(HAND, "box3x3_bwd_scatter")
    gather = kad.cuda.kernel(HAND, "box3x3_bwd_gather")

    def make(g):
        return [torch.randn(H, W, generator=g).to(dev)], {}

    def kad_fn():
        k = kad.cuda.differentiable(os.path.join(CUDA_DIR, "box3x3.cu"), "box3x3", inputs=["in"], outputs=["out"])

        def run(x):
            y = torch.empty_like(x)
            k[grid, block](x, y, H, W)
            return y
        return k, run, lambda x: kad.cuda.backward_source(k, block, x, torch.empty_like(x), H, W)

    def fwd(x):
        y = torch.empty_like(x)
        fwd_k[grid, block](x, y, H, W)
        return y, None

    def bwd_scatter(_, dy):
        dx = torch.zeros_like(dy)
        scatter[grid, block](dy, dx, H, W)
        return dx

    def bwd_gather(_, dy):
        dx = torch.empty_like(dy)
        gather[grid, block](dy, dx, H, W)
        return dx

    def ref(x):
        return torch.nn.functional.avg_pool2d(x[None], 3, 1, 1, count_include_pad=False)[0]
    return Bench("box 3x3", f"{H}x{W}", make, ref, kad_fn,
                 {"hand-scatter": _hand_fn(fwd, bwd_scatter, 1), "hand-gather": _hand_fn(fwd, bwd_gather, 1)},
                 _grid_names(grid, H=H, W=W))


def _softmax(dev, quick):
    R, C = (4, 100) if dev == "cpu" else ((1024, 4096) if quick else (4096, 4096))
    block = 32 if dev == "cpu" else 256
    t = {"BLOCK": block}
    fwd_k = kad.cuda.kernel(os.path.join(CUDA_DIR, "softmax_rows.cu"), "softmax_rows", template=t)
    bwd_k = kad.cuda.kernel(HAND, "softmax_rows_bwd", template=t)

    def make(g):
        return [torch.randn(R, C, generator=g).to(dev)], {}

    def kad_fn():
        k = kad.cuda.differentiable(os.path.join(CUDA_DIR, "softmax_rows.cu"), "softmax_rows", inputs=["x"],
                                    outputs=["y"], template=t)

        def run(x):
            y = torch.empty_like(x)
            k[R, block](x, y, C)
            return y
        return k, run, lambda x: kad.cuda.backward_source(k, block, x, torch.empty_like(x), C)

    def fwd(x):
        y = torch.empty_like(x)
        fwd_k[R, block](x, y, C)
        return y, y

    def bwd(y, dy):
        dx = torch.empty_like(y)
        bwd_k[R, block](y, dy, dx, C)
        return dx
    return Bench("softmax", f"{R}x{C}", make, lambda x: torch.softmax(x, dim=1), kad_fn,
                 {"hand": _hand_fn(fwd, bwd, 1)}, _grid_names(R, ncols=C))


def _layernorm(dev, quick):
    R, C = (3, 80) if dev == "cpu" else ((1024, 4096) if quick else (4096, 4096))
    block = 64 if dev == "cpu" else 256
    t = {"BLOCK": block}
    eps = 1e-5
    fwd_k = kad.cuda.kernel(os.path.join(CUDA_DIR, "layernorm_warp.cu"), "layernorm", template=t)
    rows_k = kad.cuda.kernel(HAND, "layernorm_bwd_rows", template=t)
    cols_k = kad.cuda.kernel(HAND, "layernorm_bwd_cols")

    def make(g):
        return [torch.randn(R, C, generator=g).to(dev), (1 + 0.1 * torch.randn(C, generator=g)).to(dev),
                (0.1 * torch.randn(C, generator=g)).to(dev)], {}

    def kad_fn():
        k = kad.cuda.differentiable(os.path.join(CUDA_DIR, "layernorm_warp.cu"), "layernorm",
                                    inputs=["x", "gamma", "beta"], outputs=["y"], template=t)

        def run(x, g, b):
            y = torch.empty_like(x)
            k[R, block](x, g, b, y, C, eps)
            return y
        return k, run, lambda x, g, b: kad.cuda.backward_source(k, block, x, g, b, torch.empty_like(x), C, eps)

    def fwd(x, g, b):
        y = torch.empty_like(x)
        fwd_k[R, block](x, g, b, y, C, eps)
        return y, (x, g)

    def bwd(saved, dy):
        x, g = saved
        dx, pg, pb = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)
        dg, db = torch.empty_like(g), torch.empty_like(g)
        rows_k[R, block](x, g, dy, dx, pg, pb, C, eps)
        cols_k[cdiv(C, 256), 256](pg, pb, dg, db, R, C)
        return dx, dg, db
    return Bench("LayerNorm", f"{R}x{C}", make,
                 lambda x, g, b: torch.nn.functional.layer_norm(x, (C,), g, b, eps=eps), kad_fn,
                 {"hand": _hand_fn(fwd, bwd, 3)}, _grid_names(R, n=C))


BENCHES = (("Swish", _swish), ("box 3x3", _box), ("softmax", _softmax), ("LayerNorm", _layernorm))


# ---- timing ----

class Timer:
    def __init__(self, dev, reps):
        self.dev, self.reps = dev, reps

    def __call__(self, f):
        """Median seconds of one call of f (CUDA events around each call on a GPU)."""
        for _ in range(3):
            f()
        ts = []
        if self.dev == "cuda":
            torch.cuda.synchronize()
            for _ in range(self.reps):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                f()
                b.record()
                b.synchronize()
                ts.append(a.elapsed_time(b) / 1e3)
        else:
            for _ in range(self.reps):
                t0 = time.perf_counter()
                f()
                ts.append(time.perf_counter() - t0)
        return statistics.median(ts)


def device_time(f, calls=10):
    """Seconds of device time per call of f (bench/gpu.py's gpu_only: every kernel's and memset's
    duration from torch.profiler)."""
    from gpu import gpu_only
    return gpu_only(f, calls) / 1e6


def breakdown(f, calls=10):
    """[(kernel or memset name, device microseconds per call)] of f, longest first (torch.profiler)."""
    from gpu import device_events
    per = {}
    for name, t in device_events(f, calls).items():
        per[name[:60]] = per.get(name[:60], 0.0) + t
    return sorted(per.items(), key=lambda kv: -kv[1])


def rel_err(gs, ref):
    return max(((g.double() - r).abs().max() / r.abs().max().clamp_min(1e-30)).item() for g, r in zip(gs, ref))


def count_atomics(text, launch=None):
    """(atomic call sites in a generated CUDA C module, those its launch reaches): a site behind
    a plain-store flag (the header's `plain_d_x: plain stores (deterministic) when COND, else
    atomicAdd`) or a gather's (`d_x: gathered by K: ... when COND, else added with atomicAdd`) is
    the fallback, not reached when every flag's COND holds for launch (names ->
    ints: grid_x.., the scalar arguments); None where a COND is not one this evaluates."""
    header = "\n".join(line[2:].strip() for line in text.splitlines() if line.startswith("//"))
    conds = re.findall(r"plain_d_\w+: plain stores \(deterministic\) when (.*?),\s*else atomic", header, flags=re.S)
    conds += re.findall(r"d_\w+: gathered by \w+: .*? when (.*?),\s*else\s+added\s+with\s+atomicAdd", header, flags=re.S)
    body = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    sites = len(re.findall(r"\batomic[A-Z]\w*\s*\(", body))
    if not conds:
        return sites, sites
    py = []
    for c in conds:
        c = re.sub(r"\((?:int64_t|int32_t|int|unsigned)\)", "", " ".join(c.split()))
        c = re.sub(r"(\d+)[uU]?[lL]{0,2}\b", r"\1", c).replace("&&", " and ").replace("||", " or ")
        if not re.fullmatch(r"[\w\s<>=!()+*-]*", c.replace(" and ", " ").replace(" or ", " ")):
            return sites, None
        py.append(c)
    try:
        holds = all(eval(c, {"__builtins__": {}}, dict(launch or {})) for c in py)
    except Exception:
        return sites, None
    return sites, 0 if holds else sites


def _reason(e):
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]


def run_bench(b, dev, timer, notes, split=False):
    """The rows of one benchmark: {peer: {...}} in PEERS order."""
    g = torch.Generator().manual_seed(0)
    ins, _ = b.make(g)
    dy = torch.randn(b.torch_fn(*ins).shape, generator=g).to(dev)
    ref_ins = [x.detach().double().requires_grad_() for x in ins]
    ref = torch.autograd.grad(b.torch_fn(*ref_ins), ref_ins, dy.double())
    fwds, info = {}, {}
    try:
        k, run, bsrc = b.kad_fn()
        info["kad"] = {"atomics": None, "first_s": None, "compile_s": None}
        log0 = len(kad.cuda.compile_log)
        t0 = time.perf_counter()
        xs = [x.detach().requires_grad_() for x in ins]
        torch.autograd.grad(run(*xs), xs, dy)
        if dev == "cuda":
            torch.cuda.synchronize()
        info["kad"]["first_s"] = time.perf_counter() - t0
        info["kad"]["compile_s"] = [(m, s, c) for m, s, c in kad.cuda.compile_log[log0:]]
        fwds["kad"] = run
    except Exception as e:  # refused (the emitter, nvcc, a launch condition): shown as "—"
        notes.append(f"{b.name}: kad — {_reason(e)}")
    try:  # the CUDA C module of kad's backward (on the CPU the interpreter runs kad's backward itself)
        sites, reached = count_atomics(bsrc(*ins), b.launch)
        info.setdefault("kad", {})["atomics"] = sites if reached is None else reached
        info["kad"]["atomic_sites"] = sites
    except Exception as e:
        if dev == "cpu":
            notes.append(f"{b.name}: kad's CUDA C backward (atomics not counted) — {_reason(e)}")
    fwds["eager"] = b.torch_fn
    if dev == "cuda":
        try:
            fwds["compile"] = torch.compile(b.torch_fn, dynamic=False)
        except Exception as e:
            notes.append(f"{b.name}: compile — {_reason(e)}")
    for name, f in b.hands.items():
        fwds[name] = f
    rows = {}
    for peer, f in fwds.items():
        try:
            xs = [x.detach().requires_grad_() for x in ins]
            err = rel_err(torch.autograd.grad(f(*xs), xs, dy), ref)
        except Exception as e:
            notes.append(f"{b.name}: {peer} — {_reason(e)}")
            continue
        if peer.startswith("hand") and err > 1e-3:
            raise SystemExit(f"{b.name}: the hand-written backward {peer} is off: rel err {err:.2e} vs float64")
        xs = [x.detach().requires_grad_() for x in ins]
        y = f(*xs)

        def bwd():
            torch.autograd.grad(y, xs, dy, retain_graph=True)

        def both():
            torch.autograd.grad(f(*xs), xs, dy)
        try:
            row = {"err": err, "bwd_s": timer(bwd), "fwd_bwd_s": timer(both),
                   "bwd_device_s": device_time(bwd) if dev == "cuda" else None}
        except Exception as e:  # a peer that cannot be timed: "—" and a note, the other rows go on
            notes.append(f"{b.name}: {peer} — {_reason(e)}")
            continue
        row.update(info.get(peer, {}))
        if split and dev == "cuda":
            parts = ", ".join(f"{n} {t:.1f}" for n, t in breakdown(bwd))
            print(f"  {b.name} {peer} bwd device µs: {parts}", flush=True)
        rows[peer] = row
    return rows


def fmt_t(s):
    return "—" if s is None else f"{s * 1e6:.1f}"


def table(results):
    lines = ["| kernel | shape | peer | bwd, user (µs) | fwd+bwd, user (µs) | bwd, device (µs) | err vs f64 | "
             "atomics in bwd | first launch (s) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        for peer in PEERS:
            row = r["peers"].get(peer)
            if row is None:
                if peer == "kad" or peer in r["expected"]:
                    lines.append(f"| {r['kernel']} | {r['shape']} | {peer} | — | — | — | — | — | — |")
                continue
            at = row.get("atomics")
            if at is not None and row.get("atomic_sites"):
                at = f"{at} ({row['atomic_sites']} fallback)" if at != row["atomic_sites"] else at
            first = row.get("first_s")
            lines.append(f"| {r['kernel']} | {r['shape']} | {peer} | {fmt_t(row['bwd_s'])} | "
                         f"{fmt_t(row['fwd_bwd_s'])} | "
                         f"{fmt_t(row['bwd_device_s'])} | {row['err']:.1e} | {'' if at is None else at} | "
                         f"{'' if first is None else f'{first:.2f}'} |")
    return "\n".join(lines)


def ratios(results):
    out = []
    for r in results:
        p = r["peers"]
        kad_row = p.get("kad")
        if kad_row is None:
            out.append(f"- {r['kernel']}: kad's backward refused (notes)")
            continue
        parts = []
        for h in ("hand", "hand-gather", "hand-scatter"):
            if h in p:
                key = "bwd_device_s" if kad_row["bwd_device_s"] is not None else "bwd_s"
                where = "device" if key == "bwd_device_s" else "user"
                parts.append(f"bwd kad/{h} {kad_row[key] / p[h][key]:.2f}x ({where})")
        if "eager" in p:
            parts.append(f"fwd+bwd kad/eager {kad_row['fwd_bwd_s'] / p['eager']['fwd_bwd_s']:.2f}x (user)")
        comp = ", ".join(f"{m} {s:.2f} s{' (cached)' if c else ''}" for m, s, c in kad_row.get("compile_s") or [])
        out.append(f"- {r['kernel']}: {'; '.join(parts)}; atomics in kad's backward: {kad_row['atomics']}"
                   + (f"; nvcc: {comp}" if comp else ""))
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=("cuda", "cpu"))
    ap.add_argument("--write-doc", action="store_true")
    ap.add_argument("--doc", default=DOC)
    ap.add_argument("--save", default="")
    ap.add_argument("--keep-cache", action="store_true", help="compile into kad's usual cache directory")
    ap.add_argument("--reps", type=int, default=0)
    ap.add_argument("--breakdown", action="store_true", help="print each peer's backward kernels' device times")
    a = ap.parse_args(argv)
    dev = a.device
    want = [w.strip().lower() for w in a.only.split(",") if w.strip()]
    names = [n.lower() for n, _ in BENCHES]
    for w in want:
        if w not in names:
            raise SystemExit(f"--only: no benchmark {w!r} (have {', '.join(n for n, _ in BENCHES)})")
    if dev == "cuda" and not a.keep_cache:
        os.environ["KAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="kad-bench-cuda-")  # first launches compile
    timer = Timer(dev, a.reps or (3 if dev == "cpu" else 50 if a.quick else 200))
    results, notes = [], []
    for name, mk in BENCHES:
        if want and name.lower() not in want:
            continue
        b = mk(dev, a.quick)
        rows = run_bench(b, dev, timer, notes, a.breakdown)
        results.append({"kernel": b.name, "shape": b.shapes, "peers": rows, "expected": list(b.hands)})
        print(f"{b.name}: done", file=sys.stderr)
    dev_name = torch.cuda.get_device_name(0) if dev == "cuda" else "CPU (kad's interpreter)"
    argv = sys.argv[1:] if argv is None else argv
    cmd = "PYTHONPATH=python python3 bench/cuda.py" + "".join(f" {x}" for x in argv)
    text = "\n".join([
        BEGIN,
        f"{datetime.date.today().isoformat()}, {dev_name}, torch {torch.__version__}, `{cmd}`",
        "",
        table(results),
        "",
        ratios(results),
        "",
        *(["Notes:", *[f"- {n}" for n in notes], ""] if notes else []),
        END,
    ])
    print(text)
    if a.write_doc:
        with open(a.doc, encoding="utf-8") as f:
            doc = f.read()
        i, j = doc.find(BEGIN), doc.find(END)
        if i < 0 or j < 0:
            raise SystemExit(f"{a.doc}: markers {BEGIN} ... {END} not found")
        with open(a.doc, "w", encoding="utf-8") as f:
            f.write(doc[:i] + text + doc[j + len(END):])
    res = {"device": dev_name, "rows": results, "notes": notes}
    if a.save:
        with open(a.save, "w") as f:
            json.dump(res, f, indent=1)
    return res


if __name__ == "__main__":
    main()
