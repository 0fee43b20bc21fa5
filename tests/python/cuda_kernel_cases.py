"""The kernels of tests/cuda/ (per-thread CUDA C / HIP) as test cases for kad's CUDA C modules
(issue 36): each case's launch (block, grid, shapes, arguments), its math in torch float64, and
what kad's CUDA C emitter is expected to refuse for it, with the emitter's message.

Used by tests/python/test_cuda_kernels_cpu.py (modules run on the CPU stand-in of
tests/python/cuda_shim/), tests/python/test_cuda_kernels_nvcc.py (every module compiled with nvcc
-c) and tests/gpu/test_cuda_kernels_gpu.py (the same modules, and the kernels' own sources, on a
GPU).  Not a test file itself.

Modes of a case: "emit" (kad's forward as CUDA C), "bwd" (the default backward), "atomics"
(`kad grad --atomics`), "jvp" (the forward-mode module).  `refuse[mode]` is a regex of the
emitter's message where kad refuses that module today: the tests mark those xfail(strict) with
the message, so a refusal that goes away (or changes) is noticed.
"""
import ctypes
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field

import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KAD = os.environ.get("KAD_BIN", os.path.join(REPO, "build", "kad"))
CUDA_DIR = os.path.join(REPO, "tests", "cuda")


SHIM = os.path.join(REPO, "tests", "python", "cuda_shim")
SHIM_DRIVER = """
#include <thread>
#include <vector>
extern "C" void kad_run(unsigned kad_gx, unsigned kad_gy, unsigned kad_gz, %s)
{
    gridDim = {kad_gx, kad_gy, kad_gz};
    blockDim = {%d, 1, 1};
    for (unsigned kad_z = 0; kad_z < kad_gz; kad_z++)
        for (unsigned kad_y = 0; kad_y < kad_gy; kad_y++)
            for (unsigned kad_x = 0; kad_x < kad_gx; kad_x++) {
                std::barrier<> kad_bar(%d);
                kad_barrier = &kad_bar;
                std::vector<std::thread> kad_ts;
                for (unsigned kad_t = 0; kad_t < %d; kad_t++)
                    kad_ts.emplace_back([=] {
                        threadIdx = {kad_t, 0, 0};
                        blockIdx = {kad_x, kad_y, kad_z};
                        %s(%s);
                    });
                for (auto &kad_th : kad_ts)
                    kad_th.join();
            }
}
"""


def shim_run(gxx, kern, params, names, lanes, kernel, tmp_path, name):
    """kern (the emitted kernels' text) compiled by g++ against the CPU stand-in of the CUDA API
    (tests/python/cuda_shim/) with a driver `kad_run(grid_x, grid_y, grid_z, params...)` that runs
    every block of the grid, one std::thread per lane; returns kad_run from the loaded library
    (restype None; the caller sets argtypes)."""
    cpp, so = tmp_path / (name + ".cpp"), tmp_path / (name + ".so")
    cpp.write_text(kern + SHIM_DRIVER % (params, lanes, lanes, lanes, kernel, ", ".join(names)))
    p = subprocess.run([gxx, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-I", SHIM, str(cpp), "-o",
                        str(so)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    fn = ctypes.CDLL(str(so)).kad_run
    fn.restype = None
    return fn
MARK = "// ---- the launcher"

# The emitter's messages (src/emit/emit_cuda_host.c, emit_cuda.c) for the refusals below.
SHARED_LANES = r"has shape fp32\[272\], but the kernel's tiles are \[256\]"


class Refused(Exception):
    """kad refused to print a module; the message is its diagnostics."""


@dataclass
class Case:
    id: str
    file: str                 # under tests/cuda/
    kernel: str
    block: tuple
    grid: tuple
    wrt: list
    out: list
    inputs: object            # gen -> {param: float64 tensor | number} (outputs included, zeros)
    ref: object               # {param: float64 tensor | number} -> {out: tensor}
    sig: str = ""             # kad's --sig (template arguments, extern __shared__ sizes)
    dtype: object = torch.float32
    refuse: dict = field(default_factory=dict)
    # The original source's launch (tests/gpu): the kernel's name with its template arguments,
    # the wrapper's parameters (C) and the call's arguments (default: the parameters' names).
    tname: str = ""
    cparams: str = ""
    ccall: str = ""
    smem: int = 0             # dynamic shared memory bytes (extern __shared__)
    original: bool = True     # False: the source does not compile outside its torch extension
    bitwise: bool = True      # the default backward gives the same bits on every run
    fwd_atomic: bool = False  # the forward accumulates into its output (zero it first)
    atomic_bwd: bool = False  # the default backward needs atomics (several programs write an element)
    flags_hold: bool = True   # the default backward's plain-store flags are true for this launch (else all
                              # false: its atomics fallback, checked so that a stronger analysis is noticed)
    tol: float = 2e-5         # relative to the reference's max |value|, fp32 on the device
    note: str = ""

    def spec(self, mode):
        """kad's command line for a mode."""
        loc = "%s:%s" % (os.path.join("tests", "cuda", self.file), self.kernel)
        sig = " --sig %s" % self.sig if self.sig else ""
        block = " --block " + ",".join(map(str, self.block))
        ad = " --wrt %s --out %s" % (",".join(self.wrt), ",".join(self.out))
        if mode == "emit":
            return "emit %s%s%s --emit cuda" % (loc, sig, block)
        if mode == "bwd":
            return "grad %s%s%s%s --emit cuda" % (loc, sig, block, ad)
        if mode == "atomics":
            return "grad %s%s%s%s --atomics --emit cuda" % (loc, sig, block, ad)
        if mode == "jvp":
            return "jvp %s%s%s%s --emit cuda" % (loc, sig, block, ad)
        raise ValueError(mode)

    def launcher(self, mode):
        return "launch_%s%s" % (self.kernel, {"emit": "", "bwd": "_bwd", "atomics": "_bwd", "jvp": "_jvp"}[mode])


def kad_module(case, mode):
    """The module's CUDA C text; Refused(message) when kad refuses it.  An expected refusal whose
    message is not the expected one is an AssertionError (a different failure, not the known one)."""
    p = subprocess.run([KAD] + shlex.split(case.spec(mode)), cwd=REPO, capture_output=True, text=True,
                       timeout=300)
    want = case.refuse.get(mode)
    if p.returncode != 0:
        msg = p.stderr.strip()
        assert "error:" in msg and "CUDA C emitter" in msg, msg
        if want is not None:
            assert re.search(want, msg), "refused, but not as expected (%s):\n%s" % (want, msg)
        raise Refused(msg)
    assert p.stdout.startswith("//"), p.stderr
    return p.stdout


def modes_params(cases, modes, pytest):
    """pytest.param per (case, mode), the expected refusals marked xfail(strict) with their message."""
    out = []
    for c in cases:
        for m in modes:
            marks = []
            if m in c.refuse:
                marks = [pytest.mark.xfail(raises=Refused, strict=True,
                                           reason="kad refuses %s: %s" % (m, c.refuse[m]))]
            out.append(pytest.param(c, m, marks=marks, id="%s-%s" % (c.id, m)))
    return out


# ---- launchers: signatures, flags, guards ------------------------------------------------------

CTYPES = {"float": ctypes.c_float, "double": ctypes.c_double, "int": ctypes.c_int32, "int32_t": ctypes.c_int32,
          "int64_t": ctypes.c_int64, "uint32_t": ctypes.c_uint32, "unsigned": ctypes.c_uint32,
          "bool": ctypes.c_bool, "cudaStream_t": ctypes.c_void_p}


def parse_params(text):
    """'float *x, int32_t n' -> [(ctypes type, name)]."""
    out = []
    for prm in [p.strip() for p in text.split(",") if p.strip()]:
        m = re.match(r"(.*?)([A-Za-z_]\w*)$", prm)
        ty, nm = m.group(1).strip(), m.group(2)
        ty = ty.replace("const ", "").replace("__restrict__", "").strip()
        out.append((ctypes.c_void_p if ty.endswith("*") else CTYPES[ty], nm))
    return out


def _c_to_py(expr):
    """A launcher condition (C over int64 arguments and the grid) as a Python expression."""
    e = re.sub(r"\((?:int64_t|int32_t|unsigned)\)", "", expr)
    e = e.replace("&&", " and ").replace("||", " or ").replace("!(", " not (")
    e = re.sub(r"(\w+) \? (\w+) : (\w+)", r"(\2 if \1 else \3)", e)  # the fold's rows: flag ? 9LL : 1LL
    return re.sub(r"(\d+)(?:LL|u)\b", r"\1", e)


def _load_cover_py():
    """_kad_covers_now of src/emit/py/cover.py (the Python launchers' check), loaded from the source."""
    ns = {}
    with open(os.path.join(REPO, "src", "emit", "py", "cover.py"), encoding="utf-8") as f:
        exec(compile(f.read(), "cover.py", "exec"), ns)
    return ns["_kad_covers_now"]


kad_covers_py = _load_cover_py()


def _tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


# The launcher's kad_tx_* helpers (tape sizes) in Python: C's truncating division and remainder.
_TAPE_HELPERS = {
    "kad_tx_add": lambda a, b: a + b, "kad_tx_sub": lambda a, b: a - b, "kad_tx_mul": lambda a, b: a * b,
    "kad_tx_div": _tdiv, "kad_tx_rem": lambda a, b: a - b * _tdiv(a, b), "kad_tx_max": max, "kad_tx_min": min,
    "kad_tx_cdiv": lambda a, b: (a + b - 1) // b,
    "kad_tape_numel": lambda trips, gx, gy, gz, slot: max(trips, 0) * gx * gy * gz * slot,
}


class Launcher:
    """A module's launcher read from its text: its parameters (after grid_x, grid_y, grid_z), the
    plain-store flags and launch guards it computes, its kernel and the kernel's arguments."""

    def __init__(self, src, fn):
        host = src[src.index(MARK):]
        text = host[host.index('extern "C" int %s(' % fn):]
        head = text[text.index("(") + 1:text.index(")\n{")]
        self.params = parse_params(head)[3:-1]  # the grid before, the stream after
        body = text[text.index("{\n") + 2:text.index("\n}\n")]
        self.flags = {m.group(1): m.group(2) for m in re.finditer(r"const bool (\w+) = (.*);", body)}
        lines = body.splitlines()
        self.guards = []
        for i, ln in enumerate(lines):
            m = re.match(r"\s*if \((.*)\)( //.*)?$", ln)
            if m and i + 1 < len(lines) and "return (int)cudaErrorInvalidValue" in lines[i + 1]:
                self.guards.append(m.group(1))
        # the launches in order: (kernel, its grid's dim3 arguments, lanes, arguments); the first is the
        # main kernel (on the forward's grid, or the fold's), the others a fold's sum kernels or the
        # gather kernels; whens: each one's condition as C (the line before it: `if (C)` or
        # `if (errl == cudaSuccess && C) {`), or None
        self.launches, self.whens = [], []
        for m in re.finditer(r"(\w+)<<<dim3\((.*?)\), (\d+), 0, stream>>>\((.*)\);", body):
            self.launches.append((m.group(1), [g.strip() for g in m.group(2).split(",")], int(m.group(3)),
                                  [a.strip() for a in m.group(4).split(",")]))
            before = body[:m.start()].rstrip("\n ").splitlines()[-1]
            w = re.match(r"\s*if \((?:errl == cudaSuccess(?: && )?)?(.*?)\)(?: \{| //.*)?$", before)
            self.whens.append(w.group(1) if w and w.group(1) else None)
        self.kernel, self.grid, self.lanes, self.kargs = self.launches[0]
        # the fold's values (programs, spans, rows: `const T kad_... = C;` in order) and partials:
        # (name, C type, rows, span)
        self.fold = [(n, c) for n, c in re.findall(r"const (?:int64_t|int32_t|unsigned) (kad_\w+) = (.*?);", body)
                     if not n.endswith("_numel")]  # the tapes' sizes: tape_sizes
        self.parts = [(m.group(2), m.group(1), m.group(3), m.group(4)) for m in re.finditer(
            r"(\w+) \*(\w+) = NULL;\n.*MallocAsync\(\(void \*\*\)&\2, \(size_t\)\((\w+) \* (\w+) > 0", body)]
        # `while` loops' tapes: their heads (the overflow flag at element 0) cleared, read back after the launch
        self.heads = {m.group(1): int(m.group(2)) for m in re.finditer(
            r"cudaMemsetAsync\((kad_tape\d+), 0, (\d+) \* sizeof", body)}
        self.zeroed = re.findall(r"cudaMemsetAsync\((\w+), 0,", body)
        self.zeroed = [z for z in self.zeroed if z not in [p for p, _, _, _ in self.parts] and z not in self.heads]
        # zero-fills the launcher skips when the launch writes every element: gradient -> (the flag the
        # check is under or None, its arrays by name as C, kad_covers' arguments as C)
        self.covers = {}
        for m in re.finditer(r"// (\w+): zero-filled unless this launch writes every element \(access_cover\)\n"
                             r"\s*bool kad_cover\d+ = false;\n(?:\s*if \((\w+)\)\n)?\s*\{\n(.*?)\n\s*\}\n", body, re.S):
            arrays = dict(re.findall(r"(kad_\w+)\[\] = \{(.*?)\}", m.group(3)))
            call = re.search(r"kad_covers\((.*)\);", m.group(3)).group(1)
            self.covers[m.group(1)] = (m.group(2), arrays, call)
        # output gradients the backward runs on private copies: (copy, caller's)
        self.copies = re.findall(r"cudaMemcpyAsync\((\w+), (\w+),", body)
        # tapes the launcher allocates: (name, its element count as C)
        self.tapes = re.findall(r"const int64_t (\w+)_numel = (.*);", body)

    def env(self, grid, args, nfold=2):
        """The launcher's scalars for a launch: the arguments, the grid, the flags and the fold's values
        (nfold: what kad_fold_programs returns here, at most the programs; any count gives the same
        gradients up to rounding)."""
        e = {n: (v if not isinstance(v, torch.Tensor) else 0) for n, v in args.items()}
        e.update(grid_x=grid[0], grid_y=grid[1], grid_z=grid[2], kad_bad=False, INT32_MAX=2 ** 31 - 1,
                 INT64_MAX=2 ** 63 - 1, kad_fold_programs=lambda t: max(1, min(nfold, t)))
        e.update({n: bool(eval(_c_to_py(c), {}, e)) for n, c in self.flags.items()})
        for n, c in self.fold:
            e[n] = int(eval(_c_to_py(c), {}, e))
        return e

    def covered(self, name, env):
        """Does the launcher skip the zero-fill of gradient `name` for the launcher's values env (its
        cover check, done by kad's Python twin of kad_covers: src/emit/py/cover.py)?"""
        if name not in self.covers:
            return False
        flag, arrays, call = self.covers[name]
        if flag and not env[flag]:
            return False
        a = {k: [int(eval(_c_to_py(x), {}, env)) for x in v.split(",") if x.strip()] for k, v in arrays.items()}
        args = [t.strip() for t in call.split(",")]
        numel, nv, ncl, nneg = [int(eval(_c_to_py(args[i]), {}, env)) for i in (0, 1, 4, 9)]
        vs = {j: (a["kad_st"][j], a["kad_ext"][j] if a["kad_ext"][j] >= 0 else None) for j in range(nv)}
        clauses, o = [], 0
        for i in range(ncl):
            n = a["kad_cn"][i]
            clauses.append((a["kad_cb"][i], tuple(a["kad_ci"][o:o + n]), tuple(a["kad_ca"][o:o + n])))
            o += n
        return kad_covers_py((numel,), (1,), vs, clauses, a["kad_neg"][:nneg])

    def grid_of(self, launch, env):
        """A launch's grid (three ints) for the launcher's values env."""
        g = [int(eval(_c_to_py(x), {}, env)) for x in launch[1]]
        return tuple(g) + (1,) * (3 - len(g))

    def tape_sizes(self, grid, args):
        """The element count of each tape the launcher allocates for this launch."""
        e = self.env(grid, args)
        e.update(_TAPE_HELPERS)
        return {n: int(eval(_c_to_py(c.replace(", &kad_bad", "")), {}, e)) for n, c in self.tapes}

    def flag_values(self, grid, args):
        """The flags the launcher computes for this launch (True: plain stores)."""
        e = self.env(grid, args)
        return {n: bool(eval(_c_to_py(c), {}, e)) for n, c in self.flags.items()}

    def refuses(self, grid, args):
        e = self.env(grid, args)
        return [g for g in self.guards if eval(_c_to_py(g), {}, e)]


def _kernel_decl(src, name):
    m = re.search(r'extern "C" __global__ void __launch_bounds__\((\d+)\) %s\(([^)]*)\)' % name, src)
    assert m, "no kernel %s in the module" % name
    return m


def kernel_signature(src, name):
    """The lanes and parameters of the module's __global__ kernel `name`."""
    m = _kernel_decl(src, name)
    return int(m.group(1)), parse_params(m.group(2))


def kernel_params_text(src, name):
    return _kernel_decl(src, name).group(2)


def strip_fallbacks(src):
    """The module's kernels with the atomics fallback of each plain-store or gather flag removed: the
    `else` branch of every `if (plain_...) {...} else {...}` and every `if (!gather_...) {...}`.  What is left is what a launch with the
    flag true runs."""
    kern = code_only(src)
    out, i = [], 0
    while True:
        m = re.compile(r"if \((!?)(?:plain|gather)_").search(kern, i)
        j = m.start() if m else -1
        if j < 0:
            out.append(kern[i:])
            return "".join(out)
        k = _close(kern, kern.index("{", j))
        if m.group(1):  # `if (!gather_x) {...}`: the fallback alone
            out.append(kern[i:j])
            i = k + 1
            continue
        rest = kern[k + 1:]
        m = re.match(r"\s*else\s*\{", rest)
        out.append(kern[i:k + 1])
        if not m:
            i = k + 1
            continue
        e = _close(kern, k + 1 + m.end() - 1)
        i = e + 1


def code_only(src):
    """The module's kernels without comments (the header comment names atomicAdd)."""
    kern = src[:src.index(MARK)]
    return "\n".join(ln.split("//", 1)[0] for ln in kern.splitlines())


def _close(s, open_at):
    depth = 0
    for i in range(open_at, len(s)):
        depth += {"{": 1, "}": -1}.get(s[i], 0)
        if depth == 0:
            return i
    raise ValueError("unbalanced braces")


# ---- the cases -------------------------------------------------------------------------------


def _randn(gen, *shape, scale=1.0):
    return torch.randn(*shape, generator=gen, dtype=torch.float64) * scale


def _zeros(*shape):
    return torch.zeros(*shape, dtype=torch.float64)


def _box_ref(v):
    x = v["in"]
    return {"out": torch.nn.functional.avg_pool2d(x[None, None], 3, stride=1, padding=1,
                                                  count_include_pad=False)[0, 0]}


def _lap5_ref(v):
    u = v["u"]
    inner = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    return {"out": torch.nn.functional.pad(inner, (1, 1, 1, 1))}


def _blur1d_ref(v):
    x = v["x"]
    z = x.new_zeros(1)
    return {"y": 0.25 * torch.cat([z, x[:-1]]) + 0.5 * x + 0.25 * torch.cat([x[1:], z])}


def _ew3_ref(v):
    return {"out": torch.sin(v["a"]) * v["a"]}


def _vol3_ref(v):
    a, b = v["a"], v["b"]
    z = a.new_zeros(1, *a.shape[1:])
    return {"out": b * (torch.cat([a[1:], z]) - torch.cat([z, a[:-1]])) + torch.sin(a)}


def _zsmooth_ref(v):
    a = v["a"]
    z = a.new_zeros(1, *a.shape[1:])
    s = torch.cat([z, a[:-1]]) + a + torch.cat([a[1:], z])
    return {"out": s * s}


def _recurrence_ref(v):
    x, w = v["x"], v["w"]
    s, hs = torch.zeros_like(w), []
    for t in range(v["T"]):
        s = torch.tanh(w * s + x[t])
        hs.append(s)
    return {"h": torch.stack(hs)}


def _scale_sq4_ref(v):
    x, a = v["x"].reshape(-1, 4), v["alpha"]
    y = torch.stack([a * x[:, 0] ** 2, a * x[:, 1] ** 2, a * x[:, 2] ** 2, a * x[:, 3] ** 2 + x[:, 0]], 1)
    return {"y": y.reshape(-1)}


def _gelu_tanh(u):
    return 0.5 * u * (1.0 + torch.tanh(0.7978845608028654 * (u + 0.044715 * u ** 3)))


def _affine_ref(v):
    x = v["x"]
    u = x * v["p_scale"] + v["p_shift"]
    a = u if v["p_mode"] == 0 else torch.where(u < 0, 0.1 * u, u * u)
    acc = 1.75 * a
    sign = torch.where(torch.arange(x.numel()) % 2 == 0, 1.0, -1.0).to(x.dtype)
    return {"y": sign * acc}


def _iterate_ref(v):
    x, maxit = v["x"], v["maxit"]
    steps = torch.minimum(1 + torch.arange(x.numel()) % 4, torch.tensor(maxit))
    u = x
    for it in range(maxit):
        u = torch.where(it < steps, u * 0.5 + torch.sin(u), u)
    return {"y": u + 0.125 * (0 + 2 + 4)}


def _window_ref(v):
    x = torch.cat([v["x"], torch.zeros(8, dtype=v["x"].dtype)])
    n = v["n"]
    # each block of 32 holds x[base .. base + 40) in shared memory, zero past n
    return {"y": sum(x[k:k + n] * (k + 1) for k in range(8))}


def _half(t):
    return t.to(torch.float16).double()


def _first_negative_ref(v):
    x = v["x"]
    alive = torch.cumprod((x >= -0.5).to(x.dtype), 1)
    return {"y": (alive * x * x).sum(1)}


def _pairs_ref(v):
    x, w, n = v["x"], v["w"], v["n"]
    t = torch.arange(n)
    base, lane = (t // 64) * 64, t % 64
    return {"y": x[base + lane // 2] * w + x[base + (lane ^ 1)] ** 2}


def _uniform_ref(v):
    x = v["x"]
    s = 2.0 if v["mode"] > 0 else x[0]
    return {"y": s * x}


CASES = [
    Case("square", "square.cu", "square", (256,), (3,), ["x"], ["y"],
         lambda g: {"x": _randn(g, 700), "y": _zeros(700), "n": 700},
         lambda v: {"y": v["x"] * v["x"]},
         cparams="float *x, float *y, int n"),
    Case("box3x3", "box3x3.cu", "box3x3", (8, 4), (3, 4), ["in"], ["out"],
         lambda g: {"in": _randn(g, 13, 24), "out": _zeros(13, 24), "H": 13, "W": 24},
         _box_ref, cparams="float *in, float *out, int H, int W",
         note="the default backward is a gather kernel on the grid plus 2 blocks along x and y: each "
              "thread sums the 9 taps that read its pixel in a fixed order and stores once (no zero-fill: "
              "the launch writes every element, kad_covers); --atomics: up to 9 float atomics per element"),
    Case("lap5", "stencils.cu", "lap5", (8, 4), (3, 4), ["u"], ["out"],
         lambda g: {"u": _randn(g, 13, 21), "out": _zeros(13, 21), "H": 13, "W": 21},
         _lap5_ref, cparams="const float *u, float *out, int H, int W",
         note="a gather kernel (5 taps, an early return at the border, a size_t index): its stores are "
              "distinct by the hull of the taps' masks"),
    Case("blur1d", "stencils.cu", "blur1d", (64,), (3,), ["x"], ["y"],
         lambda g: {"x": _randn(g, 150), "y": _zeros(150), "n": 150},
         _blur1d_ref, cparams="const float *x, float *y, int n", note="a 1-D gather, the neighbours under `?:`"),
    Case("ew3", "block3d.cu", "ew3", (4, 2, 2), (2, 3, 3), ["a"], ["out"],
         lambda g: {"a": _randn(g, 6, 6, 8), "out": _zeros(6, 6, 8), "D": 6, "H": 6, "W": 8},
         _ew3_ref, cparams="const float *a, float *out, int D, int H, int W",
         note="3-D blocks: plain stores where the blocks tile the volume (the split of the thread index "
              "into x, y, z digits read as injective)"),
    Case("vol3", "block3d.cu", "vol3", (4, 2, 2), (2, 3, 3), ["a", "b"], ["out"],
         lambda g: {"a": _randn(g, 6, 6, 8), "b": _randn(g, 6, 6, 8), "out": _zeros(6, 6, 8),
                    "D": 6, "H": 6, "W": 8},
         _vol3_ref, cparams="const float *a, const float *b, float *out, int D, int H, int W",
         note="3-D blocks, a central difference along z: site rows for a, a plain store for b"),
    Case("zsmooth", "block3d.cu", "zsmooth", (4, 2, 2), (2, 3, 3), ["a"], ["out"],
         lambda g: {"a": _randn(g, 6, 6, 8), "out": _zeros(6, 6, 8), "D": 6, "H": 6, "W": 8},
         _zsmooth_ref, cparams="const float *a, float *out, int D, int H, int W",
         note="3-D blocks, a smoothing along z with `continue`: a gather kernel on the grid plus 2 blocks "
              "along z"),
    Case("box3x3_ragged", "box3x3.cu", "box3x3", (8, 4), (3, 4), ["in"], ["out"],
         lambda g: {"in": _randn(g, 13, 21), "out": _zeros(13, 21), "H": 13, "W": 21},
         _box_ref, cparams="float *in, float *out, int H, int W",
         note="W = 21 < 8 * grid_x, ragged blocks: the gather kernel's stores are distinct by the taps' "
              "`!(xx < 0 || xx >= W || ...)` masks, which every contribution has (no condition on the grid)"),
    Case("swish_hip", "swish_hip.hip", "swish", (128,), (2,), ["x"], ["y"],
         lambda g: {"x": _randn(g, 1000, scale=3.0), "y": _zeros(1000), "n": 1000},
         lambda v: {"y": v["x"] * torch.sigmoid(v["x"])},
         sig="scalar_t=fp32", tname="swish<float>", cparams="float *x, float *y, int64_t n"),
    Case("softmax_rows", "softmax_rows.cu", "softmax_rows", (32,), (3,), ["x"], ["y"],
         lambda g: {"x": _randn(g, 3, 50, scale=2.0), "y": _zeros(3, 50), "ncols": 50},
         lambda v: {"y": torch.softmax(v["x"], 1)},
         sig="BLOCK=32", tname="softmax_rows<32>",
         cparams="float *x, float *y, int ncols"),
    Case("warp_per_row_softmax", "../cuda_wild/w05_warp_softmax.cu", "softmax_warp", (64,), (2,), ["x"], ["y"],
         lambda g: {"x": _randn(g, 3, 70, scale=2.0), "y": _zeros(3, 70), "rows": 3, "cols": 70},
         lambda v: {"y": torch.softmax(v["x"], 1)},
         cparams="float *x, float *y, int rows, int cols", original=False,
         note="one warp per row, two a block (block 1's second warp returns at once): the shuffles under a "
              "warp-uniform mask; the backward all-gathers the lanes and sums the one-hot across the threads. "
              "Its own source is not run (original=False): the CPU stand-in's shuffles wait for the whole block, "
              "which the warp that returned never reaches"),
    Case("layernorm_smem", "../cuda_wild/w14_layernorm_smem.cu", "layer_norm_fwd", (64,), (3,), ["X", "W", "B"], ["Y"],
         lambda g: {"X": _randn(g, 3, 90), "W": _randn(g, 90), "B": _randn(g, 90), "Y": _zeros(3, 90),
                    "mean_out": _zeros(3), "rstd_out": _zeros(3), "N": 90, "eps": 1e-5},
         lambda v: {"Y": torch.nn.functional.layer_norm(v["X"], (v["N"],), v["W"], v["B"], eps=v["eps"])},
         sig="BLOCK=64", tname="layer_norm_fwd<64>",
         cparams="float *X, float *W, float *B, float *Y, float *mean_out, float *rstd_out, int N, float eps",
         tol=1e-4, note="two shared-memory tree reductions (sum and sum of squares), statistics written by thread 0"),
    Case("tiled_matmul", "../cuda_wild/w26_tiled_mm.cu", "matmul_tiled", (8, 8), (2, 2), ["A", "B"], ["C"],
         lambda g: {"A": _randn(g, 12, 10), "B": _randn(g, 10, 13), "C": _zeros(12, 13), "M": 12, "N": 13, "K": 10},
         lambda v: {"C": v["A"] @ v["B"]},
         cparams="float *A, float *B, float *C, int M, int N, int K", tol=1e-4, atomic_bwd=True, bitwise=False,
         note="the classic 8x8 shared-memory tiled matmul: its gradients d_A (d_B) sum over the blocks along "
              "x (y), which kad's CUDA C backward adds with atomicAdd (no fold for a sum over a grid axis of "
              "a 2-D grid here): right, not bitwise"),
    Case("layernorm_warp", "layernorm_warp.cu", "layernorm", (64,), (3,), ["x", "gamma", "beta"], ["y"],
         lambda g: {"x": _randn(g, 3, 80), "gamma": _randn(g, 80), "beta": _randn(g, 80), "y": _zeros(3, 80),
                    "n": 80, "eps": 1e-5},
         lambda v: {"y": torch.nn.functional.layer_norm(v["x"], (v["n"],), v["gamma"], v["beta"], eps=v["eps"])},
         sig="BLOCK=64", tname="layernorm<64>", cparams="float *x, float *gamma, float *beta, float *y, int n, float eps",
         tol=1e-4),
    Case("recurrence", "recurrence.cu", "recurrence", (64,), (2,), ["x", "w"], ["h"],
         lambda g: {"x": _randn(g, 7, 128), "w": _randn(g, 128, scale=0.5), "h": _zeros(7, 128), "T": 7, "N": 128},
         _recurrence_ref,
         cparams="float *x, float *w, float *h, int T, int N"),
    Case("float4_lanes", "float4_lanes.cu", "scale_sq4", (64,), (2,), ["x"], ["y"],
         lambda g: {"x": _randn(g, 400), "y": _zeros(400), "alpha": 0.75, "n4": 100},
         _scale_sq4_ref,
         cparams="float *x, float *y, float alpha, int n4"),
    Case("bias_gelu", "bias_gelu.cu", "bias_gelu", (32,), (2, 5), ["x", "bias"], ["y"],
         lambda g: {"x": _randn(g, 5, 40, scale=2.0), "bias": _randn(g, 40), "y": _zeros(5, 40), "rows": 5, "cols": 40},
         lambda v: {"y": _gelu_tanh(v["x"] + v["bias"][None, :])},
         cparams="float *x, float *bias, float *y, int rows, int cols",
         note="the default backward folds the rows (d_bias: partials per folded program, a fixed-order sum "
              "kernel); --atomics runs"),
    Case("affine_act", "constructs.cu", "affine_act", (32,), (2,), ["x"], ["y"],
         lambda g: {"x": _randn(g, 50), "y": _zeros(50), "n": 50, "p_scale": 1.5, "p_shift": -0.25, "p_mode": 1},
         _affine_ref, cparams="float *x, float *y, int n, float p_scale, float p_shift, int p_mode",
         ccall="x, y, n, Affine{p_scale, p_shift, p_mode}"),
    Case("iterate", "constructs.cu", "iterate", (32,), (2,), ["x"], ["y"],
         lambda g: {"x": _randn(g, 40), "y": _zeros(40), "n": 40, "maxit": 6},
         _iterate_ref, cparams="float *x, float *y, int n, int maxit"),
    Case("dot_atomic", "constructs.cu", "dot_atomic", (64,), (3,), ["a", "b"], ["out"],
         lambda g: {"a": _randn(g, 150), "b": _randn(g, 150), "out": _zeros(1), "n": 150},
         lambda v: {"out": (v["a"] * v["b"]).sum().reshape(1)},
         cparams="float *a, float *b, float *out, int n",
         fwd_atomic=True),
    Case("window_sum", "constructs.cu", "window_sum", (32,), (2,), ["x"], ["y"],
         lambda g: {"x": _randn(g, 64), "y": _zeros(64), "n": 64},
         _window_ref, sig="tile=40",
         cparams="float *x, float *y, int n", smem=40 * 4),
    Case("scale_shift_half", "host_and_half.cu", "scale_shift", (64,), (1,), ["x"], ["y"],
         lambda g: {"x": _half(_randn(g, 100)), "y": _zeros(100), "n": 100, "a": 0.5},
         lambda v: {"y": v["a"] * v["x"] + torch.exp(-v["x"] ** 2)},
         dtype=torch.float16, original=False, tol=2e-3,
         note="its source includes torch/extension.h: the GPU forward runs kad's emitted forward only"),
    Case("newton_while", "newton_while.cu", "newton", (32,), (1,), ["x"], ["y"],
         lambda g: {"x": _randn(g, 32, scale=2.0), "y": _zeros(32)},
         lambda v: {"y": torch.sqrt(v["x"] ** 2 + 1.0)},
         cparams="float *x, float *y"),
    Case("transpose", "transpose_tile.cu", "transpose", (16, 16), (2, 3), ["in"], ["out"],
         lambda g: {"in": _randn(g, 40, 27), "out": _zeros(27, 40), "rows": 40, "cols": 27},
         lambda v: {"out": v["in"].t().contiguous()},
         refuse={m: SHARED_LANES for m in ("emit", "bwd", "atomics", "jvp")},
         cparams="float *in, float *out, int rows, int cols"),
    Case("first_negative", "transpose_tile.cu", "first_negative", (32,), (2,), ["x"], ["y"],
         lambda g: {"x": _randn(g, 40, 6), "y": _zeros(40), "n": 40, "K": 6},
         _first_negative_ref, cparams="float *x, float *y, int n, int K"),
    Case("shared_pairs", "shared_pairs.cu", "shared_pairs", (64,), (3,), ["x", "w"], ["y"],
         lambda g: {"x": _randn(g, 192), "w": _randn(g, 192), "y": _zeros(192), "n": 192},
         _pairs_ref, cparams="float *x, float *w, float *y, int n",
         note="tile[t / 2] and tile[t ^ 1]: the adjoints of the two reads are scatter-adds along the lanes, "
              "one with two threads adding into an element (its ordered path), one a permutation"),
    Case("uniform_scale", "uniform_if.cu", "uniform_scale", (64,), (2,), ["x"], ["y"],
         lambda g: {"x": _randn(g, 100), "y": _zeros(100), "n": 100, "mode": 1},
         _uniform_ref, cparams="float *x, float *y, int n, int mode", atomic_bwd=True,
         note="x[0] is read by every thread: the default backward always uses atomicAdd (no plain-store "
              "flag); with mode 1 each element gets one atomic: bitwise still"),
    Case("uniform_scale_x0", "uniform_if.cu", "uniform_scale", (64,), (2,), ["x"], ["y"],
         lambda g: {"x": _randn(g, 100), "y": _zeros(100), "n": 100, "mode": 0},
         _uniform_ref, cparams="float *x, float *y, int n, int mode", bitwise=False, atomic_bwd=True,
         note="mode 0: x[0] scales every element, d_x[0] gathers from both blocks by atomicAdd (always "
              "atomics, as the module says): no bitwise claim"),
]

# The issue's list (36, "Done when"): the GPU test reports these first.
ISSUE_KERNELS = ["square", "box3x3", "swish_hip", "softmax_rows", "layernorm_warp", "recurrence", "float4_lanes",
                 "bias_gelu"]


def inputs(case, seed=0):
    """The case's arguments (float64 tensors already rounded to the kernel's dtype, and numbers)."""
    g = torch.Generator().manual_seed(seed)
    v = case.inputs(g)
    return {n: (t.to(case.dtype).double() if isinstance(t, torch.Tensor) else t) for n, t in v.items()}


def reference_grads(case, v, d_outs):
    """torch float64 autograd of the case's math: {wrt: gradient}."""
    xs = {n: (t.clone().requires_grad_(n in case.wrt) if isinstance(t, torch.Tensor) else t) for n, t in v.items()}
    ys = case.ref(xs)
    outs = [ys[o] for o in case.out]
    gs = torch.autograd.grad(outs, [xs[n] for n in case.wrt], [d_outs[o] for o in case.out], allow_unused=True)
    return {n: (g if g is not None else torch.zeros_like(v[n])) for n, g in zip(case.wrt, gs)}


def reference_jvp(case, v, tangents):
    """torch.func.jvp in float64 of the case's math: ({out: value}, {out: tangent})."""
    def f(*ws):
        vv = dict(v)
        vv.update(zip(case.wrt, ws))
        ys = case.ref(vv)
        return tuple(ys[o] for o in case.out)
    prim, tan = torch.func.jvp(f, tuple(v[n] for n in case.wrt), tuple(tangents[n] for n in case.wrt))
    return dict(zip(case.out, prim)), dict(zip(case.out, tan))


def rel_err(got, want):
    got, want = got.double().cpu(), want.double().cpu()
    return ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()


# ---- the kernels' own sources, for nvcc ------------------------------------------------------

# HIP's spelling on CUDA, for the .hip kernels: the test's include directory holds this as
# hip/hip_runtime.h (the source's own #include), so nvcc compiles the file unchanged.
HIP_COMPAT = """// hip/hip_runtime.h for nvcc (tests only): HIP's thread-index names onto CUDA's.
#pragma once
#include <cuda_runtime.h>
#include <stdint.h>
#define hipThreadIdx_x threadIdx.x
#define hipThreadIdx_y threadIdx.y
#define hipThreadIdx_z threadIdx.z
#define hipBlockIdx_x blockIdx.x
#define hipBlockIdx_y blockIdx.y
#define hipBlockIdx_z blockIdx.z
#define hipBlockDim_x blockDim.x
#define hipBlockDim_y blockDim.y
#define hipBlockDim_z blockDim.z
#define hipGridDim_x gridDim.x
#define hipGridDim_y gridDim.y
#define hipGridDim_z gridDim.z
"""


def original_launcher_name(case):
    return "kt_launch_" + case.id


def original_source(case, incdir):
    """A translation unit that #includes the kernel's own file unchanged and adds an extern "C"
    launcher kt_launch_<id>(grid_x, grid_y, grid_z, <cparams>, stream) with the case's block and
    dynamic shared memory; writes the HIP compatibility header under incdir."""
    os.makedirs(os.path.join(incdir, "hip"), exist_ok=True)
    with open(os.path.join(incdir, "hip", "hip_runtime.h"), "w") as f:
        f.write(HIP_COMPAT)
    block = tuple(case.block) + (1,) * (3 - len(case.block))
    call = case.ccall or ", ".join(n for _, n in parse_params(case.cparams))
    return """#include "%s"

extern "C" int %s(unsigned grid_x, unsigned grid_y, unsigned grid_z, %s, void *stream)
{
    %s<<<dim3(grid_x, grid_y, grid_z), dim3(%d, %d, %d), %d, (cudaStream_t)stream>>>(%s);
    return (int)cudaGetLastError();
}
""" % (os.path.join(CUDA_DIR, case.file), original_launcher_name(case), case.cparams, case.tname or case.kernel,
       block[0], block[1], block[2], case.smem, call)


def launch_values(case, v, device="cpu", d_outs=None, tangents=None):
    """The launcher's arguments by name for inputs v (cc.inputs): the forward's parameters in the
    kernel's dtype on device, then for a backward d_<out> (given), d_<in> (NaN: the launcher
    zero-fills them) and d_<in>_numel, for a jvp t_<in> (given) and t_<out> (zeros)."""
    dv = {n: (t.to(device=device, dtype=case.dtype).contiguous() if isinstance(t, torch.Tensor) else t)
          for n, t in v.items()}
    for o, t in (d_outs or {}).items():
        dv["d_" + o] = t.to(device=device, dtype=case.dtype).contiguous()
    if d_outs is not None:
        for o in case.out:
            dv["d_%s_numel" % o] = dv["d_" + o].numel()
        for n in case.wrt:
            dv["d_" + n] = torch.full_like(dv[n], float("nan"))
            dv["d_%s_numel" % n] = dv[n].numel()
    for n, t in (tangents or {}).items():
        dv["t_" + n] = t.to(device=device, dtype=case.dtype).contiguous()
    if tangents is not None:
        for o in case.out:
            dv["t_" + o] = torch.zeros_like(dv[o])
    return dv


def output_grads(case, v, seed=1):
    """The output gradients (random, in the kernel's dtype, as float64)."""
    g = torch.Generator().manual_seed(seed)
    return {o: _randn(g, *v[o].shape).to(case.dtype).double() for o in case.out}


def input_tangents(case, v, seed=2):
    """The input tangents (random, in the kernel's dtype, as float64)."""
    g = torch.Generator().manual_seed(seed)
    return {n: _randn(g, *v[n].shape).to(case.dtype).double() for n in case.wrt}


# The Swish's backward as a person writes it, in HIP's spelling (through HIP_COMPAT on nvcc and
# on the CPU shim): dx = dy * s * (1 + x * (1 - s)), s = sigmoid(x), over the same grid-stride loop.
SWISH_BWD_HAND = """#include <hip/hip_runtime.h>

__global__ void swish_bwd_hand(const float* __restrict__ x, const float* __restrict__ dy, float* __restrict__ dx,
                               int64_t n)
{
    const int64_t stride = (int64_t)hipBlockDim_x * hipGridDim_x;
    for (int64_t i = (int64_t)hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x; i < n; i += stride) {
        const float v = x[i];
        const float s = 1.0f / (1.0f + expf(-v));
        dx[i] = dy[i] * s * (1.0f + v * (1.0f - s));
    }
}
"""
SWISH_BWD_HAND_PARAMS = "float *x, float *dy, float *dx, int64_t n"
