"""Finding the Python sources kad's C library needs for one Triton kernel.

kad compiles from source text, as Triton does.  For a decorated kernel it
needs (1) the module that defines the kernel, whole: module-level constants,
imports and @triton.jit helpers live there; and (2) the modules of helpers
the kernel reaches through its globals (`from .utils import silu`, or
`utils.silu(x)` after `import utils`).  These are found the way Triton finds
a kernel's dependencies: by following the names the function's code uses
through its __globals__, recursively through the helpers.

Every source is added as a named module (its __name__), so that kad
resolves imports like Python does: relative ones, `import a.b as m` then
`m.f(...)`, constants and aliases of other modules, re-exports.  Which
modules to add is asked of kad itself (kad_module_imports), starting from
the kernel's module: each imported module that is loaded (sys.modules) and
has a .py file is added, recursively.  Triton, torch and numpy are not.

Values only the host knows (an alias chosen by host code at import time,
`exp = getattr(libdevice, ...)`, try/except imports) are read from the live
module globals: for every name the kernel and its helpers use (directly,
or as `module.NAME`) whose value is a constant, a dtype, a Triton function
or a @triton.jit function, host_values gives the value text that
kad_set_global takes; it wins over what kad would read from the source.

@triton.jit helpers are taken from the live objects, not looked up by name
in module text (live_helpers): for each JITFunction the kernel reaches
through __globals__ (a name, or `module.NAME`), recursively through the
helpers' own __globals__, a synthetic module __kad_live__.hN holds the
helper's own source (jit.src) under its real file name, its def on its
real line, and kad_set_global binds the name each caller uses to it.  So a
helper defined in a module-level if/else or try/except, re-exported across
modules, or living in a module that sys.modules does not hold (loaded with
importlib's module_from_spec) resolves as Python resolved it.

A kernel defined inside a function (common in tests), or inside a
module-level if/else or try/except, is not at module level,
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
import re
import sys
import textwrap
import types

__all__ = ["Source", "collect_sources", "generated_source", "live_helpers", "unwrap"]


class Source:
    """One module text handed to the C library: its file name (used in
    diagnostics) and its text."""

    __slots__ = ("name", "text", "module")

    def __init__(self, name, text, module=None):
        self.name = name
        self.text = text
        self.module = module

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
    lines, first = inspect.getsourcelines(fn)
    tree = ast.parse(text)
    if any(isinstance(n, ast.FunctionDef) and n.name == fn.__name__ and
           (n.decorator_list[0].lineno if n.decorator_list else n.lineno) == first for n in tree.body):
        return path, text
    # Nested in a function, or in a module-level if/try: find the def by its
    # first line (decorators included).
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
    kname, ktext = generated_source(jit) if _is_generated(fn) else _module_text_for(fn)
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


_NOT_ADDED = ("triton", "torch", "numpy", "builtins", "math")
_FLOAT_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
                 "fp8e5": "float8e5", "fp8e4nv": "float8e4nv", "fp8e4b15": "float8e4b15"}


def _module_name(fn):
    name = getattr(fn, "__module__", None) or "__main__"
    return name


def _module_source(name):
    """(path, text) of loaded module `name` when it has a Python file."""
    mod = sys.modules.get(name)
    path = getattr(mod, "__file__", None) if mod is not None else None
    if not path or not path.endswith(".py") or not os.path.exists(path):
        return None
    return path, _read(path)


def _is_generated(fn):
    """True when fn's code was not compiled from its module's file: source
    text made at run time and exec'd (xformers' unroll_varargs), whose def
    the module file does not hold."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    mod = sys.modules.get(_module_name(fn))
    path = getattr(mod, "__file__", None) if mod is not None else None
    where = code.co_filename
    if not path or not os.path.exists(where):
        return True
    return os.path.realpath(where) != os.path.realpath(path)


def generated_source(jit):
    """(file name, text) of a synthetic module for a generated kernel: its
    own source (jit.src) made a @triton.jit def, with the names its code
    uses bound as in its module's namespace (fn.__globals__): modules by an
    import of the same name, everything else by `from MODULE import NAME`,
    which kad resolves in the real module (its source, or what host_values
    sets there).  The def line is where it was in the generated file when
    that leaves room for the decorator line above it, else one line below."""
    fn = jit.fn
    kmod = _module_name(fn)
    src = textwrap.dedent(_helper_source(jit)[0])
    first = getattr(getattr(fn, "__code__", None), "co_firstlineno", 1)
    lines = [""] * max(0, first - 2) + ["@triton.jit", src.rstrip("\n"), ""]
    g = getattr(fn, "__globals__", {})
    plain = []
    for name in sorted(_code_names(fn)):
        if name not in g or name == fn.__name__:
            continue
        obj = g[name]
        if isinstance(obj, types.ModuleType):
            lines.append(f"import {obj.__name__} as {name}")
        else:
            plain.append(name)
    if plain:
        lines.append(f"from {kmod} import {', '.join(plain)}")
    name = getattr(fn.__code__, "co_filename", None) or f"<generated {fn.__name__}>"
    return name, "\n".join(lines) + "\n"


def load_sources(ctx, jit):
    """Adds the kernel's module and, recursively, the loaded modules it
    imports to kad context ctx; returns the Sources added, kernel first.
    A generated kernel (see _is_generated) comes first as a synthetic module
    named MODULE.<generated NAME> beside its real module."""
    fn = jit.fn
    kmod = _module_name(fn)
    sources = []
    if _is_generated(fn):
        gname, gtext = generated_source(jit)
        gmod = f"{kmod}.<generated {fn.__name__}>"
        ctx.add_module(gmod, gname, gtext)
        sources.append(Source(gname, gtext, gmod))
        src = _module_source(kmod)
        # the real module, read for its names (an empty one when it has no
        # file: what the generated code uses then comes from host_values)
        kname, ktext = src if src is not None else (f"<module {kmod}>", "")
        try:
            ctx.add_module(kmod, kname, ktext)
        except Exception:  # its file is not Python kad reads: host values only
            kname, ktext = f"<module {kmod}>", ""
            ctx.add_module(kmod, kname, ktext)
        sources.append(Source(kname, ktext, kmod))
        todo, seen = [gmod, kmod], {gmod, kmod}
    else:
        kname, ktext = _module_text_for(fn)
        sources.append(Source(kname, ktext, kmod))
        ctx.add_module(kmod, kname, ktext)
        todo, seen = [kmod], {kmod}
    _follow_imports(ctx, todo, seen, sources)
    # helpers reached through globals whose modules the imports did not name
    for s in collect_sources(jit)[:-1]:
        if all(x.name != s.name for x in sources):
            mod = _module_of_file(s.name)
            if mod and mod not in seen:
                seen.add(mod)
                ctx.add_module(mod, s.name, s.text)
                sources.append(Source(s.name, s.text, mod))
    # custom rules (kad.vjp_of, kad.nondiff) registered for helpers of these modules: their files,
    # added last, and the modules they import that are not added yet
    from .rules import rule_modules
    todo = [m for m in rule_modules(seen) if _module_source(m) is not None]
    seen.update(todo)
    for name in todo:
        src = _module_source(name)
        ctx.add_module(name, src[0], src[1])
        sources.append(Source(src[0], src[1], name))
    while todo:
        cur = todo.pop(0)
        for name in ctx.module_imports(cur) or []:
            if name in seen or name.split(".")[0] in _NOT_ADDED + ("kad",):
                continue
            seen.add(name)
            src = _module_source(name)
            if src is None:
                continue
            try:
                ctx.add_module(name, src[0], src[1])
            except Exception:
                continue
            sources.append(Source(src[0], src[1], name))
            todo.append(name)
    return sources


def _follow_imports(ctx, todo, seen, sources):
    """Adds, recursively, the loaded modules with a .py file that the added
    modules in todo import (kad_module_imports) and seen lacks."""
    todo = list(todo)
    while todo:
        cur = todo.pop(0)
        for name in ctx.module_imports(cur) or []:
            if name in seen or name.split(".")[0] in _NOT_ADDED:
                continue
            seen.add(name)
            src = _module_source(name)
            if src is None:
                continue  # host-only or not loaded: an error only if the kernel uses it
            try:
                ctx.add_module(name, src[0], src[1])
            except Exception:  # not Triton code kad reads: a kernel using it gets "not found"
                continue
            sources.append(Source(src[0], src[1], name))
            todo.append(name)


def _module_of_file(path):
    for name, mod in list(sys.modules.items()):
        if getattr(mod, "__file__", None) == path:
            return name
    return None


def _value_text(v):
    """The kad_set_global text of a live value, or None when kad has no
    spelling for it (the name is then read from the source as usual)."""
    try:
        import triton.language as tl
    except ImportError:  # pragma: no cover
        return None
    if isinstance(v, tl.constexpr):
        v = v.value
    if v is None or isinstance(v, bool):
        return repr(v)
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        return repr(v) if v == v and abs(v) != float("inf") else None
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, tl.dtype):
        if v.is_ptr():
            return None
        return "triton.language." + _FLOAT_DTYPES.get(v.name, v.name)
    if _is_jit(v):
        f = v.fn
        mod = getattr(f, "__module__", "") or ""
        if mod.startswith("triton."):
            return f"triton.language.{f.__name__}"
        if "<locals>" in getattr(f, "__qualname__", "<locals>"):
            return None
        return f"{mod}.{f.__name__}"
    if isinstance(v, types.FunctionType):
        mod = getattr(v, "__module__", "") or ""
        if mod.startswith("triton.language") and "<locals>" not in v.__qualname__:
            return f"{mod}.{v.__name__}"
    return None


def _code_names(fn):
    code = getattr(fn, "__code__", None)
    names, stack = set(), [code] if code is not None else []
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return names


def host_values(jit, modules):
    """[(module, name, value text)] for the names the kernel and its helpers
    use, read from the live module globals (see the header).  modules: the
    names of the modules added to kad."""
    out, seen_fns, todo = {}, set(), [jit]
    while todo:
        cur = todo.pop()
        if id(cur) in seen_fns:
            continue
        seen_fns.add(id(cur))
        fn = cur.fn
        mod = _module_name(fn)
        names = _code_names(fn)
        g = getattr(fn, "__globals__", {})
        for name in sorted(names):
            if name not in g:
                continue
            obj = g[name]
            if isinstance(obj, types.ModuleType):
                mname = obj.__name__
                if mname.split(".")[0] in _NOT_ADDED or mname not in modules:
                    continue
                for attr in sorted(names):
                    if attr in vars(obj):
                        sub = vars(obj)[attr]
                        t = _value_text(sub)
                        if t is not None and t != f"{mname}.{attr}":
                            out[(mname, attr)] = t
                        if _is_jit(sub):
                            todo.append(sub)
                continue
            t = _value_text(obj)
            if t is not None and mod in modules and t != f"{mod}.{name}":  # not the def itself
                out[(mod, name)] = t
            if _is_jit(obj) and not (getattr(obj.fn, "__module__", "") or "").startswith("triton."):
                todo.append(obj)
    return [(m, n, t) for (m, n), t in sorted(out.items())]


# ---- Helpers resolved from the live objects (docs/PYTHON.md, "Sources") ----

_LIVE = "__kad_live__"  # the package of the synthetic helper modules


def _helper_source(jit):
    """(source from the def on, file, line of the def) of a JIT function:
    the source Triton read (jit.src; the interpreter's InterpretedFunction
    keeps none, so the function's own lines then), located by its code
    object's file and the first line Triton read, decorators skipped."""
    fn = jit.fn
    code = getattr(fn, "__code__", None)
    path = getattr(code, "co_filename", None) or f"<{fn.__name__}>"
    raw, first = getattr(jit, "raw_src", None), getattr(jit, "starting_line_number", None)
    if raw is None or first is None:
        raw, first = inspect.getsourcelines(fn)
    src = getattr(jit, "src", None)
    if src is None:
        src = textwrap.dedent("".join(raw))
        src = src[re.search(r"^def\s+\w+\s*\(", src, re.MULTILINE).start():]
    for k, line in enumerate(raw):
        if line.lstrip().startswith("def "):
            return src, path, first + k
    return src, path, first + 1


def _is_user_jit(obj):
    return _is_jit(obj) and not (getattr(obj.fn, "__module__", "") or "").startswith("triton.")


class _Live:
    """The synthetic modules of one kernel's live helpers: one per
    JITFunction reached (by identity), named __kad_live__.hN, holding the
    helper's own source (jit.src) at its real file and line, with the names
    its code uses bound from its own __globals__."""

    def __init__(self, ctx, sources):
        self.ctx = ctx
        self.sources = sources
        self.modules = {s.module for s in sources}
        self.of = {}  # id(jit) -> "__kad_live__.hN.fname"
        self.binds = {}  # (module, name) -> value text
        self.todo = []
        self.keep = []  # the helpers (ids stay unique while they live)

    def helper(self, jit):
        """The qualified name kad knows live helper jit by."""
        q = self.of.get(id(jit))
        if q is None:
            mod = f"{_LIVE}.h{len(self.of)}"
            q = self.of[id(jit)] = f"{mod}.{jit.fn.__name__}"
            self.keep.append(jit)
            self.todo.append((jit, mod))
        return q

    def bind(self, jit, mod, lines):
        """Binds in added module `mod` the names jit's code uses, from its
        __globals__; module imports go to `lines` (None: bind modules'
        used attributes only, the module's own text imports them)."""
        fn = jit.fn
        g = getattr(fn, "__globals__", {})
        names = _code_names(fn)
        real = _module_name(fn)
        plain = []
        for name in sorted(names):
            if name not in g or g[name] is jit:
                continue  # its own name (`tl.program_id` in a helper program_id): its def
            obj = g[name]
            if isinstance(obj, types.ModuleType):
                if lines is not None:
                    lines.append(f"import {obj.__name__} as {name}" if name != obj.__name__
                                 else f"import {name}")
                if obj.__name__.split(".")[0] in _NOT_ADDED:
                    continue
                unseen = sys.modules.get(obj.__name__) is not obj  # importlib's module_from_spec
                if unseen and obj.__name__ not in self.modules:
                    # its text is not read: an empty module, the names used bound from the live one
                    self.ctx.add_module(obj.__name__, f"<module {obj.__name__}>", "")
                    self.sources.append(Source(f"<module {obj.__name__}>", "", obj.__name__))
                    self.modules.add(obj.__name__)
                for attr in sorted(names):
                    sub = vars(obj).get(attr)
                    if _is_user_jit(sub):
                        self.binds[(obj.__name__, attr)] = self.helper(sub)
                    elif unseen and attr in vars(obj) and _value_text(sub) is not None:
                        self.binds[(obj.__name__, attr)] = _value_text(sub)
                continue
            if _is_user_jit(obj):
                self.binds[(mod, name)] = self.helper(obj)
                continue
            if lines is None:
                continue  # host_values binds the rest of a module's names
            t = _value_text(obj)
            if t is not None:
                self.binds[(mod, name)] = t
            else:
                plain.append(name)
        if plain and lines is not None and real in self.modules:
            lines.append(f"from {real} import {', '.join(plain)}")

    def run(self, jit, kmod):
        """Binds the kernel's names in kmod (the module its text is read in)
        and adds the synthetic module of every helper reached."""
        self.bind(jit, kmod, None)
        while self.todo:
            h, mod = self.todo.pop(0)
            src, path, line = _helper_source(h)
            src = textwrap.dedent(src).rstrip("\n")
            lines = [""] * max(0, line - 2) + ["@triton.jit", src, ""]
            self.bind(h, mod, lines)
            text = "\n".join(lines) + "\n"
            self.ctx.add_module(mod, path, text)
            self.sources.append(Source(path, text, mod))
            self.modules.add(mod)
            _follow_imports(self.ctx, [mod], self.modules, self.sources)
        # a helper's own module names it too (a rules file's `from m import h`)
        for h in self.keep:
            m = _module_name(h.fn)
            if m in self.modules:
                live = sys.modules.get(m)
                if live is not None and vars(live).get(h.fn.__name__) is h:
                    self.binds.setdefault((m, h.fn.__name__), self.of[id(h)])
        return [(m, n, t) for (m, n), t in sorted(self.binds.items()) if m in self.modules]


def live_helpers(ctx, jit, sources):
    """Adds to ctx a synthetic module for every @triton.jit helper the
    kernel reaches through its live globals (appended to sources) and
    returns the [(module, name, value text)] that bind the names callers use
    to them, for kad_set_global; they win over host_values'."""
    return _Live(ctx, sources).run(jit, sources[0].module)
