"""No call against the pipeline between src/'s stage folders (issue 35): tools/stage_deps.py on the build.

tools/stage_deps.py reads build/pic/<folder>/*.o with nm and fails on any reference from a folder to
a symbol defined in a later stage (base < ir < front < analysis < plan < ad < emit < check < kad.c,
main.c; the docstring there says why ir comes before front and plan before ad).  No edge against
the pipeline is left, so none is allowed: the build test fails on any.  The graph logic is tested on
fake nm text, and the check on a copy of the build with one bad object, so that the check itself can
be seen to fail.
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
