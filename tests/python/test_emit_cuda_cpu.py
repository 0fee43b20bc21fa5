"""kad's CUDA C kernels run on the CPU stand-in (docs/EMIT.md, "CUDA C", Tests).

The kernel part of each module (everything before the launcher) is compiled by g++ against
tests/python/cuda_shim/ (cuda_runtime.h, cuda_fp16.h, cuda_bf16.h: threadIdx and blockIdx
thread_local, __syncthreads a std::barrier, __shared__ a static array) with a driver that runs
every block with one std::thread per lane, then checked against torch float64 on the same inputs.
This runs what the emitter prints, barriers and shared-memory trees included, without a GPU; the
GPU runs are tests/gpu/test_cuda_emit_gpu.py.  The backward's plain-store flag, which the
launcher computes, is passed here both ways: plain stores and atomics must give one gradient.
Skipped without g++ (C++20) or torch.
"""
import ctypes
import os
import re
import shlex
import shutil
import subprocess

import pytest

torch = pytest.importorskip("torch")

import cuda_kernel_cases as cc  # noqa: E402  (the shim's driver, shared with test_cuda_kernels_cpu.py)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KAD = os.environ.get("KAD_BIN", os.path.join(REPO, "build", "kad"))
GXX = shutil.which("g++")
MARK = "// ---- the launcher"

pytestmark = pytest.mark.skipif(GXX is None, reason="g++ is not on PATH")

CTYPES = {"float": ctypes.c_float, "double": ctypes.c_double, "int32_t": ctypes.c_int32,
          "int64_t": ctypes.c_int64, "uint32_t": ctypes.c_uint32, "bool": ctypes.c_bool}

SOFTMAX = ("tests/kernels/softmax.py:softmax_kernel --sig 'output_ptr=*fp32,input_ptr=*fp32,input_row_stride=i32,"
           "output_row_stride=i32,n_cols=i32,BLOCK_SIZE=128' --wrt input_ptr --out output_ptr")
LEAKY = ("tests/kernels/leaky_relu.py:leaky_relu_kernel --sig 'x_ptr=*fp32,y_ptr=*fp32,n_elements=i32,"
         "NEGATIVE_SLOPE=0.01,BLOCK_SIZE=256' --wrt x_ptr --out y_ptr")
CAST = ("tests/emit_cuda/cast_where.py:cast_where --sig 'x_ptr=*bf16,y_ptr=*bf16,n=i32,alpha=fp32,BLOCK=128' "
        "--wrt x_ptr --out y_ptr")


def _kad(cmd):
    p = subprocess.run([KAD] + shlex.split(cmd), cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


class Kernel:
    """The module's kernel built for the CPU; call it as k(grid, *args) (tensors, numbers)."""

    def __init__(self, src, tmp_path, name):
        kern = src[:src.index(MARK)]
        m = re.search(r'extern "C" __global__ void __launch_bounds__\((\d+)\) (\w+)\(([^)]*)\)', kern)
        self.lanes, kname, params = int(m.group(1)), m.group(2), m.group(3)
        self.types, names = [], []
        for prm in params.split(", "):
            ty, nm = prm.rsplit(" ", 1)
            if nm.startswith("*"):
                ty, nm = ty + " *", nm[1:]
            self.types.append(ctypes.c_void_p if ty.strip().endswith("*") else CTYPES[ty.strip()])
            names.append(nm)
        self.fn = cc.shim_run(GXX, kern, params, names, self.lanes, kname, tmp_path, name)
        self.fn.argtypes = [ctypes.c_uint] * 3 + self.types

    def __call__(self, grid, *args):
        g = tuple(grid) + (1,) * (3 - len(grid))
        vals = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args]
        assert len(vals) == len(self.types)
        self.fn(*g, *vals)


def _rel_err(got, want):
    got, want = got.double(), want.double()
    return ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()


ROWS, COLS = 6, 100


def test_softmax_forward_and_backward(tmp_path):
    fwd = Kernel(_kad("emit " + SOFTMAX.split(" --wrt")[0] + " --emit cuda"), tmp_path, "fwd")
    bwd = Kernel(_kad("grad " + SOFTMAX + " --emit cuda"), tmp_path, "bwd")
    assert fwd.lanes == 128
    g = torch.Generator().manual_seed(0)
    x = torch.randn(ROWS, COLS, generator=g) * 3
    dy = torch.randn(ROWS, COLS, generator=g)
    y = torch.empty_like(x)
    fwd((ROWS,), y, x, COLS, COLS, COLS)
    assert _rel_err(y, torch.softmax(x.double(), 1)) < 1e-6
    x64 = x.double().requires_grad_()
    (ref,) = torch.autograd.grad(torch.softmax(x64, 1), x64, dy.double())
    got = []
    for plain in (True, False):
        dx = torch.zeros_like(x)  # the launcher's zero-fill
        bwd((ROWS,), y, x, COLS, COLS, COLS, dy, dx, plain)
        assert _rel_err(dx, ref) < 1e-6
        got.append(dx)
    assert torch.equal(got[0], got[1])  # one writer per element: the atomics add to zero once


def test_leaky_relu_backward_and_jvp(tmp_path):
    n = 700
    bwd = Kernel(_kad("grad " + LEAKY + " --emit cuda"), tmp_path, "bwd")
    atom = Kernel(_kad("grad " + LEAKY + " --atomics --emit cuda"), tmp_path, "atom")
    jvp = Kernel(_kad("jvp " + LEAKY + " --emit cuda"), tmp_path, "jvp")
    x, dy = torch.randn(n), torch.randn(n)
    grid = ((n + 255) // 256,)
    x64 = x.double().requires_grad_()
    (ref,) = torch.autograd.grad(torch.nn.functional.leaky_relu(x64, 0.01), x64, dy.double())
    dx = torch.zeros(n)
    bwd(grid, x, torch.empty(n), n, dy, dx, True)
    assert _rel_err(dx, ref) < 1e-6
    dx2 = torch.zeros(n)
    atom(grid, x, torch.empty(n), n, dy, dx2)
    assert torch.equal(dx, dx2)
    tx, y, ty = torch.randn(n), torch.empty(n), torch.empty(n)
    jvp(grid, x, y, n, tx, ty)
    assert torch.equal(y, torch.nn.functional.leaky_relu(x, 0.01))
    assert _rel_err(ty, torch.where(x >= 0, tx, 0.01 * tx)) < 1e-6


def test_bf16_cast_where(tmp_path):
    n, alpha = 300, 0.7
    fwd = Kernel(_kad("emit " + CAST.split(" --wrt")[0] + " --emit cuda"), tmp_path, "fwd")
    bwd = Kernel(_kad("grad " + CAST + " --emit cuda"), tmp_path, "bwd")
    x = (torch.randn(n) * 2).to(torch.bfloat16)
    y = torch.empty_like(x)
    grid = ((n + 127) // 128,)
    fwd(grid, x, y, n, alpha)

    def f(t):
        return torch.where(t > 0, t * torch.sigmoid(t), alpha * (torch.exp(t) - 1.0))

    want = f(x.double())
    assert torch.equal(y, want.float().to(torch.bfloat16)) or _rel_err(y, want) < 8e-3
    dy = torch.randn(n).to(torch.bfloat16)
    dx = torch.zeros_like(x)
    bwd(grid, x, y, n, alpha, dy, dx, True)
    x64 = x.double().requires_grad_()
    (ref,) = torch.autograd.grad(f(x64), x64, dy.double())
    assert _rel_err(dx, ref) < 1e-2


def test_lane_ops(tmp_path):
    k = Kernel(_kad("emit tests/emit_cuda/lane_ops.ir --emit cuda"), tmp_path, "lanes")
    g = torch.Generator().manual_seed(3)
    x = 0.9 + 0.2 * torch.rand(64, generator=g)
    x[17], x[40] = 1.5, 0.5
    idx = torch.randperm(64, generator=g).to(torch.int32)
    y, s, kk = torch.empty(64), torch.empty(1), torch.empty(1, dtype=torch.int32)
    k((1,), x, idx, y, s, kk)
    xd = x.double()
    want = (xd.cumsum(0) + xd.flip(0).cumsum(0).flip(0) + xd.cumprod(0) + xd.cummax(0).values + xd[idx.long()]
            + xd.flip(0))
    assert _rel_err(y, want) < 1e-5
    want_s = (xd.sum() + xd.max() + xd.min() + xd.max()).item()
    assert abs(s.item() - want_s) / abs(want_s) < 1e-6
    assert kk.item() == 17 + 40 + int(idx.sum())


def test_control_flow(tmp_path):
    """tests/emit_cuda/control_flow.ir: a loop carrying acc (a tile, + i where i % n == 0, so 0) and
    k (the sum of the i that are not), a while inside an if, a copy loop of scalar loads and stores
    (thread 0), then p[0] = sum(acc) when k < n."""
    k = Kernel(_kad("emit tests/emit_cuda/control_flow.ir --emit cuda"), tmp_path, "cf")
    for n, stored in ((2, True), (5, False)):
        p = torch.arange(1, 9, dtype=torch.float32)
        k((1,), p, n)
        want = torch.arange(1, 9, dtype=torch.float32)
        if stored:  # k = 1 < 2
            want[0] = 0.0
        assert torch.equal(p, want), (n, p)


def test_lanes_not_a_power_of_two(tmp_path):
    ir = tmp_path / "row_sum.ir"
    ir.write_text("""
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
  %at = argmax %x {axis = 0} : i32
  %atf = cast %at : fp32
  %r = add %s, %m : fp32
  %r2 = add %r, %atf : fp32
  %out = addptr %y_ptr, %pid : *fp32
  store %out, %r2
}
""")
    k = Kernel(_kad("emit %s --emit cuda" % ir), tmp_path, "row_sum")
    assert k.lanes == 100
    x = torch.randn(4, 100)
    y = torch.empty(4)
    k((4,), x, y, 100)
    xd = x.double()
    assert _rel_err(y, xd.sum(1) + xd.max(1).values + xd.argmax(1).double()) < 1e-6


def test_multi_operand_reduce_and_scan(tmp_path):
    k = Kernel(_kad("emit tests/emit_cuda/multi_operand.ir --emit cuda"), tmp_path, "multi")
    g = torch.Generator().manual_seed(5)
    a = 0.5 + torch.rand(32, generator=g)
    b = torch.randn(32, generator=g)
    y, s = torch.empty(32), torch.empty(1)
    k((1,), a, b, y, s)
    A, H, want = 1.0, 0.0, []
    for t in range(32):
        A, H = A * a[t].item(), a[t].item() * H + b[t].item()
        want.append(A + H)
    assert _rel_err(y, torch.tensor(want, dtype=torch.float64)) < 1e-5
    assert abs(s.item() - (b.max().item() + int(b.argmax()))) < 1e-5


def _philox_rand(seed, offsets):
    """tl.rand(seed, offsets) for 32-bit offsets (triton/language/random.py), in Python."""
    out = []
    for off in offsets:
        c = [off & 0xFFFFFFFF, 0, 0, 0]
        k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
        for _ in range(10):
            pb, pa = 0xCD9E8D57 * c[2], 0xD2511F53 * c[0]
            c = [((pb >> 32) ^ c[1] ^ k0) & 0xFFFFFFFF, pb & 0xFFFFFFFF, ((pa >> 32) ^ c[3] ^ k1) & 0xFFFFFFFF,
                 pa & 0xFFFFFFFF]
            k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
        s = c[0] - (1 << 32) if c[0] >= 1 << 31 else c[0]
        s = -s - 1 if s < 0 else s
        out.append(float(torch.tensor(float(s), dtype=torch.float32) * torch.tensor(4.6566127342e-10)))
    return torch.tensor(out, dtype=torch.float32)


def test_dropout_philox(tmp_path):
    sig = "tests/kernels/dropout.py:seeded_dropout_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,n_elements=i32,p=fp32," \
          "seed=i32,BLOCK_SIZE=128'"
    fwd = Kernel(_kad("emit " + sig + " --emit cuda"), tmp_path, "fwd")
    bwd = Kernel(_kad("grad " + sig + " --wrt x_ptr --out out_ptr --emit cuda"), tmp_path, "bwd")
    n, p, seed = 300, 0.3, 1234
    x, y = torch.randn(n), torch.empty(n)
    fwd(((n + 127) // 128,), x, y, n, p, seed)
    keep = _philox_rand(seed, range(n)) > p
    assert 0.5 < keep.float().mean().item() < 0.9
    assert torch.equal(y, torch.where(keep, x / torch.tensor(1 - p, dtype=torch.float32), torch.zeros(n)))
    dy, dx = torch.randn(n), torch.zeros(n)
    bwd(((n + 127) // 128,), x, y, n, p, seed, dy, dx, True)
    assert torch.equal(dx, torch.where(keep, dy / torch.tensor(1 - p, dtype=torch.float32), torch.zeros(n)))


def test_outer_allgather(tmp_path):
    """tests/emit_cuda/outer_allgather.py: y = x[:, None] * x[None, :] (16 x 16), the row x[None, :]
    all-gathered from the lanes through shared memory."""
    k = Kernel(_kad("emit tests/emit_cuda/outer_allgather.py:outer --sig 'x_ptr=*fp32,y_ptr=*fp32,BLOCK=16' "
                    "--emit cuda"), tmp_path, "outer")
    x, y = torch.randn(16), torch.zeros(256)
    k((1,), x, y)
    assert torch.equal(y.reshape(16, 16), x[:, None] * x[None, :])


def test_rows_beside_lanes(tmp_path):
    """tests/emit_cuda/rows.ir: y[0:32] = the sum of x[0:64] (a row of 32 that thread 0 stores)."""
    k = Kernel(_kad("emit tests/emit_cuda/rows.ir --emit cuda"), tmp_path, "rows")
    assert k.lanes == 64
    x, y = torch.randn(64), torch.zeros(40)
    k((1,), x, y)
    assert _rel_err(y[:32], x.double().sum().expand(32)) < 1e-6
    assert torch.equal(y[32:], torch.zeros(8))


PTA = ("tests/emit_cuda/per_thread_arrays.py:scale_rows2d --sig 'x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,n_rows=i32,"
       "BM=32,BN=4'")


def test_per_thread_arrays(tmp_path):
    fwd = Kernel(_kad("emit " + PTA + " --emit cuda"), tmp_path, "fwd")
    bwd = Kernel(_kad("grad " + PTA + " --wrt x_ptr --out y_ptr --emit cuda"), tmp_path, "bwd")
    assert fwd.lanes == 32
    n = 50
    x, w = torch.randn(n, 4), torch.randn(4)
    y = torch.full((n, 4), float("nan"))
    grid = ((n + 31) // 32,)
    fwd(grid, x, w, y, n)

    def f(xx, ww):
        yy = xx * ww[None, :]
        return yy / ((yy * yy).sum(1, keepdim=True) + 1.0)

    assert _rel_err(y, f(x.double(), w.double())) < 1e-6
    dy = torch.randn(n, 4)
    x64 = x.double().requires_grad_()
    (ref,) = torch.autograd.grad(f(x64, w.double()), x64, dy.double())
    for plain in (True, False):
        dx = torch.zeros(n, 4)
        bwd(grid, x, w, y, n, dy, dx, plain)
        assert _rel_err(dx, ref) < 1e-5


def test_array_ops(tmp_path):
    """tests/emit_cuda/array_ops.ir: acc = x * (0 + 1 + ... + n-1) carried as arrays, then its
    cumsum along the row into y, and max + argmax of each row (through join and split) into z."""
    k = Kernel(_kad("emit tests/emit_cuda/array_ops.ir --emit cuda"), tmp_path, "arrays")
    assert k.lanes == 16
    n = 5
    x = torch.randn(16, 4)
    y, z = torch.empty(16, 4), torch.empty(16)
    k((1,), x, y, z, n)
    acc = x.double() * sum(range(n))
    assert _rel_err(y, acc.cumsum(1)) < 1e-6
    assert _rel_err(z, acc.max(1).values + acc.argmax(1).double()) < 1e-6


SWIGLU = ("tests/kernels/swiglu.py:swiglu_fwd_kernel --sig 'a_ptr=*fp32,b_ptr=*fp32,c_ptr=*fp32,row_stride=i32,"
          "n_cols=i32,BLOCK_SIZE=64' --wrt a_ptr,b_ptr --out c_ptr")


def test_swiglu_two_gradients(tmp_path):
    """A 2-D grid (a row per program along axis 0, column blocks along axis 1), int64 row offsets
    and two input gradients, each with its plain-store flag."""
    bwd = Kernel(_kad("grad " + SWIGLU + " --emit cuda"), tmp_path, "bwd")
    rows, cols = 3, 100
    a, b, dc = torch.randn(rows, cols), torch.randn(rows, cols), torch.randn(rows, cols)
    da, db = torch.zeros(rows, cols), torch.zeros(rows, cols)
    nflags = len(bwd.types) - 8
    bwd((rows, (cols + 63) // 64), a, b, torch.empty(rows, cols), cols, cols, dc, da, db, *([True] * nflags))
    a64, b64 = a.double().requires_grad_(), b.double().requires_grad_()
    ra, rb = torch.autograd.grad(torch.nn.functional.silu(a64) * b64, (a64, b64), dc.double())
    assert _rel_err(da, ra) < 1e-6 and _rel_err(db, rb) < 1e-6
