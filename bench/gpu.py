"""kad's GPU benchmark: the backward as a user pays it, kad against its peers.

    python3 bench/gpu.py [--quick] [--only NAME,...] [--device cuda|cpu] [--write-doc]

For each benchmark (SwiGLU, GeGLU, RMSNorm, LayerNorm, softmax, log-softmax, cross-entropy over a
128k vocabulary, mean over a strided middle dimension, matmul + leaky ReLU, 3x3 box filter,
chunked linear attention) and each configuration (4096 x 4096 fp32 and bf16, 256 x 1024 fp32
where launch overhead dominates), it times the backward of four peers:

  kad      the kernel of tests/kernels under @kad.differentiable (default options)
  eager    PyTorch autograd of the same math written plainly with torch ops
  compile  torch.compile(that torch function, dynamic=False), compiled before timing
  hand     a Triton backward written by hand (bench/kernels/hand.py) in an autograd.Function
           around a Triton forward

What is timed: `torch.autograd.grad(y, inputs, dy, retain_graph=True)` on a graph whose forward
ran before timing, so the figure is the backward alone as autograd runs it, host work included
(kad's Function: binding, gradient allocation, the generated kernels; kad's forward is its
saving forward where the kernel has loop results to save, docs/AD.md).  Each call cycles through
ROTATE graphs on different random inputs.  Two timers, both medians:
  4096 x 4096 rows   triton.testing.do_bench (CUDA events around each call, the L2 cache cleared
                     before each), median
  256 x 1024 rows    CUDA events around LOOP back-to-back calls (no cache clearing: the data fit
                     in L2, as they would in a training step), median over repetitions of the
                     per-call mean; do_bench's cache clearing would hide the host's launch work
                     behind the clearing kernel, and that work is what these rows measure.
The peers of a row are timed interleaved (CUDA): ROUNDS rounds, each timing every peer once
(do_bench over 30 ms, or 3 repetitions of the loop), each peer's figure the median of its rounds,
so that a drift of the host's speed during the row falls on every peer alike.

On CUDA each peer's backward is also run 10 times under torch.profiler: its device time alone
(every kernel's and memset's duration summed, gpu_only), printed as a second table, so that a row
whose user-paid time is set by the host (autograd, Python, launches) can be told from one whose
kernels are slow.

The floor: for memory-bound rows, the bytes a backward must move (read what it needs, write each
gradient once; FLOOR in each benchmark) divided by the copy bandwidth measured in the same run
(a device-to-device copy: 2 x bytes / time).  For matmul, the backward's 4MNK flops divided by
the rate of torch.matmul on the same shapes and dtype measured in the same run.  Every time is
printed as a multiple of its floor; "best peer" is the fastest of eager, compile and hand, and
kad / best is kad's time over it.

Correctness: before any timing, every hand-written backward is compared with torch autograd in
float64 on small shapes (assert); then each row compares every peer's gradients with float64
autograd of the torch function on the row's own inputs (max |g - ref| / max |ref| over the
inputs) and stops if the hand peer is off.  fp32 dots run in TF32 everywhere in a GPU run
(tl.dot's default; torch.backends.cuda.matmul.allow_tf32 is set so that eager and compile match).

A peer that cannot be built or run for a row shows "—" with the reason in the notes.
--quick: 1024 x 1024 and 256 x 1024, fp32 and bf16, shorter timing runs.  --only: benchmarks by
name (comma-separated, case-insensitive, e.g. `--only swiglu,rmsnorm`).  --device cpu: tiny
shapes, kad's C interpreter and eager only (compile and hand need a GPU), perf_counter timings:
meaningless numbers, it exercises the paths (tests/python/test_bench_gpu.py).  --write-doc
replaces the section of docs/BENCHMARKS.md between `<!-- gpu.py begin -->` and `<!-- gpu.py end -->`.
"""
import argparse
import datetime
import json
import math
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
from kernels import (box_filter, cross_entropy, geglu, layer_norm, linear_attention, log_softmax,  # noqa: E402
                     matmul, mean_dim, rms_norm, softmax, swiglu)

DOC = os.path.join(REPO, "docs", "BENCHMARKS.md")
BEGIN, END = "<!-- gpu.py begin -->", "<!-- gpu.py end -->"
ROTATE = 3
ROUNDS = 5  # interleaved timing rounds per row (CUDA; one with --quick)
LOOP = 50
COPY_BYTES = 1 << 30
VOCAB = 131072
PEERS = ["kad", "eager", "compile", "hand"]
DASH = "—"


def cdiv(a, b):
    return -(-a // b)


def npo2(n):
    return triton.next_power_of_2(n)


def _warps(block):
    return 16 if block >= 4096 else 8 if block >= 2048 else 4


_HAND = []


def _hand():
    """bench/kernels/hand.py, loaded on first use (a GPU run; tests/kernels is `kernels`)."""
    if not _HAND:
        import importlib.util
        spec = importlib.util.spec_from_file_location("kad_bench_hand", os.path.join(HERE, "kernels", "hand.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _HAND.append(mod)
    return _HAND[0]


def _f32(x):
    """x in fp32 where it is a narrower float (float64 references stay float64)."""
    return x if x.dtype == torch.float64 else x.float()


# ---------------------------------------------------------------- benchmarks
#
# A benchmark: dims(R, C) -> its sizes for a configuration R x C; make(d, dt, dev, g) -> {name:
# tensor} (floating tensors are the differentiated inputs; others, like labels, are not); kad =
# (jit, inputs, outputs, launch(t, d) -> (grid, args, kwargs, y)); torch_fn(**t) -> y (eager and
# compile); hand(h, t, d) -> y; floor(d, s) -> bytes for element size s, or flops(d) for the
# compute-bound ones.


class Bench:
    def __init__(self, name, dims, make, kad, torch_fn, hand, floor=None, flops=None, shape=None, dot=None,
                 peer_ref=None):
        self.name, self.dims, self.make, self.kad, self.torch_fn, self.hand = name, dims, make, kad, torch_fn, hand
        self.floor, self.flops, self.shape, self.dot = floor, flops, shape, dot
        # peer_ref(d, gs) -> the float64 gradients for one peer's graphs, when the reference must take
        # something from that peer's own forward (see _mm_ref)
        self.peer_ref = peer_ref


def _rc(R, C):
    return dict(M=R, N=C)


def _shape_rc(d):
    return f"{d['M']} x {d['N']}"


def _randn(g, dev, *shape, scale=1.0, shift=0.0):
    return shift + scale * torch.randn(*shape, generator=g, device=dev)


def _mk_two(d, dt, dev, g):
    return dict(a=_randn(g, dev, d["M"], d["N"], scale=2).to(dt), b=_randn(g, dev, d["M"], d["N"]).to(dt))


def _mk_x_w(d, dt, dev, g):
    return dict(x=_randn(g, dev, d["M"], d["N"]).to(dt), w=_randn(g, dev, d["N"], scale=0.2, shift=1).to(dt))


def _mk_x_w_b(d, dt, dev, g):
    t = _mk_x_w(d, dt, dev, g)
    t["b"] = _randn(g, dev, d["N"], scale=0.2).to(dt)
    return t


def _mk_x(d, dt, dev, g):
    return dict(x=_randn(g, dev, d["M"], d["N"], scale=3).to(dt))


def _kad_swiglu(t, d):
    a, b = t["a"], t["b"]
    c = torch.empty_like(a)
    block = min(1024, npo2(d["N"]))
    return (d["M"], cdiv(d["N"], block)), [a, b, c, a.stride(0), d["N"]], dict(BLOCK_SIZE=block), c


def _kad_geglu(t, d):
    a, b = t["a"], t["b"]
    c = torch.empty_like(a)
    return (d["M"],), [a, b, c, a.stride(0), c.stride(0), d["N"]], dict(BLOCK_SIZE=npo2(d["N"])), c


def _kad_rms(t, d):
    x, w = t["x"], t["w"]
    y = torch.empty_like(x)
    rstd = torch.empty(d["M"], dtype=torch.float32, device=x.device)
    return (d["M"],), [x, w, y, rstd, x.stride(0), y.stride(0), d["N"], 1e-6], dict(BLOCK_SIZE=npo2(d["N"])), y


def _kad_ln(t, d):
    x, w, b = t["x"], t["w"], t["b"]
    y = torch.empty_like(x)
    mean = torch.empty(d["M"], dtype=torch.float32, device=x.device)
    rstd = torch.empty(d["M"], dtype=torch.float32, device=x.device)
    block = min(65536 // x.element_size(), npo2(d["N"]))  # as tests/kernels/layer_norm.py's wrapper
    return (d["M"],), [x, y, w, b, mean, rstd, x.stride(0), y.stride(0), d["N"], 1e-5], dict(BLOCK_N=block), y


def _kad_softmax(t, d):
    x = t["x"]
    y = torch.empty_like(x)
    block = npo2(d["N"])
    opts = dict(num_warps=_warps(block)) if x.is_cuda else {}  # as tests/kernels/softmax.py's wrapper
    return (d["M"],), [y, x, x.stride(0), y.stride(0), d["N"]], dict(BLOCK_SIZE=block, **opts), y


def _kad_log_softmax(t, d):
    x = t["x"]
    y = torch.empty_like(x)
    block = npo2(d["N"])
    opts = dict(num_warps=_warps(block)) if x.is_cuda else {}  # the softmax wrapper's choice
    return (d["M"],), [x, y, x.stride(0), y.stride(0), d["M"], d["N"]], dict(BLOCK_N=block, **opts), y


def _ce_dims(R, C):
    v = VOCAB if R * C >= 2 * VOCAB else C
    return dict(rows=R * C // v, V=v)


def _mk_ce(d, dt, dev, g):
    return dict(x=_randn(g, dev, d["rows"], d["V"], scale=2).to(dt),
                labels=torch.randint(0, d["V"], (d["rows"],), generator=g, device=dev))


def _kad_ce(t, d):
    x = t["x"]
    loss = torch.empty(d["rows"], dtype=torch.float32, device=x.device)
    lse = torch.empty(d["rows"], dtype=torch.float32, device=x.device)
    opts = dict(num_warps=32) if x.is_cuda else {}  # tests/kernels/cross_entropy.py's wrapper
    return (d["rows"],), [x, t["labels"], loss, lse, x.stride(0), d["V"], -100], \
        dict(BLOCK_SIZE=min(32768, npo2(d["V"])), **opts), loss


def _mean_dims(R, C):
    b = 16 if R >= 64 else 2
    return dict(B=b, Mr=R // b, N=C)


def _mk_mean(d, dt, dev, g):
    return dict(x=_randn(g, dev, d["B"], d["Mr"], d["N"]).to(dt))


def _kad_mean(t, d):
    x = t["x"]
    out = torch.empty(d["B"], d["N"], dtype=torch.float32, device=x.device)
    return (d["B"], cdiv(d["N"], 64)), [x, out, d["Mr"], d["N"], *x.stride(), *out.stride()], \
        dict(BLOCK_M=16, BLOCK_N=64), out


def _mm_dims(R, C):
    return dict(M=R, N=C, K=C)


def _mk_mm(d, dt, dev, g):
    return dict(a=_randn(g, dev, d["M"], d["K"], scale=d["K"] ** -0.5).to(dt), b=_randn(g, dev, d["K"], d["N"]).to(dt))


def _kad_mm(t, d):
    a, b = t["a"], t["b"]
    M, N, K = d["M"], d["N"], d["K"]
    c = torch.empty(M, N, dtype=a.dtype, device=a.device)
    grid = lambda META: (cdiv(M, META["BLOCK_M"]) * cdiv(N, META["BLOCK_N"]),)  # noqa: E731 (autotuned)
    return grid, [a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)], \
        dict(ACTIVATION="leaky_relu"), c


def _mm_ref(d, gs):
    """dA = G B^T, dB = A^T G in float64 with G = dy * leaky_relu'(c) taken from the peer's own c (its
    output y has c's sign): every peer computes c in TF32 (fp32) or bf16, and where c is near 0 its sign,
    hence leaky_relu'(c), may differ from c's in float64; those flips are the forward's rounding, not a
    wrong backward."""
    (a, b), y, dy, _ = gs[0]
    a, b = a.detach().double(), b.detach().double()
    g = dy.double() * torch.where(y.detach() >= 0, 1.0, 0.01).double()
    return g @ b.t(), a.t() @ g


def _kad_box(t, d):
    x = t["x"]
    y = torch.empty_like(x)
    H, W = x.shape
    return (cdiv(H, 16), cdiv(W, 32)), [x, y, H, W, x.stride(0), y.stride(0)], dict(BLOCK_H=16, BLOCK_W=32), y


def _la_dims(R, C):
    dim = 64 if C >= 512 else 16
    return dict(BH=max(1, C // 64), T=R, D=dim, BT=min(64, R))


def _mk_la(d, dt, dev, g):
    shape = (d["BH"], d["T"], d["D"])
    return dict(q=_randn(g, dev, *shape).to(dt), k=_randn(g, dev, *shape).to(dt), v=_randn(g, dev, *shape).to(dt))


def _la_scale(d):
    return d["D"] ** -0.5


def _kad_la(t, d):
    q, k, v = t["q"], t["k"], t["v"]
    o = torch.empty_like(v)
    T, D = d["T"], d["D"]
    return (cdiv(T, d["BT"]), d["BH"]), [q, k, v, o, _la_scale(d), T, T * D, D, T * D, D], \
        dict(BT=d["BT"], K=D, V=D), o


def _torch_la(d):
    bt, scale = d["BT"], _la_scale(d)

    def fn(q, k, v):
        BH, T, D = q.shape
        qc, kc, vc = (z.reshape(BH, T // bt, bt, D) for z in (q, k, v))
        s = (qc @ kc.transpose(-1, -2)) * scale
        s = torch.tril(s)  # causal inside the chunk
        return (s.to(v.dtype) @ vc).reshape(BH, T, D)
    return fn


def _torch_rms(x, w):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w, 1e-6)
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


BENCHES = [
    Bench("SwiGLU", _rc, _mk_two, (swiglu.swiglu_fwd_kernel, ["a_ptr", "b_ptr"], ["c_ptr"], _kad_swiglu),
          lambda d: lambda a, b: F.silu(a) * b, lambda h, t, d: h.swiglu(t["a"], t["b"]),
          floor=lambda d, s: 5 * d["M"] * d["N"] * s, shape=_shape_rc),  # read a, b, dc; write da, db
    Bench("GeGLU", _rc, _mk_two, (geglu.geglu_fwd_kernel, ["a_ptr", "b_ptr"], ["c_ptr"], _kad_geglu),
          lambda d: lambda a, b: F.gelu(a, approximate="tanh") * b, lambda h, t, d: h.geglu(t["a"], t["b"]),
          floor=lambda d, s: 5 * d["M"] * d["N"] * s, shape=_shape_rc),
    Bench("RMSNorm", _rc, _mk_x_w, (rms_norm.rms_norm_fwd_kernel, ["x_ptr", "w_ptr"], ["y_ptr"], _kad_rms),
          lambda d: _torch_rms, lambda h, t, d: h.rms_norm(t["x"], t["w"], 1e-6),
          floor=lambda d, s: 3 * d["M"] * d["N"] * s + 2 * d["N"] * s, shape=_shape_rc),  # x, dy, w; dx, dw
    Bench("LayerNorm", _rc, _mk_x_w_b, (layer_norm.layer_norm_fwd_kernel, ["X", "W", "B"], ["Y"], _kad_ln),
          lambda d: lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, 1e-5),
          lambda h, t, d: h.layer_norm(t["x"], t["w"], t["b"], 1e-5),
          floor=lambda d, s: 3 * d["M"] * d["N"] * s + 3 * d["N"] * s, shape=_shape_rc),  # x, dy, w; dx, dw, db
    Bench("softmax", _rc, _mk_x, (softmax.softmax_kernel, ["input_ptr"], ["output_ptr"], _kad_softmax),
          lambda d: lambda x: torch.softmax(x, -1), lambda h, t, d: h.softmax(t["x"]),
          floor=lambda d, s: 3 * d["M"] * d["N"] * s, shape=_shape_rc),  # x or y, dy; dx
    Bench("log-softmax", _rc, _mk_x, (log_softmax.log_softmax_kernel, ["x_ptr"], ["y_ptr"], _kad_log_softmax),
          lambda d: lambda x: torch.log_softmax(x, -1), lambda h, t, d: h.log_softmax(t["x"]),
          floor=lambda d, s: 3 * d["M"] * d["N"] * s, shape=_shape_rc),
    Bench("cross-entropy", _ce_dims, _mk_ce,
          (cross_entropy.cross_entropy_fwd_kernel, ["logits_ptr"], ["loss_ptr", "lse_ptr"], _kad_ce),
          lambda d: lambda x, labels: F.cross_entropy(_f32(x), labels, reduction="none"),
          lambda h, t, d: h.cross_entropy(t["x"], t["labels"]),
          floor=lambda d, s: 2 * d["rows"] * d["V"] * s + 16 * d["rows"],  # x, dloss, labels; dx
          shape=lambda d: f"{d['rows']} x {d['V']}"),
    Bench("mean (middle dim)", _mean_dims, _mk_mean, (mean_dim.mean_dim1_kernel, ["x_ptr"], ["out_ptr"], _kad_mean),
          lambda d: lambda x: _f32(x).mean(1), lambda h, t, d: h.mean_dim1(t["x"]),
          floor=lambda d, s: d["B"] * d["Mr"] * d["N"] * s + 4 * d["B"] * d["N"],  # dout (fp32); dx
          shape=lambda d: f"{d['B']} x {d['Mr']} x {d['N']}"),
    Bench("matmul + leaky ReLU", _mm_dims, _mk_mm, (matmul.matmul_kernel, ["a_ptr", "b_ptr"], ["c_ptr"], _kad_mm),
          lambda d: lambda a, b: F.leaky_relu(a @ b, 0.01), lambda h, t, d: h.matmul_act(t["a"], t["b"]),
          flops=lambda d: 4 * d["M"] * d["N"] * d["K"],  # dA = G B^T, dB = A^T G
          shape=lambda d: f"{d['M']} x {d['K']} @ {d['K']} x {d['N']}", dot=True,
          peer_ref=_mm_ref),
    Bench("box filter 3x3", _rc, _mk_x, (box_filter.box_filter3x3_kernel, ["src_ptr"], ["dst_ptr"], _kad_box),
          lambda d: lambda x: F.avg_pool2d(x[None], 3, 1, 1, count_include_pad=True)[0],
          lambda h, t, d: h.box_filter(t["x"]),
          floor=lambda d, s: 2 * d["M"] * d["N"] * s, shape=_shape_rc),  # dy; dx
    Bench("linear attention (intra-chunk)", _la_dims, _mk_la,
          (linear_attention.chunk_linear_attn_intra_kernel, ["q_ptr", "k_ptr", "v_ptr"], ["o_ptr"], _kad_la),
          _torch_la, lambda h, t, d: h.linear_attn(t["q"], t["k"], t["v"], _la_scale(d), d["BT"]),
          floor=lambda d, s: 7 * d["BH"] * d["T"] * d["D"] * s,  # q, k, v, do; dq, dk, dv
          shape=lambda d: f"{d['BH']} x {d['T']} x {d['D']} (chunk {d['BT']})", dot=True),
]

F32, BF16 = ("fp32", torch.float32), ("bf16", torch.bfloat16)


def configs(device, quick):
    """[(R, C, (dtype name, dtype), timer kind)]"""
    if device == "cpu":
        return [(16, 128, F32, "loop"), (16, 128, BF16, "loop")]
    big = 1024 if quick else 4096
    return [(big, big, F32, "bench"), (big, big, BF16, "bench"), (256, 1024, F32, "loop")]


# ---------------------------------------------------------------- timing


class Timer:
    def __init__(self, device, quick):
        self.device, self.quick = device, quick

    def __call__(self, fn, kind="bench"):
        """Median milliseconds per call of fn()."""
        if self.device != "cuda":
            fn()
            times = []
            for _ in range(2 if self.quick else 3):
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
            return statistics.median(times)
        if kind == "bench":
            warmup, rep = (5, 20) if self.quick else (10, 30)  # each of the ROUNDS rounds
            return triton.testing.do_bench(fn, warmup=warmup, rep=rep, return_mode="median")
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        per_call = []
        for _ in range(5 if self.quick else 3):  # each of the ROUNDS rounds: 15 in all
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(LOOP):
                fn()
            end.record()
            end.synchronize()
            per_call.append(start.elapsed_time(end) / LOOP)
        return statistics.median(per_call)


def copy_bandwidth(timer, device, nbytes):
    """Bytes per second of a device-to-device copy (read + write)."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).uniform_()
    dst = torch.empty_like(src)
    ms = timer(lambda: dst.copy_(src))
    del src, dst
    return 2 * nbytes / (ms * 1e-3)


def patch_launchers(program_cls, edit, seen=None):
    """Wraps program_cls.module (kad.autograd.Program) so that every launch_<kernel>_bwd of the
    modules it returns calls edit(kwargs) before it runs (bench/warps_sweep.py forces num_warps,
    bench/tune.py kad_tune); seen: a list each wrapped module is appended to."""
    module = program_cls.module

    def wrapped(self, *a, **k):
        m = module(self, *a, **k)
        if not getattr(m, "_kad_bench_patched", False):
            for n in list(vars(m)):
                if n.startswith("launch_") and n.endswith("_bwd"):
                    def g(grid, *args, f=getattr(m, n), **kw):
                        edit(kw)
                        return f(grid, *args, **kw)
                    setattr(m, n, g)
            m._kad_bench_patched = True
            if seen is not None:
                seen.append(m)
        return m
    program_cls.module = wrapped


def kad_backward(b, dt, R=4096, C=4096):
    """The kad peer's backward of benchmark b at R x C in dtype dt (a fresh decorated kernel, its
    graphs built), as backward_fn returns it: bench/warps_sweep.py and bench/tune.py time it."""
    d = b.dims(R, C)
    k = kad.differentiable(inputs=b.kad[1], outputs=b.kad[2])(b.kad[0])
    graphs(kad_forward(k, b, d), b.make, d, dt, "cuda", 99)  # a first step (autotuning), as run() does
    return backward_fn(graphs(kad_forward(k, b, d), b.make, d, dt, "cuda", 0))


def device_events(f, calls=10):
    """{kernel or memset name: microseconds of device time per call of f} (torch.profiler, after
    one call to warm up)."""
    from torch.profiler import ProfilerActivity, profile
    f()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            f()
        torch.cuda.synchronize()
    per = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            t = e.device_time if hasattr(e, "device_time") else e.cuda_time
            per[e.name] = per.get(e.name, 0.0) + t / calls
    return per


def gpu_only(f, calls=10):
    """Microseconds of device time per call of f: every kernel's and memset's duration from
    torch.profiler, summed (the host's work and the gaps between kernels left out)."""
    return sum(device_events(f, calls).values())


def dot_rate(timer, d, dt, device):
    """Flops per second of torch.matmul on [M, K] @ [K, N] (the matmul backward's shapes' size)."""
    a = torch.randn(d["M"], d["K"], device=device).to(dt)
    b = torch.randn(d["K"], d["N"], device=device).to(dt)
    ms = timer(lambda: torch.matmul(a, b))
    return 2 * d["M"] * d["N"] * d["K"] / (ms * 1e-3)


def graphs(forward, make, d, dt, device, seed):
    """ROTATE (differentiated inputs, y, dy) with the forward done, ready for autograd.grad."""
    out = []
    for i in range(ROTATE):
        g = torch.Generator(device=device).manual_seed(seed + i)
        t = make(d, dt, device, g)
        for v in t.values():
            if v.is_floating_point():
                v.requires_grad_()
        y = forward(t)
        dy = torch.randn(y.shape, generator=g, device=device).to(y.dtype)
        out.append(([v for v in t.values() if v.requires_grad], y, dy, t))
    return out


def backward_fn(gs):
    it = [0]

    def fn():
        inputs, y, dy, _ = gs[it[0] % len(gs)]
        it[0] += 1
        torch.autograd.grad(y, inputs, dy, retain_graph=True)
    return fn


def rel_err(gs, ref):
    """max over the inputs of max|g - ref| / max|ref| on the first graph."""
    inputs, y, dy, _ = gs[0]
    got = torch.autograd.grad(y, inputs, dy, retain_graph=True)
    return max(((a.double() - b).abs().max() / b.abs().max().clamp_min(1e-30)).item() for a, b in zip(got, ref))


def reference(bench, d, gs):
    """float64 autograd of the torch function on the first graph's inputs and cotangent."""
    _, _, dy, t = gs[0]
    t64 = {k: (v.detach().double().requires_grad_() if v.is_floating_point() else v) for k, v in t.items()}
    y = bench.torch_fn(d)(**t64)
    ins = [v for v in t64.values() if v.requires_grad]
    return torch.autograd.grad(y, ins, dy.double())


def tolerance(bench, dt):
    # dots: fp32 operands run in TF32 (10-bit mantissas); the matmul's activation derivative is taken
    # from each peer's own output (_mm_ref)
    if dt == torch.bfloat16:
        return 5e-2
    return 2e-2 if bench.dot else 1e-3


def kad_forward(k, bench, d):
    def run(t):
        grid, args, kwargs, y = bench.kad[3](t, d)
        k[grid](*args, **kwargs)
        return y
    return run


def check_hand(device):
    """Every hand-written backward against float64 torch autograd on small shapes, fp32 and bf16,
    before anything is timed: a benchmark against a wrong peer is worthless."""
    h = _hand()
    for b in BENCHES:
        for dname, dt in (F32, BF16):
            d = b.dims(128, 512) if b.name != "cross-entropy" else dict(rows=4, V=VOCAB)
            gs = graphs(lambda t: b.hand(h, t, d), b.make, d, dt, device, 123)
            err = rel_err(gs, b.peer_ref(d, gs) if b.peer_ref else reference(b, d, gs))
            tol = tolerance(b, dt)
            assert err <= tol, f"hand-written {b.name} {dname}: max rel error {err:.2e} > {tol:g}"
            print(f"check hand {b.name:32} {dname}: max rel error {err:.1e} (tolerance {tol:g})",
                  file=sys.stderr, flush=True)


def run(args):
    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit("bench/gpu.py: CUDA is not available (use --device cpu for a smoke run)")
    t_start = time.perf_counter()

    def log(msg):
        print(f"[{time.perf_counter() - t_start:6.1f}s] {msg}", file=sys.stderr, flush=True)

    benches = BENCHES
    if args.only:
        want = {w.strip().lower() for w in args.only.split(",") if w.strip()}
        benches = [b for b in BENCHES if b.name.lower() in want or b.name.lower().split()[0] in want]
        if not benches:
            sys.exit(f"bench/gpu.py: --only {args.only}: no benchmark of that name "
                     f"({', '.join(b.name for b in BENCHES)})")
    timer = Timer(device, args.quick)
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        check_hand(device)
        log("hand-written backwards checked")
    bw = copy_bandwidth(timer, device, (256 << 20) if args.quick or device == "cpu" else COPY_BYTES)
    log(f"copy bandwidth {bw / 1e9:.0f} GB/s")
    rows, notes = [], []

    def result():
        return dict(bw=bw, rows=rows, notes=notes, device=device, quick=args.quick, device_name=device_name(device),
                    torch=torch.__version__, triton=triton.__version__, date=datetime.date.today().isoformat())
    for b in benches:
        kad_k = kad.differentiable(inputs=b.kad[1], outputs=b.kad[2])(b.kad[0])
        for R, C, (dname, dt), kind in configs(device, args.quick):
            d = b.dims(R, C)
            s = torch.empty((), dtype=dt).element_size()
            if b.flops is not None:
                rate = dot_rate(timer, d, dt, device)
                floor_ms = b.flops(d) / rate * 1e3
                floor_txt = f"{b.flops(d) / 1e9:.3g} GFLOP at {rate / 1e12:.3g} TFLOP/s"
            else:
                nbytes = b.floor(d, s)
                floor_ms = nbytes / bw * 1e3
                floor_txt = f"{nbytes / 2**20:.1f} MiB" if nbytes >= 2**20 else f"{nbytes / 2**10:.1f} KiB"
            row = dict(kernel=b.name, dtype=dname, shape=b.shape(d), floor=floor_ms, floor_txt=floor_txt,
                       timer=kind, t={}, err={}, g={})
            fwd = {"kad": kad_forward(kad_k, b, d), "eager": lambda t, d=d: b.torch_fn(d)(**t)}
            if device == "cuda":
                comp = torch.compile(b.torch_fn(d), dynamic=False)  # compiles on the first (warm-up) call
                fwd["compile"] = lambda t, comp=comp: comp(**t)
                fwd["hand"] = lambda t, d=d: b.hand(_hand(), t, d)
            ref = None
            built = {}  # peer -> its graphs, timed below
            for peer in PEERS:
                if peer not in fwd:
                    row["t"][peer] = None
                    continue
                try:
                    if peer == "kad":
                        # a training loop's first step: an autotuned kernel's first launch of a shape
                        # goes through the autotuner as written; later launches run kad's saving
                        # forward (docs/AD.md, "Saved loop results"), as the graphs timed below do
                        # and its first backwards (compiled, then recorded into the native backward
                        # node later forwards get: docs/PYTHON.md, "Native backward nodes")
                        for ins_, y_, dy_, _ in graphs(fwd[peer], b.make, d, dt, device, 99):
                            torch.autograd.grad(y_, ins_, dy_)
                    gs = graphs(fwd[peer], b.make, d, dt, device, 0)
                    if peer == "kad":
                        why = sorted({str(p.native_why) for p in kad_k._plans.values()})
                        log(f"{b.name} {dname}: kad's backward node {gs[0][1].grad_fn.name()} (native: {why})")
                    if ref is None:
                        ref = reference(b, d, gs)
                    row["err"][peer] = rel_err(gs, b.peer_ref(d, gs) if b.peer_ref else ref)
                    if peer == "hand" and row["err"][peer] > tolerance(b, dt):
                        raise SystemExit(f"bench/gpu.py: hand-written {b.name} {dname} {row['shape']}: max rel "
                                         f"error {row['err'][peer]:.2e} > {tolerance(b, dt):g}")
                    backward_fn(gs)()  # the first timed call's work (a peer that fails, fails here)
                    built[peer] = gs
                except SystemExit:
                    raise
                except Exception as e:  # a peer that cannot be built: "—" and a note
                    row["t"][peer] = None
                    msg = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
                    notes.append(f"{b.name} {dname} {row['shape']}, {peer}: {type(e).__name__}: {msg}")
                    log(f"{b.name} {dname}: {peer} failed: {type(e).__name__}: {msg}")
            # the peers timed interleaved: ROUNDS rounds, each timing every peer once, the median of
            # each peer's rounds, so that a drift of the host's speed during the row (other tenants,
            # clocks) falls on every peer alike (the host-bound rows move 2-3x between runs otherwise)
            times = {peer: [] for peer in built}
            for _ in range(1 if args.quick or device != "cuda" else ROUNDS):
                for peer, gs in built.items():
                    times[peer].append(timer(backward_fn(gs), kind))
            for peer, gs in built.items():
                row["t"][peer] = statistics.median(times[peer])
                if device == "cuda":
                    row["g"][peer] = gpu_only(backward_fn(gs))
            del built
            rows.append(row)
            if args.save:  # after every row: a run stopped by a time limit keeps the rows it measured
                save(result(), args.save)
            t = row["t"]
            log(f"{b.name} {dname} {row['shape']}: " + ", ".join(
                f"{p} {t[p] * 1e3:.1f} µs" if t[p] is not None else f"{p} {DASH}" for p in PEERS) +
                f"; floor {floor_ms * 1e3:.1f} µs")
    log("done")
    return result()


def save(res, path):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(res, f)
    os.replace(path + ".tmp", path)


def table(res):
    out = [f"Copy bandwidth: {res['bw'] / 1e9:.0f} GB/s (device-to-device copy, read + write). Times are medians "
           "in microseconds of the backward as autograd runs it, (x floor) = time / floor; the floor is bytes / "
           "copy bandwidth, or for matmul 4MNK / the same run's torch.matmul rate. Timer: \"bench\" = "
           "triton.testing.do_bench (L2 cleared before each call), \"loop\" = CUDA events around "
           f"{LOOP} back-to-back calls. Best peer = fastest of eager, compile and hand." +
           (" " + res["merged"] if res.get("merged") else ""),
           "",
           "| kernel | dtype | shape | timer | floor | floor µs | kad µs | eager µs | torch.compile µs | hand Triton µs "
           "| best peer | kad / best | max rel err vs fp64 (kad, eager, compile, hand) |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in res["rows"]:
        f, t = r["floor"], r["t"]

        def cell(ms):
            return DASH if ms is None else f"{ms * 1e3:.1f} ({ms / f:.2f}x)"
        peers = [(p, t[p]) for p in ("eager", "compile", "hand") if t.get(p) is not None]
        best = min(peers, key=lambda x: x[1]) if peers else None
        ratio = f"{t['kad'] / best[1]:.2f}" if best and t.get("kad") is not None else DASH
        errs = ", ".join(f"{r['err'][p]:.0e}" if p in r["err"] else DASH for p in PEERS)
        out.append(f"| {r['kernel']} | {r['dtype']} | {r['shape']} | {r['timer']} | {r['floor_txt']} | "
                   f"{f * 1e3:.1f} | {cell(t.get('kad'))} | {cell(t.get('eager'))} | {cell(t.get('compile'))} | "
                   f"{cell(t.get('hand'))} | {best[0] if best else DASH} | {ratio} | {errs} |")
    if any(r.get("g") for r in res["rows"]):
        out += ["", "Device time alone (GPU only): every kernel's and memset's duration per backward from "
                "torch.profiler, summed, mean of 10 calls (the host's work and the gaps between kernels left "
                "out); the same rows and peers. A row whose user-paid time is far above its GPU time is "
                "host-bound (the autograd engine, the Python of the backward, the launches).", "",
                "| kernel | dtype | shape | floor µs | kad GPU µs | eager GPU µs | torch.compile GPU µs | "
                "hand Triton GPU µs | best peer (GPU) | kad / best (GPU) |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in res["rows"]:
            g, f = r.get("g") or {}, r["floor"] * 1e3

            def gcell(us):
                return DASH if us is None else f"{us:.1f} ({us / f:.2f}x)"
            peers = [(p, g[p]) for p in ("eager", "compile", "hand") if g.get(p) is not None]
            best = min(peers, key=lambda x: x[1]) if peers else None
            ratio = f"{g['kad'] / best[1]:.2f}" if best and g.get("kad") is not None else DASH
            out.append(f"| {r['kernel']} | {r['dtype']} | {r['shape']} | {f:.1f} | {gcell(g.get('kad'))} | "
                       f"{gcell(g.get('eager'))} | {gcell(g.get('compile'))} | {gcell(g.get('hand'))} | "
                       f"{best[0] if best else DASH} | {ratio} |")
    if res["notes"]:
        out += ["", "Peers that could not be built or run (\"—\"):", ""]
        out += [f"- {n}" for n in res["notes"]]
    if res["device"] != "cuda":
        out += ["", "On the CPU only kad (its C interpreter) and eager run: torch.compile and the hand-written "
                "Triton kernels need a GPU."]
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
        f"Measured {res.get('date') or datetime.date.today().isoformat()} on "
        f"{res.get('device_name') or device_name(res['device'])}, torch {res.get('torch') or torch.__version__}, "
        f"triton {res.get('triton') or triton.__version__}, kad {kad.version()}. Command: `PYTHONPATH=python {cmd}` "
        f"(after `make`).",
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
    p.add_argument("--quick", action="store_true", help="1024 x 1024 instead of 4096 x 4096, shorter timing runs")
    p.add_argument("--only", default="", help="comma-separated benchmark names (e.g. swiglu,rmsnorm)")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--write-doc", action="store_true", help="replace the gpu.py section of docs/BENCHMARKS.md")
    p.add_argument("--doc", default=DOC, help=argparse.SUPPRESS)
    p.add_argument("--save", default="", help="also write the results as JSON to this file (rewritten after every row)")
    p.add_argument("--merge", nargs="+", default=[], metavar="JSON",
                   help="do not measure: one table from the results of earlier --save runs (e.g. split by --only "
                        "to fit a time limit), in the order given")
    args = p.parse_args(argv)
    if args.merge:
        parts = []
        for path in args.merge:
            with open(path, encoding="utf-8") as f:
                parts.append(json.load(f))
        res = dict(parts[0], rows=[r for q in parts for r in q["rows"]], notes=[n for q in parts for n in q["notes"]])
        if len(parts) > 1:
            res["merged"] = (
                f"Merged from {len(parts)} runs, one after the other (each a device call, possibly a fresh machine "
                f"of the same kind); each row's floor uses its own run's copy bandwidth: " +
                ", ".join(f"{q['bw'] / 1e9:.0f} GB/s" for q in parts) + ".")
        args.only = ""
    else:
        res = run(args)
        if args.save:
            save(res, args.save)
    shown = (["--quick"] if args.quick else []) + (["--only", args.only] if args.only else []) + \
        (["--merge", "..."] if args.merge else []) + \
        (["--device", args.device] if args.device != "cuda" else []) + (["--write-doc"] if args.write_doc else [])
    text = section(res, shown)
    print(text)
    if args.write_doc:
        write_doc(text, args.doc)
    return res


if __name__ == "__main__":
    main()
