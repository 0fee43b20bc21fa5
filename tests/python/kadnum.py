"""Numeric helpers of the corpus tests: storage types, bf16, poison, comparison.

Used by the kad harness (harness.py) and by the Triton cross-check
(validate_with_triton.py), so that both judge a kernel by the same rules.
Needs numpy only.

Buffers.  A pointer parameter's pointee type comes from the signature
string.  In "as_written" mode a buffer holds its declared type (bf16 as
uint16 bit patterns, since numpy has no bfloat16); in "f64" mode every
floating-point buffer holds float64, whatever the declared type (the
interpreter's f64 contract), and integer buffers keep their type.

Poison.  Output buffers are filled with a NaN of a distinctive payload (for
integers, a sentinel) before a run.  Afterwards, every element the reference
says is written must hold a close, non-poison value, and every other element
must still hold the exact poison bits.

Tolerances (as_written mode), |actual - expected| <= atol + rtol * |expected|:
  fp32:  rtol = atol = 1e-5; cases scale atol for long reductions
         (fp32_red) or by the magnitude of dot products (|A| @ |B|);
  fp16:  rtol = atol = 2**-9 (2 ulp at 1.0; a rounding costs half an ulp);
  bf16:  rtol = atol = 2**-6 (2 ulp at 1.0);
  integers: exact.
f64 mode: rtol = atol = 1e-12 (scaled like the fp32 atol where the
magnitudes call for it).
"""
import math

import numpy as np

FLOAT_TYPES = ("fp16", "bf16", "fp32", "fp64")
INT_TYPES = {
    "i1": np.bool_,
    "i8": np.int8,
    "u8": np.uint8,
    "i16": np.int16,
    "u16": np.uint16,
    "i32": np.int32,
    "u32": np.uint32,
    "i64": np.int64,
    "u64": np.uint64,
}
MODES = ("as_written", "f64")

# Default (rtol, atol) per stored dtype, as documented above.
TOL_AS_WRITTEN = {
    "fp32": (1e-5, 1e-5),
    "fp16": (2.0**-9, 2.0**-9),
    "bf16": (2.0**-6, 2.0**-6),
    "fp64": (1e-12, 1e-12),
}
TOL_F64 = (1e-12, 1e-12)


def fp32_red(n):
    """fp32 tolerance for an output that sums n terms: atol grows with n."""
    return (1e-5, 1e-5 * max(1.0, n / 128.0))


# ---------------------------------------------------------------- bf16


def f32_to_bf16_bits(x):
    """float32 values -> bfloat16 bit patterns (uint16), round to nearest even."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    lsb = (bits >> 16) & 1
    rounded = ((bits + 0x7FFF + lsb) >> 16) & 0xFFFF
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    # A NaN must stay a NaN (rounding could carry it into infinity): keep the
    # sign, force the quiet bit.
    rounded = np.where(nan, ((bits >> 16) & 0x8000) | 0x7FC0, rounded)
    return rounded.astype(np.uint16)


def bf16_bits_to_f32(bits):
    """bfloat16 bit patterns (uint16) -> float32 values (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


# ---------------------------------------------------------------- storage


def storage_dtype(dt, mode):
    """numpy dtype of a buffer whose pointee type is dt, in a mode."""
    if dt in FLOAT_TYPES:
        if mode == "f64":
            return np.dtype(np.float64)
        return np.dtype({"fp16": np.float16, "bf16": np.uint16, "fp32": np.float32,
                         "fp64": np.float64}[dt])
    return np.dtype(INT_TYPES[dt])


def quantize(values, dt):
    """float64 values rounded to the nearest values representable in dt."""
    v = np.asarray(values, dtype=np.float64)
    if dt == "fp32":
        return v.astype(np.float32).astype(np.float64)
    if dt == "fp16":
        return v.astype(np.float16).astype(np.float64)
    if dt == "bf16":
        return bf16_bits_to_f32(f32_to_bf16_bits(v.astype(np.float32))).astype(np.float64)
    if dt == "fp64":
        return v.copy()
    return v.astype(INT_TYPES[dt])


def encode(values, dt, mode):
    """Logical values (already representable in dt) -> a buffer for the kernel."""
    sd = storage_dtype(dt, mode)
    if dt == "bf16" and mode == "as_written":
        return np.ascontiguousarray(f32_to_bf16_bits(np.asarray(values, dtype=np.float32)))
    return np.ascontiguousarray(np.asarray(values).astype(sd))


def decode(buf, dt, mode):
    """A kernel buffer -> logical values (float64 for floats, ints as they are)."""
    if dt == "bf16" and mode == "as_written":
        return bf16_bits_to_f32(buf).astype(np.float64)
    if dt in FLOAT_TYPES:
        return buf.astype(np.float64)
    return buf.copy()


# Distinctive quiet NaNs: an element still holding these bits was never written.
_POISON_BITS = {
    np.dtype(np.float16): (np.uint16, 0x7E5A),
    np.dtype(np.uint16): (np.uint16, 0x7FDA),  # bf16 storage
    np.dtype(np.float32): (np.uint32, 0x7FC0DEAD),
    np.dtype(np.float64): (np.uint64, 0x7FF8DEADBEEF5A5A),
}
_POISON_INT = -0x21524111  # 0xDEADBEEF as an int32


def poison(shape, dt, mode):
    """A buffer of the given shape filled with the poison pattern."""
    sd = storage_dtype(dt, mode)
    if sd in _POISON_BITS and (dt in FLOAT_TYPES):
        ut, bits = _POISON_BITS[sd]
        return np.full(shape, bits, dtype=ut).view(sd)
    if sd == np.bool_:
        return np.ones(shape, dtype=np.bool_)
    info = np.iinfo(sd)
    return np.full(shape, max(info.min, min(info.max, _POISON_INT)), dtype=sd)


def same_bits(a, b):
    """Elementwise: do two buffers of one dtype hold identical bytes?"""
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    width = a.dtype.itemsize
    ut = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[width]
    return a.view(ut) == b.view(ut)


# ---------------------------------------------------------------- comparison


def compare(name, dt, initial_raw, final_raw, expected, actual, rtol, atol, max_report=5):
    """Checks one output buffer; returns a list of problems (empty if fine).

    expected: float64 array of the buffer's shape; NaN marks elements the
    kernel must not touch (they must keep initial_raw's exact bits).
    actual: decoded final values.  atol may be an array (per element)."""
    problems = []
    expected = np.asarray(expected, dtype=np.float64)
    if expected.shape != np.shape(actual):
        expected = expected.reshape(np.shape(actual))
    untouched = np.isnan(expected)
    written = ~untouched

    kept = same_bits(initial_raw, final_raw)
    bad_untouched = untouched & ~kept
    if bad_untouched.any():
        idx = np.argwhere(bad_untouched)[:max_report]
        problems.append(
            f"{name}: {int(bad_untouched.sum())} element(s) that must stay untouched were "
            f"written, e.g. at {[tuple(int(j) for j in i) for i in idx]}")

    act = np.asarray(actual)
    if dt in FLOAT_TYPES:
        act = act.astype(np.float64)
        atol_arr = np.broadcast_to(np.asarray(atol, dtype=np.float64), expected.shape)
        # Poison left behind means the element was never written.
        bad_missed = written & kept & np.isnan(decode_poison_probe(initial_raw))
        err = np.abs(act - expected)
        bound = atol_arr + rtol * np.abs(expected)
        bad = written & ~(err <= bound)  # NaN in act fails too
        if bad_missed.any():
            idx = np.argwhere(bad_missed)[:max_report]
            problems.append(
                f"{name}: {int(bad_missed.sum())} element(s) never written (still poison), "
                f"e.g. at {[tuple(int(j) for j in i) for i in idx]}")
        bad &= ~bad_missed
        if bad.any():
            idx = np.argwhere(bad)[:max_report]
            lines = [f"{tuple(int(j) for j in i)}: got {act[tuple(i)]!r}, expected "
                     f"{expected[tuple(i)]!r}" for i in idx]
            with np.errstate(invalid="ignore"):
                max_err = np.nanmax(np.where(written, err, 0.0)) if written.any() else 0.0
            problems.append(
                f"{name}: {int(bad.sum())} of {int(written.sum())} written element(s) out of "
                f"tolerance (rtol={rtol:g}, atol={np.max(atol_arr) if atol_arr.size else 0:g}; "
                f"max abs err {max_err:.3g}): " + "; ".join(lines))
    else:
        exp_int = np.where(written, expected, 0)
        bad = written & (act.astype(np.float64) != exp_int)
        if bad.any():
            idx = np.argwhere(bad)[:max_report]
            lines = [f"{tuple(int(j) for j in i)}: got {act[tuple(i)]!r}, expected "
                     f"{expected[tuple(i)]!r}" for i in idx]
            problems.append(f"{name}: {int(bad.sum())} integer element(s) differ: " + "; ".join(lines))
    return problems


def decode_poison_probe(raw):
    """float64 view of a float buffer's initial contents (NaN where poisoned),
    for telling "never written" apart from "written with a wrong value"."""
    if raw.dtype == np.uint16:  # bf16 storage
        return bf16_bits_to_f32(raw).astype(np.float64)
    return raw.astype(np.float64)


def max_abs_err(expected, actual):
    """Largest |actual - expected| over the written (non-NaN expected) elements."""
    expected = np.asarray(expected, dtype=np.float64).reshape(np.shape(actual))
    written = ~np.isnan(expected)
    if not written.any():
        return 0.0
    return float(np.max(np.abs(np.asarray(actual, dtype=np.float64)[written] - expected[written])))


# ---------------------------------------------------------------- math references


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


_erf = np.frompyfunc(math.erf, 1, 1)


def erf(x):
    return _erf(np.asarray(x, dtype=np.float64)).astype(np.float64)


def philox_uniform(seed, offsets):
    """Uniform floats in [0, 1) of Philox 4x32-10, as tl.rand(seed, offsets).

    Written from the Philox definition (Salmon et al., SC'11): counter
    (offset, 0, 0, 0), key (seed low word, seed high word), ten rounds; the
    first output word, read as a signed int32 r, maps to
    float32(max(r, -r - 1)) * float32(4.6566127342e-10), computed in float32."""
    mask32 = np.uint64(0xFFFFFFFF)
    mul_a, mul_b = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    key_a, key_b = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
    seed64 = np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF)
    k0 = seed64 & mask32
    k1 = (seed64 >> np.uint64(32)) & mask32
    c0 = np.asarray(offsets).astype(np.int64).astype(np.uint64) & mask32
    c1 = np.zeros_like(c0)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    for _ in range(10):
        prod_a = mul_a * c0  # < 2**64: exact in uint64
        prod_b = mul_b * c2
        c0, c1, c2, c3 = (
            (prod_b >> np.uint64(32)) ^ c1 ^ k0,
            prod_b & mask32,
            (prod_a >> np.uint64(32)) ^ c3 ^ k1,
            prod_a & mask32,
        )
        k0 = (k0 + key_a) & mask32
        k1 = (k1 + key_b) & mask32
    r = c0.astype(np.uint32).view(np.int32).astype(np.int64)
    r = np.where(r < 0, -r - 1, r)
    return (r.astype(np.float32) * np.float32(4.6566127342e-10)).astype(np.float32)
