"""Every corpus kernel through kad's gradient checker (kad_check), or a located refusal.

For each Case of corpus.py, GRAD (by kernel) or GRAD_CASE (by case id) says
which pointer parameters are differentiated inputs (float buffers the kernel
only reads) and outputs (float buffers it only writes or atomically adds to).
Buffers in neither list are constants (integer data) or scratch (saved
statistics such as LayerNorm's Mean/Rstd when they are not differentiated,
integer outputs such as argmax): the backward drops their stores.

The checker (src/check/check.c, docs/AD.md "The checker") builds the backward
kernel, runs forward and backward on kad's interpreter in float64 and
compares the gradient with central finite differences along random
directions and, for inputs of at most ELEM_LIMIT elements, per element; it
must say PASS at its default tolerance (1e-6 relative to the norm).  Sizes,
grids and scalars are the corpus case's; inputs are drawn by the checker
(uniform in [-1, 1] unless a range is given: ranges keep both sides of
branches such as softplus's threshold exercised).

A kernel kad cannot differentiate must be refused with an error located in
the kernel file (file:line:col) whose message names the construct: `refuse`
gives the expected line and a substring of the message.

The mutation tests prove the checker can fail: KAD_TEST_MUTATE=<rule>
(a testing aid passed to check.c) breaks one adjoint rule, and a kernel using
that rule must then FAIL; max_drop drops scalar maxima's adjoints without
kad's shift-invariance proof, which must FAIL wherever the outputs depend on
the max.

The kernels of tests/grad/shift_invariant.py, shared_atomic.py,
store_twice.py, dot_batched.py and select_ptr.py (GRAD_FILES) pass the checker for two seeds, with padded
sizes (BLOCK larger than n) where masks apply; store_before_loop.py's
kernel (a store before a loop and one in it) passes it too.
"""
import dataclasses
import os
import re
import subprocess

import numpy as np
import pytest

import harness
import kad
from corpus import CASE_IDS, CASES, parse_sig

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
KERNELS = os.path.join(REPO, "tests", "kernels")

# Per-element finite differences up to this many input elements (the C
# default is 4096; the largest corpus inputs would make the suite slow).
ELEM_LIMIT = 2048


@dataclasses.dataclass(frozen=True)
class G:
    wrt: tuple  # differentiated inputs
    out: tuple  # differentiated outputs
    ranges: dict = dataclasses.field(default_factory=dict)  # input -> (lo, hi)
    refuse: tuple = None  # (line, message substring) when kad must refuse
    why: str = ""  # for the reader: what the case exercises or why it is refused


# By "file:kernel".  Every corpus case must be covered (test_table_covers_corpus).
GRAD = {
    "vector_add.py:add_kernel": G(("x_ptr", "y_ptr"), ("out_ptr",)),
    "relu.py:relu_kernel": G(("x_ptr",), ("y_ptr",)),
    "gelu.py:gelu_kernel": G(("x_ptr",), ("y_ptr",), {"x_ptr": (-4, 4)}),
    "silu.py:silu_kernel": G(("x_ptr",), ("out_ptr",), {"x_ptr": (-5, 5)}),
    "leaky_relu.py:leaky_relu_kernel": G(("x_ptr",), ("y_ptr",)),
    "softplus.py:softplus_kernel": G(("x_ptr",), ("y_ptr",), {"x_ptr": (-15, 25)},
                                     why="both sides of the threshold"),
    "clamp.py:clamp_kernel": G(("x_ptr",), ("y_ptr",)),
    "clamp.py:relu6_kernel": G(("x_ptr",), ("y_ptr",), {"x_ptr": (-8, 8)}),
    "cast_scale.py:scale_cast_kernel": G(("x_ptr",), ("y_ptr",)),
    "dropout.py:seeded_dropout_kernel": G(("x_ptr",), ("out_ptr",)),
    "persistent_scale.py:scale_shift_persistent_kernel": G(("x_ptr",), ("y_ptr",),
                                                           why="grid-stride while loop storing"),
    "axpby.py:axpby_kernel": G(("x_ptr",), ("y_ptr",), refuse=(21, "load from output 'y_ptr'"),
                               why="y is read and written (in/out buffer)"),
    "histogram.py:histogram_kernel": G(("x_ptr",), ("hist_ptr",),
                                       refuse=(13, "'hist_ptr' is not a pointer to floating-point data"),
                                       why="integer counts: piecewise constant, nothing to differentiate"),
    "softmax.py:softmax_kernel": G(("input_ptr",), ("output_ptr",)),
    "log_softmax.py:log_softmax_kernel": G(("x_ptr",), ("y_ptr",)),
    "layer_norm.py:layer_norm_fwd_kernel": G(("X", "W", "B"), ("Y", "Mean", "Rstd")),
    "rms_norm.py:rms_norm_fwd_kernel": G(("x_ptr", "w_ptr"), ("y_ptr", "rstd_ptr")),
    "cross_entropy.py:cross_entropy_fwd_kernel": G(
        ("logits_ptr",), ("loss_ptr", "lse_ptr"), {"labels_ptr": (0, 99)},
        why="online log-sum-exp: running max and rescaled sum, recorded on a tape"),
    "softmax_exp2.py:softmax_online_exp2_kernel": G(
        ("x_ptr",), ("y_ptr",), why="online softmax: running max and rescaled sum, recorded on a tape"),
    "minmax_scale.py:minmax_scale_kernel": G(("x_ptr",), ("y_ptr",)),
    "swiglu.py:swiglu_fwd_kernel": G(("a_ptr", "b_ptr"), ("c_ptr",)),
    "geglu.py:geglu_fwd_kernel": G(("a_ptr", "b_ptr"), ("c_ptr",), {"a_ptr": (-4, 4)}),
    "bias_add.py:bias_add_kernel": G(("x_ptr", "b_ptr"), ("y_ptr",),
                                     why="the bias is read by every row program (2-D grid)"),
    "cumsum.py:cumsum_rows_kernel": G(("x_ptr",), ("y_ptr",)),
    "row_sum.py:row_sum_kernel": G(("x_ptr",), ("out_ptr",)),
    "row_stats.py:row_stats_kernel": G(("x_ptr",), ("max_ptr", "min_ptr", "mad_ptr", "unit_ptr"),
                                       why="argmax_ptr (int32) is not an output: its store is dropped"),
    "mean_dim.py:mean_dim1_kernel": G(("x_ptr",), ("out_ptr",)),
    "head_affine_3d.py:head_affine_kernel": G(("x_ptr", "w_ptr", "bias_ptr"), ("y_ptr",)),
    "box_filter.py:box_filter3x3_kernel": G(("src_ptr",), ("dst_ptr",)),
    "transpose.py:transpose_kernel": G(("x_ptr",), ("y_ptr",)),
    "group_sum.py:group_sum_kernel": G(("x_ptr",), ("out_ptr",)),
    "split_k_colsum.py:colsum_split_kernel": G(("x_ptr",), ("out_ptr",),
                                               why="atomic_add into the output across programs"),
    "fused_bias_act.py:bias_act_kernel": G(("x_ptr", "bias_ptr"), ("y_ptr",)),
    "matmul.py:matmul_kernel": G(("a_ptr", "b_ptr"), ("c_ptr",)),
    "linear_attention.py:chunk_linear_attn_intra_kernel": G(("q_ptr", "k_ptr", "v_ptr"), ("o_ptr",)),
    "scan.py:linear_recurrence_kernel": G(("a_ptr", "b_ptr"), ("h_ptr",),
                                          why="associative_scan on (a, b) pairs: a reverse linear-recurrence scan"),
    "scan.py:scan_add_kernel": G(("x_ptr",), ("y_ptr",)),
    "scan.py:chunked_ssm_kernel": G(("a_ptr", "x_ptr"), ("h_ptr",),
                                    why="a scan per chunk, the state across chunks on a tape"),
    "scan.py:cumprod_kernel": G(("x_ptr",), ("y_ptr",), why="zeros in the input (corpus make)"),
    "scan.py:running_max_kernel": G(("x_ptr",), ("y_ptr",)),
    "scan.py:cummax_index_kernel": G(("x_ptr",), ("y_ptr",), why="a selection scan (tl.where), i_ptr an int output"),
    "scan.py:scan_mul_kernel": G(("x_ptr",), ("y_ptr",),
                                 why="a combine no special case recognizes (x * y): the general scan rule"),
    "reduce.py:welford_kernel": G(("x_ptr",), ("var_ptr", "mean_ptr"),
                                  why="tl.reduce with Welford's combine: the general rule (VJP of f(f(P, x), S))"),
    "reduce.py:logsumexp_kernel": G(("x_ptr",), ("y_ptr",), why="tl.reduce with a log-sum-exp combine, then over all axes"),
    "reduce.py:method_reduce_kernel": G(("x_ptr",), ("y_ptr", "c_ptr"),
                                        why="the method forms x.reduce (keep_dims) and x.associative_scan"),
    "tile_shapes.py:complex_mul": G(("x_ptr", "y_ptr"), ("z_ptr",), why="split and interleave"),
    "tile_shapes.py:rotary_half": G(("x_ptr", "cos_ptr", "sin_ptr"), ("y_ptr",), why="split and join"),
    "tile_shapes.py:embed_gather": G(("table_ptr", "scale_ptr"), ("out_ptr",), {"ids_ptr": (0, 15)},
                                     why="gather: one-hot scatter-add adjoint, repeated ids"),
    "tile_shapes.py:gather_cols": G(("x_ptr",), ("y_ptr",), {"perm_ptr": (0, 15)}, why="gather along axis 1"),
    "tile_shapes.py:flip_mix": G(("x_ptr", "w_ptr"), ("y_ptr",), why="flip along both axes"),
    "tile_shapes.py:sort_rows": G(("x_ptr",), ("y_ptr", "t_ptr"), why="sort (both orders) and topk by rank"),
    "tile_shapes.py:hist": G(("x_ptr",), ("h_ptr",), refuse=(88, "'x_ptr' is not a pointer to floating-point data"),
                             why="integer counts: nothing to differentiate"),
}

# By case id, where a case of a kernel differs from the kernel's entry.
GRAD_CASE = {
    "transpose_i32": G(("x_ptr",), ("y_ptr",), refuse=(13, "'x_ptr' is not a pointer to floating-point data"),
                       why="integer data"),
}

# Further specifications of corpus cases: saved statistics as scratch,
# integer outputs, subsets of the inputs.  (name, case id, G)
VARIANTS = [
    ("layer_norm_stats_as_scratch", "layer_norm_chunked", G(("X", "W"), ("Y",))),
    ("layer_norm_only_stats", "layer_norm_one_chunk", G(("X",), ("Mean", "Rstd"))),
    ("rms_norm_rstd_as_scratch", "rms_norm_bf16", G(("x_ptr", "w_ptr"), ("y_ptr",))),
    ("row_stats_max_only", "row_stats_keepdims_argmax", G(("x_ptr",), ("max_ptr",))),
    ("row_stats_argmax_output", "row_stats_keepdims_argmax",
     G(("x_ptr",), ("argmax_ptr",), refuse=(18, "'argmax_ptr' is not a pointer to floating-point data"))),
    ("axpby_in_out_as_input", "axpby_beta_half",
     G(("x_ptr", "y_ptr"), (), refuse=(13, "no differentiated output given"))),
    ("matmul_a_only", "matmul_fp32_relu_tf32", G(("a_ptr",), ("c_ptr",))),
]

# (case id, rule): KAD_TEST_MUTATE=rule must turn the case's PASS into FAIL.
MUTATIONS = [
    ("softmax_fp32", "exp"),
    ("softplus_beta1", "exp"),
    ("rms_norm_fp32", "mul"),
    ("row_stats_keepdims_argmax", "max"),
    ("leaky_relu_slope_0.2", "where"),
    ("cumsum_fp32_forward", "cumsum"),
]


# Kernels of tests/grad/loop_stores.py (stores and atomics in loops and
# branches): (kernel, sig, grid, shapes, args, ranges, wrt, out).
GRAD_LOOP_STORES = [
    ("grid_stride_while", "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=64", 3,
     dict(x_ptr=1000, y_ptr=1000), dict(n=1000), {}, "x_ptr", "y_ptr"),
    ("grid_stride_for", "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=64", 3,
     dict(x_ptr=1000, y_ptr=1000), dict(n=1000), {}, "x_ptr", "y_ptr"),
    ("if_else_stores", "x_ptr=*fp32,y_ptr=*fp32,flag_ptr=*i32", 20,
     dict(x_ptr=20, y_ptr=20, flag_ptr=20), {}, dict(flag_ptr=(-1, 1)), "x_ptr", "y_ptr"),
    ("atomic_colsum", "x_ptr=*fp32,out_ptr=*fp32,M=i32,BLOCK=16", 3,
     dict(x_ptr=160, out_ptr=16), dict(M=10), {}, "x_ptr", "out_ptr"),
]


# Kernels of other tests/grad/*.py files through the checker.  Only for
# shift_invariant.py: drop says whether kad drops the scalar max/min's
# adjoint as exactly zero (None: not a scalar max, max_drop does not apply);
# dep whether the outputs really depend on it, so that forcing the drop
# (KAD_TEST_MUTATE=max_drop) must FAIL.  Kept but not dependent: the proof
# is conservative (where_shift with no padded lane, a max through an `if`).
@dataclasses.dataclass(frozen=True)
class K:
    file: str  # under tests/grad/
    kernel: str
    sig: str
    grid: int
    shapes: dict  # pointer param -> elements
    args: dict = dataclasses.field(default_factory=dict)
    ranges: dict = dataclasses.field(default_factory=dict)
    wrt: str = "x_ptr"
    out: str = "y_ptr"
    label: str = ""  # distinguishes configurations of one kernel in test ids
    drop: bool = None
    dep: bool = False

    @property
    def id(self):
        return f"{self.kernel}-{self.label}" if self.label else self.kernel


_S = "shift_invariant.py"
_S1 = "x_ptr=*fp32,y_ptr=*fp32,BLOCK=16"
_SN = "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16"
_SM = "x_ptr=*fp32,y_ptr=*fp32,m_ptr=*fp32,BLOCK=16"
_V16 = dict(x_ptr=16, y_ptr=16)
_SL = "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=8"  # the loops: 21 elements in chunks of 8
GRAD_SHIFT = [
    K(_S, "raw_shift", _S1, 1, _V16, drop=False, dep=True),
    K(_S, "unnormalized", _S1, 1, _V16, drop=False, dep=True),
    K(_S, "times_max", _S1, 1, _V16, drop=False, dep=True),
    K(_S, "where_shift", _SN, 1, _V16, dict(n=16), label="full", drop=False),
    K(_S, "where_shift", _SN, 1, _V16, dict(n=10), label="padded", drop=False, dep=True),
    K(_S, "where_exp", _SN, 1, _V16, dict(n=16), label="full", drop=True),
    K(_S, "where_exp", _SN, 1, _V16, dict(n=10), label="padded", drop=True),
    K(_S, "rows2d", _S1, 1, dict(x_ptr=64, y_ptr=64)),
    K(_S, "scratch_max", _SM, 1, dict(x_ptr=16, y_ptr=16, m_ptr=1), drop=True),
    K(_S, "lse_out", "x_ptr=*fp32,y_ptr=*fp32,lse_ptr=*fp32,BLOCK=16", 1, dict(x_ptr=16, y_ptr=16, lse_ptr=1),
      out="y_ptr,lse_ptr", drop=True),
    K(_S, "max_out", _SM, 1, dict(x_ptr=16, y_ptr=16, m_ptr=1), label="m_scratch", drop=True),
    K(_S, "max_out", _SM, 1, dict(x_ptr=16, y_ptr=16, m_ptr=1), out="y_ptr,m_ptr", label="m_output",
      drop=False, dep=True),
    K(_S, "min_shift", _S1, 1, _V16, drop=True),
    K(_S, "in_if", "x_ptr=*fp32,y_ptr=*fp32,flag=i32,BLOCK=16", 1, _V16, dict(flag=1), label="taken",
      drop=False),
    K(_S, "in_if", "x_ptr=*fp32,y_ptr=*fp32,flag=i32,BLOCK=16", 1, _V16, dict(flag=0), label="not_taken",
      drop=False),
    K(_S, "masked_softmax", _SN, 1, _V16, dict(n=16), label="full", drop=True),
    K(_S, "masked_softmax", _SN, 1, dict(x_ptr=10, y_ptr=10), dict(n=10), label="padded", drop=True),
    K(_S, "masked_shift", _SN, 1, _V16, dict(n=16), label="full", drop=False, dep=True),
    K(_S, "masked_shift", _SN, 1, dict(x_ptr=10, y_ptr=10), dict(n=10), label="padded", drop=False,
      dep=True),
    K(_S, "loop_lse", _SL, 1, dict(x_ptr=21, y_ptr=1), dict(n=21), drop=True),
    K(_S, "online_lse", _SL, 1, dict(x_ptr=21, y_ptr=1), dict(n=21), drop=True),
    K(_S, "loop_lse_max_out", "x_ptr=*fp32,y_ptr=*fp32,m_ptr=*fp32,n=i32,BLOCK=8", 1,
      dict(x_ptr=21, y_ptr=1, m_ptr=1), dict(n=21), out="y_ptr,m_ptr", drop=False, dep=True),
    K(_S, "loop_unnormalized", _SL, 1, dict(x_ptr=21, y_ptr=21), dict(n=21), drop=False, dep=True),
    K(_S, "carried_scale", "x_ptr=*fp32,y_ptr=*fp32,R=i32,BLOCK=16", 1, dict(x_ptr=48, y_ptr=1), dict(R=3),
      drop=False, dep=True),
    K(_S, "persistent_lse", "x_ptr=*fp32,y_ptr=*fp32,R=i32,n=i32,BLOCK=8", 2, dict(x_ptr=105, y_ptr=5),
      dict(R=5, n=21), drop=True),
]

_A = "shared_atomic.py"
_T = "store_twice.py"
_AN = "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16"
GRAD_FILES = GRAD_SHIFT + [
    K(_A, "twice", _AN, 3, dict(x_ptr=48, y_ptr=48), dict(n=48), label="full"),
    K(_A, "twice", _AN, 3, dict(x_ptr=40, y_ptr=40), dict(n=40), label="padded"),
    K(_A, "two_masks", _AN, 3, dict(x_ptr=40, y_ptr=40), dict(n=40), label="padded"),
    K(_T, "overwrite_all", "x_ptr=*fp32,y_ptr=*fp32,BLOCK=16", 3, dict(x_ptr=48, y_ptr=48)),
    K(_T, "overwrite_masked", "x_ptr=*fp32,y_ptr=*fp32,n=i32,k=i32,BLOCK=16", 3, dict(x_ptr=48, y_ptr=48),
      dict(n=48, k=30), label="full"),
    K(_T, "overwrite_masked", "x_ptr=*fp32,y_ptr=*fp32,n=i32,k=i32,BLOCK=16", 3, dict(x_ptr=40, y_ptr=40),
      dict(n=40, k=25), label="padded"),
    K(_T, "three_stores", "x_ptr=*fp32,y_ptr=*fp32,BLOCK=16", 3, dict(x_ptr=48, y_ptr=48)),
    K(_T, "scalar_twice", "x_ptr=*fp32,y_ptr=*fp32", 7, dict(x_ptr=7, y_ptr=7)),
    K(_T, "chunked_twice", _AN, 3, dict(x_ptr=144, y_ptr=144), dict(n=48), label="full"),
    K(_T, "chunked_twice", _AN, 3, dict(x_ptr=150, y_ptr=150), dict(n=50), label="padded"),
    K("dot_batched.py", "dot_batched", "a_ptr=*fp32,b_ptr=*fp32,c_ptr=*fp32,B=2,M=16,N=8,K=4", 1,
      dict(a_ptr=128, b_ptr=64, c_ptr=256), wrt="a_ptr,b_ptr", out="c_ptr"),
]

# select_ptr.py: pointers selected among parameters.  Where a candidate is
# not differentiated (wrt="x_ptr" only), a gradient written through its
# lanes into d_x_ptr would make the check fail.
_P = "select_ptr.py"
_PX = "x_ptr=*fp32,w_ptr=*fp32,y_ptr=*fp32"
_P32 = dict(x_ptr=32, w_ptr=32, y_ptr=32)
GRAD_SELECT = [
    K(_P, "concat_k", "a1_ptr=*fp32,a2_ptr=*fp32,b1_ptr=*fp32,b2_ptr=*fp32,c_ptr=*fp32,M=i32,N=i32,K1=i32,"
      "K2=i32,BM=16,BN=16,BK=16", (2, 2), dict(a1_ptr=20 * 20, a2_ptr=20 * 9, b1_ptr=20 * 18, b2_ptr=9 * 18,
                                              c_ptr=20 * 18), dict(M=20, N=18, K1=20, K2=9),
      wrt="a1_ptr,a2_ptr,b1_ptr,b2_ptr", out="c_ptr"),
    K(_P, "scalar_select", _PX + ",BLOCK=16", 4, dict(x_ptr=32, w_ptr=32, y_ptr=64), wrt="x_ptr,w_ptr"),
    K(_P, "scalar_select", _PX + ",BLOCK=16", 4, dict(x_ptr=32, w_ptr=32, y_ptr=64), label="x_only"),
    K(_P, "tile_select", _PX + ",split=i32,BLOCK=16", 2, _P32, dict(split=20), wrt="x_ptr,w_ptr"),
    K(_P, "tile_select", _PX + ",split=i32,BLOCK=16", 2, _P32, dict(split=20), label="x_only"),
    K(_P, "half_diff_swapped", _PX + ",n=i32,BLOCK=16", 2, _P32, dict(n=32), label="full"),
    K(_P, "half_diff_swapped", _PX + ",n=i32,BLOCK=16", 2, dict(x_ptr=27, w_ptr=27, y_ptr=27), dict(n=27),
      label="padded"),
    K(_P, "if_select", _PX + ",flag=i32,BLOCK=16", 2, _P32, dict(flag=1), wrt="x_ptr,w_ptr", label="taken"),
    K(_P, "if_select", _PX + ",flag=i32,BLOCK=16", 2, _P32, dict(flag=0), wrt="x_ptr,w_ptr",
      label="not_taken"),
    K(_P, "loop_carried", _PX + ",BLOCK=16", 2, _P32, wrt="x_ptr,w_ptr"),
    K(_P, "store_select", "x_ptr=*fp32,y1_ptr=*fp32,y2_ptr=*fp32,s_ptr=*fp32,BLOCK=16", 3,
      dict(x_ptr=48, y1_ptr=16, y2_ptr=16, s_ptr=16), out="y1_ptr,y2_ptr"),
]
GRAD_FILES += GRAD_SELECT


def check_file_kernel(k, seed):
    ctx = kad.Context()
    with open(os.path.join(REPO, "tests", "grad", k.file), encoding="utf-8") as f:
        ctx.add_source(f"tests/grad/{k.file}", f.read())
    return ctx.specialize(k.kernel, k.sig).check_gradients(k.grid, k.wrt, k.out, k.shapes, k.args,
                                                           ranges=k.ranges, seed=seed)


def case_by_id(cid):
    return CASES[CASE_IDS.index(cid)]


def spec_of(case):
    return GRAD_CASE.get(case.id) or GRAD[f"{case.file}:{case.kernel}"]


def kernel_of(case):
    ctx = kad.Context()
    for name in (case.file,) + case.extra:
        with open(os.path.join(KERNELS, name), encoding="utf-8") as f:
            ctx.add_source(f"tests/kernels/{name}", f.read())
    return ctx.specialize(case.kernel, case.sig)


def config_of(case):
    """Element counts of the pointer params and values of the scalars, from the corpus's make()."""
    made = case.make(np.random.default_rng(harness.case_seed(case)))
    shapes, args = {}, {}
    for name, kind, _ in parse_sig(case.sig):
        if kind == "ptr":
            shapes[name] = int(np.size(made[name]))
        elif kind == "scalar":
            args[name] = made[name]
    return shapes, args


def run_check(case, g, **kw):
    shapes, args = config_of(case)
    return kernel_of(case).check_gradients(case.grid, g.wrt, g.out, shapes, args, ranges=g.ranges,
                                           seed=harness.case_seed(case), elem_limit=ELEM_LIMIT, **kw)


def expect(case, g, label):
    if g.refuse is None:
        passed, report = run_check(case, g)
        assert passed, f"{label}: kad check failed:\n{report}"
        assert report.rstrip().endswith("PASS (rtol 1e-06)"), report
        for name in g.wrt:
            assert re.search(rf"^{re.escape(name)}: .*: PASS$", report, re.M), report
        return
    line, msg = g.refuse
    with pytest.raises(kad.KadError) as e:
        run_check(case, g)
    text = str(e.value)
    assert msg in text, f"{label}: expected a refusal containing {msg!r}, got:\n{text}"
    loc = re.search(rf"tests/kernels/{re.escape(case.file)}:(\d+):(\d+): error: [^\n]*{re.escape(msg)}", text)
    assert loc, f"{label}: the refusal is not located in the kernel file:\n{text}"
    assert int(loc.group(1)) == line, f"{label}: refusal at line {loc.group(1)}, expected {line}:\n{text}"


def test_table_covers_corpus():
    missing = [c.id for c in CASES if c.id not in GRAD_CASE and f"{c.file}:{c.kernel}" not in GRAD]
    assert not missing, f"add these corpus cases to GRAD: {missing}"
    for c in CASES:
        g = spec_of(c)
        ptrs = {n: t for n, k, t in parse_sig(c.sig) if k == "ptr"}
        for name in g.wrt + g.out:
            assert name in ptrs, f"{c.id}: {name} is not a pointer parameter"


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_corpus_gradient(case):
    expect(case, spec_of(case), case.id)


@pytest.mark.parametrize("name,cid,g", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_variant_gradient(name, cid, g):
    expect(case_by_id(cid), g, name)


@pytest.mark.parametrize("kernel,sig,grid,shapes,args,ranges,wrt,out", GRAD_LOOP_STORES,
                         ids=[k[0] for k in GRAD_LOOP_STORES])
def test_loop_store_gradient(kernel, sig, grid, shapes, args, ranges, wrt, out):
    ctx = kad.Context()
    path = os.path.join(REPO, "tests", "grad", "loop_stores.py")
    with open(path, encoding="utf-8") as f:
        ctx.add_source("tests/grad/loop_stores.py", f.read())
    k = ctx.specialize(kernel, sig)
    for seed in (1, 2):
        passed, report = k.check_gradients(grid, wrt, out, shapes, args, ranges=ranges, seed=seed)
        assert passed, report


@pytest.mark.parametrize("k", GRAD_FILES, ids=[f"{k.file[:-3]}-{k.id}" for k in GRAD_FILES])
def test_grad_file_kernel(k, monkeypatch):
    """Shift-invariant maxima, loads sharing one atomic, stores overwriting stores."""
    monkeypatch.delenv("KAD_TEST_MUTATE", raising=False)
    for seed in (1, 2):
        passed, report = check_file_kernel(k, seed)
        assert passed, report


_MAXDROP = [k for k in GRAD_SHIFT if k.drop is not None]


@pytest.mark.parametrize("k", _MAXDROP, ids=[k.id for k in _MAXDROP])
def test_forced_max_drop(k, monkeypatch):
    """KAD_TEST_MUTATE=max_drop drops every scalar max/min's adjoint without
    the shift-invariance proof.  Where the outputs depend on the max the
    checker must then FAIL: a wrong drop would be caught.  Where they do not
    (whether kad proves it or not) the gradient is still right."""
    monkeypatch.setenv("KAD_TEST_MUTATE", "max_drop")
    passed, report = check_file_kernel(k, 1)
    assert "KAD_TEST_MUTATE=max_drop" in report, report
    if k.dep:
        assert not passed, f"the checker missed a dropped max adjoint in {k.id}:\n{report}"
    else:
        assert passed, f"{k.id} does not depend on its max: dropping it must not matter:\n{report}"


def test_dropped_max_has_no_tie_mask():
    """kad drops exactly the maxima the table says: a kept max/min adjoint
    compares x with the max (`eq`, the tie mask); a dropped one does not."""
    env = dict(os.environ)
    env.pop("KAD_TEST_MUTATE", None)
    for k in _MAXDROP:
        cmd = [os.path.join(REPO, "build", "kad"), "grad", f"tests/grad/{k.file}:{k.kernel}", "--ir",
               "--sig", k.sig, "--wrt", k.wrt, "--out", k.out]
        r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        # the tie mask compares a tile with the max (an i1 tile); the fused recompute of an online
        # loop compares its scalar running max with -inf (ad_gauge_fuse), not a tie mask; a strong
        # zero (docs/AD.md, "Untaken branches") compares an adjoint with the constant 0
        lines = r.stdout.splitlines()
        zeros = {ln.split("=")[0].strip() for ln in lines if re.search(r"= const (0\.0|0|-0\.0) :", ln)}
        tie = any(" eq " in ln and ": i1[" in ln and not set(re.findall(r"%[\w.]+", ln.split("=", 1)[1])) & zeros
                  for ln in lines)
        assert tie == (not k.drop), f"{k.id}: expected the max's adjoint " + \
            ("dropped" if k.drop else "kept") + f":\n{r.stdout}"


# Kernels of tests/grad/store_before_loop.py: (kernel, sig).  A store before a loop and one in it,
# meeting: the later write wins (the loop's adjoint runs backwards, the stores read and clear).
STORE_BEFORE_LOOP = [
    ("before_loop", "x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16"),
]


@pytest.mark.parametrize("kernel,sig", STORE_BEFORE_LOOP, ids=[r[0] for r in STORE_BEFORE_LOOP])
@pytest.mark.parametrize("n", [16, 40])
def test_store_before_loop(kernel, sig, n):
    """Repeated stores, one of them in a loop: the backward against finite differences, both seeds."""
    k = K("store_before_loop.py", kernel, sig, 1, dict(x_ptr=48, y_ptr=48), dict(n=n))
    for seed in (1, 2):
        check_file_kernel(k, seed)


@pytest.mark.parametrize("cid,rule", MUTATIONS, ids=[f"{c}-{r}" for c, r in MUTATIONS])
def test_mutated_rule_fails(cid, rule, monkeypatch):
    case = case_by_id(cid)
    g = spec_of(case)
    passed, report = run_check(case, g)
    assert passed, report
    monkeypatch.setenv("KAD_TEST_MUTATE", rule)
    passed, report = run_check(case, g)
    assert not passed, f"the checker missed the mutated '{rule}' rule:\n{report}"
    assert f"KAD_TEST_MUTATE={rule}" in report and report.rstrip().endswith("FAIL (rtol 1e-06)"), report


def test_unknown_mutation_is_an_error(monkeypatch):
    monkeypatch.setenv("KAD_TEST_MUTATE", "no_such_rule")
    case = case_by_id("silu_fp32")
    with pytest.raises(kad.KadError, match="unknown KAD_TEST_MUTATE 'no_such_rule'"):
        run_check(case, spec_of(case))


def test_cli_check_exit_status():
    """`kad check` exits 0 on PASS and 1 on FAIL (here: a mutated rule)."""
    case = case_by_id("softplus_beta1")
    g = spec_of(case)
    shapes, args = config_of(case)
    cmd = [os.path.join(REPO, "build", "kad"), "check", f"tests/kernels/{case.file}:{case.kernel}",
           "--sig", case.sig, "--wrt", ",".join(g.wrt), "--out", ",".join(g.out),
           "--grid", ",".join(map(str, case.grid))]
    for k, v in shapes.items():
        cmd += ["--shape", f"{k}={v}"]
    for k, v in args.items():
        cmd += ["--arg", f"{k}={v}"]
    for k, (lo, hi) in g.ranges.items():
        cmd += ["--range", f"{k}={lo}:{hi}"]
    env = dict(os.environ)
    env.pop("KAD_TEST_MUTATE", None)
    ok = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    assert ok.returncode == 0 and "PASS (rtol 1e-06)" in ok.stdout, ok.stdout + ok.stderr
    env["KAD_TEST_MUTATE"] = "exp"
    bad = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    assert bad.returncode == 1 and "FAIL (rtol 1e-06)" in bad.stdout, bad.stdout + bad.stderr


def test_demo_backward():
    """The backward of each example of examples/demo.py passes the checker."""
    import demo
    for ex in demo.EXAMPLES:
        passed, err, report = demo.check_backward(ex, demo.specialize(ex))
        assert passed and err <= 1e-6, f"{ex.name}:\n{report}"


@pytest.mark.parametrize("sig,shapes,args", [
    ("x_ptr=*fp32,w_ptr=*fp32,b_ptr=None,y_ptr=*fp32,stride=1,n=1,BLOCK=16",
     ["x_ptr=5", "w_ptr=1", "y_ptr=5"], []),
    ("x_ptr=*fp32,w_ptr=*fp32,b_ptr=None,y_ptr=*fp32,stride=i32,n=i32,BLOCK=16",
     ["x_ptr=5x20", "w_ptr=16", "y_ptr=5x20"], ["stride=20", "n=13"]),
    ("x_ptr=*fp32,w_ptr=*fp32,b_ptr=*fp32,y_ptr=*fp32,stride=1,n=i32,BLOCK=16",
     ["x_ptr=5", "w_ptr=1", "b_ptr=1", "y_ptr=5"], ["n=1"]),
], ids=["none_and_1", "none_any_stride", "bias_stride_1"])
def test_cli_check_specialized_parameters(sig, shapes, args):
    """`kad check` with runtime parameters specialized as Triton does (b_ptr=None, stride=1):
    PASS, and FAIL with a mutated rule (the check can fail)."""
    cmd = [os.path.join(REPO, "build", "kad"), "check", "tests/emit/bwd_specialized_params.py:lin",
           "--sig", sig, "--wrt", "x_ptr,w_ptr", "--out", "y_ptr", "--grid", "5"]
    for s in shapes:
        cmd += ["--shape", s]
    for a in args:
        cmd += ["--arg", a]
    env = dict(os.environ)
    env.pop("KAD_TEST_MUTATE", None)
    ok = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    assert ok.returncode == 0 and "PASS (rtol 1e-06)" in ok.stdout, ok.stdout + ok.stderr
    env["KAD_TEST_MUTATE"] = "mul"
    bad = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    assert bad.returncode == 1 and "FAIL (rtol 1e-06)" in bad.stdout, bad.stdout + bad.stderr
