"""Bitwise determinism and batch invariance of kad's generated backwards (issue 8), on a GPU.

For each kernel below, made differentiable with the default `kad.differentiable(...)`
(deterministic=True), in fp32 and bf16 at 2048 x 4096 (weights and biases of 4096):

- test_bitwise_deterministic: forward + `torch.autograd.grad` 20 times on the same inputs and the
  same output gradient; every input gradient must equal the first run's bit for bit (compared as
  int16/int32 views, so NaNs and signed zeros count too).
- test_no_atomics: the generated module (`kad.backward_source`) must not accumulate any input
  gradient with `tl.atomic_add` unconditionally (its header says, per gradient, how it is
  written).  A gradient written without atomics when a runtime condition holds (the launcher
  evaluates it and passes a tl.constexpr, so Triton compiles only the branch taken) is printed as
  a note.  For the kernels the issue names (SwiGLU, GeGLU, RMSNorm, LayerNorm, softmax, bias-add)
  the kernels compiled for these launches must contain no atomic read-modify-write at all
  (`tt.atomic_rmw` in their TTIR, on CUDA).
  An atomic is allowed only for a (kernel, gradient) in ALLOW_ATOMICS, with its reason
  (data-dependent indices): a regression cannot hide behind a lucky run.
- test_batch_invariant (row-wise kernels): the gradient of row r computed in a batch of 1 row
  equals, bit for bit, row r of the gradient computed in the batch of 2048 rows.
- test_matches_torch: the gradients against PyTorch autograd of the same math written plainly
  (float64 reference on the same rounded inputs).  Error = max|kad - ref| / max|ref| per input:
  fp32 1e-4 (Triton's fp32 transcendentals are approximations), bf16 2e-2 (the gradient is rounded
  to bf16 once: 2^-9 relative, plus bf16 roundings inside the forward that the fp64 reference
  does not make).
- test_corpus_kernel_deterministic: every kernel the package corpus test
  (tests/python/test_package_corpus.py) launches, at that test's shapes: 20 runs bitwise equal and
  the atomics rule above.

Skipped when CUDA is not available.  KAD_DETERMINISM_CPU=1 runs everything on CPU tensors (kad's
interpreter) at 8 x 256 and 3 repetitions instead, to check the script itself: the interpreter is
sequential, so only the atomics rule can fail there.
"""
import os
import re
import sys

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
for p in (os.path.join(REPO, "python"), os.path.join(REPO, "tests", "python"), os.path.join(REPO, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

if torch.cuda.is_available():
    DEVICE, ROWS, COLS, REPS = "cuda", 2048, 4096, 20
elif os.environ.get("KAD_DETERMINISM_CPU") == "1":
    DEVICE, ROWS, COLS, REPS = "cpu", 8, 256, 3
else:
    pytest.skip("needs CUDA (KAD_DETERMINISM_CPU=1 runs a small CPU check of the script)", allow_module_level=True)
os.environ.setdefault("KAD_TEST_DEVICE", DEVICE)  # the package corpus cases put their tensors there

import kad  # noqa: E402
import test_package_corpus as pc  # noqa: E402
import test_package_models as pm  # noqa: E402
from kernels import bias_add, geglu, layer_norm, log_softmax, rms_norm, softmax, swiglu  # noqa: E402

F = torch.nn.functional

# (kernel id, gradient parameter) -> why an atomic_add is unavoidable there.  Only data-dependent
# indices (gathers/scatters through loaded integers) belong here.  Kernel ids: the SPECS ids
# below, "corpus:<id>" for the cases of test_package_corpus.py.
ALLOW_ATOMICS = {
    ("corpus:cross_entropy_taped", "logits_ptr"): "the target logit is read at the row's label, a loaded integer: "
                                                   "kad cannot express that offset, so its kernel of scattered "
                                                   "sites adds it with tl.atomic_add after the dense part is "
                                                   "stored (docs/AD.md, 'Scattered sites'), as the header says",
}

# Known gaps, reported as xfail with the reason (not allowed: they are what is left to do).
KNOWN_GAPS = {}

# The list: the kernels compiled for their launches must hold no atomics at all.
NO_ATOMICS_AT_ALL = {"swiglu", "geglu", "rms_norm", "layer_norm", "softmax", "bias_add",
                     "pm_swiglu", "pm_rms_norm", "pm_layer_norm", "pm_softmax",
                     "corpus:swiglu", "corpus:geglu", "corpus:rms_norm", "corpus:layer_norm_chunked",
                     "corpus:softmax_strided", "corpus:bias_add_2d_grid",
                     # the GEMM form (src/ad/write/gemm.c): its launcher runs the atomic fallback only for a grid
                     # that does not map one to one onto the tiles, which this launch's is not
                     "corpus:matmul_relu_tf32"}

TOL = {torch.float32: 1e-4, torch.bfloat16: 2e-2}
if DEVICE == "cpu":
    TOL[torch.float32] = 1e-5


def cdiv(a, b):
    return -(-a // b)


def npo2(n):
    return triton.next_power_of_2(n)


# ---------------------------------------------------------------- kernels at the big shape
#
# Spec: make(rows, cols, dtype, gen) -> {input: tensor} (leaves, on DEVICE); launch(k, t) ->
# (grid, args, kwargs, y) launches k on the tensors t (requiring grad) and returns what to
# differentiate; ref(t) -> y, the same math in torch; rowwise: the inputs whose row r depends only
# on row r of the inputs (batch invariance), None when the kernel is not row-wise.


class Spec:
    def __init__(self, id, fn, inputs, outputs, make, launch, ref, rowwise=None,
                 dtypes=(torch.float32, torch.bfloat16)):
        self.id, self.fn, self.inputs, self.outputs = id, fn, inputs, outputs
        self.make, self.launch, self.ref, self.rowwise, self.dtypes = make, launch, ref, rowwise, dtypes

    def kernel(self):
        return kad.differentiable(inputs=self.inputs, outputs=self.outputs)(self.fn)


def randn(gen, *shape, dtype, scale=1.0, shift=0.0):
    x = shift + scale * torch.randn(*shape, generator=gen, dtype=torch.float32, device=DEVICE)
    return x.to(dtype)


def _two(scale_a):
    return lambda r, c, dt, g: dict(a=randn(g, r, c, dtype=dt, scale=scale_a), b=randn(g, r, c, dtype=dt))


def _x_w(r, c, dt, g):
    return dict(x=randn(g, r, c, dtype=dt), w=randn(g, c, dtype=dt, scale=0.2, shift=1.0))


def _x_w_b(r, c, dt, g):
    return dict(x=randn(g, r, c, dtype=dt, scale=2.0, shift=0.5), w=randn(g, c, dtype=dt, scale=0.2, shift=1.0),
                b=randn(g, c, dtype=dt, scale=0.2))


def _x(scale):
    return lambda r, c, dt, g: dict(x=randn(g, r, c, dtype=dt, scale=scale))


def _swiglu(k, t):
    a, b = t["a"], t["b"]
    rows, n = a.shape
    c = torch.empty_like(a)
    block = min(1024, npo2(n))  # several column blocks: program_id(1)
    grid = (rows, cdiv(n, block))
    return grid, [a, b, c, a.stride(0), n], dict(BLOCK_SIZE=block), c


def _geglu(k, t):
    a, b = t["a"], t["b"]
    rows, n = a.shape
    c = torch.empty_like(a)
    return (rows,), [a, b, c, a.stride(0), c.stride(0), n], dict(BLOCK_SIZE=npo2(n)), c


def _rms_norm(k, t):
    x, w = t["x"], t["w"]
    rows, n = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
    return (rows,), [x, w, y, rstd, x.stride(0), y.stride(0), n, 1e-6], dict(BLOCK_SIZE=npo2(n)), y


def _layer_norm(k, t):
    x, w, b = t["x"], t["w"], t["b"]
    rows, n = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(rows, dtype=torch.float32, device=x.device)
    rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
    block = min(1024, npo2(n))  # the row in 4 chunks: the loops of the kernel
    return (rows,), [x, y, w, b, mean, rstd, x.stride(0), y.stride(0), n, 1e-5], dict(BLOCK_N=block), y


def _softmax(k, t):
    x = t["x"]
    rows, n = x.shape
    y = torch.empty_like(x)
    block = npo2(n)
    opts = dict(num_warps=16 if block >= 4096 else 8 if block >= 2048 else 4) if DEVICE == "cuda" else {}
    return (rows,), [y, x, x.stride(0), y.stride(0), n], dict(BLOCK_SIZE=block, **opts), y


def _log_softmax(k, t):
    x = t["x"]
    rows, n = x.shape
    y = torch.empty_like(x)
    grid = (cdiv(rows, log_softmax.ROWS_PER_WAVE) * log_softmax.ROWS_PER_WAVE,)
    return grid, [x, y, x.stride(0), y.stride(0), rows, n], dict(BLOCK_N=npo2(n)), y


def _bias_add(k, t):
    x, b = t["x"], t["b"]
    rows, n = x.shape
    y = torch.empty_like(x)
    block = min(1024, npo2(n))
    return (rows, cdiv(n, block)), [x, b, y, x.stride(0), y.stride(0), n], dict(BLOCK_N=block), y


def _pm_swiglu(k, t):
    a, b = t["a"], t["b"]
    rows, n = a.shape
    c = torch.empty_like(a)
    return (rows,), [a, b, c, c.stride(0)], dict(n_cols=n, BLOCK_SIZE=npo2(n)), c


def _pm_rms_norm(k, t):
    x, w = t["x"], t["w"]
    rows, n = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
    return (rows,), [y, y.stride(0), x, x.stride(0), w, rstd, n, 1e-6], dict(BLOCK_SIZE=npo2(n)), y


def _pm_layer_norm(k, t):
    x, w, b = t["x"], t["w"], t["b"]
    rows, n = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(rows, dtype=torch.float32, device=x.device)
    rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
    block = min(65536 // x.element_size(), npo2(n), 64)  # as test_package_models.layer_norm
    return (rows,), [x, y, w, b, mean, rstd, x.stride(0), n, 1e-5], dict(BLOCK_SIZE=block), y


def _pm_softmax(k, t):
    x = t["x"]
    rows, n = x.shape
    y = torch.empty_like(x)
    return (rows,), [y, x, x.stride(0), y.stride(0), n], {}, y  # BLOCK_SIZE from triton.heuristics


def ref_rms(t, eps=1e-6):
    x = t["x"]
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * t["w"]


SPECS = [
    Spec("swiglu", swiglu.swiglu_fwd_kernel, ["a_ptr", "b_ptr"], ["c_ptr"], _two(2.0), _swiglu,
         lambda t: F.silu(t["a"]) * t["b"], rowwise=["a", "b"]),
    Spec("geglu", geglu.geglu_fwd_kernel, ["a_ptr", "b_ptr"], ["c_ptr"], _two(2.0), _geglu,
         lambda t: F.gelu(t["a"], approximate="tanh") * t["b"], rowwise=["a", "b"]),
    Spec("rms_norm", rms_norm.rms_norm_fwd_kernel, ["x_ptr", "w_ptr"], ["y_ptr"], _x_w, _rms_norm, ref_rms,
         rowwise=["x"]),
    Spec("layer_norm", layer_norm.layer_norm_fwd_kernel, ["X", "W", "B"], ["Y"], _x_w_b, _layer_norm,
         lambda t: F.layer_norm(t["x"], (t["x"].shape[-1],), t["w"], t["b"], 1e-5), rowwise=["x"]),
    Spec("softmax", softmax.softmax_kernel, ["input_ptr"], ["output_ptr"], _x(3.0), _softmax,
         lambda t: torch.softmax(t["x"], -1), rowwise=["x"]),
    # exp of bf16 is refused (Triton has no bf16 exp): fp32 only
    Spec("log_softmax", log_softmax.log_softmax_kernel, ["x_ptr"], ["y_ptr"], _x(3.0), _log_softmax,
         lambda t: torch.log_softmax(t["x"], -1), rowwise=["x"], dtypes=(torch.float32,)),
    Spec("bias_add", bias_add.bias_add_kernel, ["x_ptr", "b_ptr"], ["y_ptr"],
         lambda r, c, dt, g: dict(x=randn(g, r, c, dtype=dt), b=randn(g, c, dtype=dt)), _bias_add,
         lambda t: t["x"] + t["b"], rowwise=["x"]),
    # the kernels of test_package_models.py (written the way popular libraries write them)
    Spec("pm_swiglu", pm.swiglu_fwd_kernel.fn, ["a_ptr", "b_ptr"], ["c_ptr"], _two(2.0), _pm_swiglu,
         lambda t: F.silu(t["a"]) * t["b"], rowwise=["a", "b"]),
    Spec("pm_rms_norm", pm.rms_norm_fwd_kernel.fn, ["X_ptr", "W_ptr"], ["Y_ptr"], _x_w, _pm_rms_norm, ref_rms,
         rowwise=["x"]),
    Spec("pm_layer_norm", pm._layer_norm_fwd_fused.fn, ["X", "W", "B"], ["Y"], _x_w_b, _pm_layer_norm,
         lambda t: F.layer_norm(t["x"], (t["x"].shape[-1],), t["w"], t["b"], 1e-5), rowwise=["x"]),
    Spec("pm_softmax", pm.softmax_kernel.fn, ["input_ptr"], ["output_ptr"], _x(3.0), _pm_softmax,
         lambda t: torch.softmax(t["x"], -1), rowwise=["x"], dtypes=(torch.float32,)),
]

CASES = [(s, dt) for s in SPECS for dt in s.dtypes]
IDS = [f"{s.id}-{str(dt).split('.')[-1]}" for s, dt in CASES]


def inputs_of(spec, rows, dtype, seed=0):
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    return spec.make(rows, COLS, dtype, g)


def bits(t):
    return t.detach().contiguous().view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(bits(a), bits(b))


def first_difference(a, b):
    d = (bits(a) != bits(b)).reshape(-1).nonzero()
    i = d[0].item()
    return f"{d.numel()} of {a.numel()} elements differ, first at flat index {i}: " \
           f"{a.reshape(-1)[i].item()!r} vs {b.reshape(-1)[i].item()!r}"


# ---------------------------------------------------------------- the header of the module

SENTENCE = re.compile(r"^# (d_\w+) (is .*)$")


def gradient_sentences(text):
    """{d_name: the header's sentence about it} (continuation lines joined)."""
    out, cur = {}, None
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        m = SENTENCE.match(line)
        if m:
            cur = m.group(1)
            out[cur] = m.group(2)
        elif cur and line.startswith("#     "):
            out[cur] += " " + line[1:].strip()
        else:
            cur = None
    return out


def classify(sentence):
    """'atomic' (always accumulated with atomic_add), 'conditional' (without atomics when a runtime
    condition holds, atomic_add otherwise: the launcher decides per launch, and the compiled kernel
    holds only the branch taken) or 'plain' (no atomic_add)."""
    if re.search(r" when .* else .*with tl\.atomic_add", sentence):
        return "conditional"
    if "atomic" not in sentence or "without atomics" in sentence:
        return "plain"
    return "atomic"


def atomics_problems(kernel_id, text, wrt):
    """The atomics rule (module docstring) on the module's text: a list of failures, a list of
    notes, and whether some gradient is conditional (test_no_atomics then checks the compiled
    kernels)."""
    problems, notes = [], []
    said = gradient_sentences(text)
    body = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    n_atomic = body.count("tl.atomic_add(")
    conditional = False
    for name in wrt:
        d = f"d_{name}"
        s = said.get(d)
        if s is None:
            problems.append(f"the header says nothing about {d}")
            continue
        kind = classify(s)
        allowed = ALLOW_ATOMICS.get((kernel_id, name))
        if kind == "plain" or allowed:
            continue
        if kind == "atomic":
            problems.append(f"{d} {s}")
        else:
            conditional = True
            notes.append(f"{d} {s}")
    explained = any(classify(s) != "plain" for s in said.values())
    if n_atomic and not explained:
        problems.append(f"the module has {n_atomic} tl.atomic_add but its header names no atomic gradient")
    return problems, notes, conditional


def compiled_atomics(dk):
    """(atomic read-modify-write ops, kernels) over the compiled kernels of dk's generated backward
    modules (CUDA: Triton's cache of each @triton.jit function; the interpreter compiles nothing),
    the one-writer check kernels (<kernel>_race, run before a forward) left out."""
    n_atomic = n_kernels = 0
    for mod in dk.program.modules.values():
        for name, v in vars(mod).items():
            if name.endswith("_race"):
                continue  # the one-writer check (docs/AD.md): a forward's check, writing tag buffers only
            for entry in (getattr(v, "device_caches", None) or {}).values():
                for ck in entry[0].values():
                    n_kernels += 1
                    n_atomic += ck.asm.get("ttir", "").count("tt.atomic_rmw")
    return n_atomic, n_kernels


# ---------------------------------------------------------------- tests at the big shape


@pytest.fixture(scope="module")
def runs():
    """(spec id, dtype) -> Run: computed once per case, shared by the tests of that case."""
    return {}


class Run:
    """The inputs, dy, the first run's gradients, the runs that differed from it (one message per
    input, the first differing run), the kernel and its launch."""

    def __init__(self, spec, dtype):
        self.k = spec.kernel()
        self.base = inputs_of(spec, ROWS, dtype)
        t = {n: v.clone().requires_grad_() for n, v in self.base.items()}
        grid, args, kwargs, y = spec.launch(self.k, t)
        self.k[grid](*args, **kwargs)
        self.launch = (grid, args, kwargs)
        g = torch.Generator(device=DEVICE).manual_seed(1)
        self.dy = torch.randn(y.shape, generator=g, device=DEVICE, dtype=torch.float32).to(y.dtype)
        self.first = torch.autograd.grad(y, list(t.values()), self.dy)
        self.diffs = {}
        for r in range(2, REPS + 1):  # compared as they come: only the first run is kept
            again = run_once(spec, self.k, self.base, self.dy)
            for name, a, b in zip(self.base, again, self.first):
                if name not in self.diffs and not same_bits(a, b):
                    self.diffs[name] = f"d{name}: run {r} differs from run 1: {first_difference(a, b)}"


def run_case(runs, spec, dtype):
    key = (spec.id, dtype)
    if key not in runs:
        runs[key] = Run(spec, dtype)
    return runs[key]


def run_once(spec, k, base, dy):
    t = {n: v.detach().clone().requires_grad_() for n, v in base.items()}
    grid, args, kwargs, y = spec.launch(k, t)
    k[grid](*args, **kwargs)
    return torch.autograd.grad(y, list(t.values()), dy)


@pytest.mark.parametrize("spec,dtype", CASES, ids=IDS)
def test_bitwise_deterministic(runs, spec, dtype):
    run = run_case(runs, spec, dtype)
    assert not run.diffs, "\n".join(run.diffs.values())


@pytest.mark.parametrize("spec,dtype", CASES, ids=IDS)
def test_no_atomics(runs, spec, dtype):
    run = run_case(runs, spec, dtype)
    grid, args, kwargs = run.launch
    text = kad.backward_source(run.k, grid, *args, **kwargs)
    problems, notes, conditional = atomics_problems(spec.id, text, spec.inputs)
    for n in notes:
        print(f"{spec.id}: note: {n}")
    if spec.id in NO_ATOMICS_AT_ALL and DEVICE == "cuda":
        # the kernels this launch compiled (the runs above) must hold no atomic at all: a
        # conditional gradient's flag must have been true for it
        n_atomic, n_kernels = compiled_atomics(run.k)
        if not n_kernels:
            problems.append("no compiled backward kernel found to inspect")
        elif n_atomic:
            problems.append(f"the compiled backward kernels contain {n_atomic} atomic read-modify-writes")
    assert not problems, f"{spec.id}: atomic input gradients in the default (deterministic) mode:\n  " + \
        "\n  ".join(problems)


@pytest.mark.parametrize("spec,dtype", [c for c in CASES if c[0].rowwise], ids=[i for c, i in zip(CASES, IDS)
                                                                                 if c[0].rowwise])
def test_batch_invariant(runs, spec, dtype):
    run = run_case(runs, spec, dtype)
    r = ROWS // 2 + 3
    one = {n: (v[r:r + 1].clone() if n in spec.rowwise else v) for n, v in run.base.items()}
    got = run_once(spec, run.k, one, run.dy[r:r + 1].clone())
    bad = []
    for i, name in enumerate(run.base):
        if name in spec.rowwise and not same_bits(got[i][0], run.first[i][r]):
            bad.append(f"d{name}[{r}]: batch of 1 vs batch of {ROWS}: {first_difference(got[i][0], run.first[i][r])}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("spec,dtype", CASES, ids=IDS)
def test_matches_torch(runs, spec, dtype):
    run = run_case(runs, spec, dtype)
    t = {n: v.detach().double().requires_grad_() for n, v in run.base.items()}
    want = torch.autograd.grad(spec.ref(t), list(t.values()), run.dy.double())
    bad = []
    for i, name in enumerate(run.base):
        got, exp = run.first[i].double(), want[i]
        err = (got - exp).abs().max().item() / max(exp.abs().max().item(), 1e-30)
        if not err <= TOL[dtype]:  # NaN fails
            bad.append(f"d{name}: max error {err:.3g} of max |grad| {exp.abs().max().item():.3g} > {TOL[dtype]}")
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------- the package corpus kernels

NO_SOURCE = {
    # the package makes y in place automatically (the kernel loads it); backward_source(), which
    # differentiates the declared lists, refuses that: the atomics rule is not checked for them
    "axpby": "y updated in place automatically", "axpby_beta0": "y updated in place automatically",
}


def corpus_grads(c):
    g = torch.Generator().manual_seed(0)
    k = kad.differentiable(inputs=c.inputs, outputs=c.outputs)(c.fn)
    with torch.device(DEVICE):
        grid, args, kwargs, leaves, views, _ = c.setup(g, small=False)
    k[grid](*args, **kwargs)
    cot = {n: torch.randn(v.shape, generator=g, device="cpu").to(DEVICE) for n, v in views.items()}
    loss = sum((views[n].float() * cot[n]).sum() for n in c.outputs)
    return k, (grid, args, kwargs), torch.autograd.grad(loss, [leaves[n] for n in c.inputs])


@pytest.mark.parametrize("c", pc.CASES, ids=[c.id for c in pc.CASES])
def test_corpus_kernel_deterministic(c):
    if "corpus:" + c.id in KNOWN_GAPS:
        pytest.xfail(KNOWN_GAPS["corpus:" + c.id])
    k, launch, first = corpus_grads(c)
    for r in range(2, REPS + 1):
        again = corpus_grads(c)[2]
        for name, a, b in zip(c.inputs, again, first):
            assert same_bits(a, b), f"d{name}: run {r} differs from run 1: {first_difference(a, b)}"
    if c.id in NO_SOURCE:
        print(f"{c.id}: atomics rule not checked: {NO_SOURCE[c.id]}")
        return
    text = kad.backward_source(k, *launch[:1], *launch[1], **launch[2])
    problems, notes, _ = atomics_problems("corpus:" + c.id, text, c.inputs)
    for n in notes:
        print(f"{c.id}: note: {n}")
    if "corpus:" + c.id in NO_ATOMICS_AT_ALL and DEVICE == "cuda":
        n_atomic, n_kernels = compiled_atomics(k)
        if not n_kernels:
            problems.append("no compiled backward kernel found to inspect")
        elif n_atomic:
            problems.append(f"the compiled backward kernels contain {n_atomic} atomic read-modify-writes")
    assert not problems, f"{c.id}: atomic input gradients in the default (deterministic) mode:\n  " + \
        "\n  ".join(problems)
