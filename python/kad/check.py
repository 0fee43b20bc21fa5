"""Tools for kernel authors: the generated backward's source, and a checker
for a hand-written backward.

backward_source(kernel, grid, *args, **kwargs)
    The Triton module kad generates for that call (docs/GRAD.md), w.r.t.
    the declared inputs whose tensors require grad (all float inputs when
    none does), for every declared output.

check_backward(kernel, grid, args, my_backward, kwargs=None, seed=0)
    Runs the forward, draws random output gradients (seeded, normal), and
    compares the user's backward with (1) kad's gradient computed the way
    the launch would compute it (same device, same dtypes) and (2) a float64
    reference: kad's backward run on the CPU interpreter with every float
    held in float64.  my_backward is called as

        my_backward(*args, *d_outs, **kwargs)

    (the forward's arguments, then one gradient per declared output, in
    order; the forward's keywords) and returns the input gradients: one
    tensor, a tuple in the order of `inputs`, or a dict by name (None or a
    missing name: not checked).

backward(kernel, grid, *args, grads, wrt=None, **kwargs)
    Runs kad's generated backward of kernel[grid](*args, **kwargs) directly
    (for a custom_op or autograd.Function of one's own): the arguments as
    they were at the forward's launch, grads the outputs' gradients by name
    (a missing one or None: zeros); returns the input gradients by name.
    kernel: a kad.differentiable kernel; wrt: the inputs wanted (default:
    its float inputs).  CPU tensors run on the interpreter, CUDA ones with
    the generated Triton module's launch_<kernel>_bwd.

audit(kernel, grid, *args, **kwargs)
    kad's determinism audit of the kernel specialized as that launch would
    specialize it (docs/AD.md, "Determinism audit"): an AuditReport whose
    str() is the report text and whose .findings lists the float atomics
    and accumulation loops that make the kernel nondeterministic or
    batch-variant.  kernel: a @triton.jit function (autotune/heuristics
    wrappers included) or a kad.differentiable kernel.  Nothing is launched.

Errors are relative to the reference's magnitude: max|u - r| / max|r|, so
elements near zero do not dominate; `worst` is the index of the largest
|u - r|.  An input passes when its error against the float64 reference is
within max(dtype floor, 4 x kad's own error against it): the floor is 1e-9
for float64, 1e-4 for float32, 1e-2 for float16, 6e-2 for bfloat16
(a few units in the last place of sums of ~1e3 terms).
"""
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from ._capi import Pointer
from ._launch import FLOAT_DTYPES, FP8_DTYPES
from ._launch import bind
from ._sources import unwrap
from .autograd import DifferentiableKernel, Program, storage_span

__all__ = ["backward_source", "backward", "check_backward", "BackwardReport", "InputReport", "audit", "AuditReport",
           "AuditFinding"]

_FLOOR = {torch.float64: 1e-9, torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 6e-2}


def _dk(kernel):
    if not isinstance(kernel, DifferentiableKernel):
        raise TypeError("expected a kernel decorated with @kad.differentiable(inputs=..., outputs=...)")
    return kernel


def backward_source(kernel: DifferentiableKernel, grid: Any, *args: Any, kernels_only: bool = False,
                    **kwargs: Any) -> str:
    """The generated backward module for kernel[grid](*args, **kwargs): its
    kernels, then (after a `# ---- the launcher` comment) the host code that
    launches them.  kernels_only=True: the kernels alone, the math without the
    launcher (the module's text is not cached then)."""
    dk = _dk(kernel)
    launch = dk.bind(grid, args, kwargs, after_launch=True)
    tens = dict(launch.tensors())
    wrt = [n for n in dk.inputs if n in tens and tens[n].requires_grad]  # (an input passed None is absent)
    if not wrt:
        wrt = [n for n in dk.inputs if n in tens and tens[n].dtype in FLOAT_DTYPES]
    out = [n for n in dk.outputs if n in tens]
    if kernels_only:
        return dk.program.kernels_text(launch.sig, wrt, out, dk.deterministic)
    return dk.program.module_text(launch.sig, wrt, out, dk.deterministic)


def backward(kernel: DifferentiableKernel, grid: Any, *args: Any, grads: Mapping[str, Any],
             wrt: Sequence[str] | None = None, **kwargs: Any) -> dict:
    """kad's backward of kernel[grid](*args, **kwargs), launched directly:
    {input name: gradient} for the inputs wrt (default: the declared float
    inputs), given grads {output name: gradient} (missing or None: zero).
    The arguments must hold what they held at the forward's launch (the
    backward recomputes the forward in registers).  No autograd graph is
    recorded; in-place buffers (a name among both inputs and outputs) are
    not supported here: launch the decorated kernel instead."""
    dk = _dk(kernel)
    inplace = [n for n in dk.inputs if n in dk.outputs]
    if inplace:
        raise ValueError(f"kad.backward: {', '.join(inplace)} is updated in place by {dk.__name__}; "
                         f"kad.backward takes kernels without in-place buffers (launch the decorated kernel)")
    for n in grads:
        if n not in dk.outputs:
            raise ValueError(f"kad.backward: grads names '{n}', which is not an output of {dk.__name__} "
                             f"(its outputs: {', '.join(dk.outputs)})")
    launch = dk.bind(grid, tuple(args), dict(kwargs), after_launch=True)
    launch.call = (grid, tuple(args), dict(kwargs))
    tens = dict(launch.tensors())
    if wrt is None:
        wrt = [n for n in dk.inputs if n in tens and tens[n].dtype in FLOAT_DTYPES]
    else:
        if isinstance(wrt, str):
            raise TypeError("kad.backward: wrt must be a list of input names, not a string")
        for n in wrt:
            if n not in dk.inputs:
                raise ValueError(f"kad.backward: wrt names '{n}', which is not an input of {dk.__name__} "
                                 f"(its inputs: {', '.join(dk.inputs)})")
            if n not in tens:
                raise ValueError(f"kad.backward: wrt names '{n}', which is passed None (an absent input has no "
                                 f"gradient)")
        wrt = [n for n in dk.inputs if n in wrt]
    if not wrt:
        return {}
    if launch.device == "cpu":
        from .autograd import _cpu_mode
        launch.mode = _cpu_mode()
    out = [n for n in dk.outputs if n in tens]  # (an output passed None is absent)
    with torch.no_grad():
        return dk._run_backward(launch, wrt, [], out, {n: grads.get(n) for n in out}, {})


@dataclasses.dataclass
class InputReport:
    """One input's comparison (errors relative to the reference's max |.|)."""
    name: str
    dtype: str
    abs_vs_kad: float
    rel_vs_kad: float
    worst_vs_kad: tuple
    abs_vs_f64: float
    rel_vs_f64: float
    worst_vs_f64: tuple
    kad_vs_f64: float  # kad's own error against the float64 reference: the noise floor
    tol: float
    ok: bool


@dataclasses.dataclass
class BackwardReport:
    kernel: str
    inputs: list[InputReport]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.inputs)

    def __getitem__(self, name: str) -> InputReport:
        for r in self.inputs:
            if r.name == name:
                return r
        raise KeyError(name)

    def __str__(self):
        head = (f"{'input':<12} {'dtype':<9} {'abs(kad)':>9} {'rel(kad)':>9} {'worst':<12} "
                f"{'abs(f64)':>9} {'rel(f64)':>9} {'worst':<12} {'kad/f64':>9} {'tol':>8}")
        lines = [f"check_backward({self.kernel}): {'PASS' if self.ok else 'FAIL'}", head]
        for r in self.inputs:
            lines.append(
                f"{r.name:<12} {r.dtype:<9} {r.abs_vs_kad:9.2e} {r.rel_vs_kad:9.2e} {str(r.worst_vs_kad):<12} "
                f"{r.abs_vs_f64:9.2e} {r.rel_vs_f64:9.2e} {str(r.worst_vs_f64):<12} {r.kad_vs_f64:9.2e} "
                f"{r.tol:8.1e}  {'ok' if r.ok else 'WRONG'}")
        return "\n".join(lines)


def _compare(u, r):
    """(max abs error, error relative to max|r|, index of the worst element)."""
    u = u.detach().to("cpu", torch.float64)
    r = r.detach().to("cpu", torch.float64)
    if u.shape != r.shape:
        raise ValueError(f"gradient of shape {tuple(u.shape)}, expected {tuple(r.shape)}")
    diff = (u - r).abs()
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
    if diff.numel() == 0:
        return 0.0, 0.0, ()
    flat = int(torch.argmax(diff))
    worst = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), diff.shape))
    mx = float(diff.reshape(-1)[flat])
    scale = float(r.abs().max())
    rel = mx / scale if scale > 0 else (0.0 if mx == 0 else float("inf"))
    return mx, rel, worst


def _span64(t):
    """A CPU copy of t's storage span (from data_ptr to its last element),
    float64 for float tensors, as the interpreter's f64 mode wants it."""
    if t.numel() == 0:
        return torch.empty(0, dtype=torch.float64)
    span = storage_span(t.detach())
    dt = torch.float64 if t.dtype in FLOAT_DTYPES or t.dtype in FP8_DTYPES else t.dtype
    return span.to("cpu", dt).clone()


def _reference_f64(dk, launch, wrt, out, d_outs):
    """Input gradients from kad's backward on the interpreter in float64."""
    bwd = dk.program.backward(launch.sig, wrt, out, dk.deterministic)
    keep, args = [], []
    # the forward's parameters by name: those Triton specializes (None, 1) are not parameters of bwd
    rt = dict(launch.runtime)
    names = [n for n, _ in bwd.params][:len(bwd.params) - len(d_outs) - len(wrt)]
    for v in (rt[n] for n in names):
        if isinstance(v, torch.Tensor):
            s = _span64(v)
            keep.append(s)
            args.append(Pointer(s.data_ptr(), s.numel() * s.element_size()))
        else:
            args.append(v)
    for d in d_outs:
        s = _span64(d)
        keep.append(s)
        args.append(Pointer(s.data_ptr(), s.numel() * s.element_size()))
    tens = dict(launch.tensors())
    grads = {}
    for n in wrt:
        x = tens[n]
        s = torch.zeros_like(_span64(x))
        keep.append(s)
        args.append(Pointer(s.data_ptr(), s.numel() * s.element_size()))
        grads[n] = s.as_strided(x.size(), x.stride(), 0)
    bwd.run(launch.grid, args, mode="f64")
    return grads


def check_backward(kernel: DifferentiableKernel, grid: Any, args: Sequence[Any], my_backward: Callable[..., Any],
                   kwargs: Mapping[str, Any] | None = None, seed: int = 0) -> BackwardReport:
    """Compares my_backward with kad's gradient and the float64 reference;
    returns a BackwardReport (str() prints a table; .ok; report['x_ptr'])."""
    dk = _dk(kernel)
    kwargs = dict(kwargs or {})
    args = tuple(args)
    launch = dk.bind(grid, args, kwargs)
    launch.call = (grid, args, kwargs)
    with torch.no_grad():
        dk._run_forward(launch)
    tens = dict(launch.tensors())
    wrt = [n for n in dk.inputs if n in tens and tens[n].dtype in FLOAT_DTYPES]
    out = [n for n in dk.outputs if n in tens]
    gen = torch.Generator().manual_seed(seed)
    d_outs = []
    for n in out:
        y = tens[n]
        d = torch.empty_strided(y.size(), y.stride(), dtype=y.dtype, device=y.device)
        d.copy_(torch.randn(y.shape, generator=gen, dtype=torch.float64))
        d_outs.append(d)
    with torch.no_grad():
        mine = dk._run_backward(launch, wrt, [], out, dict(zip(out, d_outs)), {})
        ref = _reference_f64(dk, launch, wrt, out, d_outs)
        theirs = my_backward(*args, *d_outs, **kwargs)
    return _backward_report(dk.__name__, theirs, list(dk.inputs), wrt, mine, ref, tens)


def _backward_report(name, theirs, inputs, wrt, mine, ref, tens):
    """The BackwardReport of my_backward's gradients `theirs` (a tensor, a tuple in the order of
    `inputs`, or a dict name -> tensor) against kad's backward (`mine`) and the float64 reference
    (`ref`), per input of `wrt` it returned; tens: name -> the input tensor (its dtype sets the
    tolerance floor).  Shared by check_backward and kad.cuda.check_backward."""
    if isinstance(theirs, torch.Tensor):
        theirs = (theirs,)
    if isinstance(theirs, (tuple, list)):
        if len(theirs) != len(inputs):
            raise ValueError(f"my_backward returned {len(theirs)} gradients for the {len(inputs)} inputs "
                             f"{inputs}")
        theirs = dict(zip(inputs, theirs))
    if not isinstance(theirs, dict):
        raise TypeError("my_backward must return a tensor, a tuple of tensors in the order of the inputs, or a "
                        "dict name -> tensor")
    rows = []
    for n in wrt:
        u = theirs.get(n)
        if u is None:
            continue
        ak, rk, wk = _compare(u, mine[n])
        af, rf, wf = _compare(u, ref[n])
        _, base, _ = _compare(mine[n], ref[n])
        tol = max(_FLOOR.get(tens[n].dtype, 1e-4), 4 * base)
        rows.append(InputReport(n, str(tens[n].dtype).replace("torch.", ""), ak, rk, wk, af, rf, wf, base, tol,
                                rf <= tol))
    if not rows:
        raise ValueError("my_backward returned no gradient for any differentiable input")
    return BackwardReport(name, rows)


@dataclasses.dataclass
class AuditFinding:
    """One line of the audit: kind is "nondeterministic", "batch-variant" or
    "note" (a float atomic into distinct addresses: order-free); where is
    "file:line:col"."""
    kind: str
    where: str
    message: str

    def __str__(self):
        return f"{self.where}: {self.kind}: {self.message}"


@dataclasses.dataclass
class AuditReport:
    """kad_audit's report: text (str() of the report), findings (every
    located line, notes included); clean is True when nothing is
    nondeterministic or batch-variant."""
    text: str
    findings: list[AuditFinding]

    @property
    def clean(self) -> bool:
        return all(f.kind == "note" for f in self.findings)

    def __str__(self):
        return self.text


def _parse_audit(text):
    findings = []
    for line in text.splitlines():
        for kind in ("nondeterministic", "batch-variant", "note"):
            sep = f": {kind}: "
            if sep in line:
                where, msg = line.split(sep, 1)
                findings.append(AuditFinding(kind, where, msg))
                break
    return AuditReport(text, findings)


def audit(kernel: Any, grid: Any, *args: Any, **kwargs: Any) -> AuditReport:
    """The determinism audit of kernel[grid](*args, **kwargs), not launched."""
    if isinstance(kernel, DifferentiableKernel):
        program = kernel.program
        launch = kernel.bind(grid, args, kwargs)
    else:
        chain, jit = unwrap(kernel)
        program = Program(jit)
        launch = bind(jit, chain, grid, args, kwargs, [])
    return _parse_audit(program.forward(launch.sig).audit())
