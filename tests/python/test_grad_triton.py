"""Execution test of the backward module (docs/GRAD.md): kad's Triton gradients vs PyTorch autograd.

For every differentiable corpus kernel (tests/python/corpus.py; the table GRADS below says which
pointers are differentiated inputs and outputs), `kad grad` prints the backward module; the test
imports it, runs the original forward kernel and then the backward through
`launch_<kernel>_bwd(grid, *runtime_args, *d_outs, *d_ins, **constexprs)`, both on Triton's CPU
interpreter (TRITON_INTERPRET=1) with CPU torch tensors, and compares the input gradients with
PyTorch autograd of the same math written plainly in torch, in float64, on the same (rounded)
inputs.  The torch references are the independent check: they are written from the math, not from
the kernel or from kad's IR, and the forward outputs of the original kernel are compared with them
too (so a reference that does not describe the kernel fails loudly).

Objective: L = sum over outputs y of <y, dy> over the elements the forward writes, dy random
(rounded to the output's dtype); the input gradient buffers start filled with NaN (the launcher
zero-fills each one unless the launch provably writes every element: docs/GRAD.md), the output
gradients are read only where the forward stores.

Tolerances (|got - want| <= rtol*|want| + atol*max|want|, per input):
  fp32   rtol 1e-4, atol 1e-5   fp32 arithmetic against float64: reductions over a few hundred
                                 elements and atomic accumulation across programs stay within a
                                 few hundred ulps of the largest gradient.
  fp16   rtol 4e-3, atol 4e-3   the gradient is rounded to fp16 (2^-11) at each atomic_add, and
                                 a few programs add into the same element.
  bf16   rtol 3e-2, atol 3e-2   the same with bf16's 2^-8 (GPU only, see below).
  TF32 dots on the GPU (fp32 dots at default precision: matmul_fp32_relu_tf32,
  linear_attention_intra_fp32): rtol 4e-3, atol 4e-3, TF32 keeping 10 mantissa bits of each
  operand of the forward and the adjoint dots.
Elements at a kink of the math (relu/clamp at its threshold) are left out of the comparison: there
the gradient is a convention, not a derivative.

Triton's interpreter has no libdevice: the functions kernels use get numpy stand-ins while this
module's tests run, the only time interpreter mode is in force (triton_cpu.py).  Its bf16
arithmetic is wrong (numpy has no bf16), so bf16 cases are skipped on the CPU with a printed
reason; the GPU run covers them.

With KAD_GRAD_TEST_DEVICE=cuda the same tests compile the modules with Triton and run on a GPU.
Skipped when torch or triton is not installed.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import harness  # noqa: E402
import kadnum  # noqa: E402
import triton_cpu  # noqa: E402
from corpus import CASES, parse_sig  # noqa: E402
from triton_cpu import const_value, load_module  # noqa: E402

DEVICE = triton_cpu.device_from_env("KAD_GRAD_TEST_DEVICE", "KAD_EMIT_TEST_DEVICE")

F = torch.nn.functional


@pytest.fixture(scope="module", autouse=True)
def _triton_interpreter():
    with triton_cpu.interpreter(DEVICE):
        yield


# ---------------------------------------------------------------- torch references
#
# ref(v) -> {output: (index, values)}: v maps every runtime parameter to a float64 tensor of the
# buffer's shape (the rounded inputs; differentiated ones require grad) or to its scalar value;
# `values` is what the forward writes at buffer[index].

ALL = np.s_[...]


def _gelu(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1 + torch.tanh((2 / np.pi) ** 0.5 * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + torch.erf(x / 2**0.5))


def _softplus(v):
    x, beta, thr = v["x_ptr"], v["beta"], v["threshold"]
    bx = beta * x
    soft = torch.log1p(torch.exp(torch.clamp(bx, max=thr))) / beta
    return {"y_ptr": (ALL, torch.where(bx > thr, x, soft))}


def _dropout(v):
    x, p = v["x_ptr"], v["p"]
    keep = torch.from_numpy(kadnum.philox_uniform(v["seed"], np.arange(x.numel())) > p)
    return {"out_ptr": (ALL, torch.where(keep, x / (1 - p), torch.zeros_like(x)))}


def _softmax(v):
    n = v["n_cols"]
    return {"output_ptr": (np.s_[:, :n], torch.softmax(v["input_ptr"][:, :n], dim=1))}


def _softmax_exp2(v):
    n = v["n_cols"]
    return {"y_ptr": (np.s_[:, :n], torch.softmax(v["x_ptr"][:, :n], dim=1))}


def _cross_entropy(v):
    n, ignore = v["n_cols"], v["ignore_index"]
    z = v["logits_ptr"][:, :n]
    lse = torch.logsumexp(z, dim=1)
    labels = torch.as_tensor(v["labels_ptr"]).long()
    target = z.gather(1, labels.clamp(min=0)[:, None])[:, 0]
    return {"loss_ptr": (ALL, torch.where(labels == ignore, torch.zeros_like(lse), lse - target)),
            "lse_ptr": (ALL, lse)}


def _log_softmax(v):
    rows, n = v["n_rows"], v["n_cols"]
    return {"y_ptr": (np.s_[:rows, :n], torch.log_softmax(v["x_ptr"][:rows, :n], dim=1))}


def _layer_norm(v):
    n = v["N"]
    x = v["X"][:, :n]
    mean = x.mean(dim=1)
    var = ((x - mean[:, None]) ** 2).mean(dim=1)
    rstd = 1 / torch.sqrt(var + v["eps"])
    y = (x - mean[:, None]) * rstd[:, None] * v["W"] + v["B"]
    return {"Y": (np.s_[:, :n], y), "Mean": (ALL, mean), "Rstd": (ALL, rstd)}


def _rms_norm(v):
    n = v["n_cols"]
    x = v["x_ptr"][:, :n]
    rstd = 1 / torch.sqrt((x * x).mean(dim=1) + v["eps"])
    return {"y_ptr": (np.s_[:, :n], x * rstd[:, None] * v["w_ptr"]), "rstd_ptr": (ALL, rstd)}


def _minmax(v):
    n = v["n_cols"]
    x = v["x_ptr"][:, :n]
    lo, hi = x.amin(dim=1, keepdim=True), x.amax(dim=1, keepdim=True)
    unit = (x - lo) / (hi - lo + v["eps"])
    return {"y_ptr": (np.s_[:, :n], unit * (v["new_hi"] - v["new_lo"]) + v["new_lo"])}


def _swiglu(v):
    n = v["n_cols"]
    a, b = v["a_ptr"][:, :n], v["b_ptr"][:, :n]
    return {"c_ptr": (np.s_[:, :n], a * torch.sigmoid(a) * b)}


def _geglu(v):
    n = v["n_cols"]
    a, b = v["a_ptr"][:, :n], v["b_ptr"][:, :n]
    return {"c_ptr": (np.s_[:, :n], _gelu(a, "tanh") * b)}


def _bias_add(v):
    n = v["n_cols"]
    return {"y_ptr": (np.s_[:, :n], v["x_ptr"][:, :n] + v["b_ptr"][None, :])}


def _cumsum(reverse):
    def ref(v):
        rows, n = v["n_rows"], v["n_cols"]
        x = v["x_ptr"][:rows, :n]
        y = torch.flip(torch.cumsum(torch.flip(x, [1]), 1), [1]) if reverse else torch.cumsum(x, 1)
        return {"y_ptr": (np.s_[:rows, :n], y)}
    return ref


def _lin_rec(reverse):
    # h_t = a_t * h_{t-1} + b_t (reverse: h_{t+1}) from h = 0: a plain loop over time
    def ref(v):
        T, D = v["T"], v["D"]
        a, b = v["a_ptr"][:, :D], v["b_ptr"][:, :D]
        h, out = torch.zeros(D, dtype=torch.float64), [None] * T
        for t in (reversed(range(T)) if reverse else range(T)):
            h = a[t] * h + b[t]
            out[t] = h
        return {"h_ptr": (np.s_[:T, :D], torch.stack(out))}
    return ref


def _chunked_ssm(v):
    T, D = v["T"], v["D"]
    a, x = v["a_ptr"], v["x_ptr"]
    h, out = torch.zeros(D, dtype=torch.float64), []
    for t in range(T):
        h = a[t] * h + (1 - a[t]) * x[t]
        out.append(h)
    return {"h_ptr": (ALL, torch.stack(out))}


def _rows_scan(f):
    def ref(v):
        return {"y_ptr": (ALL, f(v["x_ptr"]))}
    return ref


def _welford(v):
    var, mean = torch.var_mean(v["x_ptr"], 1, correction=1)
    return {"var_ptr": (ALL, var), "mean_ptr": (ALL, mean)}


def _lse_rows(v):
    return {"y_ptr": (ALL, torch.logsumexp(v["x_ptr"], 1).sum().reshape(1))}


def _methods(v):
    x = v["x_ptr"]
    return {"y_ptr": (ALL, x.sum(1) + (x * x).amax(1)), "c_ptr": (ALL, x.cumsum(1))}


def _row_sum(v):
    return {"out_ptr": (ALL, v["x_ptr"][:, :v["N"]].sum(dim=1))}


def _row_stats(v):
    x = v["x_ptr"][:, :v["N"]]
    hi, lo = x.amax(dim=1), x.amin(dim=1)
    mid = (hi + lo) / 2
    unit = (x - lo[:, None]) / torch.clamp(hi - lo, min=1e-6)[:, None]
    return {"max_ptr": (ALL, hi), "min_ptr": (ALL, lo),
            "mad_ptr": (ALL, (x - mid[:, None]).abs().mean(dim=1)),
            "unit_ptr": (np.s_[:, :v["N"]], unit)}


def _mean_dim(transposed):
    def ref(v):
        x = v["x_ptr"].transpose(1, 2) if transposed else v["x_ptr"]  # [B, M, N]
        return {"out_ptr": (ALL, x.mean(dim=1))}
    return ref


def _head_affine(v):
    L = v["L"]
    y = v["x_ptr"] * v["w_ptr"][None, :, None] + v["bias_ptr"][None, :, None]
    return {"y_ptr": (np.s_[:, :, :L], y)}


def _box_filter(v):
    H, W = v["H"], v["W"]
    p = F.pad(v["src_ptr"], (1, 1, 1, 1))
    acc = sum(p[1 + dy:1 + dy + H, 1 + dx:1 + dx + W] for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    return {"dst_ptr": (np.s_[:, :W], acc / 9)}


def _transpose(v):
    return {"y_ptr": (np.s_[:, :v["M"]], v["x_ptr"].T)}


def _group_sum(v):
    m = v["M"]
    x = v["x_ptr"]
    return {"out_ptr": (np.s_[:, :m], x.reshape(m, 4, 8).sum(dim=2).T)}


def _split_k_colsum(v):
    # out += column sums of x, by atomic_add: the output's initial contents are a constant
    return {"out_ptr": (ALL, v["out_ptr"] + v["x_ptr"].sum(dim=0))}


def _bias_act(act):
    def ref(v):
        h = v["x_ptr"] + v["bias_ptr"][None, :]
        y = h * torch.sigmoid(h) if act == "silu" else torch.relu(h) ** 2
        return {"y_ptr": (np.s_[:, :v["N"]], y)}
    return ref


def _matmul(act, b_transposed):
    def ref(v):
        b = v["b_ptr"].T if b_transposed else v["b_ptr"]
        c = v["a_ptr"] @ b
        if act == "leaky_relu":
            c = torch.where(c >= 0, c, 0.01 * c)
        elif act == "relu":
            c = torch.relu(c)
        elif act == "fast_gelu":
            c = c * torch.sigmoid(1.702 * c)
        return {"c_ptr": (ALL, c)}
    return ref


def _linear_attention(v):
    T, scale = v["T"], v["scale"]
    q, k, vv = v["q_ptr"], v["k_ptr"], v["v_ptr"]  # [BH, T, K], [BH, T, K], [BH, T, V]
    t = torch.arange(T)
    causal = (t[:, None] >= t[None, :]) & ((t[:, None] // 16) == (t[None, :] // 16))
    s = torch.where(causal, (q @ k.transpose(1, 2)) * scale, torch.zeros(()))
    return {"o_ptr": (ALL, s @ vv)}


def _ew(out, fn):
    """An elementwise kernel: out = fn(x)."""
    return lambda v: {out: (ALL, fn(v["x_ptr"], v))}


def _kinks(*points):
    """Excludes inputs x_ptr within 1e-6 of the given points (the gradient there is a convention)."""
    return lambda v: {"x_ptr": np.any([np.abs(v["x_ptr"] - p) < 1e-6 for p in points], axis=0)}


def _complex_mul(v):
    x, y = v["x_ptr"].view(-1, 2), v["y_ptr"].view(-1, 2)
    zr = x[:, 0] * y[:, 0] - x[:, 1] * y[:, 1]
    zi = x[:, 0] * y[:, 1] + x[:, 1] * y[:, 0]
    return {"z_ptr": (ALL, torch.stack([zr, zi], dim=1).reshape(-1))}


def _rotary_half(v):
    x, c, s = v["x_ptr"], v["cos_ptr"], v["sin_ptr"]
    h = x.shape[1] // 2
    x1, x2 = x[:, :h], x[:, h:]
    return {"y_ptr": (ALL, torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=1))}


def _embed_gather(v):
    ids = torch.as_tensor(v["ids_ptr"]).long()
    return {"out_ptr": (ALL, F.embedding(ids, v["table_ptr"]) * v["scale_ptr"][:, None])}


def _gather_cols(v):
    return {"y_ptr": (ALL, torch.gather(v["x_ptr"], 1, torch.as_tensor(v["perm_ptr"]).long()) ** 2)}


def _flip_mix(v):
    x = v["x_ptr"]
    return {"y_ptr": (ALL, torch.flip(x, [2]) * v["w_ptr"] + torch.flip(x, [1]) * torch.sin(x))}


def _sort_topk(desc):
    def ref(v):
        x = v["x_ptr"]
        y = torch.sort(x * x + x, dim=1, descending=desc).values
        t = torch.topk(torch.exp(x), v["t_ptr"].shape[1], dim=1).values
        return {"y_ptr": (ALL, y * torch.arange(x.shape[1], dtype=x.dtype)), "t_ptr": (ALL, t)}
    return ref


# case id prefix -> (wrt, outs, reference, kinks or None)
GRADS = {
    "vector_add": ("x_ptr,y_ptr", "out_ptr",
                   lambda v: {"out_ptr": (ALL, v["x_ptr"] + v["y_ptr"])}, None),
    "relu": ("x_ptr", "y_ptr", _ew("y_ptr", lambda x, v: torch.relu(x)), _kinks(0)),
    "gelu_none": ("x_ptr", "y_ptr", _ew("y_ptr", lambda x, v: _gelu(x, "none")), None),
    "gelu_tanh": ("x_ptr", "y_ptr", _ew("y_ptr", lambda x, v: _gelu(x, "tanh")), None),
    "silu": ("x_ptr", "out_ptr", _ew("out_ptr", lambda x, v: x * torch.sigmoid(x)), None),
    "leaky_relu_slope_0.2": ("x_ptr", "y_ptr",
                             _ew("y_ptr", lambda x, v: torch.where(x >= 0, x, 0.2 * x)), _kinks(0)),
    "leaky_relu_defaults": ("x_ptr", "y_ptr",
                            _ew("y_ptr", lambda x, v: torch.where(x >= 0, x, 0.01 * x)), _kinks(0)),
    "softplus": ("x_ptr", "y_ptr", _softplus, None),
    "clamp_fp32": ("x_ptr", "y_ptr", _ew("y_ptr", lambda x, v: torch.clamp(x, v["lo"], v["hi"])),
                   _kinks(-0.5, 0.75)),
    "relu6": ("x_ptr", "y_ptr", _ew("y_ptr", lambda x, v: torch.clamp(x, 0, 6)), _kinks(0, 6)),
    "cast_scale": ("x_ptr", "y_ptr", _ew("y_ptr", lambda x, v: x * v["scale"]), None),
    "dropout": ("x_ptr", "out_ptr", _dropout, None),
    "persistent_scale_while": ("x_ptr", "y_ptr", _ew("y_ptr", lambda x, v: v["alpha"] * x + v["beta"]),
                               None),
    "softmax_fp": ("input_ptr", "output_ptr", _softmax, None),
    "log_softmax": ("x_ptr", "y_ptr", _log_softmax, None),
    "softmax_exp2": ("x_ptr", "y_ptr", _softmax_exp2, None),  # online softmax: a tape
    "cross_entropy": ("logits_ptr", "loss_ptr,lse_ptr", _cross_entropy, None),  # online logsumexp: a tape
    "layer_norm": ("X,W,B", "Y,Mean,Rstd", _layer_norm, None),
    "rms_norm": ("x_ptr,w_ptr", "y_ptr,rstd_ptr", _rms_norm, None),
    "minmax_scale": ("x_ptr", "y_ptr", _minmax, None),
    "swiglu": ("a_ptr,b_ptr", "c_ptr", _swiglu, None),
    "geglu": ("a_ptr,b_ptr", "c_ptr", _geglu, None),
    "bias_add": ("x_ptr,b_ptr", "y_ptr", _bias_add, None),
    "cumsum_fp32_forward": ("x_ptr", "y_ptr", _cumsum(False), None),
    "cumsum_fp16_reverse": ("x_ptr", "y_ptr", _cumsum(True), None),
    "row_sum": ("x_ptr", "out_ptr", _row_sum, None),
    "row_stats": ("x_ptr", "max_ptr,min_ptr,mad_ptr,unit_ptr", _row_stats, None),
    "mean_dim1_strided": ("x_ptr", "out_ptr", _mean_dim(True), None),
    "mean_dim1_contiguous": ("x_ptr", "out_ptr", _mean_dim(False), None),
    "head_affine": ("x_ptr,w_ptr,bias_ptr", "y_ptr", _head_affine, None),
    "box_filter": ("src_ptr", "dst_ptr", _box_filter, None),
    "transpose_fp32": ("x_ptr", "y_ptr", _transpose, None),
    "group_sum": ("x_ptr", "out_ptr", _group_sum, None),
    "split_k_colsum": ("x_ptr", "out_ptr", _split_k_colsum, None),
    "fused_bias_silu": ("x_ptr,bias_ptr", "y_ptr", _bias_act("silu"), None),
    "fused_bias_squared_relu": ("x_ptr,bias_ptr", "y_ptr", _bias_act("squared_relu"), None),
    "matmul_fp16_leaky_relu": ("a_ptr,b_ptr", "c_ptr", _matmul("leaky_relu", False), None),
    "matmul_fp16_in_fp32_out": ("a_ptr,b_ptr", "c_ptr", _matmul("", False), None),
    "matmul_fp32_relu_tf32": ("a_ptr,b_ptr", "c_ptr", _matmul("relu", False), None),
    "matmul_fp16_fast_gelu_bT": ("a_ptr,b_ptr", "c_ptr", _matmul("fast_gelu", True), None),
    "linear_attention": ("q_ptr,k_ptr,v_ptr", "o_ptr", _linear_attention, None),
    "linear_recurrence_forward": ("a_ptr,b_ptr", "h_ptr", _lin_rec(False), None),
    "linear_recurrence_reverse": ("a_ptr,b_ptr", "h_ptr", _lin_rec(True), None),
    "chunked_ssm": ("a_ptr,x_ptr", "h_ptr", _chunked_ssm, None),
    "scan_add_forward": ("x_ptr", "y_ptr", _rows_scan(lambda x: x.cumsum(1)), None),
    "scan_add_reverse": ("x_ptr", "y_ptr", _rows_scan(lambda x: x.flip(1).cumsum(1).flip(1)), None),
    "cumprod_zeros_forward": ("x_ptr", "y_ptr", _rows_scan(lambda x: x.cumprod(1)), None),
    "cumprod_zeros_reverse": ("x_ptr", "y_ptr", _rows_scan(lambda x: x.flip(1).cumprod(1).flip(1)), None),
    "running_max": ("x_ptr", "y_ptr", _rows_scan(lambda x: torch.cummax(x, 1).values), None),
    "scan_mul": ("x_ptr", "y_ptr", _rows_scan(lambda x: x.cumprod(1)), None),  # the general scan rule
    "cummax_index_forward": ("x_ptr", "y_ptr", _rows_scan(lambda x: torch.cummax(x, 1).values), None),
    "cummax_index_reverse": ("x_ptr", "y_ptr", _rows_scan(lambda x: torch.cummax(x.flip(1), 1).values.flip(1)),
                             None),
    "reduce_welford_5x19": ("x_ptr", "var_ptr,mean_ptr", _welford, None),
    "reduce_welford_3x40": ("x_ptr", "var_ptr,mean_ptr", _welford, None),
    "reduce_logsumexp_rows": ("x_ptr", "y_ptr", _lse_rows, None),
    "reduce_method_forms": ("x_ptr", "y_ptr,c_ptr", _methods, None),
    "complex_mul_interleaved": ("x_ptr,y_ptr", "z_ptr", _complex_mul, None),
    "rotary_half_split_join": ("x_ptr,cos_ptr,sin_ptr", "y_ptr", _rotary_half, None),
    "embed_gather_tile": ("table_ptr,scale_ptr", "out_ptr", _embed_gather, None),
    "gather_cols_repeats": ("x_ptr", "y_ptr", _gather_cols, None),
    "flip_mix": ("x_ptr,w_ptr", "y_ptr", _flip_mix, None),
    "sort_topk_asc": ("x_ptr", "y_ptr,t_ptr", _sort_topk(False), None),
    "sort_topk_desc": ("x_ptr", "y_ptr,t_ptr", _sort_topk(True), None),
}

# Corpus kernels kad refuses to differentiate, with the reason its error must give.
REFUSED = {
    "axpby_beta0": ("x_ptr", "y_ptr", "load from output 'y_ptr'"),  # y = a*x + b*y reads y
    "histogram_atomic_add": ("x_ptr", "hist_ptr", "hist_ptr"),  # integer counts
}

# Corpus cases with nothing to differentiate (integer data, or in/out buffers only).
NOT_DIFFERENTIABLE = {"axpby_beta_half", "histogram_atomic_add", "transpose_i32", "axpby_beta0",
                      "histogram_tile_masked"}

TF32_CASES = {"matmul_fp32_relu_tf32", "linear_attention_intra_fp32"}

# Cases whose launcher proves it writes every element of these gradients (access_cover.c, or a
# folded weight given dense: its sum kernel stores every element) and skips their zero-fill; the
# others it zero-fills: a padded row stride (softmax_fp32, geglu_fp32, bias_add_fp32), atomics,
# read-modify-writes.
SKIPS_ZERO_FILL = {
    "vector_add_fp32": ["x_ptr", "y_ptr"], "swiglu_fp32": ["a_ptr", "b_ptr"],
    "softmax_fp16": ["input_ptr"], "softmax_fp32": [], "rms_norm_fp32": ["w_ptr", "x_ptr"],
    "geglu_fp32": [], "bias_add_fp32": ["b_ptr"], "bias_add_fp16": ["b_ptr", "x_ptr"], "transpose_fp32": ["x_ptr"],
    "cumsum_fp32_forward": ["x_ptr"], "layer_norm_chunked": ["B", "W", "X"],
    "log_softmax_early_return": ["x_ptr"], "mean_dim1_contiguous_fp16": ["x_ptr"],
}


def grad_spec(case_id):
    """The GRADS entry of the longest prefix of case_id (relu6_fp16 is relu6, not relu)."""
    best = max((p for p in GRADS if case_id.startswith(p)), key=len, default=None)
    return GRADS[best] if best else None


def test_every_corpus_case_is_classified():
    unclassified = [c.id for c in CASES if grad_spec(c.id) is None and c.id not in NOT_DIFFERENTIABLE]
    assert not unclassified, f"add these corpus cases to GRADS or NOT_DIFFERENTIABLE: {unclassified}"


# ---------------------------------------------------------------- running


def kad_grad(case, wrt, outs):
    args = ["grad", f"tests/kernels/{case.file}:{case.kernel}", "--sig", case.sig,
            "--wrt", wrt, "--out", outs]
    for e in case.extra:
        args += ["--include", f"tests/kernels/{e}"]
    return triton_cpu.run_kad(args)


def to_torch(buf):
    return triton_cpu.to_torch(buf, DEVICE)


def tolerance(case, dt):
    if DEVICE != "cpu" and case.id in TF32_CASES:
        return 4e-3, 4e-3
    return {"fp32": (1e-4, 1e-5), "fp16": (4e-3, 4e-3), "bf16": (3e-2, 3e-2)}[dt]


DIFF_CASES = [c for c in CASES if grad_spec(c.id) is not None]


@pytest.mark.parametrize("case", DIFF_CASES, ids=[c.id for c in DIFF_CASES])
def test_gradients_match_torch(case, tmp_path):
    wrt_s, outs_s, ref, kinks = grad_spec(case.id)
    wrt, outs = wrt_s.split(","), outs_s.split(",")
    params = parse_sig(case.sig)
    dtypes = {n: t for n, k, t in params if k == "ptr"}
    if DEVICE == "cpu" and any(dtypes[n] == "bf16" for n in wrt + outs):
        msg = "Triton's interpreter computes bf16 wrongly (numpy has no bf16): covered on the GPU"
        print(f"SKIP {case.id}: {msg}")
        pytest.skip(msg)

    p = kad_grad(case, wrt_s, outs_s)
    assert p.returncode == 0, f"kad grad failed:\n{p.stderr}"
    path = tmp_path / f"{case.kernel}_bwd.py"
    path.write_text(p.stdout)
    bwd = load_module(str(path), f"kad_bwd_{case.id.replace('.', '_')}")
    launch_bwd = getattr(bwd, f"launch_{case.kernel}_bwd")

    prep = harness.prepare(case, "as_written")
    runtime = [n for n, _, _ in prep.runtime]
    consts = {n: const_value(t) for n, t in prep.consts.items()}
    args = {n: to_torch(v) if isinstance(v, np.ndarray) else v for n, v in prep.args.items()}

    # forward: the original kernel
    original = getattr(triton_cpu.corpus_module(case.file), case.kernel)
    triton_cpu.launch(original, case.grid, {n: args[n] for n in runtime}, consts, DEVICE)

    # the torch reference, in float64 on the rounded inputs
    v = {}
    for n in runtime:
        if isinstance(prep.values[n], np.ndarray):
            v[n] = torch.tensor(prep.values[n], dtype=torch.float64, requires_grad=n in wrt)
        else:
            v[n] = prep.values[n]
    want = ref(v)
    assert sorted(want) == sorted(outs)
    rng = np.random.default_rng(harness.case_seed(case) + 1)
    loss, d_outs = 0, []
    for n in outs:
        index, val = want[n]
        got = kadnum.decode(prep.args[n], dtypes[n], "as_written") if DEVICE == "cpu" else \
            args[n].cpu().to(torch.float64).numpy()
        rtol, atol = tolerance(case, dtypes[n])
        exp = val.detach().numpy()
        scale = np.abs(exp).max() if exp.size else 0.0
        assert np.all(np.abs(got[index] - exp) <= rtol * np.abs(exp) + atol * scale + 1e-30), \
            f"forward output {n} differs from the torch reference: the reference is wrong"
        dy = kadnum.quantize(rng.standard_normal(prep.values[n].shape), dtypes[n])
        loss = loss + (val * torch.from_numpy(dy)[index]).sum()
        d_outs.append(to_torch(kadnum.encode(dy, dtypes[n], "as_written")))
    grads = torch.autograd.grad(loss, [v[n] for n in wrt], allow_unused=True)

    # backward: through the module's launcher, gradient buffers filled with NaN (they need no
    # initialization: the launcher zero-fills each one unless the launch writes all of it)
    d_ins = [torch.full_like(args[n], float("nan")) for n in wrt]
    with triton_cpu.calls_of(torch.Tensor, "zero_") as zeroed:
        launch_bwd(case.grid, *[args[n] for n in runtime], *d_outs, *d_ins, **consts)
    filled = [n for (t,) in zeroed for n, d in zip(wrt, d_ins) if d is t]
    if DEVICE != "cpu":
        torch.cuda.synchronize()
    if case.id in SKIPS_ZERO_FILL:
        assert sorted(set(wrt) - set(filled)) == SKIPS_ZERO_FILL[case.id], \
            f"the launcher zero-filled {sorted(filled)}\nmodule:\n{p.stdout}"

    excluded = kinks(prep.values) if kinks else {}
    for n, d, g in zip(wrt, d_ins, grads):
        got = d.cpu().to(torch.float64).numpy()
        exp = np.zeros(got.shape) if g is None else g.numpy()
        rtol, atol = tolerance(case, dtypes[n])
        bad = np.abs(got - exp) > rtol * np.abs(exp) + atol * np.abs(exp).max()
        bad |= np.isnan(got)
        if n in excluded:
            bad &= ~excluded[n]
        if bad.any():
            k = np.flatnonzero(bad.reshape(-1))
            pytest.fail(f"d_{n}: {bad.sum()} of {bad.size} elements differ from torch autograd, "
                        f"e.g. at flat {k[:5]}: kad {got.reshape(-1)[k[:5]]} torch {exp.reshape(-1)[k[:5]]}"
                        f"\nmodule:\n{p.stdout}")


@pytest.mark.parametrize("case_id", sorted(REFUSED))
def test_refused_with_a_located_error(case_id):
    case = next(c for c in CASES if c.id == case_id)
    wrt, outs, reason = REFUSED[case_id]
    p = kad_grad(case, wrt, outs)
    assert p.returncode == 1 and p.stdout == ""
    assert f"tests/kernels/{case.file}:" in p.stderr and ": error: " in p.stderr, p.stderr
    assert reason in p.stderr, p.stderr


def test_launcher_contract(tmp_path):
    """The launcher checks its arguments and constexprs, and passes num_warps/num_stages on."""
    case = next(c for c in CASES if c.id == "softmax_fp32")
    p = kad_grad(case, "input_ptr", "output_ptr")
    assert p.returncode == 0, p.stderr
    text = p.stdout
    assert "# Backward of the Triton kernel softmax_kernel, generated by kad " in text
    assert "BLOCK_SIZE=128" in text and "tl.atomic_add" in text and "deterministic" in text
    assert ("def softmax_kernel_bwd(\n    output_ptr,\n    input_ptr,\n    input_row_stride,\n"
            "    output_row_stride,\n    n_cols,\n    BLOCK_SIZE: tl.constexpr,\n    d_output_ptr,\n"
            "    d_input_ptr,\n    plain_d_input_ptr: tl.constexpr,\n):") in text
    # the flag is computed by the launcher from the arguments and the grid
    assert "flags = [bool(" in text and "args = [*args, *flags]" in text and '_a["input_row_stride"] >= _a["n_cols"]' in text
    path = tmp_path / "bwd.py"
    path.write_text(text)
    mod = load_module(str(path), "kad_bwd_contract")
    launch = mod.launch_softmax_kernel_bwd
    with pytest.raises(TypeError, match="expected 7 arguments"):
        launch((1,), 1, 2, 3)
    with pytest.raises(ValueError, match="specialized for BLOCK_SIZE=128"):
        launch((1,), *range(7), BLOCK_SIZE=256)
    with pytest.raises(TypeError, match="unexpected keyword 'BLOCK'"):
        launch((1,), *range(7), BLOCK=128)
    # a real launch with the forward's launch options
    x = torch.randn(2, 16, device=DEVICE)
    dy = torch.randn(2, 16, device=DEVICE)
    dx = torch.zeros_like(x)
    launch((2,), torch.empty_like(x), x, 16, 16, 16, dy, dx, BLOCK_SIZE=128, num_warps=4, num_stages=2)
    if DEVICE != "cpu":
        torch.cuda.synchronize()
    y = torch.softmax(x.double(), dim=1)
    want = y * (dy.double() - (dy.double() * y).sum(dim=1, keepdim=True))
    assert torch.allclose(dx.double().cpu(), want.cpu(), rtol=1e-4, atol=1e-5)
