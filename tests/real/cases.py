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
        # F.cross_entropy(x, tgt, weight=w, ignore_index=-100, reduction="none"), written out: torch
        # does not differentiate cross_entropy with respect to its class weights
        x, w, tg = t["inp_ptr"], t["w_ptr"], t["tgt"]
        tc = tg.clamp(min=0)
        xt = x.gather(1, tc[:, None, :])[:, 0, :]
        loss = w[tc] * (torch.logsumexp(x, dim=1) - xt)
        return dict(out_ptr=torch.where(tg == -100, torch.zeros_like(loss), loss))
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
        lambda t: dict(output=_wn_ref(t["v"], t["g"], 1))


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
        lambda t: dict(output=_wn_ref(t["v"], t["g"], 0))


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


# xformers: split-K attention (xformers.ops.fmha.triton_splitk)
def _xf_unroll(n):
    def make(kernel):
        # the host function specializes the vararg kernel for n groups/splits first (xformers' own
        # xformers.triton.vararg_kernel.unroll_varargs), then launches what that returns
        from xformers.triton.vararg_kernel import unroll_varargs
        return unroll_varargs(kernel, N=n)
    return make


def _xf_splitk_make(kernel):
    # FwOp.get_kernel() with AUTOTUNE off: the kernel unrolled for one quantization group under the
    # BOUNDS_CHECKS_N heuristic (xformers' own _get_splitk_kernel(1))
    from xformers.ops.fmha._triton.splitk_kernels import _get_splitk_kernel
    return _get_splitk_kernel(1)


def _attn_ref(q, k, v, scale):
    # q (B, Mq, G, H, D), k/v (B, Mk, G, H, D) -> (B, G, H, Mq, D)
    s = torch.einsum("bmghd,bnghd->bghmn", q, k) * scale
    return torch.einsum("bghmn,bnghd->bghmd", torch.softmax(s, -1), v)


@case("xf_splitk_attention_fwd", XF, "xformers.ops.fmha._triton.splitk_kernels", "_fwd_kernel_splitK",
      ["Q", "K", "V"], ["Out_splitK"], make=_xf_splitk_make, gpu_tol=5e-3)  # GPU: the kernel's fp32 dots run in TF32
def _(g, small):
    # xformers.ops.fmha.triton_splitk.FwOp.apply on BMGHK inputs without bias, split_k = 1, no LSE
    # (inference): one program per (query block, batch*group*head) runs over the keys in BLOCK_N
    # steps through block pointers, keeping a running max and sum (online softmax)
    B, Mq, G, H, D, Mk = (1, 2, 1, 2, 16, 20) if small else (2, 3, 1, 2, 16, 70)
    scale = D ** -0.5
    def launch(k, t):
        q, kk, v = t["Q"], t["K"], t["V"]
        o = torch.empty(B, 1, Mq, G, H, D, dtype=q.dtype, device=q.device).permute(0, 3, 4, 1, 2, 5)
        st = lambda x, names: {f"stride_{n}": s for n, s in zip(names, x.stride())}
        nones = {f"stride_{n}": None for n in ("lsek_z", "lsek_g", "lsek_h", "lsek_s", "lsek_m", "blocktablesz",
                                               "blocktablesl", "bias_b", "bias_g", "bias_h", "bias_qm", "bias_km")}
        nones.update({f"stride_{w}_fp8_scale_shift_{d}": None for w in "kv" for d in "zngh"})
        k[lambda meta: (cdiv(Mq, meta["BLOCK_M"]), B * G * H, 1)](
            Q=q, K=kk, V=v, sm_scale=scale, Out_splitK=o, LSE_splitk=None, block_tables=None, Seq_len=None,
            Seq_starts_k=None, Seq_starts_q=None, Seq_starts_q_multiplier=None, additive_bias=None,
            K_fp8_scale_shift=None, V_fp8_scale_shift=None,
            **st(q, ("qz", "qm", "qg", "qh", "qk")), **st(kk, ("kz", "kn", "kg", "kh", "kk")),
            **st(v, ("vz", "vn", "vg", "vh", "vk")), **st(o, ("osk_z", "osk_g", "osk_h", "osk_s", "osk_m", "osk_k")),
            **nones, kv_cache_blocks_per_row=0, Z=B, H=H, G=G, N_CTX_Q=Mq, N_CTX_K=Mk, BLOCK_N_PER_SPLIT=Mk,
            BLOCK_DMODEL=D, USE_SEQ_LEN=False, PACKED_PER_VAL=1, N_GROUPS=1, IS_CAUSAL=False, IS_LOCAL=False,
            NUM_QUERIES_CAUSAL=1, IS_SPLITK=False, SPLIT_K_EARLY_EXIT=False, USE_PAGED_ATTENTION=False,
            PAGE_SIZE=0, WINDOW_LEFT=-1, WINDOW_RIGHT=-1, WRITE_LSE=False, HAS_ADDITIVE_BIAS=False,
            NUM_PROGRAMS_DIM2_CONST=1, IS_HIP=False, BLOCK_M=16, BLOCK_N=64, num_warps=2, num_stages=1)
        return dict(Out_splitK=o[:, :, :, 0])
    return dict(Q=randn(g, B, Mq, G, H, D), K=randn(g, B, Mk, G, H, D), V=randn(g, B, Mk, G, H, D)), launch, \
        lambda t: dict(Out_splitK=_attn_ref(t["Q"], t["K"], t["V"], scale))


def _merge_ref(o, lse):
    # o (B, G, H, S, M, D), lse (B, G, H, S, M) -> out (B, M, G, H, D), lse (B, G, H, M)
    w = torch.softmax(lse, 3)
    out = (o * w[..., None]).sum(3)
    return out.permute(0, 3, 1, 2, 4), torch.logsumexp(lse, 3)


@case("xf_splitk_merge", XF, "xformers.ops.fmha._triton.splitk_kernels", "_splitK_reduce",
      ["Out_splitK", "LSE_splitK"], ["Out", "LSE"])
def _(g, small):
    # xformers.ops.fmha.triton_splitk.merge_attentions(attn_out, lse_out, attn_split, lse_split):
    # one program per (query, batch*group*head) combines the split partial outputs weighted by their LSEs
    B, G, H, S, M, D = (1, 1, 2, 3, 2, 8) if small else (2, 1, 2, 5, 3, 24)
    def launch(k, t):
        o, lse = t["Out_splitK"], t["LSE_splitK"]
        out, lse_out = empty(o, B, M, G, H, D), empty(lse, B, G, H, M)
        st = lambda x, names: {f"stride_{n}": s for n, s in zip(names, x.stride())}
        k[(M, B * G * H, 1)](o, lse, out, lse_out, split_k=S, splitK_pow2=np2(S),
                             **st(o, ("osk_z", "osk_g", "osk_h", "osk_s", "osk_m", "osk_k")),
                             **st(lse, ("lsek_z", "lsek_g", "lsek_h", "lsek_s", "lsek_m")),
                             **st(out, ("oz", "om", "og", "oh", "ok")), **st(lse_out, ("lse_z", "lse_g", "lse_h", "lse_m")),
                             head_dim=D, head_dim_pow_2=np2(D), G=G, H=H, WRITE_LSE=True, num_warps=4)
        return dict(Out=out, LSE=lse_out)
    def ref(t):
        out, lse = _merge_ref(t["Out_splitK"], t["LSE_splitK"])
        return dict(Out=out, LSE=lse)
    return dict(Out_splitK=randn(g, B, G, H, S, M, D), LSE_splitK=randn(g, B, G, H, S, M, scale=2.0)), launch, ref


@case("xf_splitk_merge_varargs", XF, "xformers.ops.fmha._triton.splitk_kernels", "_splitK_reduce_varargs",
      ["Out_splitK0", "Out_splitK1", "LSE_splitK0", "LSE_splitK1"], ["Out", "LSE"], make=_xf_unroll(2))
def _(g, small):
    # xformers.ops.fmha.triton_splitk.merge_attentions_varargs with two partial attentions, each
    # (B, G, H, M, D) with LSE (B, G, H, M); the result is (B, M, G, H, D)
    B, M, G, H, D = (1, 2, 1, 2, 8) if small else (2, 3, 1, 2, 24)
    def launch(k, t):
        os_ = [t["Out_splitK0"], t["Out_splitK1"]]
        ls = [t["LSE_splitK0"], t["LSE_splitK1"]]
        out, lse_out = empty(os_[0], B, M, G, H, D), empty(ls[0], B, G, H, M)
        from xformers.ops.fmha.triton_splitk import _prepare_reduce_kernel_params
        args, grid = _prepare_reduce_kernel_params(out, lse_out, os_, ls)
        k[grid](*os_, *ls, Out=out, LSE=lse_out, **args, head_dim=D, head_dim_pow_2=np2(D), WRITE_LSE=True)
        return dict(Out=out, LSE=lse_out)
    def ref(t):
        o = torch.stack([t["Out_splitK0"], t["Out_splitK1"]], 3)  # B G H S M D
        lse = torch.stack([t["LSE_splitK0"], t["LSE_splitK1"]], 3)
        out, l = _merge_ref(o, lse)
        return dict(Out=out, LSE=l)
    return dict(Out_splitK0=randn(g, B, G, H, M, D), Out_splitK1=randn(g, B, G, H, M, D),
                LSE_splitK0=randn(g, B, G, H, M, scale=2.0), LSE_splitK1=randn(g, B, G, H, M, scale=2.0)), launch, ref


# xformers: indexing (xformers.ops._triton.k_index_select_cat / k_scaled_index_add)
@case("xf_index_select_cat_fwd", XF, "xformers.ops._triton.k_index_select_cat", "index_select_cat_fwd_kernel",
      ["source_ptr"], ["output_ptr"])
def _(g, small):
    # xformers.ops._triton.k_index_select_cat.index_select_cat_fwd(output, source, index): rows of a
    # 2-d source gathered by index; one index and 512 columns per program
    R, C, I = (6, 5, 3) if small else (40, 600, 17)
    idx = torch.randint(0, R, (I,), generator=g)
    def launch(k, t):
        src = t["source_ptr"]
        out = empty(src, I, C)
        k[lambda meta: (cdiv(I, meta["BLOCK_SIZE_INDEX"]), cdiv(C, meta["BLOCK_SIZE_COL"]))](
            out, src, t["idx"], I, C, src.stride(0), src.stride(1), BLOCK_SIZE_INDEX=1, BLOCK_SIZE_COL=512)
        return dict(output_ptr=out)
    return dict(source_ptr=randn(g, R, C), idx=idx), launch, lambda t: dict(output_ptr=t["source_ptr"][t["idx"]])


@case("xf_index_select_cat_bwd", XF, "xformers.ops._triton.k_index_select_cat", "index_select_cat_bwd_kernel",
      ["grad_output_ptr"], ["grad_source_ptr"])
def _(g, small):
    # xformers.ops._triton.k_index_select_cat.index_select_cat_bwd(grad_source, index, grad_output): the
    # backward of the gather, itself a kernel: rows of grad_output stored at the (distinct) indexed rows
    # of a zeroed grad_source
    R, C, I = (6, 5, 3) if small else (40, 600, 17)
    idx = torch.randperm(R, generator=g)[:I]
    def launch(k, t):
        go = t["grad_output_ptr"]
        gs = torch.zeros(R, C, dtype=go.dtype, device=go.device)
        k[lambda meta: (cdiv(I, meta["BLOCK_SIZE_INDEX"]), cdiv(C, meta["BLOCK_SIZE_COL"]))](
            gs, t["idx"], go, R, I, C, gs.stride(0), gs.stride(1), BLOCK_SIZE_INDEX=1, BLOCK_SIZE_COL=512)
        return dict(grad_source_ptr=gs)
    def ref(t):
        go = t["grad_output_ptr"]
        return dict(grad_source_ptr=torch.zeros(R, C, dtype=go.dtype, device=go.device).index_add(0, t["idx"], go))
    return dict(grad_output_ptr=randn(g, I, C), idx=idx), launch, ref


@case("xf_scaled_index_add_fwd", XF, "xformers.ops._triton.k_scaled_index_add", "scaled_index_add_fwd_kernel",
      ["input_ptr", "source_ptr", "scaling_ptr"], ["input_ptr"])
def _(g, small):
    # xformers.ops._triton.k_scaled_index_add.scaled_index_add_fwd(x, index, source, scaling, alpha):
    # in place, x[index] += alpha * scaling * source, distinct indices
    N, R, C, S = (5, 2, 4, 3) if small else (12, 3, 40, 7)
    idx = torch.randperm(N, generator=g)[:S]
    def launch(k, t):
        x = t["input_ptr"].clone()
        src, sc = t["source_ptr"], t["scaling_ptr"]
        k[lambda meta: (cdiv(S, meta["BLOCK_SIZE_INDEX"]), cdiv(R, meta["BLOCK_SIZE_ROW"]),
                        cdiv(C, meta["BLOCK_SIZE_COL"]))](
            x, t["idx"], src, sc, 0.7, N, S, R, C, *x.stride(), BLOCK_SIZE_INDEX=1, BLOCK_SIZE_ROW=1,
            BLOCK_SIZE_COL=512, HAS_SCALING=True)
        return dict(input_ptr=x)
    def ref(t):
        return dict(input_ptr=t["input_ptr"].index_add(0, t["idx"], 0.7 * t["scaling_ptr"] * t["source_ptr"]))
    return dict(input_ptr=randn(g, N, R, C), source_ptr=randn(g, S, R, C), scaling_ptr=randn(g, C), idx=idx), \
        launch, ref


@case("xf_tiled_matmul", XF, "xformers.ops._triton.tiled_matmul_kernels", "_xformers_tiled_matmul_kernel",
      [f"{m}{i}{j}" for m in "AB" for i in range(1, 4) for j in range(1, 4)],
      [f"C{i}{j}" for i in range(1, 4) for j in range(1, 4)])
def _(g, small):
    # xformers.ops.tiled_matmul (_launch_triton_matmul) with a 3 x 3 tiling of A (M x K) and B (K x N):
    # each output tile sums the products over the K tiles, autotuned blocks, a K loop per program
    ms, ns, ks = ((2, 3, 1), (2, 1, 3), (3, 2, 2)) if small else ((8, 5, 12), (7, 16, 9), (10, 20, 6))
    def launch(k, t):
        a = [[t[f"A{i+1}{j+1}"] for j in range(3)] for i in range(3)]
        b = [[t[f"B{i+1}{j+1}"] for j in range(3)] for i in range(3)]
        c = [[empty(a[0][0], ms[i], ns[j]) for j in range(3)] for i in range(3)]
        from xformers.ops._triton.tiled_matmul_kernels import _get_strides
        sam, sak = _get_strides(a, "a", "m", "k")
        sbk, sbn = _get_strides(b, "b", "k", "n")
        scm, scn = _get_strides(c, "c", "m", "n")
        k[lambda meta: (sum(cdiv(m, meta["BLOCK_M"]) for m in ms) * sum(cdiv(n, meta["BLOCK_N"]) for n in ns),
                        meta["SPLIT_K"])](
            *[x for r in a for x in r], *[x for r in b for x in r], *[x for r in c for x in r], *ms, *ns, *ks,
            *sam, *sak, *sbk, *sbn, *scm, *scn, ACC_TYPE=triton.language.float32)
        return {f"C{i+1}{j+1}": c[i][j] for i in range(3) for j in range(3)}
    def ref(t):
        A = torch.cat([torch.cat([t[f"A{i}{j}"] for j in range(1, 4)], 1) for i in range(1, 4)], 0)
        B = torch.cat([torch.cat([t[f"B{i}{j}"] for j in range(1, 4)], 1) for i in range(1, 4)], 0)
        C = A @ B
        r0, c0 = [0, ms[0], ms[0] + ms[1]], [0, ns[0], ns[0] + ns[1]]
        return {f"C{i+1}{j+1}": C[r0[i]:r0[i] + ms[i], c0[j]:c0[j] + ns[j]] for i in range(3) for j in range(3)}
    leaves = {f"A{i+1}{j+1}": randn(g, ms[i], ks[j]) for i in range(3) for j in range(3)}
    leaves.update({f"B{i+1}{j+1}": randn(g, ks[i], ns[j]) for i in range(3) for j in range(3)})
    return leaves, launch, ref


# ---------------------------------------------------------------- more FlagGems 5.0.2 (hand-written kernels)

@case("fg_cumsum_part", FG, "flag_gems.ops.cumsum", "scan_part_sum_kernel", ["inp"], ["out", "partial_sum"])
def _(g, small):
    # flag_gems.ops.cumsum.scan_then_fan_col(inp, out, n, dtype), first stage: each program scans its
    # block (tl.cumsum) and writes the block's total; n <= 4096 -> one block of next_power_of_2(n)
    # would make a single part, so a 2-part split (BLOCK_SIZE below n) is launched as for larger n
    n, bs = (24, 16) if small else (300, 128)
    parts = cdiv(n, bs)
    def launch(k, t):
        x = t["inp"]
        out, ps = empty(x, n), empty(x, parts)
        k[(parts,)](x, out, ps, n, parts, bs)
        return dict(out=out, partial_sum=ps)
    def ref(t):
        x = F.pad(t["inp"], (0, parts * bs - n)).reshape(parts, bs)
        return dict(out=x.cumsum(1).reshape(-1)[:n], partial_sum=x.sum(1))
    return dict(inp=randn(g, n)), launch, ref


@case("fg_var_mean_welford", FG, "flag_gems.ops.var_mean", "var_mean_welford_kernel", ["X"], ["Var", "Mean"])
def _(g, small):
    # flag_gems.ops.var_mean.var_mean(x, dim=[1], correction=1): rows reduced with Welford's running
    # (mean, count, M2) in a loop over BLOCK_N columns (autotuned BLOCK_M/BLOCK_N)
    M, N = (3, 20) if small else (8, 300)
    def launch(k, t):
        x = t["X"]
        var, mean = empty(x, M, 1), empty(x, M, 1)
        k[lambda meta: (cdiv(M, meta["BLOCK_M"]),)](x, var, mean, M, N, 1.0)
        return dict(Var=var, Mean=mean)
    def ref(t):
        v, m = torch.var_mean(t["X"], 1, correction=1, keepdim=True)
        return dict(Var=v, Mean=m)
    return dict(X=randn(g, M, N, shift=0.5)), launch, ref


@case("fg_softmax_backward_inner", FG, "flag_gems.ops.softmax", "softmax_backward_kernel_inner",
      ["out_ptr", "out_grad_ptr"], ["in_grad_ptr"])
def _(g, small):
    # flag_gems.ops.softmax.softmax_backward(grad_output, output, dim=-1): a kernel that is itself a
    # backward, in_grad = y * (dy - sum(dy * y)); grid over TILE_M rows
    M, N = (3, 20) if small else (10, 300)
    def launch(k, t):
        y, dy = t["out_ptr"], t["out_grad_ptr"]
        dx = torch.empty_like(y)
        k[lambda meta: (cdiv(M, meta["TILE_M"]), 1, 1)](y, dy, dx, M, N)
        return dict(in_grad_ptr=dx)
    def ref(t):
        y, dy = t["out_ptr"], t["out_grad_ptr"]
        return dict(in_grad_ptr=y * (dy - (dy * y).sum(-1, keepdim=True)))
    return dict(out_ptr=torch.softmax(randn(g, M, N, scale=2.0), -1), out_grad_ptr=randn(g, M, N)), launch, ref


@case("fg_embedding", FG, "flag_gems.ops.embedding", "embedding_kernel", ["weight_ptr"], ["out_ptr"])
def _(g, small):
    # flag_gems.ops.embedding.embedding(weight, indices): one program per index copies a weight row;
    # the gradient w.r.t. the weight accumulates over repeated indices
    V, N, I = (6, 5, 7) if small else (30, 200, 40)
    idx = torch.randint(0, V, (I,), generator=g)
    def launch(k, t):
        w = t["weight_ptr"]
        out = empty(w, I, N)
        k[I,](out, t["idx"], w, N, np2(N))
        return dict(out_ptr=out)
    return dict(weight_ptr=randn(g, V, N), idx=idx), launch, lambda t: dict(out_ptr=F.embedding(t["idx"], t["weight_ptr"]))


# ---------------------------------------------------------------- more bitsandbytes 0.50.2

@case("bnb_dequant_8bit", "bitsandbytes", "bitsandbytes.backends.triton.kernels_8bit_quant", "dequant_8bit_kernel",
      ["code_ptr", "absmax_ptr"], ["out_ptr"])
def _(g, small):
    # bitsandbytes.backends.triton.kernels_8bit_quant.dequant_8bit_blockwise(a, absmax, code, blocksize):
    # out[i] = code[a[i]] * absmax[i // blocksize], SPLIT_SIZE 256; differentiable in code and absmax
    n, block = (40, 16) if small else (1000, 64)
    a = torch.randint(0, 256, (n,), generator=g, dtype=torch.uint8)
    def launch(k, t):
        am = t["absmax_ptr"]
        out = empty(am, n)
        k[(cdiv(n, 256),)](t["A"], out, t["code_ptr"], am, n, block, 256)
        return dict(out_ptr=out)
    def ref(t):
        return dict(out_ptr=t["code_ptr"][t["A"].long()] * t["absmax_ptr"].repeat_interleave(block)[:n])
    return dict(code_ptr=torch.linspace(-1, 1, 256, dtype=torch.float64).float(),
                absmax_ptr=randn(g, cdiv(n, block)).abs() + 0.5, A=a), launch, ref


def _adam_leaves(g, n):
    return dict(g_ptr=randn(g, n), p_ptr=randn(g, n), state1_ptr=randn(g, n, scale=0.1),
                state2_ptr=randn(g, n, scale=0.1).abs() + 0.01)


@case("bnb_adam_update_norm", "bitsandbytes", "bitsandbytes.backends.triton.kernels_optim",
      "_optimizer_precondition_2state_32bit", ["g_ptr", "state1_ptr", "state2_ptr"], ["unorm_ptr"])
def _(g, small):
    # bitsandbytes.backends.triton.kernels_optim.optimizer_update_32bit_impl("lamb"/"adam", max_unorm > 0):
    # the squared norm of the bias-corrected Adam update, a block sum per program atomically added
    n = 40 if small else 1000
    b1, b2, eps, step = 0.9, 0.999, 1e-8, 3
    def launch(k, t):
        gg = t["g_ptr"]
        un = torch.zeros(1, dtype=gg.dtype, device=gg.device)
        k[(cdiv(n, 256),)](gg, t["p_ptr"], t["state1_ptr"], t["state2_ptr"], un, b1, b2, eps, 0.0, step,
                           b1 ** step, b2 ** step, 1e-3, 1.0, n, 3, 256, 1, num_warps=2)
        return dict(unorm_ptr=un)
    def ref(t):
        gg = t["g_ptr"]
        m = (t["state1_ptr"] * b1 + (1 - b1) * gg) / (1 - b1 ** step)
        v = (t["state2_ptr"] * b2 + (1 - b2) * gg * gg) / (1 - b2 ** step)
        return dict(unorm_ptr=((m / (v.sqrt() + eps)) ** 2).sum().reshape(1))
    return _adam_leaves(g, n), launch, ref


@case("bnb_adam_update", "bitsandbytes", "bitsandbytes.backends.triton.kernels_optim",
      "_optimizer_update_2state_32bit_triton_kernel", ["g_ptr", "p_ptr", "state1_ptr", "state2_ptr"],
      ["p_ptr", "state1_ptr", "state2_ptr"])
def _(g, small):
    # optimizer_update_32bit_impl("adam", max_unorm = 0): in place, one Adam step on p and both states
    n = 40 if small else 1000
    b1, b2, eps, step, lr = 0.9, 0.999, 1e-8, 3, 1e-3
    def launch(k, t):
        p, s1, s2 = t["p_ptr"].clone(), t["state1_ptr"].clone(), t["state2_ptr"].clone()
        k[(cdiv(n, 256),)](t["g_ptr"], p, s1, s2, None, 0.0, 0.0, b1, b2, 0.0, 0.0, eps, 0.0, step,
                           b1 ** step, b2 ** step, lr, 1.0, False, n, 3, 256, 1, num_warps=2)
        return dict(p_ptr=p, state1_ptr=s1, state2_ptr=s2)
    def ref(t):
        gg = t["g_ptr"]
        m = t["state1_ptr"] * b1 + (1 - b1) * gg
        v = t["state2_ptr"] * b2 + (1 - b2) * gg * gg
        c2 = math.sqrt(1 - b2 ** step)
        p = t["p_ptr"] - lr * c2 / (1 - b1 ** step) * (m / (v.sqrt() + eps * c2))
        return dict(p_ptr=p, state1_ptr=m, state2_ptr=v)
    return _adam_leaves(g, n), launch, ref


# ---------------------------------------------------------------- more torchao 0.18.0

@case("ao_int_scaled_mm_block_ptr", "torchao", "torchao.kernel.intmm_triton",
      "scaled_matmul_kernel_with_block_pointers", ["s1_ptr"], ["c_ptr"])
def _(g, small):
    # torchao.kernel.intmm_triton.int_scaled_matmul_cuda(a, b, scales1): int8 (M, K) @ int8 (K, N) through
    # tiles of pointers advanced along K (despite the kernel's name, 0.18.0's version makes no block
    # pointer; its neighbour matmul_kernel_with_block_pointers does), int32 accumulation, each row scaled
    # by scales1 (M, 1); the first
    # of its int8_mm_kernel_configs
    M, N, K = (5, 6, 64) if small else (20, 24, 128)
    A = torch.randint(-128, 128, (M, K), generator=g, dtype=torch.int8)
    B = torch.randint(-128, 128, (K, N), generator=g, dtype=torch.int8)
    def launch(k, t):
        from torchao.kernel.intmm_triton import int8_mm_kernel_configs
        cfg = int8_mm_kernel_configs[0]
        a, b, s = t["A"], t["B"], t["s1_ptr"]
        c = empty(s, M, N)
        k[lambda meta: (cdiv(M, meta["BLOCK_M"]) * cdiv(N, meta["BLOCK_N"]),)](
            a, b, c, s, M, N, K, *a.stride(), *b.stride(), *c.stride(), *s.stride(), num_warps=cfg.num_warps,
            num_stages=cfg.num_stages, EVEN_K=(K % 2 == 0), **cfg.kwargs)
        return dict(c_ptr=c)
    def ref(t):
        return dict(c_ptr=(t["A"].double() @ t["B"].double()).to(t["s1_ptr"].dtype) * t["s1_ptr"])
    return dict(A=A, B=B, s1_ptr=randn(g, M, 1, scale=1e-3)), launch, ref



# ---------------------------------------------------------------- conch (conch-triton-kernels 1.3)

CONCH = "conch"


def _conch_act(gelu):
    xn, on = ("in_ptr", "out_ptr") if gelu else ("x_ptr", "output_ptr")
    def setup(g, small):
        # conch.kernels.activation.{silu_and_mul,gelu_tanh_and_mul}.*_launcher (conch.ops.activation.*):
        # x (T, 2d) -> act(x[:, :d]) * x[:, d:], one program per token, a loop over d in blocks of
        # min(1024, np2(d)) (SiLU) / min(256, np2(d)) (GELU tanh); the large shapes take several blocks
        T, d = (3, 10) if small else ((4, 300) if gelu else (3, 1100))
        def launch(k, t):
            x = t[xn]
            out = empty(x, T, d)
            if gelu:
                beta = math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5
                k[(T,)](out, out.stride(-2), x, x.stride(-2), d, cxpr_block_size=min(256, np2(d)),
                        cxpr_beta=beta, cxpr_kappa=0.044715)
            else:
                k[(T,)](output_ptr=out, x_ptr=x, output_stride=out.stride(-2), input_stride=x.stride(-2), d=d,
                        cxpr_block_size=min(1024, np2(d)))
            return {on: out}
        def ref(t):
            a, b = t[xn][:, :d], t[xn][:, d:]
            return {on: (F.gelu(a, approximate="tanh") if gelu else F.silu(a)) * b}
        return {xn: randn(g, T, 2 * d, scale=2.0)}, launch, ref
    return setup


case("conch_silu_and_mul", CONCH, "conch.kernels.activation.silu_and_mul", "_silu_and_mul_kernel",
     ["x_ptr"], ["output_ptr"])(_conch_act(False))
case("conch_gelu_tanh_and_mul", CONCH, "conch.kernels.activation.gelu_tanh_and_mul", "_gelu_tanh_and_mul_kernel",
     ["in_ptr"], ["out_ptr"], tol=1e-4)(_conch_act(True))


@case("conch_rms_norm", CONCH, "conch.kernels.normalization.rms_norm", "_rms_norm_kernel",
      ["x_ptr", "weight_ptr"], ["output_ptr"])
def _(g, small):
    # conch.kernels.normalization.rms_norm.rms_norm_launcher: residual_ptr=None, cxpr_use_residual=False
    T, N = (3, 20) if small else (6, 300)
    def launch(k, t):
        x = t["x_ptr"]
        out = torch.empty_like(x)
        k[(T,)](output_ptr=out, x_ptr=x, residual_ptr=None, weight_ptr=t["weight_ptr"], hidden_size=N,
                epsilon=1e-6, cxpr_block_size=np2(N), cxpr_use_residual=False)
        return dict(output_ptr=out)
    return dict(x_ptr=randn(g, T, N), weight_ptr=randn(g, N, shift=1.0)), launch, \
        lambda t: dict(output_ptr=_rms_ref(t["x_ptr"], t["weight_ptr"], 1e-6))


@case("conch_fused_add_rms_norm", CONCH, "conch.kernels.normalization.rms_norm", "_rms_norm_kernel",
      ["x_ptr", "residual_ptr", "weight_ptr"], ["x_ptr", "residual_ptr"])
def _(g, small):
    # conch.kernels.normalization.rms_norm.fused_add_rms_norm_launcher: in place, output_ptr=None,
    # cxpr_use_residual=True: residual <- x + residual, x <- rmsnorm(x + residual) * w
    T, N = (3, 20) if small else (6, 300)
    def launch(k, t):
        x, r = t["x_ptr"].clone(), t["residual_ptr"].clone()
        k[(T,)](output_ptr=None, x_ptr=x, residual_ptr=r, weight_ptr=t["weight_ptr"], hidden_size=N,
                epsilon=1e-6, cxpr_block_size=np2(N), cxpr_use_residual=True)
        return dict(x_ptr=x, residual_ptr=r)
    def ref(t):
        s = t["x_ptr"] + t["residual_ptr"]
        return dict(x_ptr=_rms_ref(s, t["weight_ptr"], 1e-6), residual_ptr=s)
    return dict(x_ptr=randn(g, T, N), residual_ptr=randn(g, T, N), weight_ptr=randn(g, N, shift=1.0)), launch, ref


@case("conch_gemma_rms_norm", CONCH, "conch.kernels.normalization.gemma_rms_norm", "_gemma_rms_norm_inplace_kernel",
      ["x_ptr", "weights_ptr"], ["x_ptr"])
def _(g, small):
    # conch.kernels.normalization.gemma_rms_norm.gemma_rms_norm_inplace_launcher: in place,
    # x <- x * rsqrt(mean(x^2) + eps) * (1 + w)
    T, N = (3, 20) if small else (6, 300)
    def launch(k, t):
        x = t["x_ptr"].clone()
        k[(T,)](x_ptr=x, weights_ptr=t["weights_ptr"], hidden_size=N, eps=1e-6, cxpr_block_size=np2(N))
        return dict(x_ptr=x)
    return dict(x_ptr=randn(g, T, N), weights_ptr=randn(g, N, scale=0.5)), launch, \
        lambda t: dict(x_ptr=_rms_ref(t["x_ptr"], 1.0 + t["weights_ptr"], 1e-6))


def _neox_rope_ref(x, cache, pos, H, hs):
    # x (T, H * hs); cache (P, hs) = [cos | sin]; NeoX: the halves of each head rotate together
    x = x.reshape(x.shape[0], H, hs)
    cos, sin = cache[pos, None, : hs // 2], cache[pos, None, hs // 2:]
    a, b = x[..., : hs // 2], x[..., hs // 2:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], -1).reshape(x.shape[0], H * hs)


@case("conch_rotary_embedding", CONCH, "conch.kernels.embedding.rotary_embedding", "_rotary_embedding_kernel",
      ["query_ptr", "key_ptr", "cos_sin_cache_ptr"], ["query_ptr", "key_ptr"])
def _(g, small):
    # conch.kernels.embedding.rotary_embedding.rotary_embedding_launcher (NeoX, rot_dim = head_size):
    # in place on query (T, H * hs) and key (T, HK * hs), one program per token
    T, H, HK, hs, P = (3, 2, 1, 8, 5) if small else (6, 4, 2, 32, 12)
    pos = torch.randint(0, P, (T,), generator=g)
    def launch(k, t):
        q, kk, cache = t["query_ptr"].clone(), t["key_ptr"].clone(), t["cos_sin_cache_ptr"]
        k[(T,)](t["pos"], q, kk, cache, cache.shape[-1], q.stride(-2), kk.stride(-2), H, HK, hs, np2(hs))
        return dict(query_ptr=q, key_ptr=kk)
    def ref(t):
        c = t["cos_sin_cache_ptr"]
        return dict(query_ptr=_neox_rope_ref(t["query_ptr"], c, t["pos"], H, hs),
                    key_ptr=_neox_rope_ref(t["key_ptr"], c, t["pos"], HK, hs))
    return dict(query_ptr=randn(g, T, H * hs), key_ptr=randn(g, T, HK * hs), cos_sin_cache_ptr=randn(g, P, hs),
                pos=pos), launch, ref


# ---------------------------------------------------------------- lightning-attn 0.0.5

LA = "lightning_attn"
# gpu_tol 3e-2: the library's kernels chain tl.dot in Triton's default TF32 precision (q k^T, then
# times v, and the decayed state products), against an fp32 torch reference; on an H200 (2026-12-02)
# their forward (Triton's, not kad's) missed the default 1e-4 by max errors of 0.05-0.24.  The
# kernels and their gradients are checked at 1e-4 on the CPU and in float64 by gradcheck.


def _la_decay(s, n):
    # D[h, i, j] = exp(-s_h (i - j)) for i >= j, else 0 (s: log lambda per head)
    i = torch.arange(n, dtype=s.dtype)
    diff = i[:, None] - i[None, :]
    return torch.where(diff >= 0, torch.exp(-s[:, None, None] * diff.clamp(min=0)), torch.zeros_like(diff))


def _la_fwd(decay):
    def setup(g, small):
        # lightning_attn.ops.triton.lightning_attn2{,_no_decay}.LightningAttention2{,NoDecay}.forward:
        # q, k (b, h, n, d), v (b, h, n, e); BLOCK = 64, NUM_BLOCK = cdiv(n, 64), BLOCK_MODEL = min(np2(e), 32),
        # grid (b * h, cdiv(e, BLOCK_MODEL)); o = (q k^T * D) v with D the causal (decay) mask, the
        # blocks before the current one carried in kv = sum k^T v
        b, h, n, d, e = (1, 2, 10, 4, 4) if small else (1, 2, 100, 16, 64)
        def launch(k, t):
            q, kk, v = t["Q"], t["K"], t["V"]
            o = empty(q, b, h, n, e)
            BM = min(np2(e), 32)
            args = (q, kk, v, o) + ((t["S"],) if decay else ()) + (b, h, n, d, e)
            k[(b * h, cdiv(e, BM))](*args, BLOCK=64, NUM_BLOCK=cdiv(n, 64), BLOCK_MODEL=BM)
            return dict(Out=o)
        def ref(t):
            s = t["S"] if decay else torch.zeros(h, dtype=t["Q"].dtype)
            att = t["Q"] @ t["K"].transpose(-1, -2) * _la_decay(s, n)
            return dict(Out=att @ t["V"])
        leaves = dict(Q=randn(g, b, h, n, d), K=randn(g, b, h, n, d), V=randn(g, b, h, n, e))
        if decay:
            leaves["S"] = randn(g, h, scale=0.05, shift=0.2)
        return leaves, launch, ref
    return setup


case("la_fwd_decay", LA, "lightning_attn.ops.triton.lightning_attn2", "_fwd_kernel", ["Q", "K", "V", "S"],
     ["Out"], tol=1e-4, gpu_tol=3e-2)(_la_fwd(True))
case("la_fwd_no_decay", LA, "lightning_attn.ops.triton.lightning_attn2_no_decay", "_fwd_kernel", ["Q", "K", "V"],
     ["Out"], tol=1e-4, gpu_tol=3e-2)(_la_fwd(False))


def _la_bwd_ref(t, n, decay, part):
    # the gradients of o = (q k^T * D) v: dq = (do v^T * D) k, dk = (do v^T * D)^T q, dv = (q k^T * D)^T do,
    # D restricted to pairs in one 64-block (part "intra") or in different blocks (part "inter")
    h = t["Q"].shape[1]
    blk = torch.arange(n) // 64
    same = blk[:, None] == blk[None, :]
    D = _la_decay(t["S"] if decay else torch.zeros(h, dtype=t["Q"].dtype), n) * (same if part == "intra" else ~same)
    dqk = t["DO"] @ t["V"].transpose(-1, -2) * D
    qk = t["Q"] @ t["K"].transpose(-1, -2) * D
    return dict(DQ=dqk @ t["K"], DK=dqk.transpose(-1, -2) @ t["Q"], DV=qk.transpose(-1, -2) @ t["DO"])


def _la_bwd(decay, part):
    def setup(g, small):
        # lightning_attn.ops.triton.lightning_attn2{,_no_decay}.LightningAttention2{,NoDecay}.backward:
        # BLOCK = 64, CBLOCK = 32; "intra": its first launch, grid (b * h, NUM_BLOCK), the contributions of
        # each 64-block to itself, written to fresh dq, dk, dv; "inter": its second, grid (b * h,), one
        # program per head walking the blocks (forward for dq, backward for dk, dv) and adding the other
        # blocks' contributions to the intra results in place
        b, h, n, d, e = ((1, 2, 10, 4, 4) if part == "intra" else (1, 2, 70, 4, 4)) if small else (1, 2, 150, 16, 16)
        def launch(k, t):
            sargs = (t["S"],) if decay else ()
            if part == "intra":
                dq, dk, dv = torch.empty_like(t["Q"]), torch.empty_like(t["K"]), torch.empty_like(t["V"])
                grid = (b * h, cdiv(n, 64))
            else:
                dq, dk, dv = t["DQ"].clone(), t["DK"].clone(), t["DV"].clone()
                grid = (b * h,)
            k[grid](t["Q"], t["K"], t["V"], *sargs, t["DO"], dq, dk, dv, b, h, n, d, e, BLOCK=64,
                    NUM_BLOCK=cdiv(n, 64), CBLOCK=32, NUM_CBLOCK=2)
            return dict(DQ=dq, DK=dk, DV=dv)
        def ref(t):
            r = _la_bwd_ref(t, n, decay, part)
            return r if part == "intra" else {x: t[x] + r[x] for x in r}
        leaves = dict(Q=randn(g, b, h, n, d), K=randn(g, b, h, n, d), V=randn(g, b, h, n, e), DO=randn(g, b, h, n, e))
        if decay:
            leaves["S"] = randn(g, h, scale=0.05, shift=0.2)
        if part == "inter":
            leaves.update(DQ=randn(g, b, h, n, d), DK=randn(g, b, h, n, d), DV=randn(g, b, h, n, e))
        return leaves, launch, ref
    return setup


for _mod, _decay in (("lightning_attn2", True), ("lightning_attn2_no_decay", False)):
    for _part in ("intra", "inter"):
        _ins = ["Q", "K", "V"] + (["S"] if _decay else []) + ["DO"] + (["DQ", "DK", "DV"] if _part == "inter" else [])
        case(f"la_bwd_{_part}{'_decay' if _decay else '_no_decay'}", LA, f"lightning_attn.ops.triton.{_mod}",
             f"_bwd_{_part}_kernel", _ins, ["DQ", "DK", "DV"], tol=1e-4, gpu_tol=3e-2)(_la_bwd(_decay, _part))


# ---------------------------------------------------------------- triton-kernels 0.1.0 (Kernelize AI)

def _tk_rope(neox):
    def setup(g, small):
        # triton_kernels.rotary_embedding.run(): in place on query (T, H, hs) and key (T, HK, hs),
        # grid (T,), rot_dim = head_size, BLOCK_SIZE_ROT = 256, DO_KEY_ROPE=True; cache (P, rot_dim) =
        # [cos | sin]; NeoX rotates the halves, GPT-J (IS_NEOX=False) the even/odd pairs
        T, H, HK, hs, P = (3, 2, 1, 8, 5) if small else (4, 8, 2, 80, 12)
        pos = torch.randint(0, P, (T,), generator=g)
        def launch(k, t):
            q, kk, cache = t["Query_ptr"].clone(), t["Key_ptr"].clone(), t["CosSinCache_ptr"]
            k[(T,)](t["pos"], q, kk, cache, q.stride(0), kk.stride(0), q.stride(1), H, HK, hs, hs,
                    IS_NEOX=neox, DO_KEY_ROPE=True, BLOCK_SIZE_ROT=256)
            return dict(Query_ptr=q, Key_ptr=kk)
        def rope(x, c, p):
            cos, sin = c[p, None, : hs // 2], c[p, None, hs // 2:]
            if neox:
                a, b = x[..., : hs // 2], x[..., hs // 2:]
                return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)
            a, b = x[..., 0::2], x[..., 1::2]
            return torch.stack([a * cos - b * sin, b * cos + a * sin], -1).reshape(x.shape)
        def ref(t):
            c, p = t["CosSinCache_ptr"], t["pos"]
            return dict(Query_ptr=rope(t["Query_ptr"], c, p), Key_ptr=rope(t["Key_ptr"], c, p))
        return dict(Query_ptr=randn(g, T, H, hs), Key_ptr=randn(g, T, HK, hs), CosSinCache_ptr=randn(g, P, hs),
                    pos=pos), launch, ref
    return setup


for _v, _neox in (("neox", True), ("gptj", False)):
    case(f"tk_rotary_embedding_{_v}", "triton_kernels", "triton_kernels.rotary_embedding", "rotary_embedding_kernel",
         ["Query_ptr", "Key_ptr", "CosSinCache_ptr"], ["Query_ptr", "Key_ptr"])(_tk_rope(_neox))


# ---------------------------------------------------------------- cut-cross-entropy 25.1.1 (Apple)

CCE = "cut_cross_entropy"


@case("cce_indexed_neg_dot", CCE, "cut_cross_entropy.indexed_dot", "_indexed_neg_dot_forward_kernel", ["E", "C"],
      ["Out"])
def _(g, small):
    # cut_cross_entropy.indexed_dot.indexed_neg_dot_forward_kernel(e, c, inds) (valids None, shift False,
    # CCE_AUTOTUNE unset: BLOCK_B = 128, BLOCK_D = 256): out[b] = -<e[b], c[inds[b]]>, atomically
    # added over the D blocks into zeros
    B, V, D = (5, 7, 20) if small else (150, 40, 300)
    inds = torch.randint(0, V, (B,), generator=g)
    def launch(k, t):
        from cut_cross_entropy.tl_utils import b_bin_fn
        e, c = t["E"], t["C"]
        out = torch.zeros(B, dtype=e.dtype, device=e.device)
        k[lambda META: (cdiv(B, META["BLOCK_B"]) * cdiv(D, META["BLOCK_D"]),)](
            e, c, t["inds"], None, out, B, D, *e.stride(), *c.stride(), t["inds"].stride(0), 1,
            B_BIN=b_bin_fn(B), SHIFT=False)
        return dict(Out=out)
    return dict(E=randn(g, B, D), C=randn(g, V, D), inds=inds), launch, \
        lambda t: dict(Out=-(t["E"] * t["C"][t["inds"]]).sum(1))


@case("cce_lse_forward", CCE, "cut_cross_entropy.cce_lse_forward", "_cce_lse_forward_kernel", ["E", "C"], ["LSE"])
def _(g, small):
    # cut_cross_entropy.cce_lse_forward.cce_lse_forward_kernel(e, c) (no valids, softcap, logit average;
    # CCE_AUTOTUNE unset: BLOCK_B = 256, BLOCK_V = 128, BLOCK_D = 32): lse[b] = logsumexp_v <e[b], c[v]>,
    # each V block merged into lse under a spin lock (atomic_cas) per group of rows
    B, V, D = (5, 7, 20) if small else (40, 200, 48)
    def launch(k, t):
        from cut_cross_entropy.tl_utils import b_bin_fn
        e, c = t["E"], t["C"]
        lse = torch.full((B,), -float("inf"), dtype=e.dtype, device=e.device)
        locks = torch.zeros(cdiv(B, 128), dtype=torch.uint32, device=e.device)
        k[lambda META: (cdiv(B, META["BLOCK_B"]) * cdiv(V, META["BLOCK_V"]),)](
            e, c, lse, None, locks, None, None, B, V, D, *e.stride(), *c.stride(), lse.stride(0), 1,
            num_locks=locks.size(0), B_BIN=b_bin_fn(B))
        return dict(LSE=lse)
    return dict(E=randn(g, B, D, scale=0.5), C=randn(g, V, D, scale=0.5)), launch, \
        lambda t: dict(LSE=torch.logsumexp(t["E"] @ t["C"].T, 1))


@case("conch_paged_attention_reduce", CONCH, "conch.kernels.attention.paged_attention",
      "_paged_attention_reduce_splits_kernel", ["output_scratchpad_ptr", "lse_scratchpad_ptr"], ["output_ptr"])
def _(g, small):
    # conch.kernels.attention.paged_attention.paged_attention_launcher, its stage 2 (grid (batch, query
    # heads)): each sequence's split outputs merged by their log-sum-exps, over the
    # cdiv(cdiv(seq_len, cache_block_size), num_cache_blocks_per_split) splits its length covers (a
    # trip count loaded from seq_lens)
    Bt, S, H, hs, cbs, per = (2, 3, 2, 6, 4, 1) if small else (3, 6, 4, 40, 8, 2)
    seq_lens = torch.randint(1, S * per * cbs + 1, (Bt,), generator=g)
    seq_lens[0] = S * per * cbs  # one sequence that uses every split
    def launch(k, t):
        o, l = t["output_scratchpad_ptr"], t["lse_scratchpad_ptr"]
        out = empty(o, Bt, H, hs)
        k[(Bt, H)](out, o, l, t["seq_lens"], per, hs, out.stride(0), out.stride(1), o.stride(0), o.stride(1),
                   o.stride(2), l.stride(0), l.stride(1), cbs, np2(hs))
        return dict(output_ptr=out)
    def ref(t):
        o, l = t["output_scratchpad_ptr"], t["lse_scratchpad_ptr"]
        outs = []
        for b in range(Bt):
            ns = cdiv(cdiv(int(t["seq_lens"][b]), cbs), per)
            w = torch.softmax(l[b, :ns], 0)  # (ns, H)
            outs.append((w[..., None] * o[b, :ns]).sum(0))
        return dict(output_ptr=torch.stack(outs))
    return dict(output_scratchpad_ptr=randn(g, Bt, S, H, hs), lse_scratchpad_ptr=randn(g, Bt, S, H, scale=2.0),
                seq_lens=seq_lens.to(torch.int32)), launch, ref
