#!/usr/bin/env bash
# Everything that must run on a GPU once per issue, in one call of the device tool:
#
#   bash tests/gpu/run_all.sh [PYTEST-ARGS...]
#
# Builds libkad, then runs with CUDA tensors: the emitted forward kernels against the originals
# (test_emit_triton.py), the generated backward modules against PyTorch autograd
# (test_grad_*.py that read KAD_GRAD_TEST_DEVICE), the Python package suites, the GPU-only tests under tests/gpu/ and the
# real-kernel corpus (tests/real, when its libraries are importable there).  Each suite's log is
# written to $OUT/ when OUT is set (the device tool's output folder).  Exit status: non-zero if
# any suite failed.
set -u
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
LOG=${OUT:-/tmp}
make -s -j"$(nproc)" all || exit 1
export KAD_CACHE_DIR=${KAD_CACHE_DIR:-$(mktemp -d)} PYTHONUNBUFFERED=1
"$PY" -c 'import torch, triton, numpy; print("torch", torch.__version__, "triton", triton.__version__,
"numpy", numpy.__version__, torch.cuda.get_device_name(0))'
status=0
suite() {
    local name=$1; shift
    echo "== $name"
    if ! env "$@" 2>&1 | tee "$LOG/gpu_$name.log" | tail -n 15; then status=1; fi
    # tee hides the status: read it back from the log's pytest summary
    if grep -Eq '(^| )[1-9][0-9]* (failed|errors?)([ ,]|$)' "$LOG/gpu_$name.log"; then status=1; fi
}
suite emit  KAD_TEST_DEVICE=cuda KAD_GRAD_TEST_DEVICE=cuda KAD_EMIT_TEST_DEVICE=cuda "$PY" -m pytest -q tests/python/test_emit_triton.py "$@"
# every pytest file that runs generated backward modules on KAD_GRAD_TEST_DEVICE
grad_tests=$(grep -l KAD_GRAD_TEST_DEVICE tests/python/test_grad_*.py)
suite grad  KAD_TEST_DEVICE=cuda KAD_GRAD_TEST_DEVICE=cuda KAD_EMIT_TEST_DEVICE=cuda "$PY" -m pytest -q $grad_tests "$@"
# every pytest file that picks its device from KAD_TEST_DEVICE
pkg_tests=$(grep -l KAD_TEST_DEVICE tests/python/test_*.py)
gpu_tests=$(ls tests/gpu/test_*.py 2>/dev/null)
suite package KAD_TEST_DEVICE=cuda KAD_GRAD_TEST_DEVICE=cuda KAD_EMIT_TEST_DEVICE=cuda "$PY" -m pytest -q $pkg_tests $gpu_tests "$@"
# the real-kernel corpus: its pinned libraries must be importable (the device machine has no
# network: install them from carried wheels first, see docs/COVERAGE.md)
if "$PY" -c 'import flag_gems' >/dev/null 2>&1 || GEMS_VENDOR=nvidia "$PY" -c 'import flag_gems' >/dev/null 2>&1; then
    suite real KAD_TEST_DEVICE=cuda "$PY" tests/real/run.py
else
    echo "== real: skipped, the corpus libraries are not installed here"; status=1
fi
echo "== gpu run status: $status"
exit $status
