"""No call against the pipeline between src/'s stage folders (issue 35): tools/stage_deps.py on the build.

tools/stage_deps.py reads build/pic/<folder>/*.o with nm and fails on any reference from a folder to
a symbol defined in a later stage (base < ir < front < analysis < plan < ad < emit < check < kad.c,
main.c; the docstring there says why ir comes before front and plan before ad).  No edge against
the pipeline is left, so none is allowed: the build test fails on any.  The graph logic is tested on
fake nm text, and the check on a copy of the build with one bad object, so that the check itself can
be seen to fail.  The sources' includes follow the same order (each stage's public header, its own
folder's private ones): checked on the repository's src/, on a fake tree and through the tool.
"""
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "stage_deps.py")
BUILD = os.path.join(REPO, "build", "pic")

spec = importlib.util.spec_from_file_location("kad_stage_deps", TOOL)
sd = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sd)

def nm(defined=(), undefined=()):
    return "".join("0000000000000000 T %s\n" % s for s in defined) + \
        "".join("                 U %s\n" % s for s in undefined)


def test_graph_logic_on_fake_nm():
    objs = {
        "base/util.o": nm(["arena_alloc", "buf_str"], ["malloc"]),
        "ir/ir.o": nm(["ir_emit"], ["arena_alloc"]),
        "front/sema.o": nm(["sema_run"], ["ir_emit", "arena_alloc", "emit_module"]),
        "ad/ad_rev.o": nm(["ad_backward"], ["ir_emit", "plan_new"]),
        # the circle ad <-> plan: ad fills a Program (fine), plan calls back into ad (against)
        "plan/program.o": nm(["plan_new"], ["ad_backward"]),
        "emit/emit.o": nm(["emit_module"], ["ir_emit", "plan_new"]),
        # the checker may call ad and plan; emit calling it would be against the order
        "check/check.o": nm(["check_gradients"], ["ad_backward", "plan_new"]),
        "kad.o": nm(["kad_grad"], ["sema_run", "ad_backward", "emit_module", "check_gradients"]),
    }
    edges, owner = sd.graph(objs)
    assert owner["plan_new"] == "plan/program.o"
    assert ("front/sema.o", "malloc") not in [(c, s) for c, s, _ in edges]  # libc: no edge
    assert sd.backward(edges) == [
        ("front/sema.o", "emit_module", "emit/emit.o"),
        ("plan/program.o", "ad_backward", "ad/ad_rev.o"),
    ]
    g = sd.folder_graph(edges)
    assert g[("front", "ir")] == 1 and g[("top", "ad")] == 1 and ("base", "base") not in g
    assert g[("ad", "plan")] == 1 and g[("check", "ad")] == 1 and g[("top", "check")] == 1
    with open(os.devnull, "w") as null:
        assert sd.report(edges, set(), out=null) == sd.backward(edges)
        assert sd.report(edges, {("front/sema.o", "emit_module"), ("plan/program.o", "ad_backward")},
                         out=null) == []
    bad = dict(objs, **{"emit/emit.o": nm(["emit_module"], ["check_gradients"])})
    assert ("emit/emit.o", "check_gradients", "check/check.o") in sd.backward(sd.graph(bad)[0])
    # ir calling a front end is against the order; a symbol defined twice is refused
    bad = dict(objs, **{"ir/ir.o": nm(["ir_emit"], ["sema_run"])})
    assert ("ir/ir.o", "sema_run", "front/sema.o") in sd.backward(sd.graph(bad)[0])
    with pytest.raises(ValueError):
        sd.graph(dict(objs, **{"ir/verify.o": nm(["ir_emit"])}))
    with pytest.raises(ValueError):
        sd.stage_of("misc/x.o")


def test_parse_nm_letters():
    d, u = sd.parse_nm("0000 T f\n0000 t local\n0000 D tab\n0000 R ro\n0000 B bss\n         U g\n"
                       "0000 r .LC0\n         w weak_ref\n")
    assert d == {"f", "tab", "ro", "bss"} and u == {"g"}


def run_tool(build, *allow, extra=()):
    args = [sys.executable, TOOL, build, "--quiet", *extra]
    for caller, sym in allow:
        args += ["--allow", "%s:%s" % (caller, sym)]
    return subprocess.run(args, capture_output=True, text=True, cwd=REPO)


@pytest.mark.skipif(not os.path.isdir(BUILD), reason="no build/pic (run make)")
def test_build_has_no_backward_edge():
    p = run_tool(BUILD)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 edges against the pipeline" in p.stdout, p.stdout


@pytest.mark.skipif(not os.path.isdir(BUILD), reason="no build/pic (run make)")
def test_build_check_fails_on_a_bad_edge(tmp_path):
    # a copy of the build with one more object in the IR's folder, reading the emitter's data
    pic = tmp_path / "pic"
    shutil.copytree(BUILD, pic)
    src = tmp_path / "bad.c"
    src.write_text("extern const char kad_py_covers[];\nconst char *ir_bad(void);\n"
                   "const char *ir_bad(void) { return kad_py_covers; }\n")
    subprocess.run([os.environ.get("CC", "cc"), "-c", str(src), "-o", str(pic / "ir" / "bad.o")], check=True)
    # the tool reads only objects whose source exists: a source tree with ir/bad.c beside the real ones
    tree = tmp_path / "src"
    shutil.copytree(os.path.join(REPO, "src"), tree)
    shutil.copy(src, tree / "ir" / "bad.c")
    p = run_tool(str(pic), extra=("--src", str(tree)))
    assert p.returncode == 1
    assert "BACKWARD: ir/bad.o -> kad_py_covers (gen/py_embed.o)" in p.stdout


def write_tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_include_rule_on_a_fake_tree(tmp_path):
    write_tree(tmp_path, {
        "base/base.h": "#include <stdint.h>\n",
        "base/util.c": '#include "base/base.h"\n',
        "ir/ir.h": '#include "base/base.h"\n#include "ir/ops.h"\n',
        "ir/ops.h": "",
        "ir/ir_int.h": '#include "ir/ir.h"\n',
        "ir/interp.c": '#include "ir/ir.h"\n#include "ir/ir_int.h"\n',
        # the IR must not see a front end's header
        "ir/pass.c": '#include "ir/ir.h"\n#include "front/triton.h"\n',
        "front/triton.h": '#include "ir/ir.h"\n',
        "front/front.h": '#include "front/triton.h"\n',
        # its own private header, spelled beside the file
        "front/lex.c": '#include "front.h"\n',
        # another folder's private header
        "front/sema.c": '#include "front/front.h"\n#  include "ir/ir_int.h"\n',
        "ad/ad_int.h": '#include "plan/plan.h"\n',
        "ad/write/fold.c": '#include "ad/ad_int.h"\n',
        "plan/plan.h": '#include "ad/autodiff.h"\n',
        "ad/autodiff.h": "",
        "kad.c": '#include "../include/kad.h"\n#include "check/check.h"\n#include "front/front.h"\n'
                 '#include "kad_int.h"\n',
        "kad_int.h": "",
        "check/check.h": "",
    })
    assert sd.includes_of('/* #include "x.h" */\n#include <a.h>\n# include "b.h"\n') == [(3, "b.h")]
    got = [(f, n, h) for f, n, h, _ in sd.include_violations(str(tmp_path))]
    assert got == [
        ("front/sema.c", 2, "ir/ir_int.h"),
        ("ir/pass.c", 2, "front/triton.h"),
        ("kad.c", 3, "front/front.h"),
        ("kad.c", 4, "kad_int.h"),
        ("plan/plan.h", 1, "ad/autodiff.h"),
    ]
    why = {(f, h): w for f, _, h, w in sd.include_violations(str(tmp_path))}
    assert why[("ir/pass.c", "front/triton.h")] == "the header of front, a later stage than ir"
    assert why[("front/sema.c", "ir/ir_int.h")] == "a private header of ir"


def test_repository_includes_follow_the_stages():
    assert sd.include_violations(os.path.join(REPO, "src")) == []
    # every stage's public header exists, and the one internal header is gone
    for h in sd.PUBLIC_HEADERS:
        assert os.path.exists(os.path.join(REPO, "src", h)), h
    assert not os.path.exists(os.path.join(REPO, "src", "kad_int.h"))


@pytest.mark.skipif(not os.path.isdir(BUILD), reason="no build/pic (run make)")
def test_build_check_fails_on_a_bad_include(tmp_path):
    tree = tmp_path / "src"
    shutil.copytree(os.path.join(REPO, "src"), tree)
    with open(tree / "ir" / "pass.c", "a") as f:
        f.write('#include "ad/autodiff.h"\n')
    p = run_tool(BUILD, extra=("--src", str(tree)))
    assert p.returncode == 1, p.stdout + p.stderr
    assert '"ad/autodiff.h" (the header of ad, a later stage than ir)' in p.stdout
    assert "1 includes against the stages" in p.stdout
