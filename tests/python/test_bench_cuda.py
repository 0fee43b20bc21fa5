"""Smoke test of bench/cuda.py on the CPU: every benchmark runs on tiny shapes with the peers the CPU
has (kad and the hand-written CUDA C backwards on kad's interpreter, eager torch), each peer's
gradients agree with float64 autograd, the Swish backward reaches no atomics, a peer that fails to
build is a row of "—" with its reason in the notes (not a crash), --only selects, and --write-doc
replaces exactly the marked section of a copy of docs/BENCHMARKS.md.  The timings mean nothing here."""
import importlib.util
import math
import os
import shutil

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def load_bench():
    spec = importlib.util.spec_from_file_location("kad_bench_cuda", os.path.join(REPO, "bench", "cuda.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_cuda_cpu(tmp_path, capsys):
    bench = load_bench()
    doc = tmp_path / "BENCHMARKS.md"
    shutil.copy(bench.DOC, doc)
    before = doc.read_text()
    assert before.count(bench.BEGIN) == 1 and before.count(bench.END) == 1
    res = bench.main(["--device", "cpu", "--reps", "1", "--write-doc", "--doc", str(doc)])
    rows = {r["kernel"]: r for r in res["rows"]}
    assert list(rows) == ["Swish", "box 3x3", "softmax", "LayerNorm"]
    want = {"Swish": {"kad", "eager", "hand"}, "box 3x3": {"kad", "eager", "hand-scatter", "hand-gather"},
            "softmax": {"kad", "eager", "hand"}, "LayerNorm": {"kad", "eager", "hand"}}
    for name, r in rows.items():
        assert set(r["peers"]) == want[name], name
        for peer, row in r["peers"].items():
            assert row["err"] <= 1e-5, (name, peer, row["err"])
            assert math.isfinite(row["bwd_s"]) and row["bwd_s"] > 0 and row["fwd_bwd_s"] > 0
            assert row["bwd_device_s"] is None
    assert rows["Swish"]["peers"]["kad"]["atomics"] == 0
    after = doc.read_text()
    head, tail = before.split(bench.BEGIN)[0], before.split(bench.END)[1]
    assert after.startswith(head) and after.endswith(tail)
    section = after[len(head):len(after) - len(tail)]
    assert "bench/cuda.py --device cpu" in section and section in capsys.readouterr().out
    table = [line for line in section.splitlines() if line.startswith("| ")]
    assert len(table) == 1 + sum(len(r["peers"]) for r in res["rows"])  # the header, then one per peer


def test_refused_peer_is_a_dash_with_its_reason(capsys):
    bench = load_bench()
    b = bench._swish("cpu", True)

    def refused():
        raise bench.kad.KadError("square.cu:1:1: error: CUDA C emitter: refused for the test")
    b.kad_fn = refused
    notes = []
    rows = bench.run_bench(b, "cpu", bench.Timer("cpu", 1), notes)
    assert "kad" not in rows and set(rows) == {"eager", "hand"}
    assert any("kad — KadError: square.cu:1:1: error: CUDA C emitter: refused for the test" in n for n in notes)
    text = bench.table([{"kernel": b.name, "shape": b.shapes, "peers": rows, "expected": list(b.hands)}])
    assert "| Swish | n=3000 | kad | — | — | — | — | — | — |" in text


def test_only_selects():
    bench = load_bench()
    res = bench.main(["--device", "cpu", "--reps", "1", "--only", "swish"])
    assert [r["kernel"] for r in res["rows"]] == ["Swish"]
    with pytest.raises(SystemExit):
        bench.main(["--device", "cpu", "--only", "nonesuch"])
