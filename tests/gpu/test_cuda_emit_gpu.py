"""kad's CUDA C modules on a GPU (docs/EMIT.md, "CUDA C").

    make && python3 -m pytest -q tests/gpu/test_cuda_emit_gpu.py

Each module (`kad emit|grad ... --emit cuda`, printed by build/kad) is compiled with nvcc into a
shared library and its extern "C" launcher called through ctypes on torch CUDA tensors:

- test_softmax_forward / test_softmax_backward: the row softmax (tests/kernels/softmax.py, 100
  columns in 128 lanes) and its backward against torch float64 autograd of the same math.
- test_backward_bitwise: the softmax backward 20 times on the same inputs: every run's gradient
  equals the first bit for bit (block reductions in a fixed order, plain stores).
- test_leaky_relu_atomics: the --atomics backward (atomicAdd into the zero-filled gradient).
- test_bf16_cast_where: a bf16 kernel with a mask, tl.where and casts, and its backward.
- test_lane_ops: sum, max, min, argmax, argmin, reduce and scan with combine regions, cumsum
  (and reverse), cumprod, gather and flip along the lanes (tests/emit_cuda/lane_ops.ir).
- test_lanes_not_a_power_of_two: a block reduction over 100 lanes.
- test_multi_operand: reduce and scan of several operands (tests/emit_cuda/multi_operand.ir).
- test_dropout: the Philox mask of tests/kernels/dropout.py against Triton's own kernel (when
  triton is importable) and the backward regenerating it.
- test_guard_refuses: a backward's launch guard (step >= 64) refuses a launch that breaks it.
- test_per_thread_arrays: tiles [32, 4] as per-thread arrays (tests/emit_cuda/per_thread_arrays.py).

Without nvcc (looked up on PATH, $CUDA_HOME, /usr/local/cuda, torch's CUDA_HOME, the
nvidia-cuda-nvcc wheel) the kernels are compiled by CuPy's RawModule (NVRTC) and each launcher is
run in Python from its text (CupyModule: its checks, flags, zero-fill and launch).  Skipped
without torch, CUDA, or both nvcc and CuPy.
"""
import ctypes
import os
import re
import shlex
import shutil
import subprocess

import pytest

torch = pytest.importorskip("torch")
numpy = pytest.importorskip("numpy")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KAD = os.environ.get("KAD_BIN", os.path.join(REPO, "build", "kad"))


def _find_nvcc():
    """nvcc on PATH, under $CUDA_HOME, /usr/local/cuda or torch's CUDA_HOME, or from the pip wheel
    nvidia-cuda-nvcc; None when there is none."""
    found = shutil.which("nvcc")
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    try:
        from torch.utils.cpp_extension import CUDA_HOME
        homes.append(CUDA_HOME)
    except Exception:  # an old torch, or none installed with CUDA
        pass
    try:
        import nvidia.cuda_nvcc
        homes.append(os.path.dirname(nvidia.cuda_nvcc.__file__))
    except Exception:
        pass
    for h in homes:
        if not found and h and os.path.exists(os.path.join(h, "bin", "nvcc")):
            found = os.path.join(h, "bin", "nvcc")
    return found


NVCC = _find_nvcc()
try:
    import cupy
except Exception:  # not installed, or no CUDA for it
    cupy = None

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
    pytest.mark.skipif(NVCC is None and cupy is None, reason="neither nvcc nor CuPy (NVRTC) is available"),
]

SOFTMAX = ("tests/kernels/softmax.py:softmax_kernel --sig 'output_ptr=*fp32,input_ptr=*fp32,input_row_stride=i32,"
           "output_row_stride=i32,n_cols=i32,BLOCK_SIZE=128'")
SOFTMAX_AD = " --wrt input_ptr --out output_ptr"
LEAKY = ("tests/kernels/leaky_relu.py:leaky_relu_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,n_elements=i32,"
         "NEGATIVE_SLOPE=0.01,BLOCK_SIZE=256'")
CAST = "tests/emit_cuda/cast_where.py:cast_where --sig 'x_ptr=*bf16,y_ptr=*bf16,n=i32,alpha=fp32,BLOCK=128'"

_P, _I32, _I64, _F32, _B = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_float, ctypes.c_bool


def _kad(cmd):
    p = subprocess.run([KAD] + shlex.split(cmd), cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _arch():
    major, minor = torch.cuda.get_device_capability()
    return "sm_%d%d" % (major, minor)


MARK = "// ---- the launcher"

# What NVRTC lacks of the module's includes (the CuPy path): fixed-width ints, INFINITY, NAN, assert.
NVRTC_PRELUDE = """
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#define assert(c) ((void)0)
"""


def _c_to_py(expr):
    """A launcher condition (C over int64 arguments and the grid) as a Python expression."""
    e = expr.replace("(int64_t)", "").replace("&&", " and ").replace("||", " or ").replace("!(", " not (")
    return re.sub(r"(\d+)LL\b", r"\1", e)


class CupyModule:
    """The module's kernels through CuPy's RawModule (NVRTC), its launchers run here in Python from
    their text: range checks and guards evaluated, flags computed, input gradients zero-filled, the
    kernel launched.  Used when there is no nvcc."""

    def __init__(self, src):
        kern, self.host = src.split(MARK, 1)
        kern = "\n".join(l for l in kern.splitlines()
                         if not re.match(r"#include <(cuda_runtime|assert|math|stdint)\.h>", l))
        self.mod = cupy.RawModule(code=NVRTC_PRELUDE + kern, options=("-std=c++17",))
        sig = r"__global__ void __launch_bounds__\(\d+\) (\w+)\(([^)]*)\)"
        self.sigs = {m.group(1): m.group(2) for m in re.finditer(sig, kern)}

    def call(self, fn, grid, args):
        text = self.host[self.host.index("int %s(" % fn):]
        params = [p.strip() for p in text[text.index("(") + 1:text.index(")\n{")].split(",")]
        names = [re.split(r"[ *]+", p)[-1] for p in params[3:-1]]
        env = dict(zip(names, args))
        env.update(grid_x=grid[0], grid_y=grid[1], grid_z=grid[2])
        lines = text[text.index("{\n") + 2:text.index("\n}\n")].splitlines()
        for i, ln in enumerate(lines):
            ln = ln.strip()
            m = re.match(r"if \((.*)\)( //.*)?$", ln)
            refusal = i + 1 < len(lines) and "return (int)" in lines[i + 1]
            if m and refusal and "grid_x == 0" not in ln and "Success" not in ln:
                if eval(_c_to_py(m.group(1)), {}, env):
                    return 1  # refused: cudaErrorInvalidValue
                continue
            m = re.match(r"const bool (\w+) = (.*);$", ln)
            if m:
                env[m.group(1)] = bool(eval(_c_to_py(m.group(2)), {}, env))
                continue
            m = re.match(r"cudaError_t \w+ = cudaMemsetAsync\((\w+), 0,", ln)
            if m:
                env[m.group(1)].zero_()
                continue
            m = re.match(r"(\w+)<<<dim3\(grid_x, grid_y, grid_z\), (\d+), 0, stream>>>\((.*)\);$", ln)
            if m:
                kname, lanes, knames = m.group(1), int(m.group(2)), [a.strip() for a in m.group(3).split(",")]
                ktypes = [p.rsplit(" ", 1)[0].strip() for p in self.sigs[kname].split(", ")]
                kargs = []
                for n, ty in zip(knames, ktypes):
                    v = env[n]
                    if isinstance(v, torch.Tensor):
                        kargs.append(cupy.asarray(v.view(torch.uint8)))
                    else:
                        kargs.append({"int32_t": numpy.int32, "int64_t": numpy.int64, "float": numpy.float32,
                                      "double": numpy.float64, "bool": numpy.bool_, "uint32_t": numpy.uint32}[ty](v))
                if min(grid) > 0:
                    self.mod.get_function(kname)(tuple(grid), (lanes, 1, 1), tuple(kargs))
                return 0
        raise AssertionError("no launch in " + fn)


def _lib(src, tmp_path, name):
    """src compiled with nvcc into tmp_path/name.so and loaded (ctypes); without nvcc, through CuPy."""
    if NVCC is None:
        return CupyModule(src)
    cu, so = tmp_path / (name + ".cu"), tmp_path / (name + ".so")
    cu.write_text(src)
    p = subprocess.run([NVCC, "-std=c++17", "-arch=" + _arch(), "-O2", "-shared", "-Xcompiler", "-fPIC",
                        str(cu), "-o", str(so)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return ctypes.CDLL(str(so))


def _call(lib, fn, grid, argtypes, args):
    """launch_<fn>(grid_x, grid_y, grid_z, *args, stream), then a synchronize; its return code.
    args: tensors and numbers, typed by argtypes (ctypes)."""
    g = tuple(grid) + (1,) * (3 - len(grid))
    if isinstance(lib, CupyModule):
        rc = lib.call(fn, g, list(args))
    else:
        f = getattr(lib, fn)
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_uint] * 3 + argtypes + [_P]
        vals = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args]
        rc = f(*g, *vals, torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    return rc


def _launch(lib, fn, grid, argtypes, args):
    rc = _call(lib, fn, grid, argtypes, args)
    assert rc == 0, "%s returned CUDA error %d" % (fn, rc)


def _rel_err(got, want):
    got, want = got.double(), want.double()
    return ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()


@pytest.fixture(scope="module")
def softmax_libs(tmp_path_factory):
    d = tmp_path_factory.mktemp("softmax")
    fwd = _lib(_kad("emit " + SOFTMAX + " --emit cuda"), d, "fwd")
    bwd = _lib(_kad("grad " + SOFTMAX + SOFTMAX_AD + " --emit cuda"), d, "bwd")
    return fwd, bwd


ROWS, COLS = 300, 100
FWD_TYPES = [_P, _P, _I32, _I32, _I32]
BWD_TYPES = FWD_TYPES + [_P, _P, _I64]


def _softmax_case(seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(ROWS, COLS, device="cuda", generator=g) * 3
    dy = torch.randn(ROWS, COLS, device="cuda", generator=g)
    return x, dy


def _softmax_bwd(bwd, x, dy):
    y = torch.empty_like(x)
    dx = torch.full_like(x, float("nan"))  # the launcher zero-fills it
    _launch(bwd, "launch_softmax_kernel_bwd", (ROWS,), BWD_TYPES,
            [y, x, x.stride(0), y.stride(0), COLS, dy, dx, dx.numel()])
    return dx


def test_softmax_forward(softmax_libs):
    fwd, _ = softmax_libs
    x, _ = _softmax_case()
    y = torch.empty_like(x)
    _launch(fwd, "launch_softmax_kernel", (ROWS,), FWD_TYPES, [y, x, x.stride(0), y.stride(0), COLS])
    assert _rel_err(y, torch.softmax(x.double(), dim=1)) < 1e-5


def test_softmax_backward(softmax_libs):
    _, bwd = softmax_libs
    x, dy = _softmax_case()
    dx = _softmax_bwd(bwd, x, dy)
    x64 = x.double().requires_grad_()
    (ref,) = torch.autograd.grad(torch.softmax(x64, dim=1), x64, dy.double())
    assert _rel_err(dx, ref) < 1e-5


def test_backward_bitwise(softmax_libs):
    _, bwd = softmax_libs
    x, dy = _softmax_case(1)
    first = _softmax_bwd(bwd, x, dy)
    for _ in range(19):
        again = _softmax_bwd(bwd, x, dy)
        assert torch.equal(first.view(torch.int32), again.view(torch.int32))


def test_leaky_relu_atomics(tmp_path):
    n = 1000
    fwd = _lib(_kad("emit " + LEAKY + " --emit cuda"), tmp_path, "fwd")
    bwd = _lib(_kad("grad " + LEAKY + " --wrt x_ptr --out y_ptr --atomics --emit cuda"), tmp_path, "bwd")
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    grid = ((n + 255) // 256,)
    _launch(fwd, "launch_leaky_relu_kernel", grid, [_P, _P, _I32], [x, y, n])
    assert torch.equal(y, torch.nn.functional.leaky_relu(x, 0.01))
    dy = torch.randn(n, device="cuda")
    dx = torch.full_like(x, float("nan"))
    _launch(bwd, "launch_leaky_relu_kernel_bwd", grid, [_P, _P, _I32, _P, _P, _I64], [x, y, n, dy, dx, n])
    x64 = x.double().requires_grad_()
    (ref,) = torch.autograd.grad(torch.nn.functional.leaky_relu(x64, 0.01), x64, dy.double())
    assert _rel_err(dx, ref) < 1e-6


def test_bf16_cast_where(tmp_path):
    n, alpha = 1000, 0.7
    fwd = _lib(_kad("emit " + CAST + " --emit cuda"), tmp_path, "fwd")
    bwd = _lib(_kad("grad " + CAST + " --wrt x_ptr --out y_ptr --emit cuda"), tmp_path, "bwd")
    x = (torch.randn(n, device="cuda") * 2).to(torch.bfloat16)
    y = torch.empty_like(x)
    grid = ((n + 127) // 128,)
    _launch(fwd, "launch_cast_where", grid, [_P, _P, _I32, _F32], [x, y, n, alpha])

    def ref_fn(t):
        return torch.where(t > 0, t * torch.sigmoid(t), alpha * (torch.exp(t) - 1.0))

    assert _rel_err(y, ref_fn(x.double())) < 1e-2
    dy = torch.randn(n, device="cuda").to(torch.bfloat16)
    dx = torch.full_like(x, float("nan"))
    _launch(bwd, "launch_cast_where_bwd", grid, [_P, _P, _I32, _F32, _P, _P, _I64], [x, y, n, alpha, dy, dx, n])
    x64 = x.double().requires_grad_()
    (ref,) = torch.autograd.grad(ref_fn(x64), x64, dy.double())
    assert _rel_err(dx, ref) < 2e-2


def test_lane_ops(tmp_path):
    lib = _lib(_kad("emit tests/emit_cuda/lane_ops.ir --emit cuda"), tmp_path, "lanes")
    g = torch.Generator(device="cuda").manual_seed(3)
    x = 0.9 + 0.2 * torch.rand(64, device="cuda", generator=g)
    x[17] = 1.5  # a unique max and min, so argmax/argmin have one answer
    x[40] = 0.5
    idx = torch.randperm(64, device="cuda", generator=g).to(torch.int32)
    y = torch.empty_like(x)
    s = torch.empty(1, device="cuda")
    k = torch.empty(1, device="cuda", dtype=torch.int32)
    _launch(lib, "launch_lanes", (1,), [_P, _P, _P, _P, _P], [x, idx, y, s, k])
    xd = x.double()
    want_y = (xd.cumsum(0) + xd.flip(0).cumsum(0).flip(0) + xd.cumprod(0) + xd.cummax(0).values
              + xd[idx.long()] + xd.flip(0))
    assert _rel_err(y, want_y) < 1e-5
    want_s = xd.sum() + xd.max() + xd.min() + xd.max()
    assert abs(s.item() - want_s.item()) / abs(want_s.item()) < 1e-5
    assert k.item() == 17 + 40 + int(idx.sum().item())


LANES100 = """
kernel @row_sum(%x_ptr: *fp32, %y_ptr: *fp32, %stride: i32) [BLOCK = 100] {
  %pid = program_id 0 : i32
  %row = mul %pid, %stride : i32
  %base = addptr %x_ptr, %row : *fp32
  %offs = arange 0 : i32[100]
  %p = broadcast %base : *fp32[100]
  %q = addptr %p, %offs : *fp32[100]
  %x = load %q : fp32[100]
  %s = sum %x {axis = 0} : fp32
  %m = max %x {axis = 0} : fp32
  %r = add %s, %m : fp32
  %out = addptr %y_ptr, %pid : *fp32
  store %out, %r
}
"""


def test_lanes_not_a_power_of_two(tmp_path):
    ir = tmp_path / "row_sum.ir"
    ir.write_text(LANES100)
    lib = _lib(_kad("emit %s --emit cuda" % ir), tmp_path, "row_sum")
    x = torch.randn(50, 100, device="cuda")
    y = torch.empty(50, device="cuda")
    _launch(lib, "launch_row_sum", (50,), [_P, _P, _I32], [x, y, x.stride(0)])
    xd = x.double()
    assert _rel_err(y, xd.sum(1) + xd.max(1).values) < 1e-5


def test_multi_operand(tmp_path):
    lib = _lib(_kad("emit tests/emit_cuda/multi_operand.ir --emit cuda"), tmp_path, "multi")
    g = torch.Generator(device="cuda").manual_seed(5)
    a = 0.5 + torch.rand(32, device="cuda", generator=g)
    b = torch.randn(32, device="cuda", generator=g)
    y, s = torch.empty(32, device="cuda"), torch.empty(1, device="cuda")
    _launch(lib, "launch_multi", (1,), [_P, _P, _P, _P], [a, b, y, s])
    A, H, want = 1.0, 0.0, []
    for t in range(32):
        A, H = A * a[t].item(), a[t].item() * H + b[t].item()
        want.append(A + H)
    assert _rel_err(y.cpu(), torch.tensor(want, dtype=torch.float64)) < 1e-5
    assert abs(s.item() - (b.max().item() + int(b.argmax()))) < 1e-5


DROPOUT = ("tests/kernels/dropout.py:seeded_dropout_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,n_elements=i32,p=fp32,"
           "seed=i32,BLOCK_SIZE=128'")


def test_dropout(tmp_path):
    n, p, seed = 5000, 0.3, 1234
    fwd = _lib(_kad("emit " + DROPOUT + " --emit cuda"), tmp_path, "fwd")
    bwd = _lib(_kad("grad " + DROPOUT + " --wrt x_ptr --out out_ptr --emit cuda"), tmp_path, "bwd")
    x, y = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    grid = ((n + 127) // 128,)
    _launch(fwd, "launch_seeded_dropout_kernel", grid, [_P, _P, _I32, _F32, _I32], [x, y, n, p, seed])
    keep = y != 0
    assert 0.6 < keep.float().mean().item() < 0.8
    try:
        import sys
        sys.path.insert(0, os.path.join(REPO, "tests"))
        from kernels.dropout import seeded_dropout_kernel  # Triton's own kernel, when triton is here
    except ImportError:
        seeded_dropout_kernel = None
    if seeded_dropout_kernel is not None:
        want = torch.empty_like(x)
        seeded_dropout_kernel[grid](x, want, n, p, seed, BLOCK_SIZE=128)
        torch.cuda.synchronize()
        assert torch.equal(keep, want != 0)  # the same Philox mask
    dy, dx = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    _launch(bwd, "launch_seeded_dropout_kernel_bwd", grid, [_P, _P, _I32, _F32, _I32, _P, _P, _I64],
            [x, y, n, p, seed, dy, dx, n])
    assert torch.equal(dx != 0, keep & (dy != 0))
    assert _rel_err(dx[keep], dy[keep] / (1 - p)) < 1e-6


GUARD = ("tests/grad/guard_loop_stores.py:unknown_step_for --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,step=i32,BLOCK=64' "
         "--wrt x_ptr --out y_ptr")


def test_guard_refuses(tmp_path):
    bwd = _lib(_kad("grad " + GUARD + " --emit cuda"), tmp_path, "bwd")
    n = 1000
    types = [_P, _P, _I32, _I32, _P, _P, _I64]
    x, y, dy, dx = (torch.randn(n, device="cuda") for _ in range(4))
    assert _call(bwd, "launch_unknown_step_for_bwd", (1,), types, [x, y, n, 32, dy, dx, n]) != 0
    assert _call(bwd, "launch_unknown_step_for_bwd", (1,), types, [x, y, n, 64, dy, dx, n]) == 0
    assert torch.equal(dx, dy * 2.0)


PTA = ("tests/emit_cuda/per_thread_arrays.py:scale_rows2d --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n_rows=i32,"
       "BM=32,BN=4'")


def test_per_thread_arrays(tmp_path):
    """Tiles [32, 4]: thread i holds row i as float x[4]; w a row every thread holds."""
    fwd = _lib(_kad("emit " + PTA + " --emit cuda"), tmp_path, "fwd")
    bwd = _lib(_kad("grad " + PTA + " --wrt x_ptr --out y_ptr --emit cuda"), tmp_path, "bwd")
    n = 1000
    x, w = torch.randn(n, 4, device="cuda"), torch.randn(4, device="cuda")
    y = torch.empty(n, 4, device="cuda")
    grid = ((n + 31) // 32,)
    _launch(fwd, "launch_scale_rows2d", grid, [_P, _P, _P, _I32], [x, w, y, n])

    def f(xx, ww):
        yy = xx * ww[None, :]
        return yy / ((yy * yy).sum(1, keepdim=True) + 1.0)

    assert _rel_err(y, f(x.double(), w.double())) < 1e-5
    dy = torch.randn(n, 4, device="cuda")
    x64 = x.double().requires_grad_()
    (ref,) = torch.autograd.grad(f(x64, w.double()), x64, dy.double())
    dx = torch.empty(n, 4, device="cuda")
    _launch(bwd, "launch_scale_rows2d_bwd", grid, [_P, _P, _P, _I32, _P, _P, _I64], [x, w, y, n, dy, dx, dx.numel()])
    assert _rel_err(dx, ref) < 1e-5
