"""Host overhead of a @kad.differentiable launch: what kad adds on the host, per call.

    python3 bench/host_overhead.py [--device cpu|cuda|stub] [--iters N] [--profile] [--kernel NAME]

Kernels: SwiGLU 64 x 1024 (tests/kernels/swiglu.py: 5 runtime arguments), a matmul with many
arguments (tests/kernels/matmul.py's JITFunction, 12 runtime arguments and 5 constexprs, fixed
blocks), the same matmul autotuned (grid a callable of the config), and RMSNorm and LayerNorm
4096 x 4096 (tests/kernels/rms_norm.py, layer_norm.py) with deterministic=True (a folded backward:
partials, a sum kernel) and deterministic=False (atomics, zero-filled gradients), so that the host
cost of both paths compares (issue 8).  On --device stub, zero-fills of large tensors are
stubbed to a dispatch (see _stub_big_fills): a GPU's host pays a launch, not a CPU memset.

--device cuda (real GPU launches, small shapes so that the host is the bottleneck), per call:

  plain fwd     the plain Triton launch  jit[grid](...)
  kad fwd       the decorated launch, nothing requires grad (binding, signature, cache lookup)
  hand fwd      a hand-written torch.autograd.Function around the plain launch (inputs require grad)
  kad fwd+grad  the decorated launch, inputs require grad (kad's autograd.Function included)
  launcher      the generated launch_<kernel>_bwd alone (gradient buffers allocated once, uninitialized):
                its checks, zero-fills, scratch and launches (not on --device cpu)
  launcher (JIT)  the same with every launch through Triton's JIT (kernel[grid](...)) instead of the
                module's direct launches of the compiled kernels (docs/GRAD.md, "Direct launches")
  floor bwd     torch.autograd.grad through a Function whose backward only allocates the input
                gradients: the engine's and a Python Function's own cost, a floor for every Function
  hand bwd      torch.autograd.grad through the hand-written Function, whose backward allocates
                zeroed input gradients and calls the same generated launch_<kernel>_bwd kad uses
  kad bwd       torch.autograd.grad through kad's Function
  hand/kad f+b  the forward with grad, then torch.autograd.grad
  eager f+b     the same math in torch ops (SwiGLU, RMSNorm, softmax 64 x 1024): forward, then torch.autograd.grad

Each figure: time.perf_counter over --iters calls after a warm-up, torch.cuda.synchronize only at
the ends, in microseconds per call.  The columns that compare with each other are timed interleaved
(15 repetitions alternating between them, median of each): the forwards (plain, kad, hand, kad
with grad), the backwards (floor, hand, kad), the forward + backward (hand, kad, eager); the
launcher columns alone (median of 5).  On --device cuda a second table gives
each call's device time (bench/gpu.py's gpu_only: every kernel's and memset's duration from
torch.profiler, mean of 20 calls): a row whose per-call figure is close to its device time is bound
by the GPU's work (the 4096 x 4096 norms' launches), not by the host.

--device cpu (no GPU: the default when CUDA is not available): the same host paths with the device
work stubbed out -- kad's interpreter call (kad.autograd.run_cpu) is replaced by a no-op, and the
hand-written Function calls no-ops -- so the figures are kad's host preparation alone (binding,
signature, cache lookup, autograd wiring, gradient allocation); "plain fwd" is then 0 by
construction and not printed.  The backward's generated module is not imported on this path (CPU
tensors take the interpreter's backward, whose call is the stubbed one).

--device stub (no GPU needed): kad's CUDA host path on CPU tensors -- the launch is typed as a CUDA
one, the forward's `kernel[grid](...)` and every Triton kernel of the generated backward module are
no-ops, so the decorated forward and the generated launch_<kernel>_bwd (guards, coverage checks,
zero-fills, partials, grids) run as on a GPU; the hand-written Function calls the same stubbed
launcher.  Tensor allocations and zero-fills are CPU ones (a CUDA one costs a few us of host time
more).  The figures to optimize kad's host path against without a GPU; "plain fwd" is 0.

--profile: cProfile of the kad forward (with grad), backward, and forward + backward of each kernel, top functions by
internal time.
"""
import argparse
import cProfile
import functools
import os
import pstats
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for p in (os.path.join(REPO, "python"), os.path.join(REPO, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

import torch  # noqa: E402

import kad  # noqa: E402
import kad.autograd  # noqa: E402
from kernels import layer_norm, matmul, rms_norm, softmax, swiglu  # noqa: E402


def cdiv(a, b):
    return -(-a // b)


# ---------------------------------------------------------------- kernels
#
# Each: name, the Triton object, inputs, outputs, make(device, requires_grad) -> (tensors dict, the
# output tensor's name), launch(t) -> (grid, args, kwargs).


def _swiglu_make(dev, rg):
    M, N = 64, 1024
    a = torch.randn(M, N, device=dev, requires_grad=rg)
    b = torch.randn(M, N, device=dev, requires_grad=rg)
    return dict(a=a, b=b, c=torch.empty(M, N, device=dev)), "c"


def _swiglu_launch(t):
    a, b, c = t["a"], t["b"], t["c"]
    M, N = a.shape
    return (M, cdiv(N, 1024)), [a, b, c, a.stride(0), N], dict(BLOCK_SIZE=1024)


def _mm_make(dev, rg):
    M, N, K = 64, 64, 64
    a = torch.randn(M, K, device=dev, requires_grad=rg)
    b = torch.randn(K, N, device=dev, requires_grad=rg)
    return dict(a=a, b=b, c=torch.empty(M, N, device=dev)), "c"


def _mm_args(t):
    a, b, c = t["a"], t["b"], t["c"]
    (M, K), N = a.shape, b.shape[1]
    return [a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)]


def _mm_launch(t):
    M, N = t["c"].shape
    return (cdiv(M, 32) * cdiv(N, 32),), _mm_args(t), dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_SIZE_M=8,
                                                            ACTIVATION="relu")


def _mm_tuned_launch(t):
    M, N = t["c"].shape
    grid = lambda META: (cdiv(M, META["BLOCK_M"]) * cdiv(N, META["BLOCK_N"]),)  # noqa: E731
    return grid, _mm_args(t), dict(ACTIVATION="relu")


def _rms_make(dev, rg):
    M = N = 4096
    x = torch.randn(M, N, device=dev, requires_grad=rg)
    w = torch.randn(N, device=dev, requires_grad=rg)
    return dict(x=x, w=w, y=torch.empty(M, N, device=dev), rstd=torch.empty(M, device=dev)), "y"


def _rms_launch(t):
    x, w, y, rstd = t["x"], t["w"], t["y"], t["rstd"]
    M, N = x.shape
    return (M,), [x, w, y, rstd, x.stride(0), y.stride(0), N, 1e-6], dict(BLOCK_SIZE=N)


def _ln_make(dev, rg):
    M = N = 4096
    x = torch.randn(M, N, device=dev, requires_grad=rg)
    w = torch.randn(N, device=dev, requires_grad=rg)
    b = torch.randn(N, device=dev, requires_grad=rg)
    return dict(X=x, W=w, B=b, Y=torch.empty(M, N, device=dev), mean=torch.empty(M, device=dev),
                rstd=torch.empty(M, device=dev)), "Y"


def _ln_launch(t):
    x, y = t["X"], t["Y"]
    M, N = x.shape
    return (M,), [x, y, t["W"], t["B"], t["mean"], t["rstd"], x.stride(0), y.stride(0), N, 1e-5], dict(BLOCK_N=N)


def _rms_small_make(dev, rg):
    M, N = 64, 1024
    x = torch.randn(M, N, device=dev, requires_grad=rg)
    w = torch.randn(N, device=dev, requires_grad=rg)
    return dict(x=x, w=w, y=torch.empty(M, N, device=dev), rstd=torch.empty(M, device=dev)), "y"


def _softmax_make(dev, rg):
    M, N = 64, 1024
    x = torch.randn(M, N, device=dev, requires_grad=rg)
    return dict(i=x, o=torch.empty(M, N, device=dev)), "o"


def _softmax_launch(t):
    x, y = t["i"], t["o"]
    M, N = x.shape
    opts = dict(num_warps=4) if x.is_cuda else {}  # bench/gpu.py's _warps(1024), as tests/kernels/softmax.py's wrapper
    return (M,), [y, x, x.stride(0), y.stride(0), N], dict(BLOCK_SIZE=N, **opts)


def _eager_rms(x, w):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, 1e-6)


# name, Triton object, inputs, outputs, make, launch[, deterministic (default True)]
KERNELS = [
    ("swiglu 64x1024", swiglu.swiglu_fwd_kernel, ["a_ptr", "b_ptr"], ["c_ptr"], _swiglu_make, _swiglu_launch),
    ("matmul 64^3 (12 args)", matmul.matmul_kernel.fn, ["a_ptr", "b_ptr"], ["c_ptr"], _mm_make, _mm_launch),
    ("matmul autotuned", matmul.matmul_kernel, ["a_ptr", "b_ptr"], ["c_ptr"], _mm_make, _mm_tuned_launch),
    ("rmsnorm 4096^2 det", rms_norm.rms_norm_fwd_kernel, ["x_ptr", "w_ptr"], ["y_ptr"], _rms_make, _rms_launch, True),
    ("rmsnorm 4096^2 atomic", rms_norm.rms_norm_fwd_kernel, ["x_ptr", "w_ptr"], ["y_ptr"], _rms_make, _rms_launch,
     False),
    ("layernorm 4096^2 det", layer_norm.layer_norm_fwd_kernel, ["X", "W", "B"], ["Y"], _ln_make, _ln_launch, True),
    ("layernorm 4096^2 atomic", layer_norm.layer_norm_fwd_kernel, ["X", "W", "B"], ["Y"], _ln_make, _ln_launch,
     False),
    ("rmsnorm 64x1024", rms_norm.rms_norm_fwd_kernel, ["x_ptr", "w_ptr"], ["y_ptr"], _rms_small_make, _rms_launch),
    ("softmax 64x1024", softmax.softmax_kernel, ["input_ptr"], ["output_ptr"], _softmax_make, _softmax_launch),
]
# the same math in torch ops, for the "eager f+b" column (PyTorch's autograd of it: forward, then grad)
EAGER = {
    "swiglu 64x1024": lambda a, b: torch.nn.functional.silu(a) * b,
    "rmsnorm 64x1024": _eager_rms,
    "softmax 64x1024": lambda x: torch.softmax(x, -1),
}


# ---------------------------------------------------------------- the hand-written baseline


def _nop(*args, **kwargs):
    return None


class Hand(torch.autograd.Function):
    """What a user would write by hand around the forward launch and the
    generated backward launcher: apply(spec, *inputs, out) -> out."""

    @staticmethod
    def forward(ctx, spec, *tensors):
        spec.fwd()
        ctx.spec = spec
        ins = tensors[:-1]
        ctx.save_for_backward(*ins)
        ctx.mark_dirty(tensors[-1])
        return tensors[-1]

    @staticmethod
    def backward(ctx, dout):
        spec = ctx.spec
        ins = ctx.saved_tensors
        dins = [torch.zeros_like(x) for x in ins]
        spec.bwd(dout, dins)
        return (None, *dins, None)


class Floor(torch.autograd.Function):
    """The least a Python autograd.Function's backward costs: apply(*inputs, out) -> out, whose
    backward only allocates the input gradients (uninitialized) and launches nothing: the engine's
    work and the Function's call, which kad's and any hand-written Function pay (column "floor bwd")."""

    @staticmethod
    def forward(ctx, *tensors):
        ctx.save_for_backward(*tensors[:-1])
        ctx.mark_dirty(tensors[-1])
        return tensors[-1]

    @staticmethod
    def backward(ctx, dout):
        return (*[torch.empty_like(x) for x in ctx.saved_tensors], None)


class HandSpec:
    """The launches of one kernel for Hand: fwd() runs the forward, bwd(dout, dins)
    the generated backward with the forward's runtime arguments."""

    def __init__(self, dk, grid, args, kwargs, device, runtime, options):
        self.dk, self.grid, self.args, self.kwargs = dk, grid, args, kwargs
        if device == "cpu":
            self.fwd_fn, self.bwd_fn = _nop, _nop
        else:
            self.fwd_fn = dk.fn[grid]
            mod = dk.program.module(*_backward_key(dk, grid, args, kwargs))
            if device == "stub":
                _stub_module(mod)
            self.bwd_fn = getattr(mod, f"launch_{dk.__name__}_bwd")
            self.mod = mod
        self.runtime, self.options = runtime, options

    def fwd(self):
        self.fwd_fn(*self.args, **self.kwargs)

    def bwd(self, dout, dins):
        self.bwd_fn(self.bgrid, *self.runtime, dout, *dins, **self.options)


class _StubKernel:
    """A Triton kernel whose launches do nothing (--device stub); tuner: the kernel's autotuner, whose
    best_config a launch sets to its first config, as Triton's Autotuner.run sets the config it ran."""

    def __init__(self, fn=None, tuner=None):
        self.fn, self.tuner = fn, tuner

    def __getitem__(self, grid):
        if self.tuner is not None:
            self.tuner.best_config = self.tuner.configs[0]
        return _nop

    def run(self, *args, **kwargs):
        return None


def _stub_module(mod):
    """Makes every @triton.jit kernel of a generated module a no-op."""
    for name, v in list(vars(mod).items()):
        if hasattr(v, "fn") and callable(getattr(v, "__getitem__", None)):
            setattr(mod, name, _StubKernel(v.fn))


def _stub_kad():
    """--device stub: CPU tensors take kad's CUDA path (device "cuda" in the bound launch), and the
    backward and saving-forward modules kad imports get no-op kernels."""
    from kad import _launch
    sig = _launch.Binder._signature
    def signature(self, values, f64_as):
        s, _, parts = sig(self, values, f64_as)
        return s, "cuda", parts
    _launch.Binder._signature = signature
    _stub_big_fills()
    for name in ("module", "save_module"):  # the backward's modules, the saving forward's (docs/AD.md)
        get = getattr(kad.autograd.Program, name)

        def stubbed(self, *a, get=get, **k):
            mod = get(self, *a, **k)
            if not getattr(mod, "_kad_stubbed", False):
                _stub_module(mod)
                mod._kad_stubbed = True
            return mod
        setattr(kad.autograd.Program, name, stubbed)


def _stub_big_fills():
    """--device stub: a zero-fill of a large CPU tensor (RMSNorm's 64 MiB gradients) would time a
    CPU memset, which a GPU's host does not pay: above 64 Ki elements, zero_, torch.zeros and
    torch.zeros_like dispatch the same op on a small tensor instead (the device's memset, stubbed
    like the kernels), so that both paths count one dispatch per fill."""
    zero_, empty, empty_like = torch.Tensor.zero_, torch.empty, torch.empty_like
    small = torch.empty(1024)

    def stub_zero_(t):
        if t.numel() <= 1 << 16:
            return zero_(t)
        zero_(small)
        return t

    def zeros(*a, **k):
        return stub_zero_(empty(*a, **k))

    def zeros_like(t, **k):
        return stub_zero_(empty_like(t, **k))
    torch.Tensor.zero_, torch.zeros, torch.zeros_like = stub_zero_, zeros, zeros_like


def _backward_key(dk, grid, args, kwargs):
    """(sig, wrt, out, deterministic) of the backward kad makes for this launch
    (all declared inputs require grad, the one output differentiated)."""
    launch = dk.bind(grid, args, kwargs, after_launch=True)
    return launch.sig, list(dk.inputs), list(dk.outputs), dk.deterministic


# ---------------------------------------------------------------- timing


def timeit(fn, iters, device, reps=5):
    """Median over reps of the mean microseconds per call of fn() over iters calls."""
    sync = torch.cuda.synchronize if device == "cuda" else _nop
    for _ in range(max(3, iters // 20)):
        fn()
    sync()
    out = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        out.append((time.perf_counter() - t0) / iters * 1e6)
    return statistics.median(out)


def timeit_interleaved(fns, iters, device, reps=15):
    """timeit for several calls compared with each other: the repetitions alternate between them
    (rep 1 of each, then rep 2 of each, ...), so that a drift of the host's speed during the run
    (other tenants, clocks) falls on every column alike; median over reps per call."""
    sync = torch.cuda.synchronize if device == "cuda" else _nop
    for fn in fns.values():
        for _ in range(max(3, iters // 20)):
            fn()
    sync()
    out = {k: [] for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            sync()
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            sync()
            out[k].append((time.perf_counter() - t0) / iters * 1e6)
    return {k: statistics.median(v) for k, v in out.items()}


def measure(entry, device, iters, profile):
    name, fn, inputs, outputs, make, launch = entry[:6]
    det = entry[6] if len(entry) > 6 else True
    dk = kad.differentiable(inputs=inputs, outputs=outputs, deterministic=det)(fn)
    if device == "stub":
        dk.fn = _StubKernel(getattr(fn, "fn", None), dk._autotuner)  # the forward's launch, a no-op
    rows, fns = {}, {}  # column -> us per call; column -> the timed call (for its device time)
    device_rows = None  # column -> device us per call (CUDA only)

    def time_col(col, f):
        rows[col] = timeit(f, iters, device)
        fns[col] = f

    # tensors that do not require grad: plain launch and kad's no-grad forward
    tdev = "cpu" if device == "stub" else device
    t0, _ = make(tdev, False)
    grid, args, kwargs = launch(t0)
    fwd = {}  # the forward columns, compared with each other: timed interleaved below
    if device == "cuda":
        fwd["plain fwd"] = functools.partial(lambda g, a, k: fn[g](*a, **k), grid, args, kwargs)
    fwd["kad fwd"] = functools.partial(lambda g, a, k: dk[g](*a, **k), grid, args, kwargs)

    # inputs that require grad
    t, oname = make(tdev, True)
    grid, args, kwargs = launch(t)
    dk[grid](*args, **kwargs)  # compiles, autotunes on a GPU
    after = dk.bind(grid, args, kwargs, after_launch=True)
    opts = {k: after.options[k] for k in ("num_warps", "num_stages") if k in after.options}
    runtime = [v.detach() if isinstance(v, torch.Tensor) else v for _, v in after.runtime]
    spec = HandSpec(dk, grid, args, kwargs, device, runtime, opts)
    spec.bgrid = after.grid
    ins = [t[n[0]] for n in inputs]  # a_ptr -> a, b_ptr -> b
    out = t[oname]
    dy = torch.randn_like(out)

    def out_tensor():
        return torch.empty_like(out)

    def hand_fwd():
        o = out_tensor()
        return Hand.apply(spec, *ins, o)

    def kad_fwd():
        o = out_tensor()
        a2 = [o if v is out else v for v in args]
        dk[grid](*a2, **kwargs)
        return o

    for _ in range(3):  # a training loop's first steps: compiled, then recorded (native backward node)
        torch.autograd.grad(kad_fwd(), ins, dy)
    fwd["hand fwd"] = hand_fwd
    fwd["kad fwd+grad"] = kad_fwd
    rows.update(timeit_interleaved(fwd, iters, device))
    fns.update(fwd)
    y_hand, y_kad = hand_fwd(), kad_fwd()
    print(f"{name}: kad's backward node: {y_kad.grad_fn.name()}", file=sys.stderr)
    if device != "cpu":  # the generated launch_<kernel>_bwd alone, gradient buffers given
        dins = [torch.empty_like(x) for x in ins]
        time_col("launcher", lambda: spec.bwd(dy, dins))
        if device == "cuda" and hasattr(spec.mod, "_kad_ck"):  # the same, every launch through the JIT
            mod, ck = spec.mod, spec.mod._kad_ck
            mod._kad_plans.clear()
            mod._kad_ck = lambda dev: None
            rows["launcher (JIT)"] = timeit(lambda: spec.bwd(dy, dins), iters, device)
            mod._kad_ck = ck
            mod._kad_plans.clear()
    y_floor = Floor.apply(*ins, out_tensor())
    bwd = {"floor bwd": lambda: torch.autograd.grad(y_floor, ins, dy, retain_graph=True),
           "hand bwd": lambda: torch.autograd.grad(y_hand, ins, dy, retain_graph=True),
           "kad bwd": lambda: torch.autograd.grad(y_kad, ins, dy, retain_graph=True)}
    rows.update(timeit_interleaved(bwd, iters, device))
    fns.update(bwd)
    # the fwd+bwd columns are compared with each other (the target: kad's <= eager's): timed interleaved
    fb = {"hand f+b": lambda: torch.autograd.grad(hand_fwd(), ins, dy),
          "kad f+b": lambda: torch.autograd.grad(kad_fwd(), ins, dy)}
    eager = EAGER.get(name)
    if eager is not None and device == "cuda":  # on the CPU the eager ops would be the CPU's real work
        fb["eager f+b"] = lambda: torch.autograd.grad(eager(*ins), ins, dy)
    rows.update(timeit_interleaved(fb, iters, device))
    fns.update(fb)
    if device == "cuda":  # the device time of each call: a host figure at or below it is the GPU's, not the host's
        from gpu import gpu_only
        device_rows = {col: gpu_only(f, 20) for col, f in fns.items()}

    if profile:
        for what, f in (("kad fwd+grad", kad_fwd),
                        ("kad bwd", lambda: torch.autograd.grad(y_kad, ins, dy, retain_graph=True)),
                        ("kad f+b", lambda: torch.autograd.grad(kad_fwd(), ins, dy))):
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(iters):
                f()
            pr.disable()
            print(f"\n== cProfile: {name}, {what}, {iters} calls")
            pstats.Stats(pr).sort_stats("tottime").print_stats(18)
    return rows, device_rows


COLUMNS = ["plain fwd", "kad fwd", "hand fwd", "kad fwd+grad", "launcher", "launcher (JIT)", "floor bwd", "hand bwd", "kad bwd", "hand f+b",
           "kad f+b", "eager f+b"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda", "stub"], default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--iters", type=int, default=0, help="calls per repetition (default 2000 on cuda, 1000 on cpu)")
    ap.add_argument("--profile", action="store_true", help="cProfile kad's forward and backward")
    ap.add_argument("--kernel", default="", help="only the kernels whose name contains this")
    a = ap.parse_args()
    iters = a.iters or (2000 if a.device == "cuda" else 1000)
    if a.device == "cpu":
        kad.autograd.run_cpu = _nop  # the interpreter's launches: the device work, stubbed
    elif a.device == "stub":
        _stub_kad()
    else:
        # a GPU run must run on the GPU, never the interpreter
        os.environ.pop("TRITON_INTERPRET", None)
    torch.manual_seed(0)
    dev = (torch.cuda.get_device_name() if a.device == "cuda" else
           "CPU, kad's CUDA host path, Triton launches stubbed" if a.device == "stub" else "CPU (device work stubbed)")
    print(f"kad host overhead, {dev}, torch {torch.__version__}, kad {kad.version()}, {iters} calls x 15 (interleaved), "
          f"median, us per call")
    cols = [c for c in COLUMNS if (a.device == "cuda" or c not in ("plain fwd", "launcher (JIT)", "eager f+b"))
            and (a.device != "cpu" or c != "launcher")]
    print(f"{'kernel':24s}" + "".join(f"{c:>14s}" for c in cols))
    device_rows = []
    for entry in KERNELS:
        if a.kernel not in entry[0]:
            continue
        rows, dev_rows = measure(entry, a.device, iters, a.profile)
        print(f"{entry[0]:24s}" + "".join(f"{rows[c]:14.1f}" if c in rows else f"{'-':>14s}" for c in cols),
              flush=True)
        if dev_rows is not None:
            device_rows.append((entry[0], dev_rows))
    if device_rows:
        print("\ndevice time per call (us: every kernel's and memset's duration, torch.profiler, mean of 20 calls); "
              "a host figure above that is close to it is bound by the GPU, not by the host")
        dcols = [c for c in cols if c != "launcher (JIT)"]
        print(f"{'kernel':24s}" + "".join(f"{c:>14s}" for c in dcols))
        for name, dev_rows in device_rows:
            print(f"{name:24s}" + "".join(f"{dev_rows[c]:14.1f}" if c in dev_rows else f"{'-':>14s}" for c in dcols))


if __name__ == "__main__":
    main()
