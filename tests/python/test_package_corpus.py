"""The corpus kernels (tests/kernels/) through @kad.differentiable, on CPU tensors.

Two checks per case:

- test_corpus_kernel_backward_matches_torch launches an unchanged corpus
  kernel exactly as its host wrapper would, with inputs that require grad,
  then takes L = sum_o <view(o), c_o> for random cotangents c_o and compares
  L.backward()'s gradients with PyTorch autograd of the same math written in
  torch (independent of kad).  Views select what the kernel writes (padded
  rows are left out).
- test_corpus_kernel_gradcheck_float64 runs torch.autograd.gradcheck in
  float64 (kad.f64_mode()) on a small-shape variant of the same launch: still
  several programs and partial blocks, few enough elements for per-element
  finite differences.  Every float buffer is float64 there; the output
  buffers start each evaluation as copies of the case's (an atomic_add
  output keeps its initial contents).  Inputs stay away from the kinks
  (relu/clamp/abs, ties in max) by being random; dropout's mask depends on
  the seed only.

Every corpus kernel that `kad grad` differentiates is a case here (cross_entropy
and softmax_exp2 carry an online max and sum through their loops: kad records them
on a tape); the ones it refuses are in test_refused_corpus_kernels with their
located errors: integer-only data (histogram).
axpby reads y in a runtime branch and stores it after: y, loaded, is updated in
place (docs/PYTHON.md), its old value a constant of the reference.

Tolerance: max|g_kad - g_torch| <= 1e-5 * max|g_torch| (+ 1e-6) in float32 on
the CPU (both sides round differently, sums of up to ~300 terms; measured at
most 3e-7).  On a GPU (KAD_TEST_DEVICE=cuda) Triton's fp32 transcendentals are
approximations: 1e-4 there, and the dots of matmul and linear attention run in
TF32 (tl.dot's default precision) while torch's reference does not: they get
1e-2.  kad's interpreter does not emulate TF32, so on CPU they keep 1e-5.  gradcheck uses
the tolerances of test_package_models.py (eps=1e-6, atol=1e-7, rtol=1e-5).
"""
import os
import sys

import pytest
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), ""))  # tests/ -> `import kernels`

import kad  # noqa: E402
from kernels import (axpby, bias_add, box_filter, cast_scale, clamp, cross_entropy, cumsum, dropout,  # noqa: E402
                     fused_bias_act, softmax_exp2,
                     gelu, geglu, group_sum, head_affine_3d, layer_norm, leaky_relu, linear_attention, log_softmax,
                     matmul, mean_dim, minmax_scale, persistent_scale, relu, rms_norm, row_stats, row_sum,
                     scan, scan_general, silu, softmax, softplus, split_k_colsum, swiglu, transpose, vector_add)
from kernels import reduce as red  # noqa: E402
import test_scan_general as sg  # noqa: E402  (the general scan rule's kernels: their torch loops)


def cdiv(a, b):
    return -(-a // b)


# KAD_TEST_DEVICE=cuda runs the same cases with CUDA tensors (Triton forward,
# generated backward module) on a GPU machine.
DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")


def leaf(*shape, scale=1.0, shift=0.0, dtype=torch.float32, gen=None):
    x = shift + scale * torch.randn(*shape, generator=gen, dtype=torch.float64, device="cpu")
    return x.to(device=DEVICE, dtype=dtype).requires_grad_()


class Case:
    """kernel (module attr), inputs/outputs, and a setup(gen, small) returning
    (grid, args, kwargs, leaves {input: tensor}, views {output: tensor view}, ref(leaves) -> {output: value}).
    small=True gives the gradcheck shapes.  Output views are views of output
    arguments (or the arguments themselves).  gpu_tol replaces tol on a GPU."""

    def __init__(self, id, fn, inputs, outputs, setup, tol=1e-5, gpu_tol=None):
        self.id, self.fn, self.inputs, self.outputs, self.setup = id, fn, inputs, outputs, setup
        if DEVICE == "cpu":
            self.tol = tol
        else:
            self.tol = gpu_tol if gpu_tol is not None else max(tol, 1e-4)


CASES = []


def case(id, fn, inputs, outputs, tol=1e-5, gpu_tol=None):
    def reg(setup):
        CASES.append(Case(id, fn, inputs, outputs, setup, tol, gpu_tol))
        return setup
    return reg


@case("vector_add", vector_add.add_kernel, ["x_ptr", "y_ptr"], ["out_ptr"])
def _(g, small):
    n, block = (50, 16) if small else (1000, 256)
    x, y, out = leaf(n, gen=g), leaf(n, gen=g), torch.empty(n)
    return (cdiv(n, block),), [x, y, out, n], dict(BLOCK_SIZE=block), dict(x_ptr=x, y_ptr=y), \
        dict(out_ptr=out), lambda t: dict(out_ptr=t["x_ptr"] + t["y_ptr"])


def _unary(id, fn, torch_fn, kw, scale=1.0, out="y_ptr"):
    @case(id, fn, ["x_ptr"], [out])
    def _(g, small):
        n, block = (40, 16) if small else (1000, 256)
        x, y = leaf(n, scale=scale, gen=g), torch.empty(n)
        return (cdiv(n, block),), [x, y, n], dict(kw, BLOCK_SIZE=block), dict(x_ptr=x), {out: y}, \
            lambda t: {out: torch_fn(t["x_ptr"])}


_unary("relu", relu.relu_kernel, torch.relu, {})
_unary("gelu_none", gelu.gelu_kernel, lambda x: F.gelu(x), dict(APPROXIMATE="none"), scale=3)
_unary("gelu_tanh", gelu.gelu_kernel, lambda x: F.gelu(x, approximate="tanh"), dict(APPROXIMATE="tanh"), scale=3)
_unary("silu", silu.silu_kernel, F.silu, {}, scale=4, out="out_ptr")
_unary("leaky_relu", leaky_relu.leaky_relu_kernel, lambda x: F.leaky_relu(x, 0.2), dict(NEGATIVE_SLOPE=0.2))
_unary("relu6", clamp.relu6_kernel, lambda x: torch.clamp(x, 0.0, 6.0), {}, scale=5)


def _axpby(id, beta):
    @case(id, axpby.axpby_kernel, ["x_ptr"], ["y_ptr"])
    def _(g, small):
        n, block = (40, 16) if small else (1000, 256)
        x, y0 = leaf(n, gen=g), leaf(n, gen=g).detach()
        y = y0.clone()
        return (cdiv(n, block),), [x, y, n, 1.5, beta], dict(BLOCK_SIZE=block), dict(x_ptr=x), dict(y_ptr=y), \
            lambda t: dict(y_ptr=1.5 * t["x_ptr"] + beta * y0.to(t["x_ptr"].dtype))


_axpby("axpby", -0.75)  # y read in the `else` branch, updated in place
_axpby("axpby_beta0", 0.0)  # y not read


@case("leaky_relu_defaults", leaky_relu.leaky_relu_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    n = 30 if small else 700  # BLOCK_SIZE defaults to 512
    x, y = leaf(n, gen=g), torch.empty(n)
    return (cdiv(n, 512),), [x, y, n], {}, dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=F.leaky_relu(t["x_ptr"], 0.01))


@case("softplus", softplus.softplus_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    n, block = (40, 16) if small else (1000, 256)
    # beta * x crosses the threshold (x = 5) inside [-15, 25]
    x = (torch.rand(n, generator=g, dtype=torch.float64, device="cpu") * 40 - 15).float().to(DEVICE)
    x.requires_grad_()
    y = torch.empty(n)
    return (cdiv(n, block),), [x, y, n, 2.0, 10.0], dict(BLOCK_SIZE=block), dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=F.softplus(t["x_ptr"], beta=2.0, threshold=10.0))


@case("clamp", clamp.clamp_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    n, block = (40, 16) if small else (1000, 256)
    x, y = leaf(n, gen=g), torch.empty(n)
    return (cdiv(n, block),), [x, y, n, -0.5, 0.75], dict(BLOCK_SIZE=block), dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=torch.clamp(t["x_ptr"], -0.5, 0.75))


@case("cast_scale_fp32_to_fp16", cast_scale.scale_cast_kernel, ["x_ptr"], ["y_ptr"], tol=2e-3)
def _(g, small):
    import triton.language as tl
    n, block = (40, 16) if small else (600, 256)
    x, y = leaf(n, gen=g), torch.empty(n, dtype=torch.float16)
    return (cdiv(n, block),), [x, y, n, 0.5], dict(OUT_DTYPE=tl.float16, BLOCK_SIZE=block), dict(x_ptr=x), \
        dict(y_ptr=y), lambda t: dict(y_ptr=(t["x_ptr"] * 0.5).half())


@case("dropout", dropout.seeded_dropout_kernel, ["x_ptr"], ["out_ptr"])
def _(g, small):
    n, block = (100, 32) if small else (3000, 1024)
    x, out = leaf(n, gen=g), torch.empty(n)

    def ref(t):  # the kept lanes are the nonzero outputs (x is never 0)
        keep = out.detach() != 0
        return dict(out_ptr=torch.where(keep, t["x_ptr"] / 0.75, 0.0))
    return (cdiv(n, block),), [x, out, n, 0.25, 1234], dict(BLOCK_SIZE=block), dict(x_ptr=x), \
        dict(out_ptr=out), ref


@case("softmax_strided", softmax.softmax_kernel, ["input_ptr"], ["output_ptr"])
def _(g, small):
    rows, cols, in_stride, out_stride, block = (3, 10, 16, 12, 16) if small else (5, 100, 128, 112, 128)
    x, y = leaf(rows, in_stride, scale=3, gen=g), torch.empty(rows, out_stride)
    return (rows,), [y, x, in_stride, out_stride, cols], dict(BLOCK_SIZE=block), dict(input_ptr=x), \
        dict(output_ptr=y[:, :cols]), lambda t: dict(output_ptr=torch.softmax(t["input_ptr"][:, :cols], dim=1))


@case("softmax_online_exp2_taped", softmax_exp2.softmax_online_exp2_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    rows, cols, stride, block = (2, 20, 24, 8) if small else (3, 700, 704, 256)
    x, y = leaf(rows, stride, scale=2, gen=g), torch.empty(rows, stride)
    return (rows,), [x, y, stride, stride, cols], dict(BLOCK_N=block), dict(x_ptr=x), \
        dict(y_ptr=y[:, :cols]), lambda t: dict(y_ptr=torch.softmax(t["x_ptr"][:, :cols], dim=1))


@case("cross_entropy_taped", cross_entropy.cross_entropy_fwd_kernel, ["logits_ptr"], ["loss_ptr", "lse_ptr"])
def _(g, small):
    rows, v, block = (3, 20, 8) if small else (4, 300, 128)
    x = leaf(rows, v, scale=2, gen=g)
    labels = torch.randint(0, v, (rows,), generator=g, device="cpu")
    labels[1] = -100  # an ignored row: zero loss, lse still computed
    labels = labels.to(DEVICE)
    loss, lse = torch.empty(rows), torch.empty(rows)

    def ref(t):
        z = t["logits_ptr"]
        lse_r = torch.logsumexp(z, dim=1)
        target = z.gather(1, labels.clamp(min=0)[:, None])[:, 0]
        return dict(loss_ptr=torch.where(labels == -100, torch.zeros_like(lse_r), lse_r - target), lse_ptr=lse_r)
    return (rows,), [x, labels, loss, lse, v, v, -100], dict(BLOCK_SIZE=block), dict(logits_ptr=x), \
        dict(loss_ptr=loss, lse_ptr=lse), ref


@case("log_softmax_early_return", log_softmax.log_softmax_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    # more programs than rows: the extra ones return early
    rows, cols, y_stride, block = (3, 10, 16, 16) if small else (5, 50, 64, 64)
    x, y = leaf(rows, cols, scale=2, gen=g), torch.empty(rows + 2, y_stride)
    return (rows + 3,), [x, y, cols, y_stride, rows, cols], dict(BLOCK_N=block), dict(x_ptr=x), \
        dict(y_ptr=y[:rows, :cols]), lambda t: dict(y_ptr=torch.log_softmax(t["x_ptr"], dim=1))


@case("layer_norm_chunked", layer_norm.layer_norm_fwd_kernel, ["X", "W", "B"], ["Y", "Mean", "Rstd"])
def _(g, small):
    rows, n, y_stride, block = (2, 20, 24, 8) if small else (4, 300, 320, 128)  # 3 chunks, the last partial
    x = leaf(rows, n, scale=2, shift=1.5, gen=g)
    w, b = leaf(n, scale=0.1, shift=1, gen=g), leaf(n, scale=0.1, gen=g)
    y, mean, rstd = torch.empty(rows, y_stride), torch.empty(rows), torch.empty(rows)

    def ref(t):
        X = t["X"]
        mu = X.mean(1)
        r = 1 / torch.sqrt(((X - mu[:, None]) ** 2).mean(1) + 1e-5)
        return dict(Y=(X - mu[:, None]) * r[:, None] * t["W"] + t["B"], Mean=mu, Rstd=r)
    return (rows,), [x, y, w, b, mean, rstd, n, y_stride, n, 1e-5], dict(BLOCK_N=block), dict(X=x, W=w, B=b), \
        dict(Y=y[:, :n], Mean=mean, Rstd=rstd), ref


@case("rms_norm", rms_norm.rms_norm_fwd_kernel, ["x_ptr", "w_ptr"], ["y_ptr", "rstd_ptr"])
def _(g, small):
    rows, n, y_stride, block = (3, 12, 16, 16) if small else (6, 100, 104, 128)
    x, w = leaf(rows, n, gen=g), leaf(n, scale=0.2, shift=1, gen=g)
    y, r = torch.empty(rows, y_stride), torch.empty(rows)

    def ref(t):
        rs = torch.rsqrt((t["x_ptr"] ** 2).mean(1) + 1e-6)
        return dict(y_ptr=t["x_ptr"] * rs[:, None] * t["w_ptr"], rstd_ptr=rs)
    return (rows,), [x, w, y, r, n, y_stride, n, 1e-6], dict(BLOCK_SIZE=block), dict(x_ptr=x, w_ptr=w), \
        dict(y_ptr=y[:, :n], rstd_ptr=r), ref


@case("minmax_scale", minmax_scale.minmax_scale_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    rows, n, y_stride, block = (3, 12, 16, 16) if small else (4, 90, 96, 128)
    x, y = leaf(rows, n, gen=g), torch.empty(rows, y_stride)

    def ref(t):
        X = t["x_ptr"]
        lo, hi = X.amin(1, keepdim=True), X.amax(1, keepdim=True)
        return dict(y_ptr=(X - lo) / (hi - lo + 1e-6) * 2.0 - 1.0)
    return (rows,), [x, y, n, y_stride, n, 1e-6, -1.0, 1.0], dict(BLOCK_N=block), dict(x_ptr=x), \
        dict(y_ptr=y[:, :n]), ref


@case("swiglu", swiglu.swiglu_fwd_kernel, ["a_ptr", "b_ptr"], ["c_ptr"])
def _(g, small):
    rows, n, block = (2, 20, 16) if small else (3, 100, 64)
    a, b, c = leaf(rows, n, scale=2, gen=g), leaf(rows, n, gen=g), torch.empty(rows, n)
    return (rows, cdiv(n, block)), [a, b, c, n, n], dict(BLOCK_SIZE=block), dict(a_ptr=a, b_ptr=b), \
        dict(c_ptr=c), lambda t: dict(c_ptr=F.silu(t["a_ptr"]) * t["b_ptr"])


@case("geglu", geglu.geglu_fwd_kernel, ["a_ptr", "b_ptr"], ["c_ptr"])
def _(g, small):
    rows, n, stride, block = (2, 20, 24, 32) if small else (3, 100, 112, 128)
    a, b = leaf(rows, stride, scale=2, gen=g), leaf(rows, stride, gen=g)  # padding columns never read
    c = torch.empty(rows, n)
    return (rows,), [a, b, c, stride, n, n], dict(BLOCK_SIZE=block), dict(a_ptr=a, b_ptr=b), \
        dict(c_ptr=c), lambda t: dict(c_ptr=F.gelu(t["a_ptr"][:, :n], approximate="tanh") * t["b_ptr"][:, :n])


@case("bias_add_2d_grid", bias_add.bias_add_kernel, ["x_ptr", "b_ptr"], ["y_ptr"])
def _(g, small):
    rows, n, y_stride, block = (3, 10, 12, 4) if small else (7, 150, 152, 64)  # partial last column block
    x, b, y = leaf(rows, n, gen=g), leaf(n, gen=g), torch.empty(rows, y_stride)
    return (rows, cdiv(n, block)), [x, b, y, n, y_stride, n], dict(BLOCK_N=block), dict(x_ptr=x, b_ptr=b), \
        dict(y_ptr=y[:, :n]), lambda t: dict(y_ptr=t["x_ptr"] + t["b_ptr"])


@case("cumsum_reverse", cumsum.cumsum_rows_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    rows, n, y_stride, bn = (5, 6, 8, 8) if small else (10, 50, 56, 64)
    x, y = leaf(rows, n, gen=g), torch.empty(rows, y_stride)
    return (cdiv(rows, 4),), [x, y, rows, n, n, y_stride], dict(BLOCK_M=4, BLOCK_N=bn, REVERSE=True), \
        dict(x_ptr=x), dict(y_ptr=y[:, :n]), lambda t: dict(y_ptr=t["x_ptr"].flip(1).cumsum(1).flip(1))


@case("linear_recurrence_reverse", scan.linear_recurrence_kernel, ["a_ptr", "b_ptr"], ["h_ptr"], tol=1e-4)
def _(g, small):
    T, D, bt = (5, 6, 8) if small else (13, 21, 16)
    a = (0.6 + 0.4 * torch.rand(T, D, generator=g, dtype=torch.float64, device="cpu")).to(DEVICE, torch.float32).requires_grad_()
    b, h = leaf(T, D, gen=g), torch.empty(T, D)

    def ref(t):  # h_t = a_t * h_{t+1} + b_t, a loop over time
        s, out = torch.zeros_like(t["b_ptr"][0]), [None] * T
        for i in reversed(range(T)):
            s = t["a_ptr"][i] * s + t["b_ptr"][i]
            out[i] = s
        return dict(h_ptr=torch.stack(out))
    return (cdiv(D, 4),), [a, b, h, T, D, D], dict(BLOCK_T=bt, BLOCK_D=4, REVERSE=True), \
        dict(a_ptr=a, b_ptr=b), dict(h_ptr=h), ref


@case("chunked_ssm", scan.chunked_ssm_kernel, ["a_ptr", "x_ptr"], ["h_ptr"], tol=1e-4)
def _(g, small):
    T, D, ct = (7, 5, 4) if small else (22, 10, 8)
    a = (0.3 + 0.6 * torch.rand(T, D, generator=g, dtype=torch.float64, device="cpu")).to(DEVICE, torch.float32).requires_grad_()
    x, h = leaf(T, D, gen=g), torch.empty(T, D)

    def ref(t):  # h_t = a_t * h_{t-1} + (1 - a_t) * x_t, a loop over time
        s, out = torch.zeros_like(t["x_ptr"][0]), []
        for i in range(T):
            s = t["a_ptr"][i] * s + (1 - t["a_ptr"][i]) * t["x_ptr"][i]
            out.append(s)
        return dict(h_ptr=torch.stack(out))
    return (cdiv(D, 4),), [a, x, h, T, D], dict(CT=ct, BD=4), dict(a_ptr=a, x_ptr=x), dict(h_ptr=h), ref


@case("cummax_index", scan.cummax_index_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    rows, n, bn = (3, 7, 8) if small else (4, 29, 32)
    x, y, i = leaf(rows, n, gen=g), torch.empty(rows, n), torch.empty(rows, n, dtype=torch.int32)
    return (rows,), [x, y, i, n], dict(BLOCK=bn, REVERSE=False), dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=torch.cummax(t["x_ptr"], 1).values)


@case("scan_add", scan.scan_add_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    rows, n, bn = (3, 6, 8) if small else (5, 37, 64)
    x, y = leaf(rows, n, gen=g), torch.empty(rows, n)
    return (rows,), [x, y, n], dict(BLOCK=bn, REVERSE=False), dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=t["x_ptr"].cumsum(1))


@case("cumprod_zeros", scan.cumprod_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    rows, n, bn = (2, 6, 8) if small else (4, 17, 32)
    x0 = 0.6 + 0.8 * torch.rand(rows, n, generator=g, dtype=torch.float64, device="cpu")
    x0[:, 2] = 0.0
    x0[0, n - 1] = 0.0
    x, y = x0.to(DEVICE, torch.float32).requires_grad_(), torch.empty(rows, n)
    return (rows,), [x, y, n], dict(BLOCK=bn, REVERSE=False), dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=t["x_ptr"].cumprod(1))


@case("running_max", scan.running_max_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    rows, n, bn = (3, 7, 8) if small else (4, 29, 32)
    x, y = leaf(rows, n, gen=g), torch.empty(rows, n)
    return (rows,), [x, y, n], dict(BLOCK=bn), dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=torch.cummax(t["x_ptr"], 1).values)


@case("scan_mul", scan.scan_mul_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):  # x * y written by hand: the general scan rule
    rows, n, bn = (2, 6, 8) if small else (3, 12, 16)
    x = (0.5 + torch.rand(rows, n, generator=g, dtype=torch.float64, device="cpu")).to(DEVICE, torch.float32).requires_grad_()
    y = torch.empty(rows, n)
    return (rows,), [x, y, n], dict(BLOCK=bn), dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=t["x_ptr"].cumprod(1))


def _general_scan(cid, one_d=False):
    """A kernel of tests/kernels/scan_general.py (a combine no special case recognizes) along its
    rows; the reference is test_scan_general's sequential loop in torch."""
    c = sg.CASES[cid]
    name = ("row_" if one_d else "") + c.kernel

    @case(f"scan_general_{cid}" + ("_1d" if one_d else ""), getattr(scan_general, name), list(c.ins), list(c.outs))
    def _(g, small):
        m, n = (2, 8) if small else (4, 16)
        xs = [(lo + (hi - lo) * torch.rand(m, n, generator=g, dtype=torch.float64, device="cpu")).to(DEVICE, torch.float32)
              .requires_grad_() for lo, hi in (c.ranges[p] for p in c.ins)]
        outs = [torch.empty(m, n) for _ in c.outs]
        grid, kw = ((m,), dict(N=n, REVERSE=False)) if one_d else ((1,), dict(M=m, N=n, AXIS=1, REVERSE=False))
        return grid, [*xs, *outs], kw, dict(zip(c.ins, xs)), dict(zip(c.outs, outs)), \
            lambda t: dict(zip(c.outs, c.ref(*[t[p] for p in c.ins], 1, False)))


for _cid in sg.CASES:
    _general_scan(_cid)
_general_scan("logaddexp", one_d=True)


@case("reduce_welford", red.welford_kernel, ["x_ptr"], ["var_ptr", "mean_ptr"], tol=1e-4)
def _(g, small):
    m, n, bm, bn = (3, 11, 2, 4) if small else (5, 40, 2, 16)
    x, var, mean = leaf(m, n, gen=g), torch.empty(m), torch.empty(m)
    return (cdiv(m, bm),), [x, var, mean, m, n, 1.0], dict(BLOCK_M=bm, BLOCK_N=bn), dict(x_ptr=x), \
        dict(var_ptr=var, mean_ptr=mean), \
        lambda t: dict(zip(("var_ptr", "mean_ptr"), torch.var_mean(t["x_ptr"], 1, correction=1)))


@case("reduce_sum_combine", red.reduce_sum_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    rows, n, bn = (3, 6, 8) if small else (5, 37, 64)
    x, y = leaf(rows, n, gen=g), torch.empty(rows)
    return (rows,), [x, y, n], dict(BLOCK=bn), dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=t["x_ptr"].sum(1))


@case("reduce_max_combine", red.reduce_max_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    m, n, bn = (3, 6, 8) if small else (5, 37, 64)
    x, y = leaf(m, n, gen=g), torch.empty(m)
    return (cdiv(m, 2),), [x, y, m, n], dict(BLOCK_M=2, BLOCK_N=bn), dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=t["x_ptr"].amax(1))


@case("reduce_argmax_pair", red.argmax_pair_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    rows, n, bn = (3, 6, 8) if small else (5, 37, 64)
    x, y, i = leaf(rows, n, gen=g), torch.empty(rows), torch.empty(rows, dtype=torch.int32)
    return (rows,), [x, y, i, n], dict(BLOCK=bn), dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=t["x_ptr"].amax(1))


@case("reduce_logsumexp", red.logsumexp_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    m, n = (3, 6) if small else (5, 13)
    x, y = leaf(m, n, gen=g), torch.empty(1)
    return (1,), [x, y, m, n], dict(BLOCK_M=8, BLOCK_N=16), dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=torch.logsumexp(t["x_ptr"], 1).sum().reshape(1))


@case("reduce_method_forms", red.method_reduce_kernel, ["x_ptr"], ["y_ptr", "c_ptr"])
def _(g, small):
    m, n = (3, 6) if small else (5, 13)
    x, y, c = leaf(m, n, gen=g), torch.empty(m), torch.empty(m, n)
    return (cdiv(m, 2),), [x, y, c, m, n], dict(BLOCK_M=2, BLOCK_N=16), dict(x_ptr=x), dict(y_ptr=y, c_ptr=c), \
        lambda t: dict(y_ptr=t["x_ptr"].sum(1) + (t["x_ptr"] * t["x_ptr"]).amax(1), c_ptr=t["x_ptr"].cumsum(1))


@case("reduce_affine_compose", red.affine_compose_kernel, ["a_ptr", "b_ptr"], ["A_ptr", "h_ptr"], tol=1e-4)
def _(g, small):
    T, D = (5, 3) if small else (11, 6)
    a = (0.6 + 0.4 * torch.rand(T, D, generator=g, dtype=torch.float64, device="cpu")).to(DEVICE, torch.float32).requires_grad_()
    b, A, h = leaf(T, D, gen=g), torch.empty(D), torch.empty(D)

    def ref(t):  # h -> a_t * h + b_t applied for t = 0 .. T-1 from h = 0; A the product of the a_t
        s = torch.zeros_like(t["b_ptr"][0])
        for i in range(T):
            s = t["a_ptr"][i] * s + t["b_ptr"][i]
        return dict(A_ptr=t["a_ptr"].prod(0), h_ptr=s)
    return (1,), [a, b, A, h, T, D], dict(BLOCK_T=16, BLOCK_D=8), dict(a_ptr=a, b_ptr=b), dict(A_ptr=A, h_ptr=h), ref


@case("row_sum_ragged", row_sum.row_sum_kernel, ["x_ptr"], ["out_ptr"])
def _(g, small):
    m, n, stride, bm, bn = (6, 20, 24, 4, 8) if small else (20, 300, 320, 16, 128)
    x, out = leaf(m, stride, gen=g), torch.empty(m)
    return (cdiv(m, bm),), [x, out, m, n, stride], dict(BLOCK_M=bm, BLOCK_N=bn, EVEN_N=False), dict(x_ptr=x), \
        dict(out_ptr=out), lambda t: dict(out_ptr=t["x_ptr"][:, :n].sum(1))


@case("row_stats", row_stats.row_stats_kernel, ["x_ptr"], ["max_ptr", "min_ptr", "mad_ptr", "unit_ptr"])
def _(g, small):
    m, n, stride, bn = (5, 6, 8, 8) if small else (13, 40, 48, 64)
    x = leaf(m, n, gen=g)
    mx, mn, am, mad, unit = torch.empty(m), torch.empty(m), torch.empty(m, dtype=torch.int32), torch.empty(m), \
        torch.empty(m, stride)

    def ref(t):
        X = t["x_ptr"]
        hi, lo = X.amax(1), X.amin(1)
        mid = (hi + lo) / 2
        return dict(max_ptr=hi, min_ptr=lo, mad_ptr=(X - mid[:, None]).abs().mean(1),
                    unit_ptr=(X - lo[:, None]) / torch.clamp(hi - lo, min=1e-6)[:, None])
    return (cdiv(m, 4),), [x, mx, mn, am, mad, unit, m, n, n, stride], dict(BLOCK_M=4, BLOCK_N=bn), dict(x_ptr=x), \
        dict(max_ptr=mx, min_ptr=mn, mad_ptr=mad, unit_ptr=unit[:, :n]), ref


@case("mean_dim1_transposed_strides", mean_dim.mean_dim1_kernel, ["x_ptr"], ["out_ptr"])
def _(g, small):
    b, m, n, bm, bn = (2, 5, 6, 4, 4) if small else (3, 37, 70, 16, 32)
    x = leaf(b, n, m, gen=g)  # memory [B, N, M]; the kernel reads [B, M, N] through strides
    out = torch.empty(b, n)
    return (b, cdiv(n, bn)), [x, out, m, n, n * m, 1, m, n, 1], dict(BLOCK_M=bm, BLOCK_N=bn), dict(x_ptr=x), \
        dict(out_ptr=out), lambda t: dict(out_ptr=t["x_ptr"].transpose(1, 2).mean(1))


@case("head_affine_3d_grid", head_affine_3d.head_affine_kernel, ["x_ptr", "w_ptr", "bias_ptr"], ["y_ptr"])
def _(g, small):
    b, h, L, y_stride, block = (2, 2, 10, 12, 8) if small else (2, 3, 300, 320, 128)
    x, w, bias = leaf(b, h, L, gen=g), leaf(h, gen=g), leaf(h, gen=g)
    y = torch.empty(b, h, y_stride)
    return (cdiv(L, block), h, b), [x, w, bias, y, L, h * L, L, h * y_stride, y_stride], dict(BLOCK_L=block), \
        dict(x_ptr=x, w_ptr=w, bias_ptr=bias), dict(y_ptr=y[:, :, :L]), \
        lambda t: dict(y_ptr=t["x_ptr"] * t["w_ptr"][None, :, None] + t["bias_ptr"][None, :, None])


@case("box_filter3x3", box_filter.box_filter3x3_kernel, ["src_ptr"], ["dst_ptr"])
def _(g, small):
    H, W, stride, bh, bw = (6, 7, 8, 4, 4) if small else (37, 45, 48, 16, 32)
    x, y = leaf(H, W, gen=g), torch.empty(H, stride)
    return (cdiv(H, bh), cdiv(W, bw)), [x, y, H, W, W, stride], dict(BLOCK_H=bh, BLOCK_W=bw), dict(src_ptr=x), \
        dict(dst_ptr=y[:, :W]), lambda t: dict(dst_ptr=F.avg_pool2d(t["src_ptr"][None], 3, 1, 1, True)[0] * 1.0)


@case("transpose", transpose.transpose_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    m, n, y_stride, block = (5, 7, 8, 4) if small else (50, 70, 56, 32)
    x, y = leaf(m, n, gen=g), torch.empty(n, y_stride)  # y's row stride > its m columns
    return (cdiv(m, block), cdiv(n, block)), [x, y, m, n, n, y_stride], dict(BLOCK_M=block, BLOCK_N=block), \
        dict(x_ptr=x), dict(y_ptr=y[:, :m]), lambda t: dict(y_ptr=t["x_ptr"].T)


@case("group_sum_reshape_permute", group_sum.group_sum_kernel, ["x_ptr"], ["out_ptr"])
def _(g, small):
    m, groups, size, out_stride, bm = (6, 2, 4, 8, 4) if small else (20, 4, 8, 24, 16)
    x, out = leaf(m, groups * size, gen=g), torch.empty(groups, out_stride)
    return (cdiv(m, bm),), [x, out, m, groups * size, out_stride], dict(GROUPS=groups, GROUP_SIZE=size, BLOCK_M=bm), \
        dict(x_ptr=x), dict(out_ptr=out[:, :m]), lambda t: dict(out_ptr=t["x_ptr"].reshape(m, groups, size).sum(2).T)


@case("fused_bias_silu_helper_module", fused_bias_act.bias_act_kernel, ["x_ptr", "bias_ptr"], ["y_ptr"])
def _(g, small):
    m, n, y_stride, bm, bn = (6, 10, 12, 4, 8) if small else (50, 100, 104, 32, 64)
    x, b, y = leaf(m, n, gen=g), leaf(n, gen=g), torch.empty(m, y_stride)
    return (cdiv(m, bm), cdiv(n, bn)), [x, b, y, m, n, n, y_stride], dict(ACTIVATION="silu", BLOCK_M=bm, BLOCK_N=bn), \
        dict(x_ptr=x, bias_ptr=b), dict(y_ptr=y[:, :n]), lambda t: dict(y_ptr=F.silu(t["x_ptr"] + t["bias_ptr"]))


@case("matmul_relu_tf32", matmul.matmul_kernel, ["a_ptr", "b_ptr"], ["c_ptr"], gpu_tol=1e-2)
def _(g, small):
    m, n, k = (6, 5, 7) if small else (40, 40, 64)
    a, b, c = leaf(m, k, gen=g), leaf(k, n, gen=g), torch.empty(m, n)
    grid = lambda META: (cdiv(m, META["BLOCK_M"]) * cdiv(n, META["BLOCK_N"]),)  # noqa: E731 (autotuned)
    return grid, [a, b, c, m, n, k, k, 1, n, 1, n, 1], dict(ACTIVATION="relu"), dict(a_ptr=a, b_ptr=b), \
        dict(c_ptr=c), lambda t: dict(c_ptr=torch.relu(t["a_ptr"] @ t["b_ptr"]))


@case("linear_attention_intra", linear_attention.chunk_linear_attn_intra_kernel, ["q_ptr", "k_ptr", "v_ptr"],
      ["o_ptr"], gpu_tol=1e-2)
def _(g, small):
    bh, T, bt, kd, vd = (1, 20, 16, 16, 16) if small else (2, 32, 16, 16, 16)  # small: the last chunk is partial
    q, k, v, o = leaf(bh, T, kd, gen=g), leaf(bh, T, kd, gen=g), leaf(bh, T, vd, gen=g), torch.empty(bh, T, vd)

    def ref(t):
        s = t["q_ptr"] @ t["k_ptr"].transpose(1, 2) * 0.25
        i = torch.arange(T)
        causal = (i[:, None] >= i[None, :]) & ((i[:, None] // bt) == (i[None, :] // bt))
        return dict(o_ptr=torch.where(causal, s, 0.0) @ t["v_ptr"])
    return (cdiv(T, bt), bh), [q, k, v, o, 0.25, T, T * kd, kd, T * vd, vd], dict(BT=bt, K=kd, V=vd), \
        dict(q_ptr=q, k_ptr=k, v_ptr=v), dict(o_ptr=o), ref


@case("persistent_scale_while", persistent_scale.scale_shift_persistent_kernel, ["x_ptr"], ["y_ptr"])
def _(g, small):
    # fewer programs than blocks: each sweeps several in its grid-stride while loop
    n, block = (50, 8) if small else (1000, 128)
    x, y = leaf(n, gen=g), torch.empty(n)
    return (3,), [x, y, n, 1.5, -0.25], dict(BLOCK_SIZE=block), dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=1.5 * t["x_ptr"] - 0.25)


@case("split_k_colsum_atomic_accumulate", split_k_colsum.colsum_split_kernel, ["x_ptr"], ["out_ptr"])
def _(g, small):
    # programs add partial column sums into out, which holds earlier values
    m, n, stride, split, bm, bn = (10, 6, 8, 4, 2, 4) if small else (300, 100, 104, 128, 32, 64)
    x = leaf(m, stride, gen=g)  # the padding columns are never read: their gradient is 0
    out0 = torch.randn(n, generator=g, dtype=torch.float64, device="cpu").float().to(DEVICE)
    out = out0.clone()
    return (cdiv(m, split), cdiv(n, bn)), [x, out, m, n, stride], dict(SPLIT_M=split, BLOCK_M=bm, BLOCK_N=bn), \
        dict(x_ptr=x), dict(out_ptr=out), lambda t: dict(out_ptr=out0 + t["x_ptr"][:, :n].sum(0))


def close(a, b, tol):
    a, b = a.detach().double(), b.detach().double()
    return (a - b).abs().max().item() <= tol * b.abs().max().item() + 1e-6


# Cases whose forward is only defined on kad's interpreter: Triton's GPU reduction combines lanes in
# a tree over warp shuffles, not left to right, so a non-commutative combine_fn (the composition of
# affine maps) gives another forward there (measured on an H100, 2026-11-24); kad's interpreter folds
# left to right, the order the kernel means.
CPU_ONLY = {"reduce_affine_compose": "a non-commutative tl.reduce combine: Triton's GPU reduction "
                                     "order is not left to right"}


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_corpus_kernel_backward_matches_torch(c):
    if DEVICE != "cpu" and c.id in CPU_ONLY:
        pytest.skip(CPU_ONLY[c.id])
    g = torch.Generator().manual_seed(0)
    k = kad.differentiable(inputs=c.inputs, outputs=c.outputs)(c.fn)
    with torch.device(DEVICE):
        grid, args, kwargs, leaves, views, ref = c.setup(g, small=False)
    k[grid](*args, **kwargs)
    cot = {n: torch.randn(v.shape, generator=g, device="cpu").to(DEVICE) for n, v in views.items()}
    sum((views[n].float() * cot[n]).sum() for n in c.outputs).backward()
    got = {n: x.grad.clone() for n, x in leaves.items()}

    mine = {n: x.detach().clone().requires_grad_() for n, x in leaves.items()}
    with torch.device(DEVICE):
        expect = ref(mine)
    for n in c.outputs:
        assert close(views[n], expect[n], c.tol), f"forward output {n}"
    sum((expect[n].float() * cot[n]).sum() for n in c.outputs).backward()
    for n in c.inputs:
        assert close(got[n], mine[n].grad, c.tol), \
            f"d{n}: max err {(got[n] - mine[n].grad).abs().max():.3g}, max |g| {mine[n].grad.abs().max():.3g}"


def float64_launch(c, grid, args, kwargs, leaves, views):
    """The case's launch as a function of float64 inputs (in c.inputs order)
    returning its float64 output views (in c.outputs order), for gradcheck.
    Each call runs on fresh float64 copies of the case's output buffers."""
    k = kad.differentiable(inputs=c.inputs, outputs=c.outputs)(c.fn)
    position = {id(a): i for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
    leaf_at = {position[id(leaves[n])]: j for j, n in enumerate(c.inputs)}
    # output name -> (argument index, the view's geometry in that argument)
    out_at = {}
    for n in c.outputs:
        v = views[n]
        i = position.get(id(v), position.get(id(v._base)))
        assert i is not None, f"view of output {n} is not a view of an argument"
        out_at[n] = (i, v.size(), v.stride(), v.storage_offset() - args[i].storage_offset())

    def f(*xs):
        call = list(args)
        for i, j in leaf_at.items():
            call[i] = xs[j]
        for i, _, _, _ in out_at.values():
            call[i] = args[i].detach().double().clone()
        k[grid](*call, **kwargs)
        return tuple(call[i].as_strided(size, stride, call[i].storage_offset() + off)
                     for i, size, stride, off in out_at.values())
    return f


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_corpus_kernel_gradcheck_float64(c):
    if DEVICE != "cpu":
        pytest.skip("f64_mode is the CPU interpreter's")
    g = torch.Generator().manual_seed(0)
    grid, args, kwargs, leaves, views, _ = c.setup(g, small=True)
    f = float64_launch(c, grid, args, kwargs, leaves, views)
    xs = [leaves[n].detach().double().requires_grad_() for n in c.inputs]
    with kad.f64_mode(typed_as=torch.float32):  # specialized as for fp32 tensors, as the kernels are written
        assert torch.autograd.gradcheck(f, xs, eps=1e-6, atol=1e-7, rtol=1e-5)


def test_every_differentiable_corpus_kernel_is_covered():
    import triton
    covered = {c.fn.fn.__name__ for c in CASES}
    refused = {r[1] for r in REFUSED}
    assert covered & refused == set()
    kernels = set()
    for f in sorted(os.listdir(os.path.join(os.path.dirname(HERE), "kernels"))):
        if f.endswith(".py") and not f.startswith("_"):
            mod = __import__(f"kernels.{f[:-3]}", fromlist=["_"])
            kernels |= {n for n, o in vars(mod).items()
                        if n.endswith("_kernel") and isinstance(o, triton.runtime.jit.JITFunction)}
    assert kernels - covered - refused == set()
    assert refused - kernels == set()


def _histogram_args():
    x = torch.randn(600, requires_grad=True)
    return x, [x, torch.zeros(16, dtype=torch.int32), 600, -2.0, 0.25], dict(NUM_BINS=16, BLOCK_SIZE=256)


# (module, kernel, inputs, outputs, make args, the C diagnostic and its file:line:col)
REFUSED = [
    ("histogram", "histogram_kernel", ["x_ptr"], ["hist_ptr"], _histogram_args,
     "'hist_ptr' is not a pointer to floating-point data", "histogram.py:13:29"),
]


@pytest.mark.parametrize("module,kernel,inputs,outputs,make,message,where", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_corpus_kernels(module, kernel, inputs, outputs, make, message, where):
    fn = getattr(__import__(f"kernels.{module}", fromlist=["_"]), kernel)
    k = kad.differentiable(inputs=inputs, outputs=outputs)(fn)
    x, args, kw = make()
    grid = (x.shape[0],) if x.dim() == 2 else (cdiv(x.shape[0], kw["BLOCK_SIZE"]),)
    if module == "histogram":
        # the package refuses an integer output before anything runs ...
        with pytest.raises(TypeError, match="output 'hist_ptr' is a torch.int32 tensor"):
            k[grid](*args, **kw)
        # ... and kad itself, asked for the backward, with a located error
        call = lambda: kad.backward_source(k, grid, *args, **kw)  # noqa: E731
    else:
        call = lambda: k[grid](*args, **kw)  # noqa: E731
    with pytest.raises(kad.KadError, match=message) as e:
        call()
    text = str(e.value)
    assert where in text and "^" in text, text  # file:line:col, the line, a caret
    assert x.grad is None
