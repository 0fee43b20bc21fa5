"""Native backward nodes: the backward of a planned launch on a GPU as a C++ autograd node
(docs/PYTHON.md, "Native backward nodes").

A Python autograd.Function's backward costs a call from the engine's thread into Python before
anything launches; eager PyTorch's nodes are C++.  For a launch key whose backward takes the short
path (autograd._fast_backward), the first backward calls that find every kernel compiled are
recorded here (`record`): the launcher runs as usual while a TorchFunctionMode notes its
allocations and zero-fills and its `_kad_go` notes each kernel Triton compiled and its
arguments.  The record becomes a Recipe of the C++ extension (_native.cpp) that later launches
of the key attach as their backward node (`attach`): it replays the steps with cuLaunchKernel,
and calls the Python backward (`fallback`) for whatever the recipe does not cover.

The extension is compiled on first use with the C++ compiler torch's extensions use, against the
installed torch, in a background thread (the Python Function serves until it is loaded), into
kad's cache directory, named by a hash of its source and the toolchain.  KAD_NATIVE=0 turns the
node off; KAD_NATIVE=sync compiles in the foreground (benchmarks, tests).
"""
import hashlib
import importlib.machinery
import importlib.util
import os
import struct
import subprocess
import sys
import sysconfig
import threading

import torch
from torch.overrides import TorchFunctionMode

_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native.cpp")


class _Loader:
    """The compiled extension, built once per process (a background thread by default)."""

    def __init__(self):
        self.mod = None
        self.error = None  # why it is not available (a string), or None
        self.thread = None
        self.lock = threading.Lock()

    def get(self, wait=False):
        if self.mod is not None or self.error is not None:
            return self.mod
        mode = os.environ.get("KAD_NATIVE", "1")
        if mode == "0":
            self.error = "KAD_NATIVE=0"
            return None
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._build, name="kad-native-build", daemon=True)
                self.thread.start()
        if wait or mode == "sync":
            self.thread.join()
        return self.mod

    def _build(self):
        try:
            self.mod = build()
        except Exception as e:  # no compiler, no headers: the Python Function serves
            self.error = f"{type(e).__name__}: {e}"


_loader = _Loader()


def module(wait=False):
    """The extension, or None while it is built or where it cannot be (`why()` says why)."""
    return _loader.get(wait)


def why():
    return _loader.error


def _flags():
    from torch.utils import cpp_extension as ce
    inc = ce.include_paths()
    libs = ce.library_paths()
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", 1))
    return inc, libs, abi


def build(cache=None, cxx=None):
    """Compiles _native.cpp (if its hash has no library yet) and imports it; raises on failure."""
    from .autograd import cache_dir
    inc, libs, abi = _flags()
    cxx = cxx or os.environ.get("CXX", "g++")
    src = open(_SRC, "rb").read()
    h = hashlib.sha256(src + repr((torch.__version__, sys.version, abi, cxx, inc)).encode()).hexdigest()[:16]
    name = "kad_native_" + h
    d = os.path.join(cache or cache_dir(), "native")
    os.makedirs(d, exist_ok=True)
    so = os.path.join(d, name + sysconfig.get_config_var("EXT_SUFFIX"))
    if not os.path.exists(so):
        tmp = f"{so}.{os.getpid()}.{threading.get_ident()}.tmp"
        cmd = [cxx, "-O2", "-shared", "-fPIC", "-std=c++17", "-w", f"-DTORCH_EXTENSION_NAME={name}",
               "-DTORCH_API_INCLUDE_EXTENSION_H", f"-D_GLIBCXX_USE_CXX11_ABI={abi}"]
        cmd += [f"-I{p}" for p in inc] + [f"-I{sysconfig.get_paths()['include']}", _SRC, "-o", tmp]
        cmd += [f"-L{p}" for p in libs] + [f"-Wl,-rpath,{p}" for p in libs]
        cmd += ["-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python", "-ldl"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise RuntimeError("kad: compiling the native backward node failed:\n" + p.stderr[-4000:])
        os.replace(tmp, so)
    loader = importlib.machinery.ExtensionFileLoader(name, so)
    spec = importlib.util.spec_from_file_location(name, so, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


# ---- recording a launcher's calls -----------------------------------------------------------

# what the launcher may do with tensors while recorded: read their layout, allocate, zero-fill,
# take views; anything else (a copy, arithmetic, reading values back) makes the key not recordable
_QUERIES = {"__get__", "size", "stride", "dim", "numel", "data_ptr", "is_contiguous", "element_size",
            "storage_offset", "untyped_storage", "get_device", "__len__", "__bool__", "nbytes", "itemsize",
            "view", "reshape", "as_strided", "__getitem__", "narrow", "flatten", "unsqueeze", "squeeze", "select",
            "split", "split_with_sizes", "chunk", "unbind", "t", "transpose", "permute", "expand", "__iter__",
            "contiguous", "is_floating_point", "is_complex", "__hash__", "__eq__", "__format__", "__repr__",
            "type", "dtype", "device", "shape"}
_ALLOC = {"zeros": True, "empty": False, "zeros_like": True, "empty_like": False, "new_zeros": True,
          "new_empty": False, "empty_strided": False}


class _Mode(TorchFunctionMode):
    def __init__(self, rec):
        super().__init__()
        self.rec = rec

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        rec = self.rec
        if name in _ALLOC and isinstance(out, torch.Tensor):
            rec.events.append(("alloc", out, _ALLOC[name]))
        elif name == "zero_" and args and isinstance(args[0], torch.Tensor):
            rec.events.append(("zero", args[0]))
        elif name not in _QUERIES:
            rec.bad = rec.bad or f"the launcher calls torch's {name}"
        return out


class _Rec:
    def __init__(self):
        self.events = []
        self.bad = None
        self.inside = 0


_SIZES = {"i1": ("b", 1), "i8": ("b", 1), "i16": ("h", 2), "i32": ("i", 4), "i64": ("q", 8), "u1": ("B", 1),
          "u8": ("B", 1), "u16": ("H", 2), "u32": ("I", 4), "u64": ("Q", 8), "fp32": ("f", 4), "f32": ("f", 4),
          "fp64": ("d", 8)}


def _scalar(ty, v):
    fmt = _SIZES.get(ty)
    if fmt is None:
        return None
    try:
        raw = struct.pack("<" + fmt[0], v)
    except (struct.error, TypeError):
        return None
    return int.from_bytes(raw.ljust(8, b"\0"), "little"), fmt[1]


def record(fn, grid, args, gs, ds, opts, known):
    """Runs the launcher fn(grid, *args, *gs, *ds, **opts) as _run_fast does, recording it.
    known: [(tensor, slot)] of the tensors the node will hold (saved, outputs, buffer, output and
    input gradients) by slot.  Returns (steps, device index) for a Recipe, or (None, why)."""
    g = getattr(fn, "__wrapped__", fn).__globals__  # the generated module's (a trusted launcher is wrapped)
    orig = g.get("_kad_go")
    if orig is None:
        fn(grid, *args, *gs, *ds, **opts)
        return None, "the launcher has no direct launches"
    rec = _Rec()
    launches = []
    dev = [None]

    def go(k, grd, a, ck, key, num_warps, num_stages):
        c = ck.get(key) if key is not None and ck is not None else None
        h, x = g["_kad_hooks"].launch_enter_hook, g["_kad_hooks"].launch_exit_hook
        if c is None or getattr(c, "function", None) is None or getattr(h, "calls", h) or getattr(x, "calls", x):
            rec.bad = rec.bad or "a kernel of the backward is not compiled yet"
        else:
            launches.append((len(rec.events), c, tuple(grd), tuple(a)))
            rec.events.append(("launch", len(launches) - 1))
            dev[0] = key[1]
        rec.inside += 1
        try:
            return orig(k, grd, a, ck, key, num_warps, num_stages)
        finally:
            rec.inside -= 1

    # a JIT launch that does not pass through _kad_go would be missed: noticed, the key not recorded
    import triton.runtime.jit as tj
    jit_run = tj.JITFunction.run

    def run(self, *a, **k):
        if not rec.inside:
            rec.bad = rec.bad or "the launcher launches a kernel outside _kad_go"
        return jit_run(self, *a, **k)

    g["_kad_go"] = go
    tj.JITFunction.run = run
    try:
        with _Mode(rec):
            fn(grid, *args, *gs, *ds, **opts)
    finally:
        g["_kad_go"] = orig
        tj.JITFunction.run = jit_run
    if rec.bad:
        return None, rec.bad
    steps = _steps(rec, launches, known)
    if steps is None:
        return None, "an argument, a zero-fill or a kernel of the launcher has no recipe step"
    return steps, dev[0]


def _steps(rec, launches, known):
    slots = list(known)  # (tensor, slot)
    nslot = max(s for _, s in known) + 1
    steps = []
    by_id = {id(t): s for t, s in slots}

    def find(t):
        s = by_id.get(id(t))
        if s is not None:
            return s, 0
        st = t.untyped_storage().data_ptr()
        hits = [(u, s) for u, s in slots if u.untyped_storage().data_ptr() == st]
        if len(hits) != 1:  # unknown, or two held tensors share the storage: not recordable
            raise LookupError("an argument of the backward's kernels is not a tensor the node holds")
        u, s = hits[0]
        return s, t.data_ptr() - u.data_ptr()

    try:
        for ev in rec.events:
            if ev[0] == "alloc":
                t = ev[1]
                if id(t) in by_id:
                    continue
                slots.append((t, nslot))
                by_id[id(t)] = nslot
                steps.append(("alloc", nslot, t.untyped_storage().nbytes(), ev[2]))
                nslot += 1
            elif ev[0] == "zero":
                s = by_id.get(id(ev[1]))
                if s is None:
                    return None
                steps.append(("zero", s))
            else:
                _, c, grid, a = launches[ev[1]]
                md = c.metadata
                if (getattr(md, "num_ctas", 1) != 1 or getattr(md, "launch_cooperative_grid", False)
                        or getattr(md, "launch_pdl", False) or getattr(md, "global_scratch_size", 0)
                        or getattr(md, "profile_scratch_size", 0) or getattr(md, "tensordesc_meta", None)):
                    return None
                sig = list(c.src.signature.values())
                if len(sig) != len(a):
                    return None
                out = []
                for ty, v in zip(sig, a):
                    if ty == "constexpr":
                        continue
                    if not isinstance(ty, str):
                        return None
                    if ty.startswith("*"):
                        if not isinstance(v, torch.Tensor):
                            return None
                        s, off = find(v)
                        out.append((s, off, 0, 8))
                    else:
                        b = _scalar(ty, v)
                        if b is None:
                            return None
                        out.append((-1, 0, b[0], b[1]))
                steps.append(("launch", int(c.function), grid, 32 * md.num_warps, md.shared, out))
    except LookupError:
        return None
    return steps
