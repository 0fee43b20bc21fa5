"""CUDA C / HIP kernels as PyTorch autograd ops (docs/PYTHON.md, "CUDA C / HIP kernels").

    square = kad.cuda.differentiable("square.cu", "square", inputs=["x"], outputs=["y"])
    square[grid, block](x, y, n)          # arguments in the C signature's order
    y.sum().backward()                    # x.grad

The kernel is kad's front end's (kad_add_cuda_source, kad_specialize_cuda: the block's threads
are the lanes of one tile); its backward is kad's reverse mode of it.  CPU tensors run the
forward and the backward on kad's interpreter.  Template type parameters (`scalar_t`) take the
dtype of the tensors passed where the kernel's parameters use them, as AT_DISPATCH does; other
template arguments (`BLOCK`, extern __shared__ sizes) come from template={...}.

This module is thin: the C library does the compiling; here are the binding of arguments, the
checks a user needs (dtype against the C type, argument count, contiguity, launch limits) and the
torch.autograd.Function.
"""
from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from . import _capi
from ._capi import KadError
from torch.autograd.graph import increment_version

from .autograd import _cpu_mode, run_cpu

__all__ = ["differentiable", "CudaKernel", "backward_source"]

# torch dtype <-> kad element type (the C types of include/kad.h's param types)
_DTYPE_TO_KAD = {
    torch.float32: "fp32", torch.float64: "fp64", torch.float16: "fp16", torch.bfloat16: "bf16",
    torch.int32: "i32", torch.int64: "i64", torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8",
    torch.bool: "i1",
}
_KAD_TO_C = {
    "fp32": "float", "fp64": "double", "fp16": "__half", "bf16": "__nv_bfloat16", "i32": "int",
    "i64": "int64_t", "i16": "short", "i8": "signed char", "u8": "unsigned char", "u32": "unsigned",
    "u64": "uint64_t", "i1": "bool",
}
_KAD_TO_DTYPE = {v: k for k, v in _DTYPE_TO_KAD.items()}
_KAD_TO_DTYPE["u8"] = torch.uint8
_FLOATS = ("fp32", "fp64", "fp16", "bf16")

# CUDA's launch limits (every CUDA device since compute capability 2.0; HIP's are the same or larger)
_MAX_BLOCK = (1024, 1024, 64)
_MAX_THREADS = 1024
_MAX_GRID = (2**31 - 1, 65535, 65535)


def _c_type(ty):
    """kad's "*fp32" / "i32" as the C spelling: "float*" / "int"."""
    if ty.startswith("*"):
        e = ty[1:].split("[", 1)[0]
        return _KAD_TO_C.get(e, e) + "*"
    return _KAD_TO_C.get(ty, ty)


def _dims(v, what, name):
    """An int or a tuple of 1 to 3 positive ints as a 3-tuple."""
    t = (v,) if isinstance(v, int) else tuple(v)
    if not 1 <= len(t) <= 3 or not all(isinstance(d, int) and not isinstance(d, bool) for d in t):
        raise TypeError(f"kad.cuda: {name}: the {what} must be an int or a tuple of 1 to 3 ints, got {v!r}")
    if any(d < 1 for d in t):
        raise ValueError(f"kad.cuda: {name}: the {what} {v!r} has a dimension below 1")
    return t + (1,) * (3 - len(t))


def _check_limits(name, grid, block, limits=None):
    """A ValueError when grid or block exceeds CUDA's limits (limits: (max_block, max_threads,
    max_grid) of the device, or CUDA's common ones)."""
    max_block, max_threads, max_grid = limits or (_MAX_BLOCK, _MAX_THREADS, _MAX_GRID)
    for i, (b, m) in enumerate(zip(block, max_block)):
        if b > m:
            raise ValueError(f"kad.cuda: {name}: block dimension {'xyz'[i]} is {b}, above the device's limit "
                             f"of {m} (block {block})")
    if block[0] * block[1] * block[2] > max_threads:
        raise ValueError(f"kad.cuda: {name}: the block {block} has {block[0] * block[1] * block[2]} threads, "
                         f"above the device's limit of {max_threads} threads per block")
    for i, (g, m) in enumerate(zip(grid, max_grid)):
        if g > m:
            raise ValueError(f"kad.cuda: {name}: grid dimension {'xyz'[i]} is {g}, above the device's limit "
                             f"of {m} (grid {grid})")


def _read_source(source, kernel):
    """(filename, text) of source, a path or the source text itself."""
    if "\n" not in source and os.path.isfile(source):
        with open(source, encoding="utf-8") as f:
            return source, f.read()
    if "__global__" not in source:
        raise FileNotFoundError(f"kad.cuda: {source!r} is neither a file nor CUDA source text "
                                f"(no __global__ function in it)")
    return f"<{kernel}>.cu", source


def _template_types(text, kernel):
    """The names of the type template parameters (`typename T`, `class T`) of the __global__
    function kernel, read off the source's `template <...>` header in front of it; () for none.
    Only names: which arguments use them kad's specialization says (CudaKernel._type_params)."""
    pat = re.compile(r"template\s*<([^<>]*)>\s*(?:__global__|[^;{}()]*?\b__global__)[^;{}]*?\b"
                     + re.escape(kernel) + r"\s*\(")
    names = []
    for m in pat.finditer(text):
        for p in m.group(1).split(","):
            w = p.split("=", 1)[0].split()
            if len(w) >= 2 and w[0] in ("typename", "class"):
                names.append(w[-1])
    return tuple(dict.fromkeys(names))


def _targs(template):
    def fmt(v):
        if isinstance(v, torch.dtype):
            if v not in _DTYPE_TO_KAD:
                raise TypeError(f"kad.cuda: template argument {v} is not a type kad knows")
            return _DTYPE_TO_KAD[v]
        if isinstance(v, bool):
            return "1" if v else "0"
        return str(v)
    return ",".join(f"{k}={fmt(v)}" for k, v in sorted(template.items()))


class _Spec:
    """One specialization (template arguments, block): the forward kad Kernel and its backwards."""

    def __init__(self, k):
        self.k = k
        self.params = k.params
        self.access = k.param_access()
        self.grads = {}  # (wrt, out) -> backward Kernel
        self.lock = threading.Lock()

    def grad(self, wrt, out, det):
        key = (wrt, out, det)
        with self.lock:
            g = self.grads.get(key)
            if g is None:
                g = self.grads[key] = self.k.grad(list(wrt), list(out), deterministic=det)
            return g


class CudaKernel:
    """A differentiable CUDA C / HIP kernel: k[grid, block](*args, shared_mem=0, stream=None)."""

    def __init__(self, source: str, kernel: str, inputs: Sequence[str], outputs: Sequence[str],
                 template: Mapping[str, Any] | None = None, hip: bool | None = None,
                 deterministic: bool = True) -> None:
        if isinstance(inputs, str) or isinstance(outputs, str):
            raise TypeError("kad.cuda.differentiable: inputs and outputs are lists of parameter names")
        if not outputs:
            raise ValueError("kad.cuda.differentiable: outputs=[...] names the pointer parameters the kernel "
                             "writes whose gradients flow back (at least one)")
        self.filename, self.text = _read_source(source, kernel)
        self.kernel = kernel
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.template = dict(template or {})
        self.hip = self.filename.endswith(".hip") if hip is None else bool(hip)
        self.deterministic = deterministic
        self._types = _template_types(self.text, kernel)
        self._ctx = _capi.Context()
        self._ctx.add_cuda_source(self.filename, self.text)  # errors in the source: now, located
        self._specs = {}
        self._uses = {}  # (non-type targs, block) -> {type template parameter: indices of the params using it}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"kad.cuda.differentiable({self.filename!r}, {self.kernel!r}, inputs={list(self.inputs)}, " \
               f"outputs={list(self.outputs)})"

    def __getitem__(self, launch):
        if not isinstance(launch, tuple) or len(launch) != 2:
            raise TypeError(f"kad.cuda: launch {self.kernel} as k[grid, block](*args), got k[{launch!r}]")
        grid, block = _dims(launch[0], "grid", self.kernel), _dims(launch[1], "block", self.kernel)

        def call(*args, shared_mem=0, stream=None):
            return self.run(grid, block, args, shared_mem=shared_mem, stream=stream)
        return call

    # ---- specialization ----

    def _spec(self, template, block):
        key = (_targs(template), block)
        with self._lock:
            s = self._specs.get(key)
            if s is None:
                s = self._specs[key] = _Spec(self._ctx.specialize_cuda(self.kernel, key[0], block))
            return s

    def _type_params(self, block, template):
        """{type template parameter: indices of the runtime parameters whose type follows it}: the
        parameters whose kad type differs between the specializations for fp32 and for fp64."""
        base = {k: v for k, v in template.items() if k not in self._types}
        key = (_targs(base), block)
        uses = self._uses.get(key)
        if uses is None:
            uses = {}
            for t in self._types:
                rest = {u: "fp32" for u in self._types if u != t}
                a = self._spec({**base, **rest, t: "fp32"}, block).params
                b = self._spec({**base, **rest, t: "fp64"}, block).params
                uses[t] = [i for i, (p, q) in enumerate(zip(a, b)) if p[1] != q[1]]
            self._uses[key] = uses
        return uses

    def specialization(self, block, args=(), template=None):
        """(template arguments, kad Kernel) of a launch with this block and these arguments: the
        type template parameters not given by template= take the dtype of the first tensor argument
        whose parameter uses them (AT_DISPATCH's rule; every such tensor must then agree)."""
        block = _dims(block, "block", self.kernel)
        template = {**self.template, **(template or {})}
        for t, idx in self._type_params(block, template).items():
            if t in template:
                continue
            ts = [(i, args[i]) for i in idx if i < len(args) and isinstance(args[i], torch.Tensor)]
            if not ts:
                raise TypeError(f"kad.cuda: {self.kernel}: no tensor argument gives the template type '{t}': "
                                f"give it with template={{'{t}': torch.float32}}")
            dt = ts[0][1].dtype
            if dt not in _DTYPE_TO_KAD:
                raise TypeError(f"kad.cuda: {self.kernel}: template type '{t}' from a {dt} tensor: kad "
                                f"instantiates it for {', '.join(map(str, _DTYPE_TO_KAD))}")
            template[t] = dt
        return template, self._spec(template, block)

    # ---- launch ----

    def _bind(self, spec, args):
        """Checks the arguments against the C signature: count, tensor vs scalar, dtype, contiguity."""
        params = spec.params
        name = self.kernel
        sig = ", ".join(f"{_c_type(t)} {n}" for n, t in params)
        if len(args) != len(params):
            raise TypeError(f"kad.cuda: {name} takes {len(params)} arguments ({sig}), {len(args)} given")
        known = {n for n, _ in params}
        for n in self.inputs + self.outputs:
            if n not in known:
                raise ValueError(f"kad.cuda: {name}: '{n}' of inputs/outputs is not a parameter of {name}({sig})")
        mode = _cpu_mode()
        device = None
        for (n, ty), v in zip(params, args):
            if ty.startswith("*"):
                if not isinstance(v, torch.Tensor):
                    raise TypeError(f"kad.cuda: {name}: argument '{n}' is {_c_type(ty)}: pass a tensor, "
                                    f"not {type(v).__name__}")
                elem = ty[1:].split("[", 1)[0]
                want = _KAD_TO_DTYPE.get(elem)
                f64 = mode == "f64" and elem in _FLOATS and v.device.type == "cpu" and v.dtype in (
                    torch.float64, torch.float32, torch.float16, torch.bfloat16)
                if want is not None and v.dtype != want and not f64:
                    hint = (" (or run on CPU tensors inside `with kad.f64_mode():`, where float buffers may "
                            "hold float64)") if elem in _FLOATS else ""
                    raise TypeError(f"kad.cuda: {name}: argument '{n}' is {_c_type(ty)}, which needs a {want} "
                                    f"tensor, got {v.dtype}: pass it .to({want}){hint}")
                if not v.is_contiguous():
                    raise ValueError(f"kad.cuda: {name}: argument '{n}' ({_c_type(ty)}) is not contiguous "
                                     f"(shape {tuple(v.shape)}, strides {v.stride()}): the kernel indexes the "
                                     f"pointer as a dense row-major array. Pass {n}.contiguous()"
                                     + (" and copy the result back, or allocate it contiguous"
                                        if n in self.outputs else ""))
                if device is None:
                    device = v.device
                elif v.device != device:
                    raise ValueError(f"kad.cuda: {name}: argument '{n}' is on {v.device}, others on {device}")
            else:
                if isinstance(v, torch.Tensor):
                    if v.numel() != 1:
                        raise TypeError(f"kad.cuda: {name}: argument '{n}' is {_c_type(ty)}, a scalar: "
                                        f"got a tensor of shape {tuple(v.shape)}")
                    v = v.item()
                if ty in _FLOATS:
                    if not isinstance(v, (int, float)) or isinstance(v, bool):
                        raise TypeError(f"kad.cuda: {name}: argument '{n}' is {_c_type(ty)}: got {v!r}")
                elif isinstance(v, float) or not isinstance(v, int):
                    raise TypeError(f"kad.cuda: {name}: argument '{n}' is {_c_type(ty)}, an integer: got {v!r}")
        for n, ty in params:
            if n in self.outputs and not ty.startswith("*"):
                raise ValueError(f"kad.cuda: {name}: output '{n}' is {_c_type(ty)}, not a pointer")
            if n in self.inputs and not ty.startswith("*"):
                raise ValueError(f"kad.cuda: {name}: input '{n}' is {_c_type(ty)}: inputs are pointers "
                                 f"(a float scalar's gradient is not supported)")
        return mode, device

    def _check_undeclared(self, by):
        """A tensor that requires grad passed to a pointer declared neither input nor output: kad would
        read it as a constant and its gradient would silently be missing."""
        for n, v in by.items():
            if isinstance(v, torch.Tensor) and v.requires_grad and v.is_floating_point() \
                    and n not in self.inputs and n not in self.outputs:
                raise ValueError(f"kad.cuda: {self.kernel}: argument '{n}' is a tensor that requires grad, but "
                                 f"'{n}' is not in inputs={list(self.inputs)}: its gradient would be silently "
                                 f"missing; add it to inputs=[...], or pass {n}.detach()")

    def run(self, grid, block, args, shared_mem=0, stream=None):
        grid = _dims(grid, "grid", self.kernel)
        block = _dims(block, "block", self.kernel)
        args = list(args)
        devs = {a.device.type for a in args if isinstance(a, torch.Tensor)}
        if "cuda" in devs:
            raise NotImplementedError(
                f"kad.cuda: {self.kernel}: CUDA tensors are not supported yet by kad.cuda (the forward and "
                f"the generated backward compiled at run time are issue 37's next step); run on CPU tensors, "
                f"or compile kad.cuda.backward_source(...) yourself")
        _check_limits(self.kernel, grid, block)
        _, spec = self.specialization(block, args)
        mode, _ = self._bind(spec, args)
        params = spec.params
        names = [n for n, _ in params]
        values = [a.item() if isinstance(a, torch.Tensor) and not p[1].startswith("*") else a
                  for a, p in zip(args, params)]
        by = dict(zip(names, values))
        if torch.is_grad_enabled():
            self._check_undeclared(by)
        inputs = [n for n in self.inputs if by[n].requires_grad] if torch.is_grad_enabled() else []
        outs = [n for n in names if n in self.outputs]
        if not inputs:
            run_cpu(spec.k, grid, values, mode, written=[by[n] for n in outs])
            return _result([by[n] for n in outs])
        for n in outs:
            for m in names:
                if m != n and isinstance(by[m], torch.Tensor) and _shares(by[n], by[m]):
                    raise ValueError(f"kad.cuda: {self.kernel}: output '{n}' shares memory with '{m}': kad "
                                     f"differentiates kernels whose outputs are buffers of their own")
        # the backward's launch conditions (a loop's stores distinct only for N >= 64...): refused
        # now, located, rather than after the forward when the backward runs
        spec.grad(tuple(inputs), tuple(outs), self.deterministic).check_launch(grid, values)
        run = _Run(self, spec, grid, values, names, inputs, outs, mode)
        return _CudaFunction.apply(run, *[by[n] for n in run.slots])


def _shares(a, b):
    if a.numel() == 0 or b.numel() == 0:
        return False
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _result(outs):
    return None if not outs else outs[0] if len(outs) == 1 else tuple(outs)


class _Run:
    """One differentiable launch, forward to backward: detached aliases only.

    The Function's tensor arguments (slots) are the inputs needing gradients, the other tensors,
    then the outputs not among the inputs.  An output that is also an input (updated in place,
    docs/AD.md "In-place buffers") is one slot: marked dirty, its gradient that of its value
    before the launch, which the backward reads from a copy taken before the forward."""

    def __init__(self, dk, spec, grid, values, names, inputs, outs, mode):
        self.dk, self.spec, self.grid, self.mode = dk, spec, grid, mode
        self.names = names
        self.values = values  # C order; tensors replaced by detached aliases in forward
        self.inputs = inputs  # input names whose tensors need their gradient
        self.outs = outs
        self.others = [n for n, v in zip(names, values) if isinstance(v, torch.Tensor)
                       and n not in inputs and n not in outs]
        self.slots = inputs + self.others + [n for n in outs if n not in inputs]
        acc = spec.access
        # the scratch tensors the kernel writes (not declared outputs: a norm's mean and rstd)
        self.scratch = [n for n in self.others if acc.get(n, 0) & 2]
        self.saved = [n for n in inputs + self.others if n not in outs and n not in self.scratch]
        # buffers the kernel reads and writes (outputs updated in place, scratch it accumulates into):
        # the backward recomputes from their value before the launch
        self.old = {n: v.detach().clone() for n, v in zip(names, values)
                    if (n in outs or n in self.scratch) and acc.get(n, 0) & 1}

    def forward(self):
        self.values = [v.detach() if isinstance(v, torch.Tensor) else v for v in self.values]
        by = dict(zip(self.names, self.values))
        run_cpu(self.spec.k, self.grid, self.values, self.mode,
                written=[by[n] for n in self.outs + self.scratch])
        for n in self.scratch:
            increment_version(by[n])  # written through a pointer: what autograd saved of it is stale


class _CudaFunction(torch.autograd.Function):
    """apply(run, *slots) -> the outputs (marked dirty), in C order."""

    @staticmethod
    def forward(ctx, run, *tensors):
        run.forward()
        ctx.run = run
        t = dict(zip(run.slots, tensors))
        ctx.save_for_backward(*[t[n] for n in run.saved])
        outs = [t[n] for n in run.outs]
        ctx.mark_dirty(*outs)
        ctx.set_materialize_grads(False)
        return outs[0] if len(outs) == 1 else tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        run = ctx.run
        saved = ctx.saved_tensors  # PyTorch refuses here an input changed in place since the forward
        needs = dict(zip(run.slots, ctx.needs_input_grad[1:]))
        need = [n for n in run.inputs if needs[n]]
        result = [None] * (1 + len(run.slots))
        if not need or all(g is None for g in grads):
            return tuple(result)
        g = run.spec.grad(tuple(need), tuple(run.outs), run.dk.deterministic)
        by = dict(zip(run.names, run.values))
        by.update(zip(run.saved, saved))
        gacc = g.param_access()
        for n in run.outs + run.scratch:
            if n not in run.old and gacc.get(n, 0) & 1 and n in by:
                # the forward never reads it, so a recomputing backward does not either
                raise KadError(f"kad.cuda: {run.dk.kernel}: the backward reads '{n}', which the forward only "
                               f"writes: kad's backward would read what the forward stored; refused")
        for n, v in run.old.items():
            by[n] = v.clone()  # the value before the launch (the backward may recompute into it)
        for n, _ in g.params:
            if n in by and (n in run.outs or n in run.scratch) and n not in run.old and gacc.get(n, 0) & 2:
                by[n] = torch.empty_like(by[n])  # the backward recomputes the output: not into the user's
        dout = {}
        for n, gr in zip(run.outs, grads):
            y = by[n]
            dout[n] = torch.zeros_like(y) if gr is None else gr.to(y.dtype).contiguous().clone()
            by["d_" + n] = dout[n]
        dx = {}
        for n in need:
            # an in-place one: one buffer, the output's gradient in, the old value's out
            dx[n] = dout[n] if n in dout else torch.zeros_like(by[n])
            # d_<x>_part: a folded or site-rows gradient, whose partials and sum the interpreter's
            # plan runs itself into the gradient passed there (docs/AD.md, "Folding")
            by["d_" + n] = by["d_" + n + "_part"] = dx[n]
        missing = [n for n, _ in g.params if n not in by]
        if missing:
            raise KadError(f"kad.cuda: {run.dk.kernel}: the backward takes {missing}, which this binding does "
                           f"not know (a kad version mismatch?)")
        run_cpu(g, run.grid, {n: by[n] for n, _ in g.params}, run.mode, written=list(dx.values()))
        for i, n in enumerate(run.slots):
            if n in dx:
                result[1 + i] = dx[n]
        return tuple(result)


def differentiable(source: str, kernel: str, inputs: Sequence[str], outputs: Sequence[str],
                   template: Mapping[str, Any] | None = None, hip: bool | None = None,
                   deterministic: bool = True) -> CudaKernel:
    """A CUDA C / HIP __global__ function as a differentiable kernel (docs/PYTHON.md, "CUDA C /
    HIP kernels"): source a path or the source text, kernel the function's name, inputs the
    pointer parameters to differentiate, outputs those it writes.  template: template arguments
    ({"BLOCK": 256, "scalar_t": torch.float32}; type parameters left out take the dtypes of the
    tensors passed).  Launch as k[grid, block](*args), arguments in the C signature's order."""
    return CudaKernel(source, kernel, inputs, outputs, template=template, hip=hip, deterministic=deterministic)


def backward_source(k: CudaKernel, block, *args: Any, template: Mapping[str, Any] | None = None,
                    wrt: Sequence[str] | None = None, hip: bool | None = None) -> str:
    """The CUDA C (HIP for a .hip source, or hip=True) module of k's backward for this block
    (kad_grad_module_cuda; docs/EMIT.md "CUDA C"): <kernel>_bwd and its launcher
    launch_<kernel>_bwd.  Template types come from template= or from the tensors of args (the
    launch's arguments, optional).  wrt: the inputs to differentiate (default: k's inputs)."""
    if not isinstance(k, CudaKernel):
        raise TypeError("kad.cuda.backward_source: pass the kernel kad.cuda.differentiable returned")
    _, spec = k.specialization(block, list(args), template)
    outs = [n for n, _ in spec.params if n in k.outputs]
    return spec.k.grad_module_cuda(list(wrt or k.inputs), outs, deterministic=k.deterministic,
                                   hip=k.hip if hip is None else hip)
