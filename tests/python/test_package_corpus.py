"""The corpus kernels (tests/kernels/) through @kad.differentiable, on CPU tensors.

Each case launches an unchanged corpus kernel exactly as its host wrapper
would, with inputs that require grad, then takes L = sum_o <view(o), c_o>
for random cotangents c_o and compares L.backward()'s gradients with PyTorch
autograd of the same math written in torch (independent of kad).  Views
select what the kernel writes (padded rows are left out).  Every corpus
kernel that `kad grad` differentiates is here; the ones it refuses (loops
needing a tape: cross_entropy, softmax_exp2; in/out buffers: axpby,
split_k_colsum; persistent_scale's store in a while loop; integer-only ones)
are listed in test_refused_corpus_kernels.

Tolerance: max|g_kad - g_torch| <= 1e-4 * max|g_torch| (+ 1e-6) in float32 (both sides
round differently, sums of up to ~300 terms); tf32 dots (matmul's default
precision, which kad's interpreter rounds like the GPU) get 1e-2.
"""
import os
import sys

import pytest
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), ""))  # tests/ -> `import kernels`

import kad  # noqa: E402
from kernels import (box_filter, cast_scale, clamp, cumsum, dropout, fused_bias_act, gelu,  # noqa: E402
                     group_sum, head_affine_3d, layer_norm, leaky_relu, linear_attention, log_softmax,
                     matmul, mean_dim, minmax_scale, relu, rms_norm, row_stats, row_sum, silu, softmax,
                     softplus, swiglu, transpose, vector_add)


def cdiv(a, b):
    return -(-a // b)


# KAD_TEST_DEVICE=cuda runs the same cases with CUDA tensors (Triton forward,
# generated backward module) on a GPU machine.
DEVICE = os.environ.get("KAD_TEST_DEVICE", "cpu")


def leaf(*shape, scale=1.0, shift=0.0, dtype=torch.float32, gen=None):
    x = shift + scale * torch.randn(*shape, generator=gen, dtype=torch.float64, device="cpu")
    return x.to(device=DEVICE, dtype=dtype).requires_grad_()


class Case:
    """kernel (module attr), inputs/outputs, and a setup(gen) returning
    (grid, args, kwargs, leaves {input: tensor}, views {output: tensor view}, ref(leaves) -> {output: value})."""

    def __init__(self, id, fn, inputs, outputs, setup, tol=1e-4):
        self.id, self.fn, self.inputs, self.outputs, self.setup, self.tol = id, fn, inputs, outputs, setup, tol


CASES = []


def case(id, fn, inputs, outputs, tol=1e-4):
    def reg(setup):
        CASES.append(Case(id, fn, inputs, outputs, setup, tol))
        return setup
    return reg


def _n(g, n=1000):
    return leaf(n, gen=g)


@case("vector_add", vector_add.add_kernel, ["x_ptr", "y_ptr"], ["out_ptr"])
def _(g):
    x, y = _n(g), _n(g)
    out = torch.empty(1000)
    return (cdiv(1000, 256),), [x, y, out, 1000], dict(BLOCK_SIZE=256), dict(x_ptr=x, y_ptr=y), \
        dict(out_ptr=out), lambda t: dict(out_ptr=t["x_ptr"] + t["y_ptr"])


def _unary(id, fn, torch_fn, kw, scale=1.0, out="y_ptr", n=1000, block=256):
    @case(id, fn, ["x_ptr"], [out])
    def _(g):
        x = leaf(n, scale=scale, gen=g)
        y = torch.empty(n)
        return (cdiv(n, block),), [x, y, n], dict(kw, BLOCK_SIZE=block), dict(x_ptr=x), {out: y}, \
            lambda t: {out: torch_fn(t["x_ptr"])}


_unary("relu", relu.relu_kernel, torch.relu, {})
_unary("gelu_none", gelu.gelu_kernel, lambda x: F.gelu(x), dict(APPROXIMATE="none"), scale=3)
_unary("gelu_tanh", gelu.gelu_kernel, lambda x: F.gelu(x, approximate="tanh"), dict(APPROXIMATE="tanh"), scale=3)
_unary("silu", silu.silu_kernel, F.silu, {}, scale=4, out="out_ptr")
_unary("leaky_relu", leaky_relu.leaky_relu_kernel, lambda x: F.leaky_relu(x, 0.2), dict(NEGATIVE_SLOPE=0.2))
_unary("relu6", clamp.relu6_kernel, lambda x: torch.clamp(x, 0.0, 6.0), {}, scale=5)


@case("leaky_relu_defaults", leaky_relu.leaky_relu_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x, y = _n(g, 700), torch.empty(700)
    return (2,), [x, y, 700], {}, dict(x_ptr=x), dict(y_ptr=y), lambda t: dict(y_ptr=F.leaky_relu(t["x_ptr"], 0.01))


@case("softplus", softplus.softplus_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = (torch.rand(1000, generator=g, dtype=torch.float64, device="cpu") * 40 - 15).float().to(DEVICE)
    x.requires_grad_()
    y = torch.empty(1000)
    return (4,), [x, y, 1000, 2.0, 10.0], dict(BLOCK_SIZE=256), dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=F.softplus(t["x_ptr"], beta=2.0, threshold=10.0))


@case("clamp", clamp.clamp_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x, y = _n(g), torch.empty(1000)
    return (4,), [x, y, 1000, -0.5, 0.75], dict(BLOCK_SIZE=256), dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=torch.clamp(t["x_ptr"], -0.5, 0.75))


@case("cast_scale_fp32_to_fp16", cast_scale.scale_cast_kernel, ["x_ptr"], ["y_ptr"], tol=2e-3)
def _(g):
    import triton.language as tl
    x, y = _n(g, 600), torch.empty(600, dtype=torch.float16)
    return (3,), [x, y, 600, 0.5], dict(OUT_DTYPE=tl.float16, BLOCK_SIZE=256), dict(x_ptr=x), dict(y_ptr=y), \
        lambda t: dict(y_ptr=(t["x_ptr"] * 0.5).half())


@case("dropout", dropout.seeded_dropout_kernel, ["x_ptr"], ["out_ptr"])
def _(g):
    x, out = _n(g, 3000), torch.empty(3000)

    def ref(t):  # the kept lanes are the nonzero outputs (x is never 0)
        keep = out.detach() != 0
        return dict(out_ptr=torch.where(keep, t["x_ptr"] / 0.75, 0.0))
    return (3,), [x, out, 3000, 0.25, 1234], dict(BLOCK_SIZE=1024), dict(x_ptr=x), dict(out_ptr=out), ref


@case("softmax_strided", softmax.softmax_kernel, ["input_ptr"], ["output_ptr"])
def _(g):
    x = leaf(5, 128, scale=3, gen=g)
    y = torch.empty(5, 112)
    return (5,), [y, x, 128, 112, 100], dict(BLOCK_SIZE=128), dict(input_ptr=x), dict(output_ptr=y[:, :100]), \
        lambda t: dict(output_ptr=torch.softmax(t["input_ptr"][:, :100], dim=1))


@case("log_softmax_early_return", log_softmax.log_softmax_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(5, 50, scale=2, gen=g)
    y = torch.empty(7, 64)
    return (8,), [x, y, 50, 64, 5, 50], dict(BLOCK_N=64), dict(x_ptr=x), dict(y_ptr=y[:5, :50]), \
        lambda t: dict(y_ptr=torch.log_softmax(t["x_ptr"], dim=1))


@case("layer_norm_chunked", layer_norm.layer_norm_fwd_kernel, ["X", "W", "B"], ["Y", "Mean", "Rstd"])
def _(g):
    rows, n = 4, 300
    x = leaf(rows, n, scale=2, shift=1.5, gen=g)
    w, b = leaf(n, scale=0.1, shift=1, gen=g), leaf(n, scale=0.1, gen=g)
    y, mean, rstd = torch.empty(rows, 320), torch.empty(rows), torch.empty(rows)

    def ref(t):
        X = t["X"]
        mu = X.mean(1)
        r = 1 / torch.sqrt(((X - mu[:, None]) ** 2).mean(1) + 1e-5)
        return dict(Y=(X - mu[:, None]) * r[:, None] * t["W"] + t["B"], Mean=mu, Rstd=r)
    return (rows,), [x, y, w, b, mean, rstd, n, 320, n, 1e-5], dict(BLOCK_N=128), dict(X=x, W=w, B=b), \
        dict(Y=y[:, :n], Mean=mean, Rstd=rstd), ref


@case("rms_norm", rms_norm.rms_norm_fwd_kernel, ["x_ptr", "w_ptr"], ["y_ptr", "rstd_ptr"])
def _(g):
    x, w = leaf(6, 100, gen=g), leaf(100, scale=0.2, shift=1, gen=g)
    y, r = torch.empty(6, 104), torch.empty(6)

    def ref(t):
        rs = torch.rsqrt((t["x_ptr"] ** 2).mean(1) + 1e-6)
        return dict(y_ptr=t["x_ptr"] * rs[:, None] * t["w_ptr"], rstd_ptr=rs)
    return (6,), [x, w, y, r, 100, 104, 100, 1e-6], dict(BLOCK_SIZE=128), dict(x_ptr=x, w_ptr=w), \
        dict(y_ptr=y[:, :100], rstd_ptr=r), ref


@case("minmax_scale", minmax_scale.minmax_scale_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x, y = leaf(4, 90, gen=g), torch.empty(4, 96)

    def ref(t):
        X = t["x_ptr"]
        lo, hi = X.amin(1, keepdim=True), X.amax(1, keepdim=True)
        return dict(y_ptr=(X - lo) / (hi - lo + 1e-6) * 2.0 - 1.0)
    return (4,), [x, y, 90, 96, 90, 1e-6, -1.0, 1.0], dict(BLOCK_N=128), dict(x_ptr=x), dict(y_ptr=y[:, :90]), ref


@case("swiglu", swiglu.swiglu_fwd_kernel, ["a_ptr", "b_ptr"], ["c_ptr"])
def _(g):
    a, b = leaf(3, 100, scale=2, gen=g), leaf(3, 100, gen=g)
    c = torch.empty(3, 100)
    return (3, 2), [a, b, c, 100, 100], dict(BLOCK_SIZE=64), dict(a_ptr=a, b_ptr=b), dict(c_ptr=c), \
        lambda t: dict(c_ptr=F.silu(t["a_ptr"]) * t["b_ptr"])


@case("cumsum_reverse", cumsum.cumsum_rows_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x, y = leaf(10, 50, gen=g), torch.empty(10, 56)
    return (3,), [x, y, 10, 50, 50, 56], dict(BLOCK_M=4, BLOCK_N=64, REVERSE=True), dict(x_ptr=x), \
        dict(y_ptr=y[:, :50]), lambda t: dict(y_ptr=t["x_ptr"].flip(1).cumsum(1).flip(1))


@case("row_sum_ragged", row_sum.row_sum_kernel, ["x_ptr"], ["out_ptr"])
def _(g):
    x, out = leaf(20, 320, gen=g), torch.empty(20)
    return (2,), [x, out, 20, 300, 320], dict(BLOCK_M=16, BLOCK_N=128, EVEN_N=False), dict(x_ptr=x), \
        dict(out_ptr=out), lambda t: dict(out_ptr=t["x_ptr"][:, :300].sum(1))


@case("row_stats", row_stats.row_stats_kernel, ["x_ptr"], ["max_ptr", "min_ptr", "mad_ptr", "unit_ptr"])
def _(g):
    m, n = 13, 40
    x = leaf(m, n, gen=g)
    mx, mn, am, mad, unit = torch.empty(m), torch.empty(m), torch.empty(m, dtype=torch.int32), torch.empty(m), \
        torch.empty(m, 48)

    def ref(t):
        X = t["x_ptr"]
        hi, lo = X.amax(1), X.amin(1)
        mid = (hi + lo) / 2
        return dict(max_ptr=hi, min_ptr=lo, mad_ptr=(X - mid[:, None]).abs().mean(1),
                    unit_ptr=(X - lo[:, None]) / torch.clamp(hi - lo, min=1e-6)[:, None])
    return (4,), [x, mx, mn, am, mad, unit, m, n, n, 48], dict(BLOCK_M=4, BLOCK_N=64), dict(x_ptr=x), \
        dict(max_ptr=mx, min_ptr=mn, mad_ptr=mad, unit_ptr=unit[:, :n]), ref


@case("mean_dim1_transposed_strides", mean_dim.mean_dim1_kernel, ["x_ptr"], ["out_ptr"])
def _(g):
    b, m, n = 3, 37, 70
    x = leaf(b, n, m, gen=g)  # memory [B, N, M]; the kernel reads [B, M, N] through strides
    out = torch.empty(b, n)
    return (b, cdiv(n, 32)), [x, out, m, n, n * m, 1, m, n, 1], dict(BLOCK_M=16, BLOCK_N=32), dict(x_ptr=x), \
        dict(out_ptr=out), lambda t: dict(out_ptr=t["x_ptr"].transpose(1, 2).mean(1))


@case("head_affine_3d_grid", head_affine_3d.head_affine_kernel, ["x_ptr", "w_ptr", "bias_ptr"], ["y_ptr"])
def _(g):
    b, h, L = 2, 3, 300
    x, w, bias = leaf(b, h, L, gen=g), leaf(h, gen=g), leaf(h, gen=g)
    y = torch.empty(b, h, 320)
    return (cdiv(L, 128), h, b), [x, w, bias, y, L, h * L, L, h * 320, 320], dict(BLOCK_L=128), \
        dict(x_ptr=x, w_ptr=w, bias_ptr=bias), dict(y_ptr=y[:, :, :L]), \
        lambda t: dict(y_ptr=t["x_ptr"] * t["w_ptr"][None, :, None] + t["bias_ptr"][None, :, None])


@case("box_filter3x3", box_filter.box_filter3x3_kernel, ["src_ptr"], ["dst_ptr"])
def _(g):
    H, W = 37, 45
    x, y = leaf(H, W, gen=g), torch.empty(H, 48)
    return (cdiv(H, 16), cdiv(W, 32)), [x, y, H, W, W, 48], dict(BLOCK_H=16, BLOCK_W=32), dict(src_ptr=x), \
        dict(dst_ptr=y[:, :W]), lambda t: dict(dst_ptr=F.avg_pool2d(t["src_ptr"][None], 3, 1, 1, True)[0] * 1.0)


@case("transpose", transpose.transpose_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x, y = leaf(50, 70, gen=g), torch.empty(70, 56)  # y's row stride 56 > its 50 columns
    return (2, 3), [x, y, 50, 70, 70, 56], dict(BLOCK_M=32, BLOCK_N=32), dict(x_ptr=x), dict(y_ptr=y[:, :50]), \
        lambda t: dict(y_ptr=t["x_ptr"].T)


@case("group_sum_reshape_permute", group_sum.group_sum_kernel, ["x_ptr"], ["out_ptr"])
def _(g):
    x, out = leaf(20, 32, gen=g), torch.empty(4, 24)
    return (2,), [x, out, 20, 32, 24], dict(GROUPS=4, GROUP_SIZE=8, BLOCK_M=16), dict(x_ptr=x), \
        dict(out_ptr=out[:, :20]), lambda t: dict(out_ptr=t["x_ptr"].reshape(20, 4, 8).sum(2).T)


@case("fused_bias_silu_helper_module", fused_bias_act.bias_act_kernel, ["x_ptr", "bias_ptr"], ["y_ptr"])
def _(g):
    x, b, y = leaf(50, 100, gen=g), leaf(100, gen=g), torch.empty(50, 104)
    return (2, 2), [x, b, y, 50, 100, 100, 104], dict(ACTIVATION="silu", BLOCK_M=32, BLOCK_N=64), \
        dict(x_ptr=x, bias_ptr=b), dict(y_ptr=y[:, :100]), lambda t: dict(y_ptr=F.silu(t["x_ptr"] + t["bias_ptr"]))


@case("matmul_relu_tf32", matmul.matmul_kernel, ["a_ptr", "b_ptr"], ["c_ptr"], tol=1e-2)
def _(g):
    m, n, k = 40, 40, 64
    a, b, c = leaf(m, k, gen=g), leaf(k, n, gen=g), torch.empty(m, n)
    grid = lambda META: (cdiv(m, META["BLOCK_M"]) * cdiv(n, META["BLOCK_N"]),)  # noqa: E731 (autotuned)
    return grid, [a, b, c, m, n, k, k, 1, n, 1, n, 1], dict(ACTIVATION="relu"), dict(a_ptr=a, b_ptr=b), \
        dict(c_ptr=c), lambda t: dict(c_ptr=torch.relu(t["a_ptr"] @ t["b_ptr"]))


@case("linear_attention_intra", linear_attention.chunk_linear_attn_intra_kernel, ["q_ptr", "k_ptr", "v_ptr"],
      ["o_ptr"], tol=1e-2)
def _(g):
    bh, T, bt, kd, vd = 2, 32, 16, 16, 16
    q, k, v, o = leaf(bh, T, kd, gen=g), leaf(bh, T, kd, gen=g), leaf(bh, T, vd, gen=g), torch.empty(bh, T, vd)

    def ref(t):
        s = t["q_ptr"] @ t["k_ptr"].transpose(1, 2) * 0.25
        i = torch.arange(T)
        causal = (i[:, None] >= i[None, :]) & ((i[:, None] // bt) == (i[None, :] // bt))
        return dict(o_ptr=torch.where(causal, s, 0.0) @ t["v_ptr"])
    return (cdiv(T, bt), bh), [q, k, v, o, 0.25, T, T * kd, kd, T * vd, vd], dict(BT=bt, K=kd, V=vd), \
        dict(q_ptr=q, k_ptr=k, v_ptr=v), dict(o_ptr=o), ref


def close(a, b, tol):
    a, b = a.detach().double(), b.detach().double()
    return (a - b).abs().max().item() <= tol * b.abs().max().item() + 1e-6


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_corpus_kernel_backward_matches_torch(c):
    g = torch.Generator().manual_seed(0)
    k = kad.differentiable(inputs=c.inputs, outputs=c.outputs)(c.fn)
    with torch.device(DEVICE):
        grid, args, kwargs, leaves, views, ref = c.setup(g)
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


def test_every_differentiable_corpus_kernel_is_covered():
    import triton
    covered = {c.fn.fn.__name__ for c in CASES}
    refused = {"cross_entropy_fwd_kernel", "softmax_online_exp2_kernel", "axpby_kernel", "colsum_split_kernel",
               "scale_shift_persistent_kernel", "histogram_kernel"}
    kernels = set()
    for f in sorted(os.listdir(os.path.join(os.path.dirname(HERE), "kernels"))):
        if f.endswith(".py") and not f.startswith("_"):
            mod = __import__(f"kernels.{f[:-3]}", fromlist=["_"])
            kernels |= {n for n, o in vars(mod).items()
                        if n.endswith("_kernel") and isinstance(o, triton.runtime.jit.JITFunction)}
    assert kernels - covered - refused == set()


@pytest.mark.parametrize("fn,inputs,outputs,message", [
    (lambda: __import__("kernels.cross_entropy", fromlist=["x"]).cross_entropy_fwd_kernel, ["logits_ptr"],
     ["loss_ptr"], "not a linear accumulator"),
    (lambda: __import__("kernels.softmax_exp2", fromlist=["x"]).softmax_online_exp2_kernel, ["x_ptr"],
     ["y_ptr"], "not a linear accumulator"),
])
def test_refused_corpus_kernels(fn, inputs, outputs, message):
    k = kad.differentiable(inputs=inputs, outputs=outputs)(fn())
    if "logits_ptr" in inputs:
        x = torch.randn(4, 300, requires_grad=True)
        args = [x, torch.zeros(4, dtype=torch.int64), torch.empty(4), torch.empty(4), 300, 300, -100]
        kw = dict(BLOCK_SIZE=128)
    else:
        x = torch.randn(3, 700, requires_grad=True)
        args = [x, torch.empty(3, 704), 700, 704, 700]
        kw = dict(BLOCK_N=256)
    with pytest.raises(kad.KadError, match=message) as e:
        k[(x.shape[0],)](*args, **kw)
    assert ".py:" in str(e.value) and "^" in str(e.value)  # file:line:col, the line, a caret
