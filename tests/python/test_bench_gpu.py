"""Smoke test of bench/gpu.py on the CPU: every kernel, dtype and variant (kad deterministic, kad
with atomics, eager) runs on tiny shapes, the table has one row per kernel and dtype with finite
times, kad's gradients agree with eager's, and --write-doc replaces exactly the marked section of a
copy of docs/BENCHMARKS.md.  The timings themselves mean nothing here."""
import importlib.util
import math
import os
import shutil

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def load_bench():
    spec = importlib.util.spec_from_file_location("kad_bench_gpu", os.path.join(REPO, "bench", "gpu.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_gpu_cpu_quick(tmp_path, capsys):
    bench = load_bench()
    doc = tmp_path / "BENCHMARKS.md"
    shutil.copy(bench.DOC, doc)
    before = doc.read_text()
    assert before.count(bench.BEGIN) == 1 and before.count(bench.END) == 1
    res = bench.main(["--device", "cpu", "--quick", "--write-doc", "--doc", str(doc)])

    names = [k[0] for k in bench.KERNELS]
    assert names == ["SwiGLU", "GeGLU", "RMSNorm", "LayerNorm", "softmax", "bias-add", "box filter 3x3"]
    assert [(r["kernel"], r["dtype"]) for r in res["rows"]] == [(n, d) for n in names for d in ("fp32", "bf16")]
    for r in res["rows"]:
        for key in ("kad", "atomics", "eager", "floor"):
            assert math.isfinite(r[key]) and r[key] > 0, (r["kernel"], r["dtype"], key)
        # same inputs, same math: kad's gradients are eager's up to rounding
        assert r["err"] <= (1e-5 if r["dtype"] == "fp32" else 2e-2), r
    assert res["bw"] > 0

    after = doc.read_text()
    head, tail = before.split(bench.BEGIN)[0], before.split(bench.END)[1]
    assert after.startswith(head) and after.endswith(tail)
    section = after[len(head):len(after) - len(tail)]
    assert section.startswith(bench.BEGIN) and section.endswith(bench.END)
    assert "bench/gpu.py --quick --device cpu --write-doc" in section
    assert sum(line.startswith("| ") for line in section.splitlines()) == 2 + len(res["rows"])
    assert section in capsys.readouterr().out
