#!/usr/bin/env python3
"""Which stage calls which: the link-level graph of src/'s folders, and its edges against the pipeline.

src/ has one folder per stage, in pipeline order (docs/ARCHITECTURE.md): base, front, ir,
analysis, plan, ad, emit, check; then src/kad.c and src/main.c (here: top).  A stage may call its
own folder and any earlier one; a call into a later stage is an edge against the pipeline, and with
the later stage calling back it makes an import circle across stages (issue 35).  The order checked is

    base < ir < front < analysis < plan < ad < emit < check < top

-- the pipeline's, but for two data structures placed below the stages that produce them.  The IR
before the front end: a front end's output is the IR, which sema builds with ir.c's constructors
and op table (as clang links LLVM's lib/IR), so the IR is a library below every front end (the
Python subset's, CUDA C's, irparse.c's) and the rule between the two folders is that ir never calls
a front end.  The plan before AD, for the same reason: a backward is a Program (plan.h), which the
AD strategies fill; its steps, its runner on the interpreter, its text and the evaluation of its
data (tape sizes, revolve, the fold's sum kernel) read only the Program, so plan never calls AD.
The gradient checker (check/) runs AD's output against finite differences: it calls AD, plan and
the interpreter and nothing calls it but the API, so it sits after them (after emit, which it does
not call either).  The graph is read from the built objects, not the sources: `nm` lists what each
object defines and what it leaves undefined, so an edge is a real link dependency -- a function
or table referenced by name, whatever header declared it, whatever macro spelled the call -- and
static helpers, which cannot cross a file, do not show.  A symbol defined in no object of the
library (libc, libm) is no edge.

    tools/stage_deps.py [BUILD_DIR]      (default build/pic; main.c is read from build/main.o if
                                          there, else compiled from src/main.c into a temp file)
    --allow FILE:SYMBOL                  an edge to tolerate (repeatable): the caller's object
                                          path relative to BUILD_DIR, and the callee symbol
    --quiet                              print the offending edges only
    --src SRC                            the source tree whose objects count and whose includes
                                          are checked (default src/)

Prints the folder graph (edges with how many symbols each carries) and every edge against the
pipeline as `caller file -> callee symbol (callee file)`; exits 1 when one is not allowed, 2 when
the objects cannot be read.  stdlib only; the graph logic (`parse_nm`, `graph`, `backward`) takes
`nm` text, so it can be tested on a fake.

It also checks the sources' `#include "..."` lines against the same order (`include_violations`,
read from SRC, src/ unless --src gives another tree): a .c or .h of stage X may include the public
header of a stage <= X (PUBLIC_HEADERS: one or two per stage, include/kad.h for the top) and the
private headers of its own folder, nothing else -- no header of a later stage, no other folder's
private header.  Each offending line prints as `INCLUDE: file: "header" (why)` and makes the exit
status 1; there is no allow list for these.
"""
import os
import subprocess
import sys
import tempfile

ORDER = ("base", "ir", "front", "analysis", "plan", "ad", "emit", "check", "top")
RANK = {name: i for i, name in enumerate(ORDER)}
# build/pic/gen/py_embed.o holds the launchers' Python helpers (src/emit/py/), the emitter's data
FOLDER_ALIAS = {"gen": "emit"}
# nm's letters for a symbol an object defines (text, data, bss, read-only, common, weak)
DEFINED = set("TDBRCVWGS")


def stage_of(relpath):
    """The stage of an object path relative to the build dir: its first folder, or top for
    build/pic/kad.o and main.o."""
    parts = relpath.replace(os.sep, "/").split("/")
    if len(parts) == 1:
        return "top"
    folder = FOLDER_ALIAS.get(parts[0], parts[0])
    if folder not in RANK:
        raise ValueError("%s: folder %r is not a stage of %s" % (relpath, parts[0], ", ".join(ORDER)))
    return folder


def parse_nm(text):
    """`nm` output of one object -> (defined, undefined): sets of global symbol names."""
    defined, undefined = set(), set()
    for line in text.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] == "U":
            undefined.add(f[1])
        elif len(f) == 3 and f[1] in DEFINED:
            defined.add(f[2])
    return defined, undefined


def graph(objects):
    """objects: {relpath: nm text}.  Returns (edges, owner): edges is a sorted list of
    (caller file, callee symbol, callee file) for every reference that another object of the
    set resolves; owner maps each defined symbol to its file."""
    owner, needs = {}, {}
    for path in sorted(objects):
        d, u = parse_nm(objects[path])
        needs[path] = u
        for s in d:
            if s in owner:
                raise ValueError("%s is defined in %s and %s" % (s, owner[s], path))
            owner[s] = path
    edges = sorted((path, s, owner[s]) for path, u in needs.items() for s in u if s in owner)
    return edges, owner


def folder_graph(edges):
    """{(caller stage, callee stage): number of distinct symbols}, edges inside a stage left out."""
    g = {}
    for caller, sym, callee in edges:
        a, b = stage_of(caller), stage_of(callee)
        if a != b:
            g[(a, b)] = g.get((a, b), 0) + 1
    return g


def backward(edges):
    """The edges from a stage into a later one."""
    return [e for e in edges if RANK[stage_of(e[0])] < RANK[stage_of(e[2])]]


def read_objects(build, src=None):
    """nm output of every object under build whose source still exists (SRC/X.c for X.o, or the
    generated gen/ files; SRC: the repository's src/ unless given): an object left in a build
    tree from a source that was moved or split is skipped."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = src or os.path.join(root, "src")
    objs = {}
    for dirpath, _, files in os.walk(build):
        for f in files:
            if f.endswith(".o"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, build)
                if not rel.startswith("gen" + os.sep) and \
                        not os.path.exists(os.path.join(src, rel[:-2] + ".c")):
                    continue
                objs[os.path.relpath(path, build)] = subprocess.run(
                    ["nm", path], check=True, capture_output=True, text=True).stdout
    return objs


def main_object(build, tmp):
    """build/main.o when the build made one, else src/main.c compiled (syntax only matters: nm
    needs its undefined symbols) into tmp."""
    for cand in (os.path.join(build, "main.o"), os.path.join(os.path.dirname(build), "main.o")):
        if os.path.exists(cand):
            return cand
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = os.path.join(root, "src", "main.c")
    if not os.path.exists(src):
        return None
    out = os.path.join(tmp, "main.o")
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-DKAD_CHECKED",
                    "-I" + os.path.join(root, "src"), "-I" + os.path.join(root, "include"),
                    "-c", src, "-o", out], check=True, capture_output=True)
    return out


# The stages' public headers (paths as included, relative to src/; include/kad.h as src/'s files
# spell it).  Every other header under src/FOLDER/ is that folder's private one.
PUBLIC_HEADERS = {
    "base/base.h": "base",
    "ir/ir.h": "ir",
    "front/triton.h": "front",
    "front/cuda.h": "front",
    "analysis/analysis.h": "analysis",
    "plan/plan.h": "plan",
    "ad/autodiff.h": "ad",
    "emit/emit_triton.h": "emit",
    "emit/emit_cuda.h": "emit",
    "check/check.h": "check",
    "../include/kad.h": "top",
}


def includes_of(text):
    """The quoted includes of a C file's text, as (line number, header) in order."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith("#"):
            rest = s[1:].lstrip()
            if rest.startswith("include") and '"' in rest:
                out.append((n, rest.split('"')[1]))
    return out


def header_path(src, file_rel, inc):
    """The header an include of file_rel (relative to src) names, relative to src: beside the file
    when it is there (as the compiler looks first), else from src/ (-Isrc)."""
    here = os.path.normpath(os.path.join(os.path.dirname(file_rel), inc)).replace(os.sep, "/")
    if os.path.exists(os.path.join(src, here)):
        return here
    return os.path.normpath(inc).replace(os.sep, "/")


def include_violations(src):
    """Every include in src's .c and .h files against the order: a list of
    (file, line, header, why), file and header relative to src."""
    bad = []
    for dirpath, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            mine = stage_of(rel)
            with open(path, encoding="utf-8", errors="replace") as fh:
                incs = includes_of(fh.read())
            for n, inc in incs:
                h = header_path(src, rel, inc)
                if h in PUBLIC_HEADERS:
                    theirs = PUBLIC_HEADERS[h]
                    if RANK[theirs] > RANK[mine]:
                        bad.append((rel, n, inc, "the header of %s, a later stage than %s" % (theirs, mine)))
                    continue
                if h.startswith("../"):
                    bad.append((rel, n, inc, "not a header of src/"))
                    continue
                folder = stage_of(h)
                if "/" not in h:
                    bad.append((rel, n, inc, "a header at src/'s top, which no stage may include"))
                elif folder != mine:
                    bad.append((rel, n, inc, "a private header of %s" % folder))
    return sorted(bad)


def report_includes(bad, out=sys.stdout):
    for rel, n, inc, why in bad:
        print('INCLUDE: %s:%d: "%s" (%s)' % (rel, n, inc, why), file=out)
    print("%d includes against the stages" % len(bad), file=out)
    return bad


def report(edges, allow, quiet=False, out=sys.stdout):
    """Prints the graph and the offending edges; returns the edges against the pipeline that are
    not in allow (a set of (caller file, symbol))."""
    bad = backward(edges)
    if not quiet:
        g = folder_graph(edges)
        print("stage graph (caller -> callee: symbols), order %s" % " < ".join(ORDER), file=out)
        for (a, b) in sorted(g, key=lambda k: (RANK[k[0]], RANK[k[1]])):
            mark = "   <-- against the pipeline" if RANK[a] < RANK[b] else ""
            print("  %-8s -> %-8s %4d%s" % (a, b, g[(a, b)], mark), file=out)
    new = [e for e in bad if (e[0], e[1]) not in allow]
    used = {(e[0], e[1]) for e in bad}
    for caller, sym, callee in bad:
        tag = "allowed" if (caller, sym) in allow else "BACKWARD"
        print("%s: %s -> %s (%s)" % (tag, caller, sym, callee), file=out)
    for caller, sym in sorted(allow - used):
        print("stale allow (no such edge now): %s:%s" % (caller, sym), file=out)
    print("%d edges against the pipeline, %d allowed, %d not" % (len(bad), len(bad) - len(new), len(new)),
          file=out)
    return new


def main(argv):
    build, allow, quiet, src = "build/pic", set(), False, None
    it = iter(argv)
    for a in it:
        if a == "--allow":
            caller, _, sym = next(it).rpartition(":")
            allow.add((caller, sym))
        elif a == "--quiet":
            quiet = True
        elif a == "--src":
            src = next(it)
        elif a.startswith("-"):
            print(__doc__, file=sys.stderr)
            return 2
        else:
            build = a
    if not os.path.isdir(build):
        print("stage_deps: no build dir %s (run make)" % build, file=sys.stderr)
        return 2
    objs = read_objects(build, src)
    if not objs:
        print("stage_deps: no objects under %s" % build, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        m = main_object(build, tmp)
        if m and "main.o" not in objs:
            objs["main.o"] = subprocess.run(["nm", m], check=True, capture_output=True, text=True).stdout
    edges, _ = graph(objs)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bad_edges = report(edges, allow, quiet)
    bad_includes = report_includes(include_violations(src or os.path.join(root, "src")))
    return 1 if bad_edges or bad_includes else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
