"""Adversarial kernels for kad's reverse-mode AD: try to get a wrong gradient.

The kernels live in tests/kernels/adversarial/ (maxima.py, elementwise.py,
memory.py, loops.py), each written to stress one claim of docs/AD.md:
maxima that look shift-invariant but are not, ties, repeated operands,
aliasing loads, gathers with repeated indices, scans, dots with transposed
or batched operands, loops with accumulators, early returns, masked and
overlapping stores.

Every differentiable case is checked two independent ways:

1. **PyTorch** (test_matches_torch): the unchanged kernel launched through
   `@kad.differentiable` on float64 CPU tensors (`*fp64` pointers, so the
   interpreter computes in double), L = sum_o <o, c_o> with random
   cotangents c_o over the whole output buffers (elements a masked store
   leaves alone stay at their initial zeros: constants), L.backward(), and
   the same math written plainly in torch float64 (the `ref` of the case,
   which must also reproduce the forward).  Tolerance: max|g_kad - g_torch|
   <= 1e-9 * max|g_torch| + 1e-12.  Both sides compute in double and differ
   only in summation order (rows of at most a few hundred terms), so real
   agreement is ~1e-15; any rule error is O(1e-3) or more.  Cases that
   compute in fp32/fp16 on purpose (casts through fp16, fp16 buffers) say
   their own tolerance (`tol`), justified where they are declared.

2. **Finite differences** (test_finite_differences): kad's float64 checker
   (kad_check, docs/AD.md "The checker") on the same specialization, random
   inputs (with `ranges` where a domain or integer indices need them), per
   element for every input here (all are small), two seeds, at its default
   tolerance 1e-6.  Ties cannot be exercised this way (random data has
   none); the torch comparison uses data with exact ties instead.

Ties follow kad's documented conventions (docs/AD.md): `maximum`/`minimum`
give the whole gradient to the first operand (the torch reference spells it
`where(a >= b, a, b)`, since torch.maximum splits ties in half); `max`/`min`
over an axis share it evenly among tied lanes, as torch.amax/amin do.

A kernel kad cannot differentiate exactly must be refused (test_refused):
KadError at the kernel file's line (`refuse=(line, message substring)`).

Cases marked `bug=` are real kad bugs found by this file (wrong
gradients): they are NOT marked xfail; they fail, with the bug's
description in the message, until kad is fixed.  (None is open: of the bugs
found so far, stores whose lanes hit one address are now refusals, checked by
test_refused; loop stores whose iterations overlap are differentiated, the
last write winning.)
test_tensor_passed_to_an_undeclared_parameter_too is the Python package's
own trap (an input tensor also passed to a parameter not declared in
`inputs`): the launch is refused before it runs.
"""
import os
import re
import sys

import pytest
import torch

import kad
from kad._launch import bind

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))  # tests/ -> `import kernels`

from kernels.adversarial import elementwise, loops, maxima, memory  # noqa: E402

F64 = torch.float64


class Case:
    """One kernel launch.  setup(g) returns (grid, args, kwargs, ref):
    positional and keyword launch arguments (inputs as float64 leaves
    requiring grad, outputs as zero-filled buffers) and ref(leaves) ->
    {output: full buffer value} in plain torch."""

    def __init__(self, id, fn, inputs, outputs, setup, ranges=None, tol=1e-9, refuse=None, bug=None):
        self.id, self.fn, self.inputs, self.outputs, self.setup = id, fn, inputs, outputs, setup
        self.ranges = ranges or {}  # kad_check input ranges: domains, integer index buffers
        self.tol = tol  # relative tolerance of the torch comparison
        self.refuse = refuse  # (line, message substring) when kad must refuse
        self.bug = bug  # a known kad bug this case exposes (printed with the failure)


CASES = []


def case(id, fn, inputs, outputs, **kw):
    def reg(setup):
        CASES.append(Case(id, fn, inputs, outputs, setup, **kw))
        return setup
    return reg


def leaf(g, *shape, scale=1.0, shift=0.0, dtype=F64):
    x = shift + scale * torch.randn(*shape, generator=g, dtype=F64)
    return x.to(dtype).requires_grad_()


def zeros(*shape, dtype=F64):
    return torch.zeros(*shape, dtype=dtype)


# ---------------------------------------------------------------- maxima

R, N, BLK = 3, 37, 64  # rows per launch, row length, block (rows are masked)


def _row_case(id, fn, outs, ref, extra=(), **kw):
    @case(id, fn, ["x_ptr"], list(outs), **kw)
    def _(g):
        x = leaf(g, R * N)
        bufs = [zeros(R * N) if o != "m_ptr" and o != "lse_ptr" else zeros(R) for o in outs]
        return (R,), [x, *bufs, N, *extra], dict(BLOCK=BLK), lambda t: ref(t["x_ptr"].view(R, N))


_row_case("max_stored", maxima.max_stored_kernel, ["y_ptr", "m_ptr"],
          lambda x: dict(y_ptr=torch.exp(x - x.amax(1, keepdim=True)).reshape(-1), m_ptr=x.amax(1)))
_row_case("max_unnormalized", maxima.max_unnormalized_kernel, ["y_ptr"],
          lambda x: dict(y_ptr=(lambda z: (z / z.sum(1, keepdim=True) ** 2))(
              torch.exp(x - x.amax(1, keepdim=True))).reshape(-1)))


def _max_in_mask(x):
    m = x.amax(1, keepdim=True)
    z = torch.where(x > m - 1.0, torch.exp(x - m), torch.zeros_like(x))
    return dict(y_ptr=(z / z.sum(1, keepdim=True) + 0.25 * m).reshape(-1))


_row_case("max_in_mask", maxima.max_in_mask_kernel, ["y_ptr"], _max_in_mask)


def _max_after_where(x):
    m = x.amax(1, keepdim=True).expand(R, N)
    even = (torch.arange(N) % 2 == 0).expand(R, N)
    return dict(y_ptr=torch.where(even, x - m, m).reshape(-1))


_row_case("max_after_where", maxima.max_after_where_kernel, ["y_ptr"], _max_after_where)
_row_case("softmin", maxima.softmin_kernel, ["y_ptr", "u_ptr"],
          lambda x: dict(y_ptr=torch.softmax(-x, 1).reshape(-1),
                         u_ptr=torch.exp(x.amin(1, keepdim=True) - x).reshape(-1)))


def _max_in_if(flag):
    def ref(x):
        m = x.amax(1, keepdim=True) if flag > 0 else x[:, :1]
        return dict(y_ptr=(torch.softmax(x, 1) * m).reshape(-1))
    return ref


# flag=2, not 1: Triton (and kad) would make a 1 a constant and fold the if
_row_case("max_in_runtime_if_true", maxima.max_in_runtime_if_kernel, ["y_ptr"], _max_in_if(2), extra=(2,))
_row_case("max_in_if_flag_1_folds", maxima.max_in_runtime_if_kernel, ["y_ptr"], _max_in_if(1), extra=(1,))
_row_case("max_in_runtime_if_false", maxima.max_in_runtime_if_kernel, ["y_ptr"], _max_in_if(0), extra=(0,))
_row_case("logsumexp", maxima.logsumexp_kernel, ["lse_ptr"], lambda x: dict(lse_ptr=torch.logsumexp(x, 1)))
_row_case("max_times_exp_max", maxima.max_times_x_kernel, ["y_ptr"],
          lambda x: dict(y_ptr=(torch.softmax(x, 1) * torch.exp(x.amax(1, keepdim=True))).reshape(-1)))


@case("masked_softmax_strided", maxima.masked_softmax_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    stride = 41  # rows padded past n_cols: the padding is neither read nor written
    x = leaf(g, R * stride)
    y = zeros(R * stride)

    def ref(t):
        xv = t["x_ptr"].view(R, stride)[:, :N]
        pad = torch.zeros(R, stride - N, dtype=F64)
        return dict(y_ptr=torch.cat([torch.softmax(xv, 1), pad], 1).reshape(-1))
    return (R,), [x, y, N, stride], dict(BLOCK=BLK), ref


@case("max_of_max", maxima.max_of_max_kernel, ["x_ptr"], ["y_ptr", "d_ptr"])
def _(g):
    x = leaf(g, 2 * 4 * 8)

    def ref(t):
        xv = t["x_ptr"].view(2, 32)
        m = xv.amax(1, keepdim=True)
        return dict(y_ptr=torch.softmax(xv, 1).reshape(-1), d_ptr=(xv - m).reshape(-1))
    return (2,), [x, zeros(64), zeros(64)], dict(R=4, C=8), ref


@case("max_ties_keep_dims", maxima.max_ties_kernel, ["x_ptr"], ["y_ptr", "m_ptr"])
def _(g):
    # rows with the maximum two or three times, and one constant row
    base = torch.randn(4, 8, generator=g, dtype=F64)
    base[0, [1, 5]] = 3.0
    base[1, [0, 2, 7]] = 2.5
    base[2, :] = -0.5
    base[3, 6] = 4.0
    x = base.reshape(-1).clone().requires_grad_()

    def ref(t):
        xv = t["x_ptr"].view(4, 8)
        m = xv.amax(1, keepdim=True)
        return dict(y_ptr=(xv - m).reshape(-1), m_ptr=(m * m).reshape(-1))
    return (1,), [x, zeros(32), zeros(4)], dict(R=4, C=8), ref


@case("maximum_minimum_ties", maxima.maximum_ties_kernel, ["x_ptr", "w_ptr"], ["y_ptr"])
def _(g):
    n = 100
    x = torch.randn(n, generator=g, dtype=F64)
    w = torch.randn(n, generator=g, dtype=F64)
    w[::3] = x[::3]  # every third lane ties
    x, w = x.requires_grad_(), w.requires_grad_()

    def ref(t):
        a, b = t["x_ptr"], t["w_ptr"]
        # kad's convention: ties go to the first operand
        return dict(y_ptr=torch.where(a >= b, a, b) * 2.0 + torch.where(b <= a, b, a))
    return (4,), [x, w, zeros(n), n], dict(BLOCK=32), ref


@case("argmax_gather", maxima.argmax_gather_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, R * N)

    def ref(t):
        xv = t["x_ptr"].view(R, N)
        m, i = xv.max(1)
        return dict(y_ptr=m * xv.gather(1, i[:, None])[:, 0])
    return (R,), [x, zeros(R), N], dict(BLOCK=BLK), ref


# ---------------------------------------------------------------- elementwise

NE, BE = 100, 32  # elements, block: 4 programs, the last one masked


def _ew_case(id, fn, ins, ref, ranges=None, data=None, dtype=F64, tol=1e-9, **kw):
    @case(id, fn, list(ins), ["y_ptr"], ranges=ranges, tol=tol, **kw)
    def _(g):
        xs = [data(g, i) if data else leaf(g, NE) for i in range(len(ins))]
        xs = [x.detach().to(dtype).requires_grad_() for x in xs]
        return (4,), [*xs, zeros(NE, dtype=dtype), NE], dict(BLOCK=BE), \
            lambda t: dict(y_ptr=ref(*[t[n].double() for n in ins]))


_ew_case("repeated_operands", elementwise.cube_kernel, ["x_ptr"],
         lambda x: x * x * x + (x - x) * 7.0 + x / x + x + x * (x + x))
_ew_case("fma_repeated_operands", elementwise.fma_same_kernel, ["x_ptr", "w_ptr"],
         lambda x, w: (x * x + x) + (x * w + x) + (w * x + w) + (w * w + x))
_ew_case("pow_constant_negative_base", elementwise.pow_kernel, ["x_ptr"],
         lambda x: x ** 3.0 + x ** 2.0 - (x * x + 1.0) ** 0.5)
_ew_case("pow_both_operands", elementwise.pow_both_kernel, ["x_ptr", "w_ptr"],
         lambda x, w: x ** w + x ** x + w ** 2.0, ranges={"x_ptr": (0.2, 2.0), "w_ptr": (0.2, 2.0)},
         data=lambda g, i: 0.2 + 1.8 * torch.rand(NE, generator=g, dtype=F64))
_ew_case("where_same_value", elementwise.where_same_kernel, ["x_ptr"],
         lambda x: torch.where(x > 0.25, x, x) * 3.0 + torch.where(x > 0.25, x * x, x)
         + torch.where(torch.arange(NE) % 3 == 0, x, -x))
_ew_case("abs_sqrt_minimum_clamp", elementwise.abs_min_kernel, ["x_ptr"],
         lambda x: x.abs() * x + (x * x + 1.0).sqrt() + torch.clamp(x, max=0.5) + torch.clamp(x, -0.3, 0.7))
_ew_case("fmod_atan2", elementwise.fmod_atan2_kernel, ["x_ptr", "w_ptr"],
         lambda x, w: torch.fmod(x, w) + torch.atan2(x, w),
         ranges={"x_ptr": (0.1, 3.0), "w_ptr": (0.7, 1.3)},
         data=lambda g, i: (0.1 + 2.9 * torch.rand(NE, generator=g, dtype=F64)) if i == 0
         else 0.7 + 0.6 * torch.rand(NE, generator=g, dtype=F64))
# fp32 on purpose: the fp16 rounding is part of the value (kad's interpreter
# rounds like the GPU) and the derivative of a cast is 1.  The reference
# computes in double with the roundings as straight-through constants
# (`st`), not with torch's fp16 autograd, which would round the gradient too.
# kad computes in fp32 and carries fp16 adjoints in fp32: 1e-6 relative.
def st(x, dtype):
    """x rounded to dtype (and back to double), with derivative 1."""
    return x + (x.to(dtype).double() - x).detach()


def _cast_round_trip(x):
    h = st(st(x, torch.float32), torch.float16)  # x.to(fp16) of an fp32 x
    return st(h * x, torch.float32) + st(h * h, torch.float16)  # r * x in fp32, h * h in fp16


_ew_case("cast_fp16_round_trip", elementwise.cast_round_trip_kernel, ["x_ptr"], _cast_round_trip,
         dtype=torch.float32, tol=1e-6, data=lambda g, i: 3 * torch.randn(NE, generator=g, dtype=F64))
# fp16 in and out: the gradient is rounded to fp16 once (kad's final atomic),
# torch rounds at every op of its fp16 graph: 2e-3 (a few fp16 ulps).
_ew_case("fp16_buffers", elementwise.half_io_kernel, ["x_ptr"],
         lambda x: (torch.sigmoid(x.float()) * x.float()).half(),
         dtype=torch.float16, tol=2e-3)


# ---------------------------------------------------------------- memory

@case("same_pointer_two_masks", memory.two_masks_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, NE)

    def ref(t):
        x = t["x_ptr"]
        i = torch.arange(NE)
        b = torch.where(i < NE - 3, x, torch.full_like(x, 2.0))
        return dict(y_ptr=x * b + x * x * x)
    return (4,), [x, zeros(NE), NE], dict(BLOCK=BE), ref


@case("other_from_input", memory.other_from_input_kernel, ["x_ptr", "w_ptr"], ["y_ptr"])
def _(g):
    x, w = leaf(g, NE), leaf(g, 1)

    def ref(t):
        x, w = t["x_ptr"], t["w_ptr"]
        v = torch.where(torch.arange(NE) < NE - 5, x, (w * w).expand(NE))
        return dict(y_ptr=v * v)
    return (4,), [x, w, zeros(NE), NE], dict(BLOCK=BE), ref


@case("aliasing_pointers", memory.alias_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, NE)

    def ref(t):
        x = t["x_ptr"]
        nxt = torch.cat([x[1:], x.new_zeros(1)])
        return dict(y_ptr=x * x * x + nxt * x)
    return (4,), [x, zeros(NE), NE], dict(BLOCK=BE), ref


@case("shared_scalar_weight", memory.shared_weight_kernel, ["x_ptr", "w_ptr", "b_ptr"], ["y_ptr"])
def _(g):
    x, w, b = leaf(g, NE), leaf(g, 1), leaf(g, 1)
    return (4,), [x, w, b, zeros(NE), NE], dict(BLOCK=BE), \
        lambda t: dict(y_ptr=torch.exp(t["w_ptr"]) * t["x_ptr"] ** 2 + t["b_ptr"] * t["w_ptr"])


@case("gather_repeated_indices", memory.gather_kernel, ["w_ptr", "x_ptr"], ["y_ptr"],
      ranges={"idx_ptr": (0, 5)})
def _(g):
    n, D, V = 50, 4, 6
    idx = torch.randint(0, V, (n,), generator=g, dtype=torch.int32)
    idx[:10] = 3  # one row read ten times
    w, x = leaf(g, V * D), leaf(g, n)

    def ref(t):
        v = t["w_ptr"].view(V, D)[idx.long()]
        return dict(y_ptr=(v * t["x_ptr"][:, None] + v * v).reshape(-1))
    return (4,), [idx, w, x, zeros(n * D), n], dict(D=D, BLOCK=16), ref


@case("cumsum_both_directions", memory.cumsum_kernel, ["x_ptr"], ["y_ptr", "z_ptr"])
def _(g):
    n = 29
    x = leaf(g, R * n)

    def ref(t):
        x = t["x_ptr"].view(R, n)
        return dict(y_ptr=(x * x).flip(1).cumsum(1).flip(1).reshape(-1), z_ptr=(x.cumsum(1) * x).reshape(-1))
    return (R,), [x, zeros(R * n), zeros(R * n), n], dict(BLOCK=32), ref


@case("cumsum_2d_axes", memory.cumsum_2d_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, 4 * 8)

    def ref(t):
        x = t["x_ptr"].view(4, 8)
        return dict(y_ptr=(x.flip(1).cumsum(1).flip(1) + (x * x).cumsum(0)).reshape(-1))
    return (1,), [x, zeros(32)], dict(R=4, C=8), ref


@case("dot_transposed_operands", memory.dot_trans_kernel, ["a_ptr", "b_ptr"], ["c_ptr"])
def _(g):
    M, N, K = 16, 16, 32
    a, b = leaf(g, K * M), leaf(g, N * K)

    def ref(t):
        a, b = t["a_ptr"].view(K, M), t["b_ptr"].view(N, K)
        c = a.T @ b.T
        return dict(c_ptr=((a.T @ a) @ c + c).reshape(-1))
    return (1,), [a, b, zeros(M * N)], dict(M=M, N=N, K=K), ref


@case("dot_3d_batched", memory.dot_3d_kernel, ["a_ptr", "b_ptr"], ["c_ptr"])
def _(g):
    B, M, N, K = 2, 16, 16, 16
    a, b = leaf(g, B * M * K), leaf(g, B * K * N)
    return (1,), [a, b, zeros(B * M * N)], dict(B=B, M=M, N=N, K=K), \
        lambda t: dict(c_ptr=(t["a_ptr"].view(B, M, K) @ t["b_ptr"].view(B, K, N)).reshape(-1))


@case("keep_dims_axis_none_permute", memory.keep_dims_kernel, ["x_ptr"], ["y_ptr", "s_ptr"])
def _(g):
    Rr, C = 4, 8
    x = leaf(g, Rr * C)

    def ref(t):
        x = t["x_ptr"].view(Rr, C)
        mean = x.sum(1, keepdim=True) / C
        col = (x * x).sum(0, keepdim=True)
        y = (x - mean) * col + x.sum() + x.sum()
        return dict(y_ptr=y.reshape(-1), s_ptr=(x.T * mean.reshape(1, Rr)).reshape(-1))
    return (1,), [x, zeros(32), zeros(32)], dict(R=Rr, C=C), ref


@case("masked_store_skips_lanes", memory.masked_store_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, NE)

    def ref(t):
        x = t["x_ptr"]
        return dict(y_ptr=torch.where(torch.arange(NE) % 2 == 0, x * x, torch.zeros_like(x)))
    return (4,), [x, zeros(NE), NE], dict(BLOCK=BE), ref


@case("atomic_add_output_collisions", memory.atomic_out_kernel, ["x_ptr"], ["out_ptr"])
def _(g):
    x = leaf(g, NE)

    def ref(t):
        x = t["x_ptr"]
        parts = [(x * x).sum().reshape(1)] + [x[i::4].sum().reshape(1) for i in range(4)]
        return dict(out_ptr=torch.cat(parts))
    return (4,), [x, zeros(5), NE], dict(BLOCK=BE), ref


def _same_address(fn):
    def setup(g):
        x = leaf(g, 20)
        return (1,), [x, zeros(1), 20], dict(BLOCK=32), lambda t: dict(y_ptr=(t["x_ptr"] ** 2).sum().reshape(1))
    return setup


# All lanes store one value at one address (y_ptr + offs*0, y_ptr + tl.zeros):
# a backward reading d_y once per lane would sum it BLOCK times (a bug this
# file found); kad now proves the lanes collide and refuses the store.
case("store_every_lane_same_address_offs0_refused", memory.same_address_lanes_kernel, ["x_ptr"], ["y_ptr"],
     refuse=(209, "every lane of this store writes the same address of output 'y_ptr'"))(
    _same_address(memory.same_address_lanes_kernel))
case("store_every_lane_same_address_zeros_refused", memory.zeros_address_kernel, ["x_ptr"], ["y_ptr"],
     refuse=(227, "every lane of this store writes the same address of output 'y_ptr'"))(
    _same_address(memory.zeros_address_kernel))
case("store_scalar_pointer_refused", memory.scalar_store_kernel, ["x_ptr"], ["y_ptr"],
     refuse=(218, "every lane of this store writes the same address"))(_same_address(memory.scalar_store_kernel))


def _simple(g):
    x = leaf(g, NE)
    return (4,), [x, zeros(NE), NE], dict(BLOCK=BE), None


case("output_also_loaded", memory.output_loaded_kernel, ["x_ptr"], ["y_ptr"],
     refuse=(143, "the kernel reads an element of 'y_ptr' after writing it"))(_simple)


@case("store_twice_last_wins", memory.store_twice_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, NE)
    return (4,), [x, zeros(NE), NE], dict(BLOCK=BE), lambda t: dict(y_ptr=t["x_ptr"] ** 2)


@case("store_partial_overwrites", memory.store_partial_overwrite_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, NE)

    def ref(t):
        x, i = t["x_ptr"], torch.arange(NE)
        return dict(y_ptr=torch.where(i % 5 == 0, torch.exp(x), torch.where(i % 3 == 0, x * x, x)))
    return (4,), [x, zeros(NE), NE], dict(BLOCK=BE), ref


# Several stores of one output whose addresses meet (docs/AD.md, "Several stores of one output"):
# the later store wins wherever they meet, whatever the pointer expressions
@case("store_twice_aliasing_pointers", memory.store_twice_alias_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, NE)
    return (4,), [x, zeros(NE), NE], dict(BLOCK=BE), lambda t: dict(y_ptr=t["x_ptr"] ** 2)


@case("store_shifted_overlap", memory.store_shifted_overlap_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, 32)
    return (1,), [x, zeros(33), 32], dict(BLOCK=32), \
        lambda t: dict(y_ptr=torch.cat([t["x_ptr"][:1], t["x_ptr"] ** 2]))


# flag=2: a runtime if (Triton and kad would fold flag=1 into straight-line stores)
@case("store_then_store_under_if", memory.store_then_if_store_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, NE)
    return (4,), [x, zeros(NE), NE, 2], dict(BLOCK=BE), lambda t: dict(y_ptr=t["x_ptr"] ** 2)


@case("store_then_store_under_if_not_taken", memory.store_then_if_store_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, NE)
    return (4,), [x, zeros(NE), NE, -1], dict(BLOCK=BE), lambda t: dict(y_ptr=t["x_ptr"] * 1.0)


@case("shapes_3d_permute_reshape_softmax", memory.shapes_kernel, ["x_ptr"], ["y_ptr", "z_ptr"])
def _(g):
    A, B, C = 2, 4, 8
    x = leaf(g, A * B * C)

    def ref(t):
        x = t["x_ptr"].view(A, B, C)
        p = x.permute(1, 2, 0)
        s = torch.softmax(p.reshape(B, C * A), 1)
        m = x.amax(1)
        tt = (x * x).sum(2, keepdim=True)
        u = m[:, None, :] * tt + x
        return dict(y_ptr=s.reshape(-1) * u.permute(1, 2, 0).reshape(-1), z_ptr=u.reshape(-1))
    return (1,), [x, zeros(A * B * C), zeros(A * B * C)], dict(A=A, B=B, C=C), ref


@case("store_mask_from_data", memory.data_mask_store_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, NE)

    def ref(t):
        x = t["x_ptr"]
        return dict(y_ptr=torch.where(x > 0, x * x * x, torch.zeros_like(x)))
    return (4,), [x, zeros(NE), NE], dict(BLOCK=BE), ref


# ---------------------------------------------------------------- loops

LB = 16  # block of the loop kernels


def _chunk_sum(n_chunks):
    def setup(g):
        x, init, w = leaf(g, 3 * LB), leaf(g, LB), leaf(g, LB)

        def ref(t):
            acc = t["init_ptr"] * 2.0
            for i in range(n_chunks):
                acc = acc + t["x_ptr"][i * LB:(i + 1) * LB] * t["w_ptr"]
            return dict(y_ptr=acc * acc)
        return (1,), [x, init, w, zeros(LB), n_chunks], dict(BLOCK=LB), ref
    return setup


case("acc_zero_trip_loop", loops.chunk_sum_kernel, ["x_ptr", "init_ptr", "w_ptr"], ["y_ptr"])(_chunk_sum(0))
case("acc_three_trip_loop", loops.chunk_sum_kernel, ["x_ptr", "init_ptr", "w_ptr"], ["y_ptr"])(_chunk_sum(3))


def _flags_setup(g):
    x = leaf(g, 5 * LB)
    flag = torch.tensor([1, 0, 1, 1, 0], dtype=torch.int32)

    def ref(t):
        x = t["x_ptr"].view(5, LB)
        return dict(y_ptr=(x * x * flag[:, None].double()).sum(0))
    return (1,), [x, flag, zeros(LB), 5], dict(BLOCK=LB), ref


case("acc_where_in_loop", loops.acc_masked_where_kernel, ["x_ptr"], ["y_ptr"],
     ranges={"flag_ptr": (0, 1)})(_flags_setup)


@case("carried_pointers_two_accs", loops.carried_pointer_kernel, ["x_ptr", "w_ptr"], ["y_ptr"])
def _(g):
    x, w = leaf(g, 4 * LB), leaf(g, 4)

    def ref(t):
        x = t["x_ptr"].view(4, LB)
        return dict(y_ptr=(x * t["w_ptr"][:, None]).sum(0) + (x * x).sum())
    return (1,), [x, w, zeros(LB), 4], dict(BLOCK=LB), ref


@case("two_acc_variance", loops.two_acc_variance_kernel, ["x_ptr"], ["mean_ptr", "var_ptr"])
def _(g):
    x = leaf(g, R * N)

    def ref(t):
        x = t["x_ptr"].view(R, N)
        return dict(mean_ptr=x.mean(1), var_ptr=x.var(1, unbiased=False))
    return (R,), [x, zeros(R), zeros(R), N], dict(BLOCK=LB), ref


@case("runtime_negative_step", loops.runtime_step_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, 6 * LB)

    def ref(t):
        x = t["x_ptr"].view(6, LB)
        return dict(y_ptr=sum(x[i] * x[i] * (i + 1.0) for i in (5, 3, 1)))
    return (1,), [x, zeros(LB), 5, -1, -2], dict(BLOCK=LB), ref


@case("early_returns", loops.early_return_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    nr, nc = 4, 21
    x = leaf(g, (nr + 1) * nc)  # program nr reads a row, then returns

    def ref(t):
        x = t["x_ptr"].view(nr + 1, nc)[:nr]
        s = (x * x).sum(1, keepdim=True)
        even = (torch.arange(nr) % 2 == 0)[:, None]
        return dict(y_ptr=torch.where(even, x * s, x + s).reshape(-1))
    return (nr + 1,), [x, zeros(nr * nc), nr, nc], dict(BLOCK=32), ref


def _grid_stride(fn, f):
    def setup(g):
        n = 200
        x = leaf(g, n)
        return (3,), [x, zeros(n), n], dict(BLOCK=LB), lambda t: dict(y_ptr=f(t["x_ptr"]))
    return setup


case("grid_stride_for_store", loops.grid_stride_for_kernel, ["x_ptr"], ["y_ptr"])(
    _grid_stride(loops.grid_stride_for_kernel, lambda x: torch.sin(x) * x))
case("grid_stride_while_store", loops.grid_stride_while_kernel, ["x_ptr"], ["y_ptr"])(
    _grid_stride(loops.grid_stride_while_kernel, lambda x: torch.exp(x) - x))


# Stores in a loop whose iterations' windows overlap (y + i + offs with the
# arange hoisted out of the loop; loop-invariant 2-D row offsets): each element
# keeps the last write.  kad once gave every iteration's value the gradient of
# all it wrote (a bug this file found), then refused these stores; its backward
# now visits the iterations backwards and each store reads and clears its
# gradient, so only the last write gets it (docs/AD.md).
def _overlap_ref(t):
    y = torch.zeros(11, dtype=F64)
    for i in range(4):
        y[i:i + 8] = t["x_ptr"] * (i + 1.0)
    return dict(y_ptr=y)


def _overlap_2d_ref(t):
    x = t["x_ptr"].view(2, 8)
    y = torch.zeros(5, 8, dtype=F64)
    for i in range(4):
        y[i:i + 2] = x * (i + 1.0)
    return dict(y_ptr=y.reshape(-1))


case("overlapping_loop_stores", loops.overlapping_loop_store_kernel, ["x_ptr"], ["y_ptr"])(
    lambda g: ((1,), [leaf(g, 8), zeros(11)], dict(BLOCK=8), _overlap_ref))
case("overlapping_loop_stores_2d", loops.overlapping_loop_store_2d_kernel, ["x_ptr"], ["y_ptr"])(
    lambda g: ((1,), [leaf(g, 16), zeros(40)], dict(BLOCK=8), _overlap_2d_ref))
# overlapping only when n > 1 (a launch condition): refused when the backward runs for n = 4
case("overlapping_while_stores_refused", loops.overlapping_while_store_kernel, ["x_ptr"], ["y_ptr"],
     refuse=(275, "this launch breaks it"))(lambda g: ((1,), [leaf(g, 8), zeros(11), 4], dict(BLOCK=8), None))


@case("nested_loops_logsumexp", loops.nested_loops_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, R * N)
    return (1,), [x, zeros(R), R, N], dict(BLOCK=LB), \
        lambda t: dict(y_ptr=torch.logsumexp(t["x_ptr"].view(R, N), 1))


@case("matmul_k_loop_transposed_b", loops.matmul_loop_kernel, ["a_ptr", "b_ptr"], ["c_ptr"])
def _(g):
    M, Nn, K = 16, 16, 64
    a, b = leaf(g, M * K), leaf(g, Nn * K)
    return (1,), [a, b, zeros(M * Nn)], dict(M=M, N=Nn, K=K, BK=16), \
        lambda t: dict(c_ptr=(t["a_ptr"].view(M, K) @ t["b_ptr"].view(Nn, K).T).reshape(-1))


@case("runtime_if_inside_loop", loops.if_in_loop_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, 5 * LB)

    def ref(t):
        x = t["x_ptr"].view(5, LB)
        return dict(y_ptr=sum(torch.exp(x[i]) if i % 2 == 0 else x[i] * x[i] for i in range(5)))
    return (1,), [x, zeros(LB), 5], dict(BLOCK=LB), ref


@case("running_max_in_mask", loops.running_max_mask_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, 5 * LB)

    def ref(t):
        x = t["x_ptr"].view(5, LB)
        mx, acc = torch.full((LB,), float("-inf"), dtype=F64), torch.zeros(LB, dtype=F64)
        for i in range(5):
            mx = torch.maximum(mx, x[i].detach())
            acc = acc + torch.where(x[i] >= mx, x[i] * x[i], x[i])
        return dict(y_ptr=acc)
    return (1,), [x, zeros(LB), 5], dict(BLOCK=LB), ref


# Loops whose carried value is not a linear accumulator: kad records it on a tape (ad_tape.c).
@case("scaled_accumulator_taped", loops.scaled_acc_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, 4 * LB)

    def ref(t):
        acc = torch.zeros(LB, dtype=F64)
        for i in range(4):
            acc = acc * 0.5 + t["x_ptr"][i * LB:(i + 1) * LB]
        return dict(y_ptr=acc)
    return (1,), [x, zeros(LB), 4], dict(BLOCK=LB), ref


@case("acc_under_runtime_if_taped", loops.acc_under_if_kernel, ["x_ptr"], ["y_ptr"],
      ranges={"flag_ptr": (0, 1)})
def _(g):
    grid, args, kw, _ = _flags_setup(g)
    flag = args[1]

    def ref(t):
        return dict(y_ptr=(t["x_ptr"].view(5, LB) * (flag[:, None] != 0).double()).sum(0))
    return grid, args, kw, ref


# Every iteration stores to the same addresses: y keeps the last chunk's square.
case("loop_store_fixed_address", loops.fixed_address_loop_store_kernel, ["x_ptr"], ["y_ptr"])(
    lambda g: (lambda x: ((1,), [x, zeros(LB), 4], dict(BLOCK=LB),
                          lambda t: dict(y_ptr=t["x_ptr"].view(4, LB)[3] ** 2)))(leaf(g, 4 * LB)))
@case("while_accumulator_taped", loops.while_counter_acc_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, 4 * LB)

    def ref(t):
        return dict(y_ptr=t["x_ptr"].view(4, LB).sum(0))
    return (1,), [x, zeros(LB), 4], dict(BLOCK=LB), ref


@case("recurrence_taped", loops.recurrence_kernel, ["x_ptr"], ["y_ptr"])
def _(g):
    x = leaf(g, 4 * LB)

    def ref(t):
        h = torch.zeros(LB, dtype=F64)
        for i in range(4):
            h = torch.sigmoid(h + t["x_ptr"][i * LB:(i + 1) * LB])
        return dict(y_ptr=h)
    return (1,), [x, zeros(LB), 4], dict(BLOCK=LB), ref


@case("acc_read_in_loop_taped", loops.acc_used_in_loop_kernel, ["x_ptr"], ["y_ptr", "z_ptr"])
def _(g):
    x = leaf(g, 4 * LB)

    def ref(t):
        z = torch.cumsum(t["x_ptr"].view(4, LB), 0)
        return dict(y_ptr=z[-1], z_ptr=z.reshape(-1))
    return (1,), [x, zeros(LB), zeros(4 * LB), 4], dict(BLOCK=LB), ref


# ---------------------------------------------------------------- runners

def _launch(c, g):
    grid, args, kwargs, ref = c.setup(g)
    L = bind(c.fn, [], grid, args, kwargs, c.inputs + c.outputs)
    return grid, args, kwargs, ref, L


def _close(a, b, tol):
    a, b = a.detach().double(), b.detach().double()
    return (a - b).abs().max().item() <= tol * b.abs().max().item() + 1e-12


DIFF = [c for c in CASES if c.refuse is None]
REFUSED = [c for c in CASES if c.refuse is not None]


@pytest.mark.parametrize("c", DIFF, ids=[c.id for c in DIFF])
def test_matches_torch(c):
    g = torch.Generator().manual_seed(0)
    grid, args, kwargs, ref, L = _launch(c, g)
    leaves = {n: L.values[n] for n in c.inputs}
    outs = {n: L.values[n] for n in c.outputs}
    k = kad.differentiable(inputs=c.inputs, outputs=c.outputs)(c.fn)
    k[grid](*args, **kwargs)
    cot = {n: torch.randn(o.shape, generator=g, dtype=F64) for n, o in outs.items()}
    sum((outs[n].double() * cot[n]).sum() for n in c.outputs).backward()
    got = {n: x.grad.clone() for n, x in leaves.items()}

    mine = {n: x.detach().clone().requires_grad_() for n, x in leaves.items()}
    expect = ref(mine)
    for n in c.outputs:
        assert _close(outs[n], expect[n], c.tol), \
            f"forward {n}: max err {(outs[n].detach().double() - expect[n].detach().double()).abs().max():.3g}"
    sum((expect[n].double() * cot[n]).sum() for n in c.outputs).backward()
    for n in c.inputs:
        want = mine[n].grad if mine[n].grad is not None else torch.zeros_like(mine[n])
        assert _close(got[n], want, c.tol), \
            f"d{n}: max err {(got[n].double() - want.double()).abs().max():.3g}, max |g| " \
            f"{want.abs().max():.3g}" + (f"\nKNOWN KAD BUG: {c.bug}" if c.bug else "")


@pytest.mark.parametrize("c", DIFF, ids=[c.id for c in DIFF])
def test_finite_differences(c):
    g = torch.Generator().manual_seed(0)
    grid, args, kwargs, ref, L = _launch(c, g)
    path = c.fn.fn.__code__.co_filename
    ctx = kad.Context()
    with open(path, encoding="utf-8") as f:
        ctx.add_source(os.path.relpath(path, REPO), f.read())
    k = ctx.specialize(c.fn.fn.__name__, L.sig)
    params = {n for n, _ in k.params}  # not those specialized to None or 1
    shapes = {n: v.numel() for n, v in L.runtime if isinstance(v, torch.Tensor)}
    scalars = {n: v for n, v in L.runtime if not isinstance(v, torch.Tensor) and n in params}
    for seed in (1, 2):
        passed, report = k.check_gradients(L.grid, c.inputs, c.outputs, shapes, scalars, ranges=c.ranges,
                                           seed=seed, elem_limit=4096)
        assert passed, report + (f"\nKNOWN KAD BUG: {c.bug}" if c.bug else "")


@pytest.mark.parametrize("c", REFUSED, ids=[c.id for c in REFUSED])
def test_refused(c):
    g = torch.Generator().manual_seed(0)
    grid, args, kwargs, ref, L = _launch(c, g)
    k = kad.differentiable(inputs=c.inputs, outputs=c.outputs)(c.fn)
    line, msg = c.refuse
    with pytest.raises(kad.KadError) as e:
        k[grid](*args, **kwargs)
        # a launch condition of the backward is checked when the backward runs
        for a in args:
            if torch.is_tensor(a) and a.grad_fn is not None:
                a.sum().backward()
                break
    text = str(e.value)
    fname = os.path.basename(c.fn.fn.__code__.co_filename)
    loc = re.search(rf"adversarial/{re.escape(fname)}:(\d+):(\d+): error: ([^\n]*)", text)
    assert loc, f"the refusal is not located in {fname}:\n{text}"
    assert msg in text, f"expected a refusal containing {msg!r}, got:\n{text}"
    assert int(loc.group(1)) == line, f"refusal at line {loc.group(1)}, expected {line}:\n{text}"


def test_tensor_passed_to_an_undeclared_parameter_too():
    """x requires grad and is passed as the declared input x_ptr and also as
    the undeclared w_ptr (y = fma(x, x, x) + fma(x, w, x) + ...).  kad read
    w_ptr as a constant and returned the gradient of the x_ptr uses alone (a
    bug this file found); the launch is now refused before anything runs,
    naming w_ptr and the two ways out.  Declaring both inputs gives the whole
    gradient, and so does the detached tensor's (constant) reading."""
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(elementwise.fma_same_kernel)
    g = torch.Generator().manual_seed(0)
    x = leaf(g, NE)
    y = zeros(NE)
    with pytest.raises(ValueError) as e:
        k[(4,)](x, x, y, NE, BLOCK=BE)
    text = str(e.value)
    assert "'w_ptr'" in text and "inputs=[...]" in text and ".detach()" in text, text
    assert not y.any() and x.grad is None, "the refused launch must not have run"

    both = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])(elementwise.fma_same_kernel)
    both[(4,)](x, x, y, NE, BLOCK=BE)
    y.sum().backward()
    xx = x.detach().clone().requires_grad_()
    ((xx * xx + xx) + (xx * xx + xx) + (xx * xx + xx) + (xx * xx + xx)).sum().backward()
    assert _close(x.grad, xx.grad, 1e-9), \
        f"dx: max err {(x.grad - xx.grad).abs().max():.3g}, max |g| {xx.grad.abs().max():.3g}"

    x.grad, y = None, zeros(NE)
    k[(4,)](x, x.detach(), y, NE, BLOCK=BE)  # w is a constant on purpose
    y.sum().backward()
    w = x.detach()
    xx = x.detach().clone().requires_grad_()
    ((xx * xx + xx) + (xx * w + xx) + (w * xx + w) + (w * w + xx)).sum().backward()
    assert _close(x.grad, xx.grad, 1e-9), \
        f"dx (w detached): max err {(x.grad - xx.grad).abs().max():.3g}"


def test_enough_cases():
    assert len(CASES) >= 30
