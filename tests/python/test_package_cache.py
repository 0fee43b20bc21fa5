"""kad's on-disk cache of generated backward modules under concurrent writers (issue 12, item 3;
docs/PYTHON.md, "Caches" and "Distributed training").

- test_concurrent_writers: spawned processes generate and import the same backward module at once
  into one fresh $KAD_CACHE_DIR, many rounds (cache_stress.py); a poller reading the final file
  name meanwhile must never see anything but a complete (sealed) module; every worker imports a
  working module with the same text; no temporary file and no bytecode remain.
- test_poller_sees_a_non_atomic_writer: the same with a writer that writes the final name in
  place (no rename): the poller must see partial files -- the check above can fail.
- a partial file under the final name or a stale temporary file is never used or imported, and a
  failed write leaves no temporary file.
"""
import os

import pytest
import torch

import cache_stress
import kad
import kad.autograd as ag


def _expected_text(tmp_path, monkeypatch):
    monkeypatch.setenv("KAD_CACHE_DIR", str(tmp_path / "expected"))
    dk, key = cache_stress.make_kernel()
    return dk, key, dk.program.module_text(*key)


def test_concurrent_writers(tmp_path, monkeypatch):
    _, _, text = _expected_text(tmp_path, monkeypatch)
    res = cache_stress.run(str(tmp_path / "shared"), workers=3, rounds=15)
    assert res["errors"] == []
    assert res["texts"] == [text]  # every worker, every round: the same module
    assert res["seen"]["partial"] == 0, res["seen"]
    assert res["seen"]["complete"] >= 15, res["seen"]  # the poller did read the files
    assert res["leftovers"] == []  # no temporary file, no __pycache__
    for p in res["paths"]:
        assert ag.read_sealed(p) == text


def test_poller_sees_a_non_atomic_writer(tmp_path):
    res = cache_stress.run(str(tmp_path / "shared"), workers=2, rounds=3, naive=True)
    assert res["seen"]["partial"] > 0, res["seen"]


def test_partial_file_and_stale_temp_are_never_used(tmp_path, monkeypatch):
    dk, key, text = _expected_text(tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    monkeypatch.setenv("KAD_CACHE_DIR", str(cache))
    fresh, _ = cache_stress.make_kernel()
    path = fresh.program.module_path(*key)
    data = ag.seal(text)[1]
    cache.mkdir()
    # what a crash in the middle of a non-atomic write would leave under the final name: a module
    # that parses (cut at a line end) but lacks its launcher and seal
    cut = data.index("\ndef launch_") + 1
    with open(path, "w") as f:
        f.write(data[:cut])
    # a stale temporary file of a crashed writer: importing it would raise
    stale = cache / f".{os.path.basename(path)}.999999.0123456789abcdef.tmp"
    stale.write_text("raise RuntimeError('a temporary file was imported')\n")
    assert ag.read_sealed(path) is None
    mod = fresh.program.module(*key)
    assert callable(mod.launch_rms_norm_fwd_kernel_bwd)
    assert fresh.program.module_text(*key) == text
    assert open(path).read() == data  # the partial file was replaced by a complete one
    assert stale.exists()  # left alone (a live writer may own it), never read
    assert sorted(os.listdir(cache)) == sorted([os.path.basename(path), stale.name])


def test_failed_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    _, key, _ = _expected_text(tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    monkeypatch.setenv("KAD_CACHE_DIR", str(cache))
    fresh, _ = cache_stress.make_kernel()

    def no_fsync(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", no_fsync)
    with pytest.raises(OSError, match="No space left"):
        fresh.program.module_text(*key)
    assert os.listdir(cache) == []


def test_gradient_through_the_cached_module_under_triton_interpreter(tmp_path, monkeypatch):
    """The module imported from its verified text works: launch_<kernel>_bwd under Triton's CPU
    interpreter against PyTorch autograd of the same math."""
    if os.environ.get("KAD_TEST_DEVICE", "cpu") != "cpu":
        pytest.skip("Triton's CPU interpreter: the CPU runs only (the GPU machine's numpy 2.5 breaks it)")
    import triton_cpu
    monkeypatch.setenv("KAD_CACHE_DIR", str(tmp_path))
    dk, key = cache_stress.make_kernel()
    g = torch.Generator().manual_seed(0)
    R, C = cache_stress.ROWS, cache_stress.COLS
    x, w, dy = torch.randn(R, C, generator=g), torch.randn(C, generator=g), torch.randn(R, C, generator=g)
    dx, dw = torch.zeros(R, C), torch.zeros(C)
    with triton_cpu.interpreter():
        mod = dk.program.module(*key)  # its kernels defined in interpreter mode
        mod.launch_rms_norm_fwd_kernel_bwd((R,), x, w, torch.empty(R, C), torch.empty(R), C, C, C, 1e-6,
                                           dy, dx, dw, BLOCK_SIZE=cache_stress.BLOCK)
    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    y = xr * torch.rsqrt(xr.square().mean(-1, keepdim=True) + 1e-6) * wr
    gx, gw = torch.autograd.grad(y, [xr, wr], dy)
    torch.testing.assert_close(dx, gx, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(dw, gw, rtol=1e-4, atol=1e-5)
