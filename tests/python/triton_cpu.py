"""Running real Triton kernels from the tests: Triton's CPU interpreter, launches, tensors.

Shared by test_emit_triton.py, test_grad_triton.py and validate_with_triton.py, which run
original, emitted and backward kernels on Triton itself (kad's own interpreter is not involved).
Not a test module (no test_ prefix); needs numpy, torch and triton, so the pytest modules skip
themselves before importing it when those are missing.

On the "cpu" device kernels run on Triton's interpreter with CPU torch tensors; on any other
device Triton compiles them.  Interpreter mode is scoped, never set at import: `interpreter()`
turns it on while entered and undoes it on exit.  Why: Triton reads TRITON_INTERPRET when a
@triton.jit function is defined, so a process-wide setting would silently turn other test
modules' kernels into interpreter stand-ins (not JITFunctions).  Consequences handled here:
  - triton.language's own jit functions (zeros, sum, rand, ...) are in whatever mode the first
    importer of triton had; while interpreting, a call of a compiled-mode jit function runs it
    as interpreter mode would have defined it;
  - `kernels.*` may already sit in sys.modules, compiled-mode, from another test module, so
    `corpus_module` imports tests/kernels under a package name of its own.
So these tests pass in one pytest process in any order with any other test modules.

Triton's interpreter has no libdevice (its functions need the CUDA bitcode library); the
libdevice functions kernels use get numpy stand-ins that compute in float64 and round once to the
operand's dtype.  Original and emitted kernels call the same stand-ins, so comparisons between
them stay exact.
"""
import contextlib
import importlib
import importlib.util
import os
import subprocess
import sys

import numpy as np
import torch
import triton.language as tl

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
REPO = os.path.dirname(TESTS)
KAD = os.environ.get("KAD", os.path.join(REPO, "build", "kad"))
KERNELS = os.path.join(TESTS, "kernels")

# The package name tests/kernels is imported under by corpus_module.
_KERNELS_PACKAGE = "kad_triton_cpu_kernels"


def device_from_env(*names):
    """The device named by the first of these environment variables that is set, else "cpu"."""
    for name in names:
        if name in os.environ:
            return os.environ[name]
    return "cpu"


def run_kad(args):
    """Runs build/kad (or $KAD) with args from the repository root; returns the CompletedProcess."""
    return subprocess.run([KAD, *args], capture_output=True, text=True, cwd=REPO)


# ---------------------------------------------------------------- interpreter mode

_LIBDEVICE_NP = {
    "tanh": np.tanh, "log1p": np.log1p, "expm1": np.expm1, "sinh": np.sinh, "cosh": np.cosh,
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "trunc": np.trunc,
    "rint": np.rint,
}


def _stand_in(np_fn):
    """A libdevice function for the interpreter: np_fn in float64, rounded to x's dtype.  A Python
    scalar operand is taken as an fp32 value, the type Triton gives a float literal."""
    from triton.runtime import interpreter

    def fn(x, _semantic=None, **_):
        if not isinstance(x, tl.tensor):
            x = tl.tensor(interpreter.TensorHandle(np.array([x], dtype=np.float32), tl.float32), tl.float32)
        data = x.handle.data
        out = np_fn(data.astype(np.float64)).astype(data.dtype)
        return tl.tensor(interpreter.TensorHandle(out, x.handle.dtype.scalar), x.type)

    fn.__triton_builtin__ = True
    return fn


def _interpreting_call(cache):
    """JITFunction.__call__ while interpreting: a call, from an interpreted kernel, of a jit
    function defined in compiled mode runs it as the InterpretedFunction interpreter mode would
    have made of it (one per function, in cache, keyed by id: a JITFunction's hash reads its
    source).  Compiled mode never calls it (it raises)."""
    from triton.runtime.interpreter import InterpretedFunction

    def call(self, *args, **kwargs):
        if id(self) not in cache:
            cache[id(self)] = (self, InterpretedFunction(self.fn))  # self keeps the id unique
        return cache[id(self)][1](*args, **kwargs)

    return call


@contextlib.contextmanager
def interpreter(device="cpu"):
    """While entered, and only on the "cpu" device: kernels defined and launched run on Triton's
    interpreter, with the libdevice stand-ins.  Other devices: nothing changes."""
    if device != "cpu":
        yield
        return
    from triton.language.extra import libdevice
    from triton.runtime.jit import JITFunction

    saved_env = os.environ.get("TRITON_INTERPRET")
    saved_call = JITFunction.__call__
    saved = {name: getattr(libdevice, name) for name in _LIBDEVICE_NP}
    os.environ["TRITON_INTERPRET"] = "1"
    JITFunction.__call__ = _interpreting_call({})
    for name, np_fn in _LIBDEVICE_NP.items():
        setattr(libdevice, name, _stand_in(np_fn))
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(libdevice, name, fn)
        JITFunction.__call__ = saved_call
        if saved_env is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = saved_env


# ---------------------------------------------------------------- kernels


def load_module(path, name):
    """The Python file at path, executed as a fresh module called name."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def grad_module(file, kernel, sig, wrt, out, tmp_path, tag):
    """`kad grad FILE:KERNEL` for (sig, wrt, out), written under tmp_path and imported (a fresh
    module per tmp_path: tag names the test file); returns (module, its text)."""
    p = run_kad(["grad", f"{file}:{kernel}", "--sig", sig, "--wrt", wrt, "--out", out])
    assert p.returncode == 0, p.stderr
    path = os.path.join(str(tmp_path), f"{kernel}_bwd.py")
    with open(path, "w") as f:
        f.write(p.stdout)
    return load_module(path, f"kad_{tag}_{kernel}_{abs(hash(str(tmp_path)))}"), p.stdout


@contextlib.contextmanager
def calls_of(owner, name):
    """While entered, owner.name records each call's positional arguments in the list it yields
    (then calls the original): which tensors a launcher zero-filled, how many torch.zeros."""
    calls, orig = [], getattr(owner, name)

    def spy(*a, **k):
        calls.append(a)
        return orig(*a, **k)

    setattr(owner, name, spy)
    try:
        yield calls
    finally:
        setattr(owner, name, orig)


def corpus_module(file):
    """tests/kernels/<file> imported as a module of a package of its own (so that its relative
    imports work), defined in the mode in force now: call it inside interpreter()."""
    if _KERNELS_PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            _KERNELS_PACKAGE, os.path.join(KERNELS, "__init__.py"), submodule_search_locations=[KERNELS])
        pkg = importlib.util.module_from_spec(spec)
        sys.modules[_KERNELS_PACKAGE] = pkg
        spec.loader.exec_module(pkg)
    return importlib.import_module(f"{_KERNELS_PACKAGE}.{file[:-3]}")


def unwrap(fn):
    """The jit function under triton.autotune / triton.heuristics wrappers: a kad signature
    already fixes every constexpr, so the tests launch it directly with those values."""
    while type(fn).__name__ in ("Autotuner", "Heuristics"):
        fn = fn.fn
    return fn


def const_value(text):
    """A constexpr of a kad signature as the Python value Triton is launched with."""
    if text.startswith("tl."):
        return getattr(tl, text[3:])
    if text in ("True", "False"):
        return text == "True"
    if text[:1] in "'\"":
        return text[1:-1]
    try:
        return int(text)
    except ValueError:
        return float(text)


def sig_params(sig):
    """'x=*fp32,n=i32,B=64' -> (runtime names, {constexpr: value})."""
    runtime, consts = [], {}
    for part in sig.split(","):
        name, _, text = (s.strip() for s in part.partition("="))
        if text.startswith("*") or text in ("i1", "i8", "i16", "i32", "i64", "u32", "u64",
                                            "fp16", "bf16", "fp32", "fp64"):
            runtime.append(name)
        else:
            consts[name] = const_value(text)
    return runtime, consts


# ---------------------------------------------------------------- buffers and launches


def to_torch(buf, device="cpu"):
    """A numpy buffer as a tensor on device; on the CPU it shares the buffer's memory, so what a
    kernel writes lands in buf.  uint16 buffers hold bf16 bit patterns (kadnum's encoding)."""
    if buf.dtype == np.uint16:
        t = torch.from_numpy(buf.view(np.int16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(buf)
    return t.to(device)


def to_numpy_(dst, t):
    """Copies a device tensor back into the numpy buffer it was made from (to_torch's inverse)."""
    t = t.cpu()
    if dst.dtype == np.uint16:
        t = t.view(torch.int16)
    dst[...] = t.numpy().view(dst.dtype)


def launch(fn, grid, args, consts, device="cpu"):
    """Runs kernel fn over grid with keyword arguments: args maps runtime parameters to numpy
    buffers (their contents are the kernel's results afterwards), tensors or scalars; consts maps
    constexprs to their values.  Waits for the device to finish."""
    kwargs = {n: to_torch(v, device) if isinstance(v, np.ndarray) else v for n, v in args.items()}
    unwrap(fn)[tuple(grid)](**kwargs, **consts)
    if device != "cpu":
        torch.cuda.synchronize()
        for n, v in args.items():
            if isinstance(v, np.ndarray):
                to_numpy_(v, kwargs[n])


def rows_apart(t, stride):
    """The 2-D tensor t in the first columns of a buffer whose rows are stride elements apart."""
    import torch
    buf = torch.zeros(t.shape[0], stride, dtype=t.dtype, device=t.device)
    buf[:, :t.shape[1]] = t
    return buf[:, :t.shape[1]]
