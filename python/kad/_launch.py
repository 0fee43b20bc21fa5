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
input, argument values kad cannot type (u64 ints), a None passed to a
declared input or output.
"""
import inspect
import operator

import torch

__all__ = ["Launch", "Param", "bind", "params_of", "TORCH_TO_KAD", "FLOAT_DTYPES"]

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
}
FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)

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

    def __init__(self, name, params, values, options, grid, sig, device, config):
        self.name = name
        self.params = params
        self.values = values
        self.options = options
        self.grid = grid
        self.sig = sig
        self.device = device
        self.config = config

    @property
    def runtime(self):
        """[(name, value)] of the runtime (non-constexpr) parameters, in order:
        also those Triton specializes (None, 1), which Triton launches take
        but kad's compiled kernel does not have (line values up by name)."""
        return [(n, self.values[n]) for n, c in self.params if not c]

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
    after a GPU launch its best_config is the one that ran.  Returns the
    config used (or None) and updates kwargs in place."""
    config = None
    for w in chain:
        kind = wrapper_kind(w)
        if kind == "Heuristics":
            names = getattr(w, "arg_names", [])
            for v, heur in w.values.items():
                kwargs[v] = heur({**dict(zip(names, args)), **kwargs})
        elif kind == "Autotuner":
            cfg = getattr(w, "best_config", None) if after_launch else None
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


def bind(jit, chain, grid, args, kwargs, declared, after_launch=False, f64_as=None):
    """Binds kernel[grid](*args, **kwargs) to a Launch; declared lists the
    pointer parameters whose arguments must be tensors (inputs + outputs).
    f64_as: inside kad.f64_mode, the kad type CPU float64 tensors get in the
    signature (their buffers hold float64 whatever it is)."""
    ps = params_of(jit)
    params = [(p.name, p.is_constexpr) for p in ps]
    by_name = {p.name: p for p in ps}
    names = [n for n, _ in params]
    kernel_kwargs, options = {}, {}
    for k, v in kwargs.items():
        if k in by_name:
            kernel_kwargs[k] = v
        elif k in LAUNCH_OPTIONS:
            options[k] = v
        else:
            raise TypeError(f"{jit.fn.__name__}() got an unexpected keyword argument '{k}' "
                            f"(its parameters: {', '.join(names)})")
    if len(args) > len(names):
        raise TypeError(f"{jit.fn.__name__}() takes {len(names)} arguments, {len(args)} given")
    for n, _ in zip(names, args):
        if n in kernel_kwargs:
            raise TypeError(f"{jit.fn.__name__}() got multiple values for argument '{n}'")
    filled = dict(kernel_kwargs)
    config = resolve_config(chain, list(args), filled, after_launch)
    for k in list(filled):
        if k in LAUNCH_OPTIONS and k not in by_name:
            options.setdefault(k, filled.pop(k))
    values = dict(zip(names, args))
    values.update({k: v for k, v in filled.items() if k in by_name})
    sig_sig = inspect.signature(jit.fn)
    missing = []
    for n in names:
        if n not in values:
            d = sig_sig.parameters[n].default
            if d is inspect.Parameter.empty:
                missing.append(n)
            else:
                values[n] = d
    if missing:
        raise TypeError(f"{jit.fn.__name__}() missing argument{'s' if len(missing) > 1 else ''}: "
                        f"{', '.join(repr(m) for m in missing)}")

    devices = set()
    for n in declared:
        v = values[n]
        if v is None:
            raise TypeError(f"argument '{n}' is None, but it is declared in kad.differentiable's inputs/outputs: "
                            f"pass a tensor, or leave '{n}' out of inputs/outputs when it is optional")
        if not isinstance(v, torch.Tensor):
            raise TypeError(f"argument '{n}' must be a torch.Tensor (it is declared in inputs/outputs), "
                            f"got {type(v).__name__}")
    parts = []
    for n, is_const in params:
        v = values[n]
        if is_const:
            parts.append(f"{n}={_const_text(n, v)}")
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
    meta = dict(values)
    meta.update(options)
    g = eval_grid(grid, meta)
    return Launch(jit.fn.__name__, params, values, options, g, ",".join(parts), device, config)
