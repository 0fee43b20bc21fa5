"""The `tl.*` surface table of docs/LANGUAGE.md against Triton and against kad.

- every public name of `triton.language` (dir() with its submodules imported, names not starting
  with "_") has one row, and
  every row names one (a new Triton version shows its new names here);
- rows are sorted and unique (one row per line: easy to update at a merge);
- a row's status agrees with `kad builtins` (the names kad's builtin tables lower, generated
  from sema_builtins.c): "supported"/"differentiable" only for names kad lowers, "refused" only
  for names it does not; "differentiable" never for a builtin whose IR op AD has no rule for
  (class 'N' in src/ir/ops.h).
"""
import importlib
import os
import pkgutil
import re
import subprocess

import triton.language as tl

import triton_cpu

DOC = os.path.join(triton_cpu.REPO, "docs", "LANGUAGE.md")
STATUSES = ("differentiable", "supported", "refused")


def public_names():
    """dir(triton.language) with every submodule imported first (a submodule becomes an attribute
    when something imports it, e.g. `semantic`), so the set does not depend on the test order."""
    for m in pkgutil.iter_modules(tl.__path__):
        importlib.import_module(f"triton.language.{m.name}")
    return {n for n in dir(tl) if not n.startswith("_")}


def table():
    text = open(DOC, encoding="utf-8").read()
    body = text.split("<!-- tl-surface:begin -->", 1)[1].split("<!-- tl-surface:end -->", 1)[0]
    rows = []
    for line in body.strip().splitlines()[2:]:
        m = re.fullmatch(r"\| `([A-Za-z_0-9]+)` \| (\w+) \| (.*) \|", line)
        assert m, f"malformed row: {line!r}"
        rows.append((m.group(1), m.group(2), m.group(3)))
    return rows


def kad_surface():
    p = subprocess.run([triton_cpu.KAD, "builtins"], capture_output=True, text=True, check=True)
    out = {}
    for line in p.stdout.splitlines():
        name, status, ad = line.split()
        out[name] = (status, ad)
    return out


def test_every_public_name_has_one_row_in_order():
    rows = table()
    names = [r[0] for r in rows]
    assert names == sorted(names), "rows must be sorted by name"
    assert len(names) == len(set(names)), "a name has two rows"
    public = public_names()
    assert not public - set(names), f"names of triton.language without a row: {sorted(public - set(names))}"
    assert not set(names) - public, f"rows naming nothing in triton.language: {sorted(set(names) - public)}"
    for name, status, note in rows:
        assert status in STATUSES, f"{name}: unknown status {status!r}"
        if status == "refused":
            assert note.strip(), f"{name}: a refused row says why"


def test_rows_agree_with_kad():
    kad = kad_surface()
    for name, status, _ in table():
        lowered = kad.get(name, ("refused", "-"))[0] == "supported"
        if status in ("supported", "differentiable"):
            assert lowered, f"tl.{name}: the table says {status}, kad refuses it"
        else:
            assert not lowered, f"tl.{name}: the table says refused, kad lowers it (update the row)"
        if status == "differentiable":
            assert kad.get(name, ("", "-"))[1] != "N", f"tl.{name}: AD has no rule for its op"


def test_kad_lists_only_names_of_triton():
    # a name kad's tables know but Triton does not have would be a typo in sema_builtins.c
    public = public_names()
    assert not set(kad_surface()) - public - {"tanh"}, sorted(set(kad_surface()) - public)
