"""kad.cuda.differentiable (docs/PYTHON.md, "CUDA C / HIP kernels") on CPU tensors: the kernels
test_cuda_front.py drives through the C API, launched as k[grid, block](*args), their forward
against torch's float64 math and torch.autograd.grad against torch's float64 autograd; the user
errors; version counters."""
import os

import pytest

torch = pytest.importorskip("torch")

import kad  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CUDA = os.path.join(ROOT, "tests", "cuda")
F64 = torch.float64


def src(name):
    return os.path.join(CUDA, name)


gen = torch.Generator().manual_seed(1)


def randn(*shape, dtype=F64):
    return torch.randn(*shape, generator=gen, dtype=F64).to(dtype)


def ref_grads(fn, xs, dy):
    xs = [x.detach().clone().requires_grad_() for x in xs]
    return torch.autograd.grad(fn(*xs), xs, dy)


def close(a, b, tol=1e-10):
    assert a.shape == b.shape and torch.allclose(a, b, rtol=tol, atol=tol), (a - b).abs().max()


def check(k, grid, block, args, ins, outs, fn, tol=1e-10):
    """Runs k[grid, block](*args) in f64 mode, the forward against fn(*ins) and the gradients of
    ins against torch's autograd of fn."""
    with kad.f64_mode():
        r = k[grid, block](*args)
        ys = r if isinstance(r, tuple) else (r,)
        for y, o in zip(ys, outs):
            assert y is o
        want = fn(*[x.detach() for x in ins])
        close(ys[0], want, tol)
        dy = randn(*want.shape)
        got = torch.autograd.grad(ys[0], ins, dy)
    for g, w in zip(got, ref_grads(fn, ins, dy)):
        close(g, w, tol)


def test_square_f64_and_fp32():
    k = kad.cuda.differentiable(src("square.cu"), "square", inputs=["x"], outputs=["y"])
    n = 700
    x, y = randn(n).requires_grad_(), torch.zeros(n, dtype=F64)
    check(k, 3, 256, (x, y, n), [x], [y], lambda x: x * x)
    # fp32 tensors outside f64_mode: the kernel as written
    x, y = randn(n, dtype=torch.float32).requires_grad_(), torch.zeros(n)
    k[(3,), (256,)](x, y, n)
    close(y, x.detach() * x.detach(), 1e-6)
    y.backward(torch.ones(n))
    close(x.grad, 2 * x.detach(), 1e-6)


def test_swish_hip_template_from_dtype():
    k = kad.cuda.differentiable(src("swish_hip.hip"), "swish", inputs=["x"], outputs=["y"])
    n = 1000
    x, y = randn(n).requires_grad_(), torch.zeros(n, dtype=F64)
    # float64 tensors: scalar_t = double, outside f64_mode (AT_DISPATCH's rule)
    y2 = k[2, 128](x, y, n)
    assert y2 is y
    close(y, x.detach() * torch.sigmoid(x.detach()))
    dy = randn(n)
    g, = torch.autograd.grad(y, x, dy)
    close(g, ref_grads(lambda x: x * torch.sigmoid(x), [x], dy)[0])
    assert k.specialization(128, [x, y, n])[0]["scalar_t"] == F64
    # fp32 tensors: scalar_t = float
    x, y = randn(n, dtype=torch.float32), torch.zeros(n)
    k[2, 128](x, y, n)
    close(y, x * torch.sigmoid(x), 1e-6)
    # template= given: fp32 buffers required
    kf = kad.cuda.differentiable(src("swish_hip.hip"), "swish", inputs=["x"], outputs=["y"],
                                 template={"scalar_t": torch.float32})
    with pytest.raises(TypeError, match=r"'x' is float\*, which needs a torch.float32 tensor, got torch.float64"):
        kf[2, 128](randn(n), torch.zeros(n, dtype=F64), n)
    assert "hip" in kad.cuda.backward_source(k, 128, x, y, n).lower()


def box_ref(x):
    return torch.nn.functional.avg_pool2d(x[None, None], 3, stride=1, padding=1, count_include_pad=False)[0, 0]


def test_box3x3_2d_block():
    k = kad.cuda.differentiable(src("box3x3.cu"), "box3x3", inputs=["in"], outputs=["out"])
    H, W = 13, 21
    x, y = randn(H, W).requires_grad_(), torch.zeros(H, W, dtype=F64)
    check(k, (3, 4), (8, 4), (x, y, H, W), [x], [y], box_ref)


def test_recurrence_two_inputs():
    k = kad.cuda.differentiable(src("recurrence.cu"), "recurrence", inputs=["x", "w"], outputs=["h"])
    T, N = 7, 100
    x, w = randn(T, N).requires_grad_(), (randn(N) * 0.5).requires_grad_()
    h = torch.zeros(T, N, dtype=F64)

    def ref(x, w):
        s, hs = torch.zeros(N, dtype=F64), []
        for t in range(T):
            s = torch.tanh(w * s + x[t])
            hs.append(s)
        return torch.stack(hs)

    check(k, 2, 64, (x, w, h, T, N), [x, w], [h], ref)


def test_softmax_rows_template_block():
    k = kad.cuda.differentiable(src("softmax_rows.cu"), "softmax_rows", inputs=["x"], outputs=["y"],
                                template={"BLOCK": 32})
    R, C = 3, 50
    x, y = randn(R, C).requires_grad_(), torch.zeros(R, C, dtype=F64)
    check(k, R, 32, (x, y, C), [x], [y], lambda x: torch.softmax(x, dim=1))
    # without BLOCK: kad's located error
    k2 = kad.cuda.differentiable(src("softmax_rows.cu"), "softmax_rows", inputs=["x"], outputs=["y"])
    with pytest.raises(kad.KadError, match=r"softmax_rows.cu:7:15: error: template parameter 'BLOCK'"):
        k2[R, 32](x, y, C)


def test_layernorm_three_inputs():
    k = kad.cuda.differentiable(src("layernorm_warp.cu"), "layernorm", inputs=["x", "gamma", "beta"],
                                outputs=["y"], template={"BLOCK": 64})
    R, C = 3, 80
    x, gamma, beta = randn(R, C).requires_grad_(), randn(C).requires_grad_(), randn(C).requires_grad_()
    y = torch.zeros(R, C, dtype=F64)
    check(k, R, 64, (x, gamma, beta, y, C, 1e-5), [x, gamma, beta], [y],
          lambda x, g, b: torch.nn.functional.layer_norm(x, (C,), g, b, eps=1e-5), 1e-8)


def test_dot_atomic_from_source_text():
    with open(src("constructs.cu")) as f:
        text = f.read()
    k = kad.cuda.differentiable(text, "dot_atomic", inputs=["a", "b"], outputs=["out"])
    n = 150
    a, b, out = randn(n).requires_grad_(), randn(n).requires_grad_(), torch.zeros(1, dtype=F64)
    check(k, 3, 64, (a, b, out, n), [a, b], [out], lambda a, b: (a * b).sum().reshape(1))


def test_only_some_inputs_need_grad():
    k = kad.cuda.differentiable(src("recurrence.cu"), "recurrence", inputs=["x", "w"], outputs=["h"])
    T, N = 3, 70
    x, w, h = randn(T, N), randn(N).requires_grad_(), torch.zeros(T, N, dtype=F64)
    with kad.f64_mode():
        k[2, 64](x, w, h, T, N)
        g, = torch.autograd.grad(h.sum(), w)
    assert g.shape == (N,) and torch.isfinite(g).all() and g.abs().sum() > 0


STRIDED_ROWS = r"""
__global__ void rows(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ h, int T, int N,
                     int stride)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N)
        return;
    float s = 0.0f;
    for (int t = 0; t < T; t++) {
        s = tanhf(w[i] * s + x[t * N + i]);
        h[t * stride + i] = s;
    }
}
"""


def test_backward_launch_condition_refused_before_forward():
    # the time steps' rows are `stride` apart: they are distinct only when stride >= N (a guard of
    # the backward, checked at the launch); recurrence.cu's `i < N` is proven without one
    k = kad.cuda.differentiable(STRIDED_ROWS, "rows", inputs=["x", "w"], outputs=["h"])
    T, N = 3, 20
    x, w, h = randn(T, N), randn(N).requires_grad_(), torch.zeros(T * N, dtype=F64)
    with kad.f64_mode(), pytest.raises(kad.KadError, match=r"<rows>.cu:11:27: error: .*needs stride >= 1 and "
                                                           r"\(stride >= 64 or stride >= N\)"):
        k[1, 64](x, w, h, T, N, 10)
    assert torch.all(h == 0)  # nothing ran
    with kad.f64_mode():
        k[1, 64](x, w, h, T, N, N)  # stride == N: the guard holds
        g, = torch.autograd.grad(h.sum(), w)
    assert torch.isfinite(g).all() and g.abs().sum() > 0


# ---- what a user gets wrong ----

def square():
    return kad.cuda.differentiable(src("square.cu"), "square", inputs=["x"], outputs=["y"])


def test_wrong_dtype():
    with pytest.raises(TypeError, match=r"argument 'x' is float\*, which needs a torch.float32 tensor, "
                                        r"got torch.float64.*f64_mode"):
        square()[1, 256](randn(10), torch.zeros(10), 10)
    with pytest.raises(TypeError, match=r"argument 'n' is int, an integer: got 10.0"):
        square()[1, 256](randn(10, dtype=torch.float32), torch.zeros(10), 10.0)


def test_wrong_argument_count():
    with pytest.raises(TypeError, match=r"square takes 3 arguments \(float\* x, float\* y, int n\), 2 given"):
        square()[1, 256](torch.zeros(10), torch.zeros(10))


def test_non_contiguous():
    x = torch.zeros(10, 4)[:, 0]
    with pytest.raises(ValueError, match=r"argument 'x' \(float\*\) is not contiguous.*x.contiguous\(\)"):
        square()[1, 256](x, torch.zeros(10), 10)


def test_launch_limits_and_names():
    with pytest.raises(ValueError, match=r"2048 threads, above the device's limit of 1024"):
        square()[1, (64, 32)](torch.zeros(10), torch.zeros(10), 10)
    with pytest.raises(ValueError, match=r"block dimension z is 128, above the device's limit of 64"):
        square()[1, (1, 1, 128)](torch.zeros(10), torch.zeros(10), 10)
    with pytest.raises(ValueError, match=r"'z' of inputs/outputs is not a parameter of square"):
        kad.cuda.differentiable(src("square.cu"), "square", inputs=["z"], outputs=["y"])[1, 256](
            torch.zeros(10), torch.zeros(10), 10)
    with pytest.raises(ValueError, match=r"outputs=\[...\] names the pointer parameters"):
        kad.cuda.differentiable(src("square.cu"), "square", inputs=["x"], outputs=[])
    with pytest.raises(TypeError, match=r"k\[grid, block\]"):
        square()[4]


# ---- version counters ----

def test_output_changed_after_forward_gradient_still_right():
    # the backward recomputes from the inputs: an output changed in place afterwards cannot make it wrong
    k = square()
    n = 300
    with kad.f64_mode():
        x, y = randn(n).requires_grad_(), torch.zeros(n, dtype=F64)
        k[2, 256](x, y, n)
        z = y * 3
        y.mul_(100)
        dz = randn(n)
        g, = torch.autograd.grad(z, x, dz)
    close(g, 6 * x.detach() * dz)


def test_input_changed_after_forward_is_refused():
    k = square()
    n = 300
    with kad.f64_mode():
        x0 = randn(n).requires_grad_()
        x = x0 * 1
        y = torch.zeros(n, dtype=F64)
        k[2, 256](x, y, n)
        x.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            torch.autograd.grad(y.sum(), x0)


def test_second_launch_into_same_output():
    # y written twice: its gradient flows to the second launch's input only
    k = square()
    n = 50
    with kad.f64_mode():
        a, b = randn(n).requires_grad_(), randn(n).requires_grad_()
        y = torch.zeros(n, dtype=F64)
        k[1, 64](a, y, n)
        k[1, 64](b, y, n)
        ga, gb = torch.autograd.grad(y.sum(), (a, b), allow_unused=True)
    assert ga is None or torch.all(ga == 0)
    close(gb, 2 * b.detach())


def test_no_grad_runs_forward_only():
    k = square()
    x, y = torch.ones(5, requires_grad=True), torch.zeros(5)
    with torch.no_grad():
        k[1, 32](x, y, 5)
    assert y.grad_fn is None and torch.all(y == 1)


INPLACE = """
__global__ void sq_head(float* x, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) x[i] = x[i] * x[i] + 1.0f;   // elements from m on are left alone
}
"""


def test_buffer_updated_in_place():
    # x in inputs and outputs: its gradient is that of its value before the launch
    k = kad.cuda.differentiable(INPLACE, "sq_head", inputs=["x"], outputs=["x"])
    n, m = 90, 70
    x0 = randn(n).requires_grad_()

    def ref(x0):
        x = x0 * 2
        return torch.cat([x[:m] * x[:m] + 1, x[m:]])

    with kad.f64_mode():
        x = x0 * 2
        k[2, 64](x, n, m)
        close(x, ref(x0.detach()))
        dy = randn(n)
        g, = torch.autograd.grad(x, x0, dy)
    close(g, ref_grads(ref, [x0], dy)[0])
    with kad.f64_mode(), pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        k[2, 64](randn(n).requires_grad_(), n, m)


SCRATCH = """
__global__ void scale_note(const float* x, float* y, float* first, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 3.0f * x[i] * x[i];
    if (i == 0) first[0] = x[0];
}
"""


def test_undeclared_scratch_written_and_undeclared_grad_refused():
    k = kad.cuda.differentiable(SCRATCH, "scale_note", inputs=["x"], outputs=["y"])
    n = 40
    with kad.f64_mode():
        x, y, first = randn(n).requires_grad_(), torch.zeros(n, dtype=F64), torch.zeros(1, dtype=F64)
        v = first._version
        k[1, 64](x, y, first, n)
        assert first.item() == x[0].item() and first._version > v
        first.fill_(7)  # scratch changed after the forward: the gradient does not depend on it
        g, = torch.autograd.grad(y.sum(), x)
    close(g, 6 * x.detach())
    with kad.f64_mode(), pytest.raises(ValueError, match=r"argument 'first' is a tensor that requires grad"):
        k[1, 64](x, torch.zeros(n, dtype=F64), torch.zeros(1, dtype=F64, requires_grad=True), n)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_swish_half_types_from_dtype(dtype):
    k = kad.cuda.differentiable(src("swish_hip.hip"), "swish", inputs=["x"], outputs=["y"])
    n = 300
    x, y = randn(n, dtype=dtype).requires_grad_(), torch.zeros(n, dtype=dtype)
    k[2, 128](x, y, n)
    assert k.specialization(128, [x, y, n])[0]["scalar_t"] == dtype
    x64 = x.detach().double()
    tol = 1e-2 if dtype == torch.float16 else 5e-2
    assert torch.allclose(y.double(), x64 * torch.sigmoid(x64), rtol=tol, atol=tol)
    g, = torch.autograd.grad(y, x, torch.ones(n, dtype=dtype))
    want = ref_grads(lambda x: x * torch.sigmoid(x), [x64], torch.ones(n, dtype=F64))[0]
    assert g.dtype == dtype and torch.allclose(g.double(), want, rtol=tol, atol=tol)


# ---- the GPU path's compile step (runs without a GPU where nvcc is installed) ----

def test_gpu_modules_compile_and_cache(tmp_path, monkeypatch):
    import shutil
    from kad import cuda as kc
    if not shutil.which("nvcc") and not os.path.isfile("/usr/local/cuda/bin/nvcc"):
        pytest.skip("no nvcc")
    monkeypatch.setenv("KAD_CACHE_DIR", str(tmp_path))
    k = square()
    t, spec = k.specialization(256)
    stub = kc.forward_stub(k.text, "square", spec.params, t)
    assert "square<<<dim3(grid_x, grid_y, grid_z), dim3(block_x, block_y, block_z), kad_shared_mem, stream>>>" in stub
    bwd = kad.cuda.backward_source(k, 256)
    kc.compile_log.clear()
    for text, name in ((stub, "square"), (bwd, "square_bwd")):
        lib = kc.build_module(text, name, "sm_90")
        fname = "kad_launch_square" if name == "square" else "launch_square_bwd"
        assert hasattr(lib, fname)
        sig = [n for n, _, _ in kc._parse_launcher(text, fname)]
        assert sig[:3] == ["grid_x", "grid_y", "grid_z"] and sig[-1] == "stream"
    assert [c for _, _, c in kc.compile_log] == [False, False]
    kc._LOADED.clear()
    kc.build_module(bwd, "square_bwd", "sm_90")  # from the disk cache
    assert kc.compile_log[-1][2] is True
    assert len(list((tmp_path / "cuda").glob("*.so"))) == 2


# ---- check_backward: a hand-written backward kernel ----

MY_BWD = """
__global__ void square_bwd(const float* x, const float* dy, float* dx, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dx[i] = FACTOR * x[i] * dy[i];
}
"""


@pytest.mark.parametrize("factor, ok", [("2.0f", True), ("2.01f", False)])
def test_check_backward_hand_written_kernel(factor, ok):
    k = square()
    bk = kad.cuda.kernel(MY_BWD.replace("FACTOR", factor), "square_bwd")
    n = 700

    def my_backward(x, y, n, dy):
        dx = torch.zeros_like(x)
        bk[3, 256](x, dy, dx, n)
        return dx

    x, y = randn(n, dtype=torch.float32), torch.zeros(n)
    rep = kad.cuda.check_backward(k, 3, 256, (x, y, n), my_backward)
    assert rep.ok is ok, str(rep)
    assert torch.allclose(y, x * x)  # the forward ran on the arguments
    r = rep["x"]
    assert r.kad_vs_f64 < 1e-6 and (r.rel_vs_f64 < 1e-6 if ok else r.rel_vs_f64 > 1e-3)


TWO_OUT_GATHER = """
__global__ void two_out(const float* x, const int* idx, float* y, float* z, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[idx[i]];
        y[i] = sinf(v);
        z[i] = v * x[i];
    }
}
"""


def test_two_outputs_and_an_index_buffer():
    k = kad.cuda.differentiable(TWO_OUT_GATHER, "two_out", inputs=["x"], outputs=["y", "z"])
    n = 90
    x = randn(n).requires_grad_()
    idx = torch.randint(0, n, (n,), generator=gen, dtype=torch.int32)
    y, z = torch.zeros(n, dtype=F64), torch.zeros(n, dtype=F64)

    def ref(x):
        v = x[idx.long()]
        return torch.sin(v), v * x

    with kad.f64_mode():
        r = k[(2,), (64,)](x, idx, y, z, n)
        assert r[0] is y and r[1] is z
        wy, wz = ref(x.detach())
        close(y, wy)
        close(z, wz)
        dy, dz = randn(n), randn(n)
        g, = torch.autograd.grad((y, z), x, (dy, dz))
    xr = x.detach().clone().requires_grad_()
    want, = torch.autograd.grad(ref(xr), xr, (dy, dz))
    close(g, want)
    with kad.f64_mode(), pytest.raises(TypeError, match=r"argument 'idx' is int\*, which needs a torch.int32 "
                                                        r"tensor, got torch.int64"):
        k[2, 64](x, idx.long(), y, z, n)


def test_transpose_shared_tile_and_break():
    k = kad.cuda.differentiable(src("transpose_tile.cu"), "transpose", inputs=["in"], outputs=["out"])
    R, C = 40, 27
    x, y = randn(R, C).requires_grad_(), torch.zeros(C, R, dtype=F64)
    check(k, (2, 3), (16, 16), (x, y, R, C), [x], [y], lambda x: x.t().contiguous())
    k = kad.cuda.differentiable(src("transpose_tile.cu"), "first_negative", inputs=["x"], outputs=["y"])
    n, K = 40, 6
    x, y = randn(n, K).requires_grad_(), torch.zeros(n, dtype=F64)

    def ref(x):
        stop = [next((j for j, v in enumerate(row.tolist()) if v < -0.5), K) for row in x.detach()]
        return torch.stack([(x[i, :stop[i]] ** 2).sum() for i in range(n)])

    check(k, 2, 32, (x, y, n, K), [x], [y], ref)


def test_iterate_per_thread_trip_count():
    k = kad.cuda.differentiable(src("constructs.cu"), "iterate", inputs=["x"], outputs=["y"])
    n, maxit = 40, 3

    def ref(x):
        out = []
        for i in range(n):
            v = x[i]
            for _ in range(min(1 + i % 4, maxit)):
                v = v * 0.5 + torch.sin(v)
            out.append(v + 0.125 * (0 + 2 + 4))
        return torch.stack(out)

    x, y = randn(n).requires_grad_(), torch.zeros(n, dtype=F64)
    check(k, 2, 32, (x, y, n, maxit), [x], [y], ref)


def test_struct_by_value_is_one_argument_per_member():
    k = kad.cuda.differentiable(src("constructs.cu"), "affine_act", inputs=["x"], outputs=["y"])
    n = 50
    x, y = randn(n).requires_grad_(), torch.zeros(n, dtype=F64)
    sign = torch.tensor([1.0 if i % 2 == 0 else -1.0 for i in range(n)], dtype=F64)

    def ref(x):
        v = x * 1.5 - 0.25
        a = torch.where(v < 0, float(torch.tensor(0.1, dtype=torch.float32)) * v, v * v) * 1.75  # 0.1f
        return a * sign

    check(k, 2, 32, (x, y, n, 1.5, -0.25, 1), [x], [y], ref)  # p = {1.5, -0.25, 1}: p_scale, p_shift, p_mode
    with pytest.raises(TypeError, match=r"affine_act takes 6 arguments \(float\* x, float\* y, int n, float "
                                        r"p_scale, float p_shift, int p_mode\), 4 given"):
        k[2, 32](x, y, n, 1.5)


def test_extern_shared_size_from_template():
    k = kad.cuda.differentiable(src("constructs.cu"), "window_sum", inputs=["x"], outputs=["y"],
                                template={"tile": 40})
    n = 64
    w = torch.arange(1, 9, dtype=F64)

    def ref(x):
        xp = torch.cat([x, torch.zeros(8, dtype=F64)])
        return torch.stack([(xp[i:i + 8] * w).sum() if (i % 32) + 8 <= 40 else None for i in range(n)])

    x, y = randn(n).requires_grad_(), torch.zeros(n, dtype=F64)
    check(k, 2, 32, (x, y, n), [x], [y], ref)


# the other kernels of tests/cuda/: torch.autograd.gradcheck (float64 finite differences) in f64 mode
OTHERS = [
    ("bias_gelu.cu", "bias_gelu", ["x", "bias"], (2, 5), 32, {}, lambda x, b, y: (x, b, y, 5, 40),
     [(5, 40), (40,)], (5, 40)),
    ("float4_lanes.cu", "scale_sq4", ["x"], 2, 64, {}, lambda x, y: (x, y, 0.75, 100), [(400,)], (400,)),
    ("newton_while.cu", "newton", ["x"], 1, 32, {}, lambda x, y: (x, y), [(32,)], (32,)),
    ("uniform_if.cu", "uniform_scale", ["x"], 2, 64, {}, lambda x, y: (x, y, 100, 0), [(100,)], (100,)),
    ("uniform_if.cu", "uniform_scale", ["x"], 2, 64, {}, lambda x, y: (x, y, 100, 1), [(100,)], (100,)),
    ("host_and_half.cu", "scale_shift", ["x"], 1, 64, {"T": torch.float16, "UNROLL": 2},
     lambda x, y: (x, y, 100, 0.5), [(100,)], (100,)),
]


@pytest.mark.parametrize("case", OTHERS, ids=lambda c: f"{c[1]}")
def test_gradcheck_other_kernels(case):
    fname, name, inputs, grid, block, template, argf, shapes, yshape = case
    k = kad.cuda.differentiable(src(fname), name, inputs=inputs, outputs=["y"], template=template)

    def f(*xs):
        y = torch.zeros(yshape, dtype=F64)
        return k[grid, block](*argf(*xs, y))

    xs = [randn(*s).requires_grad_() for s in shapes]
    with kad.f64_mode():
        assert torch.autograd.gradcheck(f, xs, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_scalar_out_of_range_shared_mem_and_keywords():
    x, y = torch.zeros(10), torch.zeros(10)
    with pytest.raises(ValueError, match=r"argument 'n' is int, which holds -2147483648 to 2147483647: "
                                         r"2147483648 does not fit.*int64_t"):
        square()[1, 256](x, y, 2**31)
    with pytest.raises(ValueError, match=r"shared_mem=65536 bytes is above the device's limit of 49152"):
        square()[1, 256](x, y, 10, shared_mem=65536)
    with pytest.raises(ValueError, match=r"shared_mem=-1: the dynamic shared memory is a number of bytes"):
        square()[1, 256](x, y, 10, shared_mem=-1)
    with pytest.raises(TypeError, match=r"arguments are passed in the C signature's order, positionally.*n="):
        square()[1, 256](x, y, n=10)


def test_errors_under_torch_compile():
    # the argument count is checked while dynamo traces; the dtype when the operator runs
    k = square()
    with pytest.raises(Exception, match=r"square takes 3 arguments \(x, y, n\), 2 given"):
        torch.compile(lambda x, y: k[1, 256](x, y), fullgraph=True)(torch.zeros(10), torch.zeros(10))
    with pytest.raises(Exception, match=r"argument 'x' is float\*, which needs a torch.float32 tensor"):
        torch.compile(lambda x, y: k[1, 256](x, y, 10), fullgraph=True)(torch.zeros(10, dtype=F64),
                                                                         torch.zeros(10))


def test_forward_stub_passes_the_kernels_own_parameters():
    # the GPU forward's launcher takes kad's parameters (a struct by value as one per member) and
    # builds the kernel's: the struct from its members in order, a parameter that only shares the
    # struct's prefix (s_c) passed as itself, pointers converted to the parameter's type
    from kad import cuda as kc
    src = ("struct S { float a; float b; };\n"
           "__global__ void k(const float2* __restrict__ x, S s, float s_c, int n) { }\n")
    params = [("x", "*fp32"), ("s_a", "fp32"), ("s_b", "fp32"), ("s_c", "fp32"), ("n", "i32")]
    stub = kc.forward_stub(src, "k", params, {})
    assert "k<<<dim3(grid_x, grid_y, grid_z), dim3(block_x, block_y, block_z), kad_shared_mem, stream>>>(" \
           "kad_ptr{(void *)x}, {s_a, s_b}, kad_num<float>{s_c}, kad_num<int32_t>{n});" in stub
    assert "cuda_fp16.h" not in stub  # no half parameter


def test_packed_tensor_accessor():
    # torch::PackedTensorAccessor32 parameters take tensors: kad.cuda passes each as its data pointer,
    # sizes and strides; forward and gradients against torch float64 autograd of the same math
    k = kad.cuda.differentiable(os.path.join(CUDA, "accessor.cu"), "gated_cell", inputs=["gates", "old_cell"],
                                outputs=["new_h", "new_cell"])
    B, S = 3, 40
    gates = randn(B, 3, S).requires_grad_()
    old = randn(B, S).requires_grad_()
    h, c = torch.zeros(B, S, dtype=F64), torch.zeros(B, S, dtype=F64)
    with kad.f64_mode():
        k[(2, B), 32](gates, old, h, c)
    ig, og, cand = torch.sigmoid(gates[:, 0]), torch.sigmoid(gates[:, 1]), torch.tanh(gates[:, 2])
    cell = old + cand * ig
    hr = torch.tanh(cell) * og
    assert torch.allclose(h, hr, atol=1e-12) and torch.allclose(c, cell, atol=1e-12)
    dh, dc = randn(B, S), randn(B, S)
    with kad.f64_mode():
        got = torch.autograd.grad([h, c], [gates, old], [dh, dc])
    want = torch.autograd.grad([hr, cell], [gates, old], [dh, dc])
    for a, b in zip(got, want):
        assert torch.allclose(a, b, atol=1e-12)
    with pytest.raises(TypeError, match="3-dimensional tensor accessor"):
        k[(2, B), 32](gates.detach()[0], old, h, c)
    assert "gates_stride1" in kad.cuda.backward_source(k, 32, gates, old, h, c)


@pytest.mark.parametrize("scale, ok", [("", True), (" * 1.01f", False)])
def test_check_backward_box_filter_atomic_scatter(scale, ok):
    # the 3x3 box filter's hand-written backward as its authors write it: each output pixel scatters
    # dy / count to the taps it read, with atomicAdd (bench/kernels/cuda_hand.cu); checked against
    # kad's gradient and a float64 reference, and a wrong one (1% too large) caught
    src = open(os.path.join(ROOT, "bench", "kernels", "cuda_hand.cu"), encoding="utf-8").read()
    src = src.replace("float g = dy[y * W + x] / count;", "float g = dy[y * W + x] / count%s;" % scale)
    k = kad.cuda.differentiable(os.path.join(CUDA, "box3x3.cu"), "box3x3", inputs=["in"], outputs=["out"])
    scatter = kad.cuda.kernel(src, "box3x3_bwd_scatter")
    H, W = 13, 21
    grid, block = (3, 4), (8, 4)

    def my_backward(x, y, H_, W_, dy):
        dx = torch.zeros_like(x)
        scatter[grid, block](dy, dx, H_, W_)
        return dx

    x, y = randn(H, W, dtype=torch.float32), torch.zeros(H, W)
    rep = kad.cuda.check_backward(k, grid, block, (x, y, H, W), my_backward)
    assert rep.ok is ok, str(rep)
    r = rep["in"]
    assert r.kad_vs_f64 < 1e-6 and (r.rel_vs_f64 < 1e-6 if ok else r.rel_vs_f64 > 1e-3)
