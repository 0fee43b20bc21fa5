"""The corpus table: how to run each kernel of tests/kernels and what it must compute.

Each Case names a kernel file and kernel, a kad signature string, a grid, a
function making the runtime arguments, and an independent numpy reference
written from the math (not from the kernel's code).  Both the kad harness
(test_corpus.py) and the Triton cross-check (validate_with_triton.py) read
this table, so a reference is validated against Triton's own interpreter
before it is used to judge kad.

Conventions
  make(rng) -> {param: value} for every runtime parameter: float buffers as
      float64 arrays (the harness rounds them to the declared type), integer
      buffers as integer arrays, scalars as Python numbers.  Output buffers
      only give their shape (their contents are replaced by poison).
  ref(inp) -> {buffer: expected} for every output and in/out buffer, float64
      arrays of the buffer's shape, NaN where the kernel must not write.  inp
      holds the rounded input values (float64) and the scalars.
  outputs: write-only buffers (poisoned before the run).
  inouts:  buffers the kernel reads and writes (kept as made).
  tol / tol64: per-buffer (rtol, atol) overrides for as_written / f64 mode;
      a callable gets inp and returns the pair (atol may be an array).
  extra: further files of tests/kernels the kernel imports helpers from.
Signature strings list parameters in declaration order.
"""
import dataclasses
from typing import Callable

import numpy as np

from kadnum import fp32_red, erf, philox_uniform, sigmoid

NAN = float("nan")


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    file: str
    kernel: str
    sig: str
    grid: tuple
    make: Callable
    ref: Callable
    outputs: tuple = ()
    inouts: tuple = ()
    tol: dict = dataclasses.field(default_factory=dict)
    tol64: dict = dataclasses.field(default_factory=dict)
    extra: tuple = ()


def cdiv(a, b):
    return -(-a // b)


def parse_sig(sig):
    """'x=*fp32,n=i32,B=64' -> [(name, kind, text)], kind in ptr/scalar/const.

    Only for the harness's own bookkeeping (pointer dtypes, constexpr values
    for Triton); kad parses signatures itself."""
    out = []
    for part in sig.split(","):
        name, _, text = part.partition("=")
        name, text = name.strip(), text.strip()
        if text.startswith("*"):
            out.append((name, "ptr", text[1:]))
        elif text in ("i1", "i8", "i16", "i32", "i64", "u32", "u64", "fp16", "bf16", "fp32", "fp64"):
            out.append((name, "scalar", text))
        else:
            out.append((name, "const", text))
    return out


def padded(rows, cols, stride, values):
    """A [rows, stride] buffer holding values in its first cols columns, NaN after."""
    buf = np.full((rows, stride), NAN)
    buf[:, :cols] = values
    return buf


CASES = []


def case(**kw):
    CASES.append(Case(**kw))


# ------------------------------------------------------------------ elementwise


def _add_case(dt, n, block):
    case(
        id=f"vector_add_{dt}",
        file="vector_add.py",
        kernel="add_kernel",
        sig=f"x_ptr=*{dt},y_ptr=*{dt},out_ptr=*{dt},n_elements=i32,BLOCK_SIZE={block}",
        grid=(cdiv(n, block),),
        make=lambda r: dict(x_ptr=r.standard_normal(n), y_ptr=r.standard_normal(n),
                            out_ptr=np.zeros(n), n_elements=n),
        ref=lambda i: dict(out_ptr=i["x_ptr"] + i["y_ptr"]),
        outputs=("out_ptr",),
    )


_add_case("fp32", 1000, 256)
_add_case("fp16", 777, 128)
_add_case("bf16", 300, 64)


def _relu_case(dt, n, block):
    case(
        id=f"relu_{dt}",
        file="relu.py",
        kernel="relu_kernel",
        sig=f"x_ptr=*{dt},y_ptr=*{dt},n_elements=i32,BLOCK_SIZE={block}",
        grid=(cdiv(n, block),),
        make=lambda r: dict(x_ptr=r.standard_normal(n), y_ptr=np.zeros(n), n_elements=n),
        ref=lambda i: dict(y_ptr=np.maximum(i["x_ptr"], 0.0)),
        outputs=("y_ptr",),
    )


_relu_case("fp32", 2000, 512)
_relu_case("fp16", 100, 128)


def gelu_ref(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def _gelu_case(dt, approx, n, block):
    case(
        id=f"gelu_{approx}_{dt}",
        file="gelu.py",
        kernel="gelu_kernel",
        sig=f"x_ptr=*{dt},y_ptr=*{dt},n_elements=i32,APPROXIMATE='{approx}',BLOCK_SIZE={block}",
        grid=(cdiv(n, block),),
        make=lambda r: dict(x_ptr=3 * r.standard_normal(n), y_ptr=np.zeros(n), n_elements=n),
        ref=lambda i: dict(y_ptr=gelu_ref(i["x_ptr"], approx)),
        outputs=("y_ptr",),
    )


_gelu_case("fp32", "none", 1500, 512)
_gelu_case("fp32", "tanh", 1500, 512)
_gelu_case("bf16", "tanh", 333, 128)


def _silu_case(dt, n, block):
    case(
        id=f"silu_{dt}",
        file="silu.py",
        kernel="silu_kernel",
        sig=f"x_ptr=*{dt},out_ptr=*{dt},n_elements=i32,BLOCK_SIZE={block}",
        grid=(cdiv(n, block),),
        make=lambda r: dict(x_ptr=4 * r.standard_normal(n), out_ptr=np.zeros(n), n_elements=n),
        ref=lambda i: dict(out_ptr=i["x_ptr"] * sigmoid(i["x_ptr"])),
        outputs=("out_ptr",),
    )


_silu_case("fp16", 1000, 256)
_silu_case("bf16", 500, 256)
_silu_case("fp32", 64, 64)


def leaky_ref(x, slope):
    return np.where(x >= 0, x, slope * x)


case(
    id="leaky_relu_slope_0.2",
    file="leaky_relu.py",
    kernel="leaky_relu_kernel",
    sig="x_ptr=*fp32,y_ptr=*fp32,n_elements=i32,NEGATIVE_SLOPE=0.2,BLOCK_SIZE=128",
    grid=(8,),
    make=lambda r: dict(x_ptr=r.standard_normal(1000), y_ptr=np.zeros(1000), n_elements=1000),
    ref=lambda i: dict(y_ptr=leaky_ref(i["x_ptr"], 0.2)),
    outputs=("y_ptr",),
)
case(  # constexpr defaults (slope 0.01, block 512) left out of the signature
    id="leaky_relu_defaults",
    file="leaky_relu.py",
    kernel="leaky_relu_kernel",
    sig="x_ptr=*fp32,y_ptr=*fp32,n_elements=i32",
    grid=(2,),
    make=lambda r: dict(x_ptr=r.standard_normal(700), y_ptr=np.zeros(700), n_elements=700),
    ref=lambda i: dict(y_ptr=leaky_ref(i["x_ptr"], 0.01)),
    outputs=("y_ptr",),
)


def softplus_ref(x, beta, threshold):
    bx = beta * x
    soft = np.log1p(np.exp(np.minimum(bx, threshold))) / beta
    return np.where(bx > threshold, x, soft)


def _softplus_case(tag, beta, threshold, n):
    case(
        id=f"softplus_{tag}",
        file="softplus.py",
        kernel="softplus_kernel",
        sig="x_ptr=*fp32,y_ptr=*fp32,n_elements=i32,beta=fp32,threshold=fp32,BLOCK_SIZE=256",
        grid=(cdiv(n, 256),),
        make=lambda r: dict(x_ptr=r.uniform(-15, 25, n), y_ptr=np.zeros(n), n_elements=n,
                            beta=beta, threshold=threshold),
        ref=lambda i: dict(y_ptr=softplus_ref(i["x_ptr"], i["beta"], i["threshold"])),
        outputs=("y_ptr",),
    )


_softplus_case("beta1", 1.0, 20.0, 1000)
_softplus_case("beta2_thr10", 2.0, 10.0, 600)


def clamp_cases():
    n = 1000
    case(
        id="clamp_fp32",
        file="clamp.py",
        kernel="clamp_kernel",
        sig="x_ptr=*fp32,y_ptr=*fp32,n=i32,lo=fp32,hi=fp32,BLOCK_SIZE=256",
        grid=(cdiv(n, 256),),
        make=lambda r: dict(x_ptr=r.standard_normal(n), y_ptr=np.zeros(n), n=n, lo=-0.5, hi=0.75),
        ref=lambda i: dict(y_ptr=np.minimum(np.maximum(i["x_ptr"], i["lo"]), i["hi"])),
        outputs=("y_ptr",),
    )
    m = 500
    case(
        id="relu6_fp16",
        file="clamp.py",
        kernel="relu6_kernel",
        sig="x_ptr=*fp16,y_ptr=*fp16,n=i32,BLOCK_SIZE=128",
        grid=(cdiv(m, 128),),
        make=lambda r: dict(x_ptr=5 * r.standard_normal(m), y_ptr=np.zeros(m), n=m),
        ref=lambda i: dict(y_ptr=np.clip(i["x_ptr"], 0.0, 6.0)),
        outputs=("y_ptr",),
    )


clamp_cases()


def _cast_case(src, dst, tl_name, scale, n):
    case(
        id=f"cast_scale_{src}_to_{dst}",
        file="cast_scale.py",
        kernel="scale_cast_kernel",
        sig=f"x_ptr=*{src},y_ptr=*{dst},n=i32,scale=fp32,OUT_DTYPE=tl.{tl_name},BLOCK_SIZE=256",
        grid=(cdiv(n, 256),),
        make=lambda r: dict(x_ptr=r.standard_normal(n), y_ptr=np.zeros(n), n=n, scale=scale),
        ref=lambda i: dict(y_ptr=i["x_ptr"] * i["scale"]),
        outputs=("y_ptr",),
    )


_cast_case("fp32", "fp16", "float16", 0.5, 600)
_cast_case("fp32", "bf16", "bfloat16", 3.0, 600)
_cast_case("fp16", "fp32", "float32", -1.25, 300)


def _dropout_case(tag, n, block, p, seed):
    case(
        id=f"dropout_{tag}",
        file="dropout.py",
        kernel="seeded_dropout_kernel",
        sig=f"x_ptr=*fp32,out_ptr=*fp32,n_elements=i32,p=fp32,seed=i32,BLOCK_SIZE={block}",
        grid=(cdiv(n, block),),
        make=lambda r: dict(x_ptr=r.standard_normal(n), out_ptr=np.zeros(n), n_elements=n,
                            p=p, seed=seed),
        ref=lambda i: dict(out_ptr=np.where(philox_uniform(i["seed"], np.arange(n)) > i["p"],
                                            i["x_ptr"] / (1.0 - i["p"]), 0.0)),
        outputs=("out_ptr",),
    )


# p values are exact in fp32 so that the keep decision is the same in both modes.
_dropout_case("p0.25", 3000, 1024, 0.25, 1234)
_dropout_case("p0.5", 700, 256, 0.5, 42)


def persistent_case():
    n = 5000
    case(
        id="persistent_scale_while",
        file="persistent_scale.py",
        kernel="scale_shift_persistent_kernel",
        sig="x_ptr=*fp32,y_ptr=*fp32,n_elements=i32,alpha=fp32,beta=fp32,BLOCK_SIZE=512",
        grid=(3,),  # 3 programs sweep 10 blocks: 4, 3 and 3 trips
        make=lambda r: dict(x_ptr=r.standard_normal(n), y_ptr=np.zeros(n), n_elements=n,
                            alpha=1.5, beta=-0.25),
        ref=lambda i: dict(y_ptr=i["alpha"] * i["x_ptr"] + i["beta"]),
        outputs=("y_ptr",),
    )


persistent_case()


def axpby_cases():
    n = 1100
    sig = "x_ptr=*fp32,y_ptr=*fp32,n=i32,alpha=fp32,beta=fp32,BLOCK_SIZE=512"
    case(  # beta == 0: y is write-only and starts as NaN poison, which must not leak
        id="axpby_beta0",
        file="axpby.py",
        kernel="axpby_kernel",
        sig=sig,
        grid=(cdiv(n, 512),),
        make=lambda r: dict(x_ptr=r.standard_normal(n), y_ptr=np.zeros(n), n=n, alpha=2.0, beta=0.0),
        ref=lambda i: dict(y_ptr=i["alpha"] * i["x_ptr"]),
        outputs=("y_ptr",),
    )
    case(
        id="axpby_beta_half",
        file="axpby.py",
        kernel="axpby_kernel",
        sig=sig,
        grid=(cdiv(n, 512),),
        make=lambda r: dict(x_ptr=r.standard_normal(n), y_ptr=r.standard_normal(n), n=n,
                            alpha=-0.75, beta=0.5),
        ref=lambda i: dict(y_ptr=i["alpha"] * i["x_ptr"] + i["beta"] * i["y_ptr"]),
        inouts=("y_ptr",),
    )


axpby_cases()


def histogram_case():
    n, lo, width, bins = 2500, -2.0, 0.25, 16

    def make(r):
        # Values sit well inside their bins (fractional part in [0.05, 0.95]),
        # so fp32 and f64 arithmetic bin them alike; some fall outside the range.
        k = r.integers(-3, bins + 3, n)
        return dict(x_ptr=lo + (k + r.uniform(0.05, 0.95, n)) * width,
                    hist_ptr=np.zeros(bins, dtype=np.int32), n=n, lo=lo, bin_width=width)

    def ref(i):
        b = np.clip(np.floor((i["x_ptr"] - i["lo"]) / i["bin_width"]), 0, bins - 1).astype(np.int64)
        return dict(hist_ptr=np.bincount(b, minlength=bins).astype(np.float64))

    case(
        id="histogram_atomic_add",
        file="histogram.py",
        kernel="histogram_kernel",
        sig=f"x_ptr=*fp32,hist_ptr=*i32,n=i32,lo=fp32,bin_width=fp32,NUM_BINS={bins},BLOCK_SIZE=1024",
        grid=(cdiv(n, 1024),),
        make=make,
        ref=ref,
        inouts=("hist_ptr",),
    )


histogram_case()


# ------------------------------------------------------------------ row-wise


def softmax_ref(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_case(dt, rows, cols, in_stride, out_stride, block):
    case(
        id=f"softmax_{dt}",
        file="softmax.py",
        kernel="softmax_kernel",
        sig=(f"output_ptr=*{dt},input_ptr=*{dt},input_row_stride=i32,output_row_stride=i32,"
             f"n_cols=i32,BLOCK_SIZE={block}"),
        grid=(rows,),
        make=lambda r: dict(output_ptr=np.zeros((rows, out_stride)),
                            input_ptr=padded(rows, cols, in_stride, 3 * r.standard_normal((rows, cols))),
                            input_row_stride=in_stride, output_row_stride=out_stride, n_cols=cols),
        ref=lambda i: dict(output_ptr=padded(rows, cols, out_stride,
                                             softmax_ref(i["input_ptr"][:, :cols]))),
        outputs=("output_ptr",),
    )


_softmax_case("fp32", 5, 100, 128, 112, 128)
_softmax_case("fp16", 3, 64, 64, 64, 64)


def log_softmax_case():
    rows, buf_rows, cols, sx, sy = 5, 7, 50, 50, 64

    def ref(i):
        x = i["x_ptr"][:rows]
        z = x - x.max(axis=1, keepdims=True)
        y = np.full((buf_rows, sy), NAN)
        y[:rows, :cols] = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return dict(y_ptr=y)

    case(  # grid of 8 programs for 5 rows: programs 5..7 return early
        id="log_softmax_early_return",
        file="log_softmax.py",
        kernel="log_softmax_kernel",
        sig="x_ptr=*fp32,y_ptr=*fp32,stride_x=i32,stride_y=i32,n_rows=i32,n_cols=i32,BLOCK_N=64",
        grid=(8,),
        make=lambda r: dict(x_ptr=2 * r.standard_normal((rows, cols)), y_ptr=np.zeros((buf_rows, sy)),
                            stride_x=sx, stride_y=sy, n_rows=rows, n_cols=cols),
        ref=ref,
        outputs=("y_ptr",),
    )


log_softmax_case()


def layer_norm_ref(x, w, b, eps):
    mean = x.mean(axis=1)
    var = ((x - mean[:, None]) ** 2).mean(axis=1)
    rstd = 1.0 / np.sqrt(var + eps)
    return (x - mean[:, None]) * rstd[:, None] * w + b, mean, rstd


def _layer_norm_case(tag, rows, n, sx, sy, block, eps):
    def ref(i):
        y, mean, rstd = layer_norm_ref(i["X"][:, :n], i["W"], i["B"], i["eps"])
        return dict(Y=padded(rows, n, sy, y), Mean=mean, Rstd=rstd)

    case(
        id=f"layer_norm_{tag}",
        file="layer_norm.py",
        kernel="layer_norm_fwd_kernel",
        sig=(f"X=*fp32,Y=*fp32,W=*fp32,B=*fp32,Mean=*fp32,Rstd=*fp32,stride_x=i32,stride_y=i32,"
             f"N=i32,eps=fp32,BLOCK_N={block}"),
        grid=(rows,),
        make=lambda r: dict(X=padded(rows, n, sx, 1.5 + 2 * r.standard_normal((rows, n))),
                            Y=np.zeros((rows, sy)), W=1 + 0.1 * r.standard_normal(n),
                            B=0.1 * r.standard_normal(n), Mean=np.zeros(rows), Rstd=np.zeros(rows),
                            stride_x=sx, stride_y=sy, N=n, eps=eps),
        ref=ref,
        outputs=("Y", "Mean", "Rstd"),
        tol=dict(Y=fp32_red(n), Mean=fp32_red(n), Rstd=fp32_red(n)),
    )


_layer_norm_case("chunked", 4, 300, 300, 320, 128, 1e-5)  # 3 chunks, the last partial
_layer_norm_case("one_chunk", 3, 64, 64, 64, 64, 1e-6)


def _rms_case(dt, rows, n, sx, sy, block):
    def ref(i):
        x = i["x_ptr"][:, :n]
        rstd = 1.0 / np.sqrt((x * x).mean(axis=1) + i["eps"])
        return dict(y_ptr=padded(rows, n, sy, x * rstd[:, None] * i["w_ptr"]), rstd_ptr=rstd)

    case(
        id=f"rms_norm_{dt}",
        file="rms_norm.py",
        kernel="rms_norm_fwd_kernel",
        sig=(f"x_ptr=*{dt},w_ptr=*{dt},y_ptr=*{dt},rstd_ptr=*fp32,x_row_stride=i32,"
             f"y_row_stride=i32,n_cols=i32,eps=fp32,BLOCK_SIZE={block}"),
        grid=(rows,),
        make=lambda r: dict(x_ptr=padded(rows, n, sx, r.standard_normal((rows, n))),
                            w_ptr=1 + 0.2 * r.standard_normal(n), y_ptr=np.zeros((rows, sy)),
                            rstd_ptr=np.zeros(rows), x_row_stride=sx, y_row_stride=sy,
                            n_cols=n, eps=1e-6),
        ref=ref,
        outputs=("y_ptr", "rstd_ptr"),
        tol=dict(rstd_ptr=fp32_red(n)) if dt != "fp32" else dict(y_ptr=fp32_red(n), rstd_ptr=fp32_red(n)),
    )


_rms_case("bf16", 5, 200, 200, 256, 256)
_rms_case("fp32", 3, 64, 64, 72, 64)


def cross_entropy_case(dt, rows, v, stride, block):
    def make(r):
        labels = r.integers(0, v, rows)
        labels[1] = -100  # ignored row
        return dict(logits_ptr=padded(rows, v, stride, 2 * r.standard_normal((rows, v))),
                    labels_ptr=labels.astype(np.int64), loss_ptr=np.zeros(rows),
                    lse_ptr=np.zeros(rows), logits_row_stride=stride, n_cols=v, ignore_index=-100)

    def ref(i):
        x = i["logits_ptr"][:, :v]
        m = x.max(axis=1)
        lse = m + np.log(np.exp(x - m[:, None]).sum(axis=1))
        lab = i["labels_ptr"]
        target = x[np.arange(rows), np.where(lab >= 0, lab, 0)]
        return dict(loss_ptr=np.where(lab == i["ignore_index"], 0.0, lse - target), lse_ptr=lse)

    case(
        id=f"cross_entropy_{dt}",
        file="cross_entropy.py",
        kernel="cross_entropy_fwd_kernel",
        sig=(f"logits_ptr=*{dt},labels_ptr=*i64,loss_ptr=*fp32,lse_ptr=*fp32,"
             f"logits_row_stride=i32,n_cols=i32,ignore_index=i32,BLOCK_SIZE={block}"),
        grid=(rows,),
        make=make,
        ref=ref,
        outputs=("loss_ptr", "lse_ptr"),
        tol=dict(loss_ptr=fp32_red(v), lse_ptr=fp32_red(v)),
    )


cross_entropy_case("fp32", 6, 1000, 1024, 256)  # 4 vocabulary blocks
cross_entropy_case("bf16", 4, 300, 300, 128)


def _softmax_exp2_case(dt, rows, cols, stride, block):
    case(
        id=f"softmax_exp2_{dt}",
        file="softmax_exp2.py",
        kernel="softmax_online_exp2_kernel",
        sig=f"x_ptr=*{dt},y_ptr=*{dt},stride_x=i32,stride_y=i32,n_cols=i32,BLOCK_N={block}",
        grid=(rows,),
        make=lambda r: dict(x_ptr=padded(rows, cols, stride, 2 * r.standard_normal((rows, cols))),
                            y_ptr=np.zeros((rows, stride)), stride_x=stride, stride_y=stride,
                            n_cols=cols),
        ref=lambda i: dict(y_ptr=padded(rows, cols, stride, softmax_ref(i["x_ptr"][:, :cols]))),
        outputs=("y_ptr",),
    )


_softmax_exp2_case("fp32", 3, 700, 704, 256)
_softmax_exp2_case("bf16", 2, 100, 100, 64)


def _minmax_case(dt, rows, cols, sx, sy, block):
    def ref(i):
        x = i["x_ptr"][:, :cols]
        lo, hi = x.min(axis=1, keepdims=True), x.max(axis=1, keepdims=True)
        unit = (x - lo) / (hi - lo + i["eps"])
        return dict(y_ptr=padded(rows, cols, sy, unit * (i["new_hi"] - i["new_lo"]) + i["new_lo"]))

    case(
        id=f"minmax_scale_tuple_helper_{dt}",
        file="minmax_scale.py",
        kernel="minmax_scale_kernel",
        sig=(f"x_ptr=*{dt},y_ptr=*fp32,stride_x=i32,stride_y=i32,n_cols=i32,eps=fp32,"
             f"new_lo=fp32,new_hi=fp32,BLOCK_N={block}"),
        grid=(rows,),
        make=lambda r: dict(x_ptr=padded(rows, cols, sx, r.standard_normal((rows, cols))),
                            y_ptr=np.zeros((rows, sy)), stride_x=sx, stride_y=sy, n_cols=cols,
                            eps=1e-6, new_lo=-1.0, new_hi=1.0),
        ref=ref,
        outputs=("y_ptr",),
    )


_minmax_case("fp32", 4, 90, 90, 96, 128)
_minmax_case("bf16", 3, 40, 48, 40, 64)


def swiglu_case(dt, rows, cols, stride, block):
    case(
        id=f"swiglu_{dt}",
        file="swiglu.py",
        kernel="swiglu_fwd_kernel",
        sig=f"a_ptr=*{dt},b_ptr=*{dt},c_ptr=*{dt},row_stride=i32,n_cols=i32,BLOCK_SIZE={block}",
        grid=(rows, cdiv(cols, block)),
        make=lambda r: dict(a_ptr=padded(rows, cols, stride, 2 * r.standard_normal((rows, cols))),
                            b_ptr=padded(rows, cols, stride, r.standard_normal((rows, cols))),
                            c_ptr=np.zeros((rows, stride)), row_stride=stride, n_cols=cols),
        ref=lambda i: dict(c_ptr=padded(rows, cols, stride,
                                        i["a_ptr"][:, :cols] * sigmoid(i["a_ptr"][:, :cols])
                                        * i["b_ptr"][:, :cols])),
        outputs=("c_ptr",),
    )


swiglu_case("bf16", 6, 200, 256, 128)
swiglu_case("fp32", 3, 100, 100, 64)


def geglu_case(dt, rows, cols, stride_in, stride_out, block):
    case(
        id=f"geglu_{dt}",
        file="geglu.py",
        kernel="geglu_fwd_kernel",
        sig=(f"a_ptr=*{dt},b_ptr=*{dt},c_ptr=*{dt},stride_in=i32,stride_out=i32,n_cols=i32,"
             f"BLOCK_SIZE={block}"),
        grid=(rows,),
        make=lambda r: dict(a_ptr=padded(rows, cols, stride_in, 2 * r.standard_normal((rows, cols))),
                            b_ptr=padded(rows, cols, stride_in, r.standard_normal((rows, cols))),
                            c_ptr=np.zeros((rows, stride_out)), stride_in=stride_in,
                            stride_out=stride_out, n_cols=cols),
        ref=lambda i: dict(c_ptr=padded(rows, cols, stride_out,
                                        gelu_ref(i["a_ptr"][:, :cols], "tanh") * i["b_ptr"][:, :cols])),
        outputs=("c_ptr",),
    )


geglu_case("bf16", 5, 200, 208, 200, 256)
geglu_case("fp32", 4, 100, 112, 104, 128)


def bias_add_case(dt, rows, cols, sx, sy, block):
    case(
        id=f"bias_add_{dt}",
        file="bias_add.py",
        kernel="bias_add_kernel",
        sig=f"x_ptr=*{dt},b_ptr=*{dt},y_ptr=*{dt},stride_x=i32,stride_y=i32,n_cols=i32,BLOCK_N={block}",
        grid=(rows, cdiv(cols, block)),
        make=lambda r: dict(x_ptr=padded(rows, cols, sx, r.standard_normal((rows, cols))),
                            b_ptr=r.standard_normal(cols), y_ptr=np.zeros((rows, sy)),
                            stride_x=sx, stride_y=sy, n_cols=cols),
        ref=lambda i: dict(y_ptr=padded(rows, cols, sy, i["x_ptr"][:, :cols] + i["b_ptr"][None, :])),
        outputs=("y_ptr",),
    )


bias_add_case("fp32", 7, 150, 160, 152, 64)  # 3 column blocks, the last partial
bias_add_case("fp16", 4, 64, 64, 64, 32)


def _cumsum_case(dt, reverse):
    rows, cols, sx, sy = 10, 50, 50, 56

    def ref(i):
        x = i["x_ptr"][:, :cols]
        y = np.flip(np.cumsum(np.flip(x, 1), 1), 1) if reverse else np.cumsum(x, 1)
        return dict(y_ptr=padded(rows, cols, sy, y))

    case(
        id=f"cumsum_{dt}_{'reverse' if reverse else 'forward'}",
        file="cumsum.py",
        kernel="cumsum_rows_kernel",
        sig=(f"x_ptr=*{dt},y_ptr=*fp32,n_rows=i32,n_cols=i32,stride_x=i32,stride_y=i32,"
             f"BLOCK_M=4,BLOCK_N=64,REVERSE={reverse}"),
        grid=(cdiv(rows, 4),),
        make=lambda r: dict(x_ptr=r.standard_normal((rows, sx)), y_ptr=np.zeros((rows, sy)),
                            n_rows=rows, n_cols=cols, stride_x=sx, stride_y=sy),
        ref=ref,
        outputs=("y_ptr",),
        tol=dict(y_ptr=fp32_red(cols)),
    )


_cumsum_case("fp32", False)
_cumsum_case("fp16", True)


def row_sum_case(dt, m, n, stride, block_n, even):
    case(
        id=f"row_sum_{dt}_{'even' if even else 'ragged'}",
        file="row_sum.py",
        kernel="row_sum_kernel",
        sig=(f"x_ptr=*{dt},out_ptr=*fp32,M=i32,N=i32,stride_xm=i32,BLOCK_M=16,"
             f"BLOCK_N={block_n},EVEN_N={even}"),
        grid=(cdiv(m, 16),),
        make=lambda r: dict(x_ptr=padded(m, n, stride, r.standard_normal((m, n))),
                            out_ptr=np.zeros(m), M=m, N=n, stride_xm=stride),
        ref=lambda i: dict(out_ptr=i["x_ptr"][:, :n].sum(axis=1)),
        outputs=("out_ptr",),
        tol=dict(out_ptr=fp32_red(n)),
    )


row_sum_case("fp16", 40, 256, 256, 64, True)
row_sum_case("bf16", 20, 300, 320, 128, False)


def row_stats_case():
    m, n, sx, su, bm = 13, 40, 40, 48, 4

    def ref(i):
        x = i["x_ptr"]
        hi, lo = x.max(axis=1), x.min(axis=1)
        mid = (hi + lo) / 2
        return dict(
            max_ptr=hi, min_ptr=lo, argmax_ptr=x.argmax(axis=1).astype(np.float64),
            mad_ptr=np.abs(x - mid[:, None]).mean(axis=1),
            unit_ptr=padded(m, n, su, (x - lo[:, None]) / np.maximum(hi - lo, 1e-6)[:, None]))

    case(
        id="row_stats_keepdims_argmax",
        file="row_stats.py",
        kernel="row_stats_kernel",
        sig=("x_ptr=*fp32,max_ptr=*fp32,min_ptr=*fp32,argmax_ptr=*i32,mad_ptr=*fp32,"
             f"unit_ptr=*fp32,M=i32,N=i32,stride_x=i32,stride_unit=i32,BLOCK_M={bm},BLOCK_N=64"),
        grid=(cdiv(m, bm),),
        make=lambda r: dict(x_ptr=r.standard_normal((m, n)), max_ptr=np.zeros(m), min_ptr=np.zeros(m),
                            argmax_ptr=np.zeros(m, dtype=np.int32), mad_ptr=np.zeros(m),
                            unit_ptr=np.zeros((m, su)), M=m, N=n, stride_x=sx, stride_unit=su),
        ref=ref,
        outputs=("max_ptr", "min_ptr", "argmax_ptr", "mad_ptr", "unit_ptr"),
        tol=dict(mad_ptr=fp32_red(n)),
    )


row_stats_case()


def mean_dim_case(tag, dt, b, m, n, transposed):
    def make(r):
        x = r.standard_normal((b, m, n))
        # transposed: memory is [B, N, M]; the kernel sees [B, M, N] through strides.
        buf = np.ascontiguousarray(x.transpose(0, 2, 1)) if transposed else x
        strides = (n * m, 1, m) if transposed else (m * n, n, 1)
        return dict(x_ptr=buf, out_ptr=np.zeros((b, n)), M=m, N=n, stride_xb=strides[0],
                    stride_xm=strides[1], stride_xn=strides[2], stride_ob=n, stride_on=1)

    def ref(i):
        x = i["x_ptr"].transpose(0, 2, 1) if transposed else i["x_ptr"]
        return dict(out_ptr=x.mean(axis=1))

    case(
        id=f"mean_dim1_{tag}",
        file="mean_dim.py",
        kernel="mean_dim1_kernel",
        sig=(f"x_ptr=*{dt},out_ptr=*fp32,M=i32,N=i32,stride_xb=i32,stride_xm=i32,stride_xn=i32,"
             "stride_ob=i32,stride_on=i32,BLOCK_M=16,BLOCK_N=32"),
        grid=(b, cdiv(n, 32)),
        make=make,
        ref=ref,
        outputs=("out_ptr",),
        tol=dict(out_ptr=fp32_red(m)),
    )


mean_dim_case("strided_fp32", "fp32", 3, 37, 70, True)
mean_dim_case("contiguous_fp16", "fp16", 2, 20, 33, False)


# ------------------------------------------------------------------ 2-D / 3-D grids, tiles


def head_affine_case():
    b, h, L, sy = 2, 3, 300, 320

    def ref(i):
        y = np.full((b, h, sy), NAN)
        y[:, :, :L] = i["x_ptr"] * i["w_ptr"][None, :, None] + i["bias_ptr"][None, :, None]
        return dict(y_ptr=y)

    case(
        id="head_affine_3d_grid",
        file="head_affine_3d.py",
        kernel="head_affine_kernel",
        sig=("x_ptr=*fp32,w_ptr=*fp32,bias_ptr=*fp32,y_ptr=*fp32,L=i32,stride_xb=i32,"
             "stride_xh=i32,stride_yb=i32,stride_yh=i32,BLOCK_L=128"),
        grid=(cdiv(L, 128), h, b),
        make=lambda r: dict(x_ptr=r.standard_normal((b, h, L)), w_ptr=r.standard_normal(h),
                            bias_ptr=r.standard_normal(h), y_ptr=np.zeros((b, h, sy)), L=L,
                            stride_xb=h * L, stride_xh=L, stride_yb=h * sy, stride_yh=sy),
        ref=ref,
        outputs=("y_ptr",),
    )


head_affine_case()


def box_filter_case():
    H, W, sd = 37, 45, 48

    def ref(i):
        img = i["src_ptr"]
        p = np.zeros((H + 2, W + 2))
        p[1:-1, 1:-1] = img
        acc = sum(p[1 + dy:1 + dy + H, 1 + dx:1 + dx + W] for dy in (-1, 0, 1) for dx in (-1, 0, 1))
        return dict(dst_ptr=padded(H, W, sd, acc / 9.0))

    case(
        id="box_filter3x3_2d_grid",
        file="box_filter.py",
        kernel="box_filter3x3_kernel",
        sig="src_ptr=*fp32,dst_ptr=*fp32,H=i32,W=i32,stride_src=i32,stride_dst=i32,BLOCK_H=16,BLOCK_W=32",
        grid=(cdiv(H, 16), cdiv(W, 32)),
        make=lambda r: dict(src_ptr=r.standard_normal((H, W)), dst_ptr=np.zeros((H, sd)), H=H, W=W,
                            stride_src=W, stride_dst=sd),
        ref=ref,
        outputs=("dst_ptr",),
    )


box_filter_case()


def _transpose_case(dt, m, n, sy, block):
    case(
        id=f"transpose_{dt}",
        file="transpose.py",
        kernel="transpose_kernel",
        sig=f"x_ptr=*{dt},y_ptr=*{dt},M=i32,N=i32,stride_xm=i32,stride_ym=i32,BLOCK_M={block},BLOCK_N={block}",
        grid=(cdiv(m, block), cdiv(n, block)),
        make=lambda r: dict(x_ptr=(r.standard_normal((m, n)) if dt != "i32"
                                   else r.integers(-1000, 1000, (m, n)).astype(np.int32)),
                            y_ptr=(np.zeros((n, sy)) if dt != "i32" else np.zeros((n, sy), np.int32)),
                            M=m, N=n, stride_xm=n, stride_ym=sy),
        ref=lambda i: dict(y_ptr=padded(n, m, sy, i["x_ptr"].T.astype(np.float64))),
        outputs=("y_ptr",),
    )


_transpose_case("fp32", 50, 70, 56, 32)
_transpose_case("i32", 33, 17, 40, 16)


def group_sum_case():
    m, g, gs, so = 20, 4, 8, 24

    def ref(i):
        x = i["x_ptr"]
        return dict(out_ptr=padded(g, m, so, x.reshape(m, g, gs).sum(axis=2).T))

    case(
        id="group_sum_reshape_permute",
        file="group_sum.py",
        kernel="group_sum_kernel",
        sig=f"x_ptr=*fp32,out_ptr=*fp32,M=i32,stride_xm=i32,stride_og=i32,GROUPS={g},GROUP_SIZE={gs},BLOCK_M=16",
        grid=(cdiv(m, 16),),
        make=lambda r: dict(x_ptr=r.standard_normal((m, g * gs)), out_ptr=np.zeros((g, so)), M=m,
                            stride_xm=g * gs, stride_og=so),
        ref=ref,
        outputs=("out_ptr",),
    )


group_sum_case()


def split_k_case(tag, zero_init):
    m, n = 300, 100

    def make(r):
        init = np.zeros(n) if zero_init else r.standard_normal(n)
        return dict(x_ptr=r.standard_normal((m, n)), out_ptr=init, M=m, N=n, stride_xm=n)

    case(
        id=f"split_k_colsum_{tag}",
        file="split_k_colsum.py",
        kernel="colsum_split_kernel",
        sig="x_ptr=*fp32,out_ptr=*fp32,M=i32,N=i32,stride_xm=i32,SPLIT_M=128,BLOCK_M=32,BLOCK_N=64",
        grid=(cdiv(m, 128), cdiv(n, 64)),
        make=make,
        ref=lambda i: dict(out_ptr=i["out_ptr"] + i["x_ptr"].sum(axis=0)),
        inouts=("out_ptr",),
        tol=dict(out_ptr=fp32_red(m)),
    )


split_k_case("zero_init", True)
split_k_case("accumulate", False)


def fused_bias_act_case(dt, act, m, n, sy):
    def ref(i):
        h = i["x_ptr"] + i["bias_ptr"][None, :]
        y = h * sigmoid(h) if act == "silu" else np.maximum(h, 0.0) ** 2
        return dict(y_ptr=padded(m, n, sy, y))

    case(
        id=f"fused_bias_{act}_{dt}",
        file="fused_bias_act.py",
        kernel="bias_act_kernel",
        sig=(f"x_ptr=*{dt},bias_ptr=*{dt},y_ptr=*{dt},M=i32,N=i32,stride_xm=i32,stride_ym=i32,"
             f"ACTIVATION='{act}',BLOCK_M=32,BLOCK_N=64"),
        grid=(cdiv(m, 32), cdiv(n, 64)),
        make=lambda r: dict(x_ptr=r.standard_normal((m, n)), bias_ptr=r.standard_normal(n),
                            y_ptr=np.zeros((m, sy)), M=m, N=n, stride_xm=n, stride_ym=sy),
        ref=ref,
        outputs=("y_ptr",),
        extra=("kernel_utils.py",),
    )


fused_bias_act_case("fp32", "silu", 50, 100, 104)
fused_bias_act_case("fp16", "squared_relu", 40, 64, 64)


# ------------------------------------------------------------------ dot products


def matmul_case(tag, in_dt, out_dt, act, m, n, k, b_transposed, tf32):
    def make(r):
        a = r.standard_normal((m, k))
        b = r.standard_normal((k, n))
        b_buf = np.ascontiguousarray(b.T) if b_transposed else b
        sbk, sbn = (1, k) if b_transposed else (n, 1)
        return dict(a_ptr=a, b_ptr=b_buf, c_ptr=np.zeros((m, n)), M=m, N=n, K=k,
                    stride_am=k, stride_ak=1, stride_bk=sbk, stride_bn=sbn, stride_cm=n, stride_cn=1)

    def operands(i):
        b = i["b_ptr"].T if b_transposed else i["b_ptr"]
        return i["a_ptr"], b

    def ref(i):
        a, b = operands(i)
        c = a @ b
        if act == "leaky_relu":
            c = np.where(c >= 0, c, 0.01 * c)
        elif act == "relu":
            c = np.maximum(c, 0)
        elif act == "fast_gelu":
            c = c * sigmoid(1.702 * c)
        return dict(c_ptr=c)

    def bound(scale):
        def tol(i):
            a, b = operands(i)
            # An activation at most doubles the slope (fast_gelu's is < 1.13).
            return (rtol_out, scale * 2 * (np.abs(a) @ np.abs(b)))
        return tol

    rtol_out = {"fp16": 2.0**-9, "bf16": 2.0**-6, "fp32": 1e-5}[out_dt]
    # tf32 (the default precision of fp32 dots on GPUs) keeps 10 mantissa bits of each input.
    scale = 2.0**-10 if tf32 else 1e-6
    case(
        id=f"matmul_{tag}",
        file="matmul.py",
        kernel="matmul_kernel",
        sig=(f"a_ptr=*{in_dt},b_ptr=*{in_dt},c_ptr=*{out_dt},M=i32,N=i32,K=i32,stride_am=i32,"
             "stride_ak=i32,stride_bk=i32,stride_bn=i32,stride_cm=i32,stride_cn=i32,"
             f"BLOCK_M=32,BLOCK_N=32,BLOCK_K=32,GROUP_SIZE_M=2,ACTIVATION='{act}'"),
        grid=(cdiv(m, 32) * cdiv(n, 32),),
        make=make,
        ref=ref,
        outputs=("c_ptr",),
        tol=dict(c_ptr=bound(scale)),
        tol64=dict(c_ptr=lambda i: (1e-12, 1e-12 * (np.abs(operands(i)[0]) @ np.abs(operands(i)[1])))),
    )


matmul_case("fp16_leaky_relu", "fp16", "fp16", "leaky_relu", 70, 50, 100, False, False)
matmul_case("fp16_in_fp32_out", "fp16", "fp32", "", 45, 64, 40, False, False)
matmul_case("fp32_relu_tf32", "fp32", "fp32", "relu", 40, 40, 64, False, True)
matmul_case("fp16_fast_gelu_bT", "fp16", "fp16", "fast_gelu", 33, 70, 48, True, False)


def linear_attention_case(dt, bh, T, bt, kd, vd, tf32):
    scale = 0.25

    def scores(i):
        q = i["q_ptr"].reshape(bh, T, kd)
        k = i["k_ptr"].reshape(bh, T, kd)
        s = np.einsum("bik,bjk->bij", q, k) * scale
        t = np.arange(T)
        same_chunk = (t[:, None] // bt) == (t[None, :] // bt)
        causal = (t[:, None] >= t[None, :]) & same_chunk
        return np.where(causal, s, 0.0), np.abs(np.einsum("bik,bjk->bij", np.abs(q), np.abs(k))) * scale * causal

    def ref(i):
        s, _ = scores(i)
        return dict(o_ptr=np.einsum("bij,bjv->biv", s, i["v_ptr"].reshape(bh, T, vd)))

    def tol(i):
        _, s_abs = scores(i)
        mag = np.einsum("bij,bjv->biv", s_abs, np.abs(i["v_ptr"].reshape(bh, T, vd)))
        # fp16: s is rounded to fp16 before the second dot; tf32: inputs keep 10 bits.
        return ({"fp16": 2.0**-9, "fp32": 1e-5}[dt], 2.0**-8 * mag)

    case(
        id=f"linear_attention_intra_{dt}",
        file="linear_attention.py",
        kernel="chunk_linear_attn_intra_kernel",
        sig=(f"q_ptr=*{dt},k_ptr=*{dt},v_ptr=*{dt},o_ptr=*{dt},scale=fp32,T=i32,stride_qk_bh=i32,"
             f"stride_qk_t=i32,stride_vo_bh=i32,stride_vo_t=i32,BT={bt},K={kd},V={vd}"),
        grid=(cdiv(T, bt), bh),
        make=lambda r: dict(q_ptr=r.standard_normal((bh, T, kd)), k_ptr=r.standard_normal((bh, T, kd)),
                            v_ptr=r.standard_normal((bh, T, vd)), o_ptr=np.zeros((bh, T, vd)),
                            scale=scale, T=T, stride_qk_bh=T * kd, stride_qk_t=kd,
                            stride_vo_bh=T * vd, stride_vo_t=vd),
        ref=ref,
        outputs=("o_ptr",),
        tol=dict(o_ptr=tol),
        tol64=dict(o_ptr=lambda i: (1e-12, 1e-12 * np.einsum(
            "bij,bjv->biv", scores(i)[1], np.abs(i["v_ptr"].reshape(bh, T, vd))))),
    )


linear_attention_case("fp16", 3, 40, 16, 16, 32, False)  # last chunk partial (40 = 16 + 16 + 8)
linear_attention_case("fp32", 2, 32, 16, 16, 16, True)


# ---------------------------------------------------------------- scans (scan.py)


def _lin_rec_ref(a, b, reverse):
    """h_t = a_t * h_{t-1} + b_t (reverse: h_{t+1}), from h = 0, over axis 0."""
    h, out = np.zeros(a.shape[1]), np.zeros(a.shape)
    for t in (range(a.shape[0] - 1, -1, -1) if reverse else range(a.shape[0])):
        h = a[t] * h + b[t]
        out[t] = h
    return out


def _lin_rec_case(reverse, T, D, block_d):
    stride = D + 3

    def ref(i):
        h = _lin_rec_ref(i["a_ptr"][:, :D], i["b_ptr"][:, :D], reverse)
        return dict(h_ptr=padded(T, D, stride, h))

    case(
        id=f"linear_recurrence_{'reverse' if reverse else 'forward'}",
        file="scan.py",
        kernel="linear_recurrence_kernel",
        sig=(f"a_ptr=*fp32,b_ptr=*fp32,h_ptr=*fp32,T=i32,D=i32,stride_t=i32,"
             f"BLOCK_T={1 << (T - 1).bit_length()},BLOCK_D={block_d},REVERSE={reverse}"),
        grid=(cdiv(D, block_d),),
        make=lambda r: dict(a_ptr=r.uniform(0.3, 1.1, (T, stride)), b_ptr=r.standard_normal((T, stride)),
                            h_ptr=np.zeros((T, stride)), T=T, D=D, stride_t=stride),
        ref=ref,
        outputs=("h_ptr",),
        tol=dict(h_ptr=(1e-5, 1e-5 * T)),
    )


_lin_rec_case(False, 13, 21, 8)
_lin_rec_case(True, 16, 10, 4)


def _rows_scan_case(id, kernel, rows, cols, ref_fn, make_x=None, reverse=None, tol=None):
    block = 1 << (cols - 1).bit_length()
    consts = f",BLOCK={block}" + ("" if reverse is None else f",REVERSE={reverse}")
    case(
        id=id,
        file="scan.py",
        kernel=kernel,
        sig=f"x_ptr=*fp32,y_ptr=*fp32,n_cols=i32{consts}",
        grid=(rows,),
        make=lambda r: dict(x_ptr=(make_x or (lambda r: r.standard_normal((rows, cols))))(r),
                            y_ptr=np.zeros((rows, cols)), n_cols=cols),
        ref=lambda i: dict(y_ptr=ref_fn(i["x_ptr"])),
        outputs=("y_ptr",),
        tol=dict(y_ptr=tol or fp32_red(cols)),
    )


def _flip_scan(f, x, reverse):
    return np.flip(f(np.flip(x, 1), 1), 1) if reverse else f(x, 1)


def _with_zeros(r, rows, cols):
    x = r.uniform(0.6, 1.4, (rows, cols))
    x[:, 3] = 0.0
    x[0, 0] = x[1, cols - 1] = x[2, 7] = 0.0
    return x


def _chunked_ssm_case(T, D, ct, bd):
    def ref(i):
        a, x = i["a_ptr"], i["x_ptr"]
        return dict(h_ptr=_lin_rec_ref(a, (1.0 - a) * x, False))

    case(
        id="chunked_ssm",
        file="scan.py",
        kernel="chunked_ssm_kernel",
        sig=f"a_ptr=*fp32,x_ptr=*fp32,h_ptr=*fp32,T=i32,D=i32,CT={ct},BD={bd}",
        grid=(cdiv(D, bd),),
        make=lambda r: dict(a_ptr=r.uniform(0.3, 0.95, (T, D)), x_ptr=r.standard_normal((T, D)),
                            h_ptr=np.zeros((T, D)), T=T, D=D),
        ref=ref,
        outputs=("h_ptr",),
        tol=dict(h_ptr=(1e-5, 1e-5 * T)),
    )


_chunked_ssm_case(22, 10, 8, 4)  # 3 chunks, the last partial


_rows_scan_case("scan_add_forward", "scan_add_kernel", 4, 37, lambda x: np.cumsum(x, 1), reverse=False)
_rows_scan_case("scan_add_reverse", "scan_add_kernel", 4, 37, lambda x: _flip_scan(np.cumsum, x, True),
                reverse=True)
_rows_scan_case("cumprod_zeros_forward", "cumprod_kernel", 3, 17, lambda x: np.cumprod(x, 1),
                make_x=lambda r: _with_zeros(r, 3, 17), reverse=False, tol=(1e-5, 1e-6))
_rows_scan_case("cumprod_zeros_reverse", "cumprod_kernel", 3, 17, lambda x: _flip_scan(np.cumprod, x, True),
                make_x=lambda r: _with_zeros(r, 3, 17), reverse=True, tol=(1e-5, 1e-6))
_rows_scan_case("running_max", "running_max_kernel", 4, 29, lambda x: np.maximum.accumulate(x, 1), tol=(0, 0))
def _cummax_index_case(reverse, rows, cols, ties):
    block = 1 << (cols - 1).bit_length()

    def ref(i):
        x = i["x_ptr"]
        y, idx = np.zeros(x.shape), np.zeros(x.shape, dtype=np.int64)
        order = range(cols - 1, -1, -1) if reverse else range(cols)
        for r in range(rows):
            best, at = -np.inf, -1
            for c in order:
                if x[r, c] > best or (x[r, c] == best and c > at):  # ties: the higher index
                    best, at = x[r, c], c
                y[r, c], idx[r, c] = best, at
        return dict(y_ptr=y, i_ptr=idx)

    case(
        id=f"cummax_index_{'reverse' if reverse else 'forward'}",
        file="scan.py",
        kernel="cummax_index_kernel",
        sig=f"x_ptr=*fp32,y_ptr=*fp32,i_ptr=*i32,n_cols=i32,BLOCK={block},REVERSE={reverse}",
        grid=(rows,),
        make=lambda r: dict(x_ptr=np.round(r.standard_normal((rows, cols)), 1 if ties else 12),
                            y_ptr=np.zeros((rows, cols)),
                            i_ptr=np.zeros((rows, cols), dtype=np.int32), n_cols=cols),
        ref=ref,
        outputs=("y_ptr", "i_ptr"),
        tol=dict(y_ptr=(0, 0)),
    )


_cummax_index_case(False, 4, 29, True)  # values rounded to 0.1: ties
_cummax_index_case(True, 3, 21, False)
_rows_scan_case("scan_mul", "scan_mul_kernel", 3, 12, lambda x: np.cumprod(x, 1),
                make_x=lambda r: r.uniform(0.5, 1.5, (3, 12)), tol=(1e-5, 1e-6))

# ------------------------------------------------------------------ tl.reduce with a combine function
# (tests/kernels/reduce.py): Welford's (mean, count, M2) after a column loop, a streaming
# log-sum-exp along rows, summed over all axes (axis=None).


def _welford_case(m, n, bm, bn):
    case(
        id=f"reduce_welford_{m}x{n}",
        file="reduce.py",
        kernel="welford_kernel",
        sig=f"x_ptr=*fp32,var_ptr=*fp32,mean_ptr=*fp32,M=i32,N=i32,correction=fp32,BLOCK_M={bm},BLOCK_N={bn}",
        grid=(cdiv(m, bm),),
        make=lambda r: dict(x_ptr=r.standard_normal((m, n)) + 0.5, var_ptr=np.zeros(m), mean_ptr=np.zeros(m),
                            M=m, N=n, correction=1.0),
        ref=lambda i: dict(var_ptr=np.var(i["x_ptr"], axis=1, ddof=1), mean_ptr=i["x_ptr"].mean(axis=1)),
        outputs=("var_ptr", "mean_ptr"),
        tol=dict(var_ptr=fp32_red(n), mean_ptr=fp32_red(n)),
    )


_welford_case(5, 19, 2, 8)
_welford_case(3, 40, 4, 16)


def _lse_ref(i):
    x = i["x_ptr"]
    mx = x.max(axis=1, keepdims=True)
    return dict(y_ptr=np.array([(mx[:, 0] + np.log(np.exp(x - mx).sum(axis=1))).sum()]))


case(
    id="reduce_logsumexp_rows",
    file="reduce.py",
    kernel="logsumexp_kernel",
    sig="x_ptr=*fp32,y_ptr=*fp32,M=i32,N=i32,BLOCK_M=4,BLOCK_N=8",
    grid=(1,),
    make=lambda r: dict(x_ptr=r.standard_normal((3, 7)), y_ptr=np.zeros(1), M=3, N=7),
    ref=_lse_ref,
    outputs=("y_ptr",),
)


def _methods_ref(i):
    x = i["x_ptr"]
    return dict(y_ptr=x.sum(axis=1) + (x * x).max(axis=1), c_ptr=np.cumsum(x, axis=1))


case(
    id="reduce_method_forms",
    file="reduce.py",
    kernel="method_reduce_kernel",
    sig="x_ptr=*fp32,y_ptr=*fp32,c_ptr=*fp32,M=i32,N=i32,BLOCK_M=2,BLOCK_N=16",
    grid=(3,),
    make=lambda r: dict(x_ptr=r.standard_normal((5, 13)), y_ptr=np.zeros(5), c_ptr=np.zeros((5, 13)), M=5, N=13),
    ref=_methods_ref,
    outputs=("y_ptr", "c_ptr"),
)

# ------------------------------------------------------------------ shapes inside a tile
# tl.split / tl.join / tl.interleave, tl.gather, tl.flip, tl.sort / tl.topk, tl.histogram
# (tests/kernels/tile_shapes.py).


def tile_shape_cases():
    n = 45  # complex numbers; the last program is partial
    case(
        id="complex_mul_interleaved",
        file="tile_shapes.py",
        kernel="complex_mul",
        sig="x_ptr=*fp32,y_ptr=*fp32,z_ptr=*fp32,n=i32,BLOCK=16",
        grid=(cdiv(n, 16),),
        make=lambda r: dict(x_ptr=r.standard_normal(2 * n), y_ptr=r.standard_normal(2 * n),
                            z_ptr=np.zeros(2 * n), n=n),
        ref=lambda i: dict(z_ptr=np.stack(
            [((i["x_ptr"][0::2] + 1j * i["x_ptr"][1::2]) * (i["y_ptr"][0::2] + 1j * i["y_ptr"][1::2])).real,
             ((i["x_ptr"][0::2] + 1j * i["x_ptr"][1::2]) * (i["y_ptr"][0::2] + 1j * i["y_ptr"][1::2])).imag],
            axis=1).reshape(-1)),
        outputs=("z_ptr",),
    )

    rows, d = 13, 16

    def rotary_ref(i):
        x, c, s = i["x_ptr"], i["cos_ptr"], i["sin_ptr"]
        x1, x2 = x[:, : d // 2], x[:, d // 2:]
        return dict(y_ptr=np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=1))

    case(
        id="rotary_half_split_join",
        file="tile_shapes.py",
        kernel="rotary_half",
        sig=f"x_ptr=*fp32,cos_ptr=*fp32,sin_ptr=*fp32,y_ptr=*fp32,rows=i32,D={d},BLOCK=4",
        grid=(cdiv(rows, 4),),
        make=lambda r: dict(x_ptr=r.standard_normal((rows, d)), cos_ptr=np.cos(r.uniform(0, 3, d // 2)),
                            sin_ptr=np.sin(r.uniform(0, 3, d // 2)), y_ptr=np.zeros((rows, d)), rows=rows),
        ref=rotary_ref,
        outputs=("y_ptr",),
    )

    m, v, dd = 37, 16, 8
    case(
        id="embed_gather_tile",
        file="tile_shapes.py",
        kernel="embed_gather",
        sig=f"table_ptr=*fp32,ids_ptr=*i32,scale_ptr=*fp32,out_ptr=*fp32,n=i32,V={v},D={dd},BLOCK=16",
        grid=(cdiv(m, 16),),
        make=lambda r: dict(table_ptr=r.standard_normal((v, dd)), ids_ptr=r.integers(0, v, m).astype(np.int32),
                            scale_ptr=r.standard_normal(m), out_ptr=np.zeros((m, dd)), n=m),
        ref=lambda i: dict(out_ptr=i["table_ptr"][i["ids_ptr"].astype(np.int64)] * i["scale_ptr"][:, None]),
        outputs=("out_ptr",),
    )

    gr, gn, gk = 5, 16, 32
    case(
        id="gather_cols_repeats",
        file="tile_shapes.py",
        kernel="gather_cols",
        sig=f"x_ptr=*fp32,perm_ptr=*i32,y_ptr=*fp32,N={gn},K={gk}",
        grid=(gr,),
        make=lambda r: dict(x_ptr=r.standard_normal((gr, gn)), perm_ptr=r.integers(0, gn, (gr, gk)).astype(np.int32),
                            y_ptr=np.zeros((gr, gk))),
        ref=lambda i: dict(y_ptr=np.take_along_axis(i["x_ptr"], i["perm_ptr"].astype(np.int64), 1) ** 2),
        outputs=("y_ptr",),
    )

    fr, fn, fm = 3, 4, 8
    case(
        id="flip_mix",
        file="tile_shapes.py",
        kernel="flip_mix",
        sig=f"x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32,N={fn},M={fm}",
        grid=(fr,),
        make=lambda r: dict(x_ptr=r.standard_normal((fr, fn, fm)), w_ptr=r.standard_normal(fm),
                            y_ptr=np.zeros((fr, fn, fm))),
        ref=lambda i: dict(y_ptr=i["x_ptr"][:, :, ::-1] * i["w_ptr"] + i["x_ptr"][:, ::-1, :] * np.sin(i["x_ptr"])),
        outputs=("y_ptr",),
    )

    sr, sn, sk = 4, 16, 4
    for desc in (0, 1):
        def sort_ref(i, desc=desc):
            y = np.sort(i["x_ptr"] ** 2 + i["x_ptr"], axis=1)
            if desc:
                y = y[:, ::-1]
            t = -np.sort(-np.exp(i["x_ptr"]), axis=1)[:, :sk]
            return dict(y_ptr=y * np.arange(sn), t_ptr=t)

        case(
            id=f"sort_topk_{'desc' if desc else 'asc'}",
            file="tile_shapes.py",
            kernel="sort_rows",
            sig=f"x_ptr=*fp32,y_ptr=*fp32,t_ptr=*fp32,N={sn},K={sk},DESC={desc}",
            grid=(sr,),
            make=lambda r: dict(x_ptr=r.standard_normal((sr, sn)), y_ptr=np.zeros((sr, sn)),
                                t_ptr=np.zeros((sr, sk))),
            ref=sort_ref,
            outputs=("y_ptr", "t_ptr"),
        )

    hn, bins, hb = 100, 16, 32

    def hist_ref(i):
        x = i["x_ptr"].astype(np.int64)
        h = np.zeros((cdiv(hn, hb), bins))
        for p in range(cdiv(hn, hb)):
            h[p] = np.bincount(x[p * hb:(p + 1) * hb], minlength=bins)
        return dict(h_ptr=h)

    case(
        id="histogram_tile_masked",
        file="tile_shapes.py",
        kernel="hist",
        sig=f"x_ptr=*i32,h_ptr=*i32,n=i32,BINS={bins},BLOCK={hb}",
        grid=(cdiv(hn, hb),),
        make=lambda r: dict(x_ptr=r.integers(0, bins, hn).astype(np.int32),
                            h_ptr=np.zeros((cdiv(hn, hb), bins), dtype=np.int32), n=hn),
        ref=hist_ref,
        outputs=("h_ptr",),
    )


tile_shape_cases()

CASE_IDS = [c.id for c in CASES]
assert len(set(CASE_IDS)) == len(CASE_IDS), "duplicate case ids"
