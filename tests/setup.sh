#!/usr/bin/env bash
# Installs what `make test` needs on a fresh machine: a C compiler and clang
# (libFuzzer) from Debian's packages when missing, hipcc when apt-get has it (optional), and a Python venv with the
# pinned packages of tests/requirements.txt and tests/real/requirements.txt.  Usage: tests/setup.sh PYTHON VENV
set -euo pipefail
PY=${1:-python3}
VENV=${2:-.venv}

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(gcc)
command -v clang >/dev/null 2>&1 || need_apt+=(clang)
if ! echo 'int main(void){return 0;}' | clang -x c - -fsanitize=fuzzer -o /dev/null >/dev/null 2>&1; then
    command -v clang >/dev/null 2>&1 && need_apt+=(libclang-rt-14-dev)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO=sudo
    echo "setup: installing ${need_apt[*]} with apt-get"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# hipcc (Debian's ROCm) for tests/python/test_emit_hip_hipcc.py: the HIP modules compiled for an AMD
# target; optional (the test is skipped without it), so a failed install does not stop the setup
if ! command -v hipcc >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO=sudo
    echo "setup: installing hipcc with apt-get (optional)"
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        hipcc rocm-device-libs libamdhip64-dev >/dev/null; } || echo "setup: no hipcc (its test will be skipped)"
fi

if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r tests/requirements.txt
# The kernel libraries of tests/real, pinned, without their dependencies (which
# would pull a CUDA torch): torch and triton are the ones just installed.
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r tests/real/requirements.txt
echo "setup: done ($("$VENV/bin/python" -c 'import numpy, sys; print("python", sys.version.split()[0], "numpy", numpy.__version__)'))"
