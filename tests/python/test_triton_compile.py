"""Every Triton module kad emits compiles with Triton for sm_90, also under Triton's specializations.

Triton's JIT specializes a runtime int parameter whose value is 1 into a constexpr (and a None
into a constexpr None), so a kernel is compiled differently when a stride or a size happens to be
1.  Emitted code must compile for any launch values: a construct that works on an i32 scalar but
not on a Python int constant (`n.to(tl.float32)`: a constexpr has no .to()) would make the
backward fail to compile on the GPU although the forward runs.

This test needs no GPU: triton.compile runs Triton's front end, its MLIR passes and the bundled
ptxas for a CUDA target (sm_90) on the CPU.  For every module the test suite produces -- the emit
golden outputs (tests/emit/*.out), the backward modules of the grad golden tests (tests/grad RUN
lines without --ir), of every differentiable corpus case (test_grad_triton.GRADS) and of
test_scan_general's kernels (the general scan rule) -- it compiles
each @triton.jit function twice:
  as typed:   the types of the module's "Specialized for:" header (constexprs and the runtime
              parameters kad specialized, None or 1, as constexprs; gradient pointers d_X typed
              as X);
  ints = 1:   additionally every runtime integer parameter (i32, i64, u32) a constexpr 1, as
              Triton's JIT makes it when launched with 1.
test_the_check_can_fail shows that the old `.to()` spelling of a scalar conversion fails here.
Skipped when triton is not installed.
"""
import ast
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

import triton_cpu  # noqa: E402
from corpus import CASES  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
REPO = os.path.dirname(TESTS)
TARGET = GPUTarget("cuda", 90, 32)

# kad type -> Triton signature type
_INT_TYPES = {"i32", "i64", "u32"}


def header_signature(text):
    """name -> spelled type or value, from the module's '# Specialized for:' comment."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("# Specialized for: "))
    parts = [lines[start][len("# Specialized for: "):]]
    for ln in lines[start + 1:]:
        if not re.match(r"#\s{3,}\S", ln):
            break
        parts.append(ln[1:].strip())
    sig = " ".join(parts)
    if sig == "(no parameters)":
        return {}
    out = {}
    for item in re.split(r",\s*(?=[A-Za-z_]\w*=)", sig):
        name, _, val = item.partition("=")
        out[name.strip()] = val.strip()
    return out


def py_value(text):
    if text.startswith("tl."):
        return getattr(tl, text[3:])
    return ast.literal_eval(text)


def jit_functions(text, path, modname):
    """The module's kernels; scans' combine functions (_kad_combine_*) are compiled inside them."""
    names = [n for n in re.findall(r"@triton\.jit(?:\(.*\))?\ndef (\w+)\(", text)
             if not n.startswith("_kad_combine_")]
    mod = triton_cpu.load_module(path, modname)
    sys.modules[modname] = mod
    return [getattr(mod, n) for n in names]


def specialization(fn, sig, ints_one, tapes=None, folds=()):
    """(signature, constexprs) for triton.compile of fn."""
    signature, consts = {}, {}
    # a folded backward (write/fold.c): partials, spans, the forward's program count, and the one
    # sum kernel <k>_bwd_sum(part, d, span, nfold, dense), each suffixed _<x> when several inputs
    # (folds: the inputs, in the order of the main kernel's d_<x>_part parameters)
    fold = {}
    tapes = tapes or {}
    m = re.fullmatch(r"\w+_bwd_sum", fn.__name__)
    for n in [p.name for p in fn.params]:
        base, x = n, None
        if m:
            mm = re.fullmatch(r"(part|d|span|nfold|dense)(?:_(\w+))?", n)
            base, x = (mm.group(1), mm.group(2) or (folds[0] if len(folds) == 1 else None)) if mm else (n, None)
            x = x if base in ("part", "d") else None
        x = x or (n[2:-5] if n.startswith("d_") and n.endswith("_part") else None)
        if x is not None and x in sig:
            fold[n] = sig[x] if m and base == "d" else "*fp64" if sig[x] == "*fp64" else "*fp32"
        elif n.startswith("kad_span_") or (m and base == "span"):
            fold[n] = "i64"
        elif n.startswith("kad_programs_") or (m and base in ("nfold", "dense")):
            fold[n] = "i32"
        elif n.startswith("plain_d_"):  # the launcher's flag: the plain-store branch
            fold[n] = "True"
        elif n.startswith("gather_d_"):  # the launcher's flag: the gather kernel writes d_<x> (write/gather.c)
            fold[n] = "True"
        elif n.startswith("TMA_d_"):  # the launcher's flag: a gradient stored through a descriptor (TMA)
            fold[n] = "True"
        elif n.startswith("kad_tape"):  # a tape (ad_tape.c): its dtype from the launcher's allocation
            fold[n] = "*fp64" if tapes.get(n) == "float64" else "*fp32"
        elif n == "kad_dacc":  # the GEMM form's dacc scratch (write/gemm.c): its dtype from the launcher's allocation
            fold[n] = {"float64": "*fp64", "bfloat16": "*bf16", "float16": "*fp16"}.get(tapes.get(n), "*fp32")
        elif n in ("kad_tiles_u", "kad_tiles_v"):  # the GEMM form's tile counts
            fold[n] = "i32"
        elif n == "kad_spread":  # programs per forward program (write/spread.c): 1 is specialized by ints_one
            fold[n] = "i32"
    for p in fn.params:
        n = p.name
        spelled = fold.get(n) or sig.get(n)
        if spelled is None and n.startswith("d_"):
            spelled = sig.get(n[2:])
        if spelled is None:
            raise AssertionError(f"{fn.__name__}: parameter {n} is not in the header's signature")
        spelled = re.sub(r"\[-?\d+:-?\d+\]$", "", spelled)  # a range (`N=i32[1:32]`): Triton sees the type
        is_type = spelled.startswith("*") or re.fullmatch(r"(i1|i8|i16|i32|i64|u8|u32|fp16|bf16|fp32|fp64)",
                                                        spelled)
        if p.is_constexpr or not is_type:
            signature[n] = "constexpr"
            consts[n] = py_value(spelled)
        elif ints_one and spelled in _INT_TYPES and not getattr(p, "do_not_specialize", False):
            signature[n] = "constexpr"
            consts[n] = 1
        else:
            signature[n] = spelled
    return signature, consts


def compile_module(text, path, modname, ints_one):
    sig = header_signature(text)
    fns = jit_functions(text, path, modname)
    assert fns, f"no @triton.jit function in {path}"
    # the launcher allocates tape j (the kernel's kad_tape<j>) with torch.empty(..., dtype=torch.D, ...)
    tapes = {f"kad_tape{j}": d for j, d in enumerate(re.findall(
        r"args\.append\(torch\.empty\(_trips .*dtype=torch\.(\w+)", text))}
    # and the GEMM form's dacc scratch with _dacc = torch.empty(..., dtype=torch.D, ...)
    tapes.update({"kad_dacc": d for d in re.findall(r"_dacc = torch\.empty\(.*dtype=torch\.(\w+)", text)})
    folds = re.findall(r"^    d_(\w+)_part,$", text, re.M)
    for fn in fns:
        signature, consts = specialization(fn, sig, ints_one, tapes, folds)
        src = triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=consts)
        triton.compile(src, target=TARGET)


# ---------------------------------------------------------------- the modules


def run_lines(path):
    with open(path, encoding="utf-8") as f:
        return [ln[len("# RUN: "):].strip() for ln in f if ln.startswith("# RUN: ")]


def golden_commands():
    """The kad emit/grad commands of the emit and grad golden tests that succeed, printing
    Triton modules (grad's --ir and --report dropped)."""
    out = []
    for sub in ("emit", "grad"):
        d = os.path.join(TESTS, sub)
        for f in sorted(os.listdir(d)):
            if not f.endswith((".py", ".ir")):
                continue
            path = os.path.join(d, f)
            if os.path.exists(os.path.splitext(path)[0] + ".err"):
                continue  # refusals
            for i, cmd in enumerate(run_lines(path)):
                args = shlex.split(cmd.replace("%s", path))
                if args[0] not in ("emit", "grad") or "<" in args:
                    continue
                out.append((f"{sub}/{f}#{i}", [a for a in args if a not in ("--ir", "--report")]))
    return out


def corpus_grad_commands():
    import test_grad_triton as g
    out = []
    for c in CASES:
        spec = g.grad_spec(c.id)
        if spec is None:
            continue
        args = ["grad", f"tests/kernels/{c.file}:{c.kernel}", "--sig", c.sig, "--wrt", spec[0], "--out", spec[1]]
        for e in c.extra:
            args += ["--include", f"tests/kernels/{e}"]
        out.append((f"corpus/{c.id}", args))
    return out


def tape_commands():
    """The backward modules of test_tape's kernels (tests/kernels/tape_loops.py)."""
    import test_tape as t
    out = []
    for name, (sig, wrt, outs, _) in sorted(t.CHECKS.items()):
        kernel = name.replace("_one_chunk", "")
        if kernel == name:
            out.append((f"tape/{name}", ["grad", f"{t.K}:{kernel}", "--sig", sig, "--wrt", wrt, "--out", outs]))
    return out


def scan_general_commands():
    """The backward modules of test_scan_general's kernels (the general scan rule: scans of up to
    20 slots), each once: along axis 0 reversed, the 1-D kernel forward."""
    if os.path.join(REPO, "python") not in sys.path:  # the worker process imports it too (kad)
        sys.path.insert(0, os.path.join(REPO, "python"))
    import test_scan_general as s
    out = []
    for cid, axis, reverse, one_d in s.CONFIGS:
        if (axis, reverse) in ((0, True), (1, False) if one_d else None):
            case = s.CASES[cid]
            name, _, consts = s.launch_of(case, axis, reverse, one_d)
            out.append((f"scan_general/{name}", ["grad", f"{s.FILE}:{name}", "--sig", s.sig_of(case, consts),
                                                 "--wrt", ",".join(case.ins), "--out", ",".join(case.outs)]))
    return out


MODULES = golden_commands() + corpus_grad_commands() + tape_commands() + scan_general_commands()
OLD_TO = "old_to"  # the tag of test_the_check_can_fail's module


def _old_spelling():
    """bwd_rms_norm's module with the old `.to()` spelling of its scalar conversion."""
    with open(os.path.join(TESTS, "emit", "bwd_rms_norm.out"), encoding="utf-8") as f:
        text = f.read()
    assert "tl.cast(n_cols, tl.float32)" in text
    return text.replace("tl.cast(n_cols, tl.float32)", "n_cols.to(tl.float32)")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """tag -> {ints_one: None (compiled) or the error}, or the kad error text.  The modules are
    compiled in one fresh Python process: the interpreter-mode tests of this suite patch
    triton.language for Triton's interpreter, which breaks compiling in their process."""
    d = tmp_path_factory.mktemp("modules")
    jobs, results = [], {}
    for i, (tag, args) in enumerate(MODULES + [(OLD_TO, None)]):
        if args is None:
            text = _old_spelling()
        else:
            p = triton_cpu.run_kad(args)
            if p.returncode != 0:
                results[tag] = f"kad {' '.join(args)} failed:\n{p.stderr}"
                continue
            text = p.stdout
        path = d / f"m{i}.py"
        path.write_text(text)
        jobs.append((tag, str(path)))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton_cache"))  # compile for real
    (d / "jobs.json").write_text(json.dumps(jobs))
    p = subprocess.run([sys.executable, os.path.abspath(__file__), str(d / "jobs.json")], env=env, cwd=HERE,
                       capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, p.stderr[-4000:]
    for tag, ints_one, err in json.loads(p.stdout):
        results.setdefault(tag, {})[ints_one] = err
    return results


@pytest.mark.parametrize("ints_one", [False, True], ids=["as_typed", "ints_1"])
@pytest.mark.parametrize("tag", [t for t, _ in MODULES])
def test_module_compiles(compiled, tag, ints_one):
    r = compiled[tag]
    assert isinstance(r, dict), r
    assert r[ints_one] is None, f"{tag}: {r[ints_one]}"


def test_the_check_can_fail(compiled):
    """The old spelling of a scalar conversion compiles as typed, and fails with n = 1."""
    r = compiled[OLD_TO]
    assert r[False] is None, r[False]
    assert r[True] is not None and "has no attribute 'to'" in r[True], r[True]


def _worker(jobs_path):
    """Compiles each job's module both ways; prints [[tag, ints_one, error or None], ...]."""
    out = []
    with open(jobs_path, encoding="utf-8") as f:
        jobs = json.load(f)
    for tag, path in jobs:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for ints_one in (False, True):
            try:
                compile_module(text, path, _modname(tag) + str(ints_one), ints_one)
                out.append([tag, ints_one, None])
            except Exception as e:  # noqa: BLE001 -- reported to the test
                out.append([tag, ints_one, f"{type(e).__name__}: {e}"])
    print(json.dumps(out))


def _modname(tag):
    return "kad_compile_" + re.sub(r"\W", "_", tag)


if __name__ == "__main__":
    _worker(sys.argv[1])
