"""CUDA C / HIP kernels through kad's C API (kad_add_cuda_source, kad_specialize_cuda): the
forward on kad's CPU interpreter in float64 against the same math in torch, and kad's backward
(reverse mode, on the interpreter) against torch autograd.

The kernels are the golden tests' own (tests/cuda/*.cu, *.hip).
"""
import ctypes
import os

import pytest

torch = pytest.importorskip("torch")

from kad import _capi  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CUDA = os.path.join(ROOT, "tests", "cuda")


def cuda_kernel(fname, kernel, block, targs=""):
    """The kad Kernel of `kernel` in tests/cuda/fname for the block dims and template arguments."""
    ctx = _capi.Context()
    lib = ctx._lib
    lib.kad_add_cuda_source.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.kad_add_cuda_source.restype = ctypes.c_int
    lib.kad_specialize_cuda.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                        ctypes.POINTER(ctypes.c_int), ctypes.c_uint]
    lib.kad_specialize_cuda.restype = ctypes.c_void_p
    path = os.path.join(CUDA, fname)
    with open(path) as f:
        text = f.read()
    if lib.kad_add_cuda_source(ctx._c, path.encode(), text.encode()) != 0:
        raise _capi.KadError(ctx.diagnostics())
    dims = (ctypes.c_int * 3)(*(list(block) + [1] * (3 - len(block))))
    h = lib.kad_specialize_cuda(ctx._c, kernel.encode(), targs.encode(), dims, 0)
    if not h:
        raise _capi.KadError(ctx.diagnostics())
    return _capi.Kernel(ctx, h)


def ptr(t):
    return _capi.Pointer(t.data_ptr(), t.numel() * t.element_size())


def run_forward(k, grid, args):
    """Runs k in float64 on the interpreter; args by parameter name (tensors float64)."""
    order = [n for n, _ in k.params]
    k.run(grid, [ptr(args[n]) if isinstance(args[n], torch.Tensor) else args[n] for n in order], mode="f64")


def run_backward(k, grid, args, wrt, out, d_outs):
    """kad's backward of k on the interpreter in float64: the gradients of wrt for d_outs."""
    g = k.grad(wrt, out)
    order = [n for n, _ in k.params]
    cargs = [ptr(args[n]) if isinstance(args[n], torch.Tensor) else args[n] for n in order]
    grads = {n: torch.zeros_like(args[n]) for n in wrt}
    cargs += [ptr(d_outs[n]) for n in out] + [ptr(grads[n]) for n in wrt]
    g.run(grid, cargs, mode="f64")
    return grads


def autograd(fn, inputs, wrt, dy):
    xs = {n: inputs[n].clone().requires_grad_(n in wrt) for n in inputs}
    y = fn(**xs)
    y.backward(dy)
    return {n: xs[n].grad for n in wrt}


def close(a, b, tol=1e-9):
    assert torch.allclose(a, b, rtol=tol, atol=tol), (a - b).abs().max()


gen = torch.Generator().manual_seed(0)


def randn(*shape):
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


def test_square():
    k = cuda_kernel("square.cu", "square", (256,))
    n = 700
    x, y = randn(n), torch.zeros(n, dtype=torch.float64)
    run_forward(k, 3, {"x": x, "y": y, "n": n})
    close(y, x * x)
    dy = randn(n)
    g = run_backward(k, 3, {"x": x, "y": y, "n": n}, ["x"], ["y"], {"y": dy})
    close(g["x"], autograd(lambda x: x * x, {"x": x}, ["x"], dy)["x"])


def test_swish_hip_template():
    k = cuda_kernel("swish_hip.hip", "swish", (128,), "scalar_t=fp64")
    n = 1000
    x, y = randn(n), torch.zeros(n, dtype=torch.float64)
    run_forward(k, 2, {"x": x, "y": y, "n": n})  # 2 blocks of 128 threads: a grid-stride loop
    close(y, x * torch.sigmoid(x))
    dy = randn(n)
    g = run_backward(k, 2, {"x": x, "y": y, "n": n}, ["x"], ["y"], {"y": dy})
    close(g["x"], autograd(lambda x: x * torch.sigmoid(x), {"x": x}, ["x"], dy)["x"])


def box_ref(x):
    # the mean over the in-image taps of each 3x3 window
    return torch.nn.functional.avg_pool2d(x[None, None], 3, stride=1, padding=1, count_include_pad=False)[0, 0]


def test_box3x3():
    k = cuda_kernel("box3x3.cu", "box3x3", (8, 4))
    H, W = 13, 21
    x, y = randn(H, W), torch.zeros(H, W, dtype=torch.float64)
    args = {"in": x, "out": y, "H": H, "W": W}
    run_forward(k, (3, 4), args)
    close(y, box_ref(x))
    dy = randn(H, W)
    g = run_backward(k, (3, 4), args, ["in"], ["out"], {"out": dy})
    close(g["in"], autograd(lambda x: box_ref(x), {"x": x}, ["x"], dy)["x"])


def test_recurrence():
    k = cuda_kernel("recurrence.cu", "recurrence", (64,))
    T, N = 7, 100
    x, w, h = randn(T, N), randn(N) * 0.5, torch.zeros(T, N, dtype=torch.float64)
    args = {"x": x, "w": w, "h": h, "T": T, "N": N}
    run_forward(k, 2, args)

    def ref(x, w):
        s, hs = torch.zeros(N, dtype=torch.float64), []
        for t in range(T):
            s = torch.tanh(w * s + x[t])
            hs.append(s)
        return torch.stack(hs)

    close(h, ref(x, w))
    dh = randn(T, N)
    g = run_backward(k, 2, args, ["x", "w"], ["h"], {"h": dh})
    want = autograd(ref, {"x": x, "w": w}, ["x", "w"], dh)
    close(g["x"], want["x"])
    close(g["w"], want["w"])


def test_softmax_rows_shared_memory():
    k = cuda_kernel("softmax_rows.cu", "softmax_rows", (32,), "BLOCK=32")
    R, C = 3, 50
    x, y = randn(R, C), torch.zeros(R, C, dtype=torch.float64)
    args = {"x": x, "y": y, "ncols": C}
    run_forward(k, R, args)
    close(y, torch.softmax(x, dim=1))
    dy = randn(R, C)
    g = run_backward(k, R, args, ["x"], ["y"], {"y": dy})
    close(g["x"], autograd(lambda x: torch.softmax(x, dim=1), {"x": x}, ["x"], dy)["x"])


def test_layernorm_warp_shuffles():
    k = cuda_kernel("layernorm_warp.cu", "layernorm", (64,), "BLOCK=64")
    R, C = 3, 80
    x, gamma, beta = randn(R, C), randn(C), randn(C)
    y = torch.zeros(R, C, dtype=torch.float64)
    args = {"x": x, "gamma": gamma, "beta": beta, "y": y, "n": C, "eps": 1e-5}
    run_forward(k, R, args)

    def ref(x, gamma, beta):
        return torch.nn.functional.layer_norm(x, (C,), gamma, beta, eps=1e-5)

    close(y, ref(x, gamma, beta))
    dy = randn(R, C)
    g = run_backward(k, R, args, ["x", "gamma", "beta"], ["y"], {"y": dy})
    want = autograd(ref, {"x": x, "gamma": gamma, "beta": beta}, ["x", "gamma", "beta"], dy)
    for n in ("x", "gamma", "beta"):
        close(g[n], want[n], 1e-8)


def test_refusal_is_located():
    with pytest.raises(_capi.KadError, match=r"race_store.cu:5:19: error: data race"):
        cuda_kernel(os.path.join("errors", "race_store.cu"), "last", (64,))


def test_dot_atomic_shfl_down():
    k = cuda_kernel("constructs.cu", "dot_atomic", (64,))
    n = 150
    a, b, out = randn(n), randn(n), torch.zeros(1, dtype=torch.float64)
    args = {"a": a, "b": b, "out": out, "n": n}
    run_forward(k, 3, args)
    close(out, (a * b).sum().reshape(1))
    d = randn(1)
    g = run_backward(k, 3, args, ["a", "b"], ["out"], {"out": d})
    close(g["a"], b * d)
    close(g["b"], a * d)


def test_transpose_and_break():
    k = cuda_kernel("transpose_tile.cu", "transpose", (16, 16))
    R, C = 40, 27
    x, y = randn(R, C), torch.zeros(C, R, dtype=torch.float64)
    run_forward(k, (2, 3), {"in": x, "out": y, "rows": R, "cols": C})
    close(y, x.t())
    k = cuda_kernel("transpose_tile.cu", "first_negative", (32,))
    n, K = 40, 6
    x, y = randn(n, K), torch.zeros(n, dtype=torch.float64)
    run_forward(k, 2, {"x": x, "y": y, "n": n, "K": K})
    want = torch.stack([sum((v * v for v in row[: next((j for j, v in enumerate(row) if v < -0.5), K)]),
                            torch.tensor(0.0, dtype=torch.float64)) for row in x])
    close(y, want)


def test_per_thread_trip_count_and_do_while():
    k = cuda_kernel("constructs.cu", "iterate", (32,))
    n, maxit = 40, 3
    x, y = randn(n), torch.zeros(n, dtype=torch.float64)
    run_forward(k, 2, {"x": x, "y": y, "n": n, "maxit": maxit})
    want = x.clone()
    for i in range(n):
        v = want[i]
        for _ in range(min(1 + i % 4, maxit)):
            v = v * 0.5 + torch.sin(v)
        want[i] = v + 0.125 * (0 + 2 + 4)
    close(y, want)


# ---- this file's newer constructs: forward against torch, backward against autograd ----

def gelu_exact(x):
    return 0.5 * x * (1 + torch.erf(x * 0.7071067811865476))


def test_torch_device_types():
    # at::acc_type<double, true> is double (in f64 mode every float is a double as well; the
    # golden tests/cuda/torch_types.cu shows the fp16 instantiation's float arithmetic)
    k = cuda_kernel("torch_types.cu", "gelu_acc", (128,), "scalar_t=fp64")
    n = 300
    x, y = randn(n), torch.zeros(n, dtype=torch.float64)
    run_forward(k, 3, {"x": x, "y": y, "n": n})
    close(y, gelu_exact(x))
    dy = randn(n)
    g = run_backward(k, 3, {"x": x, "y": y, "n": n}, ["x"], ["y"], {"y": dy})
    close(g["x"], autograd(gelu_exact, {"x": x}, ["x"], dy)["x"])


def test_cub_block_reduce():
    k = cuda_kernel("cub_block_reduce.cu", "center", (64,))
    r, n = 3, 100
    x, y = randn(r, n), torch.zeros(r, n, dtype=torch.float64)
    run_forward(k, r, {"x": x, "y": y, "n": n})
    close(y, (x - x.mean(1, keepdim=True)) ** 2)
    dy = randn(r, n)
    g = run_backward(k, r, {"x": x, "y": y, "n": n}, ["x"], ["y"], {"y": dy})
    want = autograd(lambda x: (x - x.mean(1, keepdim=True)) ** 2, {"x": x}, ["x"], dy)["x"]
    close(g["x"], want)


def test_sincos_and_local_typedef():
    k = cuda_kernel("sincos.cu", "polar", (64,))
    n = 100
    th, r, xy = randn(n), randn(n), torch.zeros(2 * n, dtype=torch.float64)
    run_forward(k, 2, {"th": th, "r": r, "xy": xy, "n": n})
    close(xy, torch.stack([r * torch.cos(th), r * torch.sin(th)], 1).reshape(-1))
    dxy = randn(2 * n)
    g = run_backward(k, 2, {"th": th, "r": r, "xy": xy, "n": n}, ["th", "r"], ["xy"], {"xy": dxy})
    want = autograd(lambda th, r: torch.stack([r * torch.cos(th), r * torch.sin(th)], 1).reshape(-1),
                    {"th": th, "r": r}, ["th", "r"], dxy)
    close(g["th"], want["th"])
    close(g["r"], want["r"])
    k = cuda_kernel("local_typedef.cu", "k", (64,))
    x, y = randn(n), torch.zeros(n, dtype=torch.float64)
    run_forward(k, 2, {"x": x, "y": y, "n": n})
    close(y, x + x * x)
