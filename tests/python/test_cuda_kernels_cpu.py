"""The per-thread kernels of tests/cuda/ through kad's CUDA C modules, run without a GPU: per-thread
source -> `kad emit|grad|jvp ... --emit cuda` -> the module's kernel compiled by g++ against the
CPU stand-in of tests/python/cuda_shim/ (one std::thread per lane, __syncthreads a barrier) ->
results against torch float64 (autograd for the backward, torch.func.jvp for the tangents).
Also each kernel's own source (test_original_on_shim: 2-D blocks, shared memory, warp shuffles,
HIP spelling) on the shim, and the table's torch math against kad's interpreter
(test_reference_math).

The launcher is not compiled here (it calls the CUDA runtime): it is read from the module's text
and done in Python as it is written — its guards refuse, its plain-store flags are computed from
the launch's grid and arguments, the buffers it zero-fills are zeroed.  The GPU runs of the same
modules (and of the kernels' own sources) are tests/gpu/test_cuda_kernels_gpu.py; the cases, their
torch math and the emitter's expected refusals are tests/python/cuda_kernel_cases.py.

    /work/main/.venv/bin/python -m pytest -q tests/python/test_cuda_kernels_cpu.py

Skipped without g++ (C++20) or torch.
"""
import ctypes
import os
import shutil
import subprocess

import pytest

torch = pytest.importorskip("torch")

import cuda_kernel_cases as cc  # noqa: E402

SHIM = cc.SHIM
GXX = shutil.which("g++")

pytestmark = pytest.mark.skipif(GXX is None, reason="g++ is not on PATH")


class ShimKernel:
    """The module's kernel built for the CPU with a driver that runs each block with one thread per
    lane; call(grid, values) does what the launcher does, then runs the kernel."""

    def __init__(self, src, fn, tmp_path, name):
        self.launcher = cc.Launcher(src, fn)
        kern = src[:src.index(cc.MARK)]
        self.fns = {}  # by kernel: every kernel the launcher launches (a fold's sum kernels too)
        for i, (kname, _, lanes, _) in enumerate(self.launcher.launches):
            if kname in self.fns:
                continue
            klanes, kparams = cc.kernel_signature(src, kname)
            assert klanes == lanes
            names = [n for _, n in kparams]
            fn = cc.shim_run(GXX, kern, cc.kernel_params_text(src, kname), names, lanes, kname, tmp_path,
                             "%s_%d" % (name, i))
            fn.argtypes = [ctypes.c_uint] * 3 + [t for t, _ in kparams]
            self.fns[kname] = fn
        self.lanes = self.launcher.lanes

    def call(self, grid, values):
        """values: the launcher's parameters by name (tensors, numbers); the flags it computed."""
        L = self.launcher
        missing = [n for _, n in L.params if n not in values]
        assert not missing, missing
        g = tuple(grid) + (1,) * (3 - len(grid))
        assert not L.refuses(g, values), L.refuses(g, values)
        flags = L.flag_values(g, values)
        env = dict(values)
        env.update(L.env(g, values))
        env.update(values)
        for z in L.zeroed:  # unless the launch writes every element (then its NaNs must all go)
            if not L.covered(z, env):
                values[z].zero_()
        for cp, orig in L.copies:  # the launcher's private copies (the caller's kept)
            env[cp] = values[orig].clone()
        for tp, n in L.tape_sizes(g, values).items():  # uninitialized scratch: NaN, so a read before a write shows
            env[tp] = torch.full((max(n, 1),), float("nan"), dtype=torch.float64)
            if tp in L.heads:  # a `while` loop's tape: the head (its overflow flag) cleared
                env[tp][:L.heads[tp]] = 0
        for part, cty, rows, span in L.parts:  # the fold's partials, zero-filled
            env[part] = torch.zeros(max(env[rows] * env[span], 1),
                                    dtype={"float": torch.float32, "double": torch.float64}[cty])
        for launch, when in zip(L.launches, L.whens):  # the main kernel, then a fold's sum kernels, gathers
            if when is not None and not eval(cc._c_to_py(when), {}, env):
                continue
            kg = L.grid_of(launch, env)
            args = [env[a] for a in launch[3]]
            self.fns[launch[0]](*kg, *[a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args])
            for tp in L.heads:  # the launcher reads the flag back: a raised one fails the launch
                assert env[tp][0].item() == 0, "the `while` loop ran past its tape's capacity (%s)" % tp
        return flags


FWD_CASES = [c for c in cc.CASES if c.id != "uniform_scale_x0"]


@pytest.mark.parametrize("case,mode", cc.modes_params(FWD_CASES, ["emit"], pytest))
def test_forward(case, mode, tmp_path):
    """kad's forward module (kad emit --emit cuda) on the shim against the torch math."""
    src = cc.kad_module(case, mode)
    k = ShimKernel(src, case.launcher(mode), tmp_path, "fwd")
    v = cc.inputs(case)
    dv = cc.launch_values(case, v)
    k.call(case.grid, dv)
    want = case.ref(v)
    for o in case.out:
        assert cc.rel_err(dv[o], want[o]) < case.tol, o


@pytest.mark.parametrize("case,mode", cc.modes_params(cc.CASES, ["bwd", "atomics"], pytest))
def test_backward(case, mode, tmp_path):
    """kad's backward module on the shim against torch float64 autograd of the same math; the
    default backward's plain-store flags are true for these launches, its kernel without the
    atomics fallback has no atomicAdd (unless the module says it always uses atomics), and the
    --atomics one gives the same gradients."""
    src = cc.kad_module(case, mode)
    k = ShimKernel(src, case.launcher(mode), tmp_path, mode)
    v = cc.inputs(case)
    d_outs = cc.output_grads(case, v)
    dv = cc.launch_values(case, v, d_outs=d_outs)
    given = {o: dv["d_" + o].clone() for o in case.out}
    flags = k.call(case.grid, dv)
    for o in case.out:  # a backward that clears its output gradient runs on the launcher's copy
        assert torch.equal(dv["d_" + o], given[o]), "the caller's d_%s changed" % o
    got = {n: dv["d_" + n] for n in case.wrt}
    want = cc.reference_grads(case, v, d_outs)
    for n in case.wrt:
        assert cc.rel_err(got[n], want[n]) < case.tol, (n, cc.rel_err(got[n], want[n]))
    if mode == "bwd" and not case.flags_hold:  # the atomics fallback (the case says why)
        assert flags and not any(flags.values()), flags
    elif mode == "bwd":
        assert all(flags.values()), flags
        if not case.atomic_bwd:  # (d): atomics only in the fallback that these launches do not take
            assert "atomicAdd" not in cc.strip_fallbacks(src)
        elif not flags:  # atomics on every launch: the header says the bits may differ
            assert "Input gradients are accumulated with atomicAdd" in src
    else:
        assert "Built with --atomics" in src


@pytest.mark.parametrize("case,mode", cc.modes_params(FWD_CASES, ["jvp"], pytest))
def test_jvp(case, mode, tmp_path):
    """kad's forward-mode module on the shim: outputs and tangents against torch.func.jvp (float64)."""
    src = cc.kad_module(case, mode)
    k = ShimKernel(src, case.launcher(mode), tmp_path, "jvp")
    v = cc.inputs(case)
    tan = cc.input_tangents(case, v)
    dv = cc.launch_values(case, v, tangents=tan)
    k.call(case.grid, dv)
    prim, want = cc.reference_jvp(case, v, tan)
    for o in case.out:
        assert cc.rel_err(dv[o], prim[o]) < case.tol, o
        assert cc.rel_err(dv["t_" + o], want[o]) < case.tol, o


def test_strip_fallbacks():
    """The helper (d) relies on: the else branch of a plain-store flag goes, the rest stays."""
    src = ("__global__ void k(bool plain_d_x) {\n    if (plain_d_x) {\n        if (m) { *p = v; }\n    } else {\n"
           "        if (m) { atomicAdd(p, v); }\n    }\n    atomicAdd(q, w);\n}\n" + cc.MARK + "\n")
    s = cc.strip_fallbacks(src)
    assert "atomicAdd(p, v)" not in s and "*p = v" in s and "atomicAdd(q, w)" in s


@pytest.mark.parametrize("case", FWD_CASES, ids=lambda c: c.id)
def test_reference_math(case):
    """The table's torch math is the kernel's: each kernel's forward on kad's interpreter in float64
    (the C API, as test_cuda_front.py) against case.ref, so the GPU test's references for kernels
    kad prints no module for (layernorm, window_sum, transpose) are checked here too."""
    from test_cuda_front import cuda_kernel, run_forward
    targs = case.sig if case.dtype != torch.float16 else ""
    k = cuda_kernel(case.file, case.kernel, case.block, targs)
    v = cc.inputs(case)
    args = {n: (t.clone() if isinstance(t, torch.Tensor) else t) for n, t in v.items()}
    run_forward(k, case.grid, args)
    want = case.ref(v)
    for o in case.out:
        # float64 on both sides: rounding only, but the kernels' float literals (0.1f, 0.044715f) and
        # Newton's stopping test (|r*r - v| <= 1e-6 v) stay
        tol = 1e-6 if case.id == "newton_while" else 1e-8
        assert cc.rel_err(args[o], want[o]) < tol, (o, cc.rel_err(args[o], want[o]))


# What the kernels' own sources use beyond the shim (tests/python/cuda_shim/ serves kad's modules):
# warp shuffles (through a per-block exchange buffer and the block's barrier: every thread of the
# block calls them together, as the kernels here do), float4, __ldg, min, warpSize.
ORIGINAL_PRELUDE = """
#include <algorithm>
#include <cuda_runtime.h>
#define __forceinline__ inline
#define warpSize 32
struct float4 { float x, y, z, w; };
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
template <typename T> inline T __ldg(const T *p) { return *p; }
using std::min;
using std::max;
"""


def _shim_build(case, text, cparams, call, tmp_path):
    """text (a kernel source, HIP spelling allowed) and a driver kad_run(grid, cparams) that runs
    `call` in one std::thread per thread of case.block, built for the CPU shim: (function, params)."""
    inc = tmp_path / "inc"
    cc.original_source(case, str(inc))  # the HIP compatibility header
    bx, by, bz = tuple(case.block) + (1,) * (3 - len(case.block))
    driver = """
#include <thread>
#include <vector>
extern "C" void kad_run(unsigned kad_gx, unsigned kad_gy, unsigned kad_gz, %s)
{
    gridDim = {kad_gx, kad_gy, kad_gz};
    blockDim = {%d, %d, %d};
    const unsigned kad_n = %d;
    for (unsigned kad_z = 0; kad_z < kad_gz; kad_z++)
        for (unsigned kad_y = 0; kad_y < kad_gy; kad_y++)
            for (unsigned kad_x = 0; kad_x < kad_gx; kad_x++) {
                std::barrier<> kad_bar(kad_n);
                kad_barrier = &kad_bar;
                std::vector<std::thread> kad_ts;
                for (unsigned kad_t = 0; kad_t < kad_n; kad_t++)
                    kad_ts.emplace_back([=] {
                        threadIdx = {kad_t %% %d, (kad_t / %d) %% %d, kad_t / %d};
                        blockIdx = {kad_x, kad_y, kad_z};
                        %s;
                    });
                for (auto &kad_th : kad_ts)
                    kad_th.join();
            }
}
""" % (cparams, bx, by, bz, bx * by * bz, bx, bx, by, bx * by, call)
    cpp, so = tmp_path / "orig.cpp", tmp_path / "orig.so"
    cpp.write_text(ORIGINAL_PRELUDE + text + driver)
    p = subprocess.run([GXX, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-I", SHIM, "-I", str(inc),
                        "-x", "c++", str(cpp), "-o", str(so)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    fn = ctypes.CDLL(str(so)).kad_run
    params = cc.parse_params(cparams)
    fn.restype = None
    fn.argtypes = [ctypes.c_uint] * 3 + [t for t, _ in params]
    return fn, params


@pytest.mark.parametrize("case", [c for c in FWD_CASES if c.original], ids=lambda c: c.id)
def test_original_on_shim(case, tmp_path):
    """The kernel's own source (the GPU test's table entry: template arguments, wrapper parameters,
    block) compiled by g++ against the shim and run one std::thread per CUDA thread, 2-D blocks
    included, against the table's torch math: the GPU test's forward check, without a GPU.  An
    extern __shared__ array becomes a static one of the launch's size (the one edit of the text)."""
    with open(os.path.join(cc.CUDA_DIR, case.file)) as f:
        text = f.read()
    ext = "extern __shared__ float tile[];"  # constructs.cu's window_sum (launched with tile=40)
    text = text.replace(ext, "static float tile[%d];" % (case.smem // 4 if case.smem else 40))
    call = case.ccall or ", ".join(n for _, n in cc.parse_params(case.cparams))
    fn, params = _shim_build(case, text, case.cparams, "%s(%s)" % (case.tname or case.kernel, call), tmp_path)
    v = cc.inputs(case)
    dv = cc.launch_values(case, v)
    g = tuple(case.grid) + (1,) * (3 - len(case.grid))
    fn(*g, *[dv[n].data_ptr() if isinstance(dv[n], torch.Tensor) else dv[n] for _, n in params])
    want = case.ref(v)
    for o in case.out:
        assert cc.rel_err(dv[o], want[o]) < case.tol, (o, cc.rel_err(dv[o], want[o]))


def test_swish_hand_written_backward(tmp_path):
    """A hand-written HIP-spelling backward of the Swish on the shim against kad's backward module
    (on the shim) and torch float64 autograd (the GPU test does the same on the device)."""
    case = next(c for c in cc.CASES if c.id == "swish_hip")
    fn, params = _shim_build(case, cc.SWISH_BWD_HAND, cc.SWISH_BWD_HAND_PARAMS, "swish_bwd_hand(x, dy, dx, n)",
                             tmp_path)
    v = cc.inputs(case)
    d_outs = cc.output_grads(case, v)
    x, dy = v["x"].float(), d_outs["y"].float()
    dx = torch.full_like(x, float("nan"))
    fn(case.grid[0], 1, 1, x.data_ptr(), dy.data_ptr(), dx.data_ptr(), v["n"])
    want = cc.reference_grads(case, v, d_outs)["x"]
    assert cc.rel_err(dx, want) < case.tol
    k = ShimKernel(cc.kad_module(case, "bwd"), case.launcher("bwd"), tmp_path, "bwd")
    dv = cc.launch_values(case, v, d_outs=d_outs)
    k.call(case.grid, dv)
    assert cc.rel_err(dv["d_x"], dx) < case.tol


def test_cover_check_in_c_matches_python(tmp_path):
    """The CUDA C launcher's kad_covers (printed into box3x3's backward module) against its Python
    twin _kad_covers_now (src/emit/py/cover.py) on random cover problems of a dense gradient: 2-D
    boxes of programs and lane digits (pid * B + lane, pid * B * W + lane * W), their bounds, extra
    single-variable clauses, grid-stride loop counters without an extent (bounded by their group's
    clause), negative strides, nonzero negs, other element counts."""
    case = next(c for c in cc.CASES if c.id == "box3x3")
    src = cc.kad_module(case, "bwd")
    host = src[src.index(cc.MARK):]
    helper = host[host.index("// kad_covers' second half"):host.index('extern "C" int launch_')]
    cpp = tmp_path / "cover.cpp"
    cpp.write_text("#include <stdint.h>\n#include <stdbool.h>\n" + helper +
                   'extern "C" int kad_covers_c(int64_t numel, int nv, const int64_t *st, const int64_t *ext, '
                   "int ncl, const int *cn, const int *ci, const int64_t *ca, const int64_t *cb, int nneg, "
                   "const int64_t *neg) { return kad_covers(numel, nv, st, ext, ncl, cn, ci, ca, cb, nneg, neg); }\n")
    so = tmp_path / "cover.so"
    subprocess.run([GXX, "-std=c++17", "-O1", "-Wall", "-Werror", "-shared", "-fPIC", str(cpp), "-o", str(so)],
                   check=True, capture_output=True)
    lib = ctypes.CDLL(str(so))
    import random
    rnd = random.Random(7)
    I64 = ctypes.c_int64
    answers = {True: 0, False: 0}
    for _ in range(3000):
        W, H = rnd.randint(1, 40), rnd.randint(1, 20)
        bx, by = rnd.choice([1, 2, 4, 8]), rnd.choice([1, 2, 4])
        gx, gy = rnd.randint(0, 12), rnd.randint(1, 8)
        # vars: pid0 (stride bx), pid1 (bx... * W), lane x (1), lane y (W)
        st = [bx, by * W, 1, W]
        ext = [gx, gy, bx, by]
        if rnd.random() < 0.1:
            st[rnd.randrange(4)] += rnd.choice([-1, 1])
        if rnd.random() < 0.1:
            ext[rnd.randrange(2)] = -1  # no extent: a clause must bound it
        clauses = [(W + rnd.choice([0, 0, 0, -1, 1]), (0, 2), (bx, 1)), (H, (1, 3), (by, 1))]
        for _ in range(rnd.choice([0, 0, 1, 2])):  # clauses on one variable (two may bound one)
            clauses.append((rnd.randint(-3, 12), (rnd.randrange(4),), (rnd.randint(0, 3),)))
        if rnd.random() < 0.25:  # a grid-stride loop's counter: stride bx * gx, no extent
            st.append(bx * max(gx, 1) + rnd.choice([0, 0, 0, 1]))
            ext.append(-1)
            clauses[0] = (clauses[0][0], (0, 2, 4), (bx, 1, st[4]))
            if rnd.random() < 0.3:
                st[4], ext[4], ext[0] = st[0], gx, -1  # the extent-less variable not the group's last
        if rnd.random() < 0.1:
            clauses.append((W, (0, 3), (bx, 1)))  # a set overlapping another clause's
        rnd.shuffle(clauses)
        negs = [-1] if rnd.random() < 0.9 else [0]
        numel = W * H + rnd.choice([0, 0, 0, -1, 1, -W * H])
        nv = len(st)
        vs = {j: (st[j], ext[j] if ext[j] >= 0 else None) for j in range(nv)}
        want = bool(cc.kad_covers_py((numel,), (1,), vs, clauses, negs))
        cn = [len(c[1]) for c in clauses]
        ci = [i for c in clauses for i in c[1]]
        ca = [k for c in clauses for k in c[2]]
        cb = [c[0] for c in clauses]
        arr = lambda t, xs: (t * max(len(xs), 1))(*xs)  # noqa: E731
        got = bool(lib.kad_covers_c(I64(numel), nv, arr(I64, st), arr(I64, ext), len(clauses),
                                    arr(ctypes.c_int, cn), arr(ctypes.c_int, ci), arr(I64, ca), arr(I64, cb),
                                    len(negs), arr(I64, negs)))
        assert got == want, (numel, vs, clauses, negs, got, want)
        answers[want] += 1
    assert min(answers.values()) > 300, answers  # both answers well represented
