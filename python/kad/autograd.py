"""@kad.differentiable: an unchanged Triton kernel as a PyTorch autograd op.

    @kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])
    @triton.jit
    def rmsnorm(x_ptr, w_ptr, y_ptr, ...): ...

    rmsnorm[(M,)](x, w, y, ...)      # launches as before; y joins the graph
    y.sum().backward()               # x.grad, w.grad

How a launch runs.  The call is bound and checked (_launch.py) before
anything runs; with grad mode on, a tensor that requires grad passed to a
parameter declared neither input nor output is refused (kad would read it
as a constant: a silently missing gradient).  When autograd has nothing to do (grad mode off, or no
declared input and no output tensor requires grad) the kernel just runs.
Otherwise the launch happens inside an autograd.Function that takes the
declared inputs, the other tensor arguments and the outputs, marks the
outputs dirty (they are written in place, so the tensors the caller passed
become the Function's outputs: existing host code keeps working) and saves
the inputs (PyTorch's version counters then catch an input modified before
backward).

Where it runs.  CPU tensors run on kad's C interpreter, forward and
backward; CUDA tensors run the forward with Triton and the backward through
the generated module's launch_<kernel>_bwd (docs/GRAD.md).

The backward.  It is specialized on the call's signature, on the inputs that
need a gradient (ctx.needs_input_grad: an input that does not require grad
costs nothing) and on the outputs whose gradient is not None (the others are
skipped).  Input gradients are allocated with the inputs' sizes and strides
and zero-filled (the generated kernel adds into them); output gradients are
copied into the outputs' layout when autograd hands them over in another
one (e.g. the expanded ones of y.sum()); a view overlapping itself has
its gradients translated between view and memory elements (see may_overlap
below).  The backward kernel recomputes the
forward from the inputs; it reads neither the outputs nor scratch buffers,
except the results of top-level loops a saving forward stored: with save=True
(the default) a launch under autograd of a kernel with such loops runs kad's
saving forward instead of the kernel as written, and the Run holds its buffer
for the backward built to load it (docs/AD.md, "Saved loop results").

Caches.  Per decorated kernel: one kad context holding its sources; the
specialized forward and backward kernels (CPU) and the imported backward
modules (GPU) per (signature, wrt, out).  On disk: the backward modules,
under $KAD_CACHE_DIR (default ~/.cache/kad), named by a hash of the sources,
the signature, wrt/out and kad's version -- Triton needs them as files
anyway, and its own cache keeps their compiled binaries.  Several processes
may write one module at once (torchrun's ranks): each file is written by an
atomic rename and sealed by a hash, and only a sealed file is used (see
write_atomically).  The CPU path keeps
no disk cache: specializing and differentiating a kernel takes well under a
millisecond, less than reading a file.

In place.  A name in both inputs and outputs is a buffer the kernel
updates in place (rotary embedding, s = a * s + b, y += b): as for PyTorch's
in-place ops, the caller's tensor becomes the op's output and its gradient
flows back to the value it held before the launch.  An output is treated so
automatically when its tensor is already part of the graph (a buffer
written by several launches: the elements the launch leaves alone keep
their gradient) or when the kernel loads from it (its old value then
reaches the result).  kad's backward takes such a buffer's gradient as
d_<name> and turns it into the old value's (docs/GRAD.md): each store
clears the gradient of the elements it writes, each load adds the
gradient of what it read -- no written-element mask, no sentinel values.
The backward recomputes the forward from the old value: a copy is taken
before the launch only when the kernel loads from the buffer.
"""
import contextlib
import contextvars
import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import re
import secrets
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
import torch.autograd.forward_ad as _forward_ad  # dual_level() sets _current_level (>= 0 inside)

from . import _capi
from ._capi import Pointer
from ._launch import (FLOAT_DTYPES, FP8_DTYPES, TORCH_TO_KAD, Binder, Launch, eval_grid, no_output_error, params_of,
                      wrapper_kind)
from ._sources import host_values, live_helpers, load_sources, unwrap

_compiling = torch.compiler.is_compiling
_functorch_active = torch._C._are_functorch_transforms_active

__all__ = ["differentiable", "DifferentiableKernel", "cache_dir", "f64_mode"]

# Set by f64_mode(): None outside; inside, the kad type that float64 tensors
# of CPU launches get in the signature ("fp64" unless typed_as says otherwise).
_F64 = contextvars.ContextVar("kad_f64_mode", default=None)


@contextlib.contextmanager
def f64_mode(typed_as: "torch.dtype | None" = None) -> Iterator[None]:
    """Within this block, CPU launches whose float tensors are all float64
    run on the interpreter with every float value in double, casts to fp32,
    fp16 or bf16 included (the interpreter's f64 mode, docs/INTERPRETER.md).
    For torch.autograd.gradcheck on kernels that compute in fp32: it checks
    the calculus, not the rounding.  Float tensors of other dtypes (e.g. the
    fp32 statistics a host wrapper allocates) go through float64 copies.

    typed_as=torch.float32 (or float16, bfloat16): float64 tensors are typed
    as that dtype in the kernel's signature, so the kernel is specialized
    exactly as for tensors of that dtype while its buffers hold, and every
    value is computed in, float64 (the interpreter's f64 mode does this for
    any float buffer).  Needed where a kernel is valid only for its real
    dtype: a tl.dot into an fp32 accumulator, which Triton refuses for fp64
    operands."""
    if typed_as is None:
        kad_type = "fp64"
    elif typed_as in FLOAT_DTYPES:
        kad_type = TORCH_TO_KAD[typed_as]
    else:
        raise TypeError(f"kad.f64_mode: typed_as must be one of {', '.join(map(str, FLOAT_DTYPES))}, "
                        f"got {typed_as!r}")
    tok = _F64.set(kad_type)
    try:
        yield
    finally:
        _F64.reset(tok)


def _cpu_mode():
    """The interpreter mode of a CPU launch ("f64" inside f64_mode())."""
    return "f64" if _F64.get() else "as_written"


_IR_RESULT = re.compile(r"^\s*%([\w.]+) = (\w+) ?(?:%([\w.]+))?.* : (\S+)$", re.M)
_IR_PARAM = re.compile(r"%([\w.]+): (\*?\w+)")
_NARROW = ("fp32", "fp16", "bf16", "fp8")


def _warn_narrow(name, kernel, f64_inputs):
    """Warns when float64 inputs (f64_inputs, a CPU launch outside f64_mode) meet a kernel that casts
    float64 values to a narrower float (`.to(tl.float32)`): it computes in float32, so float64 finite
    differences (torch.autograd.gradcheck) cannot match its gradients.  Read off the specialized IR's
    casts (docs/IR.md), which name their operand and result types."""
    if not f64_inputs:
        return
    ir = kernel.ir
    types = dict(_IR_PARAM.findall(ir.split("\n", 1)[0]))
    narrow = None
    for res, op, arg, ty in _IR_RESULT.findall(ir):
        types[res] = ty
        if op == "cast" and types.get(arg, "").startswith("fp64") and ty.startswith(_NARROW):
            narrow = ty.split("[")[0]
            break
    if narrow is None:
        return
    import warnings
    warnings.warn(f"kad: {name} is launched with float64 tensors ({', '.join(f64_inputs)}) on the CPU, but it casts "
                  f"float64 values to {narrow} (a .to(tl.float32) or the like), so it computes in {narrow}: its "
                  f"outputs and gradients are {narrow}-accurate, and float64 finite differences "
                  f"(torch.autograd.gradcheck) will not match them. To check its gradient in float64, run the "
                  f"check inside `with kad.f64_mode():` (every value in double, casts included; docs/PYTHON.md)",
                  stacklevel=_outside_stacklevel())


def _outside_stacklevel():
    """warnings.warn's stacklevel (from its caller) of the first frame outside kad and torch: the
    user's launch."""
    skip = (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(torch.__file__)))
    f, level = sys._getframe(2), 2
    while f is not None and f.f_code.co_filename.startswith(skip):
        f, level = f.f_back, level + 1
    return level


def run_cpu(kernel, grid, values, mode, written=None):
    """Runs a kad Kernel on CPU tensors and scalars: values is a list in the
    kernel's parameter order, or a dict name -> value lined up with the
    kernel's parameters by name (runtime parameters Triton specializes to
    None or 1 are constants of the kernel, not parameters).  In f64 mode a float tensor that is not float64 is run on a
    float64 copy of its storage span, copied back afterwards if the kernel
    may write it (written: the tensors it writes; None: any)."""
    args, staged = _cpu_args(kernel, values, mode, written)
    kernel.run(grid, args, mode=mode)
    for span, v64 in staged:
        if span is not None:
            span.copy_(v64)


def check_races_cpu(kernel, grid, values, mode, outs):
    """The one-writer check (docs/AD.md, "One writer per element") of a CPU launch of kernel
    with these values (as run_cpu takes them): a KadError, located at the store, when two
    programs or two lanes of one store write one element of an output in outs."""
    args, keep = _cpu_args(kernel, values, mode, ())
    kernel.check_races(grid, args, outs, mode=mode)
    del keep  # (the float64 copies the pointers in args address live until here)


def _cpu_args(kernel, values, mode, written):
    """run_cpu's arguments as the interpreter takes them, and the float64 copies: (span, copy) to
    copy back, (None, copy) for one only read.  The caller holds the list until the kernel has
    run: args hold raw addresses, so a copy not referenced here would be freed before it is read."""
    args, staged = [], []
    if isinstance(values, dict):
        values = [values[n] for n, _ in kernel.params]
    for v in values:
        if not isinstance(v, torch.Tensor):
            args.append(v)
            continue
        if mode == "f64" and (v.dtype in FLOAT_DTYPES or v.dtype in FP8_DTYPES) and v.dtype != torch.float64 \
                and v.numel():
            span = storage_span(v)
            v64 = span.double()
            staged.append((span if written is None or any(v is w for w in written) else None, v64))
            v = v64
        args.append(Pointer(v.data_ptr(), span_bytes(v)))
    return args, staged


def cache_dir() -> str:
    """Where generated backward modules are kept: $KAD_CACHE_DIR, else
    $XDG_CACHE_HOME/kad, else ~/.cache/kad."""
    d = os.environ.get("KAD_CACHE_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kad")


def storage_span(t):
    """t's storage from t.data_ptr() to its last element, as a flat view
    (a kernel may address elements between a view's rows); t non-empty."""
    last = sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return t.as_strided((last + 1,), (1,), t.storage_offset())


def span_bytes(t):
    """Bytes from t.data_ptr() to the end of t's last element (storage_span's
    size, computed without making the view)."""
    if not t.numel():
        return 0
    last = 0
    for n, s in zip(t.shape, t.stride()):
        last += (n - 1) * s
    return (last + 1) * t.element_size()


# Views that overlap themselves (x.unfold(0, 8, 3), b.as_strided((2, 2), (1, 1)), expand()): several
# elements of the view are one memory element, and the kernel reads and writes memory.  kad's
# backward computes a gradient per memory element (dm, in a buffer laid out like the tensor, over
# its storage span); PyTorch speaks of view elements.  The translation, exact and deterministic:
#   an input x:   kad reads memory element m from ONE view element, the first of those sharing m in
#                 row-major order (its representative, rank 0): the view gradient is dm[m] at the
#                 representative and 0 at the others (view_grad), so that the sum PyTorch's view
#                 backward (AsStrided, Unfold, Expand) forms over them is dm[m] once; a tangent of
#                 x is read the same way (memory_tangent: the representative's value).
#   an output y:  memory element m is read by every view element sharing it, so
#                 dm[m] = sum of dy over them (memory_grad), summed round by round in rank order
#                 (each round's indices distinct: no atomics, the same bits every time).
# Tensors are tested cheaply first (overlaps): is_contiguous, then the strides sorted.


def may_overlap(shape, strides):
    """False when no two elements of a tensor of these sizes and strides share memory by the
    sufficient test (each stride, sorted, exceeds the extent of the dimensions of smaller
    stride); True when they may (overlaps then counts exactly).  Python ints only."""
    if 0 in shape:
        return False
    span = 0
    for s, n in sorted((s, n) for n, s in zip(shape, strides) if n != 1):
        if s <= span:
            return True
        span += (n - 1) * s
    return False


def layout_may_overlap(t):
    """may_overlap of t's layout (False at once for a contiguous t)."""
    return not t.is_contiguous() and may_overlap(t.shape, t.stride())


def overlaps(t):
    """Whether two elements of t share memory (contiguous tensors answer at once)."""
    if t.is_contiguous() or not may_overlap(t.shape, t.stride()):
        return False
    idx = _alias_index(t)
    return bool(torch.unique(idx).numel() < idx.numel())


def _alias_index(t):
    """Per element of t in row-major order, its memory element (counted from t's first)."""
    last = sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return torch.arange(last + 1, device=t.device).as_strided(t.shape, t.stride()).flatten()


def _alias_ranks(t):
    """(idx, rank): per element of t in row-major order, its memory element and its rank among the
    elements sharing it (0: the first).  A stable sort groups them in row-major order; each group
    starts where searchsorted finds its value."""
    idx = _alias_index(t)
    s, order = torch.sort(idx, stable=True)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(idx.numel(), device=idx.device) - torch.searchsorted(s, s)
    return idx, rank


def view_grad(x, d):
    """The gradient of the view x from d, laid out like x, holding the gradient per memory element:
    each memory element's at its representative, 0 at the other view elements sharing it."""
    _, rank = _alias_ranks(x)
    return torch.where(rank.view(x.shape) == 0, d, 0)


def memory_grad(y, g):
    """A tensor laid out like y holding, per memory element, the sum of the view gradient g over
    the elements of y sharing it (in rank order, one round per rank)."""
    idx, rank = _alias_ranks(y)
    g = g.reshape(-1)
    m = torch.zeros(int(idx.max()) + 1, dtype=g.dtype, device=g.device)
    for r in range(int(rank.max()) + 1):
        sel = rank == r
        at = idx[sel]
        m[at] = m[at] + g[sel]
    return m.as_strided(y.shape, y.stride())


def memory_tangent(x, t):
    """A tensor laid out like x holding, per memory element, the tangent t of x's representative
    (the view element kad reads it from); 0 between the view's elements."""
    idx, rank = _alias_ranks(x)
    sel = rank == 0
    m = torch.zeros(int(idx.max()) + 1, dtype=x.dtype, device=x.device)
    m[idx[sel]] = t.reshape(-1)[sel].to(x.dtype)
    return m.as_strided(x.shape, x.stride())


class Program:
    """kad's view of one decorated kernel: a context holding its sources and
    the caches of what was made from them.  Thread-safe (one lock: a kad
    context is not)."""

    def __init__(self, jit, while_cap: int = 0, tape_budget: int = 0):
        self.kernel = jit.fn.__name__
        self.ctx = _capi.Context()
        self.ctx.set_tape_options(while_cap, tape_budget)
        # named modules, resolved like Python's imports (docs/PYTHON.md)
        self.sources = load_sources(self.ctx, jit)
        # values only the host knows, read from the live module globals
        values = {(m, n): t for m, n, t in host_values(jit, {s.module for s in self.sources})}
        # @triton.jit helpers: their own source and globals, from the live objects
        values.update(((m, n), t) for m, n, t in live_helpers(self.ctx, jit, self.sources))
        self.host_values = [(m, n, t) for (m, n), t in sorted(values.items())]
        for mod, name, value in self.host_values:
            self.ctx.set_global(mod, name, value)
        self.qualified = f"{self.sources[0].module}.{self.kernel}"  # the kernel of that module
        h = hashlib.sha256()
        for s in self.sources:
            h.update(s.name.encode() + b"\0" + s.text.encode() + b"\0")
        for hv in self.host_values:
            h.update("\0".join(hv).encode() + b"\0")
        h.update(f"tapes {while_cap} {tape_budget}".encode())
        self.digest = h.hexdigest()
        self.lock = threading.Lock()
        self.fwd = {}  # sig -> Kernel
        self.bwd = {}  # (sig, wrt, out) -> Kernel (CPU)
        self.modules = {}  # (sig, wrt, out) -> module (GPU)
        self.texts = {}  # (sig, wrt, out) -> module text
        self.access_of = {}  # sig -> {pointer name: load/store bits}
        self.slots = {}  # sig -> fp32 elements per program of the saved loop results (0: none)

    def forward(self, sig):
        with self.lock:
            k = self.fwd.get(sig)
            if k is None:
                k = self.fwd[sig] = self.ctx.specialize(self.qualified, sig)
            return k

    def access(self, sig):
        """{pointer name: bits}: 1 the kernel may load through it, 2 store."""
        with self.lock:
            acc = self.access_of.get(sig)
        if acc is None:
            k = self.forward(sig)
            with self.lock:
                acc = self.access_of[sig] = k.param_access()
        return acc

    def backward(self, sig, wrt, out, det=True, saved=False, trusted=False):
        """The backward as a kad Kernel, for the CPU interpreter (det:
        deterministic, else input gradients accumulated with atomics; saved:
        the backward of the saving forward, taking its buffer kad_saved;
        trusted: the one that loads the outputs and statistics the forward
        stored, for buffers known to be unchanged)."""
        key = (sig, tuple(wrt), tuple(out), det, saved, trusted)
        k = self.bwd.get(key)
        if k is None:
            fwd = self.forward(sig)
            with self.lock:
                k = self.bwd[key] = fwd.grad(wrt, out, deterministic=det, saved=saved, trusted=trusted)
        return k

    def save_slot(self, sig):
        """fp32 elements per program of the loop results the saving forward
        stores (docs/AD.md, "Saved loop results"); 0: the backward recomputes
        everything."""
        n = self.slots.get(sig)
        if n is None:
            k = self.forward(sig)
            with self.lock:
                n = self.slots[sig] = k.save_slot()
        return n

    def save_forward(self, sig):
        """The saving forward as a kad Kernel (CPU interpreter): the kernel's
        parameters, then kad_saved."""
        key = ("save", sig)
        k = self.bwd.get(key)
        if k is None:
            fwd = self.forward(sig)
            with self.lock:
                k = self.bwd[key] = fwd.save_forward()
        return k

    def save_module(self, sig):
        """The imported saving forward (GPU): launch_<kernel>_fwd."""
        key = ("save", sig)
        mod = self.modules.get(key)
        if mod is None:
            fwd = self.forward(sig)
            with self.lock:
                text = fwd.save_module()
            mod = self.modules[key] = self._import_generated(text, "fwd", (sig, "fwd"))
        return mod

    def race_module(self, sig, out):
        """The imported one-writer check (GPU): check_<kernel>_races, or None when kad proves
        every launch (docs/AD.md, "One writer per element")."""
        key = ("race", sig, tuple(out))
        if key in self.modules:
            return self.modules[key]
        fwd = self.forward(sig)
        with self.lock:
            text = fwd.race_module(out)
        mod = self._import_generated(text, "race", (sig, ",".join(out), "race")) if text else None
        self.modules[key] = mod
        return mod

    def _key(self, sig, wrt, out, det, saved=False, trusted=False):
        h = hashlib.sha256()
        for part in (_capi.version(), _capi.build_id(), self.digest, self.kernel, sig, ",".join(wrt), ",".join(out),
                     "" if det else "atomics") + (("saved",) if saved else ()) + (("trusted",) if trusted else ()):
            h.update(part.encode() + b"\0")
        return h.hexdigest()

    def module_text(self, sig, wrt, out, det=True, saved=False, trusted=False):
        """The backward module's text: from the disk cache, else generated
        (and written there, sealed, by an atomic rename)."""
        key = (sig, tuple(wrt), tuple(out), det, saved, trusted)
        text = self.texts.get(key)
        if text is not None:
            return text
        path = self.module_path(sig, wrt, out, det, saved, trusted)
        text = read_sealed(path)  # None: missing, or not a complete module written by kad
        if text is None:
            fwd = self.forward(sig)
            with self.lock:
                text = fwd.grad_module(wrt, out, deterministic=det, saved=saved, trusted=trusted)
            text, data = seal(text)
            write_atomically(path, data)
        self.texts[key] = text
        return text

    def kernels_text(self, sig, wrt, out, det=True):
        """The backward module's kernels alone (kad.backward_source(...,
        kernels_only=True)): generated on each call, never cached."""
        fwd = self.forward(sig)
        with self.lock:
            return fwd.grad_module(wrt, out, deterministic=det, kernels_only=True)

    def jvp(self, sig, wrt, out):
        """The jvp kernel (kad_jvp) for the CPU interpreter."""
        key = ("jvp", sig, tuple(wrt), tuple(out))
        k = self.bwd.get(key)
        if k is None:
            fwd = self.forward(sig)
            with self.lock:
                k = self.bwd[key] = fwd.jvp(wrt, out)
        return k

    def jvp_module(self, sig, wrt, out):
        """The imported jvp module (GPU): launch_<kernel>_jvp."""
        key = ("jvp", sig, tuple(wrt), tuple(out))
        mod = self.modules.get(key)
        if mod is None:
            fwd = self.forward(sig)
            with self.lock:
                text = fwd.jvp_module(wrt, out)
            mod = self.modules[key] = self._import_generated(
                text, "jvp", (sig, ",".join(wrt), ",".join(out), "jvp"))
        return mod

    def _import_generated(self, text, kind, parts):
        """Imports a generated module's text (jvp, jvp_bwd) through the disk cache: written sealed by an
        atomic rename under a name keyed by the library build, the sources and parts, then executed
        from the verified text (as module() does for the backward)."""
        h = hashlib.sha256()
        for part in (_capi.version(), _capi.build_id(), self.digest, self.kernel) + tuple(parts):
            h.update(part.encode() + b"\0")
        path = os.path.join(cache_dir(), f"{self.kernel}_{kind}_{h.hexdigest()[:40]}.py")
        text, data = seal(text)
        if read_sealed(path) != text:
            write_atomically(path, data)
        name = f"kad_{kind}_" + os.path.basename(path)[:-3]
        loader = _SealedLoader(name, path, data.encode("utf-8"))
        spec = importlib.util.spec_from_file_location(name, path, loader=loader)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # Triton looks kernels' modules up
        spec.loader.exec_module(mod)
        return mod

    def jvp_grad(self, sig, wrt, out, det=True):
        """The reverse mode of the jvp kernel (CPU interpreter): the gradients of the primal inputs
        wrt from the cotangents of the output tangents t_<out> (second derivatives, _KadBackward).
        Its parameters: the jvp kernel's, then d_t_<out>..., then d_<wrt>..."""
        key = ("jvp_grad", sig, tuple(wrt), tuple(out), det)
        k = self.bwd.get(key)
        if k is None:
            jk = self.jvp(sig, wrt, out)
            t_out = [n for n, _ in jk.params][len(jk.params) - len(out):]
            with self.lock:
                k = self.bwd[key] = jk.grad(wrt, t_out, deterministic=det)
        return k

    def jvp_grad_module(self, sig, wrt, out, det=True):
        """jvp_grad's generated module (GPU): launch_<kernel>_jvp_bwd, whose args are the jvp
        kernel's parameters (Kernel.params of self.jvp(...)), then d_t_<out>..., d_<wrt>..."""
        key = ("jvp_grad", sig, tuple(wrt), tuple(out), det)
        mod = self.modules.get(key)
        if mod is None:
            jk = self.jvp(sig, wrt, out)
            t_out = [n for n, _ in jk.params][len(jk.params) - len(out):]
            with self.lock:
                text = jk.grad_module(wrt, t_out, deterministic=det)
            mod = self.modules[key] = self._import_generated(
                text, "jvp_bwd", (sig, ",".join(wrt), ",".join(out), "jvp_bwd", "" if det else "atomics"))
        return mod

    def module_path(self, sig, wrt, out, det=True, saved=False, trusted=False):
        key = self._key(sig, wrt, out, det, saved, trusted)[:40]
        return os.path.join(cache_dir(), f"{self.kernel}_bwd_{key}.py")

    def module(self, sig, wrt, out, det=True, saved=False, trusted=False):
        """The imported backward module (GPU).  What is executed is the
        verified text of module_text, never bytes read again from the file."""
        key = (sig, tuple(wrt), tuple(out), det, saved, trusted)
        mod = self.modules.get(key)
        if mod is None:
            text = self.module_text(sig, wrt, out, det, saved, trusted)  # makes sure the complete file exists
            path = self.module_path(sig, wrt, out, det, saved, trusted)
            name = "kad_bwd_" + os.path.basename(path)[:-3]
            loader = _SealedLoader(name, path, seal(text)[1].encode("utf-8"))
            spec = importlib.util.spec_from_file_location(name, path, loader=loader)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod  # Triton looks kernels' modules up
            spec.loader.exec_module(mod)
            self.modules[key] = mod
        return mod


# The on-disk cache of generated modules is shared by every process of a user
# (torchrun's ranks, dataloader workers, concurrent jobs), which may generate the
# same module at once.  A module file is written whole to a temporary file of a
# unique name in the same directory (never importable: hidden, not *.py), flushed
# and fsync'ed, then renamed over the final name (os.replace: atomic on POSIX and
# Windows), so the final name holds either nothing or a complete file; writers of
# one key write the same bytes, so the last rename wins harmlessly.  A file's
# last line seals it: the sha256 of the text before it.  A file under the final
# name that is not sealed (a crash of a non-atomic writer, an edited or
# truncated file) is never used: the module is generated again and the file
# replaced.  Temporary files left by a crash are never read.
_SEAL = "# kad: end of generated module, sha256 "


def seal(text):
    """(text, file contents): text ending in a newline, and the file holding
    it followed by the seal line."""
    if not text.endswith("\n"):
        text += "\n"
    return text, f"{text}{_SEAL}{hashlib.sha256(text.encode('utf-8')).hexdigest()}\n"


def unseal(data):
    """The module text of a sealed file's contents, else None."""
    if not data.endswith("\n"):
        return None
    cut = data.rfind("\n", 0, len(data) - 1) + 1  # where the last line starts
    text = data[:cut]
    if data[cut:-1] != _SEAL + hashlib.sha256(text.encode("utf-8")).hexdigest():
        return None
    return text


def read_sealed(path):
    """The text of the complete module file at path, else None (missing,
    unreadable, partial, or edited)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = f.read()
    except (OSError, UnicodeDecodeError):
        return None
    return unseal(data)


def write_atomically(path, data):
    """Writes data to path so that no reader ever sees a partial file."""
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class _SealedLoader(importlib.machinery.SourceFileLoader):
    """Loads a cached module from its verified text (the file's path stays
    its __file__, for Triton and tracebacks); no bytecode cache, so nothing
    else is written to the shared directory."""

    def __init__(self, fullname, path, data):
        super().__init__(fullname, path)
        self._data = data

    def get_data(self, path):
        if path == self.path:
            return self._data
        return super().get_data(path)

    def path_stats(self, path):
        raise OSError("kad: generated modules are compiled from their verified text")


def _copy_span(t):
    """A copy of t with t's sizes and strides, holding t's whole storage
    span (a kernel may address elements between a view's rows)."""
    if t.numel() == 0:
        return t.clone()
    return storage_span(t.detach()).clone().as_strided(t.size(), t.stride(), 0)


class Run:
    """What one differentiable launch needs from forward to backward.  Holds
    detached aliases only (no autograd references: no cycles).

    The tensors autograd sees as modified in place ("dirty") are the outputs,
    or their bases when they are views: PyTorch cannot let one Function
    modify several views in place, and after an in-place change of a base
    every view of it reads its history from the base.  Each output's
    gradient is then cut out of its dirty tensor's gradient."""

    def __init__(self, dk, launch, inputs, others, outputs, dirty, dirty_of, inout, old, prep):
        self.dk = dk
        self.launch = launch
        self.inputs = inputs  # declared input names with tensor arguments, in-place ones excluded
        self.others = others  # other tensor arguments (read-only data, scratch)
        self.outputs = outputs  # declared output names (those passed tensors)
        self.dirty = dirty  # the dirty tensors (detached aliases after forward)
        self.dirty_of = dirty_of  # output name -> index into dirty
        self.inout = inout  # outputs updated in place (see the header)
        self.old = old  # in-place name -> copy of its value before the launch (when the kernel loads it)
        self.prep = prep  # the _Prep of the launch (of its signature before an autotuned launch)
        self.saved = None  # the saving forward's buffer (docs/AD.md, "Saved loop results"), or None
        self.plan = None  # the _Plan this launch took (its forward and aliases come from it), or None
        self.versions = None  # the written tensors' version counters right after the forward (trusted())
        self.written = frozenset()  # indices into others of the scratch tensors the kernel writes
        self.scratch = {}  # those indices -> detached aliases (_KadFunction.forward)

    def forward(self):
        """Runs the kernel (its saving forward where kad saves loop results for the backward)."""
        plan = self.plan
        if plan is not None:
            self.saved = plan.forward(self.dk, self.launch)
            self.launch.call = None
            values = self.launch.values
            dirty = self.dirty = [t.detach() for t in self.dirty]
            for n, i in plan.alias:
                values[n] = dirty[i]
            for n in plan.detach:
                values[n] = values[n].detach()
            return
        self.saved = self.dk._run_forward(self.launch, self.prep, save=True)
        # the caller's arguments (the outputs among them, whose grad_fn is now this Function's node,
        # which holds this Run): kept, they would make a reference cycle that only Python's cyclic
        # collector frees, holding the launch's tensors until it runs
        self.launch.call = None
        if self.dk._autotuned and self.launch.device != "cpu":
            # the autotuner's config made another signature: the backward is the one generated for it
            self.prep = self.dk._prep(self.launch)
            # and the one-writer check, which needs the config that ran: right after the forward
            self.dk._check_races(self.launch, self.prep)
        # keep detached aliases of the tensors that now carry this Function's node: the dirty tensors,
        # the outputs (views of them) and any view (one of a dirty base would, after mark_dirty); an
        # output that is its own dirty tensor keeps `values[n] is dirty[i]`.  A tensor that is not a
        # view is kept as passed: mark_dirty of another tensor leaves its history alone.
        orig = self.dirty
        self.dirty = dirty = [t.detach() for t in orig]
        values = self.launch.values
        outputs = self.outputs
        for n in self.prep.tensors:
            v = values[n]
            if n in outputs:
                for o, d in zip(orig, dirty):
                    if v is o:
                        values[n] = d
                        break
                else:
                    values[n] = v.detach()
            elif v._base is not None:
                values[n] = v.detach()

    def trusted(self):
        """Whether the backward may load what the forward stored in its outputs (docs/AD.md, "Trusted
        saved outputs"): every dirty tensor's version counter is what it was right after the forward
        (an in-place change of an output, of a view of it or its base, or another launch writing it
        bumps it).  Else the backward recomputes those values from the inputs.  The scratch tensors
        (a norm's mean and rstd) are saved for backward: PyTorch itself refuses to unpack them when
        they were changed in place."""
        v = self.versions
        if v is None or not self.dk.trust:
            return False
        kept = self.kept()
        if getattr(self.launch, "mode", None) == "f64" and any(t.dtype != torch.float64 for t in kept):
            return False  # f64 mode computes in float64: a narrower buffer holds its values rounded
        return all(t._version == n for t, n in zip(kept, v))

    def kept(self):
        """The tensors the forward wrote: the dirty ones, then the written scratch ones."""
        return list(self.dirty) + [self.scratch[i] for i in sorted(self.scratch)]

    def output_grad(self, n, dirty_grads):
        """The gradient of output n, in n's layout, from its dirty tensor's (per memory element when
        either overlaps itself: a view gradient is summed over the elements sharing one)."""
        g = dirty_grads[self.dirty_of[n]]
        y = self.launch.values[n]
        base = self.dirty[self.dirty_of[n]]
        if g is None:
            return g
        if not base.is_contiguous() and overlaps(base):  # g per view element: summed per memory element
            full = memory_grad(base, g)
            return full if y is base else full.as_strided(y.size(), y.stride(),
                                                          y.storage_offset() - base.storage_offset())
        if y is base:
            return g
        full = g
        if g.stride() != base.stride() or g.dtype != base.dtype:
            full = torch.empty_strided(base.size(), base.stride(), dtype=base.dtype, device=base.device)
            full.copy_(g)
        return full.as_strided(y.size(), y.stride(), y.storage_offset() - base.storage_offset())


class _KadFunction(torch.autograd.Function):
    """apply(run, *inputs, *others, *dirty) -> dirty (marked so)."""

    @staticmethod
    def forward(ctx, run, *tensors):
        ni, no = len(run.inputs), len(run.others)
        run.forward()
        ctx.run = run
        # the scratch tensors the kernel writes (a norm's mean and rstd) are kept as detached aliases,
        # not saved: the recomputing backward does not read them, and the trusted one checks their
        # version counters itself (Run.trusted) instead of PyTorch refusing a changed one
        w = run.written
        run.scratch = {i: tensors[ni + i].detach() for i in w}
        ctx.save_for_backward(*tensors[:ni], *[t for i, t in enumerate(tensors[ni:ni + no]) if i not in w])
        outs = tensors[ni + no:]
        ctx.mark_dirty(*outs)
        ctx.set_materialize_grads(False)
        return outs[0] if len(outs) == 1 else tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        # The engine runs a backward with grad mode on only under create_graph=True: the backward
        # then runs as _KadBackward, whose own backward is kad's jvp kernel and its reverse mode
        # (second derivatives, see _KadBackward).  With grad mode off: the plain backward.
        if torch.is_grad_enabled():
            return _differentiable_backward(ctx, grads)
        return _backward(ctx, *grads)


def second_derivative_error(kernel):
    """The error of a second derivative under torch.func or torch.compile (kad's custom-operator
    path, whose backward is not differentiable)."""
    return RuntimeError(
        f"kad: second derivatives are not supported yet under torch.func and torch.compile: a second "
        f"derivative (grad(grad(f)), jacrev(jacrev(f)), hessian = jacfwd(jacrev(f)), or a create_graph=True "
        f"backward of a compiled graph) went through the kad kernel '{kernel}', whose backward is not "
        f"differentiable on that path (its result would be a constant). Take it in eager mode with "
        f"torch.autograd.grad(..., create_graph=True) (docs/PYTHON.md, \"Second derivatives\"), or compute "
        f"first-order derivatives only")


def _backward(ctx, *grads):
    """_KadFunction's backward."""
    return _backward_of(ctx.run, ctx.needs_input_grad, _unpack(ctx), grads, ctx.run.trusted())


def _unpack(ctx):
    """The tensors _KadFunction.forward kept: the inputs, then the other tensor arguments in order
    (the saved ones, and the written scratch ones kept as detached aliases)."""
    run = ctx.run
    saved = ctx.saved_tensors
    if not run.scratch:
        return saved
    ni = len(run.inputs)
    rest = iter(saved[ni:])
    return tuple(saved[:ni]) + tuple(run.scratch[i] if i in run.scratch else next(rest)
                                     for i in range(len(run.others)))


def _backward_of(run, needs, saved, grads, trusted=False):
    """_KadFunction's backward on its parts: needs (ctx.needs_input_grad), the saved tensors (the
    inputs, then the other tensor arguments) and the dirty tensors' gradients.  trusted: the
    outputs hold what the forward stored (Run.trusted): the backward that loads them."""
    ni, no = len(run.inputs), len(run.others)
    # what to compute depends on which inputs need a gradient, which output gradients are None and
    # which outputs are in place: planned once per combination (_Prep.plan)
    none = tuple([g is None for g in grads])
    wrt, need_old, out, b = run.prep.plan(run, needs, none, trusted)
    if trusted and b is not None and b[6]:
        try:  # the trusted backward's own launch conditions (a statistic's one writer per element)
            run.dk._check_launch(run.launch, run.prep, b)
        except _capi.KadError:
            trusted = False
            wrt, need_old, out, b = run.prep.plan(run, needs, none, False)
    if b is not None and run.plan is not None and not need_old:
        fast = run.plan.fast.get(id(b))  # b lives in prep.bwd as long as the plan's prep
        if fast is None:
            fast = run.plan.fast[id(b)] = _fast_backward(run, b)
        if fast:
            r = _run_fast(run, fast, saved, grads, trusted, needs)
            if r is not None:
                return r
        elif run.plan.native_tries:
            run.plan.native_why = "the backward takes the general path (_fast_backward does not apply)"
    elif run.plan is not None and run.plan.native_tries:
        run.plan.native_why = ("the backward takes the general path (old values, or no plan for this "
                               "combination of gradients)")
    result = [None] * (ni + no + len(run.dirty))
    if b is not None:
        out_grads = {n: run.output_grad(n, grads) for n in out}
        override = dict(zip(run.inputs, saved)) if not no else dict(zip(run.inputs + run.others, saved))
        if run.old:
            override.update(run.old)
        d = run.dk._run_backward(run.launch, wrt, run.inout, out, out_grads, override, b, run.saved)
        for i, n in enumerate(run.inputs):
            if n in d:
                result[i] = d[n]
        # the old values' gradients: the dirty tensor's gradient with
        # each in-place output's part replaced by what the backward made
        for i in need_old:
            base = run.dirty[i]
            g = grads[i]
            full = torch.empty_strided(base.size(), base.stride(), dtype=base.dtype, device=base.device)
            if g is None:
                full.zero_()
            else:
                full.copy_(g)
            for n in run.inout:
                if run.dirty_of[n] != i:
                    continue
                y = run.launch.values[n]
                if y is base:
                    full.copy_(d[n])
                else:
                    full.as_strided(y.size(), y.stride(), y.storage_offset() - base.storage_offset()).copy_(d[n])
            result[ni + no + i] = full
    return (None, *result)


def _fast_backward(run, b):
    """The backward call of a plan's launches reduced to what varies per call (False where it does
    not apply): on a GPU, for outputs that are their own dirty tensors, contiguous, not in place,
    and contiguous inputs, with no old values -- the common case, where _run_backward's general
    handling (views, overlapping layouts, in-place outputs, dtype conversions) has nothing to do.
    (runtime, outs, ins, positions, options, uses, fn, total): the runtime arguments as (name,
    index into the saved tensors or -1), the outputs passed as (name, dirty index), the input
    gradients' tensors likewise, their places in the result, the launch options, whether the
    launcher takes the saved buffer, the launcher, the result's length.  Every fact is one the
    plan's launch key fixes (layouts, dtypes, devices, the options)."""
    launch = run.launch
    if launch.device != "cuda" or run.inout or run.old or run.dk._autotuned:
        return False
    _, out, ins, fn, fwd_opts, uses, _ = b
    vals = launch.values
    for n in out:
        y = vals[n]
        if y is not run.dirty[run.dirty_of[n]] or not y.is_contiguous():
            return False
    if not all(vals[n].is_contiguous() for n in ins):
        return False
    where = {n: i for i, n in enumerate(list(run.inputs) + list(run.others))}
    opts = launch.options if fwd_opts else {}
    opts = {k: opts[k] for k in ("num_warps", "num_stages") if k in opts}
    return ([(n, where.get(n, -1)) for n in launch.runtime_names], [(n, run.dirty_of[n]) for n in out],
            [(n, where.get(n, -1)) for n in ins], [run.inputs.index(n) for n in ins], opts, bool(uses), fn,
            len(run.inputs) + len(run.others) + len(run.dirty))


def _run_fast(run, fast, saved, grads, trusted=False, needs=None):
    """_KadFunction's backward on _fast_backward's plan; None where this call's output gradients
    need _run_backward's handling (None, another dtype, device or layout).  Where the plan may get
    a native backward node (_native.py), the call is recorded into its recipe."""
    rt, outs, ins, pos, opts, uses, fn, total = fast
    vals = run.launch.values
    gs = []
    for n, j in outs:
        g, y = grads[j], vals[n]
        if g is None or g.dtype is not y.dtype or g.get_device() != y.get_device() or not g.is_contiguous():
            return None
        gs.append(g)
    args = [saved[i] if i >= 0 else vals[n] for n, i in rt]
    if uses and run.saved is not None:
        args.append(run.saved)
    ds = [torch.empty_like(saved[i] if i >= 0 else vals[n]) for n, i in ins]
    plan = run.plan
    if (plan.native_tries > 0 and len(outs) == len(run.dirty) and all(i >= 0 for _, i in ins)
            and not (plan.nat is not None and plan.nat.has(bool(trusted)))):
        _native_record(run, plan, fast, saved, gs, ds, args, trusted, needs)
    else:
        fn(run.launch.grid, *args, *gs, *ds, **opts)
    result = [None] * total
    for p, d in zip(pos, ds):
        result[p] = d
    return (None, *result)


def _native_record(run, plan, fast, saved, gs, ds, args, trusted, needs):
    """Runs _run_fast's launcher call recorded (_native.record) and, when every step could be
    recorded, makes the plan's native backward node recipe for this trusted-ness
    (docs/PYTHON.md, "Native backward nodes"); else runs the call as usual."""
    rt, outs, ins, pos, opts, uses, fn, total = fast
    mod = _native.module()
    if mod is None:  # being compiled, or not available (no compiler): the Python Function serves
        if _native.why() is not None:
            plan.native_tries = 0
        fn(run.launch.grid, *args, *gs, *ds, **opts)
        return
    ns, nd = len(saved), len(run.dirty)
    has_buf = bool(uses and run.saved is not None)
    known = [(t, i) for i, t in enumerate(saved)] + [(t, ns + j) for j, t in enumerate(run.dirty)]
    if has_buf:
        known.append((run.saved, ns + nd))
    g0 = ns + nd + has_buf
    known += [(g, g0 + j) for (_, j), g in zip(outs, gs)]
    d0 = g0 + nd
    known += [(d, d0 + k) for k, d in enumerate(ds)]
    steps, dev = _native.record(fn, run.launch.grid, args, gs, ds, opts, known)
    if steps is None:
        plan.native_tries -= 1
        plan.native_why = dev or "a step of the launcher has no recipe step"
        return
    recipe = mod.recipe(ns, nd, has_buf, [i for _, i in ins], list(pos), [y.dtype for y in run.dirty], steps,
                        dev or 0, None)
    if plan.nat is None:
        plan.nat = mod.Holder(_native_fallback, run.dk.__name__)
    plan.nat.set(bool(trusted), recipe)
    plan.native_needs = needs


def _native_forward(plan, dk, grid, g, args, kwargs, values):
    """Makes the plan's C++ forward (plan.nfwd: _native.cpp's Forward), which later launches of
    the key take instead of plan.launch: the forward kernel Triton compiled for the key launched
    directly, then the native backward node attached.  Only for what it can do without the Python
    plan: a tuple grid, no saving forward, no old values, no per-call checks, positional tensors,
    outputs that are their own dirty tensors; else nothing (plan.launch serves)."""
    plan.nfwd_tried = True
    mod = _native.module()
    if (mod is None or plan.nat is None or type(grid) is not tuple or plan.per_call or plan.old or plan.grids.get(g)
            or plan.inout or any(isinstance(v, torch.Tensor) for v in kwargs.values())):
        return
    key = next(iter(plan.ck), None)
    c = plan.ck.get(key) if len(plan.ck) == 1 else None
    if c is None or getattr(c, "function", None) is None:
        plan.nfwd_tried = False  # not compiled yet: asked again at the next launch
        return
    pos = {n: i for i, n in enumerate(plan.names)}
    if any(n not in pos for n in plan.prep.tensors) or plan.dirty_of != {n: i for i, n in enumerate(plan.outputs)}:
        return
    kernel = _native_kernel(dk, c, g, values, pos)
    if kernel is None:
        return
    tens = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    w = plan.written
    template = [None if isinstance(a, torch.Tensor) else a for a in args]
    make_run = functools.partial(_native_run, plan, dk, grid, tuple(tens), template, dict(kwargs))
    plan.nfwd = mod.forward(kernel, tens,
                            [pos[n] for n in plan.ins], [pos[n] for n in plan.others], [pos[n] for n in plan.outputs],
                            [i not in w for i in range(len(plan.others))], sorted(w),
                            [(pos[a], pos[b], la, lb) for a, b, la, lb in plan.pairs], len(args), key[0],
                            bool(dk.trust), plan.nat, make_run, None)
    plan.nfwd_key = key


def _native_kernel(dk, c, g, values, pos):
    """The launch of compiled kernel c over grid g as _native.cpp's forward takes it: (function,
    grid, threads, shared memory, arguments), each tensor argument the call's argument at pos[name],
    each scalar its bits; None when the kernel cannot be launched so (a launch option or parameter
    kind the C++ forward does not handle: the Python paths serve)."""
    md = c.metadata
    if (getattr(md, "num_ctas", 1) != 1 or getattr(md, "launch_cooperative_grid", False) or getattr(md, "launch_pdl", False)
            or getattr(md, "global_scratch_size", 0) or getattr(md, "profile_scratch_size", 0)
            or getattr(md, "tensordesc_meta", None)):
        return None
    names = dk._binder.names
    sig = list(c.src.signature.values())
    if len(sig) != len(names):
        return None
    kargs = []
    for n, ty in zip(names, sig):
        if ty == "constexpr":
            continue
        if not isinstance(ty, str) or n not in values:
            return None
        v = values[n]
        if ty.startswith("*"):
            if not isinstance(v, torch.Tensor) or n not in pos:
                return None
            kargs.append((pos[n], 0, 0, 8))
        else:
            b = _native._scalar(ty, v)
            if b is None:
                return None
            kargs.append((-1, 0, b[0], b[1]))
    return (int(c.function), tuple(g) + (1,) * (3 - len(g)), 32 * md.num_warps, md.shared, kargs)


class _Direct:
    """A repeat of a launch autograd has nothing to do with (DifferentiableKernel._direct: CUDA tensors,
    nothing requires grad), by launch key: the kernel Triton compiled for the key's first launch,
    launched from C++ (_native.cpp's Forward without a node), which also bumps the versions of the
    outputs and of the tensors kad found written (as _bump_direct)."""

    __slots__ = ("nf", "key", "nwritten")

    def __init__(self, nf, key, nwritten):
        self.nf, self.key, self.nwritten = nf, key, nwritten


def _direct_native(dk, grid, args, kwargs, c):
    """The _Direct of a direct launch whose kernel Triton compiled is c, or None: a tuple grid, a plain
    JITFunction, every runtime parameter given positionally (constexprs may be keywords), no tensor
    keyword; the extension built."""
    mod = _native.module()
    if mod is None or type(grid) is not tuple or getattr(c, "function", None) is None:
        return None
    if any(isinstance(v, torch.Tensor) for v in kwargs.values()):
        return None
    names = dk._binder.names
    if len(args) > len(names):
        return None
    values = dict(zip(names, args))
    values.update((k, v) for k, v in kwargs.items() if k in dk._binder.position)
    pos = {n: i for i, n in enumerate(names[:len(args)])}
    try:
        g = eval_grid(grid, None)
    except Exception:  # noqa: BLE001 -- a grid kad's evaluation does not take: Triton's JIT launches it
        return None
    kernel = _native_kernel(dk, c, g, values, pos)
    if kernel is None:
        return None
    tens = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    bump = [i for i in tens if names[i] in dk.outputs or (names[i] in dk._written_names and args[i].is_floating_point())]
    if not bump:
        return None
    key = (_cuda_cur(), _knobs.runtime.debug, _knobs.compilation.instrumentation_mode)
    nf = mod.forward(kernel, tens, [], [], bump, [], [], [], len(args), key[0], False, None, None, None)
    return _Direct(nf, key, len(dk._written_names))


def _native_run(plan, dk, grid, tens, template, kwargs, dets, versions):
    """The Run of a launch the C++ forward made (for its node's Python fallback): the plan's
    binding of the launch's detached tensors (dets, at positions tens) and the key's scalars."""
    args = list(template)
    for p, t in zip(tens, dets):
        args[p] = t
    values = dict(zip(plan.names, args))
    for k in plan.kw:
        values[k] = kwargs[k]
    for n, d in plan.defaults:
        values[n] = d
    launch = Launch(plan.name, plan.params, values, plan.options, eval_grid(grid, None), plan.sig, plan.device, None,
                    plan.runtime_names)
    r = Run(dk, launch, plan.ins, plan.others, plan.outputs, [values[n] for n in plan.outputs], dict(plan.dirty_of),
            plan.inout, {}, plan.prep)
    r.plan = plan
    r.written = plan.written
    r.scratch = {i: values[plan.others[i]] for i in plan.written}
    r.versions = tuple(versions)
    return r


def _native_fallback(run, saved, grads):
    """A native backward node's call of what its recipe does not cover: _KadFunction's backward on
    the same parts (the general path; _KadBackward under create_graph=True)."""
    needs = run.plan.native_needs
    if torch.is_grad_enabled():
        return _KadBackward.apply(run, needs, *saved, *grads)
    return _backward_of(run, needs, saved, grads, run.trusted())[1:]


def _differentiable_backward(ctx, grads):
    """_KadFunction's backward under create_graph=True: the same gradients, computed by _KadBackward
    so that they are themselves differentiable."""
    run = ctx.run
    name = run.dk.__name__
    if run.inout:
        raise RuntimeError(
            f"kad: second derivatives through the kad kernel '{name}' are not supported for outputs updated in "
            f"place ({', '.join(repr(n) for n in run.inout)}: declared as inputs too, loaded by the kernel, or "
            f"already part of the graph): a backward with create_graph=True (gradgradcheck, a gradient penalty, "
            f"a Hessian-vector product) needs kernels that write fresh outputs; pass fresh output tensors (e.g. "
            f"torch.empty_like) or compute this gradient without create_graph=True")
    for n in run.outputs:
        if run.launch.values[n] is not run.dirty[run.dirty_of[n]]:
            raise RuntimeError(
                f"kad: second derivatives through the kad kernel '{name}' are not supported when the output "
                f"'{n}' is a view of another tensor: pass a fresh tensor (e.g. torch.empty_like) for it, or "
                f"compute this gradient without create_graph=True")
    return (None, *_KadBackward.apply(run, ctx.needs_input_grad, *_unpack(ctx), *grads))


def _laid_like(x, t=None):
    """A tensor with x's sizes, strides, dtype and device holding t (zeros when t is None)."""
    d = torch.empty_strided(x.size(), x.stride(), dtype=x.dtype, device=x.device)
    if t is None:
        d.zero_()
    else:
        d.copy_(t)
    return d


class _KadBackward(torch.autograd.Function):
    """The backward of a kad launch as a differentiable op (create_graph=True: second derivatives).
    apply(run, needs, *saved, *dirty_grads) -> _backward_of's result without its leading None: the
    inputs' gradients gx = J(x)^T gy (then None for the other tensors and the dirty tensors).

    Its backward, given the cotangents v of the gx (reverse over forward; the same numbers as
    forward over reverse), uses kad's jvp kernel K_jvp of the forward (docs/AD.md, "Second
    derivatives"):
      gy's gradient:  J(x) v, the output tangents t_y of K_jvp run with the input tangents t_x = v
                      (t_y zero before the launch: the outputs are fresh);
      x's gradient:   H_gy v = d/dx <gy, J(x) v>, the reverse mode of K_jvp with respect to the
                      primal inputs for the cotangent gy on t_y (and none on y): Program.jvp_grad
                      on the CPU interpreter, its generated module (jvp_grad_module) on CUDA.
    Only the declared inputs have second derivatives (the other tensor arguments are constants);
    the backward of this backward (third derivatives) is refused."""

    @staticmethod
    def forward(ctx, run, needs, *tensors):
        ns = len(run.inputs) + len(run.others)
        saved, grads = tensors[:ns], tensors[ns:]
        res = _backward_of(run, needs, saved, grads)[1:]
        ctx.run, ctx.needs = run, needs
        # the other tensor arguments are constants, kept aside (the backward runs on copies of them)
        ni = len(run.inputs)
        ctx.others = [t.detach() for t in saved[ni:]]
        ctx.save_for_backward(*saved[:ni], *grads)
        ctx.set_materialize_grads(False)
        return res

    @staticmethod
    def backward(ctx, *vs):
        run = ctx.run
        if torch.is_grad_enabled():
            raise RuntimeError(
                f"kad: third derivatives through the kad kernel '{run.dk.__name__}' are not supported: the "
                f"backward of its backward (a Hessian-vector product's gradient) is not differentiable; take "
                f"at most two derivatives through kad kernels (one backward with create_graph=True)")
        ni, no = len(run.inputs), len(run.others)
        tensors = ctx.saved_tensors
        saved, grads = tuple(tensors[:ni]) + tuple(ctx.others), tensors[ni:]
        need = ctx.needs_input_grad[2:]  # per saved tensor, then per dirty gradient
        launch = run.launch
        wrt = [n for i, n in enumerate(run.inputs) if ctx.needs[1 + i]]  # the inputs gx was computed for
        v_of = {n: vs[i] for i, n in enumerate(run.inputs) if n in wrt}
        outs = [n for n in run.outputs if grads[run.dirty_of[n]] is not None]
        need_x = [n for i, n in enumerate(run.inputs) if need[i] and n in wrt]
        need_y = [n for n in outs if need[ni + no + run.dirty_of[n]]]
        result = [None] * (ni + no + len(grads))
        if not wrt or not outs or not (need_x or need_y) or all(v_of[n] is None for n in wrt):
            return (None, None, *result)
        order = {n: i for i, (n, _) in enumerate(launch.runtime)}
        wrt.sort(key=order.get)
        outs.sort(key=order.get)
        tens = dict(launch.values)
        tens.update(zip(run.inputs + run.others, saved))
        tens = {n: t.detach() if isinstance(t, torch.Tensor) else t for n, t in tens.items()}
        gy = {n: grads[run.dirty_of[n]] for n in outs}
        prog = run.dk.program
        cpu = launch.device == "cpu"
        mode = getattr(launch, "mode", "as_written")

        def fresh():  # the forward's values with scratch outputs (the jvp kernel writes them again) and
            t = dict(tens)  # copies of the other tensors (it may store through them: statistics)
            for n in run.outputs:
                t[n] = _laid_like(tens[n])
            for n in run.others:
                t[n] = _copy_span(tens[n])
            return t
        # (views overlapping themselves: v is read at each memory element's representative, gy summed
        # per memory element, d_x given per view element, as _run_backward does)
        t_x = [memory_tangent(tens[n], v_of[n]) if v_of[n] is not None and overlaps(tens[n]) else
               _laid_like(tens[n], v_of[n]) for n in wrt]
        opts = launch.options
        if opts:
            opts = {k: opts[k] for k in ("num_warps", "num_stages") if k in opts}
        if need_y:  # J(x) v
            t_y = [_laid_like(tens[n]) for n in outs]
            t = fresh()
            if cpu:
                k = prog.jvp(launch.sig, wrt, outs)
                names = [n for n, _ in k.params][:len(k.params) - len(wrt) - len(outs)]
                run_cpu(k, launch.grid, [t[n] for n in names] + t_x + t_y, mode,
                        written=[t[n] for n in run.outputs] + t_y + [t[n] for n in run.others])
            else:
                fn = getattr(prog.jvp_module(launch.sig, wrt, outs), f"launch_{launch.name}_jvp")
                fn(launch.grid, *[t[n] for n in launch.runtime_names], *t_x, *t_y, **(opts or {}))
            for n, ty in zip(outs, t_y):
                if n in need_y:
                    result[ni + no + run.dirty_of[n]] = ty
        if need_x:  # H_gy v: the reverse mode of the jvp kernel
            k = prog.jvp(launch.sig, wrt, outs)
            names = [n for n, _ in k.params][:len(k.params) - len(wrt) - len(outs)]
            t = fresh()
            t_y = [_laid_like(tens[n]) for n in outs]
            d_ty = [memory_grad(tens[n], gy[n]) if overlaps(tens[n]) else _laid_like(tens[n], gy[n]) for n in outs]
            d_x = [_laid_like(tens[n]) for n in wrt]
            args = [t[n] for n in names] + t_x + t_y + d_ty + d_x
            if cpu:
                run_cpu(prog.jvp_grad(launch.sig, wrt, outs, run.dk.deterministic), launch.grid, args, mode,
                        written=[t[n] for n in run.outputs] + t_y + d_x + [t[n] for n in run.others])
            else:  # the launcher takes the forward's runtime arguments (the specialized ones too)
                args = [t[n] for n in launch.runtime_names] + t_x + t_y + d_ty + d_x
                mod = prog.jvp_grad_module(launch.sig, wrt, outs, run.dk.deterministic)
                getattr(mod, f"launch_{launch.name}_jvp_bwd")(launch.grid, *args, **(opts or {}))
            for n, dx in zip(wrt, d_x):
                if n in need_x:
                    result[run.inputs.index(n)] = view_grad(tens[n], dx) if overlaps(tens[n]) else dx
        return (None, None, *result)


class DifferentiableKernel:
    """A Triton kernel (JITFunction, or autotune/heuristics wrapper) whose
    launches PyTorch can differentiate.  kernel[grid](...) and
    kernel.run(..., grid=...) launch as Triton does; other attributes are
    the wrapped object's."""

    def __init__(self, fn: Any, inputs: Sequence[str], outputs: Sequence[str], deterministic: bool = True,
                 tape_budget: int | None = None, while_cap: int | None = None, save: bool = True,
                 check_races: str | bool = "first", trust_outputs: bool = True) -> None:
        self.fn = fn
        self.deterministic = bool(deterministic)
        self.save = bool(save)
        self._written_names = set()  # parameters a bound launch found written (_bump_direct)
        self.trust = bool(trust_outputs)
        if check_races not in ("first", "always", False):
            raise ValueError(f"kad.differentiable: check_races must be 'first', 'always' or False, "
                             f"got {check_races!r}")
        self.check_races = check_races
        for nm, v in (("tape_budget", tape_budget), ("while_cap", while_cap)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise ValueError(f"kad.differentiable: {nm} must be an int >= 0, got {v!r}")
        self.tape_budget = tape_budget or 0
        self.while_cap = while_cap or 0
        self.chain, self.jit = unwrap(fn)
        ps = params_of(self.jit)
        names = [p.name for p in ps]
        const = {p.name for p in ps if p.is_constexpr}
        for role, lst in (("inputs", inputs), ("outputs", outputs)):
            if isinstance(lst, str):
                raise TypeError(f"kad.differentiable: {role} must be a list of parameter names, not a string")
            for n in lst:
                if n not in names:
                    raise ValueError(f"kad.differentiable: {role} names '{n}', which is not a parameter of "
                                     f"{self.jit.fn.__name__} (its parameters: {', '.join(names)})")
                if n in const:
                    raise ValueError(f"kad.differentiable: {role} names '{n}', a tl.constexpr parameter; "
                                     f"inputs and outputs are pointer parameters")
        if not outputs:
            raise ValueError("kad.differentiable: give at least one output")
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self._ins = [n for n in self.inputs if n not in self.outputs]  # inputs that are not updated in place
        # the hot path's caches (docs/PYTHON.md, "Caches"): the binder's signatures by fast key, and
        # per (signature, device) everything a launch and its backward need (_Prep).  A declared name
        # passed None is absent (optional): its signature says name=None, a constant, as Triton's
        self._binder = Binder(self.jit, self.chain, self.inputs + self.outputs,
                              lambda sig: self.program.forward(sig).range_hints(), outputs=self.outputs)
        self._preps = {}
        self._plans = {}  # launch key (_plan_key) -> _Plan
        self._dplans = {}  # launch key (_plan_key) -> _Direct (launches autograd has nothing to do with)
        self._hot = ()  # (plan, f64 typing, its keyed C++ Forward) of the latest native launches' keys, up to 4
        # _direct's positions of the declared parameters (sorted), and all their names
        declared = dict.fromkeys(self.inputs + self.outputs)
        self._declared_pos = sorted(names.index(n) for n in declared)
        self._declared_kw = list(declared)
        # the autotuner among the wrappers (its best_config is the config a GPU launch ran), or None
        self._autotuner = next((w for w in self.chain if wrapper_kind(w) == "Autotuner"), None)
        self._autotuned = self._autotuner is not None
        _ops._kernel_id(self)  # self._op_id: names this kernel in kad::launch's keys (torch.compile)
        outs = list(dict.fromkeys(self.outputs))
        # the (output, other) pairs whose storage must not overlap (_Prep.pairs: those present)
        self._pairs = [(a, b) for i, a in enumerate(outs) for b in self.inputs + outs[i + 1:] if a != b]
        self._program = None
        self._plock = threading.Lock()
        self.__name__ = self.jit.fn.__name__
        self.__doc__ = self.jit.fn.__doc__

    def __repr__(self) -> str:
        return f"<kad.differentiable {self.__name__} inputs={self.inputs} outputs={self.outputs}>"

    def __getattr__(self, name):
        if name.startswith("__") or name in ("fn", "chain", "jit"):
            raise AttributeError(name)
        return getattr(self.fn, name)

    @property
    def program(self) -> "Program":
        """kad's context for this kernel, made at the first launch."""
        with self._plock:
            if self._program is None:
                self._program = Program(self.jit, self.while_cap, self.tape_budget)
            return self._program

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

    def bind(self, grid, args, kwargs, after_launch=False):
        return self._binder.bind(grid, args, kwargs, after_launch, _F64.get())

    def _prep(self, launch):
        """The _Prep of a bound launch (made at the first launch of its signature and device)."""
        p = self._preps.get((launch.sig, launch.device))
        if p is None:
            p = self._preps[(launch.sig, launch.device)] = _Prep(self, launch)
        return p

    # ---------------------------------------------------------------- launching

    def run(self, *args: Any, grid: Any, **kwargs: Any) -> Any:
        if _compiling() or _functorch_active() or _forward_ad._current_level >= 0:
            # torch.compile traces this (dynamo) / a torch.func transform runs: kad's custom operators
            return self._run_op(grid, args, kwargs, not _compiling())
        grad = torch.is_grad_enabled()
        if grad and not self._autotuned:
            # the keys of the latest native launches, their fields compared in C++ (_native.cpp's
            # Forward.launch_keyed): a training loop's repeat costs no _plan_key
            for plan, f64, nf in self._hot:
                if f64 is _F64.get() and plan.native_ok(self) and nf.launch_keyed(grid, args, kwargs):
                    return None
            # a launch key seen before (docs/PYTHON.md, "Caches"): its _Plan does the rest
            pkey = self._plan_key(grid, args, kwargs)
            if pkey is not None:
                try:
                    plan = self._plans.get(pkey)
                except TypeError:  # a grid tuple holding something unhashable
                    plan = pkey = None
                if plan is not None:
                    nf = plan.nfwd
                    if nf is not None and plan.native_ok(self):
                        if not nf.has_key:  # before the launch, which gives the outputs their history
                            nf.keyed(grid, args, kwargs)
                        if nf.launch(args):
                            self._hot = ((plan, pkey[1], nf), *[h for h in self._hot[:3] if h[0] is not plan])
                            return None
                    if plan.launch(self, grid, args, kwargs):
                        return None
        else:
            pkey = None
        if self._direct(args, kwargs, grad):
            # CUDA tensors and nothing for autograd to do: the plain Triton launch, as the caller wrote it
            self._launch_direct(grid, args, kwargs, pkey)
            return None
        # The hot path: binding with the signature cached by the call's fast key (_launch.Binder), then
        # the launch's _Prep by (signature, device).  What remains per call depends on the tensors
        # themselves (requires_grad, views, overlapping storage) and cannot be cached.
        # an autotuned kernel is bound with the config its previous launch ran (the one a training
        # loop's launch runs again: _run_forward then need not bind it again), on the CPU with the first
        launch = self._binder.bind(grid, args, kwargs, "previous" if self._autotuned else False, _F64.get())
        if self._autotuned and launch.device == "cpu" and not _same_config(launch.config, self._autotuner.configs[0]):
            launch = self._binder.bind(grid, args, kwargs, False, _F64.get())
        launch.call = (grid, args, kwargs)  # for the Triton launch, as the caller wrote it
        prep = self._preps.get((launch.sig, launch.device)) or self._prep(launch)
        tens = launch.values
        if grad:
            self._check_undeclared(tens, prep.others)
        dirty, dirty_of = [], {}
        in_graph = False
        outputs = prep.outputs
        for n in outputs:
            t = tens[n]
            d = t._base
            if d is None:
                d = t
            k = next((i for i, e in enumerate(dirty) if e is d), None) if dirty else None
            if k is None:
                k = len(dirty)
                dirty.append(d)
                in_graph = in_graph or d.requires_grad
            dirty_of[n] = k
        ins = prep.ins
        needed = [n for n in ins if tens[n].requires_grad] if grad else None
        if not grad or not (needed or in_graph):
            self._run_forward(launch, prep, rebind=False)  # no backward: the config that ran is not needed
            self._bump_written(tens, prep)
            return None
        self._check_for_autograd(tens, dirty, prep)
        loads = prep.loads(self._program or self.program)
        inout = [n for n in outputs if n in self.inputs or dirty[dirty_of[n]].requires_grad or n in loads]
        if inout:
            self._check_inout(tens, inout, dirty, dirty_of)
        b = None
        if launch.device == "cpu" or not self._autotuned:
            # compile now: an error is raised before anything launches, and so is a launch its
            # backward would refuse (its conditions) or one whose writes race
            b = prep.backward(self, launch, needed, inout, outputs)
            self._check_launch(launch, prep, b)
            self._check_races(launch, prep)
        # the backward recomputes the forward from the values before the launch
        old = {n: _copy_span(tens[n]) for n in inout if n in loads} if loads else {}
        others = prep.others
        r = Run(self, launch, ins, others, outputs, dirty, dirty_of, inout, old, prep)
        writes = prep.writes(self._program or self.program)
        self._written_names.update(writes)
        # (float tensors only: a trusted backward loads float values; an int buffer kad cannot rule out
        # as written, through a pointer of unknown provenance, is left alone)
        r.written = frozenset(i for i, n in enumerate(others) if n in writes and tens[n].is_floating_point())
        for i in r.written:  # written in place: an earlier launch's trusted backward must see it
            increment_version(tens[others[i]])
        if (pkey is not None and b is not None and not self._binder.wrappers
                and launch.runtime_names is self._binder.runtime_names):
            # every check above passed: the next launch of this key repeats only what depends on the tensors'
            # addresses (_Plan)
            if len(self._plans) >= 4096:
                self._plans.clear()
                self._hot = ()
            self._plans[pkey] = _Plan(self, launch, prep, args, kwargs, needed, inout, dirty, dirty_of, b,
                                      loads, r.written)
        _KadFunction.apply(r, *[tens[n] for n in ins], *[tens[n] for n in others], *dirty)
        # after apply (mark_dirty bumped the outputs): a later change bumps them again
        r.versions = tuple(t._version for t in r.kept())
        return None

    # ---------------------------------------------------------------- as custom operators (_ops.py)

    def _run_op(self, grid, args, kwargs, func=False):
        """The launch as kad::launch (traced by dynamo under torch.compile: plain Python on the call's
        arguments, no cache of this object read or written; kernel_key runs as a constant)."""
        names = self._binder.names
        if len(args) > len(names):
            raise TypeError(f"{self.__name__}() takes {len(names)} arguments, {len(args)} given")
        ins, others, outs, ints, floats, layout = _ops.split_args(list(zip(names, args)) + list(kwargs.items()),
                                                                  self.inputs, self.outputs)
        if not outs:
            raise no_output_error(self.outputs)  # before tracing goes further
        if others and torch.is_grad_enabled():
            named = {n: others[i] for n, k, i in layout if k == "t"}
            self._check_undeclared(named, list(named))
        for n, k, i in layout:
            if k == "o":
                self._check_op_output(n, outs[i])
        grids = self._op_grids(grid, args, kwargs) if callable(grid) else [grid]
        flat, dims = [], []
        for g in grids:
            g = tuple(g) if isinstance(g, (tuple, list)) else (g,)
            dims.append(len(g))
            flat.extend(g)
        key = _ops.kernel_key(self._op_id, tuple(layout), tuple(dims))
        if func:  # torch.func: through a Function with setup_context
            new = _ops.Function.apply(key, (len(ins), len(others), ints, floats, flat), *ins, *others, *outs)
        else:
            new = torch.ops.kad.launch(key, ins, others, outs, ints, floats, flat)
        for o, v in zip(outs, new):
            o.copy_(v)
        return None

    def _op_grids(self, grid, args, kwargs):
        """A callable grid evaluated on the call's meta-parameters as bind() would (defaults,
        triton.heuristics' values, the autotuner's config, launch options): one grid per autotuner
        config, since the config that runs on a GPU is known only then."""
        b = self._binder
        tuner = next((w for w in b.wrappers if wrapper_kind(w) == "Autotuner"), None)
        grids = []
        for cfg in (tuner.configs if tuner is not None else [None]):
            kw = {k: v for k, v in kwargs.items() if k in b.by_name}
            options = {k: v for k, v in kwargs.items() if k not in b.by_name}
            for w in b.wrappers:
                if wrapper_kind(w) == "Heuristics":
                    for v, heur in w.values.items():
                        kw[v] = heur({**dict(zip(getattr(w, "arg_names", []), args)), **kw})
                elif w is tuner:
                    kw.update(cfg.all_kwargs())
            meta = dict(b.defaults)
            meta.update(zip(b.names, args))
            meta.update(kw)
            meta.update(options)
            grids.append(grid(meta))
        return grids

    def _op_forward(self, grid, kw):
        """kad::launch's forward: the launch, with grad mode off; an undeclared tensor the kernel
        stores through is refused (the operator declares it read only)."""
        launch = self._binder.bind(grid, (), kw, False, _F64.get())
        launch.call = (grid, (), kw)
        prep = self._preps.get((launch.sig, launch.device)) or self._prep(launch)
        acc = self.program.access(launch.sig)
        written = [n for n in prep.others if acc.get(n, 0) & 2]
        if written:
            raise ValueError(f"{self.__name__} stores through {', '.join(repr(n) for n in written)}, which "
                             f"kad.differentiable does not declare: under torch.compile and torch.func a kad "
                             f"kernel may write only its declared outputs; add {written[0]!r} to outputs=[...]")
        loads = prep.loads(self.program)
        self._check_inout(launch.values, [n for n in prep.outputs if n in self.inputs or n in loads])
        before = launch.device == "cpu" or not self._autotuned
        if before:
            self._check_races(launch, prep)
        self._run_forward(launch, prep)
        if not before:  # the config that ran fixes the addresses: checked right after the forward
            self._check_races(launch, self._preps.get((launch.sig, launch.device)) or self._prep(launch))

    def _op_loads(self, kw):
        """The pointer parameters the kernel loads through, for a call given by name (any grid)."""
        launch = self._binder.bind((1,), (), kw, False, _F64.get())
        return self._prep(launch).loads(self.program)

    def _op_backward(self, grid, kw, need_in, need_out, grads):
        """kad::launch_bwd: name -> gradient of the inputs need_in and of the values before the launch
        of the outputs need_out, for the output gradients grads (name -> tensor); kw holds the values
        before the launch."""
        launch = self._binder.bind(grid, (), kw, False, _F64.get())
        if self._autotuned and launch.device != "cpu":
            launch = self._binder.bind(grid, (), kw, True, _F64.get())  # the config that ran
        if launch.device == "cpu":
            launch.mode = _cpu_mode()
        prep = self._prep(launch)
        loads = prep.loads(self.program)
        inout = [n for n in prep.outputs if n in self.inputs or n in need_out or n in loads]
        return self._run_backward(launch, need_in, inout, list(prep.outputs), grads, None)

    def _op_jvp(self, grid, kw, t_ins, t_outs):
        """Forward mode (_ops.jvp_launch): runs the kernel's jvp on the call kw (the outputs' tensors
        are written with the new values), writing the outputs' tangents into t_outs (name -> tensor
        laid out like the output, holding the tangent of its value before the launch) from the
        inputs' t_ins (name -> tensor laid out like the input)."""
        launch = self._binder.bind(grid, (), kw, False, _F64.get())
        if launch.device == "cpu":
            launch.mode = _cpu_mode()
        prep = self._prep(launch)
        tens = launch.values
        order = {n: i for i, (n, _) in enumerate(launch.runtime)}
        outs = sorted(prep.outputs, key=order.get)
        wrt = sorted((n for n in self.inputs if n in t_ins or n in t_outs), key=order.get)
        tangent = dict(t_ins)
        tangent.update(t_outs)  # an in-place name: one tangent, its old value's
        # kad_jvp's tangent parameters: the inputs' (in-place ones among them), then the outputs'
        tnames = wrt + [n for n in outs if n not in wrt]
        if launch.device == "cpu":
            k = self.program.jvp(launch.sig, wrt, outs)
            names = [n for n, _ in k.params]
            fwd_names = names[:len(names) - len(tnames)]
            values = [tens[n] for n in fwd_names] + [tangent[n] for n in tnames]
            written = [tens[n] for n in outs] + [tangent[n] for n in outs]
            run_cpu(k, launch.grid, values, launch.mode, written=written)
        else:
            mod = self.program.jvp_module(launch.sig, wrt, outs)
            fn = getattr(mod, f"launch_{launch.name}_jvp")
            runtime = [tens[n] for n in launch.runtime_names]
            opts = launch.options
            if opts:
                opts = {k: opts[k] for k in ("num_warps", "num_stages") if k in opts}
            fn(launch.grid, *runtime, *[tangent[n] for n in tnames], **opts)

    def _check_launch(self, launch, prep, b):
        """The conditions the backward b (_Prep.backward's tuple) needs of this launch (docs/AD.md:
        a stride that keeps a loop's stores apart, two store sites disjoint), decided before the
        forward runs: a KadError with the location and what the launch breaks.  On a GPU once per
        launch key (the grid, the scalar arguments): they depend on nothing else."""
        fn = b[3]
        if launch.device == "cpu":
            fn.check_launch(launch.grid, [launch.values.get(n) for n in b[4]])
            return
        chk = prep.launch_checks.get(fn)
        if chk is None:
            mod = sys.modules.get(getattr(fn, "__module__", ""))
            chk = prep.launch_checks[fn] = getattr(mod, f"check_{self.__name__}_launch", False)
        if not chk:
            return
        runtime = [launch.values[n] for n in launch.runtime_names]
        key = (fn, tuple(launch.grid), *(v for v in runtime if not isinstance(v, torch.Tensor)))
        if key in prep.launch_seen:
            return
        try:
            chk(launch.grid, *runtime)
        except ValueError as e:
            raise _capi.KadError(str(e)) from None
        if len(prep.launch_seen) < 4096:
            prep.launch_seen.add(key)

    def _check_races(self, launch, prep):
        """The one-writer check of the declared outputs before a forward that autograd will
        differentiate (docs/AD.md, "One writer per element"): two programs, or two lanes of one
        store, writing one element make every gradient wrong, so that launch is refused (a
        located error).  Free where kad proves it; else on the interpreter for every CPU launch,
        and on a GPU by the generated check kernel on the first launch of each launch key (the
        signature, the grid, the scalar arguments), or of every launch with
        check_races="always".  An autotuned kernel's GPU launch is checked right after its forward
        (the config that ran fixes the addresses), before anything differentiates it."""
        if not self.check_races:
            return
        if launch.device == "cpu":
            check_races_cpu(prep.forward(self.program), launch.grid, launch.values, _cpu_mode(), prep.outputs)
            return
        if prep.races is None:
            mod = self.program.race_module(launch.sig, prep.outputs)
            prep.races = getattr(mod, f"check_{self.__name__}_races") if mod is not None else False
        if prep.races is False:
            return
        runtime = [launch.values[n] for n in launch.runtime_names]
        key = (tuple(launch.grid), *(v for v in runtime if not isinstance(v, torch.Tensor)))
        if self.check_races == "always" or key not in prep.races_seen:
            try:
                prep.races(launch.grid, *runtime)
            except ValueError as e:
                raise _capi.KadError(str(e)) from None
            if len(prep.races_seen) < 4096:
                prep.races_seen.add(key)

    def _check_undeclared(self, tens, others):
        """Refuses a tensor that requires grad passed to a pointer parameter
        declared neither input nor output.  kad reads such a parameter as a
        constant, so its gradient would silently be missing -- or partial
        when the same storage is also passed as a declared input (only the
        declared uses would be differentiated).  Checked whenever grad mode
        is on, also when no declared input requires grad, since then the
        whole gradient would be lost.  tens: name -> value; others: the
        names of the undeclared parameters passed tensors."""
        for n in others:
            t = tens[n]
            if not t.requires_grad or t.dtype not in FLOAT_DTYPES:
                continue
            raise ValueError(
                f"argument '{n}' of {self.__name__} is a tensor that requires grad, but '{n}' is not in "
                f"kad.differentiable's inputs={self.inputs}: kad would treat it as a constant and its gradient "
                f"would be silently missing (or partial, if it shares memory with a declared input); add "
                f"'{n}' to inputs=[...], or pass its tensor as .detach() if no gradient should flow through it")

    def _check_for_autograd(self, tens, dirty, prep):
        nonfloat = prep.nonfloat  # a function of the signature: checked per launch only where it has some
        for n in prep.inputs:
            t = tens[n]
            if not t.requires_grad:
                continue
            if n in nonfloat:
                raise TypeError(f"input '{n}' is a {t.dtype} tensor that requires grad: only float32, float16, "
                                f"bfloat16 and float64 buffers are differentiated")
        if nonfloat:
            for n in prep.outputs:
                if n in nonfloat:
                    raise TypeError(f"output '{n}' is a {tens[n].dtype} tensor: only float outputs are "
                                    f"differentiated")
        for d in dirty:
            if d.is_leaf and d.requires_grad:
                n = next(n for n in prep.outputs if tens[n] is d or tens[n]._base is d)
                raise RuntimeError(f"output '{n}' is (a view of) a leaf tensor that requires grad: the kernel "
                                   f"writes it in place; pass a fresh tensor (e.g. torch.empty_like)")
        if prep.pairs:
            ext = {n: _extent(tens[n]) for n in prep.pair_names}  # each tensor's bytes, once
            for a, b in prep.pairs:
                ea, eb = ext[a], ext[b]
                if ea is not None and eb is not None and ea[0] < eb[1] and eb[0] < ea[1]:
                    raise ValueError(f"'{a}' and '{b}' share memory: kad differentiates kernels whose outputs "
                                     f"do not alias their inputs or each other")

    def _check_op_output(self, n, o):
        """Under torch.compile and torch.func (traced: sizes and strides only), refuses an output whose
        layout may overlap itself unless it is a view of a buffer that does not: the copy back into
        it (_run_op) then hands the backward each memory element's gradient gathered from the
        buffer's, which kad reads as it is.  Into a tensor of its own, the gradient would come per
        view element, and the copy's would be one alias's."""
        if not layout_may_overlap(o):
            return
        if o.requires_grad:  # its old value's gradient would be per memory element
            self._check_inout({n: o}, [n], test=layout_may_overlap)
        if o._base is None or layout_may_overlap(o._base):
            raise ValueError(f"output '{n}' of {self.__name__} may overlap itself (several of its elements share "
                             f"memory) and is not a view of a buffer without overlap: under torch.compile and "
                             f"torch.func pass a view of a plain buffer (e.g. torch.empty(n).as_strided(...)) or a "
                             f"tensor without overlap")

    def _check_inout(self, tens, inout, dirty=(), dirty_of=None, test=overlaps):
        """Refuses an in-place output (or its base) that overlaps itself (test): its old value's
        gradient would be per memory element where PyTorch wants one per view element, and the new
        value's gradient mixes both."""
        for n in inout:
            t = tens[n]
            d = dirty[dirty_of[n]] if dirty_of else t
            if test(t) or (d is not t and test(d)):
                raise ValueError(f"'{n}' is updated in place (declared as an input too, loaded by the kernel, or "
                                 f"already part of the graph) and is a view overlapping itself (several of its "
                                 f"elements share memory: unfold, as_strided, expand): kad cannot give its old "
                                 f"value a gradient per element; pass a tensor without overlap (e.g. "
                                 f"{n}.contiguous(), then copy back)")

    def _plan_key(self, grid, args, kwargs):
        """The launch key of a call (its _Plan's key), from cheap attributes of the arguments: per
        tensor its type, dtype, device, requires_grad, is_leaf, shape and strides, and its base's
        (a view's) requires_grad, is_leaf, dtype, shape and strides; per other argument its type and
        value (a float's hex, which tells -0.0 and nan apart); the keywords' names; the grid when
        it is a tuple (else only that it is callable); the f64_mode typing and the grad mode's
        checks of the Function (none).  Every check the first launch of a key makes is a function
        of these, except those on the tensors' addresses (overlaps), which a plan repeats.  None
        when an argument is of another kind (a tensor descriptor, a Triton dtype): bound as before."""
        Tensor = torch.Tensor
        key = [grid if type(grid) is tuple else callable(grid) or None, _F64.get()]
        add = key.append
        for v in (*args, *kwargs.values()) if kwargs else args:
            t = type(v)
            if t in _PLAIN_ARGS:
                add(t)
                add(v)
            elif t is float:
                add(v.hex())
            elif isinstance(v, Tensor):
                b = v._base
                add((t, v.dtype, v.device, v.requires_grad, v.is_leaf, v.shape, v.stride(), None if b is None else
                     (b.requires_grad, b.is_leaf, b.dtype, b.shape, b.stride())))
            else:
                return None
        if key[0] is None:
            return None
        if kwargs:
            add(tuple(kwargs))
        return tuple(key)

    def _bump_written(self, tens, prep):
        """A launch autograd does not record wrote its outputs and scratch tensors in place: their
        version counters say so (an earlier launch's trusted backward then recomputes, and a
        PyTorch op that saved one refuses to run on changed data), as an in-place PyTorch op's
        would."""
        writes = prep.writes(self._program or self.program)
        self._written_names.update(writes)
        for n in prep.tensors:
            if n in prep.outputs or (n in writes and tens[n].is_floating_point()):
                increment_version(tens[n])

    def _bump_direct(self, args, kwargs):
        """_bump_written for a direct Triton launch (unbound): the declared outputs and the tensors
        of the parameters a bound launch found written."""
        names = self._binder.names
        for i, v in enumerate(args):
            if i < len(names) and isinstance(v, torch.Tensor) and (
                    names[i] in self.outputs or (names[i] in self._written_names and v.is_floating_point())):
                increment_version(v)
        for n, v in kwargs.items():
            if isinstance(v, torch.Tensor) and (n in self.outputs or (n in self._written_names
                                                                      and v.is_floating_point())):
                increment_version(v)

    def _launch_direct(self, grid, args, kwargs, pkey):
        """A launch _direct allows: repeated launches of a key (pkey, or computed here when grad mode
        is off) go to the kernel Triton compiled for its first launch, from C++ (_Direct); the first
        one, and whatever the C++ launch declines, to Triton's JIT."""
        jit = self.jit
        if self.fn is not jit or jit.pre_run_hooks:
            self.fn[grid](*args, **kwargs)
            self._bump_direct(args, kwargs)
            return
        if pkey is None:
            pkey = self._plan_key(grid, args, kwargs)
        try:
            d = self._dplans.get(pkey) if pkey is not None else None
        except TypeError:  # a grid tuple holding something unhashable
            d = pkey = None
        if d is not None:
            h, x = _knobs.runtime.launch_enter_hook, _knobs.runtime.launch_exit_hook
            if d.nf is None:  # a launch the C++ forward does not take
                pass
            elif (d.nwritten == len(self._written_names) and not (getattr(h, "calls", h) or getattr(x, "calls", x))
                    and d.key == (_cuda_cur(), _knobs.runtime.debug, _knobs.compilation.instrumentation_mode)
                    and _globals_unchanged(jit) and d.nf.launch(args)):
                return
        c = jit.run(*args, grid=grid, warmup=False, **kwargs)
        self._bump_direct(args, kwargs)
        if pkey is not None and (d is None or d.nwritten != len(self._written_names)):
            if len(self._dplans) >= 4096:
                self._dplans.clear()
            d = _direct_native(self, grid, args, kwargs, c)
            if d is not None:
                self._dplans[pkey] = d
            elif _native.module() is not None or _native.why() is not None:  # not while the extension builds
                self._dplans[pkey] = _Direct(None, None, len(self._written_names))

    def _direct(self, args, kwargs, grad):
        """Whether a launch can go straight to Triton, unbound: every declared input and output is
        given a CUDA tensor, every tensor argument is a CUDA tensor, and autograd has nothing to do
        (grad mode off, or no tensor argument requires grad).  Binding would add nothing then: the
        launch is Triton's, and the checks that need the bound call are autograd's.  A call that
        leaves a declared parameter out, or gives it something else, is bound (and refused with
        kad's message)."""
        n = len(args)
        absent_ok = self._ins  # an absent input (None) is Triton's too; an output passed None is bound (its checks)
        for i in self._declared_pos:
            if i >= n:
                break
            v = args[i]
            if not isinstance(v, torch.Tensor) and (v is not None or self._binder.names[i] not in absent_ok):
                return False
        for name in self._declared_kw:
            if name in kwargs:
                v = kwargs[name]
                if not isinstance(v, torch.Tensor) and (v is not None or name not in absent_ok):
                    return False
            elif self._binder.position[name] >= n:
                return False  # missing (or filled by a default or a wrapper): bind() decides
        Tensor = torch.Tensor
        for v in args:
            if isinstance(v, Tensor) and (not v.is_cuda or (grad and v.requires_grad)):
                return False
        if kwargs:
            for v in kwargs.values():
                if isinstance(v, Tensor) and (not v.is_cuda or (grad and v.requires_grad)):
                    return False
        return True

    def _run_forward(self, launch, prep=None, rebind=True, save=False):
        """Runs the forward: kad's interpreter on CPU, Triton on GPU (rebind: an autotuned launch
        is bound again with the config that ran, which its backward needs).  save: run the saving
        forward where it applies (_run_saving); returns its buffer, else None."""
        if save and self.save:
            saved = self._run_saving(launch, prep or self._prep(launch))
            if saved is not None:
                return saved
        if launch.device == "cpu":
            launch.mode = _cpu_mode()  # the backward runs in the same mode
            prep = prep or self._prep(launch)
            k = prep.forward(self.program)
            tens = launch.values
            if launch.mode != "f64" and not prep.narrow_warned:
                prep.narrow_warned = True
                _warn_narrow(self.__name__, k, [n for n in prep.inputs if tens[n].dtype == torch.float64])
            run_cpu(k, launch.grid, [tens[n] for n in prep.fwd_names], launch.mode)
            return
        grid, args, kwargs = launch.call
        self.fn[grid](*args, **kwargs)
        if self._autotuned and rebind and not _same_config(getattr(self._autotuner, "best_config", None),
                                                           launch.config):
            # the backward must use the config that ran
            fresh = self.bind(grid, args, kwargs, after_launch=True)
            # (the grid too: a grid function of the meta-parameters, e.g. cdiv(M, meta["BLOCK_M"]),
            # gives another grid for the config that ran than for the first one bind() assumed)
            launch.values, launch.options, launch.sig, launch.config, launch.grid = (
                fresh.values, fresh.options, fresh.sig, fresh.config, fresh.grid)
        return None

    def _save_numel(self, launch, prep):
        """The elements of the buffer the saving forward of this launch fills (docs/AD.md, "Saved
        loop results"), or 0 where the launch runs as written: save=False, the kernel has nothing
        to save, the buffer would be larger than the launch's tensors together, launch options
        other than num_warps/num_stages (and num_ctas=1), an autotuned kernel whose config for this
        call the autotuner has not chosen yet (or one with a pre_hook), or kad could not generate
        it."""
        if not self.save:
            return 0
        slot = prep.save_slot(self)
        if not slot:
            return 0
        n = slot
        for x in launch.grid:
            n *= x
        tens = launch.values
        if 4 * n > sum(tens[t].nbytes for t in prep.tensors):
            return 0
        if launch.device != "cpu":
            opts = launch.options
            if opts and any(o not in ("num_warps", "num_stages") and not (o == "num_ctas" and v == 1)
                            for o, v in opts.items()):
                return 0
            if self._autotuned:
                cfg = _cached_config(self._autotuner, launch.call)
                if cfg is None or cfg.pre_hook is not None or not _same_config(cfg, launch.config):
                    return 0
        return n if prep.saving(self) is not None else 0

    def _run_saving(self, launch, prep):
        """Runs the saving forward of the launch: the kernel as kad emits it, storing the results
        of its loops over memory for the backward, which then loads them instead of running those
        loops again.  Returns the buffer (_save_numel's elements), or None (nothing run) where it
        does not apply (the launch then runs as written)."""
        n = self._save_numel(launch, prep)
        if not n:
            return None
        tens = launch.values
        if launch.device == "cpu":
            launch.mode = _cpu_mode()  # the backward runs in the same mode
            prep.forward(self.program)  # fwd_names
            saved = torch.empty(n, dtype=torch.float64 if launch.mode == "f64" else torch.float32)
            run_cpu(prep.saving(self), launch.grid, [tens[t] for t in prep.fwd_names] + [saved], launch.mode)
            return saved
        opts = {o: v for o, v in launch.options.items() if o != "num_ctas"} if launch.options else {}
        saved = torch.empty(n, dtype=torch.float32, device=tens[prep.tensors[0]].device)
        prep.saving(self)(launch.grid, *[tens[t] for t in launch.runtime_names], saved, **opts)
        return saved

    def _run_backward(self, launch, wrt, inout, out, out_grads, override, b=None, saved=None):
        """Gradients (name -> tensor) of the inputs wrt and of the values
        before the launch of the in-place outputs inout (their views' parts),
        for the output gradients out_grads (name -> tensor or None) of the
        outputs out (an output overlapping itself: its gradient per memory
        element, laid out like it: Run.output_grad, memory_grad).  b: what
        _Prep.backward returns for them, when the caller has it (for saved
        when given).  saved: the saving forward's buffer, or None.  The
        gradient of an input overlapping itself is returned per view element
        (view_grad)."""
        tens = launch.values
        if override:
            tens = dict(tens)
            tens.update(override)
        wrt, out, ins, fn, fwd_names, uses, _ = b or self._prep(launch).backward(self, launch, wrt, inout, out,
                                                                                 saved is not None)
        if not uses:
            saved = None
        elif launch.device == "cpu":
            tens = dict(tens)
            tens[_capi.SAVE_PARAM] = saved
        d_outs = {}
        for n in out:
            y, g = tens[n], out_grads[n]
            if (g is None or n in inout or g.dtype is not y.dtype or g.get_device() != y.get_device()
                    or not (g.is_contiguous() and y.is_contiguous()) and g.stride() != y.stride()):
                # a fresh buffer: the backward overwrites an in-place output's
                d = torch.empty_strided(y.size(), y.stride(), dtype=y.dtype, device=y.device)
                if g is None:
                    d.zero_()
                else:
                    d.copy_(g)
                g = d
            d_outs[n] = g
        d_ins = {}
        for n in ins:
            x = tens[n]
            # the interpreter adds into zero-filled buffers; the generated launcher needs no
            # initialization (it zero-fills what it cannot prove the launch writes entirely)
            # (empty_like keeps the strides of a contiguous tensor: it is non-overlapping and dense)
            d_ins[n] = (torch.empty_like(x) if x.is_contiguous() else
                        torch.empty_strided(x.size(), x.stride(), dtype=x.dtype, device=x.device))
            if launch.device == "cpu":
                d_ins[n].zero_()
        grads = [d_outs[n] for n in out] + [d_ins[n] for n in ins]
        if launch.device == "cpu":
            # the forward's parameters by name (the specialized ones are not parameters), then the gradients
            values = [tens[n] for n in fwd_names] + grads
            written = list(d_ins.values()) + [d_outs[n] for n in inout]
            run_cpu(fn, launch.grid, values, getattr(launch, "mode", "as_written"), written=written)
        else:
            runtime = [tens[n] for n in launch.runtime_names]
            if saved is not None:
                runtime.append(saved)
            opts = launch.options if fwd_names else None
            opts = {k: opts[k] for k in ("num_warps", "num_stages") if k in opts} if opts else {}
            if self._autotuned:  # the backward's num_warps/num_stages timed too (docs/GRAD.md, "Tuning")
                opts["kad_tune"] = True
            fn(launch.grid, *runtime, *grads, **opts)
        for n in ins:  # a view overlapping itself: its gradient per view element, not per memory element
            x = tens[n]
            if not x.is_contiguous() and overlaps(x):
                d_ins[n] = view_grad(x, d_ins[n])
        d_ins.update((n, d_outs[n]) for n in inout)
        return d_ins


class _Prep:
    """What the launches of one (signature, device) of a decorated kernel
    need, made once: the hot path's cache.  Which runtime parameters are
    passed tensors is a function of the signature (a pointer type), so the
    name lists are too; the compiled forward (CPU) and its parameter names,
    the kernel's access bits, and per (wrt, inout, out) the backward's
    ordered name lists with the compiled backward (CPU) or the generated
    module's launch_<kernel>_bwd (GPU).  Filled lazily under the GIL; a race
    computes an entry twice, from caches that are themselves locked."""

    def __init__(self, dk, launch):
        self.sig, self.device = launch.sig, launch.device
        declared = set(dk.inputs) | set(dk.outputs)
        self.tensors = [n for n, v in launch.runtime if isinstance(v, torch.Tensor)]
        self.others = [n for n in self.tensors if n not in declared]  # undeclared tensor arguments
        # the declared inputs and outputs present: one passed None is absent (the signature's name=None, a
        # constant of the kernel and of its backward, as Triton specializes it): no gradient, no check
        values = launch.values
        self.inputs = [n for n in dk.inputs if values[n] is not None]
        self.ins = [n for n in dk._ins if values[n] is not None]  # those not updated in place
        self.outputs = [n for n in dk.outputs if values[n] is not None]  # (Binder: at least one)
        self.pairs = [(a, b) for a, b in dk._pairs if values[a] is not None and values[b] is not None]
        self.pair_names = list(dict.fromkeys(n for p in self.pairs for n in p))
        # the tensor parameters of a dtype kad does not differentiate (the signature types them)
        self.nonfloat = frozenset(n for n in self.tensors if launch.values[n].dtype not in FLOAT_DTYPES)
        self.fwd = self.fwd_names = self._loads = self._writes = None
        self.slot = None  # save_slot's answer
        self._saving = None  # the saving forward: its kad Kernel (CPU) or launcher (GPU)
        self.bwd = {}
        self.plans = {}  # (needs_input_grad, which gradients are None, inout) -> plan()
        self.races = None  # the GPU's one-writer check: check_<kernel>_races, False (none needed), None (not asked)
        self.races_seen = set()  # the launch keys it passed
        self.launch_checks = {}  # a GPU backward's launcher -> its module's check_<kernel>_launch (False: none)
        self.launch_seen = set()  # (launcher, launch key) whose conditions held
        self.narrow_warned = False  # _warn_narrow asked (a CPU launch outside f64_mode)

    def forward(self, program):
        """The compiled forward (CPU) and, in self.fwd_names, its parameters' names."""
        if self.fwd is None:
            k = program.forward(self.sig)
            self.fwd_names = [n for n, _ in k.params]
            self.fwd = k
        return self.fwd

    def plan(self, run, needs, none, trusted=False):
        """(wrt, need_old, out, b) of a backward call: the inputs that need a
        gradient, the dirty tensors whose old value needs one, the outputs
        passed to the backward (those with a gradient and the in-place ones)
        and _Prep.backward's tuple for them (None when there is nothing to
        compute).  needs: ctx.needs_input_grad; none: per dirty tensor, whether
        its gradient is None.  Cached by (needs, none, in-place outputs)."""
        key = (needs, none, tuple(run.inout), run.saved is not None, trusted)
        p = self.plans.get(key)
        if p is None:
            ni, no = len(run.inputs), len(run.others)
            needs = needs[1:]
            wrt = [n for n, need in zip(run.inputs, needs[:ni]) if need]
            need_old = [i for i in range(len(run.dirty)) if needs[ni + no + i]]
            has = [n for n in run.outputs if not none[run.dirty_of[n]]]  # outputs with a gradient
            b = out = None
            if (wrt or need_old) and has:
                out = [n for n in run.outputs if n in has or n in run.inout]
                b = self.backward(run.dk, run.launch, wrt, run.inout, out, run.saved is not None, trusted)
            p = self.plans[key] = (wrt, need_old, out, b)
        return p

    def writes(self, program):
        """The pointer parameters the kernel may store through."""
        if self._writes is None:
            self._writes = frozenset(n for n, bits in program.access(self.sig).items() if bits & 2)
        return self._writes

    def loads(self, program):
        """The pointer parameters the kernel may load through."""
        if self._loads is None:
            self._loads = frozenset(n for n, bits in program.access(self.sig).items() if bits & 1)
        return self._loads

    def backward(self, dk, launch, wrt, inout, out, saved=False, trusted=False):
        """(wrt, out, ins, fn, fwd_names, saved) of the backward for these
        gradient lists: wrt and out ordered as kad_grad wants them, ins the
        inputs among wrt that are not in place, fn the compiled backward
        (CPU) or the launcher (GPU), fwd_names the forward's parameters fn
        takes before the gradients (CPU), or on a GPU whether the launcher
        takes the forward's launch options (the module's
        _kad_forward_options); saved: whether fn is the backward of the
        saving forward, which takes its buffer after the runtime arguments
        (asked with saved=True; False where kad could not make it: the
        backward then recomputes everything); trusted: the backward that
        loads the outputs and statistics the forward stored (docs/AD.md,
        "Trusted saved outputs"), for buffers known to be unchanged.  The
        tuple's seventh entry says whether fn is that backward (False where
        kad loads nothing stored: the two are the same kernel)."""
        key = (tuple(wrt), tuple(inout), tuple(out), saved, trusted)
        b = self.bwd.get(key)
        if b is None:
            wrt_s, out_s = _grad_names(launch, wrt, inout, out)
            ins = [n for n in wrt_s if n not in inout]
            try:
                b = self._backward(dk, launch, wrt_s, out_s, ins, saved, trusted)
            except _capi.KadError:
                if not (saved or trusted):
                    raise
                # generation failed: recompute
                b = self.backward(dk, launch, wrt, inout, out, saved and not trusted, False)
            self.bwd[key] = b
        return b

    def _backward(self, dk, launch, wrt_s, out_s, ins, saved, trusted=False):
        if self.device == "cpu":
            k = dk.program.backward(self.sig, wrt_s, out_s, dk.deterministic, saved, trusted)
            names = [n for n, _ in k.params]
            return (wrt_s, out_s, ins, k, names[:len(names) - len(out_s) - len(ins)], saved,
                    trusted and bool(k.trusted))
        mod = dk.program.module(self.sig, wrt_s, out_s, dk.deterministic, saved, trusted)
        # the module says whether its launcher takes the forward's num_warps/num_stages (only
        # with a tl.dot: docs/GRAD.md, "Launch parameters")
        fn = getattr(mod, f"launch_{launch.name}_bwd")
        uses = bool(getattr(mod, "_kad_trusted", ()))
        if uses:  # a trusted module's launcher wants the promise spelled out
            fn = _trusting(fn)
        return (wrt_s, out_s, ins, fn, getattr(mod, "_kad_forward_options", True), saved, uses)

    def save_slot(self, dk):
        """fp32 elements per program the saving forward stores; 0 when the kernel has none (or kad
        cannot make its saving forward)."""
        if self.slot is None:
            self.slot = dk.program.save_slot(self.sig)
        return self.slot

    def saving(self, dk):
        """The saving forward: its kad Kernel (CPU) or launch_<kernel>_fwd (GPU); None (and save_slot
        0 from then on) where kad could not make it."""
        if self._saving is None and self.slot:
            try:
                if self.device == "cpu":
                    self._saving = dk.program.save_forward(self.sig)
                else:
                    mod = dk.program.save_module(self.sig)
                    self._saving = getattr(mod, f"launch_{dk.jit.fn.__name__}_fwd")
            except _capi.KadError:
                self.slot = 0
        return self._saving


_PLAIN_ARGS = frozenset({int, bool, str, type(None)})
try:  # what Triton's JIT reads on each launch: its hooks and knobs, the current CUDA device and stream
    from triton import knobs as _knobs
    _cuda_cur, _cuda_stream = torch._C._cuda_getDevice, torch._C._cuda_getCurrentRawStream
except (ImportError, AttributeError):
    _knobs = _cuda_cur = _cuda_stream = None


class _Plan:
    """A repeat launch of one launch key (DifferentiableKernel._plan_key: the arguments' types,
    dtypes, devices, shapes, strides, requires_grad, the scalar values, the keywords): everything
    the first launch of the key decided, kept, so that the next one does only what depends on the
    tensors themselves (docs/PYTHON.md, "Caches").

    Made by the first launch of the key (the bound path), after every check passed: the binding
    (names, defaults, launch options), the signature's _Prep, the inputs that need a gradient, the
    in-place outputs, the backward for them, the one-writer and launch checks (per grid: a grid
    function may give another one), the saving forward's size, the aliases the Run keeps, the
    pairs of tensors whose storage must not overlap with their spans' lengths.  A repeat launch
    binds the values (a dict of the arguments), evaluates a callable grid, finds its view bases
    (a launch whose outputs share bases differently from the first is bound again), compares the
    pairs' addresses, copies what the backward reads of the in-place outputs' old values, and
    applies _KadFunction, whose forward launches the kernel: on a GPU, where the kernel is a
    plain JITFunction and no hook is set, directly by the kernel Triton compiled for the key's
    first launch (CompiledKernel.run, as Triton's JIT does after its cache lookup; the key fixes
    every scalar argument and thereby Triton's specialization of it, the tensors' alignment, the
    current device and Triton's debug knobs are looked up per launch).  On the CPU the launch and
    one-writer checks run per launch, as before (the interpreter's)."""

    __slots__ = ("prep", "sig", "device", "names", "kw", "defaults", "options", "params", "runtime_names", "name",
                 "ins", "others", "outputs", "dirty_of", "single", "inout", "b", "old", "pairs", "grids", "alias",
                 "detach", "needed", "ck", "direct", "per_call", "written", "fast", "nat", "native_tries",
                 "native_needs", "native_why", "nfwd", "nfwd_tried", "nfwd_key")

    def __init__(self, dk, launch, prep, args, kwargs, needed, inout, dirty, dirty_of, b, loads, written):
        binder = dk._binder
        values = launch.values
        self.prep, self.sig, self.device = prep, launch.sig, launch.device
        self.names = binder.names[:len(args)]
        self.kw = [k for k in kwargs if k in binder.by_name]
        given = set(self.names) | set(self.kw)
        self.defaults = [(n, d) for n, d in binder.defaults if n not in given]
        self.options = dict(launch.options)
        self.params, self.runtime_names, self.name = launch.params, launch.runtime_names, launch.name
        self.ins, self.others, self.outputs = prep.ins, prep.others, prep.outputs
        self.dirty_of = dict(dirty_of)
        self.single = len(self.outputs) == 1
        self.needed, self.inout, self.b = needed, inout, b
        self.old = [n for n in inout if n in loads] if loads else []
        # the storage that must not overlap: (a, b) with their spans' byte lengths (a function of
        # the shapes, strides and dtypes, which the key fixes), compared by address per launch
        self.pairs = [(a, bn, _span_len(values[a]), _span_len(values[bn])) for a, bn in prep.pairs]
        self.grids = {}  # grid -> the saving forward's elements for it (0: none), once its checks passed
        # Run.forward's aliases: outputs that are their dirty tensors, other tensors that are views
        self.alias = [(n, dirty_of[n]) for n in self.outputs if values[n] is dirty[dirty_of[n]]]
        alias = {n for n, _ in self.alias}
        self.detach = [n for n in prep.tensors if n not in alias and (n in self.outputs or values[n]._base is not None)]
        self.ck = {}  # (device, debug knobs) -> the CompiledKernel of the forward (direct launches)
        self.direct = (launch.device == "cuda" and dk.fn is dk.jit and _cuda_stream is not None
                       and hasattr(dk.jit, "run") and hasattr(dk.jit, "pre_run_hooks"))
        self.per_call = launch.device == "cpu" or dk.check_races == "always"
        # the float scratch tensors the kernel writes (indices into others: a function of the signature and
        # the dtypes, which the key fixes), as Run.written
        self.written = written
        self.fast = {}  # id of a _Prep.backward tuple -> _fast_backward's plan of its calls (False: none)
        # the native backward node (_native.py): its Holder of recipes, the recording attempts left
        # (on a GPU, for plain outputs that need no gradient of their old values), the node's needs
        self.nat = None
        self.native_tries = 3 if (self.direct and not inout and not self.old and _native_wanted()
                                  and not any(values[n].requires_grad for n in self.outputs)) else 0
        self.native_needs = None
        self.native_why = None if self.native_tries else "not a direct GPU launch with fresh outputs, or KAD_NATIVE=0"
        self.nfwd = None  # the C++ forward (_native_forward), once the node has a recipe
        self.nfwd_tried = False
        self.nfwd_key = None  # the compiled forward's key in ck it launches

    def launch(self, dk, grid, args, kwargs):
        """Launches the call through this plan; False (nothing done) when it must be bound."""
        values = dict(zip(self.names, args))
        for k in self.kw:
            values[k] = kwargs[k]
        for n, d in self.defaults:
            values[n] = d
        if type(grid) is tuple:
            g = eval_grid(grid, None)
        else:
            meta = dict(values)
            meta.update(self.options)
            g = eval_grid(grid, meta)
        launch = Launch(self.name, self.params, values, self.options, g, self.sig, self.device, None,
                        self.runtime_names)
        launch.call = (grid, args, kwargs)
        prep = self.prep
        if self.single:
            t = values[self.outputs[0]]
            d = t._base
            dirty = [t if d is None else d]
            dirty_of = self.dirty_of
        else:
            dirty, dirty_of = [], {}
            for n in self.outputs:
                t = values[n]
                d = t._base
                if d is None:
                    d = t
                k = next((i for i, e in enumerate(dirty) if e is d), None)
                if k is None:
                    k = len(dirty)
                    dirty.append(d)
                dirty_of[n] = k
            if dirty_of != self.dirty_of:
                return False
        for a, b, la, lb in self.pairs:
            x, y = values[a], values[b]
            if la and lb:
                pa, pb = x.data_ptr(), y.data_ptr()
                if pa < pb + lb and pb < pa + la:
                    raise ValueError(f"'{a}' and '{b}' share memory: kad differentiates kernels whose outputs "
                                     f"do not alias their inputs or each other")
        n = self.grids.get(g)
        if n is None or self.per_call:  # the checks of a new grid; on the CPU, of every launch
            dk._check_launch(launch, prep, self.b)
            dk._check_races(launch, prep)
            if n is None:
                if len(self.grids) >= 64:
                    self.grids.clear()
                n = self.grids[g] = dk._save_numel(launch, prep)
        old = {m: _copy_span(values[m]) for m in self.old} if self.old else {}
        r = Run(dk, launch, self.ins, self.others, self.outputs, dirty, dirty_of, self.inout, old, prep)
        r.plan = self
        r.written = self.written
        for i in r.written:  # written in place: an earlier launch's trusted backward must see it
            increment_version(values[self.others[i]])
        nat = self.nat
        if nat is not None and not any(t.requires_grad for t in dirty):
            # the native backward node (_native.py): the kernel runs, then the node is attached
            ins = [values[m] for m in self.ins]
            others = [values[m] for m in self.others]
            r.forward()
            w = r.written
            r.scratch = {i: others[i].detach() for i in w}
            _native.module().attach(nat, r, ins, others, [i not in w for i in range(len(others))], dirty, r.saved,
                                    sorted(w), bool(dk.trust))
            if not self.nfwd_tried:
                _native_forward(self, dk, grid, g, args, kwargs, values)
        else:
            _KadFunction.apply(r, *[values[m] for m in self.ins], *[values[m] for m in self.others], *dirty)
        # after apply (mark_dirty bumped the outputs): a later change bumps them again
        r.versions = tuple(t._version for t in r.kept())
        return True

    def native_ok(self, dk):
        """Whether the C++ forward (_native_forward) may launch now: what a direct launch checks per
        call on the Python side (no pre-run or launch hook, the globals the compilation read
        unchanged, the same current device and Triton knobs as the kernel it holds)."""
        jit = dk.jit
        h, x = _knobs.runtime.launch_enter_hook, _knobs.runtime.launch_exit_hook
        return (not jit.pre_run_hooks and not (getattr(h, "calls", h) or getattr(x, "calls", x))
                and self.nfwd_key == (_cuda_cur(), _knobs.runtime.debug, _knobs.compilation.instrumentation_mode)
                and _globals_unchanged(jit))

    def forward(self, dk, launch):
        """Runs the launch's forward (Run.forward): its saving forward where the plan has one for
        this grid, else the kernel (on a GPU directly where it can); returns the saved buffer or None."""
        if self.grids.get(launch.grid):
            return dk._run_saving(launch, self.prep)
        if self.device == "cpu":
            return dk._run_forward(launch, self.prep, rebind=False)
        grid, args, kwargs = launch.call
        if not self.direct:
            dk.fn[grid](*args, **kwargs)
            return None
        jit = dk.jit
        ck = None
        if not jit.pre_run_hooks and _globals_unchanged(jit):
            h, x = _knobs.runtime.launch_enter_hook, _knobs.runtime.launch_exit_hook
            if not (getattr(h, "calls", h) or getattr(x, "calls", x)):
                values = launch.values
                aligned = 0
                for n in self.prep.tensors:
                    aligned |= values[n].data_ptr()
                if not aligned & 15:
                    dev = _cuda_cur()
                    ck = (dev, _knobs.runtime.debug, _knobs.compilation.instrumentation_mode)
                    c = self.ck.get(ck)
                    if c is not None:
                        g = launch.grid
                        c.run(g[0], g[1] if len(g) > 1 else 1, g[2] if len(g) > 2 else 1, _cuda_stream(dev),
                              c.function, c.packed_metadata, None, None, None, *[values[n] for n in dk._binder.names])
                        return None
        c = jit.run(*args, grid=grid, warmup=False, **kwargs)
        if ck is not None and getattr(c, "function", None) is not None and len(self.ck) < 16:
            self.ck[ck] = c
        return None


def _globals_unchanged(jit):
    """Whether the globals Triton's compilation of jit read still hold their values (its JIT checks
    this on every launch and raises when one changed: the plan's direct launch then leaves the
    launch to it)."""
    for (name, _), (val, globals_dict) in jit.used_global_vals.items():
        if globals_dict.get(name, _globals_unchanged) != val:
            return False
    return True


def _span_len(t):
    """The byte length of a tensor's span (0 when it is empty): _extent's without the address."""
    n = t.nbytes
    if n == 0:
        return 0
    return n if t.is_contiguous() else span_bytes(t)


def _trusting(launcher):
    """A trusted backward module's launcher with outputs_unmodified=True: the package checked the
    outputs' version counters (Run.trusted)."""
    def launch(*args, **kwargs):
        return launcher(*args, outputs_unmodified=True, **kwargs)
    launch.__module__ = launcher.__module__
    launch.__name__ = launcher.__name__
    launch.__wrapped__ = launcher
    return launch


def _cached_config(tuner, call):
    """The config Triton's autotuner runs for this call (grid, args, kwargs) without timing any: its
    cache's entry for the call's key (Triton 3.6's key: the values of the key arguments, then the
    dtypes of the tensor arguments), or None (not chosen yet, or another key than kad computes:
    the launch then goes through the autotuner)."""
    if len(tuner.configs) <= 1:
        return tuner.configs[0]
    _, args, kwargs = call
    names = tuner.arg_names
    given = dict(zip(names, args))
    given.update((k, v) for k, v in kwargs.items() if k in names)
    key = [given[k] for k in tuner.keys if k in given]
    for v in given.values():
        if hasattr(v, "dtype"):
            key.append(str(v.dtype))
    try:
        return tuner.cache.get(tuple(key))
    except TypeError:  # an unhashable argument
        return None


def _same_config(ran, bound):
    """Whether the autotuner's config that ran is the one a launch was bound with (the same object,
    or the same values: kwargs and launch options)."""
    return ran is bound or (ran is not None and bound is not None and ran.all_kwargs() == bound.all_kwargs())


def _grad_names(launch, wrt, inout, out):
    """The backward's wrt (inputs, then in-place outputs) and out lists, in
    parameter order: kad_grad orders the gradient parameters so (outputs,
    in-place ones among them, then inputs)."""
    order = {n: i for i, (n, _) in enumerate(launch.runtime)}
    out = sorted(set(out) | set(inout), key=order.get)
    wrt = sorted(set(wrt) | set(inout), key=order.get)
    return wrt, out


def _extent(t):
    """(first byte address, end address) of a tensor's span, None when it is empty.  The tensors of
    one launch are on one device type (Binder._signature), and CUDA's unified addressing gives the
    memory of different GPUs different addresses: comparing addresses is enough."""
    n = t.nbytes
    if n == 0:
        return None
    p = t.data_ptr()
    return p, p + (n if t.is_contiguous() else span_bytes(t))


from torch.autograd.graph import increment_version  # noqa: E402
from . import _native  # noqa: E402


def _native_wanted():
    """Whether planned GPU launches may get a native backward node (KAD_NATIVE, default on); the
    extension's build starts here, in the background."""
    if os.environ.get("KAD_NATIVE", "1") == "0":
        return False
    _native.module()
    return _native.why() is None
from . import _ops  # noqa: E402  (the custom operators call back into this module)


def differentiable(inputs: Sequence[str], outputs: Sequence[str],
                   deterministic: bool = True, tape_budget: int | None = None,
                   while_cap: int | None = None, save: bool = True,
                   check_races: str | bool = "first",
                   trust_outputs: bool = True) -> Callable[[Any], "DifferentiableKernel"]:
    """Decorator: makes a @triton.jit kernel (also wrapped in triton.autotune
    or triton.heuristics) differentiable by PyTorch.

    inputs: the pointer parameters to differentiate (their tensors get .grad);
    outputs: the pointer parameters the kernel writes and the loss depends
    on.  Other parameters (scratch buffers, labels, sizes) are passed through.
    deterministic: True (the default) makes input gradients bitwise
    reproducible where kad's access analysis allows it (plain stores, or
    per-program partials summed in a fixed order); False accumulates every
    input gradient with tl.atomic_add.  The generated module's header says
    which each input got.  tape_budget: bytes of tape scratch per launch
    above which kad checkpoints loops it reverses with a tape (docs/AD.md,
    "Tapes"); while_cap: the tape capacity (iterations) of a `while` loop
    whose condition gives kad no bound (default 1024; past it the backward
    raises).  save: True (the default) runs, where the kernel has loops over
    memory at its top level, kad's saving forward instead of the kernel as
    written: the same kernel plus a store of those loops' results, which the
    backward loads instead of running the loops again (docs/AD.md, "Saved
    loop results"; memory: at most the launch's tensors' size, held until
    the backward); False: the kernel runs as written and the backward
    recomputes everything.  check_races: before a forward that autograd will
    differentiate, kad refuses a launch in which two programs (or two lanes of
    one store) write one element of an output, since then no gradient is
    right (docs/AD.md, "One writer per element"); what its access analysis
    cannot prove (an index loaded from memory) it checks by running a
    generated check kernel on the launch's data: "first" (the default) on a
    GPU's first launch of each launch key and on every CPU launch, "always"
    on every launch, False never.  trust_outputs: True (the default) lets the
    backward load what the forward stored in the outputs and scratch buffers
    (a softmax's output, a norm's rstd) instead of recomputing it, when the
    outputs' version counters show them unchanged since the forward; a
    changed output makes that backward recompute (docs/AD.md, "Trusted saved
    outputs").  False: always recompute.  Must be the outermost decorator."""
    def wrap(fn: Any) -> DifferentiableKernel:
        return DifferentiableKernel(fn, inputs, outputs, deterministic, tape_budget, while_cap, save, check_races,
                                    trust_outputs)
    return wrap
