"""A decorated launch as PyTorch custom operators: what torch.compile and torch.func see.

Eager launches do not use this module (autograd.DifferentiableKernel.run takes its hot path).
Under torch.compile (torch.compiler.is_compiling()) and torch.func transforms, the launch becomes
a call of two custom operators, defined once when kad.autograd is imported:

  kad::launch(str key, Tensor[] ins, Tensor[] others, Tensor[] outs, SymInt[] ints,
              float[] floats, SymInt[] grid) -> Tensor[]
      the forward, functional: it returns new tensors holding the outputs' values after the
      kernel ran (each a copy of the output's storage span with the output's sizes and strides,
      written by the kernel); it mutates nothing (mutates_args=()), and the caller copies the
      results back into the outputs (`y.copy_(new)`), so the user's buffers are still written in
      place, as PyTorch's functionalization expects of an in-place update.
  kad::launch_bwd(str key, Tensor[] ins, Tensor[] others, Tensor[] outs, Tensor[] grads,
                  SymInt[] ints, float[] floats, SymInt[] grid, bool[] needs) -> Tensor[]
      the backward (register_autograd's formula calls it): the gradients of the inputs, then of
      the outputs' values before the launch, that `needs` asks for, in that order.
  kad::launch_jvp(str key, Tensor[] ins, Tensor[] others, Tensor[] outs, Tensor[] t_ins,
                  Tensor[] t_outs, SymInt[] ints, float[] floats, SymInt[] grid) -> Tensor[]
      forward mode (Function.jvp calls it): the tangents of the outputs' new values from the
      tangents of the inputs and of the outputs' old values (kad's jvp kernel, kad_jvp).

ins are the declared inputs' tensors (those not also outputs), others the tensors passed to
undeclared pointer parameters (read only: a kernel that stores through one is refused), outs
the declared outputs' tensors (their values before the launch).  ints and floats are the
non-tensor numbers of the call (SymInts under dynamic shapes), grid the grid (one per autotuner
config when the grid is a callable of the meta-parameters).  key is a JSON text naming the
decorated kernel (a registry entry made when the call is first traced) and where each argument
goes: the operators are shared by every kernel and specialization, and each call is
specialized at run time by kad's usual caches (one signature, one _Prep), so tracing a new
specialization registers nothing with PyTorch.

Register_autograd requires functional operators, which is why the forward copies instead of
mutating.  On the CPU both operators run kad's interpreter, on CUDA Triton (the forward) and the
generated launch_<kernel>_bwd (the backward), through the eager code of autograd.py.
"""
import json
import weakref

import torch

from .autograd import layout_may_overlap, memory_tangent, overlaps

__all__ = ["kernel_key", "launch", "launch_bwd"]

_KERNELS = weakref.WeakValueDictionary()  # kernel id -> DifferentiableKernel (or kad.cuda CudaKernel)
_DECODED = {}  # key -> (kernel, layout, grids)


def _kernel_id(dk):
    kid = getattr(dk, "_op_id", None)
    if kid is None:
        fn = dk.jit.fn
        base = f"{fn.__module__}.{fn.__qualname__}"
        kid, i = base, 1
        while kid in _KERNELS:
            i += 1
            kid = f"{base}#{i}"
        _KERNELS[kid] = dk
        dk._op_id = kid
    return kid


def register_kernel(base, dk):
    """Registers dk (a kad.cuda kernel: it has the _op_* methods and inputs of DifferentiableKernel)
    under an id made from base, unique in this process: the id its operator keys carry."""
    kid, i = base, 1
    while kid in _KERNELS:
        i += 1
        kid = f"{base}#{i}"
    _KERNELS[kid] = dk
    return kid


def _encode_const(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    from ._launch import _const_text
    text = _const_text("constexpr", v)  # tl.float16 and the like
    return {"tl": text[3:]} if text.startswith("tl.") else {"text": text}


def _decode_const(v):
    if isinstance(v, dict):
        if "tl" in v:
            import triton.language as tl
            return getattr(tl, v["tl"])
        raise ValueError(f"kad: cannot rebuild the constant {v['text']!r}")
    return v


def split_args(pairs, inputs, outputs, other=None):
    """The operators' argument lists of a call's (name, value) pairs: (ins, others, outs, ints,
    floats, layout), layout saying per name where its value went ("i", "t", "o": tensor lists;
    "I", "F": ints, floats; "c": a constant kept in the key).  other(name, value) is asked for a
    value of any other type (raise to refuse it); without it such a value is a constant."""
    ins, others, outs, ints, floats, layout = [], [], [], [], [], []
    for n, v in pairs:
        if isinstance(v, torch.Tensor):
            lst, kind = (outs, "o") if n in outputs else (ins, "i") if n in inputs else (others, "t")
            layout.append((n, kind, len(lst)))
            lst.append(v)
        elif v is None or isinstance(v, (bool, str)):  # (an absent input or output: a constant)
            layout.append((n, "c", v))
        elif isinstance(v, (int, torch.SymInt)):
            layout.append((n, "I", len(ints)))
            ints.append(v)
        elif isinstance(v, (float, torch.SymFloat)):
            layout.append((n, "F", len(floats)))
            floats.append(v)
        else:
            if other is not None:
                other(n, v)
            layout.append((n, "c", v))
    return ins, others, outs, ints, floats, layout


@torch.compiler.assume_constant_result
def kernel_key(kid, layout, grid_dims):
    """The operators' key of a call (traced code calls it; dynamo runs it as a constant; every
    argument a constant: kid is the kernel's id (_kernel_id, given when the kernel is decorated),
    not the kernel object, which torch 2.11's dynamo refuses to pass as a constant):
    layout is ((parameter, kind, payload), ...) with kind i/t/o (a tensor of ins/others/outs,
    payload its index), I/F (an int/float, its index in ints/floats), c (a constant, payload
    the value); grid_dims the number of dimensions of each grid."""
    return json.dumps([kid, [[n, k, _encode_const(p) if k == "c" else p] for n, k, p in layout],
                       list(grid_dims)])


def _decode(key):
    d = _DECODED.get(key)
    if d is None:
        kid, layout, dims = json.loads(key)
        dk = _KERNELS.get(kid)
        if dk is None:
            raise RuntimeError(f"kad: the kernel {kid!r} of a compiled graph is not decorated in this process "
                               f"(import its module before running the graph)")
        layout = [(n, k, _decode_const(p) if k == "c" else p) for n, k, p in layout]
        d = _DECODED[key] = (dk, layout, dims)
    return d


def _call(key, ins, others, outs, ints, floats, grid):
    """(kernel, grid, kwargs) of the launch a key and the operators' arguments describe."""
    dk, layout, dims = _decode(key)
    kw = {}
    for n, k, p in layout:
        kw[n] = (ins[p] if k == "i" else others[p] if k == "t" else outs[p] if k == "o" else
                 ints[p] if k == "I" else floats[p] if k == "F" else p)
    grids, at = [], 0
    for nd in dims:
        grids.append(tuple(int(g) for g in grid[at:at + nd]))
        at += nd
    if len(grids) == 1:
        return dk, grids[0], kw
    configs = next(w for w in dk._binder.wrappers if w.__class__.__name__ != "Heuristics").configs

    def by_config(meta):
        # the grid the traced call computed for the autotuner's config that runs
        for cfg, g in zip(configs, grids):
            if all(meta.get(k) == v for k, v in cfg.kwargs.items()):
                return g
        return grids[0]
    return dk, by_config, kw


@torch.library.custom_op("kad::launch", mutates_args=())
def launch(key: str, ins: list[torch.Tensor], others: list[torch.Tensor], outs: list[torch.Tensor],
           ints: list[int], floats: list[float], grid: list[int]) -> list[torch.Tensor]:
    # the outputs' new values start as copies of the old ones (the kernel may write only part of them)
    new = [torch.empty_strided(o.size(), o.stride(), dtype=o.dtype, device=o.device).copy_(o) for o in outs]
    dk, g, kw = _call(key, ins, others, new, ints, floats, grid)
    with torch.no_grad():
        dk._op_forward(g, kw)
    return new


@launch.register_fake
def _(key, ins, others, outs, ints, floats, grid):
    return [torch.empty_strided(o.size(), o.stride(), dtype=o.dtype, device=o.device) for o in outs]


@torch.library.custom_op("kad::launch_bwd", mutates_args=())
def launch_bwd(key: str, ins: list[torch.Tensor], others: list[torch.Tensor], outs: list[torch.Tensor],
               grads: list[torch.Tensor], ints: list[int], floats: list[float], grid: list[int],
               needs: list[bool]) -> list[torch.Tensor]:
    dk, g, kw = _call(key, ins, others, outs, ints, floats, grid)
    layout = _decode(key)[1]
    in_names = [n for n, k, _ in layout if k == "i"]
    out_names = [n for n, k, _ in layout if k == "o"]
    need_in = [n for n, need in zip(in_names, needs[:len(ins)]) if need]
    need_out = [n for n, need in zip(out_names, needs[len(ins):]) if need]
    d = dk._op_backward(g, kw, need_in, need_out, dict(zip(out_names, grads)))
    # an input whose layout may overlap itself: its gradient contiguous (per view element: view_grad),
    # decided from the sizes and strides alone, as the fake operator below does
    ts = [t for t, need in zip(list(ins) + list(outs), needs) if need]
    return [d[n].contiguous() if layout_may_overlap(t) else d[n] for n, t in zip(need_in + need_out, ts)]


@launch_bwd.register_fake
def _(key, ins, others, outs, grads, ints, floats, grid, needs):
    ts = [t for t, need in zip(list(ins) + list(outs), needs) if need]
    return [torch.empty(t.size(), dtype=t.dtype, device=t.device) if layout_may_overlap(t) else
            torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device) for t in ts]


def _hint(v):
    """A SymInt's example value (tracing with dynamic shapes), else v."""
    if isinstance(v, (torch.SymInt, torch.SymFloat)):
        h = v.node.hint
        return v if h is None else h
    return v


def _copy(t):
    """A copy of t with t's strides (also under vmap, where t is batched)."""
    if t.is_contiguous():
        return t.clone(memory_format=torch.contiguous_format)
    return t.new_empty_strided(t.size(), t.stride()).copy_(t)


def _keep(key, ins, others, outs, ints, floats):
    """The outputs' values before the launch that the backward reads, copied (the caller copies the
    results into outs right after): those of in-place outputs (declared in both lists, loaded by the
    kernel, or whose old value needs a gradient); None for the others."""
    dk, layout, _ = _decode(key)
    kw = _call(key, ins, others, outs, [_hint(i) for i in ints], [_hint(f) for f in floats], [1])[2]
    loads = dk._op_loads(kw)
    names = [n for n, k, _ in layout if k == "o"]
    return [_copy(o) if n in dk.inputs or n in loads or o.requires_grad else None for n, o in zip(names, outs)]


def _strides(outs):
    return tuple(tuple(o.stride()) for o in outs)


def _grads(key, ins, others, kept, strides, grads, ints, floats, grid, need_ins, need_outs, func=False):
    """(input gradients, old outputs' gradients), None where not needed.  func: for torch.func, whose
    transforms run every backward with grad mode on: BwdFunction refuses a second derivative when
    one is taken; elsewhere grad mode is on only under create_graph=True, refused at once."""
    if not func and torch.is_grad_enabled():
        from .autograd import second_derivative_error
        raise second_derivative_error(_decode(key)[0].__name__)
    # an output whose old value was not kept is not read by the backward: any tensor of its dtype
    # and layout stands in (its gradient, copied into the output's strides when it has others, e.g.
    # the expanded one of y.sum())
    # (an output overlapping itself is a view of a buffer that does not (DifferentiableKernel._run_op):
    # its gradient, gathered from the buffer's, holds each memory element's at all of its view
    # elements, and the copy keeps it)
    grads = [g if o is not None or tuple(g.stride()) == st else _laid_out(g, st) for o, g, st in zip(kept, grads, strides)]
    outs = [o if o is not None else g for o, g in zip(kept, grads)]
    needs = [bool(b) for b in need_ins] + [bool(b) for b in need_outs]
    res = None
    if any(needs):
        if func:
            res = iter(BwdFunction.apply(key, (len(ins), len(others), ints, floats, grid, needs), *ins, *others,
                                         *outs, *grads))
        else:
            res = iter(launch_bwd(key, ins, others, outs, list(grads), ints, floats, grid, needs))
    return [next(res) if need else None for need in needs[:len(ins)]], [next(res) if need else None
                                                                         for need in needs[len(ins):]]


def _laid_out(g, stride):
    """g with the given strides (a copy); a contiguous copy when those are contiguous (also under
    vmap, where g is batched)."""
    if stride == torch.empty(g.size(), device="meta").stride():
        return g.contiguous()
    return g.new_empty_strided(g.size(), stride).copy_(g)


def _setup_context(ctx, inputs, output):
    key, ins, others, outs, ints, floats, grid = inputs
    ctx.save_for_backward(*ins, *others, *_keep(key, ins, others, outs, ints, floats))
    ctx.kad = (key, len(ins), len(others), ints, floats, grid, _strides(outs))


def _backward(ctx, grads):
    key, ni, no, ints, floats, grid, strides = ctx.kad
    saved = ctx.saved_tensors
    _, need_ins, _, need_outs = ctx.needs_input_grad[:4]
    d_ins, d_outs = _grads(key, list(saved[:ni]), list(saved[ni:ni + no]), saved[ni + no:], strides, grads, ints,
                           floats, grid, need_ins, need_outs)
    # the structure of the inputs (an empty list counts as a list of tensors)
    return (None, d_ins, [None] * no, d_outs) + tuple(None if lst else [] for lst in (ints, floats, grid))


launch.register_autograd(_backward, setup_context=_setup_context)


def _setup_bwd(ctx, inputs, output):
    ctx.kad = inputs[0]


def _no_second_derivative(ctx, grads):
    from .autograd import second_derivative_error
    raise second_derivative_error(_decode(ctx.kad)[0].__name__)


launch_bwd.register_autograd(_no_second_derivative, setup_context=_setup_bwd)


class Function(torch.autograd.Function):
    """kad::launch for torch.func (whose transforms need a Function with setup_context; the one
    register_autograd makes has none).  apply(key, (ni, no, ints, floats, grid), *ins, *others,
    *outs) -> the outputs' new values."""
    generate_vmap_rule = True

    @staticmethod
    def forward(key, meta, *tensors):
        ni, no, ints, floats, grid = meta
        return tuple(launch(key, list(tensors[:ni]), list(tensors[ni:ni + no]), list(tensors[ni + no:]), ints,
                            floats, grid))

    @staticmethod
    def setup_context(ctx, inputs, output):
        key, meta, *tensors = inputs
        ni, no, ints, floats, grid = meta
        ctx.save_for_forward(*tensors)  # for jvp (run before the caller writes the outputs)
        ctx.save_for_backward(*tensors[:ni + no],
                              *_keep(key, tensors[:ni], tensors[ni:ni + no], tensors[ni + no:], ints, floats))
        ctx.kad = (key, meta, _strides(tensors[ni + no:]))

    @staticmethod
    def backward(ctx, *grads):
        if _under_jvp():  # forward over reverse (jacfwd(jacrev(f)), hessian): a second derivative
            from .autograd import second_derivative_error
            raise second_derivative_error(_decode(ctx.kad[0])[0].__name__)
        key, (ni, no, ints, floats, grid), strides = ctx.kad
        saved = ctx.saved_tensors
        needs = ctx.needs_input_grad[2:]
        d_ins, d_outs = _grads(key, list(saved[:ni]), list(saved[ni:ni + no]), saved[ni + no:], strides, grads,
                               ints, floats, grid, needs[:ni], needs[ni + no:], func=True)
        return (None, None, *d_ins, *([None] * no), *d_outs)

    @staticmethod
    def jvp(ctx, *tangents):
        # forward mode (torch.func.jvp, jacfwd, torch.autograd.forward_ad): kad's jvp kernel (kad_jvp)
        # computes the outputs' tangents from the inputs' and the old outputs' in one launch
        key, (ni, no, ints, floats, grid), _ = ctx.kad
        return tuple(jvp_launch(key, ctx.saved_tensors, ni, no, ints, floats, grid, tangents[2:]))


def _under_jvp():
    """Whether a forward-mode functorch transform (torch.func.jvp, jacfwd) is active."""
    from torch._C._functorch import TransformType
    from torch._functorch.pyfunctorch import retrieve_all_functorch_interpreters
    return any(i.key() == TransformType.Jvp for i in retrieve_all_functorch_interpreters())


def jvp_launch(key, tensors, ni, no, ints, floats, grid, tangents):
    """The tangents of the outputs' new values: tensors = ins, others, outs (the outputs' values
    before the launch), tangents lined up with them (None: zero).  Through the operator
    kad::launch_jvp, so that torch.func's wrapped tensors reach it unwrapped."""
    dk, layout, _ = _decode(key)
    ins, others, outs = list(tensors[:ni]), list(tensors[ni:ni + no]), list(tensors[ni + no:])
    t_ins, t_others, t_outs = tangents[:ni], tangents[ni:ni + no], tangents[ni + no:]
    given = [n for n, t in zip([n for n, k, _ in layout if k == "t"], t_others) if t is not None]
    if given:
        raise ValueError(f"kad: forward mode: the argument {given[0]!r} of {dk.__name__} has a tangent, but "
                         f"kad.differentiable's inputs={dk.inputs} do not declare it: its tangent would be "
                         f"silently dropped; add it to inputs=[...]")
    t_ins = [torch.zeros_like(x) if t is None else t for x, t in zip(ins, t_ins)]
    t_outs = [torch.zeros_like(o) if t is None else t for o, t in zip(outs, t_outs)]
    return launch_jvp(key, ins, others, outs, t_ins, t_outs, ints, floats, grid)


@torch.library.custom_op("kad::launch_jvp", mutates_args=())
def launch_jvp(key: str, ins: list[torch.Tensor], others: list[torch.Tensor], outs: list[torch.Tensor],
               t_ins: list[torch.Tensor], t_outs: list[torch.Tensor], ints: list[int], floats: list[float],
               grid: list[int]) -> list[torch.Tensor]:
    dk, layout, _ = _decode(key)

    def laid_like(x, t):  # a tangent buffer with its primal's layout
        return torch.empty_strided(x.size(), x.stride(), dtype=x.dtype, device=x.device).copy_(t)
    new = [_copy(o) for o in outs]
    # an input overlapping itself: kad reads each memory element's tangent from its first view element
    tin = [memory_tangent(x, t) if overlaps(x) else laid_like(x, t) for x, t in zip(ins, t_ins)]
    tout = [laid_like(o, t) for o, t in zip(outs, t_outs)]
    _, g, kw = _call(key, ins, others, new, ints, floats, grid)
    with torch.no_grad():
        dk._op_jvp(g, kw, dict(zip([n for n, k, _ in layout if k == "i"], tin)),
                   dict(zip([n for n, k, _ in layout if k == "o"], tout)))
    return tout


@launch_jvp.register_fake
def _(key, ins, others, outs, t_ins, t_outs, ints, floats, grid):
    return [torch.empty_strided(o.size(), o.stride(), dtype=o.dtype, device=o.device) for o in outs]


def _dims(ts, ds):
    return list(ds) if isinstance(ds, (list, tuple)) else [ds] * len(ts)


def _pick(ts, ds, b):
    return [t if d is None else t.select(d, b) for t, d in zip(ts, _dims(ts, ds))]


@launch.register_vmap
def _(info, in_dims, key, ins, others, outs, ints, floats, grid):
    # one launch per sample, on its slices (the call's sizes and strides are a sample's)
    _, d_ins, d_others, d_outs = in_dims[:4]
    per = [launch(key, _pick(ins, d_ins, b), _pick(others, d_others, b), _pick(outs, d_outs, b), ints, floats,
                  grid) for b in range(info.batch_size)]
    return [torch.stack([p[j] for p in per]) for j in range(len(outs))], [0] * len(outs)


@launch_jvp.register_vmap
def _(info, in_dims, key, ins, others, outs, t_ins, t_outs, ints, floats, grid):
    # jacfwd: one launch per sample, as kad::launch's rule
    _, d_ins, d_others, d_outs, d_tins, d_touts = in_dims[:6]
    per = [launch_jvp(key, _pick(ins, d_ins, b), _pick(others, d_others, b), _pick(outs, d_outs, b),
                      _pick(t_ins, d_tins, b), _pick(t_outs, d_touts, b), ints, floats, grid)
           for b in range(info.batch_size)]
    return [torch.stack([p[j] for p in per]) for j in range(len(outs))], [0] * len(outs)


@launch_bwd.register_vmap
def _(info, in_dims, key, ins, others, outs, grads, ints, floats, grid, needs):
    _, d_ins, d_others, d_outs, d_grads = in_dims[:5]
    per = [launch_bwd(key, _pick(ins, d_ins, b), _pick(others, d_others, b), _pick(outs, d_outs, b),
                      _pick(grads, d_grads, b), ints, floats, grid, needs) for b in range(info.batch_size)]
    n = sum(bool(x) for x in needs)
    return [torch.stack([p[j] for p in per]) for j in range(n)], [0] * n


class BwdFunction(torch.autograd.Function):
    """kad::launch_bwd for torch.func: its backward (a second derivative) is refused.
    apply(key, (ni, no, ints, floats, grid, needs), *ins, *others, *outs, *grads)."""
    generate_vmap_rule = True

    @staticmethod
    def forward(key, meta, *tensors):
        ni, no, ints, floats, grid, needs = meta
        k = (len(tensors) - ni - no) // 2
        ts = list(tensors)
        return tuple(launch_bwd(key, ts[:ni], ts[ni:ni + no], ts[ni + no:ni + no + k], ts[ni + no + k:], ints, floats,
                                grid, needs))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.kad = inputs[0]

    @staticmethod
    def backward(ctx, *grads):
        from .autograd import second_derivative_error
        raise second_derivative_error(_decode(ctx.kad)[0].__name__)
