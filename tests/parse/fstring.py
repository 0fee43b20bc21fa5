# RUN: ast %s
# f-strings: literal parts, replacement fields with conversions, format
# specs and the self-documenting '=', adjacent literals, nested quotes,
# raw and triple-quoted f-strings (a field may span lines there).
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr, NAME: tl.constexpr):
    tl.static_assert(BLOCK > 0, f"BLOCK={BLOCK}, {NAME!r}, {BLOCK:>8}, {BLOCK!s:^6}")
    tl.static_assert(BLOCK > 0, f"{BLOCK=} {BLOCK * 2 = :x} {NAME = !r}")
    tl.static_assert(BLOCK > 0, "plain " f"{{braces}} {x_ptr.dtype.element_ty}" ' tail')
    tl.static_assert(BLOCK > 0, f"{'a' if BLOCK > 1 else "b"} {NAME.upper if False else 1}")
    tl.static_assert(BLOCK > 0, rf"\d{BLOCK}\n" f"\t{BLOCK}\\")
    tl.static_assert(BLOCK > 0, f"""first {
        BLOCK
        + 1
    } second""")
