"""Smoke test of bench/gpu.py on the CPU: every benchmark runs on tiny shapes in fp32 and bf16 with
the peers the CPU has (kad on its interpreter, eager torch; torch.compile and the hand-written Triton
kernels show "—"), the table has one row per benchmark and configuration with finite times, kad's
and eager's gradients agree with float64 autograd of the torch function, --only selects benchmarks,
and --write-doc replaces exactly the marked section of a copy of docs/BENCHMARKS.md.  The timings
themselves mean nothing here; the hand-written backwards are checked in test_bench_hand.py.
"""
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

    names = [b.name for b in bench.BENCHES]
    assert names == ["SwiGLU", "GeGLU", "RMSNorm", "LayerNorm", "softmax", "log-softmax", "cross-entropy",
                     "mean (middle dim)", "matmul + leaky ReLU", "box filter 3x3", "linear attention (intra-chunk)"]
    assert [(r["kernel"], r["dtype"]) for r in res["rows"]] == [(n, d) for n in names for d in ("fp32", "bf16")]
    for r in res["rows"]:
        for key in ("kad", "eager"):
            assert math.isfinite(r["t"][key]) and r["t"][key] > 0, (r["kernel"], r["dtype"], key)
            # same inputs, same math: each agrees with float64 autograd up to rounding
            assert r["err"][key] <= (1e-5 if r["dtype"] == "fp32" else 2e-2), (r, key)
        assert r["t"]["compile"] is None and r["t"]["hand"] is None
        assert math.isfinite(r["floor"]) and r["floor"] > 0
    assert res["bw"] > 0 and not res["notes"]

    after = doc.read_text()
    head, tail = before.split(bench.BEGIN)[0], before.split(bench.END)[1]
    assert after.startswith(head) and after.endswith(tail)
    section = after[len(head):len(after) - len(tail)]
    assert section.startswith(bench.BEGIN) and section.endswith(bench.END)
    assert "bench/gpu.py --quick --device cpu --write-doc" in section
    table = [line for line in section.splitlines() if line.startswith("| ")]
    assert len(table) == 2 + len(res["rows"])
    assert all(line.count(" | ") == table[0].count(" | ") for line in table)
    assert all("| — | — | eager |" in line for line in table[2:])  # compile, hand; best peer
    assert section in capsys.readouterr().out


def test_bench_gpu_only_selects(capsys):
    bench = load_bench()
    res = bench.main(["--device", "cpu", "--quick", "--only", "softmax,RMSNorm"])
    assert sorted({r["kernel"] for r in res["rows"]}) == ["RMSNorm", "softmax"]
    with pytest.raises(SystemExit):
        bench.main(["--device", "cpu", "--only", "nonesuch"])
