"""One launch of a Triton kernel, bound and checked before anything runs.

`kernel[grid](*args, **kwargs)` is turned into a Launch: every parameter of
the kernel with its value (defaults applied; the values triton.heuristics
computes and the autotuner's config filled in), the launch options
(num_warps, ...), the grid evaluated to a tuple, and kad's signature string
for the call -- typed exactly as Triton specializes the arguments:

  tensor          -> *fp32, *bf16, *i64, ... (the tensor's dtype)
  bool            -> i1            int -> i32 if it fits, else i64
  float           -> fp32          parameter annotated with a type (n: tl.int64) -> that type
  tl.constexpr    -> its value: 1024, 1e-06, True, 'gelu', tl.float16, None

and, as Triton's JIT specializes runtime parameters (runtime/jit.py):

  None            -> name=None (a constant: `x_ptr is None` folds)
  int equal to 1  -> name=1 (a constant), unless the parameter is in the
                     kernel's do_not_specialize or has a type annotation

Divisibility by 16 changes no result, so kad does not mirror it.

Everything a launch could get wrong is raised here, before a kernel runs:
unknown or missing arguments (TypeError), a grid that is not 1 to 3
non-negative ints (TypeError/ValueError), a declared input or output that is
not a tensor, tensors on different devices, outputs aliasing each other or an
input, argument values kad cannot type (u64 ints), None for every declared
output.  A declared input or output passed None is absent (specialized to
the constant None as Triton does: no gradient).
"""
import inspect
import operator

import torch

__all__ = ["Launch", "Param", "bind", "params_of", "TORCH_TO_KAD", "FLOAT_DTYPES", "FP8_DTYPES"]

# torch dtype -> kad/Triton element type name.
TORCH_TO_KAD = {
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float64: "fp64",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.int16: "i16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.bool: "i1",
    torch.float8_e5m2: "fp8e5",  # Triton's JIT: float8_e5m2 -> fp8e5, float8_e4m3fn -> fp8e4nv
    torch.float8_e4m3fn: "fp8e4nv",
}
# Float dtypes kad differentiates; fp8 tensors are read and written (not differentiated).
FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
FP8_DTYPES = (torch.float8_e5m2, torch.float8_e4m3fn)

# Keywords of a Triton launch that are not kernel parameters.
LAUNCH_OPTIONS = frozenset({
    "num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
    "launch_pdl", "debug", "ir_override", "instrumentation_mode", "stream",
})

# Triton's runtime scalar annotations (`n: tl.int64`) -> kad types.
_ANNOTATED = {"i1": "i1", "u1": "i1", "i32": "i32", "i64": "i64", "u32": "u32", "fp32": "fp32", "fp64": "fp64"}


class Launch:
    """A bound call.  Fields:
      name      kernel name
      params    [(name, is_constexpr)] in the def's order
      values    name -> value for every parameter
      options   launch options (num_warps, num_stages, ...)
      grid      tuple of 1..3 ints
      sig       kad signature string
      device    "cpu" or "cuda" (the tensors' device type)
      config    the autotuner config used (or None)"""

    def __init__(self, name, params, values, options, grid, sig, device, config, runtime_names=None):
        self.name = name
        self.params = params
        self.values = values
        self.options = options
        self.grid = grid
        self.sig = sig
        self.device = device
        self.config = config
        self.runtime_names = (runtime_names if runtime_names is not None
                              else tuple(n for n, c in params if not c))  # runtime parameters, in order

    @property
    def runtime(self):
        """[(name, value)] of the runtime (non-constexpr) parameters, in order:
        also those Triton specializes (None, 1), which Triton launches take
        but kad's compiled kernel does not have (line values up by name)."""
        values = self.values
        return [(n, values[n]) for n in self.runtime_names]

    @property
    def constexprs(self):
        return {n: self.values[n] for n, c in self.params if c}

    def tensors(self):
        return [(n, v) for n, v in self.runtime if isinstance(v, torch.Tensor)]


def _const_text(name, v):
    """A constexpr value as kad's signature spells it."""
    v = getattr(v, "value", v) if type(v).__name__ == "constexpr" else v
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError(f"constexpr '{name}' is {v}: kad's signatures take finite floats only")
        return repr(v)
    if isinstance(v, str):
        if "'" in v:
            raise ValueError(f"constexpr '{name}' = {v!r}: kad's signatures cannot hold a quote character")
        return f"'{v}'"
    if v is None:
        return "None"
    r = repr(v)
    if r.startswith("triton.language."):
        return "tl." + r[len("triton.language."):]
    raise TypeError(f"constexpr '{name}' = {v!r}: kad cannot specialize on a value of type {type(v).__name__}")


def _runtime_type(name, v, annotation):
    """kad type of a runtime argument, as Triton types it."""
    if isinstance(v, torch.Tensor):
        dt = TORCH_TO_KAD.get(v.dtype)
        if dt is None:
            raise TypeError(f"argument '{name}' is a {v.dtype} tensor: kad supports "
                            f"{', '.join(str(d) for d in TORCH_TO_KAD)}")
        return "*" + dt
    if is_tensor_desc(v):
        # Triton's JIT types it tensordesc<fp32[8, 8]>; kad adds the padding when it is "nan" (Triton
        # keeps it in the TMA descriptor, kad's loads need it)
        dt = TORCH_TO_KAD.get(getattr(v.base, "dtype", None))
        if dt is None:
            raise TypeError(f"argument '{name}' is a tensor descriptor of a {getattr(v.base, 'dtype', None)} "
                            f"tensor: kad supports {', '.join(str(d) for d in TORCH_TO_KAD)}")
        pad = ", nan" if getattr(v, "padding", "zero") == "nan" else ""
        return f"tensordesc<{dt}[{', '.join(str(int(b)) for b in v.block_shape)}]{pad}>"
    if annotation:
        return annotation
    if isinstance(v, bool):
        return "i1"
    if isinstance(v, int):
        if -2**31 <= v < 2**31:
            return "i32"
        if -2**63 <= v < 2**63:
            return "i64"
        raise ValueError(f"argument '{name}' = {v} needs an unsigned 64-bit parameter, which kad does not support")
    if isinstance(v, float):
        return "fp32"
    raise TypeError(f"argument '{name}' has type {type(v).__name__}: expected a tensor, int, float or bool")


def is_tensor_desc(v):
    """Whether v is a host-side tensor descriptor (triton.tools.tensor_descriptor.TensorDescriptor)
    of a torch tensor."""
    return (type(v).__name__ == "TensorDescriptor" and isinstance(getattr(v, "base", None), torch.Tensor)
            and hasattr(v, "block_shape"))


def desc_fact(v):
    """The key fact of a tensor descriptor argument: what its signature type depends on."""
    return ("desc", v.base.dtype, v.base.device.type, tuple(int(b) for b in v.block_shape),
            getattr(v, "padding", "zero"))


def expand_descs(values, runtime_names):
    """(values, runtime_names) with each host-side tensor descriptor expanded as kad's kernel takes
    it (docs/LANGUAGE.md, "Tensor descriptors"): the parameter's name holds the base tensor (the
    differentiable buffer), `<name>_shape_<k>` the shape, `<name>_stride_<k>` the strides but the
    last, which must be 1.  Unchanged when there is none."""
    if not any(is_tensor_desc(values[n]) for n in runtime_names):
        return values, runtime_names
    values, names = dict(values), []
    for n in runtime_names:
        d = values[n]
        names.append(n)
        if not is_tensor_desc(d):
            continue
        if int(d.strides[-1]) != 1:
            raise ValueError(f"argument '{n}': a tensor descriptor's last stride must be 1, got {d.strides[-1]}")
        values[n] = d.base
        for k, s in enumerate(d.shape):
            values[f"{n}_shape_{k}"] = int(s)
            names.append(f"{n}_shape_{k}")
        for k, s in enumerate(list(d.strides)[:-1]):
            values[f"{n}_stride_{k}"] = int(s)
            names.append(f"{n}_stride_{k}")
    return values, tuple(names)


def _specialized(v, param):
    """The signature value of a runtime argument Triton's JIT turns into a
    constant ('None' or '1'), else None."""
    if v is None:
        return "None"
    if (type(v) is int and v == 1 and not param.do_not_specialize and not param.annotation_type):
        return "1"
    return None


class Param:
    """A kernel parameter: name, whether it is tl.constexpr, the type its
    annotation gives a runtime parameter (`n: tl.int64`) or '', and whether
    it is in the kernel's do_not_specialize."""

    __slots__ = ("name", "is_constexpr", "annotation_type", "do_not_specialize")

    def __init__(self, name, is_constexpr, annotation_type="", do_not_specialize=False):
        self.name = name
        self.is_constexpr = is_constexpr
        self.annotation_type = annotation_type
        self.do_not_specialize = do_not_specialize


def params_of(jit):
    """The Params of a JITFunction, or of the interpreter's stand-in
    (TRITON_INTERPRET=1), which keeps only the Python function."""
    ps = getattr(jit, "params", None)
    if ps is not None:
        return [Param(p.name, bool(p.is_constexpr), getattr(p, "annotation_type", "") or "",
                      bool(getattr(p, "do_not_specialize", False))) for p in ps]
    out = []
    dns = getattr(jit, "do_not_specialize", None) or ()
    for i, p in enumerate(inspect.signature(jit.fn).parameters.values()):
        a = p.annotation
        text = a if isinstance(a, str) else getattr(a, "__name__", "") if a is not inspect.Parameter.empty else ""
        out.append(Param(p.name, "constexpr" in text, "", i in dns or p.name in dns))
    return out


def _annotation(jit_param):
    """kad type from a runtime parameter's annotation (`n: tl.int64`), or ''."""
    a = getattr(jit_param, "annotation_type", "") or ""
    return _ANNOTATED.get(a.lstrip("*"), "") if a and not a.startswith("*") else ""


def eval_grid(grid, meta):
    """The grid as a tuple of 1..3 ints (a callable gets the meta dict)."""
    g = grid(meta) if callable(grid) else grid
    if type(g) is tuple and 1 <= len(g) <= 3:  # the common case: a tuple of non-negative ints
        for x in g:
            if type(x) is not int or x < 0:
                break
        else:
            return g
    if isinstance(g, torch.Tensor) or not isinstance(g, (tuple, list)):
        try:
            g = (operator.index(g),)
        except TypeError:
            raise TypeError(f"the grid must be a tuple of 1 to 3 ints or a callable returning one, "
                            f"got {g!r}") from None
    if not 1 <= len(g) <= 3:
        raise ValueError(f"the grid must have 1 to 3 dimensions, got {tuple(g)!r}")
    try:
        out = tuple(operator.index(x) for x in g)
    except TypeError:
        raise TypeError(f"the grid must hold ints, got {tuple(g)!r}") from None
    if any(x < 0 for x in out):
        raise ValueError(f"the grid must be non-negative, got {out!r}")
    return out


def wrapper_kind(w):
    """"Autotuner" or "Heuristics" for Triton's wrappers and their subclasses
    (a library's own autotuner, e.g. FlagGems' LibTuner, derives from
    triton's Autotuner), else None.  By class name along the MRO, so that
    the interpreter's stand-ins match too."""
    for cls in type(w).__mro__:
        if cls.__name__ in ("Autotuner", "Heuristics"):
            return cls.__name__
    return None


def resolve_config(chain, args, kwargs, after_launch):
    """Fills kwargs with what the wrappers decide, outermost first, as their
    run() methods do: triton.heuristics values, the autotuner's config.
    Before a launch (or on the CPU) the autotuner's first config stands in;
    after a GPU launch its best_config is the one that ran; after_launch
    "previous": before a GPU launch, the config the previous launch ran
    (best_config, the first config when none ran), which a training loop's
    next launch of the same shapes runs again.  Returns the config used (or
    None) and updates kwargs in place."""
    config = None
    for w in chain:
        kind = wrapper_kind(w)
        if kind == "Heuristics":
            names = getattr(w, "arg_names", [])
            for v, heur in w.values.items():
                kwargs[v] = heur({**dict(zip(names, args)), **kwargs})
        elif kind == "Autotuner":
            cfg = getattr(w, "best_config", None) if after_launch else None  # True or "previous"
            config = cfg if cfg is not None else w.configs[0]
            clash = sorted(set(kwargs) & set(config.kwargs))
            if clash:  # Triton refuses this too, but only once it benchmarks
                raise ValueError(f"{', '.join(clash)} are set by the autotuner's configs: do not pass them")
            kwargs.update(config.all_kwargs())
        else:
            # a wrapper unknown to kad that exposes the kernel as .fn (a
            # library's caching layer such as @libentry()): taken to be
            # transparent, passing the arguments on unchanged (docs/PYTHON.md)
            continue
    return config


def bind(jit, chain, grid, args, kwargs, declared, after_launch=False, f64_as=None, outputs=()):
    """Binds kernel[grid](*args, **kwargs) to a Launch; declared lists the
    pointer parameters whose arguments must be tensors or None (inputs +
    outputs), outputs those of which at least one must be a tensor.
    f64_as: inside kad.f64_mode, the kad type CPU float64 tensors get in the
    signature (their buffers hold float64 whatever it is).  One-off: a
    decorated kernel keeps a Binder, whose signatures are cached."""
    return Binder(jit, chain, declared, outputs=outputs).bind(grid, args, kwargs, after_launch, f64_as)


def no_output_error(outputs):
    """The error of a launch passing None to every declared output."""
    return TypeError(f"every declared output ({', '.join(outputs)}) is None: a launch of a kad.differentiable "
                     f"kernel writes at least one output tensor; pass one (e.g. torch.empty_like)")


_PLAIN_CONST = frozenset({int, bool, str, type(None)})
_I32 = (-2**31, 2**31)
_I64 = (-2**63, 2**63)


def _int_fact(v, specializes):
    """The key fact of an int runtime argument: what its signature type
    depends on (equal to 1 when Triton specializes it, the i32/i64 range)."""
    if specializes and v == 1 and type(v) is int:
        return 1
    if -2**31 <= v < 2**31:
        return 32
    if -2**63 <= v < 2**63:
        return 64
    return ("u64", v)  # refused by the slow path, never cached


class Binder:
    """bind() for one kernel, with what does not change between calls
    computed once (parameters, defaults, annotations) and the signature
    cached by a fast key.

    The key holds, per parameter in order, the facts kad's signature string
    is a function of: a tensor's (dtype, device type); None; for an int,
    whether it is 1 (when Triton would specialize it) and whether it fits
    i32 or i64; the type of any other runtime value; a constexpr's (type,
    value) (its signature text for floats and other objects); plus the
    f64_mode typing.  Equal keys give equal signatures and devices, so a
    cache hit skips typing the arguments; a miss types them as Triton does,
    checks them (raising before anything is cached) and caches the result.
    The checks that depend on the values (declared arguments are tensors,
    one device, u64 ints) are facts of the key: a call that would fail them
    cannot share a key with one that passed."""

    def __init__(self, jit, chain, declared, hints=None, outputs=()):
        ps = params_of(jit)
        self.jit, self.chain = jit, list(chain)
        self.name = jit.fn.__name__
        self.params = [(p.name, p.is_constexpr) for p in ps]
        self.by_name = {p.name: p for p in ps}
        self.names = [p.name for p in ps]
        self.position = {n: i for i, n in enumerate(self.names)}
        self.runtime_names = tuple(p.name for p in ps if not p.is_constexpr)
        self.declared = list(declared)
        self.outputs = list(outputs)  # at least one of them a tensor
        self.wrappers = [w for w in self.chain if wrapper_kind(w)]
        sig = inspect.signature(jit.fn)
        self.defaults = [(n, p.default) for n, p in sig.parameters.items() if p.default is not inspect.Parameter.empty
                         and n in self.by_name]
        # per parameter: (name, 0 constexpr | 1 runtime that Triton specializes to 1 | 2 runtime that it does not)
        self.kinds = tuple((p.name, 0 if p.is_constexpr else 2 if (p.do_not_specialize or p.annotation_type) else 1)
                           for p in ps)
        self.sigs = {}  # fast key -> (sig, device, hints, parts, whether a tensor descriptor is passed)
        # hints(sig) -> [(name, lo, hi)]: int parameters whose value in [lo, hi] makes a loop run once
        # (kad_kernel_range_hints); the signature then gives them that range (_refine)
        self.hints = hints
        self.refined = {}  # (sig, ranges) -> the signature with those ranges

    def key(self, values, f64_as):
        """The fast key of a bound call (values: name -> value)."""
        key = [f64_as]
        add = key.append
        Tensor = torch.Tensor
        for n, kind in self.kinds:
            v = values[n]
            t = type(v)
            if kind == 0:
                add((t, v) if t in _PLAIN_CONST else _const_text(n, v))
            elif t is int:
                add(1 if kind == 1 and v == 1 else 32 if -2147483648 <= v < 2147483648 else _int_fact(v, False))
            elif isinstance(v, Tensor):
                # a CUDA tensor's entry is its dtype alone (is_cuda is cheaper than device.type)
                add(v.dtype if v.is_cuda else (v.dtype, v.device.type))
            elif v is None:
                add(None)
            elif is_tensor_desc(v):
                add(desc_fact(v))
            elif t is not bool and isinstance(v, int):
                add((t, _int_fact(v, False)))
            else:
                add(t)
        return tuple(key)

    def bind(self, grid, args, kwargs, after_launch=False, f64_as=None):
        names, by_name = self.names, self.by_name
        if len(args) > len(names):
            raise TypeError(f"{self.name}() takes {len(names)} arguments, {len(args)} given")
        values = dict(zip(names, args))
        options = {}
        if kwargs or self.wrappers:
            kernel_kwargs = {}
            for k, v in kwargs.items():
                if k in by_name:
                    if self.position[k] < len(args):
                        raise TypeError(f"{self.name}() got multiple values for argument '{k}'")
                    kernel_kwargs[k] = v
                elif k in LAUNCH_OPTIONS:
                    options[k] = v
                else:
                    raise TypeError(f"{self.name}() got an unexpected keyword argument '{k}' "
                                    f"(its parameters: {', '.join(names)})")
            config = None
            if self.wrappers:
                config = resolve_config(self.wrappers, list(args), kernel_kwargs, after_launch)
                for k in list(kernel_kwargs):
                    if k in LAUNCH_OPTIONS and k not in by_name:
                        options.setdefault(k, kernel_kwargs.pop(k))
                for k, v in kernel_kwargs.items():
                    if k in by_name:
                        values[k] = v
            else:
                values.update(kernel_kwargs)
        else:
            config = None
        if len(values) < len(names):
            for n, d in self.defaults:
                if n not in values:
                    values[n] = d
            if len(values) < len(names):
                missing = [n for n in names if n not in values]
                raise TypeError(f"{self.name}() missing argument{'s' if len(missing) > 1 else ''}: "
                                f"{', '.join(repr(m) for m in missing)}")
        key = self.key(values, f64_as)
        hit = self.sigs.get(key)
        if hit is None:
            hit = self._hinted(*self._signature(values, f64_as)) + (
                any(is_tensor_desc(values[n]) for n in self.runtime_names),)
            self.sigs[key] = hit
        sig, device, hints, parts, descs = hit
        if hints:
            sig = self._refine(sig, hints, parts, values)
        if callable(grid):
            meta = dict(values)
            meta.update(options)
            g = eval_grid(grid, meta)
        else:
            g = eval_grid(grid, None)
        if descs:
            values, runtime_names = expand_descs(values, self.runtime_names)
        else:
            runtime_names = self.runtime_names
        return Launch(self.name, self.params, values, options, g, sig, device, config, runtime_names)

    def _hinted(self, sig, device, parts):
        """The fast key's cache entry: (sig, device, hints, parts), hints as
        [(index into parts, name, lo, hi)] for the parameters kad would give a
        range (empty without a hints function, or when kad cannot specialize
        the signature: the launch then reports that error itself)."""
        hints = ()
        if self.hints is not None:
            try:
                found = self.hints(sig)
            except Exception:  # the kernel's own error surfaces where the launch needs the kernel
                found = ()
            where = {p.split("=", 1)[0]: i for i, p in enumerate(parts)}
            hints = tuple((where[n], n, lo, hi) for n, lo, hi in found if n in where)
        return sig, device, hints, parts

    def _refine(self, sig, hints, parts, values):
        """sig with each hinted parameter whose value lies in some of its
        hint ranges given the intersection of those ranges (`n=i32[1:4096]`):
        loops that run once for every value in it become straight-line code
        in the kernel kad specializes (docs/PYTHON.md, "Ranges").  Cached by
        the ranges chosen."""
        chosen = {}
        for i, n, lo, hi in hints:
            v = values[n]
            if type(v) is int and lo <= v <= hi:
                r = chosen.get(i)
                chosen[i] = (lo, hi) if r is None else (max(r[0], lo), min(r[1], hi))
        if not chosen:
            return sig
        ck = (sig, tuple(sorted(chosen.items())))
        out = self.refined.get(ck)
        if out is None:
            ps = list(parts)
            for i, (lo, hi) in chosen.items():
                ps[i] = f"{ps[i]}[{lo}:{hi}]"
            out = self.refined[ck] = ",".join(ps)
        return out

    def _signature(self, values, f64_as):
        """(sig, device, parts) of a bound call, typed as Triton types it
        (parts: the signature's `name=spec` entries); raises what the call
        gets wrong."""
        by_name = self.by_name
        devices = set()
        for n in self.declared:
            v = values[n]
            if v is None:
                continue  # absent: typed name=None below, as Triton specializes it
            if is_tensor_desc(v):
                continue  # its base tensor is the differentiated buffer
            if not isinstance(v, torch.Tensor):
                raise TypeError(f"argument '{n}' must be a torch.Tensor (it is declared in inputs/outputs), "
                                f"got {type(v).__name__}")
        if self.outputs and all(values[n] is None for n in self.outputs):
            raise no_output_error(self.outputs)
        parts = []
        for n, is_const in self.params:
            v = values[n]
            if is_const:
                parts.append(f"{n}={_const_text(n, v)}")
                continue
            if is_tensor_desc(v):
                devices.add(v.base.device.type)
                if f64_as and v.base.dtype == torch.float64 and v.base.device.type == "cpu":
                    parts.append(f"{n}={_runtime_type(n, v, '').replace('fp64', f64_as, 1)}")
                    continue
            if isinstance(v, torch.Tensor):
                devices.add(v.device.type)
                if f64_as and v.dtype == torch.float64 and v.device.type == "cpu":
                    parts.append(f"{n}=*{f64_as}")
                    continue
            spec = _specialized(v, by_name[n])
            parts.append(f"{n}={spec if spec else _runtime_type(n, v, _annotation(by_name[n]))}")
        if len(devices) > 1:
            raise ValueError(f"the tensors of one launch must be on one device, got {sorted(devices)}")
        device = devices.pop() if devices else "cpu"
        if device not in ("cpu", "cuda"):
            raise ValueError(f"tensors on '{device}': kad runs CPU tensors on its interpreter and CUDA tensors "
                             f"with Triton")
        return ",".join(parts), device, tuple(parts)
