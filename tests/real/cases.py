"""The cases of the real-kernel corpus (see corpus.py).  Each launch mirrors
the host wrapper of the named library function (quoted in the comment); each
reference is the math written plainly in torch, here."""
import math

import torch
import torch.nn.functional as F
import triton

from corpus import case, cdiv, empty, randn

np2 = triton.next_power_of_2
FG = "flag_gems"


def rows(t, n):
    return t.reshape(-1, n)


# ---------------------------------------------------------------- FlagGems 5.0.2

def _rms_ref(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


@case("fg_rms_norm", FG, "flag_gems.ops.rms_norm", "rms_norm_kernel", ["in_ptr", "w_ptr"], ["out_ptr"])
def _(g, small):
    # flag_gems.ops.rms_norm.rms_norm_forward, N <= 4096
    M, N = (3, 20) if small else (6, 300)
    def launch(k, t):
        x, w = t["in_ptr"], t["w_ptr"]
        y, inv = empty(x, M, N), empty(x, M, dtype=torch.float32)
        k[M,](y, inv, x, w, N, 1, N, 1, N, 1e-5, np2(N))
        return dict(out_ptr=y)
    return dict(in_ptr=randn(g, M, N), w_ptr=randn(g, N, shift=1.0)), launch, \
        lambda t: dict(out_ptr=_rms_ref(t["in_ptr"], t["w_ptr"], 1e-5))


# leaves are keyed by parameter name from here on (the launch picks them out)
def _rms_loop(g, small):
    # rms_norm_forward, N > 4096 path (autotuned TILE_N; any N works)
    M, N = (2, 40) if small else (4, 700)
    def launch(k, t):
        x = t["in_ptr"]
        y, inv = empty(x, M, N), empty(x, M, dtype=torch.float32)
        k[M,](y, inv, x, t["w_ptr"], N, 1e-5)
        return dict(out_ptr=y)
    return dict(in_ptr=randn(g, M, N), w_ptr=randn(g, N, shift=1.0)), launch, \
        lambda t: dict(out_ptr=_rms_ref(t["in_ptr"], t["w_ptr"], 1e-5))


case("fg_rms_norm_loop", FG, "flag_gems.ops.rms_norm", "rms_norm_loop_kernel", ["in_ptr", "w_ptr"], ["out_ptr"])(_rms_loop)


def _ln_ref(x, w, b, eps):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def _ln(variant):
    def setup(g, small):
        # flag_gems.ops.layernorm.layer_norm: N <= 128 multiline, N <= 4096 persistent, else loop
        M, N = {"multiline": ((5, 24), (40, 100)), "persistent": ((3, 30), (6, 300)),
                "loop": ((2, 40), (4, 700))}[variant][0 if small else 1]
        def launch(k, t):
            x = t["in_ptr"]
            y, mean, rstd = empty(x, M, N), empty(x, M), empty(x, M)
            if variant == "multiline":
                TN = np2(N)
                TM = cdiv(1024, TN)
                k[(cdiv(M, TM), 1, 1)](x, y, t["weight_ptr"], t["bias_ptr"], mean, rstd, M, N, 1e-5, TM, TN)
            elif variant == "persistent":
                k[(M, 1, 1)](x, y, t["weight_ptr"], t["bias_ptr"], mean, rstd, M, N, 1e-5, np2(N))
            else:
                k[(M, 1, 1)](x, y, t["weight_ptr"], t["bias_ptr"], mean, rstd, M, N, 1e-5)
            return dict(out_ptr=y)
        return dict(in_ptr=randn(g, M, N, scale=2.0, shift=0.5), weight_ptr=randn(g, N, shift=1.0),
                    bias_ptr=randn(g, N)), launch, \
            lambda t: dict(out_ptr=_ln_ref(t["in_ptr"], t["weight_ptr"], t["bias_ptr"], 1e-5))
    return setup


for _v, _k in (("persistent", "layer_norm_persistent_kernel"), ("multiline", "layer_norm_persistent_kernel_multiline"),
               ("loop", "layer_norm_loop_kernel")):
    case(f"fg_layer_norm_{_v}", FG, "flag_gems.ops.layernorm", _k, ["in_ptr", "weight_ptr", "bias_ptr"],
         ["out_ptr"])(_ln(_v))


@case("fg_log_softmax", FG, "flag_gems.ops.log_softmax", "log_softmax_kernel", ["input_ptr"], ["output_ptr"])
def _(g, small):
    # flag_gems.ops.log_softmax.log_softmax(x, dim=-1): M rows, K = 1
    M, N = (3, 20) if small else (10, 300)
    def launch(k, t):
        x = t["input_ptr"]
        y = empty(x, M, N)
        k[lambda meta: (cdiv(M, meta["BLOCK_M"]), 1)](y, x, M, N, 1, num_warps=8)
        return dict(output_ptr=y)
    return dict(input_ptr=randn(g, M, N, scale=2.0)), launch, \
        lambda t: dict(output_ptr=torch.log_softmax(t["input_ptr"], -1))


def _softmax(inner):
    def setup(g, small):
        # flag_gems.ops.softmax.softmax: K == 1 -> inner (grid (M,1,1)); K > 1 -> non_inner over dim 1
        if inner:
            M, N, K = (3, 20, 1) if small else (6, 300, 1)
        else:
            M, N, K = (2, 5, 3) if small else (3, 40, 6)
        def launch(k, t):
            x = t["input_ptr"]
            y = empty(x, M, N, K)
            if inner:
                k[(M, 1, 1)](y, x, M, N)
            else:
                k[lambda meta: (M, cdiv(K, meta["TILE_K"]), 1)](y, x, M, N, K)
            return dict(output_ptr=y)
        return dict(input_ptr=randn(g, M, N, K, scale=2.0)), launch, \
            lambda t: dict(output_ptr=torch.softmax(t["input_ptr"], 1))
    return setup


case("fg_softmax_inner", FG, "flag_gems.ops.softmax", "softmax_kernel_inner", ["input_ptr"], ["output_ptr"])(_softmax(True))
case("fg_softmax_non_inner", FG, "flag_gems.ops.softmax", "softmax_kernel_non_inner", ["input_ptr"],
     ["output_ptr"], why="CPU: FlagGems' softmax_non_inner heuristics (TILE_K, num_warps) read the CUDA device's "
     "properties at launch; runs on a GPU")(_softmax(False))


@case("fg_group_norm", FG, "flag_gems.ops.groupnorm", "group_norm_kernel", ["X", "W", "B"], ["Y"])
def _(g, small):
    # flag_gems.ops.groupnorm.group_norm(input, weight, bias, N, C, HxW, group, eps)
    N, C, HW, G = (2, 4, 5, 2) if small else (3, 6, 20, 3)
    gs = cdiv(C, G)
    def launch(k, t):
        x = t["X"]
        y, mean, rstd = empty(x, N, C, HW), empty(x, N, G), empty(x, N, G)
        k[(N * G,)](x, y, t["W"], t["B"], mean, rstd, gs, C, HW, G, 1e-5,
                    BLOCK_GROUP_SIZE=np2(gs), BLOCK_HW_SIZE=np2(HW))
        return dict(Y=y)
    return dict(X=randn(g, N, C, HW, shift=0.3), W=randn(g, C, shift=1.0), B=randn(g, C)), launch, \
        lambda t: dict(Y=F.group_norm(t["X"], G, t["W"], t["B"], 1e-5))


@case("fg_fused_add_rms_norm", FG, "flag_gems.fused.fused_add_rms_norm", "fused_add_rms_norm_kernel",
      ["input_ptr", "residual_ptr", "w_ptr"], ["input_ptr", "residual_ptr"], why=None)
def _(g, small):
    # flag_gems.fused.fused_add_rms_norm: in place, x <- rmsnorm(x + r) * w, r <- x + r
    M, N = (3, 20) if small else (6, 300)
    def launch(k, t):
        x, r = t["input_ptr"].clone(), t["residual_ptr"].clone()
        k[M,](x, r, t["w_ptr"], N, 1, N, 1, N, 1e-5, np2(N))
        return dict(input_ptr=x, residual_ptr=r)
    def ref(t):
        s = t["input_ptr"] + t["residual_ptr"]
        return dict(input_ptr=_rms_ref(s, t["w_ptr"], 1e-5), residual_ptr=s)
    return dict(input_ptr=randn(g, M, N), residual_ptr=randn(g, M, N), w_ptr=randn(g, N, shift=1.0)), launch, ref


@case("fg_skip_layernorm", FG, "flag_gems.fused.skip_layernorm", "skip_layer_norm_kernel", ["X", "R", "W", "B"], ["Y"])
def _(g, small):
    # flag_gems.fused.skip_layernorm.skip_layer_norm
    M, N = (3, 20) if small else (6, 300)
    def launch(k, t):
        x = t["X"]
        y = empty(x, M, N)
        k[M,](y, x, t["R"], t["W"], t["B"], N, 1, N, 1, N, 1, N, 1e-5, np2(N))
        return dict(Y=y)
    return dict(X=randn(g, M, N), R=randn(g, M, N), W=randn(g, N, shift=1.0), B=randn(g, N)), launch, \
        lambda t: dict(Y=_ln_ref(t["X"] + t["R"], t["W"], t["B"], 1e-5))


def _rope_ref(x, cos, sin, pos):
    # x: (T, H, D), cos/sin: (S, D/2); non-interleaved: rotate halves
    c = torch.cat([cos[pos], cos[pos]], -1)[:, None, :]
    s = torch.cat([sin[pos], sin[pos]], -1)[:, None, :]
    h = x.shape[-1] // 2
    rot = torch.cat([-x[..., h:], x[..., :h]], -1)
    return x * c + rot * s


@case("fg_rotary_embedding", FG, "flag_gems.fused.rotary_embedding", "apply_rotary_pos_emb_kernel",
      ["q_ptr", "k_ptr", "cos_ptr", "sin_ptr"], ["oq_ptr", "ok_ptr"])
def _(g, small):
    # flag_gems.fused.rotary_embedding.apply_rotary_pos_emb(q, k, cos, sin, position_ids, inplace=False)
    T, HQ, HK, D, S = (3, 2, 1, 8, 5) if small else (6, 4, 2, 32, 10)
    pos = torch.randint(0, S, (T,), generator=g)
    def launch(k, t):
        q, kk, cos, sin = t["q_ptr"], t["k_ptr"], t["cos_ptr"], t["sin_ptr"]
        oq, ok = torch.empty_like(q), torch.empty_like(kk)
        p = t["pos"]
        k[(T,)](oq, ok, q, kk, cos, sin, p, *q.stride(), *kk.stride(), *oq.stride(), *ok.stride(),
                p.stride(0), cos.stride(0), sin.stride(0), T, HQ, HK, D, np2(D), False,
                MAX_POSITION_EMBEDDINGS=S)
        return dict(oq_ptr=oq, ok_ptr=ok)
    def ref(t):
        return dict(oq_ptr=_rope_ref(t["q_ptr"], t["cos_ptr"], t["sin_ptr"], t["pos"]),
                    ok_ptr=_rope_ref(t["k_ptr"], t["cos_ptr"], t["sin_ptr"], t["pos"]))
    return dict(q_ptr=randn(g, T, HQ, D), k_ptr=randn(g, T, HK, D), cos_ptr=randn(g, S, D // 2),
                sin_ptr=randn(g, S, D // 2), pos=pos), launch, ref


@case("fg_cross_entropy_indices", FG, "flag_gems.fused.cross_entropy_loss", "celoss_indices_kernel",
      ["inp_ptr", "w_ptr"], ["out_ptr"])
def _(g, small):
    # flag_gems.fused.cross_entropy_loss: inp (N, C, D), target indices (N, D), class weights
    N, C, D = (2, 5, 3) if small else (3, 40, 4)
    tgt = torch.randint(0, C, (N, D), generator=g)
    tgt[0, 0] = -100  # ignore_index
    def launch(k, t):
        x = t["inp_ptr"]
        out, w_tgt = empty(x, N, D, dtype=torch.float32), empty(x, N, D, dtype=torch.float32)
        k[lambda meta: (cdiv(D, meta["BLOCK_D"]), N)](x, t["tgt"], t["w_ptr"], out, w_tgt, -100, C, D)
        return dict(out_ptr=out)
    def ref(t):
        x, w = t["inp_ptr"], t["w_ptr"]
        return dict(out_ptr=F.cross_entropy(x, t["tgt"], weight=w, ignore_index=-100, reduction="none"))
    return dict(inp_ptr=randn(g, N, C, D, scale=2.0), w_ptr=randn(g, C, scale=0.3, shift=1.0), tgt=tgt), launch, ref


def _glu(act):
    def setup(g, small):
        # flag_gems.fused.swiglu.swiglu / geglu.geglu: input (M, 2H) -> (M, H), blocks 64 x 64
        M, H = (5, 6) if small else (70, 80)
        def launch(k, t):
            x = t["input_ptr"]
            y = empty(x, M, H)
            k[(cdiv(M, 64), cdiv(H, 64))](x, y, M, H, x.stride(0), x.stride(1), y.stride(0), y.stride(1),
                                          BLOCK_SIZE_M=64, BLOCK_SIZE_H=64)
            return dict(output_ptr=y)
        def ref(t):
            a, b = t["input_ptr"][:, :H], t["input_ptr"][:, H:]
            return dict(output_ptr=(F.silu(a) if act == "silu" else F.gelu(a, approximate="tanh")) * b)
        return dict(input_ptr=randn(g, M, 2 * H, scale=2.0)), launch, ref
    return setup


case("fg_swiglu", FG, "flag_gems.fused.swiglu", "swiglu_kernel", ["input_ptr"], ["output_ptr"])(_glu("silu"))
case("fg_geglu", FG, "flag_gems.fused.geglu", "geglu_kernel", ["input_ptr"], ["output_ptr"], tol=1e-4)(_glu("gelu"))


def _wn_ref(v, g_, dim):
    other = [d for d in range(v.dim()) if d != dim]
    return v * (g_ / torch.sqrt((v * v).sum(other) + torch.finfo(torch.float32).tiny)).reshape(
        [-1 if d == dim else 1 for d in range(v.dim())])


@case("fg_weight_norm_except_dim", FG, "flag_gems.fused.weight_norm", "weight_norm_except_dim_kernel",
      ["v", "g"], ["output"])
def _(g, small):
    # flag_gems.fused.weight_norm.weight_norm_except_dim(v, g, dim=1) on a 3-d v
    A, B, C = (2, 3, 4) if small else (4, 10, 12)
    def launch(k, t):
        v = t["v"]
        out, norm = torch.empty_like(v), empty(v, B)
        k[lambda meta: (cdiv(B, meta["BLOCK_ROW_SIZE"]),)](out, norm, v, t["g"], A, B, C,
                                                          eps=torch.finfo(torch.float32).tiny)
        return dict(output=out)
    return dict(v=randn(g, A, B, C), g=randn(g, B, shift=1.0)), launch, \
        lambda t: dict(output=_wn_ref(t["v"], t["g"][None, :, None], 1))


@case("fg_weight_norm_last", FG, "flag_gems.ops.weightnorm", "weight_norm_kernel_last", ["v", "g"], ["output"])
def _(g, small):
    # flag_gems.ops.weightnorm.weight_norm_interface(v, g, dim=v.ndim - 1)
    M, N = (5, 3) if small else (40, 24)
    def launch(k, t):
        v = t["v"]
        out, norm = torch.empty_like(v), empty(v, N)
        k[lambda meta: (cdiv(N, meta["BLOCK_COL_SIZE"]),)](out, norm, v, t["g"], M, N,
                                                          eps=torch.finfo(torch.float32).tiny)
        return dict(output=out)
    return dict(v=randn(g, M, N), g=randn(g, N, shift=1.0)), launch, \
        lambda t: dict(output=_wn_ref(t["v"], t["g"][None, :], 1))


@case("fg_weight_norm_first", FG, "flag_gems.ops.weightnorm", "weight_norm_kernel_first", ["v", "g"], ["output"])
def _(g, small):
    # flag_gems.ops.weightnorm.weight_norm_interface(v, g, dim=0)
    M, N = (3, 5) if small else (24, 40)
    def launch(k, t):
        v = t["v"]
        out, norm = torch.empty_like(v), empty(v, M)
        k[lambda meta: (cdiv(M, meta["BLOCK_ROW_SIZE"]),)](out, norm, v, t["g"], M, N,
                                                          eps=torch.finfo(torch.float32).tiny)
        return dict(output=out)
    return dict(v=randn(g, M, N), g=randn(g, M, shift=1.0)), launch, \
        lambda t: dict(output=_wn_ref(t["v"], t["g"][:, None], 0))


def _two_stage(M, small):
    bs = np2(math.ceil(math.sqrt(M)))
    mid = cdiv(M, bs)
    return bs, mid, np2(mid)


@case("fg_mean_stage1", FG, "flag_gems.ops.mean", "mean_kernel_1", ["inp"], ["mid"])
def _(g, small):
    # flag_gems.ops.mean.mean: mean_kernel_1[(mid_size, 1, 1)](inp, mid, M, block_size)
    M = 30 if small else 1000
    bs, mid_size, _ = _two_stage(M, small)
    def launch(k, t):
        x = t["inp"]
        mid = empty(x, mid_size)
        k[(mid_size, 1, 1)](x, mid, M, bs)
        return dict(mid=mid)
    return dict(inp=randn(g, M)), launch, \
        lambda t: dict(mid=F.pad(t["inp"], (0, mid_size * bs - M)).reshape(mid_size, bs).sum(1))


@case("fg_mean_stage2", FG, "flag_gems.ops.mean", "mean_kernel_2", ["mid"], ["out"])
def _(g, small):
    # flag_gems.ops.mean.mean: mean_kernel_2[(1, 1, 1)](mid, out, M, mid_size, block_mid)
    M = 30 if small else 1000
    _, mid_size, bm = _two_stage(M, small)
    def launch(k, t):
        mid = t["mid"]
        out = empty(mid, 1)
        k[(1, 1, 1)](mid, out, M, mid_size, bm)
        return dict(out=out)
    return dict(mid=randn(g, mid_size)), launch, lambda t: dict(out=(t["mid"].sum() / M).reshape(1))


@case("fg_mse_loss_stage1", FG, "flag_gems.ops.mse_loss", "kernel_1", ["inp", "target"], ["mid"])
def _(g, small):
    # flag_gems.ops.mse_loss.mse_loss(reduction=mean): kernel_1[(mid_size, 1, 1)](inp, target, mid, M, bs, 1)
    M = 30 if small else 1000
    bs, mid_size, _ = _two_stage(M, small)
    def launch(k, t):
        x = t["inp"]
        mid = empty(x, mid_size)
        k[(mid_size, 1, 1)](x, t["target"], mid, M, bs, 1)
        return dict(mid=mid)
    def ref(t):
        d = (t["inp"] - t["target"]) ** 2 / M
        return dict(mid=F.pad(d, (0, mid_size * bs - M)).reshape(mid_size, bs).sum(1))
    return dict(inp=randn(g, M), target=randn(g, M)), launch, ref


@case("fg_l2_norm_stage1", FG, "flag_gems.ops.vector_norm", "l2_norm_kernel_1", ["X"], ["Mid"])
def _(g, small):
    # flag_gems.ops.vector_norm.vector_norm(x, 2, dim=None)
    M = 30 if small else 1000
    bs, mid_size, _ = _two_stage(M, small)
    def launch(k, t):
        x = t["X"]
        mid = empty(x, mid_size)
        k[(mid_size,)](x, mid, M, bs)
        return dict(Mid=mid)
    return dict(X=randn(g, M)), launch, \
        lambda t: dict(Mid=F.pad(t["X"] ** 2, (0, mid_size * bs - M)).reshape(mid_size, bs).sum(1))


@case("fg_l2_norm_stage2", FG, "flag_gems.ops.vector_norm", "l2_norm_kernel_2", ["Mid"], ["Out"])
def _(g, small):
    M = 30 if small else 1000
    _, mid_size, bm = _two_stage(M, small)
    def launch(k, t):
        mid = t["Mid"]
        out = empty(mid, 1)
        k[(1,)](mid, out, mid_size, bm)
        return dict(Out=out)
    return dict(Mid=randn(g, mid_size).abs() + 0.1), launch, lambda t: dict(Out=t["Mid"].sum().sqrt().reshape(1))


@case("fg_l2_norm_dim", FG, "flag_gems.ops.vector_norm", "l2_norm_kernel", ["X"], ["Out"])
def _(g, small):
    # vector_norm(x, 2, dim=-1): l2_norm_kernel[grid](x, out, M, N), autotuned BLOCK_M/BLOCK_N
    M, N = (3, 20) if small else (10, 300)
    def launch(k, t):
        x = t["X"]
        out = empty(x, M)
        k[lambda meta: (cdiv(M, meta["BLOCK_M"]),)](x, out, M, N)
        return dict(Out=out)
    return dict(X=randn(g, M, N)), launch, lambda t: dict(Out=t["X"].norm(dim=-1))


@case("fg_instance_norm_persistent", FG, "flag_gems.fused.instance_norm", "instance_norm_persistent_kernel",
      ["in_ptr", "weight_ptr", "bias_ptr"], ["out_ptr"])
def _(g, small):
    # flag_gems.fused.instance_norm.instance_norm, 128 < N <= 4096 (here any N), with weight and bias
    B, C, N = (2, 2, 12) if small else (2, 3, 200)
    M = B * C
    def launch(k, t):
        x = t["in_ptr"]
        y, mean, rstd = empty(x, B, C, N), empty(x, M), empty(x, M)
        k[(M, 1, 1)](x, y, t["weight_ptr"], t["bias_ptr"], mean, rstd, M, N, C, 1e-5, np2(N), HAS_WEIGHT_BIAS=True)
        return dict(out_ptr=y)
    return dict(in_ptr=randn(g, B, C, N, shift=0.5), weight_ptr=randn(g, C, shift=1.0), bias_ptr=randn(g, C)), launch, \
        lambda t: dict(out_ptr=F.instance_norm(t["in_ptr"], weight=t["weight_ptr"], bias=t["bias_ptr"], eps=1e-5))


@case("fg_prelu", FG, "flag_gems.ops.prelu", "prelu_kernel", ["x_ptr", "w_ptr"], ["out_ptr"])
def _(g, small):
    # flag_gems.ops.prelu.prelu(x, weight) with x (B, C, H, W) and one slope per channel, BLOCK_SIZE 1024
    B, C, H, W = (2, 3, 2, 3) if small else (4, 6, 10, 12)
    n = B * C * H * W
    def launch(k, t):
        x = t["x_ptr"]
        y = torch.empty_like(x)
        k[lambda meta: (cdiv(n, meta["BLOCK_SIZE"]),)](x, t["w_ptr"], y, n, H * W, C, w_is_scalar=False,
                                                      BLOCK_SIZE=1024)
        return dict(out_ptr=y)
    return dict(x_ptr=randn(g, B, C, H, W), w_ptr=randn(g, C, scale=0.3)), launch, \
        lambda t: dict(out_ptr=F.prelu(t["x_ptr"], t["w_ptr"]))


@case("fg_mm_general", FG, "flag_gems.ops.mm", "mm_kernel_general", ["A", "B"], ["C"])
def _(g, small):
    # flag_gems.ops.mm.general_mm(a, b, c, M, N, K), tuned BLOCK_M/N/K by FlagGems' LibTuner
    M, N, K = (5, 6, 7) if small else (40, 48, 70)
    def launch(k, t):
        a, b = t["A"], t["B"]
        c = empty(a, M, N)
        k[lambda meta: (cdiv(M, meta["BLOCK_M"]) * cdiv(N, meta["BLOCK_N"]),)](
            a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), GROUP_M=8)
        return dict(C=c)
    return dict(A=randn(g, M, K), B=randn(g, K, N)), launch, lambda t: dict(C=t["A"] @ t["B"])


# ---------------------------------------------------------------- xformers 0.0.35
XF = "xformers"


def _xf_rms(weight, add):
    def setup(g, small):
        # xformers.ops._triton.rmsnorm_kernels._rms_norm_forward / _rms_norm_add_forward
        M, N = (3, 20) if small else (6, 300)
        BLOCK = max(min(np2(N), 8192), 128)
        def launch(k, t):
            x = t["x_ptr"].clone() if add else t["x_ptr"]
            out = torch.empty_like(x)
            w = t["w_ptr"] if weight else None
            nw = min(max(BLOCK // 256, 1), 8)
            if add:
                k[(M,)](x, t["y_ptr"], out, w, 1e-6, x.stride(0), N, BLOCK_SIZE=BLOCK, num_warps=nw, INCLUDE_WEIGHT=weight)
                return dict(h1_ptr=out, x_ptr=x)
            k[(M,)](x, out, w, 1e-6, x.stride(0), N, BLOCK_SIZE=BLOCK, num_warps=nw, INCLUDE_WEIGHT=weight)
            return dict(h1_ptr=out)
        def ref(t):
            x = t["x_ptr"] + t["y_ptr"] if add else t["x_ptr"]
            h = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6)
            if weight:
                h = h * t["w_ptr"]
            return dict(h1_ptr=h, x_ptr=x) if add else dict(h1_ptr=h)
        leaves = dict(x_ptr=randn(g, M, N))
        if add:
            leaves["y_ptr"] = randn(g, M, N)
        if weight:
            leaves["w_ptr"] = randn(g, N, shift=1.0)
        return leaves, launch, ref
    return setup


case("xf_rms_norm", XF, "xformers.ops._triton.rmsnorm_kernels", "_rms_norm_kernel", ["x_ptr", "w_ptr"],
     ["h1_ptr"])(_xf_rms(True, False))
case("xf_rms_norm_no_weight", XF, "xformers.ops._triton.rmsnorm_kernels", "_rms_norm_kernel", ["x_ptr"],
     ["h1_ptr"])(_xf_rms(False, False))
case("xf_rms_norm_add", XF, "xformers.ops._triton.rmsnorm_kernels", "_rms_norm_add_kernel",
     ["x_ptr", "y_ptr", "w_ptr"], ["h1_ptr", "x_ptr"])(_xf_rms(True, True))


# ---------------------------------------------------------------- bitsandbytes 0.50.2
# NF4 code values (QLoRA paper, appendix): the 4-bit index i decodes to NF4[i] * absmax of its block.
NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
       -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
       0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
       0.7229568362236023, 1.0]


@case("bnb_dequant_nf4", "bitsandbytes", "bitsandbytes.backends.triton.kernels_4bit", "dequant_nf4_kernel",
      ["absmax_ptr"], ["c_ptr"])
def _(g, small):
    # bitsandbytes.backends.triton.kernels_4bit.dequantize_4bit_impl(A, absmax, blocksize, "nf4", ...):
    # each byte holds two codes (high nibble first), one absmax per blocksize outputs; SPLIT_SIZE 256
    n_out, block = (64, 16) if small else (1024, 64)
    packed = torch.randint(0, 256, (n_out // 2,), generator=g, dtype=torch.uint8)
    def launch(k, t):
        am = t["absmax_ptr"]
        out = empty(am, n_out)
        a = t["A"]
        k[(cdiv(a.numel(), 256),)](a, out, am, a.numel(), n_out, block, 256)
        return dict(c_ptr=out)
    def ref(t):
        a = t["A"].long()
        codes = torch.stack([a >> 4, a & 15], 1).reshape(-1)
        table = torch.tensor(NF4, dtype=t["absmax_ptr"].dtype, device=a.device)
        return dict(c_ptr=table[codes] * t["absmax_ptr"].repeat_interleave(block))
    return dict(absmax_ptr=randn(g, n_out // block).abs() + 0.5, A=packed), launch, ref


# ---------------------------------------------------------------- torchao 0.18.0

@case("ao_scaled_int8_mm", "torchao", "torchao.prototype.quantized_training.int8_mm", "_scaled_int8_mm_kernel",
      ["row_scale_ptr", "col_scale_ptr"], ["C_ptr"])
def _(g, small):
    # torchao.prototype.quantized_training.int8_mm.scaled_int8_mm_cuda(A, B, row_scale, col_scale):
    # int8 A (M, K) @ int8 B (K, N), int32 accumulation, times row and column scales (differentiable)
    M, N, K = (5, 6, 64) if small else (20, 24, 128)
    A = torch.randint(-128, 128, (M, K), generator=g, dtype=torch.int8)
    B = torch.randint(-128, 128, (N, K), generator=g, dtype=torch.int8).T  # column-major, as in int8 linear
    def launch(k, t):
        a, b, rs = t["A"], t["B"], t["row_scale_ptr"]
        c = empty(rs, M, N)
        k[lambda meta: (cdiv(meta["M"], meta["BLOCK_M"]) * cdiv(meta["N"], meta["BLOCK_N"]),)](
            a, b, c, rs, t["col_scale_ptr"], M, N, K, *a.stride(), *b.stride(), *c.stride(), COL_SCALE_SCALAR=False)
        return dict(C_ptr=c)
    def ref(t):
        acc = t["A"].double() @ t["B"].double()
        return dict(C_ptr=acc.to(t["row_scale_ptr"].dtype) * t["row_scale_ptr"][:, None] * t["col_scale_ptr"][None, :])
    return dict(A=A, B=B, row_scale_ptr=randn(g, M, scale=1e-3), col_scale_ptr=randn(g, N, scale=1e-3)), launch, ref
