"""A thin ctypes binding of kad's C API (include/kad.h).

No compiler logic lives here: every call goes straight to libkad.  What this
module adds is argument marshalling (numpy buffers and Python scalars to
kad_arg), a check that each buffer's element type matches the parameter it
is passed for, and errors: a C call that fails raises KadError carrying the
context's rendered diagnostics ("file:line:col: error: ...").

The library is build/libkad.so under the repository root, unless the
environment variable KAD_LIB names another file.

    ctx = Context()
    ctx.add_source("add.py", text)
    k = ctx.specialize("add_kernel", "x_ptr=*fp32,y_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=256")
    print(k.ir)
    k.run((4,), dict(x_ptr=x, y_ptr=y, out_ptr=out, n=1000))            # float32 buffers
    k.run((4,), dict(x_ptr=x64, y_ptr=y64, out_ptr=out64, n=1000), mode="f64")
"""
import ctypes
import hashlib
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Union

import numpy as np

__all__ = ["KadError", "Context", "Kernel", "Pointer", "library_path", "version"]

# kad_specialize flags and kad_run modes (include/kad.h).
UNROLL_CONST_LOOPS = 1 << 0
NO_SIMPLIFY = 1 << 1
GRAD_ATOMICS = 1  # KAD_GRAD_ATOMICS
GRAD_SAVED = 2  # KAD_GRAD_SAVED
GRAD_KERNELS_ONLY = 4  # KAD_GRAD_KERNELS_ONLY
GRAD_TRUSTED = 8  # KAD_GRAD_TRUSTED
_MODES = {"as_written": 0, "f64": 1}

# Type aliases of the public signatures: a launch grid (an int or up to 3 ints) and a list of
# pointer-parameter names (or one comma-separated string).
Grid = Union[int, Sequence[int]]
Names = Union[str, Sequence[str]]


SAVE_PARAM = "kad_saved"  # KAD_SAVE_PARAM: the saved loop results' buffer parameter


class KadError(Exception):
    """A failed kad call; str(e) is the C diagnostics text."""


class _KadArg(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("nbytes", ctypes.c_int64),
        ("i", ctypes.c_int64),
        ("f", ctypes.c_double),
    ]


class Pointer:
    """A raw buffer for a pointer parameter of Kernel.run: an address and the
    number of bytes the kernel may touch from it (the interpreter checks
    every access against that span).  Used for memory numpy does not own,
    e.g. a torch tensor's storage; the caller keeps the memory alive and is
    responsible for its element type."""

    __slots__ = ("address", "nbytes")

    def __init__(self, address: int, nbytes: int) -> None:
        self.address = int(address)
        self.nbytes = int(nbytes)

    def __repr__(self):
        return f"Pointer(0x{self.address:x}, nbytes={self.nbytes})"


class _KadCheckOpts(ctypes.Structure):
    """kad_check_opts (include/kad.h)."""
    _fields_ = [
        ("wrt", ctypes.c_char_p),
        ("out", ctypes.c_char_p),
        ("grid", ctypes.c_int64 * 3),
        ("shapes", ctypes.c_char_p),
        ("args", ctypes.c_char_p),
        ("ranges", ctypes.c_char_p),
        ("seed", ctypes.c_uint64),
        ("directions", ctypes.c_int),
        ("elem_limit", ctypes.c_int64),
        ("rtol", ctypes.c_double),
        ("mutate", ctypes.c_char_p),
        ("saved", ctypes.c_int),
    ]


def library_path() -> str:
    """Where libkad is loaded from: $KAD_LIB; else the copy an install put
    beside this file (`pip install ./python` compiles it there); else
    <repo>/build/libkad.so of the checkout this file lives in."""
    env = os.environ.get("KAD_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    bundled = os.path.join(here, "libkad.so")
    if os.path.exists(bundled):
        return bundled
    repo = os.path.dirname(os.path.dirname(here))
    return os.path.join(repo, "build", "libkad.so")


_lib = None
_lib_lock = threading.Lock()


def _load():
    """Loads libkad once and declares the signatures of its functions."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        path = library_path()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise KadError(f"cannot load kad's library {path}: {e} (run `make`, or set KAD_LIB)") from e
        P, S, I, U = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint
        sigs = {
            "kad_ctx_new": ([], P),
            "kad_ctx_free": ([P], None),
            "kad_version": ([], S),
            "kad_add_source": ([P, S, S], I),
            "kad_add_module": ([P, S, S, S], I),
            "kad_set_global": ([P, S, S, S], I),
            "kad_module_imports": ([P, S], S),
            "kad_specialize": ([P, S, S, U], P),
            "kad_parse_ir": ([P, S, S], P),
            "kad_run_pass": ([P, S], I),
            "kad_kernel_ir": ([P], S),
            "kad_kernel_trusted": ([P], S),
            "kad_kernel_nparams": ([P], I),
            "kad_kernel_param_name": ([P, I], S),
            "kad_kernel_param_type": ([P, I], S),
            "kad_run": ([P, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(_KadArg), I, I], I),
            "kad_diagnostics": ([P], S),
            "kad_clear_diagnostics": ([P], None),
            "kad_check": ([P, ctypes.POINTER(_KadCheckOpts), ctypes.POINTER(I)], S),
        }
        # Reverse mode (docs/AD.md, docs/GRAD.md).  Optional: a library
        # built before they existed still loads; calling one then raises.
        optional = {
            "kad_grad": ([P, S, S], P),
            "kad_grad_module": ([P, S, S], S),
            "kad_grad_ex": ([P, S, S, U], P),
            "kad_set_tape_options": ([P, ctypes.c_longlong, ctypes.c_longlong], I),
            "kad_tape_report": ([P], S),
            "kad_grad_module_ex": ([P, S, S, U], S),
            "kad_grad_source": ([P, S, S, S, S, U], S),
            "kad_kernel_param_access": ([P, I], I),
            "kad_kernel_range_hints": ([P], S),
            "kad_audit": ([P], S),
            "kad_jvp": ([P, S, S], P),
            "kad_jvp_module": ([P, S, S], S),
            "kad_save_slot": ([P], ctypes.c_longlong),
            "kad_save_forward": ([P], P),
            "kad_save_module": ([P], S),
            "kad_race_check": ([P, S, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(_KadArg), I, I], I),
            "kad_race_module": ([P, S], S),
            "kad_check_launch": ([P, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64), I], I),
            # CUDA C / HIP (docs/LANGUAGE.md "CUDA C / HIP kernels", docs/EMIT.md "CUDA C")
            "kad_add_cuda_source": ([P, S, S], I),
            "kad_add_cuda_include_dir": ([P, S], I),
            "kad_specialize_cuda": ([P, S, S, ctypes.POINTER(I), U], P),
            "kad_kernel_cuda": ([P, I], S),
            "kad_grad_module_cuda": ([P, S, S, U, I], S),
            "kad_jvp_module_cuda": ([P, S, S, I], S),
        }
        for name, (argtypes, restype) in sigs.items():
            fn = getattr(lib, name)
            fn.argtypes = argtypes
            fn.restype = restype
        for name, (argtypes, restype) in optional.items():
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.argtypes = argtypes
                fn.restype = restype
        _lib = lib
        return lib


def version() -> str:
    """kad's version string."""
    return _load().kad_version().decode()


_build_id = None


def build_id() -> str:
    """A digest of the loaded library file: generated code depends on the
    exact build, not only on the version string (a rebuilt libkad must not
    reuse modules cached by the previous one)."""
    global _build_id
    if _build_id is None:
        _load()
        h = hashlib.sha256()
        with open(library_path(), "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _build_id = h.hexdigest()[:16]
    return _build_id


def _names(x):
    """["x_ptr", "w_ptr"] or "x_ptr,w_ptr" -> "x_ptr,w_ptr"."""
    return x if isinstance(x, str) else ",".join(x)


def _enc(s):
    return s.encode("utf-8")


def _dec(b):
    return b.decode("utf-8", errors="replace") if b is not None else ""


class Context:
    """A kad context: the sources added to it and the kernels made from them.

    Every Kernel keeps its Context alive; the C context is freed when the
    last of them is garbage-collected, or by close()."""

    def __init__(self) -> None:
        self._lib = _load()
        self._c = self._lib.kad_ctx_new()
        if not self._c:
            raise MemoryError("kad_ctx_new failed")

    def close(self) -> None:
        if self._c:
            self._lib.kad_ctx_free(self._c)
            self._c = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _handle(self):
        if not self._c:
            raise KadError("the context is closed")
        return self._c

    def diagnostics(self) -> str:
        """All diagnostics reported so far in this context, rendered."""
        return _dec(self._lib.kad_diagnostics(self._handle()))

    def _fail(self, what):
        """Raises KadError with the pending diagnostics, then forgets them."""
        text = self.diagnostics()
        self._lib.kad_clear_diagnostics(self._c)
        raise KadError(text.rstrip("\n") or f"{what} failed without a diagnostic")

    def _begin(self):
        self._lib.kad_clear_diagnostics(self._handle())

    def _need(self, name):
        """The C function `name`, or KadError when this library lacks it."""
        fn = getattr(self._lib, name, None)
        if fn is None:
            raise KadError(f"{library_path()} has no {name}: rebuild it (`make`)")
        return fn

    def add_source(self, filename: str, text: str) -> None:
        """Adds a Python module of @triton.jit functions (parsed now)."""
        self._begin()
        if self._lib.kad_add_source(self._c, _enc(filename), _enc(text)) != 0:
            self._fail(f"add_source({filename!r})")

    def add_module(self, modname: str, filename: str, text: str) -> None:
        """Adds a Python source file as the module of dotted name modname
        ("pkg.ops.utils"; a package's __init__.py is "pkg")."""
        self._begin()
        if self._lib.kad_add_module(self._c, _enc(modname), _enc(filename), _enc(text)) != 0:
            self._fail(f"add_module({modname!r})")

    def set_global(self, modname: str, name: str, value: str) -> None:
        """Sets module-level name of module modname to value text (what host
        code bound it to: "128", "'gelu'", "triton.language.math.exp", ...)."""
        self._begin()
        if self._lib.kad_set_global(self._c, _enc(modname), _enc(name), _enc(value)) != 0:
            self._fail(f"set_global({modname!r}, {name!r}, {value!r})")

    def set_tape_options(self, while_cap: int = 0, tape_budget: int = 0) -> None:
        """Tape options of the backwards made from now on (kad_set_tape_options):
        while_cap, the tape capacity of a `while` loop without a bound kad finds
        (0: the default, 1024 iterations); tape_budget, bytes of tape per launch
        above which taped `for` loops are checkpointed (0: no budget)."""
        fn = self._need("kad_set_tape_options")
        if fn(self._c, int(while_cap), int(tape_budget)) != 0:
            raise ValueError(f"kad: invalid tape options while_cap={while_cap}, tape_budget={tape_budget}")

    def module_imports(self, modname: str) -> list[str] | None:
        """Absolute names of the modules module modname imports (with their
        parent packages); None if no such module was added."""
        r = self._lib.kad_module_imports(self._c, _enc(modname))
        return None if r is None else r.decode().split()

    def specialize(self, kernel: str, sig: str, unroll: bool = False, simplify: bool = True) -> "Kernel":
        """Specializes kernel for the signature string; returns a Kernel."""
        self._begin()
        flags = (UNROLL_CONST_LOOPS if unroll else 0) | (0 if simplify else NO_SIMPLIFY)
        k = self._lib.kad_specialize(self._c, _enc(kernel), _enc(sig), flags)
        if not k:
            self._fail(f"specialize({kernel!r})")
        return Kernel(self, k)

    def add_cuda_include_dir(self, path: str) -> None:
        """Adds a directory where quoted #includes of later CUDA sources are looked for when not
        beside the including file (kad_add_cuda_include_dir; nvcc's -I)."""
        fn = self._need("kad_add_cuda_include_dir")
        self._begin()
        if fn(self._c, _enc(path)) != 0:
            self._fail(f"add_cuda_include_dir({path!r})")

    def add_cuda_source(self, filename: str, text: str) -> None:
        """Adds a CUDA C / HIP file (.cu, .cuh, .hip, .cpp; kad_add_cuda_source): its device code."""
        fn = self._need("kad_add_cuda_source")
        self._begin()
        if fn(self._c, _enc(filename), _enc(text)) != 0:
            self._fail(f"add_cuda_source({filename!r})")

    def specialize_cuda(self, kernel: str, targs: str, block: Sequence[int], flags: int = 0) -> "Kernel":
        """Specializes the __global__ function kernel (kad_specialize_cuda): targs the template
        arguments and extern __shared__ sizes ("scalar_t=fp32,BLOCK=256"), block (bx[, by[, bz]])."""
        fn = self._need("kad_specialize_cuda")
        b = list(map(int, block))
        if not 1 <= len(b) <= 3:
            raise ValueError("block must have 1 to 3 dimensions")
        dims = (ctypes.c_int * 3)(*(b + [1] * (3 - len(b))))
        self._begin()
        k = fn(self._c, _enc(kernel), _enc(targs or ""), dims, int(flags))
        if not k:
            self._fail(f"specialize_cuda({kernel!r})")
        return Kernel(self, k)

    def parse_ir(self, name: str, text: str) -> "Kernel":
        """Parses and verifies a kernel in textual IR; name is used in locations."""
        self._begin()
        k = self._lib.kad_parse_ir(self._c, _enc(name), _enc(text))
        if not k:
            self._fail(f"parse_ir({name!r})")
        return Kernel(self, k)


# Element types a buffer may have for a pointer parameter, per mode.  In f64
# mode every floating-point buffer holds float64 (kad's f64 contract).
_FLOAT_ELEMS = {"fp16": np.float16, "bf16": np.uint16, "fp32": np.float32, "fp64": np.float64,
                "fp8e5": np.uint8, "fp8e4nv": np.uint8, "fp8e4b15": np.uint8}  # fp8: bit patterns
_INT_ELEMS = {
    "i1": (np.bool_, np.int8, np.uint8),
    "i8": (np.int8,),
    "u8": (np.uint8,),
    "i16": (np.int16,),
    "u16": (np.uint16,),
    "i32": (np.int32,),
    "u32": (np.uint32,),
    "i64": (np.int64,),
    "u64": (np.uint64,),
}


def _buffer_dtypes(ptr_type, mode):
    """Accepted numpy dtypes for a pointer parameter "*fp32", "*bf16[...]"..."""
    elem = ptr_type[1:].split("[", 1)[0]
    if elem in _FLOAT_ELEMS:
        if mode == "f64":
            return (np.dtype(np.float64),)
        accepted = [_FLOAT_ELEMS[elem]]
        if elem == "bf16":  # numpy has no bfloat16: bit patterns in 16-bit ints
            accepted.append(np.int16)
        if elem.startswith("fp8"):
            accepted.append(np.int8)
        return tuple(np.dtype(t) for t in accepted)
    if elem in _INT_ELEMS:
        return tuple(np.dtype(t) for t in _INT_ELEMS[elem])
    return None  # unknown to this binding: not checked


class Kernel:
    """A specialized (or parsed) kernel of a Context."""

    def __init__(self, ctx: Context, handle: Any) -> None:
        self._ctx = ctx  # keeps the C context alive
        self._k = handle
        self._params = None  # params, read from the C kernel once (run_pass forgets them)

    @property
    def ir(self) -> str:
        """The kernel's textual IR."""
        self._ctx._handle()
        return _dec(self._ctx._lib.kad_kernel_ir(self._k))

    @property
    def trusted(self) -> str:
        """For a backward built with trusted=True: the buffers it loads as the forward stored them,
        comma-separated ("" when none: the same kernel as without trusted)."""
        self._ctx._handle()
        return _dec(self._ctx._lib.kad_kernel_trusted(self._k))

    @property
    def params(self) -> list[tuple[str, str]]:
        """Runtime parameters in call order: [(name, type)], e.g. ("x_ptr", "*fp32")."""
        self._ctx._handle()
        if self._params is None:
            lib, k = self._ctx._lib, self._k
            self._params = tuple((_dec(lib.kad_kernel_param_name(k, i)), _dec(lib.kad_kernel_param_type(k, i)))
                                 for i in range(lib.kad_kernel_nparams(k)))
        return list(self._params)

    def param_access(self) -> dict[str, int]:
        """{name: bits} for the pointer parameters: 1 if some load may read
        through it, 2 if some store or atomic may write through it
        (kad_kernel_param_access)."""
        fn = self._ctx._need("kad_kernel_param_access")
        self._ctx._handle()
        out = {}
        for i, (name, ty) in enumerate(self.params):
            if ty.startswith("*"):
                out[name] = fn(self._k, i)
        return out

    def range_hints(self) -> list[tuple[str, int, int]]:
        """[(name, lo, hi)]: the int parameters whose value in [lo, hi] makes
        a loop of the kernel run once (kad_kernel_range_hints); a signature
        giving the parameter that range (`n=i32[lo:hi]`) makes it
        straight-line code."""
        text = _dec(self._ctx._need("kad_kernel_range_hints")(self._k))
        out = []
        for entry in filter(None, text.split(",")):
            name, bounds = entry.split("=")
            lo, hi = bounds.split(":")
            out.append((name, int(lo), int(hi)))
        return out

    def audit(self) -> str:
        """The determinism audit (kad_audit): one line per finding
        ("file:line:col: nondeterministic: ...", "... batch-variant: ...",
        "... note: ..."), then a summary line."""
        fn = self._ctx._need("kad_audit")
        self._ctx._begin()
        text = fn(self._k)
        if text is None:
            self._ctx._fail("audit")
        return _dec(text)

    def grad(self, wrt: Names, out: Names, deterministic: bool = True, saved: bool = False,
             trusted: bool = False) -> "Kernel":
        """The backward kernel (kad_grad_ex): this kernel's runtime parameters,
        then d_<out>..., then d_<wrt>...; wrt and out are lists of
        pointer-parameter names (or comma-separated strings).
        deterministic=False: input gradients accumulated with atomic_add.
        saved=True: the backward of the saving forward (save_forward), which
        takes its kad_saved buffer after the runtime parameters.
        trusted=True: the backward that loads the outputs and statistics the
        forward stored instead of recomputing them (KAD_GRAD_TRUSTED): run it
        only on buffers unchanged since the forward."""
        fn = self._ctx._need("kad_grad_ex")
        self._ctx._begin()
        flags = (0 if deterministic else GRAD_ATOMICS) | (GRAD_SAVED if saved else 0) | (GRAD_TRUSTED if trusted else 0)
        g = fn(self._k, _enc(_names(wrt)), _enc(_names(out)), flags)
        if not g:
            self._ctx._fail("grad")
        return Kernel(self._ctx, g)

    def save_slot(self) -> int:
        """fp32 elements per program of the loop results the saving forward
        stores (kad_save_slot); 0: nothing to save."""
        fn = self._ctx._need("kad_save_slot")
        self._ctx._begin()
        n = fn(self._k)
        if n < 0:
            self._ctx._fail("save_slot")
        return int(n)

    def save_forward(self) -> "Kernel":
        """The saving forward (kad_save_forward): this kernel's runtime
        parameters, then kad_saved (save_slot() fp32 elements per program)."""
        fn = self._ctx._need("kad_save_forward")
        self._ctx._begin()
        g = fn(self._k)
        if not g:
            self._ctx._fail("save_forward")
        return Kernel(self._ctx, g)

    def save_module(self) -> str:
        """The saving forward as a Python module (kad_save_module):
        launch_<kernel>_fwd(grid, *args, kad_saved)."""
        fn = self._ctx._need("kad_save_module")
        self._ctx._begin()
        text = fn(self._k)
        if text is None:
            self._ctx._fail("save_module")
        return _dec(text)

    def grad_module(self, wrt: Names, out: Names, deterministic: bool = True, saved: bool = False,
                    kernels_only: bool = False, trusted: bool = False) -> str:
        """The backward as a Python module text (kad_grad_module_ex,
        docs/GRAD.md): its kernels, then their launcher; deterministic,
        saved and trusted as for grad() (a trusted module's launcher takes
        outputs_unmodified=True); kernels_only: the kernels alone."""
        fn = self._ctx._need("kad_grad_module_ex")
        self._ctx._begin()
        flags = ((0 if deterministic else GRAD_ATOMICS) | (GRAD_SAVED if saved else 0)
                 | (GRAD_KERNELS_ONLY if kernels_only else 0) | (GRAD_TRUSTED if trusted else 0))
        text = fn(self._k, _enc(_names(wrt)), _enc(_names(out)), flags)
        if text is None:
            self._ctx._fail("grad_module")
        return _dec(text)

    def cuda_module(self, hip: bool = False) -> str:
        """The kernel as a CUDA C (hip: HIP) module with its launcher (kad_kernel_cuda)."""
        fn = self._ctx._need("kad_kernel_cuda")
        self._ctx._begin()
        text = fn(self._k, 1 if hip else 0)
        if text is None:
            self._ctx._fail("kernel_cuda")
        return _dec(text)

    def grad_module_cuda(self, wrt: Names, out: Names, deterministic: bool = True, saved: bool = False,
                         hip: bool = False) -> str:
        """The backward as a CUDA C (hip: HIP) module (kad_grad_module_cuda, docs/EMIT.md "CUDA C"):
        <kernel>_bwd and extern "C" launch_<kernel>_bwd."""
        fn = self._ctx._need("kad_grad_module_cuda")
        self._ctx._begin()
        flags = (0 if deterministic else GRAD_ATOMICS) | (GRAD_SAVED if saved else 0)
        text = fn(self._k, _enc(_names(wrt)), _enc(_names(out)), flags, 1 if hip else 0)
        if text is None:
            self._ctx._fail("grad_module_cuda")
        return _dec(text)

    def jvp_module_cuda(self, wrt: Names, out: Names, hip: bool = False) -> str:
        """The forward-mode kernel as a CUDA C (hip: HIP) module (kad_jvp_module_cuda)."""
        fn = self._ctx._need("kad_jvp_module_cuda")
        self._ctx._begin()
        text = fn(self._k, _enc(_names(wrt)), _enc(_names(out)), 1 if hip else 0)
        if text is None:
            self._ctx._fail("jvp_module_cuda")
        return _dec(text)

    def jvp(self, wrt: Names, out: Names) -> "Kernel":
        """The forward-mode kernel (kad_jvp): this kernel's runtime
        parameters, then t_<wrt>..., then t_<out>... (in parameter order;
        a name in both once, among the inputs'): the outputs and their
        tangents in one pass.  t_<out> holds the tangent of the output's
        value before the launch (zeros for a fresh output)."""
        fn = self._ctx._need("kad_jvp")
        self._ctx._begin()
        g = fn(self._k, _enc(_names(wrt)), _enc(_names(out)))
        if not g:
            self._ctx._fail("jvp")
        return Kernel(self._ctx, g)

    def jvp_module(self, wrt: Names, out: Names) -> str:
        """The jvp as a Python module text (kad_jvp_module, docs/GRAD.md
        "Forward mode"): <kernel>_jvp and launch_<kernel>_jvp."""
        fn = self._ctx._need("kad_jvp_module")
        self._ctx._begin()
        text = fn(self._k, _enc(_names(wrt)), _enc(_names(out)))
        if text is None:
            self._ctx._fail("jvp_module")
        return _dec(text)

    def run_pass(self, name: str) -> None:
        """Runs a named IR pass ("simplify", "dce", "verify") in place."""
        self._ctx._begin()
        self._params = None
        if self._ctx._lib.kad_run_pass(self._k, _enc(name)) != 0:
            self._ctx._fail(f"pass {name!r}")

    def run(self, grid: Grid, args: Sequence[Any] | Mapping[str, Any], mode: str = "as_written") -> None:
        """Runs the kernel on kad's CPU interpreter.

        grid: an int or a tuple of up to 3 ints.  args: the runtime
        arguments in parameter order, or a dict by name: numpy arrays for
        pointer parameters (C-contiguous; written in place) or Pointer
        spans, Python ints and floats for scalars.  mode: "as_written" or "f64"."""
        grid3, cargs, keep = self._marshal(grid, args, mode)
        self._ctx._begin()
        rc = self._ctx._lib.kad_run(self._k, grid3, cargs, len(self.params), _MODES[mode])
        del keep
        if rc != 0:
            self._ctx._fail("run")

    def check_races(self, grid: Grid, args: Sequence[Any] | Mapping[str, Any], out: Names,
                    mode: str = "as_written") -> None:
        """Raises KadError (located at the store) when this launch, with these arguments (as run
        takes them), has two programs or two lanes of one store writing one element of an
        output in out (kad_race_check: kad's check kernel on the interpreter, unless kad proves
        it for the launch).  Writes nothing into the arguments."""
        fn = self._ctx._need("kad_race_check")
        grid3, cargs, keep = self._marshal(grid, args, mode)
        self._ctx._begin()
        rc = fn(self._k, _enc(_names(out)), grid3, cargs, len(self.params), _MODES[mode])
        del keep
        if rc != 0:
            self._ctx._fail("the one-writer check")

    def check_launch(self, grid: Grid, args: Sequence[Any]) -> None:
        """A backward kernel's launch conditions (kad_check_launch) for a launch of its forward with
        these runtime arguments (in order; only the ints are read): KadError, located, when the
        launch breaks one.  The package calls it before the forward runs."""
        fn = self._ctx._need("kad_check_launch")
        grid = (grid,) if isinstance(grid, int) else tuple(grid)
        grid3 = (ctypes.c_int64 * 3)(*(list(map(int, grid)) + [1] * (3 - len(grid))))
        ints = [int(v) if isinstance(v, int) else 0 for v in args]
        ia = (ctypes.c_int64 * max(1, len(ints)))(*ints)
        self._ctx._begin()
        if fn(self._k, grid3, ia, len(ints)) != 0:
            self._ctx._fail("the launch's conditions")

    def race_module(self, out: Names) -> str:
        """The one-writer check of a launch for a GPU as a Python module (kad_race_module;
        check_<kernel>_races(grid, *args)); "" when kad proves every launch."""
        fn = self._ctx._need("kad_race_module")
        self._ctx._begin()
        text = fn(self._k, _enc(_names(out)))
        if text is None:
            self._ctx._fail("the one-writer check module")
        return text.decode()

    def _marshal(self, grid, args, mode):
        """run's arguments as kad_run takes them: (grid3, cargs, the buffers to keep alive)."""
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {sorted(_MODES)}, not {mode!r}")
        params = self.params
        if isinstance(args, dict):
            unknown = set(args) - {n for n, _ in params}
            missing = [n for n, _ in params if n not in args]
            if unknown or missing:
                raise TypeError(f"arguments: missing {missing}, unknown {sorted(unknown)}; "
                                f"the kernel takes {[n for n, _ in params]}")
            values = [args[n] for n, _ in params]
        else:
            values = list(args)
            if len(values) != len(params):
                raise TypeError(f"the kernel takes {len(params)} runtime arguments "
                                f"({[n for n, _ in params]}), {len(values)} given")

        grid = (grid,) if isinstance(grid, int) else tuple(grid)
        if not 1 <= len(grid) <= 3:
            raise ValueError("grid must have 1 to 3 dimensions")
        grid3 = (ctypes.c_int64 * 3)(*(list(map(int, grid)) + [1] * (3 - len(grid))))

        cargs = (_KadArg * max(1, len(params)))()
        keep = []  # buffers stay referenced until the call returns
        for i, ((name, ty), v) in enumerate(zip(params, values)):
            if ty.startswith("*") and isinstance(v, Pointer):
                cargs[i].data = v.address
                cargs[i].nbytes = v.nbytes
            elif ty.startswith("*"):
                if not isinstance(v, np.ndarray):
                    raise TypeError(f"{name}: expected a numpy array for {ty}, got {type(v).__name__}")
                if not v.flags.c_contiguous or not v.flags.writeable:
                    raise ValueError(f"{name}: the array must be C-contiguous and writeable")
                ok = _buffer_dtypes(ty, mode)
                if ok is not None and v.dtype not in ok:
                    raise TypeError(f"{name}: a {ty} buffer in {mode} mode must hold "
                                    f"{' or '.join(str(d) for d in ok)}, not {v.dtype}")
                keep.append(v)
                cargs[i].data = v.ctypes.data
                cargs[i].nbytes = v.nbytes
            elif ty.startswith("fp") or ty == "bf16":
                cargs[i].f = float(v)
            else:
                if isinstance(v, float) and not v.is_integer():
                    raise TypeError(f"{name}: expected an integer for {ty}, got {v!r}")
                cargs[i].i = int(v)
        return grid3, cargs, keep

    def check_gradients(self, grid: Grid, wrt: Names, out: Names, shapes: Mapping[str, int],
                        args: Mapping[str, int | float] | None = None,
                        ranges: Mapping[str, tuple[float, float]] | None = None, seed: int = 0,
                        directions: int = 0, elem_limit: int = 0, rtol: float = 0.0,
                        saved: bool = False) -> tuple[bool, str]:
        """Runs kad's float64 gradient checker (kad_check) on this kernel.

        wrt, out: pointer-parameter names (lists or comma-separated).  shapes:
        {pointer param: element count}; args: {scalar param: value}; ranges:
        {input: (lo, hi)}.  Zero options take the C defaults (4 directions,
        per-element check up to 4096 elements, rtol 1e-6).  saved: check the
        backward of the saving forward (docs/AD.md, "Saved loop results"),
        run after it on the same inputs.  Returns (passed,
        report); raises KadError with the located diagnostics when kad cannot
        differentiate the kernel or the configuration is wrong."""
        def names(v):
            return ",".join(v) if isinstance(v, (list, tuple)) else (v or "")

        def kv(d, fmt=str):
            return ",".join(f"{k}={fmt(v)}" for k, v in (d or {}).items())

        grid = (grid,) if isinstance(grid, int) else tuple(grid)
        if not 1 <= len(grid) <= 3:
            raise ValueError("grid must have 1 to 3 dimensions")
        o = _KadCheckOpts()
        o.wrt, o.out = _enc(names(wrt)), _enc(names(out))
        for i, g in enumerate(list(map(int, grid)) + [1] * (3 - len(grid))):
            o.grid[i] = g
        o.shapes = _enc(kv(shapes))
        o.args = _enc(kv(args, lambda v: repr(float(v)) if isinstance(v, float) else str(v)))
        o.ranges = _enc(kv(ranges, lambda r: f"{float(r[0])!r}:{float(r[1])!r}"))
        o.seed, o.directions, o.elem_limit, o.rtol = int(seed), int(directions), int(elem_limit), float(rtol)
        # Testing aid (docs/AD.md): KAD_TEST_MUTATE=<rule> breaks one adjoint rule on purpose.
        mutate = os.environ.get("KAD_TEST_MUTATE")
        o.mutate = _enc(mutate) if mutate else None
        o.saved = 1 if saved else 0
        passed = ctypes.c_int(0)
        self._ctx._begin()
        rep = self._ctx._lib.kad_check(self._k, ctypes.byref(o), ctypes.byref(passed))
        if rep is None:
            self._ctx._fail("check_gradients")
        return bool(passed.value), _dec(rep)
