"""f-strings in kernels fold to the text Python's own f-string gives for the
same compile-time values (the reference is Python evaluating the field)."""
import re

import pytest

from kad._capi import Context, KadError

# (field as written inside f"...", the constexpr parameters bound in the signature)
FIELDS = [
    "{B}", "{B!r}", "{B=}", "{ B = }", "{B!s:>6}", "{B:<5}|", "{B:^7}|", "{B:*^8}", "{B:+d}", "{B:=+6}",
    "{B:06d}", "{B:x}", "{B:#X}", "{B:#b}", "{B:o}", "{B:#o}", "{-B:08,}", "{B*1000003:,}", "{B*1000003:_}",
    "{B*70000:_x}", "{B:e}", "{B:.2f}", "{B/3}", "{B/3:.3}", "{B/3:.3g}", "{B/3:10.4f}|", "{B/3:%}",
    "{B/3:.1%}", "{-B/7:+.3e}", "{B*1e20}", "{B*1e-7}", "{B/4:g}", "{1e300*1e10}", "{-(1e300*1e10):f}",
    "{S}", "{S!r}", "{S=}", "{S:>6}|", "{S:.1}", "{S!r:^9}", "{Q!r}", "{T}", "{T!r}", "{T:d}", "{T:>6}",
    "{F}", "{F:.3f}", "{None}", "{'lit'!r}", "{B if T else 0}", "{(B, 2)[0]}", "{B > 3}",
    "x{{y}}z", "{{{B}}}", "\\t{B}\\n", "a' b", "{B:08_x}", "{B*99:#012_b}", "{B*1000:012,.2f}",
]
PARAMS = dict(B=12, S="ab'c", Q='say "hi"', T=True, F=0.1)


def py_value(field):
    B, S, Q, T, F = (PARAMS[k] for k in "BSQTF")  # noqa: F841 (the f-string uses them)
    return eval('f"' + field + '"')


def kad_message(field):
    src = (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def k(x_ptr, B: tl.constexpr, S: tl.constexpr, Q: tl.constexpr, T: tl.constexpr, F: tl.constexpr):\n"
        '    tl.static_assert(False, f"' + field + '" "<end>")\n'
    )
    with Context() as c:
        c.add_source("fs.py", src)
        sig = "x_ptr=*fp32,B=12,S=%r,Q=%r,T=True,F=0.1" % (PARAMS["S"], PARAMS["Q"])
        with pytest.raises(KadError) as ei:
            c.specialize("k", sig)
    m = re.search(r"static_assert failed: (.*?)<end>", str(ei.value), re.S)
    assert m, str(ei.value)
    return m.group(1)


@pytest.mark.parametrize("field", FIELDS)
def test_fstring_field_matches_python(field):
    assert kad_message(field) == py_value(field)


@pytest.mark.parametrize(
    "field, message",
    [
        ("{n}", "can only format compile-time values"),
        ("{x_ptr + 1}", "can only format compile-time values"),
        ("{B:d}x{S:d}", "cannot format"),
        ("{B:.2d}", "precision not allowed"),
        ("{B!z}", "invalid conversion character"),
        ("{}", "valid expression required"),
        ("{B)}", "invalid expression"),
        ("{B C}", "expecting '}'"),
        ("}", "single '}' is not allowed"),
        ("{B:{B}}", "nested replacement fields"),
        ("{B $ 2}", "invalid expression"),
    ],
)
def test_fstring_errors_are_located(field, message):
    src = (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def k(x_ptr, n, B: tl.constexpr, S: tl.constexpr):\n"
        '    tl.device_assert(n > 0, f"' + field + '")\n'
    )
    with Context() as c:
        c.add_source("fs.py", src)
        with pytest.raises(KadError) as ei:
            c.specialize("k", "x_ptr=*fp32,n=i32,B=12,S='ab'")
    text = str(ei.value)
    assert message in text
    assert re.search(r"fs\.py:7:\d+: error: ", text), text
