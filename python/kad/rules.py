"""Custom derivatives for @triton.jit helpers (docs/AD.md, "Custom derivatives").

A rules file is an ordinary Python module, separate from the kernels (which
never import it, so they still run under plain Triton):

    import triton, triton.language as tl, kad
    from mykernels import lse            # the helper

    @kad.vjp_of(lse)
    @triton.jit
    def lse_vjp(x, dout):                # the helper's arguments, then its result's adjoint
        m = tl.max(x, axis=0)
        e = tl.exp(x - m)
        return dout * e / tl.sum(e, axis=0)   # one gradient per argument (None: none)

    kad.nondiff(mykernels.scale_of)      # its result gets no gradient

Importing the rules file registers its rules; a kad.differentiable kernel
compiled afterwards whose modules define a registered helper hands the rules
file to kad with its own modules (the command line takes it with
`--rules FILE.py`).  kad itself reads the decorators from the file's source:
the registry only says which files to give it.

@kad.jvp_of(helper) registers a forward-mode rule (the helper's arguments,
then one tangent per argument: None for non-float ones; returns the result's
tangent), used by forward mode (kad jvp, torch.func.jvp).  A helper with a
rule for one mode only is refused in the other.
"""
import sys
import threading
from typing import Any, Callable

from ._sources import unwrap

__all__ = ["vjp_of", "jvp_of", "nondiff", "registered_rules"]

_lock = threading.Lock()
_rules = []  # (kind, helper JITFunction, rule JITFunction or None, module name of the rules file)


def _jit_of(obj: Any, what: str):
    try:
        return unwrap(obj)[1]
    except TypeError:
        raise TypeError(f"{what} expects a @triton.jit function, got {getattr(obj, '__name__', type(obj).__name__)!r}"
                        ) from None


def _register(kind: str, helper: Any, rule: Any, module: str) -> None:
    h = _jit_of(helper, f"kad.{kind}")
    with _lock:
        _rules.append((kind, h, rule, module))


def _decorator(kind: str, helper: Any) -> Callable[[Any], Any]:
    _jit_of(helper, f"kad.{kind}")

    def wrap(rule: Any) -> Any:
        r = _jit_of(rule, f"@kad.{kind}(...) (put it above @triton.jit)")
        _register(kind, helper, r, r.fn.__module__)
        return rule
    return wrap


def vjp_of(helper: Any) -> Callable[[Any], Any]:
    """Decorator: the @triton.jit function below is the reverse-mode rule of
    helper: called with the helper's arguments and the adjoint of its
    result, it returns one gradient per argument (None for an argument
    without one: integers, constexprs)."""
    return _decorator("vjp_of", helper)


def jvp_of(helper: Any) -> Callable[[Any], Any]:
    """Decorator: the @triton.jit function below is the forward-mode rule of
    helper: called with the helper's arguments and then their tangents (None
    for non-float arguments), it returns the tangent of the helper's result."""
    return _decorator("jvp_of", helper)


def nondiff(helper: Any) -> Any:
    """Marks helper's result non-differentiable (a stop-gradient at each call).
    Call it at module level of a rules file; returns helper."""
    module = sys._getframe(1).f_globals.get("__name__", "__main__")
    _register("nondiff", helper, None, module)
    return helper


def registered_rules() -> list:
    """[(kind, helper, rule or None, rules module name)] in registration order."""
    with _lock:
        return list(_rules)


def rule_modules(modules) -> list:
    """The rules modules to add for a kernel whose modules are `modules`
    (names): those registering a rule for a helper defined in one of them."""
    out = []
    for _, h, _, mod in registered_rules():
        if getattr(h.fn, "__module__", None) in modules and mod not in modules and mod not in out:
            out.append(mod)
    return out
