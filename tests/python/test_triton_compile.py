"""Every Triton module kad emits compiles with Triton for sm_90, also under Triton's specializations.

Triton's JIT specializes a runtime int parameter whose value is 1 into a constexpr (and a None
into a constexpr None), so a kernel is compiled differently when a stride or a size happens to be
1.  Emitted code must compile for any launch values: a construct that works on an i32 scalar but
not on a Python int constant (`n.to(tl.float32)`: a constexpr has no .to()) would make the
backward fail to compile on the GPU although the forward runs.

This test needs no GPU: triton.compile runs Triton's front end, its MLIR passes and the bundled
ptxas for a CUDA target (sm_90) on the CPU.  For every module the test suite produces -- the emit
golden outputs (tests/emit/*.out), the backward modules of the grad golden tests (tests/grad RUN
lines without --ir) and of every differentiable corpus case (test_grad_triton.GRADS) -- it compiles
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
import os
import re
import shlex
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


@pytest.fixture(scope="module", autouse=True)
def _fresh_triton_cache(tmp_path_factory):
    """Compiles for real: no cache entry from an earlier run stands in."""
    old = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton_cache"))
    yield
    if old is None:
        os.environ.pop("TRITON_CACHE_DIR", None)
    else:
        os.environ["TRITON_CACHE_DIR"] = old


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
    names = re.findall(r"@triton\.jit\ndef (\w+)\(", text)
    mod = triton_cpu.load_module(path, modname)
    sys.modules[modname] = mod
    return [getattr(mod, n) for n in names]


def specialization(fn, sig, ints_one):
    """(signature, constexprs) for triton.compile of fn."""
    signature, consts = {}, {}
    for p in fn.params:
        n = p.name
        spelled = sig.get(n)
        if spelled is None and n.startswith("d_"):
            spelled = sig.get(n[2:])
        if spelled is None:
            raise AssertionError(f"{fn.__name__}: parameter {n} is not in the header's signature")
        is_type = spelled.startswith("*") or re.fullmatch(r"(i1|i8|i16|i32|i64|u8|u32|fp16|bf16|fp32|fp64)",
                                                        spelled)
        if p.is_constexpr or not is_type:
            signature[n] = "constexpr"
            consts[n] = py_value(spelled)
        elif ints_one and spelled in _INT_TYPES:
            signature[n] = "constexpr"
            consts[n] = 1
        else:
            signature[n] = spelled
    return signature, consts


def compile_module(text, path, modname, ints_one):
    sig = header_signature(text)
    fns = jit_functions(text, path, modname)
    assert fns, f"no @triton.jit function in {path}"
    for fn in fns:
        signature, consts = specialization(fn, sig, ints_one)
        src = triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=consts)
        triton.compile(src, target=TARGET)


# ---------------------------------------------------------------- the modules


def run_lines(path):
    with open(path, encoding="utf-8") as f:
        return [ln[len("# RUN: "):].strip() for ln in f if ln.startswith("# RUN: ")]


def golden_commands():
    """The kad emit/grad commands of the emit and grad golden tests that succeed, printing
    Triton modules (grad's --ir dropped)."""
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
                out.append((f"{sub}/{f}#{i}", [a for a in args if a != "--ir"]))
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


MODULES = golden_commands() + corpus_grad_commands()


def _modname(tag):
    return "kad_compile_" + re.sub(r"\W", "_", tag)


@pytest.mark.parametrize("ints_one", [False, True], ids=["as_typed", "ints_1"])
@pytest.mark.parametrize("tag,args", MODULES, ids=[t for t, _ in MODULES])
def test_module_compiles(tag, args, ints_one, tmp_path):
    p = triton_cpu.run_kad(args)
    assert p.returncode == 0, f"kad {' '.join(args)} failed:\n{p.stderr}"
    path = tmp_path / "module.py"
    path.write_text(p.stdout)
    compile_module(p.stdout, str(path), _modname(tag) + str(ints_one), ints_one)


def test_the_check_can_fail(tmp_path):
    """The old spelling of a scalar conversion compiles as typed, and fails with n = 1."""
    with open(os.path.join(TESTS, "emit", "bwd_rms_norm.out"), encoding="utf-8") as f:
        text = f.read()
    assert "tl.cast(n_cols, tl.float32)" in text
    old = text.replace("tl.cast(n_cols, tl.float32)", "n_cols.to(tl.float32)")
    p = tmp_path / "old.py"
    p.write_text(old)
    compile_module(old, str(p), "kad_compile_old_typed", False)
    with pytest.raises(triton.compiler.errors.CompilationError, match="has no attribute 'to'"):
        compile_module(old, str(p), "kad_compile_old_one", True)
