"""The real-kernel corpus: kernels of public libraries, as shipped, through kad.

Each case names a library, a module and a kernel of the installed package
(tests/real/requirements.txt, pinned), imports the kernel object from there
(nothing of the library is copied here), launches it the way the library's own
host wrapper does, and compares with a PyTorch reference of the math written
here:

- forward: every declared output (a view of what the kernel writes) against
  the reference;
- backward: L = sum_o <out_o, c_o> with random cotangents, L.backward()
  through kad against PyTorch autograd of the reference;
- float64 (CPU only): torch.autograd.gradcheck of the launch under
  kad.f64_mode(typed_as=torch.float32) on the case's small shapes.

A case's status is one of
  correct  forward, gradients (and gradcheck where enabled) match;
  refused  kad raised a located error (kad.KadError) or refused the kernel
           object (TypeError/ValueError raised by the kad package);
  wrong    a mismatch: always a failure;
  error    the library cannot be imported or launched at all (explained).

KAD_TEST_DEVICE=cuda runs the same cases with CUDA tensors (Triton forward,
kad's generated backward); the float64 gradcheck is the interpreter's and is
skipped there.
"""
import importlib
import os
import re
import sys
import traceback
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

# FlagGems detects the vendor at import time by running vendor tools and asks
# CUDA for the device name to locate its tuning database.  Both have switches
# of FlagGems' own: GEMS_VENDOR picks the vendor backend (nvidia: its configs
# and heuristics, the ones used on a GPU), FLAGGEMS_DB_URL an in-memory
# SQLite database for its tuning cache.  Nothing of the installed files is
# changed.  Set before anything imports flag_gems.
os.environ.setdefault("GEMS_VENDOR", "nvidia")
os.environ.setdefault("FLAGGEMS_DB_URL", "sqlite://")

import kad  # noqa: E402

DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")


class Case:
    def __init__(self, id, lib, module, kernel, inputs, outputs, setup, tol=1e-5, gpu_tol=None,
                 f64=True, why=None, make=None):
        self.id, self.lib, self.module, self.kernel = id, lib, module, kernel
        # make(kernel object) -> the object the library's host function launches, where that host
        # function first derives it from the module's kernel (e.g. xformers' unroll_varargs)
        self.make = make
        self.inputs, self.outputs, self.setup = inputs, outputs, setup
        self.tol = tol if DEVICE == "cpu" else (gpu_tol if gpu_tol is not None else max(tol, 1e-4))
        self.f64 = f64
        self.why = why  # reason class of a refusal the message alone does not tell, or why a case is `error`


CASES = []


def case(id, lib, module, kernel, inputs, outputs, **kw):
    """Registers setup(g, small) -> (leaves, launch, ref):
    leaves: {input name: float32 CPU tensor} (the values; the driver moves them
            to the device and makes them require grad),
    launch(k, t): launches the kad-wrapped kernel k as the library's wrapper
            does, on the tensors t (same keys as leaves; in-place kernels
            clone them first), returns {output name: view of what it wrote},
    ref(t): {output name: the same values computed plainly in torch}."""
    def reg(setup):
        CASES.append(Case(id, lib, module, kernel, inputs, outputs, setup, **kw))
        return setup
    return reg


def cdiv(a, b):
    return -(-a // b)


def randn(g, *shape, scale=1.0, shift=0.0):
    return shift + scale * torch.randn(*shape, generator=g, dtype=torch.float64).float()


def empty(t, *shape, dtype=None):
    """A fresh buffer on t's device, of t's dtype (float64 under gradcheck)."""
    return torch.empty(*shape, dtype=dtype or t.dtype, device=t.device)


# ---------------------------------------------------------------------------
# library versions and kernel objects

LIBS = {"flag_gems": "flag-gems", "xformers": "xformers", "torchao": "torchao", "bitsandbytes": "bitsandbytes",
        "conch": "conch-triton-kernels", "cut_cross_entropy": "cut-cross-entropy", "lightning_attn": "lightning-attn",
        "triton_kernels": "triton-kernels"}


def version(lib):
    from importlib.metadata import PackageNotFoundError, version as v
    try:
        return v(LIBS.get(lib, lib))
    except PackageNotFoundError:
        return "not installed"


def load_kernel(c):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = importlib.import_module(c.module)
        obj = getattr(mod, c.kernel)
        return c.make(obj) if c.make else obj


def wrap(c, obj):
    return kad.differentiable(inputs=c.inputs, outputs=c.outputs)(obj)


def unwrap_libentry(obj, e):
    """FlagGems puts its own caching dispatcher (flag_gems.utils.libentry.LibEntry)
    outermost.  While kad does not know that wrapper, the object under it
    (LibEntry.fn: the triton.jit / autotune / heuristics object, untouched) is
    used instead and the case notes it.  None when that does not apply."""
    if type(obj).__name__ == "LibEntry" and "does not know the kernel wrapper" in str(e):
        return obj.fn
    return None


# ---------------------------------------------------------------------------
# refusal classes

REASONS = [
    # (class, regex on kad's message).  Part 2 and the loop and access-analysis issues are the
    # open issues of the tracker; "conventions" are the calling conventions of issue 7 (a case still
    # refused for one of them is a gap to fix there).
    ("conventions: tensor dtypes kad does not take", r"is a torch\.\w+ tensor: kad supports"),
    ("kernel reads out of bounds (the interpreter's bounds check)", r"out-of-bounds (load|store)"),
    ("part 2: block pointers", r"make_block_ptr|block pointer|tl\.advance"),
    ("part 2: tensor descriptors", r"tensor_descriptor|tensor descriptor"),
    ("part 2: scans and reductions with a combine function", r"cumsum|cumprod|associative_scan|\bscan\b|tl\.reduce"),
    ("part 2: split/join/gather", r"\b(split|join|gather|interleave)\b"),
    ("part 2: fp8", r"fp8|float8"),
    ("loop issue: tape / non-linear loop-carried value", r"not a linear accumulator|tape|loop-carried"),
    ("access analysis: stores in loops / several store sites", r"store.*loop|loop.*store|stored (twice|more than once)|several stores|store sites"),
    ("access analysis: pointer of ambiguous provenance", r"ambiguous provenance"),
    ("access analysis: in-place buffer read after a write (store-to-load proof)",
     r"updates in place: kad cannot prove that it reads the value before the launch"),
    ("conventions: f-strings", r"f-string"),
    ("conventions: generated kernels (source without a decorator)", r"no @triton\.jit functions"),
    ("conventions: wrapper decorators", r"kernel wrapper"),
    ("conventions: None pointer specialization", r"\bNone\b"),
    ("conventions: in-place kernels", r"alias|load from output|in-place|in place|listed as both input and output"),
    ("conventions: imports of helpers across modules", r"is imported from|not defined|unknown name|undefined"),
]


# Why each family of refusals that the corpus meets is refused, and what would lift it; the document
# (docs/COVERAGE.md) prints the note under the family, and run.py fails a run whose refusals fall in
# a family without one.
NOTES = {
    "conventions: tensor dtypes kad does not take":
        "kad's Python package maps each tensor argument's dtype to one of its storage types and refuses "
        "the others before compiling. cut-cross-entropy's lse kernel takes its spin locks as a "
        "torch.uint32 tensor (unsigned 32-bit integers, which kad has no storage type for). Lifting it: "
        "a u32 storage type. Past it (checked by passing int32 locks) the kernel meets `tl.atomic_cas`, "
        "which kad does not support yet: each program takes a spin lock (`while tl.atomic_cas(...) == 1`) "
        "around a load, logaddexp and store of its rows of LSE, a read-modify-write of an output that would "
        "also need the in-place proof of the store-to-load family, and a merge order that differs "
        "between runs (the gradient does not depend on it).",
    "kernel reads out of bounds (the interpreter's bounds check)":
        "The interpreter checks every unmasked lane of a load against its buffer and refuses an "
        "out-of-bounds read instead of returning garbage. FlagGems' celoss_indices_kernel loads "
        "inp[tgt] under `tgt_mask` only, so for a target equal to ignore_index (-100) it reads before "
        "the start of `inp` (on a GPU: whatever is there, multiplied by a zero weight afterwards, which "
        "turns into NaN should that memory hold an inf or NaN). This is a bug of the library's kernel, "
        "not a gap of kad; masking that load with `ignore_mask` (as the library does for the weight "
        "load) would lift it. The case keeps ignore_index in its targets since the library's own "
        "wrapper (CrossEntropyLoss.forward) passes them through.",
    "access analysis: in-place buffer read after a write (store-to-load proof)":
        "A kernel that updates a buffer in place and later loads from it again: kad must know whether the "
        "load sees the launch's value or one the kernel wrote. It proves the former only when a store "
        "through the same pointer value and mask follows the load in its block. xformers' "
        "_rms_norm_add_kernel writes x + y to x in its first loop and reads it back in its second (the "
        "values it wrote). Lifting it: store-to-load forwarding across loops (the second loop's load, same "
        "addresses and mask as the first loop's store in the same program, reads the stored value, which "
        "kad would then differentiate as that value).",
    "access analysis: stores in loops / several store sites":
        "The reverse sweep needs, for each element of an output, the one store whose value the caller "
        "sees. With several store sites inside a loop, kad must prove that no two of them (or two "
        "iterations) write one element; it does so for stores through one pointer value, for stores "
        "outside loops and for iterations it can prove disjoint. The rotary-embedding kernels (conch, "
        "triton-kernels) store both halves of each rotated pair in place, at x_index and "
        "x_index + rot_dim/2 (or 2r and 2r+1), computed with `//` and `%` of a loop-advanced lane index. "
        "Lifting it: an injectivity proof over the pair of store sites and the loop (the two index maps "
        "have disjoint images since the offset lies in [0, rot_dim/2)), i.e. the disjointness of affine "
        "maps composed with div/mod by the same constant.",
    "loop issue: tape / non-linear loop-carried value":
        "A loop whose reverse sweep reads a recorded value (a tape of a non-linear carried value, e.g. "
        "a running state multiplied by a decay) also has to rebuild its carried pointers and integers "
        "backwards; kad recomputes them only when each iteration advances them by one loop-invariant "
        "step (p += step) in that loop itself. lightning-attn's _bwd_inter_kernel advances its block "
        "pointers in inner loops (`for j in range(NUM_CBLOCK)`) nested in the outer block loop, so the "
        "outer loop's per-iteration step is the inner loop's total (NUM_CBLOCK * CBLOCK * d), and its "
        "dk/dv loop walks backwards. Lifting it: deriving a carried pointer's per-iteration advance "
        "through nested constant-trip-count loops (or recording pointer offsets on the tape), then the "
        "in-place accumulation into DQ/DK/DV it also does (load, add, store through one pointer value).",
    "unclassified":
        "A refusal whose message matches no class of corpus.REASONS: add a class (and a note here).",
}


def classify(c, message):
    if c.why:
        return c.why
    first = message.strip().splitlines()[0] if message.strip() else ""
    first = first.split(" error: ", 1)[-1]  # the message, not its location (file names like cumsum.py)
    for cls, rx in REASONS:
        if re.search(rx, first):
            return cls
    return "unclassified"


# ---------------------------------------------------------------------------
# running one case


class Result:
    def __init__(self, status, detail="", note="", reason=""):
        self.status, self.detail, self.note, self.reason = status, detail, note, reason


def _close(a, b, tol):
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    err = (a - b).abs().max().item() if a.numel() else 0.0
    return err <= tol * b.abs().max().item() + 1e-6, err


def _first_line(e):
    s = str(e).strip()
    return s.splitlines()[0] if s else type(e).__name__


def _relative(s):
    """Paths into the installed libraries, from the package directory on."""
    s = re.sub(r"(?:/[^\s:'\"]+)*/site-packages/", "", s)
    return re.sub(r"(?:/[^\s:'\"]+)*/(" + "|".join(LIBS) + r")/", r"\1/", s)


def run_case(c):
    r = _run_case(c)
    r.detail = _relative(r.detail)
    if r.status == "error" and c.why:
        r.reason = c.why
    return r


def _run_case(c):
    try:
        obj = load_kernel(c)
    except Exception as e:  # the library cannot be imported on this machine
        return Result("error", f"import {c.module}: {type(e).__name__}: {_first_line(e)}")
    r = _run(c, obj, "")
    if r.status == "refused" and unwrap_libentry(obj, r.detail) is not None:
        r = _run(c, obj.fn, "LibEntry unwrapped")
    return r


def _run(c, obj, note):
    try:
        k = wrap(c, obj)
    except (TypeError, ValueError) as e:
        return Result("refused", _first_line(e), note, classify(c, str(e)))
    try:
        return _check(c, k, note)
    except kad.KadError as e:
        msg = str(e)
        return Result("refused", msg.strip(), note, classify(c, msg))
    except Exception as e:
        tb = traceback.extract_tb(e.__traceback__)
        inside_kad = any("/python/kad/" in f.filename for f in tb)
        if inside_kad and isinstance(e, (TypeError, ValueError)):
            return Result("refused", _first_line(e), note, classify(c, str(e)))
        where = f"{tb[-1].filename}:{tb[-1].lineno}" if tb else ""
        return Result("error", f"{type(e).__name__}: {_first_line(e)} ({where})", note)


def _check(c, k, note):
    g = torch.Generator().manual_seed(0)
    leaves, launch, ref = c.setup(g, False)
    xs = {n: v.to(DEVICE).requires_grad_(n in c.inputs) for n, v in leaves.items()}
    with torch.device(DEVICE):
        got = launch(k, xs)
    cot = {n: torch.randn(got[n].shape, generator=g).to(DEVICE) for n in c.outputs}
    sum((got[n].float() * cot[n]).sum() for n in c.outputs).backward()
    grads = {n: xs[n].grad for n in c.inputs}

    mine = {n: v.to(DEVICE).requires_grad_(n in c.inputs) for n, v in leaves.items()}
    with torch.device(DEVICE):
        expect = ref(mine)
    for n in c.outputs:
        ok, err = _close(got[n], expect[n], c.tol)
        if not ok:
            return Result("wrong", f"forward {n}: max err {err:.3g}", note)
    sum((expect[n].float() * cot[n]).sum() for n in c.outputs).backward()
    for n in c.inputs:
        if grads[n] is None:
            return Result("wrong", f"d{n}: kad gave no gradient", note)
        ok, err = _close(grads[n], mine[n].grad, c.tol)
        if not ok:
            return Result("wrong", f"d{n}: max err {err:.3g}, max |g| {mine[n].grad.abs().max():.3g}", note)

    checked = "forward+backward"
    if c.f64 and DEVICE == "cpu":
        leaves, launch, _ = c.setup(torch.Generator().manual_seed(1), True)

        def f(*ts):
            t = {n: v.double() if v.is_floating_point() else v for n, v in leaves.items()}
            t.update({n: x for n, x in zip(c.inputs, ts)})
            out = launch(k, t)
            return tuple(out[n] for n in c.outputs)
        ts = [leaves[n].double().requires_grad_() for n in c.inputs]
        with kad.f64_mode(typed_as=torch.float32):
            try:
                torch.autograd.gradcheck(f, ts, eps=1e-6, atol=1e-7, rtol=1e-5)
            except torch.autograd.gradcheck.GradcheckError as e:
                return Result("wrong", "float64 gradcheck: " + _first_line(e), note)
        checked += "+gradcheck f64"
    return Result("correct", checked, note)
