"""The hand-written Triton backwards of bench/kernels/hand.py (bench/gpu.py's "hand" peer) against
PyTorch autograd of the same math written plainly in torch.

On the CPU the kernels run on Triton's interpreter (triton_cpu.interpreter), fp32 only (the
interpreter computes bf16 wrongly: numpy has no bf16); KAD_BENCH_HAND_DEVICE=cuda runs the same
checks compiled, fp32 and bf16, on a GPU.  Each case makes random inputs (shapes with partial
blocks, rows that do not divide the programs), runs the forward through the hand Function, and
compares the forward output and the input gradients for a random cotangent with the torch
reference's, in float64 on the same (rounded) inputs: max|hand - ref| <= tol * max|ref|.
Tolerances: fp32 1e-5 on the interpreter (both sides round differently; sums of up to ~300
terms); on a GPU 1e-4 (approximate transcendentals) and 2e-2 where tl.dot runs in TF32 (matmul,
linear attention) or the data are bf16 (5e-2 for the bf16 dots).
"""
import math
import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import triton_cpu  # noqa: E402

F = torch.nn.functional
DEVICE = triton_cpu.device_from_env("KAD_BENCH_HAND_DEVICE")
HAND_PY = os.path.join(triton_cpu.REPO, "bench", "kernels", "hand.py")


@pytest.fixture(scope="module")
def hand():
    with triton_cpu.interpreter(DEVICE):
        yield triton_cpu.load_module(HAND_PY, "kad_bench_hand")


def _gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _linear_attn_ref(q, k, v, scale, bt):
    T = q.shape[1]
    i = torch.arange(T, device=q.device)
    causal = (i[:, None] >= i[None, :]) & ((i[:, None] // bt) == (i[None, :] // bt))
    return torch.where(causal, q @ k.transpose(1, 2) * scale, 0.0) @ v


def _cases(g, dev):
    """id -> (inputs {name: tensor, float ones differentiated}, hand(h, t), ref(t in float64), dots)."""
    def r(*shape, scale=1.0, shift=0.0):
        return shift + scale * torch.randn(*shape, generator=g, dtype=torch.float64).to(dev)

    labels = torch.randint(0, 9000, (5,), generator=g)
    labels[2] = -100  # an ignored row: zero loss and gradient
    labels = labels.to(dev)
    return {
        "swiglu": (dict(a=r(7, 300, scale=2), b=r(7, 300)), lambda h, t: h.swiglu(t["a"], t["b"]),
                   lambda t: F.silu(t["a"]) * t["b"], False),
        "geglu": (dict(a=r(7, 300, scale=2), b=r(7, 300)), lambda h, t: h.geglu(t["a"], t["b"]),
                  lambda t: _gelu_tanh(t["a"]) * t["b"], False),
        "rms_norm": (dict(x=r(11, 300), w=r(300, scale=0.2, shift=1)), lambda h, t: h.rms_norm(t["x"], t["w"], 1e-6),
                     lambda t: t["x"] * torch.rsqrt((t["x"] ** 2).mean(-1, keepdim=True) + 1e-6) * t["w"], False),
        "layer_norm": (dict(x=r(11, 300, scale=2, shift=1), w=r(300, scale=0.2, shift=1), b=r(300, scale=0.2)),
                       lambda h, t: h.layer_norm(t["x"], t["w"], t["b"], 1e-5),
                       lambda t: F.layer_norm(t["x"], (300,), t["w"], t["b"], 1e-5), False),
        "softmax": (dict(x=r(6, 300, scale=3)), lambda h, t: h.softmax(t["x"]), lambda t: torch.softmax(t["x"], -1),
                    False),
        "log_softmax": (dict(x=r(6, 300, scale=3)), lambda h, t: h.log_softmax(t["x"]),
                        lambda t: torch.log_softmax(t["x"], -1), False),
        # a vocabulary of 9000: three of the hand kernels' 4096-wide chunks, the last partial
        "cross_entropy": (dict(x=r(5, 9000, scale=2), labels=labels),
                          lambda h, t: h.cross_entropy(t["x"], t["labels"]),
                          lambda t: F.cross_entropy(t["x"], t["labels"], reduction="none"), False),
        "mean_dim1": (dict(x=r(3, 37, 300)), lambda h, t: h.mean_dim1(t["x"]), lambda t: t["x"].mean(1), False),
        "matmul_act": (dict(a=r(40, 50), b=r(50, 35)), lambda h, t: h.matmul_act(t["a"], t["b"]),
                       lambda t: F.leaky_relu(t["a"] @ t["b"], 0.01), True),
        "box_filter": (dict(x=r(37, 45)), lambda h, t: h.box_filter(t["x"]),
                       lambda t: F.avg_pool2d(t["x"][None], 3, 1, 1, count_include_pad=True)[0], False),
        "linear_attn": (dict(q=r(2, 40, 16), k=r(2, 40, 16), v=r(2, 40, 16)),
                        lambda h, t: h.linear_attn(t["q"], t["k"], t["v"], 0.25, 16),
                        lambda t: _linear_attn_ref(t["q"], t["k"], t["v"], 0.25, 16), True),
    }


DTYPES = [torch.float32] if DEVICE == "cpu" else [torch.float32, torch.bfloat16]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).split(".")[-1])
@pytest.mark.parametrize("name", list(_cases(torch.Generator().manual_seed(0), "cpu")))
def test_hand_backward_matches_torch(hand, name, dtype):
    g = torch.Generator().manual_seed(1)
    raw, run, ref, dots = _cases(g, DEVICE)[name]
    diff = {k for k, v in raw.items() if v.is_floating_point()}
    lo = {k: (v.to(dtype) if k in diff else v) for k, v in raw.items()}
    hi = {k: (v.double() if k in diff else v) for k, v in lo.items()}
    for k in diff:
        lo[k].requires_grad_()
        hi[k].requires_grad_()

    y = run(hand, lo)
    y_ref = ref(hi)
    assert y.shape == y_ref.shape
    cot = torch.randn(y.shape, generator=g, dtype=torch.float64).to(DEVICE)
    grads = torch.autograd.grad(y, [lo[k] for k in sorted(diff)], cot.to(y.dtype))
    grads_ref = torch.autograd.grad(y_ref, [hi[k] for k in sorted(diff)], cot)

    if DEVICE == "cpu":
        tol = 1e-5
    elif dtype == torch.bfloat16:
        tol = 5e-2 if dots else 2e-2
    else:
        tol = 2e-2 if dots else 1e-4
    for what, a, b in [("output", y, y_ref)] + [(f"d{k}", ga, gb) for k, ga, gb in zip(sorted(diff), grads, grads_ref)]:
        assert a.dtype == (torch.float32 if what == "output" and name in ("cross_entropy", "mean_dim1") else dtype)
        err = ((a.double() - b.detach()).abs().max() / b.detach().abs().max().clamp_min(1e-30)).item()
        assert err <= tol, (name, what, err)
