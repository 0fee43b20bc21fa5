"""The launch helpers of kad's backward and jvp modules: emit_grad.c, emit_grad_plan.c and emit_grad_launch.c
print these sections verbatim.

Each `# kad-embed: NAME` ... `# kad-end` section is the text, byte for byte, that the emitter prints
(tools/embed.py embeds it as the C array kad_py_NAME, declared in embed.h); what lies outside the
sections is not printed: these lines, the imports (the emitted module has its own) and _kad_host,
the launcher's host function whose sections are printed nested in it, at its indent.
"""
import time

import torch
import triton

# kad-embed: fold_fill
_kad_fill = None  # tests only: a value (NaN) filling the partials the launcher leaves uninitialized
# kad-end
# kad-embed: sms
_kad_sm_counts = {}


def _kad_sms(dev):
    """The SM count of a CUDA device, asked once."""
    n = _kad_sm_counts.get(dev)
    if n is None:
        n = _kad_sm_counts[dev] = torch.cuda.get_device_properties(dev).multi_processor_count
    return n
# kad-end
# kad-embed: dense


def _kad_dense(d):
    """True when d's elements fill its storage span exactly (no gap between them, none shared):
    the sum kernel then stores every element of the span, and d needs no zero-fill."""
    if not d.numel():
        return True
    n = 1
    for st, size in sorted(zip(d.stride(), d.shape)):
        if size != 1:
            if st != n:
                return False
            n *= size
    return True
# kad-end
# kad-embed: go
_kad_plans = {}  # launch key -> _kad_plan's answer (a training loop launches the same shapes each step)
try:  # Triton's launch hooks (a profiler's), the current CUDA device and stream, read as Triton reads them
    _kad_hooks, _kad_cur, _kad_stream = (triton.knobs.runtime, torch._C._cuda_getDevice,
                                         torch._C._cuda_getCurrentRawStream)
except AttributeError:
    _kad_hooks = _kad_cur = _kad_stream = None


def _kad_ck(dev):
    """A plan's compiled kernels (_kad_go): a dict on a CUDA device, else None (the JIT launches)."""
    return {} if dev.type == "cuda" and _kad_stream is not None else None


def _kad_go(k, grid, a, ck, key, num_warps, num_stages):
    """k[grid](*a, num_warps=num_warps, num_stages=num_stages) (num_stages left out when None),
    a: every parameter of k in order (the constexpr values in their places), grid: 3 ints.
    key: what Triton's specialization of this launch depends on besides the plan's
    launch key (which fixes the scalar arguments and their types): the device, the launch
    options, the tensors' dtypes, every tensor 16-byte aligned; None when one is not. The kernel
    Triton's JIT returns for the first launch of a key is kept in ck (the plan's) and launched
    again by Triton's own launcher, without the JIT's per-launch binding and cache key. While a
    launch hook is set (a profiler's), every launch goes through the JIT."""
    if key is not None:
        c = ck.get(key)
        h, x = _kad_hooks.launch_enter_hook, _kad_hooks.launch_exit_hook
        if c is not None and not (getattr(h, "calls", h) or getattr(x, "calls", x)):
            c.run(grid[0], grid[1], grid[2], _kad_stream(key[1]), c.function, c.packed_metadata, None, None,
                  None, *a)
            return
    if num_stages is None:
        c = k[grid](*a, num_warps=num_warps)
    else:
        c = k[grid](*a, num_warps=num_warps, num_stages=num_stages)
    if key is not None and getattr(c, "function", None) is not None and len(ck) < 64:
        ck[key] = c
# kad-end
# kad-embed: tune


_kad_tuned = {}  # (kernel, launch key, slot) -> the (num_warps, num_stages) _kad_tune chose
_kad_trials = {}  # the same keys -> each candidate's (num_warps, num_stages, ms or why not)


def _kad_tune(k, grid, a, tk, num_warps, num_stages, writes, exact, again, warps, stages):
    """kad_tune=True (the package passes it when the forward was autotuned): the (num_warps,
    num_stages) of the fastest launch of k on grid with a, among the defaults (num_warps,
    num_stages) and the candidates: warps (-1: half, the same and twice the default; (): the
    default) times stages (-1: one less, the same and one more; (): the default). Chosen on the
    first launch of (k, *tk) (the launch key, the kernel's slot) and remembered. Each trial
    launches k on the real arguments; the tensors it writes (positions writes in a; None: every
    tensor) are restored before each trial and after the last, so the launch that follows finds
    them as they were. exact (k's results are reproducible bit for bit): a candidate whose results
    differ in any bit from the default's is never chosen. again: k's results do not depend on
    what it wrote before (no restore between timed launches). While a CUDA graph is captured: the
    defaults, not remembered."""
    tk = (k, *tk)
    c = _kad_tuned.get(tk)
    if c is not None:
        return c
    ts = [x for x in a if isinstance(x, torch.Tensor)]
    cuda = ts[0].device.type == "cuda"
    if cuda and torch.cuda.is_current_stream_capturing():
        return num_warps, num_stages
    if warps == -1:
        warps = tuple(w for w in (num_warps // 2, num_warps, 2 * num_warps) if 1 <= w <= 16)
    if stages == -1:
        stages = (2, 3, 4) if num_stages is None else tuple(s for s in range(num_stages - 1, num_stages + 2) if s)
    cands = [(num_warps, num_stages)]
    for w in warps or (num_warps,):  # num_stages None is Triton's default, 3
        cands += [(w, s) for s in stages or (num_stages,) if (w, s) not in cands and
                  (w, s) != (num_warps, 3 if num_stages is None else num_stages)]
    best = ref = None
    log = []
    if len(cands) > 1:
        ws = ts if writes is None else [a[i] for i in writes if isinstance(a[i], torch.Tensor)]
        if writes is not None and len(ws) != len(writes):  # not tensors where kad said: keep them all
            ws = ts
        keep = [x.clone() for x in ws]

        def restore():
            for x, y in zip(ws, keep):
                x.copy_(y)
        for w, s in cands:
            def run(w=w, s=s):
                if s is None:
                    k[grid](*a, num_warps=w)
                else:
                    k[grid](*a, num_warps=w, num_stages=s)
            restore()
            try:
                run()
            except triton.runtime.errors.OutOfResources:
                log.append((w, s, "does not fit"))
                continue
            except Exception as e:  # a candidate Triton cannot build: the default's error is the launch's
                if (w, s) == cands[0]:
                    raise
                log.append((w, s, f"failed: {type(e).__name__}"))
                continue
            if exact:  # the candidate's bits against the first candidate run's (the default's)
                got = [_kad_bits(x) for x in ws]
                if ref is None:
                    ref = got
                elif not all(torch.equal(x, y) for x, y in zip(got, ref)):
                    log.append((w, s, "other bits"))
                    continue
            t = _kad_time(run if again else lambda: (restore(), run()), cuda)
            log.append((w, s, t))
            if best is None or t < best[0]:
                best = (t, (w, s))
        restore()
    c = best[1] if best else (num_warps, num_stages)
    if len(_kad_tuned) >= 4096:
        _kad_tuned.clear()
        _kad_trials.clear()
    _kad_tuned[tk], _kad_trials[tk] = c, log
    return c


def _kad_bits(x):
    """A copy of x whose torch.equal is bitwise (a float's bits as integers: NaN equals NaN)."""
    x = x.detach().contiguous()
    if x.is_floating_point():
        x = x.view({8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}[x.element_size()])
    return x.clone()


def _kad_time(f, cuda):
    """f's time: the median of triton.testing.do_bench on CUDA; elsewhere (Triton's interpreter) one
    run's, which means little: the trials run there to be tested, not timed."""
    if cuda:
        return triton.testing.do_bench(f, warmup=5, rep=20, return_mode="median")
    t = time.perf_counter()
    f()
    return time.perf_counter() - t
# kad-end
# kad-embed: gemm_state


_kad_gemm_plans = {}
_kad_fit_stages = {}  # (kernel, num_stages asked) -> the num_stages that fits in shared memory
# kad-end
# kad-embed: gemm_fit


def _kad_fills(dev, programs):
    """Whether a grid of this many programs gives every SM of dev one (on the CPU, Triton's
    interpreter: always).  An operand kernel owning R K iterations a program runs only then; else its
    one-iteration form (R times the programs, the same sums bit for bit)."""
    return dev.type != "cuda" or programs >= _kad_sms(dev)


def _kad_fit(k, g, a, o, ck=None, key=None, tune=None):
    """Launches k on grid g (3 ints) through _kad_go (ck, key: its compiled kernels and their key
    without the launch options, or None).  The GEMM kernels keep the forward's tiles, which may
    not fit in shared memory at the num_stages asked for (the caller's): then with fewer, one less
    at a time.  tune: (the tuning key, _kad_tune's facts of k) under kad_tune, else falsy."""
    if tune:
        w, s = _kad_tune(k, g, a, tune[0], o["num_warps"], o.get("num_stages", 3), *tune[1:])
        o = {"num_warps": w, "num_stages": s}
    asked = o.get("num_stages", 3)
    ns = _kad_fit_stages.get((k, asked), asked)
    while True:
        try:
            return _kad_go(k, g, a, ck, key and (*key, o["num_warps"], ns), o["num_warps"], ns)
        except triton.runtime.errors.OutOfResources:
            if ns <= 1:
                raise
        ns -= 1
        _kad_fit_stages[k, asked] = ns


def _kad_tdiv(x, y):  # the kernel's // on integers truncates
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def _kad_trem(x, y):
    return x - _kad_tdiv(x, y) * y


# kad-end
# kad-embed: descs


def _kad_descs(args, descs):
    """args with each host-side tensor descriptor (base, shape, strides, block_shape, padding:
    triton.tools.tensor_descriptor.TensorDescriptor) expanded as the kernel takes it: base, shape,
    strides but the last (1).  descs: (position among the expanded arguments, rank, block shape,
    padding) in order; an argument there that is not a descriptor is taken as expanded already.
    A descriptor passed as a gradient buffer stands for its base."""
    out, i = [], 0
    for at, rank, block, pad in descs:
        while len(out) < at and i < len(args):
            out.append(args[i])
            i += 1
        d = args[i] if i < len(args) else None
        if not (hasattr(d, "base") and hasattr(d, "block_shape")):
            continue
        if len(d.shape) != rank or tuple(int(b) for b in d.block_shape) != block:
            raise ValueError(f"argument {i}: a tensor descriptor of block_shape {list(d.block_shape)}, "
                             f"but this module is specialized for {list(block)}: generate it for that "
                             f"signature")
        if int(d.strides[-1]) != 1:
            raise ValueError(f"argument {i}: a tensor descriptor's last stride must be 1, got "
                             f"{d.strides[-1]}")
        if getattr(d, "padding", "zero") != pad:
            raise ValueError(f"argument {i}: a tensor descriptor with padding {d.padding!r}, but this "
                             f"module is specialized for {pad!r}: generate it for that signature")
        out += [d.base, *(int(s) for s in d.shape), *(int(s) for s in d.strides[:-1])]
        i += 1
    out += [a.base if hasattr(a, "base") and hasattr(a, "block_shape") else a for a in args[i:]]
    return out
# kad-end
# kad-embed: tma


def _kad_tma_scratch(size, alignment, stream):
    import torch
    return torch.empty(size, dtype=torch.int8, device="cuda")


def _kad_tma_allocator(args):
    """The kernels make tensor descriptors (tl.make_tensor_descriptor), which Triton writes into
    global scratch memory from the allocator of triton.set_allocator on a GPU.  That allocator is
    unset by default and per thread (PyTorch runs backwards in a thread of its own): a torch one
    on the current device is set here when a CUDA tensor is passed and none is set."""
    if not any(getattr(getattr(x, "device", None), "type", None) == "cuda" for x in args):
        return
    from triton.runtime import _allocation
    null = getattr(_allocation, "NullAllocator", None)
    if null is not None and isinstance(_allocation._allocator.get(), null):
        triton.set_allocator(_kad_tma_scratch)


def _kad_tma_ok(d):
    """Whether the gradient d may be stored through a tensor descriptor (TMA): its base 16-byte
    aligned (its strides are the input's, which the forward's descriptor had).  Else the kernel
    stores through pointers (its TMA_ flag False)."""
    return hasattr(d, "data_ptr") and d.data_ptr() % 16 == 0
# kad-end


def _kad_host():
    """Not printed: a launcher's host function, which the sections below are nested in."""
    # kad-embed: host_tdiv
    def _tdiv(x, y):  # Triton's // on integers truncates
        q = abs(x) // abs(y)
        return q if (x < 0) == (y < 0) else -q

    def _trem(x, y):
        return x - _tdiv(x, y) * y

    # kad-end
    # kad-embed: host_kad_tdiv

    def _kad_tdiv(x, y):  # the kernel's // on integers truncates
        q = abs(x) // abs(y)
        return q if (x < 0) == (y < 0) else -q

    def _kad_trem(x, y):
        return x - _kad_tdiv(x, y) * y

    # kad-end
    return locals()
