"""docs/TROUBLESHOOTING.md documents every message family of the C library.

Extracts the format string of every diagnostic in src/**/*.c (calls of diag_error and of the
stages' wrappers around diag_verror) and checks that one of the backticked keys of the
doc's C tables occurs in each (a key's `…` stands for any text; the message's %s/%d/...
conversions are `…` too).  A new message fails this test until the doc has an entry for it.
Also: every key matches some message (no stale entries), and every key of the Python
section names text that python/kad still raises.
"""
import glob
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "TROUBLESHOOTING.md")

# The functions that report an error with a printf format: diag_error itself and the wrappers of
# diag_verror (each stage's own).  A function added to report errors must be listed here.
REPORTERS = ("diag_error", "em_error", "fail", "interp_fail", "fd_fail", "perr", "parse_perr", "lex_error", "ops_fail", "err",
             "rerr", "str_fail")
CONV = re.compile(r"%[-+ #0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:hh|h|ll|l|z|j|t)?[diouxXeEfgGcsp%]")
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
SPACE = re.compile(r"\s*")


def _first_literal(src, i):
    """The first string literal (adjacent literals joined) among the arguments of the call
    whose '(' is at src[i]; None when it has none (a format held in a variable)."""
    depth, j, n = 0, i, len(src)
    while j < n:
        c = src[j]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return None
        elif c == '"':
            parts = []
            while True:
                m = STRING.match(src, j)
                parts.append(m.group(1))
                j = m.end()
                k = SPACE.match(src, j).end()
                if k < n and src[k] == '"':
                    j = k
                    continue
                return "".join(parts)
        elif c == "'":  # a char literal: '(' or '"' inside it is not syntax
            j = src.index("'", j + 1 + (src[j + 1] == "\\"))
        j += 1
    return None


def _strip_comments(s):
    return re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), s, flags=re.S)


def c_messages():
    """[(file:line, normalized message)] of every diagnostic format string in src/**/*.c."""
    call = re.compile(r"\b(%s)\s*\(" % "|".join(REPORTERS))
    out = []
    for path in sorted(glob.glob(os.path.join(REPO, "src", "**", "*.c"), recursive=True)):
        if os.path.basename(path) == "main.c":  # the CLI's usage text, not a diagnostic
            continue
        with open(path, encoding="utf-8") as f:
            s = _strip_comments(f.read())
        for m in call.finditer(s):
            if re.search(r"\b(void|SVal)\s*$", s[max(0, m.start() - 30):m.start()]):
                continue  # the reporter's own definition
            lit = _first_literal(s, m.end() - 1)
            if lit is None:
                continue
            where = f"{os.path.relpath(path, REPO)}:{s.count(chr(10), 0, m.start()) + 1}"
            out.append((where, CONV.sub("…", lit).replace('\\"', '"').replace("\\\\", "\\")))
    # a format kept in a named constant (ad_race.c's race_programs_msg and race_lanes_msg)
    for path in sorted(glob.glob(os.path.join(REPO, "src", "**", "*.c"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            s = _strip_comments(f.read())
        for m in re.finditer(r"static const char \*const (\w+_msg)\s*=\s*", s):
            lit = _first_literal("(" + s[m.end():m.end() + 2000], 0)
            out.append((f"{os.path.relpath(path, REPO)}:{m.group(1)}", CONV.sub("…", lit)))
    return out


def doc_keys(section_start, section_end):
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    part = text[text.index(section_start):text.index(section_end) if section_end else len(text)]
    keys = []
    for line in part.splitlines():
        if line.startswith("| ") and not line.startswith("| Message"):
            first = line.split(" | ")[0]
            keys += re.findall(r"`([^`]+)`", first)
    return keys


def key_regex(key):
    return re.compile(".*".join(re.escape(p) for p in key.split("…")), re.S)


def _dynamic(msg):
    """A format with (almost) no text of its own ("%s", "%s: %s"): composed elsewhere."""
    return len(re.sub(r"[^A-Za-z]", "", msg)) < 4


def test_the_extraction_sees_the_messages():
    msgs = c_messages()
    assert len(msgs) > 400, len(msgs)  # the extraction itself works
    texts = {m for _, m in msgs}
    assert "no adjoint rule for '…'" in texts and any(t.startswith("IR verifier:") for t in texts)


def test_every_c_message_has_an_entry():
    keys = [key_regex(k) for k in doc_keys("## Messages of the C library", "## Errors of the Python package")]
    missing = sorted({f"{w}: {m}" for w, m in c_messages() if not _dynamic(m) and not any(k.search(m) for k in keys)})
    assert not missing, "docs/TROUBLESHOOTING.md has no entry for:\n" + "\n".join(missing)


def test_no_stale_c_entries():
    texts = [m for _, m in c_messages()]
    stale = [k for k in doc_keys("## Messages of the C library", "## Errors of the Python package")
             if not any(key_regex(k).search(t) for t in texts)]
    assert not stale, f"keys that match no message of src/**/*.c: {stale}"


def test_python_entries_name_raised_text():
    src = ""
    for path in glob.glob(os.path.join(REPO, "python", "kad", "*.py")):
        with open(path, encoding="utf-8") as f:
            src += f.read()
    src = re.sub(r"\{[^{}]*\}", "…", src)  # f-string fields
    src = re.sub(r'"\s*\n\s*f?"', "", src)  # implicitly joined literals
    stale = []
    for k in doc_keys("## Errors of the Python package", None):
        frags = [p for p in re.split(r"…", k) if len(p.strip()) >= 4]
        if not frags or not all(p in src for p in frags):
            stale.append(k)
    assert not stale, f"keys of the Python section that python/kad does not raise: {stale}"
