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
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

import torch

from . import _capi
from ._capi import KadError
from torch.autograd.graph import increment_version

from .autograd import _cpu_mode, run_cpu

if TYPE_CHECKING:
    from .check import BackwardReport

Dims = Union[int, Sequence[int]]  # a grid or a block: an int or up to 3 ints

__all__ = ["differentiable", "kernel", "CudaKernel", "backward_source", "check_backward", "compile_log"]

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
                 deterministic: bool = True, _plain: bool = False, include_dirs: Sequence[str] = ()) -> None:
        if isinstance(inputs, str) or isinstance(outputs, str):
            raise TypeError("kad.cuda.differentiable: inputs and outputs are lists of parameter names")
        if not outputs and not _plain:
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
        if isinstance(include_dirs, str):
            raise TypeError("kad.cuda: include_dirs is a list of directories")
        self.include_dirs = tuple(os.path.abspath(os.fspath(d)) for d in include_dirs)
        for d in self.include_dirs:
            self._ctx.add_cuda_include_dir(d)
        self._ctx.add_cuda_source(self.filename, self.text)  # errors in the source: now, located
        self._specs = {}
        self._uses = {}  # (non-type targs, block) -> {type template parameter: indices of the params using it}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"kad.cuda.differentiable({self.filename!r}, {self.kernel!r}, inputs={list(self.inputs)}, " \
               f"outputs={list(self.outputs)})"

    def __getitem__(self, launch: tuple[Dims, Dims]) -> Callable[..., Any]:
        if not isinstance(launch, tuple) or len(launch) != 2:
            raise TypeError(f"kad.cuda: launch {self.kernel} as k[grid, block](*args), got k[{launch!r}]")
        grid, block = _dims(launch[0], "grid", self.kernel), _dims(launch[1], "block", self.kernel)

        def call(*args: Any, shared_mem: int = 0, stream: Any = None) -> Any:
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
                for other in ("fp64", "fp16"):  # a kernel refused for double may take half
                    try:
                        b = self._spec({**base, **rest, t: other}, block).params
                        break
                    except KadError:
                        if other == "fp16":
                            raise
                uses[t] = [i for i, (p, q) in enumerate(zip(a, b)) if p[1] != q[1]]
            self._uses[key] = uses
        return uses

    def specialization(self, block: Dims, args: Sequence[Any] = (),
                       template: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], _Spec]:
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

    # ---- the GPU path: nvcc-compiled modules ----

    def _forward_so(self, spec, template, dev):
        key = ("fwd", _arch(dev))
        hit = spec.grads.get(key)
        if hit is None:
            text = forward_stub(self.text, self.kernel, spec.params, template)
            inc = [os.path.dirname(os.path.abspath(self.filename))] if os.path.isfile(self.filename) else []
            inc += list(self.include_dirs)  # nvcc's -I, as kad's front end read them
            lib = build_module(text, self.kernel, _arch(dev), inc)
            fname = f"kad_launch_{self.kernel}"
            fn = getattr(lib, fname)
            fn.restype = __import__("ctypes").c_int
            hit = spec.grads[key] = (lib, fn, _parse_launcher(text, fname))
        return hit

    def _backward_so(self, spec, wrt, out, dev):
        key = ("bwd", wrt, out, _arch(dev))
        hit = spec.grads.get(key)
        if hit is None:
            text = spec.k.grad_module_cuda(list(wrt), list(out), deterministic=self.deterministic)
            lib = build_module(text, self.kernel + "_bwd", _arch(dev))
            fname = f"launch_{self.kernel}_bwd"
            fn = getattr(lib, fname)
            fn.restype = __import__("ctypes").c_int
            hit = spec.grads[key] = (lib, fn, _parse_launcher(text, fname))
        return hit

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

    def run(self, grid: Dims, block: Dims, args: Sequence[Any], shared_mem: int = 0, stream: Any = None) -> Any:
        grid = _dims(grid, "grid", self.kernel)
        block = _dims(block, "block", self.kernel)
        args = list(args)
        devs = {a.device for a in args if isinstance(a, torch.Tensor)}
        dev = next(iter(devs)) if len(devs) == 1 else None
        on_gpu = dev is not None and dev.type == "cuda"
        if on_gpu and self.hip:
            raise NotImplementedError(f"kad.cuda: {self.kernel}: a HIP source on CUDA tensors: kad.cuda compiles "
                                      f"CUDA C with nvcc; the HIP spelling runs on CPU tensors")
        _check_limits(self.kernel, grid, block, _device_limits(dev) if on_gpu else None)
        template, spec = self.specialization(block, args)
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
        launch = _Launch(self, spec, template, grid, block, mode, dev if on_gpu else None, shared_mem, stream)
        if not inputs:
            launch.forward(values, [by[n] for n in outs])
            return _result([by[n] for n in outs])
        for n in outs:
            for m in names:
                if m != n and isinstance(by[m], torch.Tensor) and _shares(by[n], by[m]):
                    raise ValueError(f"kad.cuda: {self.kernel}: output '{n}' shares memory with '{m}': kad "
                                     f"differentiates kernels whose outputs are buffers of their own")
        # the backward's launch conditions (a loop's stores distinct only for N >= 64...): refused
        # now, located, rather than after the forward when the backward runs
        spec.grad(tuple(inputs), tuple(outs), self.deterministic).check_launch(grid, values)
        if on_gpu:  # compiled (or refused, located) before the forward runs
            self._forward_so(spec, template, dev)
            self._backward_so(spec, tuple(inputs), tuple(outs), dev)
        run = _Run(launch, values, names, inputs, outs)
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

    def __init__(self, launch, values, names, inputs, outs):
        self.launch = launch
        self.dk, self.spec, self.grid, self.mode = launch.dk, launch.spec, launch.grid, launch.mode
        self.names = names
        self.values = values  # C order; tensors replaced by detached aliases in forward
        self.inputs = inputs  # input names whose tensors need their gradient
        self.outs = outs
        self.others = [n for n, v in zip(names, values) if isinstance(v, torch.Tensor)
                       and n not in inputs and n not in outs]
        self.slots = inputs + self.others + [n for n in outs if n not in inputs]
        acc = self.spec.access
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
        self.launch.forward(self.values, [by[n] for n in self.outs + self.scratch])
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
        run.launch.backward(g, need, run.outs, by, dx)
        for i, n in enumerate(run.slots):
            if n in dx:
                result[1 + i] = dx[n]
        return tuple(result)


class _Launch:
    """Where one launch runs: kad's interpreter (device None) or the GPU, through the forward and
    the backward compiled by nvcc (_compiled)."""

    def __init__(self, dk, spec, template, grid, block, mode, device, shared_mem, stream):
        self.dk, self.spec, self.template, self.grid, self.block = dk, spec, template, grid, block
        self.mode, self.device, self.shared_mem, self.stream = mode, device, int(shared_mem or 0), stream

    def _stream(self):
        s = self.stream
        if s is None:
            s = torch.cuda.current_stream(self.device)
        return getattr(s, "cuda_stream", s)

    def forward(self, values, written):
        if self.device is None:
            run_cpu(self.spec.k, self.grid, values, self.mode, written=written)
            return
        lib, fn, sig = self.dk._forward_so(self.spec, self.template, self.device)
        with torch.cuda.device(self.device):
            _call(fn, sig, dict(zip([n for n, _ in self.spec.params], values)),
                  self.grid, self._stream(), block=self.block, shared_mem=self.shared_mem, name=self.dk.kernel)

    def backward(self, g, need, outs, by, dx):
        if self.device is None:
            run_cpu(g, self.grid, {n: by[n] for n, _ in g.params}, self.mode, written=list(dx.values()))
            return
        lib, fn, sig = self.dk._backward_so(self.spec, tuple(need), tuple(outs), self.device)
        with torch.cuda.device(self.device):
            _call(fn, sig, by, self.grid, self._stream(), name=self.dk.kernel + "_bwd")


def _device_limits(dev):
    """(max block dims, max threads per block, max grid dims) of a CUDA device (CUDA's common
    limits where torch does not say)."""
    p = torch.cuda.get_device_properties(dev)
    threads = getattr(p, "max_threads_per_block", _MAX_THREADS)
    bdims = tuple(getattr(p, "max_threads_dim", None) or _MAX_BLOCK)
    gdims = tuple(getattr(p, "max_grid_size", None) or _MAX_GRID)
    return bdims[:3], threads, gdims[:3]


_C_CTYPES = {"float": "c_float", "double": "c_double", "int32_t": "c_int32", "int64_t": "c_int64",
             "int": "c_int", "unsigned": "c_uint", "uint32_t": "c_uint32", "uint64_t": "c_uint64",
             "bool": "c_bool", "int16_t": "c_int16", "int8_t": "c_int8", "uint8_t": "c_uint8"}


def _parse_launcher(text, fname):
    """[(name, ctype, is_pointer)] of extern "C" int fname(...) in text: the launcher's ABI."""
    import ctypes
    m = re.search(r'extern "C" int ' + re.escape(fname) + r"\(([^)]*)\)", text)
    if not m:
        raise KadError(f"kad.cuda: the generated module has no launcher {fname}")
    sig = []
    for part in m.group(1).split(","):
        part = " ".join(part.split())
        name = re.findall(r"[A-Za-z_]\w*", part)[-1]
        decl = part[: part.rindex(name)].strip()
        if "*" in decl or decl in ("cudaStream_t", "hipStream_t"):
            sig.append((name, ctypes.c_void_p, "*" in decl))
        else:
            base = decl.replace("const ", "").strip()
            if base not in _C_CTYPES:
                raise KadError(f"kad.cuda: launcher {fname}: parameter type {decl!r} unknown to this binding")
            sig.append((name, getattr(ctypes, _C_CTYPES[base]), False))
    return sig


def _call(fn, sig, by, grid, stream, block=None, shared_mem=0, name=""):
    """Calls a compiled launcher: grid_x.., block_x.. (the forward's), shared_mem, the parameters
    by name (<d_x>_numel from d_x), stream."""
    extra = {"grid_x": grid[0], "grid_y": grid[1], "grid_z": grid[2], "stream": stream,
             "kad_shared_mem": shared_mem}
    if block is not None:
        extra.update(block_x=block[0], block_y=block[1], block_z=block[2])
    args = []
    for n, ct, is_ptr in sig:
        if n in extra:
            v = extra[n]
        elif n.endswith("_numel") and n[: -len("_numel")] in by:
            v = by[n[: -len("_numel")]].numel()
        elif n in by:
            v = by[n]
        else:
            raise KadError(f"kad.cuda: launcher of {name} takes '{n}', which this binding does not know")
        if isinstance(v, torch.Tensor):
            v = v.data_ptr() if is_ptr else v.item()
        args.append(ct(v))
    rc = fn(*args)
    if rc != 0:
        why = (": cudaErrorInvalidValue is a guard of the backward refusing the launch, the module's header "
               "(kad.cuda.backward_source) says which" if name.endswith("_bwd") else "")
        raise RuntimeError(f"kad.cuda: the launch of {name} failed: CUDA error {rc} ({_cuda_error_name(rc)}){why}")


def _cuda_error_name(rc):
    try:
        import ctypes
        rt = ctypes.CDLL("libcudart.so")
        rt.cudaGetErrorName.restype = ctypes.c_char_p
        return rt.cudaGetErrorName(int(rc)).decode()
    except OSError:
        return "cudaError " + str(rc)


def _nvcc():
    """The nvcc to compile with: $KAD_NVCC, $CUDA_HOME/bin/nvcc, or nvcc on PATH."""
    import shutil
    for c in (os.environ.get("KAD_NVCC"),
              os.path.join(os.environ["CUDA_HOME"], "bin", "nvcc") if os.environ.get("CUDA_HOME") else None,
              shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if c and os.path.isfile(c):
            return c
    raise RuntimeError("kad.cuda: CUDA tensors need nvcc to compile the kernel and its backward (set KAD_NVCC "
                       "or CUDA_HOME, or put nvcc on PATH); CPU tensors run on kad's interpreter without it")


_SO_LOCK = threading.Lock()
_LOADED = {}  # path -> ctypes.CDLL (a process loads each module once)
compile_log = []  # (module name, seconds, cached): what the GPU path compiled, for measurement


def _arch(dev):
    major, minor = torch.cuda.get_device_capability(dev)
    return f"sm_{major}{minor}"


def build_module(text: str, name: str, arch: str, include: Sequence[str] = ()) -> Any:
    """A CUDA C module text compiled by nvcc into a shared library, cached on disk by the hash of
    the text, nvcc's version, the arch and the flags (kad.cache_dir()/cuda/<hash>.so): the
    library's path.  compile_log records the seconds each took."""
    import ctypes
    import hashlib
    import subprocess
    import tempfile
    import time

    from .autograd import cache_dir
    nvcc = _nvcc()
    flags = ["-O3", "-shared", "-Xcompiler", "-fPIC", f"-arch={arch}", "-std=c++17"] + [f"-I{d}" for d in include]
    with _SO_LOCK:
        ver = _nvcc_version(nvcc)
        key = hashlib.sha256("\0".join([text, ver, " ".join(flags), _capi.build_id()]).encode()).hexdigest()[:32]
        d = os.path.join(cache_dir(), "cuda")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, f"{name}-{key}.so")
        if path in _LOADED:
            return _LOADED[path]
        cached = os.path.exists(path)
        t0 = time.perf_counter()
        if not cached:
            with tempfile.TemporaryDirectory(dir=d) as tmp:
                src = os.path.join(tmp, name + ".cu")
                with open(src, "w") as f:
                    f.write(text)
                out = os.path.join(tmp, name + ".so")
                r = subprocess.run([nvcc, *flags, "-o", out, src], capture_output=True, text=True)
                if r.returncode != 0:
                    raise KadError(f"kad.cuda: nvcc failed on {name}:\n{r.stderr.strip()}")
                os.replace(out, path)  # the same file system: no reader sees a partial file
        lib = ctypes.CDLL(path)
        compile_log.append((name, time.perf_counter() - t0, cached))
        _LOADED[path] = lib
        return lib


_NVCC_VER = {}


def _nvcc_version(nvcc):
    import subprocess
    v = _NVCC_VER.get(nvcc)
    if v is None:
        v = _NVCC_VER[nvcc] = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    return v


def _template_header(text, kernel):
    """The template parameter names of kernel, in order ([] for none)."""
    pat = re.compile(r"template\s*<([^<>]*)>\s*(?:__global__|[^;{}()]*?\b__global__)[^;{}]*?\b"
                     + re.escape(kernel) + r"\s*\(")
    m = pat.search(text)
    if not m:
        return []
    return [p.split("=", 1)[0].split()[-1] for p in m.group(1).split(",") if p.strip()]


_KAD_TO_CXX = {"fp32": "float", "fp64": "double", "fp16": "__half", "bf16": "__nv_bfloat16", "i32": "int32_t",
               "i64": "int64_t", "i16": "int16_t", "i8": "int8_t", "u8": "uint8_t", "u32": "uint32_t",
               "u64": "uint64_t", "i1": "bool"}


def forward_stub(text: str, kernel: str, params: Sequence[tuple[str, str]], template: Mapping[str, Any]) -> str:
    """The user's source followed by an extern "C" launcher of its kernel (the forward compiled
    as written: the instantiation for template, the arguments in the C signature's order)."""
    names = _template_header(text, kernel)
    targs = []
    for t in names:
        if t not in template:
            raise KadError(f"kad.cuda: {kernel}: template parameter '{t}' has no value for the GPU launch: "
                           f"give it with template={{'{t}': ...}}")
        v = template[t]
        v = _DTYPE_TO_KAD.get(v, v) if isinstance(v, torch.dtype) else v
        targs.append(_KAD_TO_CXX.get(v, str(v)) if isinstance(v, str) else str(int(v)))
    inst = kernel + (f"<{', '.join(targs)}>" if names else "")
    decl = []
    for n, ty in params:
        e = ty.lstrip("*").split("[", 1)[0]
        decl.append(f"{_KAD_TO_CXX[e]} {'*' if ty.startswith('*') else ''}{n}")
    return (text + "\n\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <stdint.h>\n"
            "// kad.cuda: the forward's launcher\n"
            f'extern "C" int kad_launch_{kernel}(unsigned grid_x, unsigned grid_y, unsigned grid_z, '
            "unsigned block_x, unsigned block_y, unsigned block_z, unsigned kad_shared_mem, "
            + "".join(d + ", " for d in decl) + "cudaStream_t stream)\n{\n"
            f"    {inst}<<<dim3(grid_x, grid_y, grid_z), dim3(block_x, block_y, block_z), kad_shared_mem, "
            f"stream>>>({', '.join(n for n, _ in params)});\n"
            "    return (int)cudaGetLastError();\n}\n")


def differentiable(source: str, kernel: str, inputs: Sequence[str], outputs: Sequence[str],
                   template: Mapping[str, Any] | None = None, hip: bool | None = None,
                   deterministic: bool = True, include_dirs: Sequence[str] = ()) -> CudaKernel:
    """A CUDA C / HIP __global__ function as a differentiable kernel (docs/PYTHON.md, "CUDA C /
    HIP kernels"): source a path or the source text, kernel the function's name, inputs the
    pointer parameters to differentiate, outputs those it writes.  template: template arguments
    ({"BLOCK": 256, "scalar_t": torch.float32}; type parameters left out take the dtypes of the
    tensors passed).  include_dirs: where quoted #includes not beside the file are looked for
    (nvcc's -I; a path source's own headers beside it need none).  Launch as k[grid,
    block](*args), arguments in the C signature's order."""
    return CudaKernel(source, kernel, inputs, outputs, template=template, hip=hip, deterministic=deterministic,
                      include_dirs=include_dirs)


def backward_source(k: CudaKernel, block: Dims, *args: Any, template: Mapping[str, Any] | None = None,
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


def kernel(source: str, kernel: str, template: Mapping[str, Any] | None = None,
           hip: bool | None = None) -> CudaKernel:
    """A CUDA C / HIP kernel launched as k[grid, block](*args) without autograd (a hand-written
    backward kernel for check_backward): CPU tensors on kad's interpreter, CUDA ones compiled."""
    return CudaKernel(source, kernel, (), (), template=template, hip=hip, _plain=True)


def check_backward(k: CudaKernel, grid: Dims, block: Dims, args: Sequence[Any], my_backward: Callable[..., Any],
                   seed: int = 0) -> "BackwardReport":
    """Compares a hand-written backward with kad's gradient of k[grid, block](*args) and with a
    float64 reference (kad's backward on the interpreter in f64 mode, on CPU copies), as
    kad.check_backward does for Triton kernels.  Runs the forward on args (the outputs are
    written), draws seeded normal output gradients and calls my_backward(*args, *d_outs) (the
    forward's arguments after it ran, then one gradient per declared output in C order), which
    returns the input gradients: a tensor, a tuple in the order of inputs=, or a dict by name.
    To run a backward kernel of CUDA C there: kad.cuda.kernel(source, name)[grid, block](...).
    Returns kad.check's BackwardReport (str(): the table; .ok)."""
    from .autograd import f64_mode
    from .check import _backward_report
    if not isinstance(k, CudaKernel):
        raise TypeError("kad.cuda.check_backward: pass the kernel kad.cuda.differentiable returned")
    grid, block = _dims(grid, "grid", k.kernel), _dims(block, "block", k.kernel)
    args = list(args)
    _, spec = k.specialization(block, args)
    k._bind(spec, args)
    names = [n for n, _ in spec.params]
    pre = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
    by = dict(zip(names, pre))
    outs = [n for n in names if n in k.outputs]
    wrt = [n for n in k.inputs if by[n].is_floating_point()]
    gen = torch.Generator().manual_seed(seed)
    d_outs = [torch.randn(by[n].shape, generator=gen, dtype=torch.float64).to(by[n].dtype).to(by[n].device)
              for n in outs]

    def grads(values, cast):
        """kad's gradients of wrt through the autograd path, on copies of the pre-launch values."""
        leaves = {n: cast(by[n]).requires_grad_() for n in wrt}
        call = [leaves[n].clone() if n in leaves else cast(v) if isinstance(v, torch.Tensor) else v
                for n, v in zip(names, values)]
        with torch.enable_grad():
            r = k[grid, block](*call)
        ys = r if isinstance(r, tuple) else (r,)
        gs = torch.autograd.grad(ys, [leaves[n] for n in wrt], [cast(d) for d in d_outs], allow_unused=True)
        return {n: (torch.zeros_like(leaves[n]) if g is None else g) for n, g in zip(wrt, gs)}

    mine = grads(pre, lambda t: t.detach().clone())
    with f64_mode():
        ref = grads(pre, lambda t: t.detach().to("cpu", torch.float64 if t.is_floating_point() else t.dtype).clone())
    with torch.no_grad():
        k[grid, block](*args)
        theirs = my_backward(*args, *d_outs)
    return _backward_report(k.kernel, theirs, list(k.inputs), wrt, mine, ref, by)
