"""Finding the Python sources kad's C library needs for one Triton kernel.

kad compiles from source text, as Triton does.  For a decorated kernel it
needs (1) the module that defines the kernel, whole: module-level constants,
imports and @triton.jit helpers live there; and (2) the modules of helpers
the kernel reaches through its globals (`from .utils import silu`, or
`utils.silu(x)` after `import utils`).  These are found the way Triton finds
a kernel's dependencies: by following the names the function's code uses
through its __globals__, recursively through the helpers.

Order matters to the C library: when several added modules define a
function of the kernel's name, the last one wins, so helper modules are
listed first and the kernel's own module last.

A kernel defined inside a function (common in tests) is not at module level,
where kad looks for kernels.  Its module text is then rewritten: the
top-level statement enclosing the kernel is blanked and the kernel's own
lines are put back dedented, so line numbers in diagnostics still match
the file (columns are off by the removed indentation).  Closure variables
of such a kernel are not visible to kad: use module constants or
constexpr parameters.
"""
import ast
import inspect
import os
import textwrap
import types

__all__ = ["Source", "collect_sources", "unwrap"]


class Source:
    """One module text handed to the C library: its file name (used in
    diagnostics) and its text."""

    __slots__ = ("name", "text")

    def __init__(self, name, text):
        self.name = name
        self.text = text

    def __repr__(self):
        return f"Source({self.name!r}, {len(self.text)} chars)"


def _is_jit(obj):
    """A triton JITFunction (or the interpreter's stand-in for one)."""
    try:
        from triton.runtime.jit import JITFunction
        if isinstance(obj, JITFunction):
            return True
    except ImportError:  # pragma: no cover - triton is a dependency
        pass
    try:
        from triton.runtime.interpreter import InterpretedFunction
        if isinstance(obj, InterpretedFunction):
            return True
    except ImportError:  # pragma: no cover
        pass
    return False


def unwrap(obj):
    """The chain of wrappers from a decorated object down to its JITFunction:
    (chain, jit) where chain lists the triton.autotune / triton.heuristics
    objects outermost first.  TypeError when there is no JITFunction."""
    chain = []
    cur = obj
    for _ in range(16):
        if _is_jit(cur):
            return chain, cur
        inner = getattr(cur, "fn", None)
        if inner is None or isinstance(cur, types.FunctionType):
            break
        chain.append(cur)
        cur = inner
    what = getattr(obj, "__name__", type(obj).__name__)
    raise TypeError(
        f"kad.differentiable expects a @triton.jit kernel (possibly wrapped in triton.autotune or "
        f"triton.heuristics), got {what!r}: put @kad.differentiable above @triton.jit")


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _module_text_for(fn):
    """(file name, text) of the module defining the plain function fn, with a
    nested definition moved to module level (see the header)."""
    try:
        path = inspect.getsourcefile(fn)
    except TypeError:
        path = None
    if not path or not os.path.exists(path):
        # Defined in a REPL or by exec: only the function's own text exists.
        src = textwrap.dedent(inspect.getsource(fn))
        return f"<{fn.__name__}>", "import triton\nimport triton.language as tl\n" + src
    text = _read(path)
    if "<locals>" not in fn.__qualname__ and "." not in fn.__qualname__:
        return path, text
    # Nested: find the def by its first line (decorators included).
    lines, first = inspect.getsourcelines(fn)
    tree = ast.parse(text)
    start, end = first, first + len(lines) - 1
    outer = next((n for n in tree.body if n.lineno <= start and n.end_lineno >= end), None)
    if outer is None:
        return path, text
    file_lines = text.splitlines()
    body = textwrap.dedent("".join(lines)).splitlines()
    for i in range(outer.lineno - 1, outer.end_lineno):
        file_lines[i] = ""
    # decorators may begin above `first` (getsourcelines includes them)
    for k, line in enumerate(body):
        file_lines[start - 1 + k] = line
    return path, "\n".join(file_lines) + "\n"


def _referenced_jit(fn, seen_objs):
    """JIT functions reachable from fn's code through its globals: names it
    uses directly and attributes of modules it uses (`utils.silu`)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    names = set()
    stack = [code]
    while stack:  # nested code objects (comprehensions, lambdas)
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    g = getattr(fn, "__globals__", {})
    found = []
    for name in sorted(names):
        obj = g.get(name)
        if obj is None:
            continue
        if isinstance(obj, types.ModuleType):
            modname = getattr(obj, "__name__", "")
            if modname.split(".")[0] in ("triton", "torch", "numpy", "builtins", "math"):
                continue
            for attr in sorted(names):
                sub = getattr(obj, attr, None)
                if sub is not None and _is_jit(sub) and id(sub) not in seen_objs:
                    found.append(sub)
        elif _is_jit(obj) and id(obj) not in seen_objs:
            found.append(obj)
        else:
            # autotune/heuristics-wrapped helpers are not callable from
            # kernels; anything else is host data kad reads from the module
            pass
    return found


def collect_sources(jit):
    """The Sources for the kernel of JITFunction jit: helper modules first,
    the kernel's own module last."""
    fn = jit.fn
    kname, ktext = _module_text_for(fn)
    order = []  # helper module files, in discovery order
    seen_files = {kname}
    seen_objs = {id(jit)}
    todo = [jit]
    while todo:
        cur = todo.pop(0)
        for helper in _referenced_jit(cur.fn, seen_objs):
            seen_objs.add(id(helper))
            todo.append(helper)
            try:
                path = inspect.getsourcefile(helper.fn)
            except TypeError:
                path = None
            if path and path not in seen_files and os.path.exists(path):
                seen_files.add(path)
                order.append(path)
    sources = [Source(p, _read(p)) for p in order]
    sources.append(Source(kname, ktext))
    return sources
