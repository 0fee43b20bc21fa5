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

import contextlib
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

import torch

from . import _capi
from ._capi import KadError
from torch.autograd.graph import increment_version

from . import _ops
from .autograd import _compiling, _cpu_mode, _forward_ad, _functorch_active, run_cpu

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
_INT_RANGE = {"i32": (-2**31, 2**31 - 1), "u32": (0, 2**32 - 1), "i64": (-2**63, 2**63 - 1), "u64": (0, 2**64 - 1),
              "i16": (-2**15, 2**15 - 1), "i8": (-128, 127), "u8": (0, 255)}

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


_PROPS: dict = {}


def _props(dev):
    """torch.cuda.get_device_properties(dev), once per device index (each call costs microseconds)."""
    i = dev.index if dev.index is not None else torch.cuda.current_device()
    p = _PROPS.get(i)
    if p is None:
        p = _PROPS[i] = torch.cuda.get_device_properties(i)
    return p


def _check_shared_mem(name, shared_mem, dev):
    """A ValueError for a dynamic shared memory size that is not an int in [0, the device's
    per-block limit] (48 KiB without a device: what a launch gets without opting in)."""
    if not isinstance(shared_mem, int) or isinstance(shared_mem, bool) or shared_mem < 0:
        raise ValueError(f"kad.cuda: {name}: shared_mem={shared_mem!r}: the dynamic shared memory is a "
                         f"number of bytes, an int >= 0")
    limit = 48 * 1024
    if dev is not None:
        limit = getattr(_props(dev), "shared_memory_per_block", limit)
    if shared_mem > limit:
        raise ValueError(f"kad.cuda: {name}: shared_mem={shared_mem} bytes is above the device's limit of "
                         f"{limit} bytes per block (a launch without cudaFuncSetAttribute's opt-in)")


def _read_source(source, kernel):
    """(filename, text) of source, a path or the source text itself."""
    if "\n" not in source and os.path.isfile(source):
        with open(source, encoding="utf-8") as f:
            return source, f.read()
    if "__global__" not in source:
        raise FileNotFoundError(f"kad.cuda: {source!r} is neither a file nor CUDA source text "
                                f"(no __global__ function in it)")
    return f"<{kernel}>.cu", source


_C_SIZES = {"float": 4, "double": 8, "half": 2, "__half": 2, "__nv_bfloat16": 2, "nv_bfloat16": 2, "int": 4,
            "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4, "int64_t": 8, "uint64_t": 8, "long long": 8,
            "char": 1, "unsigned char": 1, "int8_t": 1, "uint8_t": 1, "short": 2, "int16_t": 2, "float2": 8,
            "float4": 16, "double2": 16, "int2": 8, "int4": 16}
_EXTERN_SHARED = re.compile(r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?"
                            r"((?:unsigned\s+|long\s+)?[A-Za-z_]\w*)\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?"
                            r"([A-Za-z_]\w*)\s*\[\s*\]")


def _extern_shared(text):
    """(name, C element type) of each `extern __shared__ T name[]` of the source."""
    return [(m.group(2), " ".join(m.group(1).split())) for m in _EXTERN_SHARED.finditer(text)]


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

    def grad_access(self, wrt, out, det):
        """param_access() of grad(wrt, out, det), computed once."""
        key = ("access", wrt, out, det)
        a = self.grads.get(key)
        if a is None:
            a = self.grads[key] = self.grad(wrt, out, det).param_access()
        return a

    def check_launch(self, wrt, out, det, grid, values):
        """grad(wrt, out, det).check_launch(grid, values), once per grid and integer arguments
        (what the conditions read): a launch that passed is not checked again."""
        key = ("checked", wrt, out, det, grid, tuple(v for v in values if isinstance(v, int)))
        if key not in self.grads:
            self.grad(wrt, out, det).check_launch(grid, values)
            self.grads[key] = True

    def jvp(self, wrt, out):
        """kad's jvp kernel (kad_jvp): the runtime parameters, then t_<wrt>..., t_<out>..."""
        key = ("jvp", wrt, out)
        with self.lock:
            k = self.grads.get(key)
            if k is None:
                k = self.grads[key] = self.k.jvp(list(wrt), list(out))
            return k

    def jvp_grad(self, wrt, out, det):
        """The reverse mode of the jvp kernel w.r.t. the primal inputs wrt for cotangents on its
        output tangents (second derivatives): the jvp kernel's parameters, d_t_<out>..., d_<wrt>..."""
        key = ("jvp_grad", wrt, out, det)
        jk = self.jvp(wrt, out)
        with self.lock:
            k = self.grads.get(key)
            if k is None:
                k = self.grads[key] = jk.grad(list(wrt), ["t_" + n for n in out], deterministic=det)
            return k


class CudaKernel:
    """A differentiable CUDA C / HIP kernel: k[grid, block](*args, shared_mem=0, stream=None)."""

    def __init__(self, source: str, kernel: str, inputs: Sequence[str], outputs: Sequence[str],
                 template: Mapping[str, Any] | None = None, hip: bool | None = None,
                 deterministic: bool = True, _plain: bool = False, include_dirs: Sequence[str] = (),
                 while_cap: int = 0) -> None:
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
        if while_cap:  # the tape capacity of a `while` loop kad finds no bound for (kad grad --while-cap)
            self._ctx.set_tape_options(while_cap, 0)
        if isinstance(include_dirs, str):
            raise TypeError("kad.cuda: include_dirs is a list of directories")
        self.include_dirs = tuple(os.path.abspath(os.fspath(d)) for d in include_dirs)
        for d in self.include_dirs:
            self._ctx.add_cuda_include_dir(d)
        self._ctx.add_cuda_source(self.filename, self.text)  # errors in the source: now, located
        self.__name__ = kernel  # (kad's operators name the kernel so in their errors)
        self._op_id = _ops.register_kernel(f"kad.cuda:{self.filename}:{kernel}", self)
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

        def call(*args: Any, shared_mem: int = 0, stream: Any = None, **by_name: Any) -> Any:
            if by_name:
                raise TypeError(f"kad.cuda: {self.kernel}: arguments are passed in the C signature's order, "
                                f"positionally, as in a <<<grid, block>>> launch; got {', '.join(by_name)}=")
            return self.run(grid, block, args, shared_mem=shared_mem, stream=stream)
        return call

    # ---- specialization ----

    def _spec(self, template, block):
        key = (_targs(template), block)
        with self._lock:
            s = self._specs.get(key)
            if s is None:
                try:
                    s = self._specs[key] = _Spec(self._ctx.specialize_cuda(self.kernel, key[0], block))
                except KadError as e:
                    if "is sized at launch" not in str(e):
                        raise
                    raise KadError(f"{e}\n(kad.cuda: the launch's shared_mem= bytes size it, or template="
                                   f"{{'NAME': elements}})") from None
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
                       template: Mapping[str, Any] | None = None,
                       shared_mem: int = 0) -> tuple[dict[str, Any], _Spec]:
        """(template arguments, kad Kernel) of a launch with this block and these arguments: the
        type template parameters not given by template= take the dtype of the first tensor argument
        whose parameter uses them (AT_DISPATCH's rule; every such tensor must then agree); an
        `extern __shared__ T name[]` not given by template= holds shared_mem // sizeof(T) elements
        (the launch's dynamic shared memory, as CUDA sizes it)."""
        block = _dims(block, "block", self.kernel)
        template = {**self.template, **(template or {})}
        ext = self.__dict__.get("_ext_shared")
        if ext is None:
            ext = self._ext_shared = _extern_shared(self.text)
        for name, ctype in ext:
            if name in template or not shared_mem:
                continue
            size = _C_SIZES.get(ctype)
            if size is None and ctype in template:  # a template type: its dtype's size
                size = torch.empty((), dtype=template[ctype]).element_size() \
                    if isinstance(template[ctype], torch.dtype) else None
            if size:
                template[name] = shared_mem // size
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
            if self.hip:  # <hip/hip_runtime.h> and friends, mapped to CUDA's names
                inc.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "hip_on_cuda"))
            lib = build_module(text, self.kernel, _arch(dev), inc)
            fname = f"kad_launch_{self.kernel}"
            fn = getattr(lib, fname)
            fn.restype = __import__("ctypes").c_int
            hit = spec.grads[key] = (lib, fn, _parse_launcher(text, fname))
        return hit

    def _generated_so(self, spec, kind, wrt, out, dev):
        """(launcher, its ABI) of the generated jvp (kind "jvp": launch_<kernel>_jvp) or of the
        jvp kernel's reverse mode ("jvp_bwd": launch_<kernel>_jvp_bwd), compiled by nvcc."""
        key = (kind, wrt, out, _arch(dev))
        hit = spec.grads.get(key)
        if hit is None:
            if kind == "jvp":
                text = spec.k.jvp_module_cuda(list(wrt), list(out))
            else:
                text = spec.jvp(wrt, out).grad_module_cuda(list(wrt), ["t_" + n for n in out],
                                                           deterministic=self.deterministic)
            lib = build_module(text, f"{self.kernel}_{kind}", _arch(dev))
            fname = f"launch_{self.kernel}_{kind}"
            fn = getattr(lib, fname)
            fn.restype = __import__("ctypes").c_int
            hit = spec.grads[key] = (fn, _parse_launcher(text, fname))
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
        if len(args) != len(params):
            sig = ", ".join(f"{_c_type(t)} {n}" for n, t in params)
            raise TypeError(f"kad.cuda: {name} takes {len(params)} arguments ({sig}), {len(args)} given")
        known = {n for n, _ in params}
        for n in self.inputs + self.outputs:
            if n not in known:
                sig = ", ".join(f"{_c_type(t)} {n}" for n, t in params)
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
                elif ty in _INT_RANGE and not _INT_RANGE[ty][0] <= v <= _INT_RANGE[ty][1]:
                    lo, hi = _INT_RANGE[ty]
                    raise ValueError(f"kad.cuda: {name}: argument '{n}' is {_c_type(ty)}, which holds {lo} to {hi}: "
                                     f"{v} does not fit (the kernel would see it wrapped); change the C type to "
                                     f"int64_t or pass a smaller value")
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

    def _expand_accessors(self, args):
        """args with each tensor passed for a PackedTensorAccessor parameter followed by its sizes and
        strides (kad's parameters NAME, NAME_size<k>, NAME_stride<k>)."""
        acc = self.__dict__.get("_accessors")
        if acc is None:  # the source's, read once: (accessor ranks by name, the C parameter names)
            acc = self._accessors = (_accessor_params(self.text, self.kernel), _source_params(self.text, self.kernel) or [])
        acc, cnames = acc
        if not acc:
            return list(args)
        out = []
        for i, a in enumerate(args):
            name = cnames[i] if i < len(cnames) else None
            if name not in acc:
                out.append(a)
                continue
            if not isinstance(a, torch.Tensor) or a.dim() != acc[name]:
                raise TypeError(f"kad.cuda: {self.kernel}: argument '{name}' is a {acc[name]}-dimensional tensor "
                                f"accessor: pass a tensor of {acc[name]} dimensions, got "
                                f"{tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__}")
            if a.device.type != "cpu":
                raise NotImplementedError(f"kad.cuda: {self.kernel}: kernels taking a PackedTensorAccessor run on "
                                          f"CPU tensors (kad's interpreter) only: the GPU launch would need torch's "
                                          f"headers in nvcc's build, which kad.cuda does not set up yet")
            out += [a, *a.shape, *a.stride()]
        return out

    def run(self, grid: Dims, block: Dims, args: Sequence[Any], shared_mem: int = 0, stream: Any = None) -> Any:
        args = self._expand_accessors(args)
        if _compiling() or _functorch_active() or _forward_ad._current_level >= 0:
            # torch.compile traces this (dynamo) / a torch.func transform or forward mode runs: the
            # launch is a call of kad's custom operators (_ops.py), shared with the Triton path
            return self._run_op(grid, block, args, shared_mem, func=not _compiling())
        grid = _dims(grid, "grid", self.kernel)
        block = _dims(block, "block", self.kernel)
        launch, values, names = self._prepare(grid, block, list(args), shared_mem, stream)
        spec = launch.spec
        by = dict(zip(names, values))
        grad = torch.is_grad_enabled()
        if grad:
            self._check_undeclared(by)
        acc = spec.access
        outs = [n for n in names if n in self.outputs]
        others = [n for n in names if isinstance(by[n], torch.Tensor) and n not in self.outputs
                  and n not in self.inputs]
        scratch = [n for n in others if acc.get(n, 0) & 2]
        # the tensors autograd sees modified in place: the outputs, or their bases when they are views
        # (after an in-place change of a base, every view of it reads its history from the base)
        dirty, dirty_of = [], {}
        for n in outs:
            t = by[n]
            d = t if t._base is None else t._base
            i = next((j for j, e in enumerate(dirty) if e is d), None)
            if i is None:
                i = len(dirty)
                dirty.append(d)
            dirty_of[n] = i
        ins = [n for n in names if n in self.inputs and n not in self.outputs]
        needed = [n for n in ins if by[n].requires_grad] if grad else []
        in_graph = grad and any(d.requires_grad for d in dirty)
        if not (needed or in_graph):
            launch.forward(values, [by[n] for n in outs + scratch])
            for n in outs + scratch:
                increment_version(by[n])  # written through a pointer: what autograd saved of it is stale
            return _result([by[n] for n in outs])
        for n in outs:
            for m in names:
                if m != n and isinstance(by[m], torch.Tensor) and _shares(by[n], by[m]):
                    raise ValueError(f"kad.cuda: {self.kernel}: output '{n}' shares memory with '{m}': kad "
                                     f"differentiates kernels whose outputs are buffers of their own")
        # outputs updated in place: declared inputs too, loaded by the kernel, or already part of the
        # graph; the gradient of their value before the launch flows back (docs/AD.md, "In-place buffers")
        inout = [n for n in outs if n in self.inputs or dirty[dirty_of[n]].requires_grad or acc.get(n, 0) & 1]
        # the backward's launch conditions (a loop's stores distinct only for N >= 64...): refused
        # now, located, rather than after the forward when the backward runs
        wrt = tuple(needed + inout)
        spec.check_launch(wrt, tuple(outs), self.deterministic, grid, values)
        if launch.device is not None:  # compiled (or refused, located) before the forward runs
            self._forward_so(spec, launch.template, launch.device)
            self._backward_so(spec, wrt, tuple(outs), launch.device)
        run = _Run(launch, values, names, ins, others, scratch, outs, dirty, dirty_of, inout)
        _CudaFunction.apply(run, *[by[n] for n in ins + others], *dirty)
        return _result([by[n] for n in outs])

    def _check_hip_on_cuda(self):
        """A HIP source on CUDA tensors: nvcc compiles it through kad's HIP-on-CUDA headers
        (hip_on_cuda/hip/*.h), unless its kernels use the warp: kad reads a .hip file with AMD's
        64-lane wavefronts, an NVIDIA warp has 32 lanes, so the two would compute different things."""
        if getattr(torch.version, "hip", None):
            raise NotImplementedError(f"kad.cuda: {self.kernel}: ROCm tensors: kad.cuda compiles with nvcc, not "
                                      f"hipcc; the HIP source runs on CPU tensors")
        body = re.sub(r"//[^\n]*|/\*.*?\*/", " ", self.text, flags=re.S)
        warp = re.search(r"\b(__shfl\w*|warpSize|__ballot\w*|__any\w*|__all\w*|__activemask|__lane_id)\b", body)
        if warp and self.filename.endswith(".hip"):
            raise NotImplementedError(
                f"kad.cuda: {self.kernel}: this HIP source uses the warp ({warp.group(1)}), which kad reads as AMD's "
                f"64-lane wavefront (a .hip file); on an NVIDIA GPU a warp has 32 lanes, so the kernel nvcc would "
                f"run is not the one kad differentiates. Run it on CPU tensors (kad's interpreter), or give it "
                f"as CUDA C (a .cu file, 32-lane warps)")

    def _prepare(self, grid, block, args, shared_mem, stream):
        """(_Launch, argument values in C order (tensors as passed, scalars as Python numbers),
        parameter names) of one launch, its arguments checked against the C signature and the
        device's limits."""
        devs = {a.device for a in args if isinstance(a, torch.Tensor)}
        dev = next(iter(devs)) if len(devs) == 1 else None
        on_gpu = dev is not None and dev.type == "cuda"
        if on_gpu and self.hip and not self.__dict__.get("_hip_ok"):
            self._check_hip_on_cuda()
            self._hip_ok = True  # it reads the source alone
        _check_limits(self.kernel, grid, block, _device_limits(dev) if on_gpu else None)
        _check_shared_mem(self.kernel, shared_mem, dev if on_gpu else None)
        template, spec = self.specialization(block, args, shared_mem=shared_mem)
        mode, _ = self._bind(spec, args)
        params = spec.params
        values = [a.item() if isinstance(a, torch.Tensor) and not p[1].startswith("*") else a
                  for a, p in zip(args, params)]
        launch = _Launch(self, spec, template, grid, block, mode, dev if on_gpu else None, shared_mem, stream)
        return launch, values, [n for n, _ in params]

    # ---- as kad's custom operators (_ops.py): torch.compile, torch.func, forward mode ----

    def _run_op(self, grid, block, args, shared_mem, func):
        """The launch as kad::launch (under torch.compile traced by dynamo: plain Python on the
        call's arguments; _op_names runs as a constant).  The operator returns the outputs' new
        values, copied into the outputs: they are still written in place."""
        grid = _dims(grid, "grid", self.kernel)
        block = _dims(block, "block", self.kernel)
        args = list(args)
        names = _op_names(self._op_id, block, tuple(str(a.dtype) if isinstance(a, torch.Tensor) else None
                                                     for a in args), len(args))
        def refuse(n, v):
            raise TypeError(f"kad.cuda: {self.kernel}: argument '{n}': got {type(v).__name__}")
        ins, others, outs, ints, floats, layout = _ops.split_args(zip(names, args), self.inputs, self.outputs,
                                                                  refuse)
        if torch.is_grad_enabled():
            for n, k, i in layout:
                if k == "t" and others[i].requires_grad and others[i].is_floating_point():
                    raise ValueError(f"kad.cuda: {self.kernel}: argument '{n}' is a tensor that requires grad, "
                                     f"but '{n}' is not in inputs={list(self.inputs)}: its gradient would be "
                                     f"silently missing; add it to inputs=[...], or pass {n}.detach()")
        layout.append((_BLOCK_KEY, "c", ",".join(map(str, block))))
        layout.append((_SMEM_KEY, "c", int(shared_mem or 0)))
        key = _ops.kernel_key(self._op_id, tuple(layout), (3,))
        flat = list(grid)
        if func:  # torch.func / forward mode: through a Function with setup_context
            new = _ops.Function.apply(key, (len(ins), len(others), ints, floats, flat), *ins, *others, *outs)
        else:
            new = torch.ops.kad.launch(key, ins, others, outs, ints, floats, flat)
        for o, v in zip(outs, new):
            o.copy_(v)
        return _result(outs)

    def _op_launch(self, grid, kw):
        """(_Launch, values, names) of an operator call: kw the arguments by name in C order, then
        the block and the dynamic shared memory (_run_op's layout)."""
        block = tuple(int(b) for b in kw[_BLOCK_KEY].split(","))
        args = [v for n, v in kw.items() if n not in (_BLOCK_KEY, _SMEM_KEY)]
        return self._prepare(_dims(grid, "grid", self.kernel), block, args, kw[_SMEM_KEY], None)

    def _op_forward(self, grid, kw):
        """kad::launch's forward, grad mode off; a tensor the kernel stores through that is not a
        declared output is refused (the operator declares it read only)."""
        launch, values, names = self._op_launch(grid, kw)
        acc = launch.spec.access
        written = [n for n, v in zip(names, values) if isinstance(v, torch.Tensor) and acc.get(n, 0) & 2
                   and n not in self.outputs]
        if written:
            raise ValueError(f"kad.cuda: {self.kernel} stores through {', '.join(repr(n) for n in written)}, "
                             f"which kad.cuda.differentiable does not declare: under torch.compile and torch.func "
                             f"a kernel may write only its declared outputs; add {written[0]!r} to outputs=[...]")
        by = dict(zip(names, values))
        launch.forward(values, [by[n] for n in names if n in self.outputs])

    def _op_loads(self, kw):
        """The pointer parameters the kernel loads through (any grid)."""
        launch, _, names = self._op_launch((1,), kw)
        acc = launch.spec.access
        return {n for n in names if acc.get(n, 0) & 1}

    def _op_backward(self, grid, kw, need_in, need_out, grads):
        """kad::launch_bwd: name -> gradient of the inputs need_in and of the outputs' values before
        the launch need_out, for the output gradients grads (name -> tensor); kw holds the values
        before the launch."""
        launch, values, names = self._op_launch(grid, kw)
        acc = launch.spec.access
        outs = [n for n in names if n in self.outputs]
        inout = [n for n in outs if n in self.inputs or n in need_out or acc.get(n, 0) & 1]
        by = dict(zip(names, values))
        old = {n: by[n] for n in inout if acc.get(n, 0) & 1}
        d = _backward(launch, list(need_in), inout, outs, [], by, old, grads)
        return {n: d[n] for n in list(need_in) + list(need_out)}

    def _op_jvp(self, grid, kw, t_ins, t_outs):
        """Forward mode (_ops.jvp_launch): kad's jvp kernel on the call kw (the outputs' tensors are
        written with the new values), writing the outputs' tangents into t_outs (name -> tensor
        holding the tangent of the output's value before the launch) from the inputs' t_ins."""
        launch, values, names = self._op_launch(grid, kw)
        by = dict(zip(names, values))
        outs = [n for n in names if n in self.outputs]
        wrt = [n for n in names if n in self.inputs and (n in t_ins or n in t_outs)]
        tangent = {**t_ins, **t_outs}  # an in-place name: one tangent, its old value's
        for n in wrt + outs:
            by["t_" + n] = tangent[n]
        launch.jvp(tuple(wrt), tuple(outs), by, [by[n] for n in outs] + [tangent[n] for n in outs])


_BLOCK_KEY, _SMEM_KEY = "kad.block", "kad.shared_mem"  # _run_op's layout entries beyond the parameters


@torch.compiler.assume_constant_result
def _op_names(kid, block, dtypes, nargs):
    """The C parameter names of the kernel kid for a launch with this block and tensors of these
    dtypes (None: not a tensor); dynamo runs it as a constant (specializing is kad's C code)."""
    k = _ops._KERNELS[kid]
    stand_in = [torch.empty(0, dtype=getattr(torch, d.split(".")[-1])) if d else 0 for d in dtypes]
    names = [n for n, _ in k.specialization(block, stand_in)[1].params]
    if nargs != len(names):
        sig = ", ".join(names)
        raise TypeError(f"kad.cuda: {k.kernel} takes {len(names)} arguments ({sig}), {nargs} given")
    return tuple(names)


def _shares(a, b):
    if a.numel() == 0 or b.numel() == 0:
        return False
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _result(outs):
    return None if not outs else outs[0] if len(outs) == 1 else tuple(outs)


def _alias(v, orig, detached):
    """v detached: the detached dirty tensor where v is one of orig (the dirty tensors)."""
    if not isinstance(v, torch.Tensor):
        return v
    for o, d in zip(orig, detached):
        if v is o:
            return d
    return v.detach()


def _cut(g, base, y):
    """The part of a dirty tensor's gradient g that belongs to the output y, a view of base
    (or base itself), laid out like y."""
    if g is None or y is base:
        return g
    if g.stride() != base.stride():
        full = torch.empty_strided(base.size(), base.stride(), dtype=g.dtype, device=g.device)
        full.copy_(g)
        g = full
    return g.as_strided(y.size(), y.stride(), y.storage_offset() - base.storage_offset())


def _backward(launch, need, inout, outs, scratch, by, old, out_grads):
    """kad's backward of one launch: name -> gradient of the inputs need and of the values before
    the launch of the in-place outputs inout, for out_grads (output name -> gradient or None).
    by: the launch's values by name (tensors not written by this function; old: the in-place
    outputs' values before the launch where the kernel loads them)."""
    dk, spec = launch.dk, launch.spec
    wrt = tuple(need) + tuple(inout)
    g = spec.grad(wrt, tuple(outs), dk.deterministic)
    gacc = spec.grad_access(wrt, tuple(outs), dk.deterministic)
    by = dict(by)
    for n in outs + scratch:
        if n not in old and gacc.get(n, 0) & 1 and n in by and n not in inout:
            # the forward never reads it, so a recomputing backward does not either
            raise KadError(f"kad.cuda: {dk.kernel}: the backward reads '{n}', which the forward only "
                           f"writes: kad's backward would read what the forward stored; refused")
    for n, v in old.items():
        by[n] = v.clone()  # the value before the launch (the backward may recompute into it)
    for n, _ in g.params:
        if n in by and (n in outs or n in scratch) and n not in old and gacc.get(n, 0) & 2:
            by[n] = torch.empty_like(by[n])  # the backward recomputes the output: not into the user's
    dx = {}
    for n in outs:
        y, gr = by[n], out_grads.get(n)
        if gr is None:
            d = torch.zeros_like(y)
        else:
            d = gr.to(y.dtype).contiguous()
            if n in inout or gacc.get("d_" + n, 0) & 2:
                d = d.clone()  # the backward writes it: not into autograd's tensor
        by["d_" + n] = d
        if n in inout:  # one buffer: the output's gradient in, the old value's out
            dx[n] = by["d_" + n + "_part"] = d
    # the generated CUDA C launcher zero-fills every input gradient itself (cudaMemsetAsync); kad's
    # interpreter adds into what it is given
    fresh = torch.zeros_like if launch.device is None else torch.empty_like
    for n in need:
        # d_<x>_part: a folded or site-rows gradient, whose partials and sum the interpreter's
        # plan runs itself into the gradient passed there (docs/AD.md, "Folding")
        dx[n] = by["d_" + n] = by["d_" + n + "_part"] = fresh(by[n])
    missing = [n for n, _ in g.params if n not in by]
    if missing:
        raise KadError(f"kad.cuda: {dk.kernel}: the backward takes {missing}, which this binding does "
                       f"not know (a kad version mismatch?)")
    launch.backward(g, wrt, tuple(outs), by, dx)
    return dx


class _Run:
    """One differentiable launch, forward to backward: detached aliases only.

    The Function's tensor arguments (slots) are the declared inputs (not outputs), the other
    tensors (read-only data, scratch the kernel writes), then the dirty tensors: the outputs, or
    their bases for views.  An output updated in place (inout: a declared input too, loaded by the
    kernel, or part of the graph) gets the gradient of its value before the launch, read from a
    copy taken before the forward where the kernel loads it; elements the kernel does not write
    pass their gradient through."""

    def __init__(self, launch, values, names, ins, others, scratch, outs, dirty, dirty_of, inout):
        self.launch = launch
        self.dk, self.spec, self.grid, self.mode = launch.dk, launch.spec, launch.grid, launch.mode
        self.names = names
        self.values = values  # C order; tensors replaced by detached aliases in forward
        self.ins, self.others, self.scratch, self.outs = ins, others, scratch, outs
        self.dirty, self.dirty_of, self.inout = dirty, dirty_of, inout
        self.saved = [n for n in ins + others if n not in scratch]
        acc = self.spec.access
        # buffers the kernel reads and writes (outputs updated in place, scratch it accumulates into):
        # the backward recomputes from their value before the launch
        self.old = {n: v.detach().clone() for n, v in zip(names, values)
                    if (n in outs or n in scratch) and acc.get(n, 0) & 1}

    def forward(self):
        orig = self.dirty
        self.dirty = [d.detach() for d in orig]
        # detached aliases; an output that is its own dirty tensor keeps `values[i] is dirty[j]`
        self.values = [_alias(v, orig, self.dirty) for v in self.values]
        by = dict(zip(self.names, self.values))
        self.launch.forward(self.values, [by[n] for n in self.outs + self.scratch])
        for n in self.scratch:
            increment_version(by[n])  # written through a pointer: what autograd saved of it is stale

    def first_order(self, needs, saved, grads):
        """The Function's backward without its leading None: needs (per slot), the saved tensors
        (Run.saved's order), the dirty tensors' gradients."""
        ni, no = len(self.ins), len(self.others)
        need = [n for n, nd in zip(self.ins, needs[:ni]) if nd]
        need_old = [i for i in range(len(self.dirty)) if needs[ni + no + i]]
        result = [None] * (ni + no + len(self.dirty))
        if not (need or need_old) or all(g is None for g in grads):
            return result
        by = dict(zip(self.names, self.values))
        by.update(zip(self.saved, saved))
        out_grads = {n: _cut(grads[self.dirty_of[n]], self.dirty[self.dirty_of[n]], by[n]) for n in self.outs}
        d = _backward(self.launch, need, self.inout, self.outs, self.scratch, by, self.old, out_grads)
        for i, n in enumerate(self.ins):
            if n in d:
                result[i] = d[n]
        for i in need_old:
            # the old value's gradient: the dirty tensor's gradient with each in-place output's part
            # replaced by what the backward made
            base, g = self.dirty[i], grads[i]
            full = torch.empty_strided(base.size(), base.stride(), dtype=base.dtype, device=base.device)
            if g is None:
                full.zero_()
            else:
                full.copy_(g)
            for n in self.inout:
                if self.dirty_of[n] == i:
                    y = by[n]
                    part = full if y is base else \
                        full.as_strided(y.size(), y.stride(), y.storage_offset() - base.storage_offset())
                    part.copy_(d[n])
            result[ni + no + i] = full
        return result


class _CudaFunction(torch.autograd.Function):
    """apply(run, *ins, *others, *dirty) -> the dirty tensors (marked so)."""

    @staticmethod
    def forward(ctx, run, *tensors):
        run.forward()
        ctx.run = run
        t = dict(zip(run.ins + run.others, tensors))
        ctx.save_for_backward(*[t[n] for n in run.saved])
        dirty = tensors[len(run.ins) + len(run.others):]
        ctx.mark_dirty(*dirty)
        ctx.set_materialize_grads(False)
        return dirty[0] if len(dirty) == 1 else tuple(dirty)

    @staticmethod
    def backward(ctx, *grads):
        run = ctx.run
        saved = ctx.saved_tensors  # PyTorch refuses here an input changed in place since the forward
        needs = ctx.needs_input_grad[1:]
        if torch.is_grad_enabled():
            # create_graph=True: the same gradients, computed by a differentiable op
            _check_second_order(run)
            return (None, *_CudaBackward.apply(run, needs, *saved, *grads))
        return (None, *run.first_order(needs, saved, grads))


def _check_second_order(run):
    name = run.dk.kernel
    if run.inout:
        raise RuntimeError(
            f"kad.cuda: second derivatives through '{name}' are not supported for outputs updated in place "
            f"({', '.join(repr(n) for n in run.inout)}: declared as inputs too, loaded by the kernel, or already "
            f"part of the graph): pass fresh output tensors (e.g. torch.empty_like), or compute this gradient "
            f"without create_graph=True")
    by = dict(zip(run.names, run.values))
    for n in run.outs:
        if by[n] is not run.dirty[run.dirty_of[n]]:
            raise RuntimeError(
                f"kad.cuda: second derivatives through '{name}' are not supported when the output '{n}' is a "
                f"view of another tensor: pass a fresh tensor (e.g. torch.empty_like), or compute this "
                f"gradient without create_graph=True")


class _CudaBackward(torch.autograd.Function):
    """The backward of a kad.cuda launch as a differentiable op (create_graph=True), as
    autograd._KadBackward for Triton kernels: apply(run, needs, *saved, *dirty_grads) -> the
    slots' gradients gx = J(x)^T gy.  Its backward, given the cotangents v of the gx, runs kad's
    jvp kernel K_jvp of the forward: gy's gradient is J(x) v (K_jvp's output tangents for the
    input tangents v), x's is H_gy v = d/dx <gy, J(x) v> (the reverse mode of K_jvp for the
    cotangent gy on its output tangents).  The other tensor arguments are constants; third
    derivatives are refused."""

    @staticmethod
    def forward(ctx, run, needs, *tensors):
        ns = len(run.saved)
        saved, grads = tensors[:ns], tensors[ns:]
        res = run.first_order(needs, saved, grads)
        ctx.run, ctx.needs = run, needs
        ctx.consts = [t.detach() for t in saved]
        ctx.save_for_backward(*saved, *grads)
        ctx.set_materialize_grads(False)
        return tuple(res)

    @staticmethod
    def backward(ctx, *vs):
        run = ctx.run
        if torch.is_grad_enabled():
            raise RuntimeError(
                f"kad.cuda: third derivatives through '{run.dk.kernel}' are not supported: the backward of its "
                f"backward is not differentiable; take at most two derivatives through kad kernels")
        ns, ni, no = len(run.saved), len(run.ins), len(run.others)
        tensors = ctx.saved_tensors
        saved, grads = tensors[:ns], tensors[ns:]
        need = ctx.needs_input_grad[2:]  # per saved tensor, then per dirty gradient
        by = dict(zip(run.names, run.values))
        by.update(zip(run.saved, [t.detach() for t in saved]))
        wrt = [n for i, n in enumerate(run.ins) if ctx.needs[i]]  # the inputs gx was computed for
        v_of = {n: vs[i] for i, n in enumerate(run.ins) if n in wrt}
        outs = [n for n in run.outs if grads[run.dirty_of[n]] is not None]
        pos = {n: i for i, n in enumerate(run.saved)}
        need_x = [n for n in wrt if n in pos and need[pos[n]]]
        need_y = [n for n in outs if need[ns + run.dirty_of[n]]]
        result = [None] * (ns + len(grads))
        if not wrt or not outs or not (need_x or need_y) or all(v_of[n] is None for n in wrt):
            return (None, None, *result)
        launch = run.launch
        wrt_t, outs_t = tuple(wrt), tuple(outs)

        def fresh():  # fresh outputs (the jvp kernel writes them again), copies of the scratch buffers
            t = dict(by)
            for n in run.outs:
                t[n] = torch.empty_like(by[n])
            for n in run.scratch:  # (one the kernel accumulates into: its value before the launch)
                t[n] = (run.old[n] if n in run.old else by[n]).clone()
            for n in wrt:
                t["t_" + n] = torch.zeros_like(by[n]) if v_of[n] is None else v_of[n].to(by[n].dtype).contiguous()
            for n in outs:
                t["t_" + n] = torch.zeros_like(by[n])
            return t
        if need_y:  # J(x) v
            t = fresh()
            launch.jvp(wrt_t, outs_t, t, [t[n] for n in run.outs + run.scratch] + [t["t_" + n] for n in outs])
            for n in need_y:
                result[ns + run.dirty_of[n]] = t["t_" + n]
        if need_x:  # H_gy v: the reverse mode of the jvp kernel
            t = fresh()
            for n in outs:
                t["d_t_" + n] = grads[run.dirty_of[n]].to(by[n].dtype).contiguous().clone()
            for n in wrt:  # (d_<x>_part: a folded gradient, as in _backward)
                t["d_" + n] = t["d_" + n + "_part"] = torch.zeros_like(by[n])
            launch.jvp_grad(wrt_t, outs_t, t, [t[n] for n in run.outs + run.scratch]
                            + [t["t_" + n] for n in outs] + [t["d_" + n] for n in wrt])
            for n in need_x:
                result[pos[n]] = t["d_" + n]
        return (None, None, *result)


def _on_device(dev):
    """torch.cuda.device(dev), or nothing to do where dev is the current device already."""
    if dev.index is None or dev.index == torch.cuda.current_device():
        return contextlib.nullcontext()
    return torch.cuda.device(dev)


class _Launch:
    """Where one launch runs: kad's interpreter (device None) or the GPU, through the forward and
    the generated kernels compiled by nvcc."""

    def __init__(self, dk, spec, template, grid, block, mode, device, shared_mem, stream):
        self.dk, self.spec, self.template, self.grid, self.block = dk, spec, template, grid, block
        self.mode, self.device, self.shared_mem, self.stream = mode, device, int(shared_mem or 0), stream

    def _stream(self):
        s = self.stream
        if s is None:
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what Triton's launcher reads
            if raw is not None:
                return raw(self.device.index if self.device.index is not None else torch.cuda.current_device())
            s = torch.cuda.current_stream(self.device)
        return getattr(s, "cuda_stream", s)

    def forward(self, values, written):
        if self.device is None:
            run_cpu(self.spec.k, self.grid, values, self.mode, written=written)
            return
        lib, fn, sig = self.dk._forward_so(self.spec, self.template, self.device)
        with _on_device(self.device):
            _call(fn, sig, dict(zip([n for n, _ in self.spec.params], values)),
                  self.grid, self._stream(), block=self.block, shared_mem=self.shared_mem, name=self.dk.kernel)

    def backward(self, g, wrt, outs, by, dx):
        if self.device is None:
            run_cpu(g, self.grid, {n: by[n] for n, _ in g.params}, self.mode, written=list(dx.values()))
            return
        lib, fn, sig = self.dk._backward_so(self.spec, tuple(wrt), tuple(outs), self.device)
        with _on_device(self.device):
            _call(fn, sig, by, self.grid, self._stream(), name=self.dk.kernel + "_bwd")

    def jvp(self, wrt, outs, by, written):
        """kad's jvp kernel (outputs and their tangents t_<out> from t_<wrt>), arguments by name."""
        if self.device is None:
            k = self.spec.jvp(wrt, outs)
            run_cpu(k, self.grid, {n: by[n] for n, _ in k.params}, self.mode, written=written)
            return
        fn, sig = self.dk._generated_so(self.spec, "jvp", wrt, outs, self.device)
        with _on_device(self.device):
            _call(fn, sig, by, self.grid, self._stream(), name=self.dk.kernel + "_jvp")

    def jvp_grad(self, wrt, outs, by, written):
        """The reverse mode of the jvp kernel: d_<wrt> from d_t_<out>, arguments by name."""
        if self.device is None:
            k = self.spec.jvp_grad(wrt, outs, self.dk.deterministic)
            run_cpu(k, self.grid, {n: by[n] for n, _ in k.params}, self.mode, written=written)
            return
        fn, sig = self.dk._generated_so(self.spec, "jvp_bwd", wrt, outs, self.device)
        with _on_device(self.device):
            _call(fn, sig, by, self.grid, self._stream(), name=self.dk.kernel + "_jvp_bwd")


def _device_limits(dev):
    """(max block dims, max threads per block, max grid dims) of a CUDA device (CUDA's common
    limits where torch does not say)."""
    p = _props(dev)
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
    by name (<d_x>_numel from d_x), stream.  The launcher's argtypes are set once (ctypes then
    converts the Python numbers itself)."""
    extra = {"grid_x": grid[0], "grid_y": grid[1], "grid_z": grid[2], "stream": stream,
             "kad_shared_mem": shared_mem}
    if block is not None:
        extra["block_x"], extra["block_y"], extra["block_z"] = block
    if getattr(fn, "_kad_sig", None) is not sig:
        fn.argtypes = [ct for _, ct, _ in sig]
        fn._kad_sig = sig
    args = []
    for n, ct, is_ptr in sig:
        if n in extra:
            v = extra[n]
        elif n in by:
            v = by[n]
        elif n.endswith("_numel") and n[: -len("_numel")] in by:
            v = by[n[: -len("_numel")]].numel()
        else:
            raise KadError(f"kad.cuda: launcher of {name} takes '{n}', which this binding does not know")
        if isinstance(v, torch.Tensor):
            v = v.data_ptr() if is_ptr else v.item()
        args.append(v)
    rc = fn(*args)
    if rc == _TAPE_OVERFLOW:
        raise KadError(f"kad.cuda: the launch of {name}: a `while` loop ran more iterations than the capacity of "
                       f"its tape, so the backward has no valid gradients (raise the capacity: while_cap=, or "
                       f"bound the loop with a counter compared with an argument; the module's header, "
                       f"kad.cuda.backward_source, gives the capacity)")
    if rc != 0:
        why = (": cudaErrorInvalidValue is a guard of the backward refusing the launch, the module's header "
               "(kad.cuda.backward_source) says which" if name.endswith("_bwd") else "")
        raise RuntimeError(f"kad.cuda: the launch of {name} failed: CUDA error {rc} ({_cuda_error_name(rc)}){why}")


_TAPE_OVERFLOW = -2  # KAD_TAPE_OVERFLOW of the generated launchers (emit_cuda_host.c)


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
    p = _props(dev)
    return f"sm_{p.major}{p.minor}"


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
    flags = ["-O3", "-shared", "-Xcompiler", "-fPIC", f"-arch={arch}", "-std=c++17",
             # constexpr host functions in device code (std::numeric_limits), as PyTorch's extensions build
             "--expt-relaxed-constexpr"] + [f"-I{d}" for d in include]
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


def _source_params(text, kernel):
    """The C parameter names of the __global__ function kernel, in order (comments and default
    arguments dropped), or None where its declaration is not found."""
    body = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
    m = re.search(r"\b__global__\b[^;{}]*?\b" + re.escape(kernel) + r"\s*\(", body)
    if not m:
        return None
    i, depth, start, parts = m.end(), 1, m.end(), []
    while i < len(body) and depth:
        c = body[i]
        if c in "(<[":
            depth += 1
        elif c in ")>]":
            depth -= 1
        if (c == "," and depth == 1) or depth == 0:
            parts.append(body[start:i])
            start = i + 1
        i += 1
    names = []
    for part in parts:
        part = part.split("=", 1)[0].strip()
        if not part or part == "void":
            continue
        ids = re.findall(r"[A-Za-z_]\w*", re.sub(r"\[[^\]]*\]", "", part))
        if not ids:
            return None
        names.append(ids[-1])
    return names


_ACCESSOR = re.compile(r"PackedTensorAccessor(?:32|64)\s*<[^,<>]+,\s*(\d+)")


def _accessor_params(text, kernel):
    """{C parameter name: rank} of the kernel's torch::PackedTensorAccessor32/64 parameters (kad
    lowers each to its data pointer NAME and the ints NAME_size<k>, NAME_stride<k>)."""
    body = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
    m = re.search(r"\b__global__\b[^;{}]*?\b" + re.escape(kernel) + r"\s*\(", body)
    if not m or "PackedTensorAccessor" not in body:
        return {}
    i, depth = m.end(), 1
    while i < len(body) and depth:
        depth += body[i] == "("
        depth -= body[i] == ")"
        i += 1
    out = {}
    for a in re.finditer(_ACCESSOR.pattern + r"[^>]*>\s*(?:const\s+)?([A-Za-z_]\w*)", body[m.end():i]):
        out[a.group(2)] = int(a.group(1))
    return out


# the forward's launcher passes each argument through one of these: a pointer converts to the
# kernel's parameter type (float2 *, a struct's pointer, const or not), a number to its C type
# (an enum's too); a struct by value is built from its members in order
_STUB_HELPERS = """
struct kad_ptr { void *p; template <typename T> __host__ operator T *() const { return (T *)p; } };
template <typename V> struct kad_num { V v; template <typename T> __host__ operator T() const { return (T)v; } };
"""


def forward_stub(text: str, kernel: str, params: Sequence[tuple[str, str]], template: Mapping[str, Any]) -> str:
    """The user's source followed by an extern "C" launcher of its kernel (the forward compiled
    as written: the instantiation for template, the arguments in the C signature's order).  The
    launcher takes kad's parameters (a struct by value as one parameter per member, `p_scale`,
    a vector type's pointer as its element's) and passes each to the kernel's own parameter."""
    names = _template_header(text, kernel)
    targs = []
    if any(t not in template for t in names):
        # kad's front end took the file's one explicit instantiation: the launcher calls it too
        body = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
        insts = {" ".join(m.group(1).split()) for m in re.finditer(
            r"\btemplate\s+(?:__global__\s+)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?"
            + re.escape(kernel) + r"\s*<([^;{}]*?)>\s*\(", body)}
        if len(insts) == 1:
            names = []
            targs = [next(iter(insts))]
    for t in names:
        if t not in template:
            raise KadError(f"kad.cuda: {kernel}: template parameter '{t}' has no value for the GPU launch: "
                           f"give it with template={{'{t}': ...}}")
        v = template[t]
        v = _DTYPE_TO_KAD.get(v, v) if isinstance(v, torch.dtype) else v
        targs.append(_KAD_TO_CXX.get(v, str(v)) if isinstance(v, str) else str(int(v)))
    inst = kernel + (f"<{', '.join(targs)}>" if targs else "")
    decl, conv, half = [], {}, False
    for n, ty in params:
        e = ty.lstrip("*").split("[", 1)[0]
        half |= e in ("fp16", "bf16")
        decl.append(f"{_KAD_TO_CXX[e]} {'*' if ty.startswith('*') else ''}{n}")
        conv[n] = f"kad_ptr{{(void *){n}}}" if ty.startswith("*") else f"kad_num<{_KAD_TO_CXX[e]}>{{{n}}}"
    flat = [n for n, _ in params]
    cnames = _source_params(text, kernel) or flat
    args, i = [], 0
    for c in cnames:
        if i < len(flat) and flat[i] == c:
            args.append(conv[c])
            i += 1
            continue
        members = []  # a struct by value: kad's parameters c_<member>, none of them a C parameter itself
        while i < len(flat) and flat[i].startswith(c + "_") and flat[i] not in cnames:
            members.append(flat[i])
            i += 1
        if not members:  # not the declaration kad read: pass kad's parameters as they are
            args, i = [conv[n] for n in flat], len(flat)
            break
        args.append("{" + ", ".join(members) + "}")
    if i != len(flat):
        args = [conv[n] for n in flat]
    return (text + "\n\n" + ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" if half else "")
            + "#include <stdint.h>\n"
            "// kad.cuda: the forward's launcher\n" + _STUB_HELPERS +
            f'extern "C" int kad_launch_{kernel}(unsigned grid_x, unsigned grid_y, unsigned grid_z, '
            "unsigned block_x, unsigned block_y, unsigned block_z, unsigned kad_shared_mem, "
            + "".join(d + ", " for d in decl) + "cudaStream_t stream)\n{\n"
            f"    {inst}<<<dim3(grid_x, grid_y, grid_z), dim3(block_x, block_y, block_z), kad_shared_mem, "
            f"stream>>>({', '.join(args)});\n"
            "    return (int)cudaGetLastError();\n}\n")


def differentiable(source: str, kernel: str, inputs: Sequence[str], outputs: Sequence[str],
                   template: Mapping[str, Any] | None = None, hip: bool | None = None,
                   deterministic: bool = True, include_dirs: Sequence[str] = (), while_cap: int = 0) -> CudaKernel:
    """A CUDA C / HIP __global__ function as a differentiable kernel (docs/PYTHON.md, "CUDA C /
    HIP kernels"): source a path or the source text, kernel the function's name, inputs the
    pointer parameters to differentiate, outputs those it writes.  template: template arguments
    ({"BLOCK": 256, "scalar_t": torch.float32}; type parameters left out take the dtypes of the
    tensors passed).  include_dirs: where quoted #includes not beside the file are looked for
    (nvcc's -I; a path source's own headers beside it need none).  while_cap: the tape capacity of
    a `while` loop whose trip count kad finds no bound for (its backward records each iteration;
    default 1024 iterations).  Launch as k[grid, block](*args), arguments in the C
    signature's order."""
    return CudaKernel(source, kernel, inputs, outputs, template=template, hip=hip, deterministic=deterministic,
                      include_dirs=include_dirs, while_cap=while_cap)


def backward_source(k: CudaKernel, block: Dims, *args: Any, template: Mapping[str, Any] | None = None,
                    wrt: Sequence[str] | None = None, hip: bool | None = None) -> str:
    """The CUDA C (HIP for a .hip source, or hip=True) module of k's backward for this block
    (kad_grad_module_cuda; docs/EMIT.md "CUDA C"): <kernel>_bwd and its launcher
    launch_<kernel>_bwd.  Template types come from template= or from the tensors of args (the
    launch's arguments, optional).  wrt: the inputs to differentiate (default: k's inputs)."""
    if not isinstance(k, CudaKernel):
        raise TypeError("kad.cuda.backward_source: pass the kernel kad.cuda.differentiable returned")
    _, spec = k.specialization(block, k._expand_accessors(args), template)
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
