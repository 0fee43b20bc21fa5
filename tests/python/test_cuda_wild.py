"""Per-thread kernels written in the style of PyTorch extensions and HIP operators (tests/cuda_wild/:
caffe's CUDA_KERNEL_LOOP, extern "C" kernels, namespaces, file-scope constexpr, std::numeric_limits,
one warp per row, the shuffle-then-shared block reduction, __shared__ scalars, tiled matmul with
shared memory, switch statements, float2/float4 reinterpret casts, bf16 and half, atomicAdd
accumulation, helpers with early returns), none written for a mechanism of kad.  Each goes
through kad.cuda.differentiable(path, kernel, inputs=, outputs=) and k[grid, block](*args) on CPU
tensors (kad's interpreter, float64 mode), and its outputs and gradients are compared with
PyTorch's float64 autograd of the same math written with torch ops -- an independent reference
of the kernel's semantics, so a lowering that misreads the C is caught here, not only a wrong
derivative.

    .venv/bin/python -m pytest -q tests/python/test_cuda_wild.py
"""
import math
import os
from dataclasses import dataclass, field
from typing import Callable

import pytest

torch = pytest.importorskip("torch")

import kad  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WILD = os.path.join(ROOT, "tests", "cuda_wild")
F64 = torch.float64


@dataclass
class Case:
    """file:kernel, its inputs/outputs, the launch, and make(gen) -> (args in the C order, ref):
    ref(*inputs) gives the outputs (a tuple in `outputs` order) from the differentiated inputs."""
    file: str
    kernel: str
    inputs: list
    outputs: list
    grid: tuple
    block: tuple
    make: Callable
    template: dict = field(default_factory=dict)
    dtype: torch.dtype = F64  # the float tensors' dtype (half/bf16 kernels: their own, checked loosely)
    tol: float = 1e-9
    smem: int = 0  # dynamic shared memory (bytes) for an extern __shared__ array


def f32(c):
    """A float literal with the f suffix: the kernel's constant is the float32 nearest c."""
    return torch.tensor(c, dtype=torch.float32).item()


def rn(g, *shape, dtype=F64):
    return torch.randn(*shape, generator=g, dtype=F64).to(dtype)


def elu(g):
    n, alpha = 300, 0.7
    x = rn(g, n)
    return [n, x, torch.zeros(n, dtype=F64), alpha], lambda x: (torch.where(x > 0, x, alpha * (torch.exp(x) - 1)),)


def softplus(g):
    n, beta = 100, 1.5
    x = rn(g, n) * 10  # some above the threshold 20 / beta
    return [x, torch.zeros(n, dtype=F64), n, beta], \
        lambda x: (torch.where(beta * x > 20, x, torch.log1p(torch.exp(beta * x)) / beta),)


def clamp_mul(g):
    n, lo, hi = 100, -0.5, 0.6
    a, b = rn(g, n), rn(g, n)
    return [a, b, torch.zeros(n, dtype=F64), n, lo, hi], lambda a, b: (torch.clamp(a * b, lo, hi) + a * b,)


def l2norm(g):
    r, c, eps = 3, 100, 1e-6
    x = rn(g, r, c)
    return [x, torch.zeros(r, c, dtype=F64), c, eps], \
        lambda x: (x * torch.rsqrt((x * x).sum(1, keepdim=True) + eps),)


def softmax_warp(g):
    r, c = 3, 70  # one warp per row, two warps a block: block 1's second warp returns at once
    x = rn(g, r, c)
    return [x, torch.zeros(r, c, dtype=F64), r, c], lambda x: (torch.softmax(x, 1),)


def gelu4(g):
    n = 100
    x = rn(g, n)
    return [x, torch.zeros(n, dtype=F64), n // 4], lambda x: (0.5 * x * (1 + torch.erf(x * f32(0.70710678))),)


def logsumexp(g):
    n, k = 40, 5
    x = rn(g, n, k)
    return [x, torch.zeros(n, dtype=F64), n], lambda x: (torch.logsumexp(x, 1),)


def affine_tanh(g):
    n, scale, shift = 50, 1.3, 0.2  # the struct by value is its members, in order
    x = rn(g, n)
    return [x, torch.zeros(n, dtype=F64), scale, shift, n], lambda x: (torch.tanh(scale * x + shift),)


def bias_res_relu(g):
    m, n = 10, 20
    x, bias, res = rn(g, m, n), rn(g, n), rn(g, m, n)
    return [x, bias, res, torch.zeros(m, n, dtype=F64), m, n], lambda x, b, r: (torch.relu(x + b + r),)


def mse_sum(g):
    n = 50
    p, t = rn(g, n), rn(g, n)
    return [p, t, torch.zeros(1, dtype=F64), n], lambda p, t: (((p - t) ** 2 / n).sum().reshape(1),)


def silu_half(g):
    n = 50
    x = rn(g, n, dtype=torch.float16)
    return [x, torch.zeros(n, dtype=torch.float16), n], lambda x: (x * torch.sigmoid(x),)


def cummax(g):
    r, c = 20, 7
    x = rn(g, r, c)
    return [x, torch.zeros(r, c, dtype=F64), r, c], lambda x: (torch.cummax(x, 1).values,)


def poly4(g):
    n = 100
    x, coef = rn(g, n), rn(g, 4)
    return [x, coef, torch.zeros(n, dtype=F64), n], \
        lambda x, c: (c[0] + c[1] * x + c[2] * x ** 2 + c[3] * x ** 3,)


def layer_norm(g):
    r, n, eps = 3, 90, 1e-5
    x, w, b = rn(g, r, n), rn(g, n), rn(g, n)

    def ref(x, w, b):
        mu = x.mean(1)
        var = (x * x).mean(1) - mu * mu
        rs = 1 / torch.sqrt(var + eps)
        return (x - mu[:, None]) * rs[:, None] * w + b, mu, rs
    return [x, w, b, torch.zeros(r, n, dtype=F64), torch.zeros(r, dtype=F64), torch.zeros(r, dtype=F64), n, eps], ref


def gelu_tanh(g):
    n = 100
    x = rn(g, n)
    return [torch.zeros(n, dtype=F64), x, n], \
        lambda x: (0.5 * x * (1 + torch.tanh(f32(0.7978845608) * (x + f32(0.044715) * x ** 3))),)


def embedding(g):
    n, dim, vocab = 6, 40, 5
    w = rn(g, vocab, dim)
    idx = torch.tensor([3, 0, 4, 3, 1, 3], dtype=torch.int64)
    return [w, idx, torch.zeros(n, dim, dtype=F64), n, dim], lambda w: (w[idx],)


def bce(g):
    n = 50
    x, z = rn(g, n) * 3, torch.rand(n, generator=g, dtype=F64)
    return [x, z, torch.zeros(n, dtype=F64), n], \
        lambda x, z: (torch.clamp(x, min=0) - x * z + torch.log1p(torch.exp(-x.abs())),)


def rope(g):
    s, h = 3, 40
    x, c, sn = rn(g, s, 2 * h), rn(g, s, h), rn(g, s, h)

    def ref(x, c, sn):
        x0, x1 = x[:, :h], x[:, h:]
        return (torch.cat([x0 * c - x1 * sn, x0 * sn + x1 * c], 1),)
    return [x, c, sn, torch.zeros(s, 2 * h, dtype=F64), s, h], ref


def act(kind):
    def make(g):
        n = 50
        x = rn(g, n)
        f = [torch.relu, torch.tanh, lambda v: v * torch.sigmoid(v), lambda v: v][kind]
        return [x, torch.zeros(n, dtype=F64), n, kind], lambda x: (f(x),)
    return make


def switch_lane(g):
    n, reps = 50, 3
    x = rn(g, n)
    mode = torch.randint(0, 8, (n,), generator=g, dtype=torch.int32)

    def ref(x):
        acc = torch.zeros_like(x)
        m = (mode % 4).to(torch.int64)
        for _ in range(reps):
            new = torch.where(m == 0, acc + x + x * x,
                              torch.where(m == 1, acc + x * x,
                                          torch.where(m == 2, acc - torch.sin(x), acc + 2 * x)))
            skip = (m == 2) & (x > 0)  # continue: the iteration's tail (acc *= 0.5) skipped
            acc = torch.where(skip, acc, new * 0.5)
        return (acc,)
    return [x, mode, torch.zeros(n, dtype=F64), n, reps], ref


def scale_bf16(g):
    r, c = 3, 50
    x, s = rn(g, r, c, dtype=torch.bfloat16), rn(g, c, dtype=torch.float32)
    return [x, s, torch.zeros(r, c, dtype=torch.bfloat16), r, c], lambda x, s: (x * s,)


def cmul(g):
    n = 50
    a, b = rn(g, 2 * n), rn(g, 2 * n)

    def ref(a, b):
        ar, ai, br, bi = a[0::2], a[1::2], b[0::2], b[1::2]
        return (torch.stack([ar * br - ai * bi, ar * bi + ai * br], 1).reshape(-1),)
    return [a, b, torch.zeros(2 * n, dtype=F64), n], ref


def matmul(g):
    m, n, k = 12, 13, 10
    a, b = rn(g, m, k), rn(g, k, n)
    return [a, b, torch.zeros(m, n, dtype=F64), m, n, k], lambda a, b: (a @ b,)


def rms_norm(g):
    t, h, eps = 3, 100, 1e-6
    x, w = rn(g, t, h), rn(g, h)
    return [torch.zeros(t, h, dtype=F64), x, w, eps, t, h], \
        lambda x, w: (x * torch.rsqrt((x * x).mean(1, keepdim=True) + eps) * w,)


def index_add(g):
    n, dim, rows = 10, 12, 4
    src = rn(g, n, dim)
    index = torch.randint(0, rows, (n,), generator=g, dtype=torch.int32)
    return [src, index, torch.zeros(rows, dim, dtype=F64), n, dim], \
        lambda s: (torch.zeros(rows, dim, dtype=F64).index_add(0, index.long(), s),)


def huber(g):
    n, delta = 50, 0.5
    p, t = rn(g, n) * 2, rn(g, n)

    def ref(p, t):
        d = torch.clamp(p, -3, 3) - t
        a = d.abs()
        return (torch.where(a <= delta, 0.5 * d * d, delta * (a - 0.5 * delta)),)
    return [p, t, torch.zeros(n, dtype=F64), n, delta], ref


def prefix_until_neg(g):
    r, c = 20, 8
    x = rn(g, r, c) + 0.8  # most rows run several columns before their first negative value

    def ref(x):
        neg = (x < 0).to(torch.int64)
        alive = (torch.cumsum(neg, 1) == 0).to(F64)  # the columns before the first negative one
        return ((x * x * alive).sum(1),)
    return [x, torch.zeros(r, dtype=F64), r, c], ref


def enum_act(block):
    def make(g):
        r, c = 3, 100
        x, b = rn(g, r, c), rn(g, c)
        return [x, b, torch.zeros(r, c, dtype=F64), r, c], lambda x, b: ((x + b) * torch.sigmoid(x + b),)
    return make


def axpby(g):
    n, a, b = 100, 1.5, -0.5
    x, y = rn(g, n), rn(g, n)
    return [n, a, x, b, y, torch.zeros(n, dtype=F64)], lambda x, y: (a * x + b * y,)


def loop_var_after(g):
    n = 100
    x = rn(g, n)

    def ref(x):
        t = torch.arange(32)
        acc = torch.stack([(x[k::32] ** 2).sum() for k in range(32)])
        exit_i = t + 32 * ((n - t + 31) // 32)  # the first i >= n of thread t's sequence
        return acc, exit_i.to(F64) * x[:32]
    return [x, torch.zeros(32, dtype=F64), torch.zeros(32, dtype=F64), n], ref


def fixed_point(g):
    n = 32
    x = rn(g, n).abs() + 0.5

    def ref(x):
        z = torch.zeros_like(x)
        done = torch.zeros(n, dtype=torch.bool)
        for it in range(1, 51):
            z2 = 0.5 * (z + x / (1 + z * z))
            stop = ((z2 - z).abs().detach() < f32(1e-6)) | (it >= 50)
            z = torch.where(done, z, z2)
            done = done | stop
        return (z,)
    return [x, torch.zeros(n, dtype=F64), n], ref


def swiglu_pairs(g):
    n = 50
    gu = rn(g, 2 * n)

    def ref(gu):
        gg, u = gu[0::2], gu[1::2]
        return (gg * torch.sigmoid(gg) * u,)
    return [gu, torch.zeros(n, dtype=F64), n], ref


def add3d(g):
    X, Y, Z = 20, 3, 2
    a, b = rn(g, Z, Y, X), rn(g, Z, Y, X)
    return [a, b, torch.zeros(Z, Y, X, dtype=F64), X, Y, Z], lambda a, b: (a * b + torch.sin(a),)


def scale_rows(g):
    r, c = 3, 100
    x, sc = rn(g, r, c), rn(g, r)
    # 32 threads of 4 columns cover 128 >= 100 columns
    return [x, sc, torch.zeros(r, c, dtype=F64), c], lambda x, sc: (x * sc[:, None],)


def softclip(g):
    n, t = 50, 0.8
    x = rn(g, n) * 2

    def ref(x):
        hi = t + torch.log(1 + x - t)
        lo = -t - torch.log(1 - x - t)
        return (torch.where(x > t, hi, torch.where(x < -t, lo, x)),)
    return [x, torch.zeros(n, dtype=F64), n, t], ref


def quant(g):
    n, scale = 50, 0.05
    x = rn(g, n) * 3

    def ref(x):
        # (a float argument is the number passed, in float64 mode; the literal 0.1f is a float)
        q = torch.clamp(torch.round((x / scale).detach()), -127, 127)  # round half to even, as __float2int_rn
        return (q * scale + f32(0.1) * x,)
    return [x, torch.zeros(n, dtype=F64), n, scale], ref


def cast_scale(g):
    n, a = 50, 0.5
    x = rn(g, n)
    return [x, torch.zeros(n, dtype=F64), n, a], lambda x: (a * x * x,)


def sumsq_norm_half(g):
    r, c = 3, 100
    x = rn(g, r, c, dtype=torch.float16)
    return [x, torch.zeros(r, c, dtype=torch.float16), c], \
        lambda x: (x * torch.rsqrt((x * x).mean(1, keepdim=True) + f32(1e-6)),)


def ring_conv(g):
    n = 50
    x, w = rn(g, n), rn(g, 5)

    def ref(x, w):
        i = torch.arange(n)
        return (sum(w[k] * x[(i + (k * 3) % 5) % n] for k in range(5)),)
    return [x, w, torch.zeros(n, dtype=F64), n], ref


def dot_double(g):
    n = 100
    a, b = rn(g, n), rn(g, n)
    return [a, b, torch.zeros(1, dtype=F64), n], lambda a, b: ((a * b).sum().reshape(1),)


def vec4_math(g):
    n = 100
    x, gg = rn(g, n), rn(g, n)

    def ref(x, gg):
        X, G = x.reshape(-1, 4), gg.reshape(-1, 4)
        r = torch.stack([X[:, 0] / (1 + G[:, 0].abs()), (X[:, 1].abs() + 1) ** f32(1.5),
                         torch.minimum(X[:, 2], G[:, 2]) + torch.maximum(X[:, 2], G[:, 2]), X[:, 3] * G[:, 3]], 1)
        return (r.reshape(-1),)
    return [x, gg, torch.zeros(n, dtype=F64), n // 4], ref


def wave_softmax(g):
    r, n = 3, 50
    x = rn(g, r, n)
    return [x, torch.zeros(r, n, dtype=F64), n], lambda x: (torch.softmax(x, 1),)


def cub_rms(g):
    r, n, eps = 3, 150, 1e-6
    x, w = rn(g, r, n), rn(g, n)
    return [x, w, torch.zeros(r, n, dtype=F64), n, eps], \
        lambda x, w: (x * torch.rsqrt((x * x).mean(1, keepdim=True) + f32(eps)) * w,)


def cub_softmax(g):
    r, n = 3, 90
    x = rn(g, r, n)
    return [x, torch.zeros(r, n, dtype=F64), n], lambda x: (torch.softmax(x, 1),)


def row_norm(g):
    r, n = 3, 70
    x = rn(g, r, n)
    return [x, torch.zeros(r, dtype=F64), n], lambda x: (torch.sqrt((x * x).sum(1)),)


def axpby4(g):
    n, a, b = 203, 1.5, 0.5
    x, y = rn(g, n), rn(g, n)
    return [x, y, torch.zeros(n, dtype=F64), a, b, n], lambda x, y: (a * x * x + b * y,)


def gelu_bias(g):
    rows, cols = 3, 45
    x, b = rn(g, rows, cols), rn(g, cols)
    return [x, b, torch.zeros(rows, cols, dtype=F64), rows, cols], \
        lambda x, b: (torch.nn.functional.gelu(x + b[None, :]),)


def vote(g):
    n = 100
    x = rn(g, n)

    def ref(x):
        v = torch.cat([x, torch.zeros(128 - n, dtype=x.dtype)]).reshape(4, 32)  # grid 2 x block 64: 4 warps
        pos = (v > 0).sum(1, keepdim=True).to(x.dtype)
        big = (v > 1.5).any(1, keepdim=True).to(x.dtype)
        ok = (v > -2.5).all(1, keepdim=True).to(x.dtype)
        y = v * pos + big + 2.0 * ok + v[:, :1] * v
        return (y.reshape(-1)[:n],)
    return [x, torch.zeros(n, dtype=F64), n], ref


def scale_tanh2(g):
    n2 = 45
    x, b = rn(g, 2 * n2, dtype=torch.float16), rn(g, 2, dtype=torch.float16)

    def ref(x, b):
        v = x.reshape(-1, 2) * 0.5 + b[None, :]
        return ((torch.tanh(v * v) + v).reshape(-1),)
    return [x, b, torch.zeros(2 * n2, dtype=torch.float16), n2], ref


def rms_cg(g):
    rows, n = 3, 70
    x, w = rn(g, rows, n), rn(g, n)

    def ref(x, w):
        r = torch.rsqrt((x * x).sum(1, keepdim=True) / n + 1e-5)
        # each warp's largest |x[t % n]|, t its 32 threads (block of 64: warps 0..31, 32..63)
        a = x.abs()[:, torch.arange(64) % n].reshape(rows, 2, 32).amax(2)  # [rows, 2]
        mx = a[:, (torch.arange(n) % 64) // 32]  # the warp of the thread that writes column c
        return (x * r * w[None, :] + 0.01 * mx,)
    return [x, w, torch.zeros(rows, n, dtype=F64), n], ref


def vote_scale(g):
    n = 100
    x = rn(g, n)

    def ref(x):
        v = torch.cat([x, torch.zeros(128 - n, dtype=x.dtype)]).reshape(2, 64)  # grid 2 x block 64
        pos = (v > 0).sum(1, keepdim=True).to(x.dtype)
        big = (v > 1.5).any(1, keepdim=True).to(x.dtype)
        return ((v / (1.0 + pos) + big * v).reshape(-1)[:n],)
    return [x, torch.zeros(n, dtype=F64), n], ref


CASES = {
    "caffe_loop_elu": Case("w01_caffe_loop.cu", "elu_forward_kernel", ["in"], ["out"], (2,), (64,), elu),
    "extern_c_softplus": Case("w02_extern_c.cu", "softplus_f32", ["x"], ["y"], (2,), (64,), softplus),
    "auto_min_max": Case("w03_auto_minmax.cu", "clamp_mul", ["a", "b"], ["c"], (2,), (64,), clamp_mul),
    "tree_reduce_l2norm": Case("w04_tree_reduce.cu", "l2norm_rows", ["x"], ["y"], (3,), (64,), l2norm),
    "warp_per_row_softmax": Case("w05_warp_softmax.cu", "softmax_warp", ["x"], ["y"], (2,), (64,), softmax_warp),
    "float4_gelu": Case("w06_float4.cu", "gelu_vec4", ["x"], ["y"], (1,), (32,), gelu4),
    "numeric_limits_lse": Case("w07_numeric_limits.cu", "row_logsumexp", ["x"], ["out"], (2,), (32,), logsumexp,
                               template={"K": 5}),
    "struct_param": Case("w08_struct_param.cu", "affine_tanh", ["x"], ["y"], (2,), (32,), affine_tanh),
    "bias_residual_2d": Case("w09_2d_bias.cu", "bias_residual_relu", ["x", "bias", "res"], ["out"], (3, 3), (8, 4),
                             bias_res_relu),
    "atomic_mse": Case("w10_atomic_loss.cu", "mse_sum", ["pred", "target"], ["loss"], (2,), (32,), mse_sum),
    "half_silu": Case("w11_half.cu", "silu_half", ["x"], ["y"], (2,), (32,), silu_half, dtype=torch.float16,
                      tol=2e-2),
    "do_while_cummax": Case("w12_do_while.cu", "cummax_rows", ["x"], ["y"], (1,), (32,), cummax),
    "constexpr_poly": Case("w13_typedef_const.cu", "poly4", ["x", "coef"], ["y"], (1,), (32,), poly4),
    "layernorm_smem": Case("w14_layernorm_smem.cu", "layer_norm_fwd", ["X", "W", "B"], ["Y", "mean_out", "rstd_out"],
                           (3,), (64,), layer_norm, template={"BLOCK": 64}),
    "hip_gelu_tanh": Case("w15_hip_gelu.hip", "gelu_tanh_kernel", ["in"], ["out"], (2,), (64,), gelu_tanh),
    "embedding_gather": Case("w16_embedding.cu", "embedding_fwd", ["weight"], ["out"], (6,), (32,), embedding),
    "bce_logits": Case("w18_bce.cu", "bce_with_logits", ["x", "z"], ["loss"], (2,), (32,), bce),
    "rope": Case("w19_rope.cu", "rope_fwd", ["x", "cos_t", "sin_t"], ["y"], (3,), (32,), rope),
    "switch_relu": Case("w21_switch.cu", "act_kernel", ["x"], ["y"], (2,), (32,), act(0)),
    "switch_tanh": Case("w21_switch.cu", "act_kernel", ["x"], ["y"], (2,), (32,), act(1)),
    "switch_silu": Case("w21_switch.cu", "act_kernel", ["x"], ["y"], (2,), (32,), act(2)),
    "switch_default": Case("w21_switch.cu", "act_kernel", ["x"], ["y"], (2,), (32,), act(3)),
    "switch_per_thread": Case("w21b_switch_lane.cu", "k", ["x"], ["y"], (2,), (32,), switch_lane),
    "bf16_scale": Case("w22_bf16.cu", "scale_bias_bf16", ["x", "scale"], ["y"], (2, 3), (32,), scale_bf16,
                       dtype=torch.bfloat16, tol=3e-2),
    "float2_ldg_cmul": Case("w24_ldg_complex.cu", "cmul", ["a", "b"], ["c"], (2,), (32,), cmul),
    "tiled_matmul_smem": Case("w26_tiled_mm.cu", "matmul_tiled", ["A", "B"], ["C"], (2, 2), (8, 8), matmul),
    "block_reduce_rmsnorm": Case("w27_block_reduce.cu", "rms_norm_kernel", ["input", "weight"], ["out"], (3,), (64,),
                                 rms_norm),
    "atomic_index_add": Case("w29_index_add.cu", "index_add", ["src"], ["out"], (4,), (32,), index_add),
    "while_counter_tape": Case("../cuda/while_counter.cu", "prefix_until_neg", ["x"], ["y"], (1,), (32,),
                               prefix_until_neg),
    "enum_template_silu": Case("w33_enum_tparam.cu", "bias_act", ["x", "b"], ["y"], (1, 3), (128,), enum_act(2)),
    "empty_for_init": Case("w34_empty_for_init.cu", "axpby", ["x", "y"], ["out"], (2,), (32,), axpby),
    "loop_var_after": Case("w35_loop_var_after.cu", "k", ["x"], ["y", "last"], (1,), (32,), loop_var_after),
    "while_true_break": Case("w36_while_true.cu", "fixed_point", ["x"], ["y"], (1,), (32,), fixed_point),
    "float2_pairs": Case("w37_float2_pairs.cu", "swiglu_pairs", ["gu"], ["out"], (2,), (32,), swiglu_pairs),
    "grid_3d": Case("w38_grid_3d.cu", "add3d", ["a", "b"], ["c"], (2, 3, 2), (16,), add3d),
    "unroll_count_syncwarp": Case("w39_unroll_count.cu", "scale_rows", ["x", "s"], ["y"], (3,), (32,), scale_rows),
    "if_else_return": Case("w40_if_else_return.cu", "softclip_kernel", ["x"], ["y"], (2,), (32,), softclip),
    "round_to_int": Case("w41_round_int.cu", "quant_dequant", ["x"], ["y"], (2,), (32,), quant),
    "if_constexpr": Case("w42_if_constexpr.cu", "cast_scale", ["x"], ["y"], (2,), (32,), cast_scale),
    "dyn_smem_half_norm": Case("w43_dyn_smem_half.cu", "row_sumsq_norm", ["x"], ["y"], (3,), (64,), sumsq_norm_half,
                               dtype=torch.float16, tol=2e-2, smem=2 * 4),
    "local_array_do_while": Case("w44_local_array_do.cu", "ring_conv", ["x", "w"], ["y"], (2,), (32,), ring_conv),
    "atomic_double_dot": Case("w45_atomic_double.cu", "dot_partial", ["a", "b"], ["out"], (2,), (32,), dot_double),
    "float4_ldg_math": Case("w46_float4_ldg_math.cu", "vec4_ldg", ["x", "g"], ["y"], (1,), (32,), vec4_math),
    "hip_wave_softmax": Case("w47_wave_softmax.hip", "wave_softmax", ["x"], ["y"], (3,), (64,), wave_softmax),
    "cub_rmsnorm": Case("w48_cub_rmsnorm.cu", "rms_rows", ["x", "w"], ["y"], (3,), (64,), cub_rms),
    "cub_softmax": Case("w49_cub_softmax.cu", "cub_softmax", ["x"], ["y"], (3,), (128,), cub_softmax),
    "activemask_row_norm": Case("w50_activemask_norm.cu", "row_norm_warp", ["x"], ["out"], (3,), (32,), row_norm),
    "float4_scalar_tail": Case("w51_float4_tail.cu", "axpby4", ["x", "yin"], ["out"], (2,), (32,), axpby4),
    "lambda_gelu_bias": Case("w52_lambdas.cu", "gelu_bias", ["x", "b"], ["y"], (3,), (32,), gelu_bias,
                             tol=1e-7),  # 0.70710678f: 1/sqrt(2) to 8 digits
    "warp_vote_popc": Case("w53_warp_vote.cu", "vote", ["x"], ["y"], (2,), (64,), vote),
    "block_vote_cache_hints": Case("w56_block_vote.cu", "vote_scale", ["x"], ["y"], (2,), (64,), vote_scale),
    "coop_groups_rms": Case("w55_coop_groups.cu", "rms_cg", ["x", "w"], ["y"], (3,), (64,), rms_cg, tol=1e-7),
    "half2_pairs": Case("w54_half2.cu", "scale_tanh2", ["x", "b"], ["y"], (2,), (32,), scale_tanh2,
                        dtype=torch.float16, tol=2e-2),
    "helpers_huber": Case("w32_clamp_helper.cu", "huber_loss", ["pred", "tgt"], ["out"], (2,), (32,), huber),
}


def close(got, want, tol, what):
    got, want = got.to(F64), want.to(F64)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    err = (got - want).abs().max().item() if got.numel() else 0.0
    scale = max(1.0, want.abs().max().item() if want.numel() else 0.0)
    assert err <= tol * scale, "%s: max abs error %.3g (tolerance %.3g)" % (what, err, tol * scale)


def prepare(c, args):
    """The kernel of case c and a launch's arguments for args (in the C order): the inputs
    replaced by leaf copies that require grad (xs), the outputs by copies the kernel writes (outs)."""
    k = kad.cuda.differentiable(os.path.join(WILD, c.file), c.kernel, inputs=c.inputs, outputs=c.outputs,
                                template=c.template or None)
    params = [n for n, _ in k.specialization(c.block, list(args), c.template or None, shared_mem=c.smem)[1].params]
    assert len(params) == len(args), params
    by = dict(zip(params, args))
    xs = [by[n].clone().requires_grad_() for n in c.inputs]
    outs = [by[n].clone() for n in c.outputs]
    run = list(args)
    for n, t in list(zip(c.inputs, xs)) + list(zip(c.outputs, outs)):
        run[params.index(n)] = t
    return k, run, xs, outs


@pytest.mark.parametrize("name", sorted(CASES))
def test_wild_kernel_against_torch(name):
    c = CASES[name]
    g = torch.Generator().manual_seed(sum(map(ord, name)))
    args, ref = c.make(g)
    k, run, xs, outs = prepare(c, args)
    with kad.f64_mode():
        k[c.grid, c.block](*run, shared_mem=c.smem)
    # the reference, in float64 from the same (rounded) inputs
    xr = [x.detach().to(F64).requires_grad_() for x in xs]
    want = ref(*xr)
    for n, o, w in zip(c.outputs, outs, want):
        close(o, w, c.tol, "%s: output %s" % (name, n))
    dys = [torch.randn(o.shape, generator=g, dtype=F64).to(o.dtype) for o in outs]
    got = torch.autograd.grad(outs, xs, dys, allow_unused=True)
    wgrad = torch.autograd.grad(want, xr, [d.to(F64) for d in dys], allow_unused=True)
    for n, a, b in zip(c.inputs, got, wgrad):
        a = torch.zeros_like(b) if a is None else a
        b = torch.zeros_like(a) if b is None else b
        close(a, b, c.tol, "%s: gradient of %s" % (name, n))


def test_wild_set_is_every_file():
    """Every kernel file of tests/cuda_wild is in the table."""
    files = {c.file for c in CASES.values() if "/" not in c.file}
    assert files == set(os.listdir(WILD)) - {"README.md"}
