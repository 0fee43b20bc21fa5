"""Every corpus kernel through kad's gradient checker (kad_check), or a located refusal.

For each Case of corpus.py, GRAD (by kernel) or GRAD_CASE (by case id) says
which pointer parameters are differentiated inputs (float buffers the kernel
only reads) and outputs (float buffers it only writes or atomically adds to).
Buffers in neither list are constants (integer data) or scratch (saved
statistics such as LayerNorm's Mean/Rstd when they are not differentiated,
integer outputs such as argmax): the backward drops their stores.

The checker (src/check.c, docs/AD.md "The checker") builds the backward
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
(a testing aid read by check.c) breaks one adjoint rule, and a kernel using
that rule must then FAIL.
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
        refuse=(32, "loop-carried value 's' is not a linear accumulator; kad needs a tape"),
        why="online log-sum-exp: running max and rescaled sum"),
    "softmax_exp2.py:softmax_online_exp2_kernel": G(
        ("x_ptr",), ("y_ptr",),
        refuse=(21, "loop-carried value 'l_i' is not a linear accumulator; kad needs a tape"),
        why="online softmax: running max and rescaled sum"),
    "minmax_scale.py:minmax_scale_kernel": G(("x_ptr",), ("y_ptr",)),
    "swiglu.py:swiglu_fwd_kernel": G(("a_ptr", "b_ptr"), ("c_ptr",)),
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
