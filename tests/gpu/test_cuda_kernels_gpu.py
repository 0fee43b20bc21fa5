"""The per-thread CUDA C / HIP kernels of tests/cuda/ on a GPU (issue 36, "Done when").

    make && python3 -m pytest -q tests/gpu/test_cuda_kernels_gpu.py

For each kernel (the cases, their torch float64 math and kad's expected refusals are
tests/python/cuda_kernel_cases.py):

- test_forward_original: the kernel's OWN source, unchanged, compiled by nvcc (a translation unit
  that #includes the file and adds an extern "C" launcher with the case's block and dynamic shared
  memory; the .hip file through a compatibility header hip/hip_runtime.h that maps hipThreadIdx_x
  and the other index names onto CUDA's), launched on CUDA tensors, against the torch math.
  host_and_half.cu includes torch/extension.h and is not compiled on its own: its forward is
  checked through kad's emitted forward only (test_forward_emitted).
- test_forward_emitted: kad's forward (`kad emit FILE.cu:K --block B --emit cuda`), the same way.
- test_backward: kad's backward (`kad grad ... --emit cuda`, and `--atomics`) compiled into a shared
  library, launch_<k>_bwd called through ctypes (pointers from data_ptr(), torch's current
  stream), the input gradients against torch float64 autograd of the same math; for the default
  backward the launcher's plain-store flags are true for the launch and (d) its kernel has no
  atomicAdd outside the flags' atomics fallback (kernels whose backward always needs atomics are
  marked in the table).
- test_backward_bitwise: the default backward 20 times on the same inputs, every run's gradients
  equal to the first bit for bit.
- test_jvp: kad's forward-mode module (launch_<k>_jvp), outputs and tangents against
  torch.func.jvp in float64 (square and swish as the issue asks, and every other kernel kad
  prints a jvp for).
- test_swish_hand_written_backward: a hand-written HIP-spelling backward of the Swish against
  kad's backward and torch.

Tolerances: the largest |error| over the largest |reference| (fp32 on the device, no fast math,
nvcc's default FMA contraction): 2e-5 for most kernels, 1e-4 for the LayerNorm, 2e-3 for the fp16
kernel (its own rounding).  Modules kad refuses today (folds, tapes, cleared output gradients,
lane gathers) are strict xfails with the emitter's message: a refusal that goes away, or changes,
fails the test.  Every module is compiled once per session, in parallel.

nvcc: on PATH, under $CUDA_HOME, /usr/local/cuda or torch's CUDA_HOME (tests/gpu/
test_cuda_emit_gpu.py's lookup).  Skipped without a CUDA device or without nvcc.  The same modules
compile in CI (tests/python/test_cuda_kernels_nvcc.py) and run on the CPU stand-in
(tests/python/test_cuda_kernels_cpu.py).
"""
import ctypes
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "python"))
import cuda_kernel_cases as cc  # noqa: E402


def _find_nvcc():
    """nvcc on PATH, under $CUDA_HOME, $CUDA_PATH, /usr/local/cuda or torch's CUDA_HOME; None if none
    (as tests/gpu/test_cuda_emit_gpu.py)."""
    found = shutil.which("nvcc")
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    try:
        from torch.utils.cpp_extension import CUDA_HOME
        homes.append(CUDA_HOME)
    except Exception:  # an old torch, or one without CUDA
        pass
    for h in homes:
        if not found and h and os.path.exists(os.path.join(h, "bin", "nvcc")):
            found = os.path.join(h, "bin", "nvcc")
    return found


NVCC = _find_nvcc()
HAVE_CUDA = torch.cuda.is_available()

pytestmark = [
    pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA device (torch.cuda.is_available() is False)"),
    pytest.mark.skipif(NVCC is None, reason="nvcc not found (PATH, CUDA_HOME, /usr/local/cuda, torch's CUDA_HOME)"),
]

P = ctypes.c_void_p
RUNS = 20
CASES = [c for c in cc.CASES]
FWD_CASES = [c for c in CASES if c.id != "uniform_scale_x0"]


def _arch():
    """The device's sm_XY; KAD_CUDA_ARCH overrides it (and stands in where there is no device, to
    build the modules without running them)."""
    if os.environ.get("KAD_CUDA_ARCH"):
        return os.environ["KAD_CUDA_ARCH"]
    major, minor = torch.cuda.get_device_capability()
    return "sm_%d%d" % (major, minor)


def _nvcc_shared(src, d, name, extra=()):
    """src compiled with nvcc into d/name.so; the path, or an AssertionError with nvcc's message."""
    cu, so = os.path.join(d, name + ".cu"), os.path.join(d, name + ".so")
    with open(cu, "w") as f:
        f.write(src)
    p = subprocess.run([NVCC, "-std=c++17", "-arch=" + _arch(), "-O2", "-shared", "-Xcompiler", "-fPIC", *extra, cu,
                        "-o", so], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise AssertionError("nvcc failed on %s:\n%s" % (cu, p.stderr[-3000:]))
    return so


class Built:
    """Every module of every case, printed by kad and compiled by nvcc once (in parallel):
    get(case, mode) -> (source text, ctypes library), or raises what kad or nvcc raised
    (cc.Refused for a refusal)."""

    def __init__(self, d):
        self.d, self.done = d, {}
        jobs = [(c, m) for c in CASES for m in ("emit", "bwd", "atomics", "jvp")
                if c in FWD_CASES or m in ("bwd", "atomics")]
        jobs += [(c, "original") for c in FWD_CASES if c.original]
        with ThreadPoolExecutor(max_workers=max(1, min(16, (os.cpu_count() or 2)))) as ex:
            for key, res in zip(jobs, ex.map(self._build, jobs)):
                self.done[(key[0].id, key[1])] = res

    def _build(self, job):
        c, m = job
        try:
            if m == "original":
                inc = os.path.join(self.d, c.id + "_inc")
                src = cc.original_source(c, inc)
                return src, _nvcc_shared(src, self.d, c.id + "_original", ["-I", inc]), None
            src = cc.kad_module(c, m)
            return src, _nvcc_shared(src, self.d, "%s_%s" % (c.id, m)), None
        except Exception as e:  # raised again in the test that needs it
            return None, None, e

    def get(self, case, mode):
        src, so, err = self.done[(case.id, mode)]
        if err is not None:
            raise err
        return src, ctypes.CDLL(so)


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    return Built(str(tmp_path_factory.mktemp("cuda_kernels")))


def _call(lib, fn, grid, params, values):
    """fn(grid_x, grid_y, grid_z, params by name from values, stream); asserts a 0 return."""
    g = tuple(grid) + (1,) * (3 - len(grid))
    f = getattr(lib, fn)
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_uint] * 3 + [t for t, _ in params] + [P]
    args = [values[n] for _, n in params]
    rc = f(*g, *[a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args],
           P(torch.cuda.current_stream().cuda_stream))
    torch.cuda.synchronize()
    assert rc == 0, "%s returned CUDA error %d" % (fn, rc)


def _check_outputs(case, dv, want, prefix=""):
    for o in case.out:
        err = cc.rel_err(dv[prefix + o], want[o])
        assert err < case.tol, "%s%s: relative error %.3g (tolerance %g)" % (prefix, o, err, case.tol)


@pytest.mark.parametrize("case", [c for c in FWD_CASES if c.original], ids=lambda c: c.id)
def test_forward_original(case, built):
    _, lib = built.get(case, "original")
    v = cc.inputs(case)
    dv = cc.launch_values(case, v, "cuda")
    _call(lib, cc.original_launcher_name(case), case.grid, cc.parse_params(case.cparams), dv)
    _check_outputs(case, dv, case.ref(v))


@pytest.mark.parametrize("case,mode", cc.modes_params(FWD_CASES, ["emit"], pytest))
def test_forward_emitted(case, mode, built):
    src, lib = built.get(case, mode)
    fn = case.launcher(mode)
    v = cc.inputs(case)
    dv = cc.launch_values(case, v, "cuda")
    _call(lib, fn, case.grid, cc.Launcher(src, fn).params, dv)
    _check_outputs(case, dv, case.ref(v))


def _backward(case, mode, built, v, d_outs):
    src, lib = built.get(case, mode)
    fn = case.launcher(mode)
    L = cc.Launcher(src, fn)
    dv = cc.launch_values(case, v, "cuda", d_outs=d_outs)
    g = tuple(case.grid) + (1,) * (3 - len(case.grid))
    assert not L.refuses(g, dv)
    _call(lib, fn, case.grid, L.params, dv)
    return src, L.flag_values(g, dv), {n: dv["d_" + n] for n in case.wrt}


@pytest.mark.parametrize("case,mode", cc.modes_params(CASES, ["bwd", "atomics"], pytest))
def test_backward(case, mode, built):
    v = cc.inputs(case)
    d_outs = cc.output_grads(case, v)
    src, flags, got = _backward(case, mode, built, v, d_outs)
    want = cc.reference_grads(case, v, d_outs)
    for n in case.wrt:
        err = cc.rel_err(got[n], want[n])
        assert err < case.tol, "d_%s: relative error %.3g (tolerance %g)" % (n, err, case.tol)
    if mode == "bwd" and not case.flags_hold:  # the atomics fallback (the case says why)
        assert flags and not any(flags.values()), "a plain-store flag is true for this launch: %s" % flags
    elif mode == "bwd":
        assert all(flags.values()), "a plain-store flag is false for this launch: %s" % flags
        if not case.atomic_bwd:
            assert "atomicAdd" not in cc.strip_fallbacks(src)


@pytest.mark.parametrize("case,mode", cc.modes_params([c for c in CASES if c.bitwise], ["bwd"], pytest))
def test_backward_bitwise(case, mode, built):
    v = cc.inputs(case, seed=3)
    d_outs = cc.output_grads(case, v, seed=4)
    _, _, first = _backward(case, mode, built, v, d_outs)
    for run in range(RUNS - 1):
        _, _, again = _backward(case, mode, built, v, d_outs)
        for n in case.wrt:
            assert torch.equal(first[n].view(torch.int32), again[n].view(torch.int32)), \
                "d_%s differs from the first run in run %d" % (n, run + 2)


@pytest.mark.parametrize("case,mode", cc.modes_params(FWD_CASES, ["jvp"], pytest))
def test_jvp(case, mode, built):
    src, lib = built.get(case, mode)
    fn = case.launcher(mode)
    v = cc.inputs(case)
    tan = cc.input_tangents(case, v)
    dv = cc.launch_values(case, v, "cuda", tangents=tan)
    _call(lib, fn, case.grid, cc.Launcher(src, fn).params, dv)
    prim, want = cc.reference_jvp(case, v, tan)
    _check_outputs(case, dv, prim)
    _check_outputs(case, dv, want, "t_")


SWISH_BWD = cc.SWISH_BWD_HAND + """
extern "C" int launch_swish_bwd_hand(unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                     float *x, float *dy, float *dx, int64_t n, void *stream)
{
    swish_bwd_hand<<<dim3(grid_x, grid_y, grid_z), 128, 0, (cudaStream_t)stream>>>(x, dy, dx, n);
    return (int)cudaGetLastError();
}
"""


def test_swish_hand_written_backward(built, tmp_path):
    case = next(c for c in CASES if c.id == "swish_hip")
    inc = str(tmp_path / "inc")
    cc.original_source(case, inc)  # writes the HIP compatibility header
    lib = ctypes.CDLL(_nvcc_shared(SWISH_BWD, str(tmp_path), "swish_bwd_hand", ["-I", inc]))
    v = cc.inputs(case)
    d_outs = cc.output_grads(case, v)
    _, _, got = _backward(case, "bwd", built, v, d_outs)
    x, dy = v["x"].float().cuda(), d_outs["y"].float().cuda()
    dx = torch.full_like(x, float("nan"))
    _call(lib, "launch_swish_bwd_hand", (case.grid[0],),
          cc.parse_params(cc.SWISH_BWD_HAND_PARAMS), {"x": x, "dy": dy, "dx": dx, "n": v["n"]})
    want = cc.reference_grads(case, v, d_outs)["x"]
    assert cc.rel_err(dx, want) < case.tol
    assert cc.rel_err(got["x"], dx) < case.tol
