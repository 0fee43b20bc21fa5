/* interp.c -- runs a Func over a grid of programs on host buffers.
 *
 * Job: execute a specialized kernel the way Triton would on an NVIDIA GPU,
 * program by program (x fastest, then y, then z), so that kernels and their
 * derivatives can be checked on the CPU.  One kernel on one grid: a
 * backward's host steps (flags, tapes, its other kernels) are the plan
 * stage's runner's (src/plan/run.c, plan_run), which calls interp_run once
 * per launch.  docs/INTERPRETER.md states the
 * semantics and every choice made where the GPU is not exactly reproducible.
 *
 * Requires: a verified Func (ir_verify): operand counts, types, shapes,
 * region structure and dominance are trusted and only ASSERTed here.
 *
 * Guarantees: deterministic results; every access through a pointer is
 * bounds- and alignment-checked against the buffer its pointer parameter
 * was given; every user-visible failure (out-of-bounds access, failed
 * device_assert, integer division by zero, runaway while loop, ...) is
 * reported once through diag_error at the instruction's Loc, naming the
 * program id and the first offending lane, and stops the run.
 *
 * Representation:
 *   - one slot per SSA value, allocated once per run from its Type and
 *     reused by every program and loop iteration (values are SSA, so a
 *     slot is written only by its defining instruction or, for region
 *     parameters, by the copies of inits and yields);
 *   - float lanes are doubles holding the value exactly as rounded to the
 *     value's dtype (IM_AS_WRITTEN) or unrounded (IM_F64);
 *   - integer lanes are int64 normalized to the dtype: signed types sign-
 *     extended, unsigned types and i1 zero-extended (u64 as its bit pattern);
 *   - pointer lanes are (byte offset, buffer) pairs; the buffer is the
 *     pointer parameter the lane derives from (1-based, 0 = invalid).
 *
 * Speed: the Func is first translated into XBlocks of XInsts holding the
 * resolved slot addresses and the rounding/int formats of each instruction,
 * so executing an instruction is one switch and a tight loop over lanes;
 * constants, aranges and num_programs are filled once per run; nothing is
 * allocated while executing.
 *
 * Errors: a runtime failure reports its diagnostic and longjmps out of the
 * run (the scratch arena is then freed in one piece); this keeps the inner
 * loops free of error plumbing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kad_int.h"

/* Tiles larger than this are refused (a located error) instead of being
 * allocated: no Triton kernel has such tiles, a typo in a shape does. */
#define MAX_TILE_NUMEL ((int64_t)1 << 24)
/* A while loop running longer than this is reported instead of hanging. */
#define MAX_WHILE_ITERS ((int64_t)1 << 31)
/* Byte limit of the scratch arena of one run. */
#define SCRATCH_LIMIT ((size_t)2 << 30)

/* ------------------------------------------------------------------ */
/* Number formats                                                      */
/* ------------------------------------------------------------------ */

/* How a float result is rounded to its dtype. */
enum { R_NONE, R_F32, R_F16, R_BF16, R_F8E5, R_F8E4NV, R_F8E4B15 };

/* Halves use util.c's dtype_round, the one the constant folder uses too,
 * so a folded constant equals the interpreted result. */
static double round_f16(double x) { return dtype_round(DT_F16, x); }
static double round_bf16(double x) { return dtype_round(DT_BF16, x); }

/* Rounding a double to fp32 with a C cast is a single correct rounding;
 * for +, -, *, / and sqrt of operands of a narrower format, computing in
 * double first and rounding once is also correctly rounded (53 >= 2p+2). */
static double round_rk(int rk, double x)
{
    switch (rk) {
    case R_F32: return (double)(float)x;
    case R_F16: return round_f16(x);
    case R_BF16: return round_bf16(x);
    case R_F8E5: return dtype_round(DT_F8E5, x);
    case R_F8E4NV: return dtype_round(DT_F8E4NV, x);
    case R_F8E4B15: return dtype_round(DT_F8E4B15, x);
    default: return x;
    }
}

static void round_array(int rk, double *r, int64_t n)
{
    switch (rk) {
    case R_F32:
        for (int64_t i = 0; i < n; i++)
            r[i] = (double)(float)r[i];
        break;
    case R_F16:
        for (int64_t i = 0; i < n; i++)
            r[i] = round_f16(r[i]);
        break;
    case R_BF16:
        for (int64_t i = 0; i < n; i++)
            r[i] = round_bf16(r[i]);
        break;
    case R_NONE: break;
    default:
        for (int64_t i = 0; i < n; i++)
            r[i] = round_rk(rk, r[i]);
        break;
    }
}

static double f16_decode(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

static uint16_t f16_encode(double x)
{
    double r = round_f16(x);
    uint16_t s = signbit(r) ? 0x8000 : 0;
    if (isnan(r))
        return s | 0x7e00;
    double a = fabs(r);
    if (a == INFINITY)
        return s | 0x7c00;
    if (a < 0x1p-14)
        return s | (uint16_t)(a * 0x1p24); /* subnormal: an exact integer */
    int e;
    double m = frexp(a, &e); /* m in [0.5, 1): 11 bits, exact */
    return (uint16_t)(s | (e + 14) << 10 | ((uint16_t)(m * 2048) - 1024));
}

static double bf16_decode(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t bf16_encode(double x)
{
    float f = (float)round_bf16(x); /* exact: bf16 values are floats */
    uint32_t u;
    memcpy(&u, &f, 4);
    if (isnan(f))
        return (uint16_t)((u >> 16 & 0x8000) | 0x7fc0);
    return (uint16_t)(u >> 16);
}

/* Integer formats: a value of width w is kept in an int64 whose upper
 * 64-w bits are copies of the sign bit (signed) or zero (unsigned, i1).
 * iwrap is dtype_wrap (util.c) with the shift precomputed per op. */
typedef struct IntFmt {
    uint8_t sh;  /* 64 - width */
    bool uns;    /* zero-extended */
} IntFmt;

static IntFmt int_fmt(Dtype dt)
{
    int w = dtype_bits(dt);
    return (IntFmt){(uint8_t)(64 - w), !dtype_is_signed(dt)};
}

static inline int64_t iwrap(uint64_t u, IntFmt f)
{
    u <<= f.sh;
    return f.uns ? (int64_t)(u >> f.sh) : (int64_t)u >> f.sh;
}

/* The bit length of m (0 for 0). */
static int bit_length(uint64_t m)
{
    int n = 0;
    while (m) {
        m >>= 1;
        n++;
    }
    return n;
}

/* m as a double rounded to odd: exact below 2^53, else the dropped bits
 * are folded into the lowest kept bit, so that one later rounding to a
 * format of at most 51 bits is the correct rounding of m. */
static double u64_to_double_odd(uint64_t m)
{
    int drop = bit_length(m) - 53;
    if (drop <= 0)
        return (double)m;
    uint64_t kept = m >> drop;
    if (m & (((uint64_t)1 << drop) - 1))
        kept |= 1;
    return ldexp((double)kept, drop);
}

/* An integer value of an int dtype converted to a float dtype. */
static double int_to_float(int64_t v, bool u64, int rk)
{
    if (rk == R_F32) /* C's int->float conversion rounds once, correctly */
        return u64 ? (double)(float)(uint64_t)v : (double)(float)v;
    if (rk == R_NONE)
        return u64 ? (double)(uint64_t)v : (double)v;
    uint64_t mag = u64 || v >= 0 ? (uint64_t)v : 0 - (uint64_t)v;
    double d = u64_to_double_odd(mag);
    return round_rk(rk, !u64 && v < 0 ? -d : d);
}

/* A float converted to an int dtype: truncation toward zero, saturating
 * at the type's range, NaN -> 0 (what cvt.rzi does on the GPU); i1 is
 * x != 0 (Triton casts to bool by comparing with zero). */
static int64_t float_to_int(double x, Dtype dt)
{
    if (dt == DT_I1)
        return x != 0;
    if (isnan(x))
        return 0;
    x = trunc(x);
    if (dt == DT_U64) {
        if (x <= 0)
            return 0;
        if (x >= 0x1p64)
            return (int64_t)UINT64_MAX;
        return (int64_t)(uint64_t)x;
    }
    int w = dtype_bits(dt);
    int64_t lo, hi;
    if (dtype_is_signed(dt)) {
        hi = (int64_t)(((uint64_t)1 << (w - 1)) - 1);
        lo = -hi - 1;
    } else {
        lo = 0;
        hi = (int64_t)(((uint64_t)1 << w) - 1);
    }
    if (x <= (double)lo)
        return lo;
    if (x >= (double)hi)
        return hi;
    return (int64_t)x;
}

/* One element of dtype dt as it lies in memory (native byte order, like
 * the buffers Triton is given).  A float is rounded to dt on the way out
 * unless f64 (IM_F64 buffers hold doubles).  Loads, stores and atomics go
 * through these, and so does bitcast, which is a store in one dtype and a
 * load in another of the same width. */
static double load_float(const uint8_t *p, Dtype dt, bool f64)
{
    if (f64 || dt == DT_F64) {
        double d;
        memcpy(&d, p, 8);
        return d;
    }
    if (dt == DT_F32) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    if (dtype_is_fp8(dt))
        return fp8_decode(dt, *p);
    uint16_t h;
    memcpy(&h, p, 2);
    return dt == DT_F16 ? f16_decode(h) : bf16_decode(h);
}

static void store_float(uint8_t *p, Dtype dt, bool f64, double v)
{
    if (f64 || dt == DT_F64) {
        memcpy(p, &v, 8);
    } else if (dt == DT_F32) {
        float f = (float)v;
        memcpy(p, &f, 4);
    } else if (dtype_is_fp8(dt)) {
        *p = fp8_encode(dt, v);
    } else {
        uint16_t h = dt == DT_F16 ? f16_encode(v) : bf16_encode(v);
        memcpy(p, &h, 2);
    }
}

static int64_t load_int(const uint8_t *p, Dtype dt)
{
    switch (dt) {
    case DT_I1: return *p != 0; /* Triton stores i1 as one byte */
    case DT_I8: return (int8_t)*p;
    case DT_U8: return *p;
    case DT_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case DT_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case DT_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case DT_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { int64_t v; memcpy(&v, p, 8); return v; }
    }
}

static void store_int(uint8_t *p, Dtype dt, int64_t v)
{
    switch (dt) {
    case DT_I1: *p = v != 0; break;
    case DT_I8: case DT_U8: *p = (uint8_t)v; break;
    case DT_I16: case DT_U16: { uint16_t u = (uint16_t)v; memcpy(p, &u, 2); break; }
    case DT_I32: case DT_U32: { uint32_t u = (uint32_t)v; memcpy(p, &u, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

/* ------------------------------------------------------------------ */
/* Philox 4x32-10 / 4x64-10, as in triton/language/random.py           */
/* ------------------------------------------------------------------ */

/* Follows philox_impl, philox, randint4x, randint, uint_to_uniform_float,
 * rand, pair_uniform_to_normal and randn of triton/language/random.py
 * (Triton 3.x): the counter is (offset, 0, 0, 0); the seed, converted to
 * uint64, gives the key (low half, high half) for 32-bit offsets and
 * (seed, 0) for 64-bit offsets. */
#define PHILOX_KEY_A32 0x9E3779B9u
#define PHILOX_KEY_B32 0xBB67AE85u
#define PHILOX_ROUND_A32 0xD2511F53u
#define PHILOX_ROUND_B32 0xCD9E8D57u
#define PHILOX_KEY_A64 0x9E3779B97F4A7C15u
#define PHILOX_KEY_B64 0xBB67AE8584CAA73Bu
#define PHILOX_ROUND_A64 0xD2E7470EE14C6C93u
#define PHILOX_ROUND_B64 0xCA5A826395121157u
#define PHILOX_ROUNDS 10

static void philox32(uint32_t c[4], uint32_t k0, uint32_t k1)
{
    for (int r = 0; r < PHILOX_ROUNDS; r++) {
        uint64_t pb = (uint64_t)PHILOX_ROUND_B32 * c[2];
        uint64_t pa = (uint64_t)PHILOX_ROUND_A32 * c[0];
        c[0] = (uint32_t)(pb >> 32) ^ c[1] ^ k0;
        c[2] = (uint32_t)(pa >> 32) ^ c[3] ^ k1;
        c[1] = (uint32_t)pb;
        c[3] = (uint32_t)pa;
        k0 += PHILOX_KEY_A32;
        k1 += PHILOX_KEY_B32;
    }
}

/* The high 64 bits of the 128-bit product a*b (umulhi on 64-bit types). */
static uint64_t mulhi64(uint64_t a, uint64_t b)
{
    uint64_t al = a & 0xffffffffu, ah = a >> 32, bl = b & 0xffffffffu, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

static void philox64(uint64_t c[4], uint64_t k0, uint64_t k1)
{
    for (int r = 0; r < PHILOX_ROUNDS; r++) {
        uint64_t c0 = c[0], c2 = c[2];
        c[0] = mulhi64(PHILOX_ROUND_B64, c2) ^ c[1] ^ k0;
        c[2] = mulhi64(PHILOX_ROUND_A64, c0) ^ c[3] ^ k1;
        c[1] = PHILOX_ROUND_B64 * c2;
        c[3] = PHILOX_ROUND_A64 * c0;
        k0 += PHILOX_KEY_A64;
        k1 += PHILOX_KEY_B64;
    }
}

/* uint_to_uniform_float: the draw as a signed int, negatives folded onto
 * the non-negatives (-x-1), times a scale slightly below 2^-31 (2^-63),
 * all in fp32 as Triton computes it (int -> fp32, fp32 product). */
static float uniform32(uint32_t x)
{
    int32_t s = (int32_t)x;
    if (s < 0)
        s = (int32_t)~x; /* -s-1 without overflow */
    return (float)s * (float)4.6566127342e-10;
}

static float uniform64(uint64_t x)
{
    int64_t s = (int64_t)x;
    if (s < 0)
        s = (int64_t)~x;
    return (float)s * (float)1.0842020432385337e-19;
}

/* pair_uniform_to_normal, first output (Box-Muller), each step in fp32. */
static float uniform_pair_to_normal(float u1, float u2)
{
    u1 = u1 > (float)1.0e-7 ? u1 : (float)1.0e-7; /* tl.maximum(1.0e-7, u1) */
    float th = (float)6.283185307179586 * u2;
    float lg = (float)log((double)u1);
    float r = (float)sqrt((double)(-2.0f * lg));
    return r * (float)cos((double)th);
}

/* ------------------------------------------------------------------ */
/* The interpreter state                                               */
/* ------------------------------------------------------------------ */

/* A pointer lane. */
typedef struct PtrLane {
    int64_t off; /* byte offset into the buffer */
    int64_t buf; /* 1 + index of the pointer parameter; 0: invalid */
} PtrLane;

/* Operand classes for dispatch. */
enum { C_FLOAT, C_INT, C_U64, C_PTR };

typedef struct XBlock XBlock;

/* An instruction prepared for execution. */
typedef struct XInst {
    const Inst *in;
    uint16_t op;
    uint8_t rk;     /* rounding of a float result (R_*) */
    uint8_t cls;    /* class of the first operand (C_*) */
    IntFmt ifmt;    /* int format of the result (int results) */
    Dtype rdt;      /* result dtype (DT_VOID without result) */
    int64_t n;      /* numel of the result, or of the first operand */
    void *r, *x, *y, *z; /* slots: result and first three operands */
    XBlock *reg[2];
} XInst;

/* A region prepared for execution. */
struct XBlock {
    XInst *v;
    int n;              /* instructions before the terminator */
    const Inst *term;   /* yield / condition */
    const Block *b;
    void **tmp;         /* per block param: a temporary for parallel yields, or NULL */
};

/* A pointer parameter's buffer. */
typedef struct Buffer {
    const char *name;
    uint8_t *data;
    int64_t nbytes;
} Buffer;

typedef struct Interp {
    const Func *f;
    Diags *d;
    Arena *a;           /* scratch: slots and prepared code */
    bool f64;           /* IM_F64 */
    void **slot;        /* per ValId; NULL for 0 */
    Buffer *bufs;       /* per runtime parameter */
    int64_t grid[3], pid[3];
    jmp_buf *jb;
} Interp;

/* Bytes per lane of a value of type t. */
static size_t lane_bytes(Type t) { return t.dt == DT_PTR ? sizeof(PtrLane) : 8; }

/* Storage bytes of one element of dtype dt in a buffer (float buffers hold
 * doubles in IM_F64). */
static int access_size(const Interp *S, Dtype dt)
{
    return S->f64 && dtype_is_float((Dtype)dt) ? 8 : dtype_bytes(dt);
}

static int rk_of(const Interp *S, Dtype dt)
{
    if (S->f64)
        return R_NONE;
    switch (dt) {
    case DT_F32: return R_F32;
    case DT_F16: return R_F16;
    case DT_BF16: return R_BF16;
    case DT_F8E5: return R_F8E5;
    case DT_F8E4NV: return R_F8E4NV;
    case DT_F8E4B15: return R_F8E4B15;
    default: return R_NONE;
    }
}

static int cls_of(Type t)
{
    if (t.dt == DT_PTR)
        return C_PTR;
    if (dtype_is_float((Dtype)t.dt))
        return C_FLOAT;
    return t.dt == DT_U64 ? C_U64 : C_INT;
}

static Type vtype(const Interp *S, ValId v) { return S->f->vals.v[v].ty; }

/* Writes " (program (x, y, z), lane L)" for lane `lane` of a value of type
 * t; lanes of 2-D and larger tiles as multi-indices; no lane for scalars. */
static void where_str(Buf *b, const Interp *S, Type t, int64_t lane)
{
    buf_printf(b, " (program (%lld, %lld, %lld)", (long long)S->pid[0], (long long)S->pid[1],
               (long long)S->pid[2]);
    if (t.rank == 1) {
        buf_printf(b, ", lane %lld", (long long)lane);
    } else if (t.rank > 1) {
        int64_t idx[KAD_MAX_RANK];
        for (int k = t.rank - 1; k >= 0; k--) {
            idx[k] = lane % t.shape[k];
            lane /= t.shape[k];
        }
        buf_puts(b, ", lane (");
        for (int k = 0; k < t.rank; k++)
            buf_printf(b, "%s%lld", k ? ", " : "", (long long)idx[k]);
        buf_putc(b, ')');
    }
    buf_putc(b, ')');
}

/* Reports an error at loc and leaves the run.  With lane >= 0 the message
 * ends with the program id and the lane of a value of type t. */
static _Noreturn void fail(Interp *S, Loc loc, Type t, int64_t lane, const char *fmt, ...)
{
    Buf b = {.a = S->d->a};
    va_list ap;
    va_start(ap, fmt);
    buf_puts(&b, arena_vprintf(S->d->a, fmt, ap));
    va_end(ap);
    if (lane >= 0)
        where_str(&b, S, t, lane);
    diag_error(S->d, loc, "%s", buf_str(&b));
    longjmp(*S->jb, 2);
}

/* An operation the verifier should have refused. */
static _Noreturn void unsupported(Interp *S, const XInst *xi)
{
    Buf b = {.a = S->d->a};
    const Inst *in = xi->in;
    buf_printf(&b, "interpreter: '%s' on ", op_info[in->op].name);
    type_print(&b, in->nargs ? vtype(S, in->args[0]) : vtype(S, in->res[0]));
    buf_puts(&b, " is not supported");
    diag_error(S->d, in->loc, "%s", buf_str(&b));
    longjmp(*S->jb, 2);
}

/* ------------------------------------------------------------------ */
/* Preparation                                                         */
/* ------------------------------------------------------------------ */

static XBlock *prepare_block(Interp *S, const Block *b);

static void prepare_inst(Interp *S, XInst *xi, const Inst *in)
{
    xi->in = in;
    xi->op = in->op;
    xi->rdt = DT_VOID;
    if (in->nres >= 1) {
        Type rt = vtype(S, in->res[0]);
        xi->rdt = (Dtype)rt.dt;
        xi->rk = (uint8_t)rk_of(S, (Dtype)rt.dt);
        if (dtype_is_int((Dtype)rt.dt))
            xi->ifmt = int_fmt((Dtype)rt.dt);
        xi->r = S->slot[in->res[0]];
        xi->n = type_numel(rt);
    }
    if (in->nargs >= 1) {
        Type t0 = vtype(S, in->args[0]);
        xi->cls = (uint8_t)cls_of(t0);
        if (in->nres < 1)
            xi->n = type_numel(t0);
        if (in->nres < 1 && dtype_is_int((Dtype)t0.dt))
            xi->ifmt = int_fmt((Dtype)t0.dt);
        xi->x = S->slot[in->args[0]];
    }
    if (in->nargs >= 2)
        xi->y = S->slot[in->args[1]];
    if (in->nargs >= 3)
        xi->z = S->slot[in->args[2]];
    for (int k = 0; k < in->nregions && k < 2; k++)
        xi->reg[k] = prepare_block(S, in->regions[k]);
}

/* True when the yield ending b assigns one of b's params from another of
 * b's params (a swap or rotation), so the copy needs temporaries. */
static bool yield_needs_tmp(const Block *b, const Inst *y)
{
    for (int j = 0; j < y->nargs; j++)
        for (int k = 0; k < b->nparams; k++)
            if (y->args[j] == b->params[k] && k != j + (b->nparams - y->nargs))
                return true;
    return false;
}

static XBlock *prepare_block(Interp *S, const Block *b)
{
    XBlock *xb = arena_alloc(S->a, sizeof *xb);
    xb->b = b;
    int n = b->insts.n;
    const Inst *last = n ? &b->insts.v[n - 1] : NULL;
    if (last && (last->op == OP_YIELD || last->op == OP_CONDITION)) {
        xb->term = last;
        n--;
    }
    xb->v = arena_alloc(S->a, sizeof *xb->v * (size_t)(n ? n : 1));
    xb->n = n;
    for (int i = 0; i < n; i++)
        prepare_inst(S, &xb->v[i], &b->insts.v[i]);
    if (xb->term && xb->term->op == OP_YIELD && b->nparams && yield_needs_tmp(b, xb->term)) {
        xb->tmp = arena_alloc(S->a, sizeof *xb->tmp * (size_t)b->nparams);
        for (int k = 0; k < b->nparams; k++) {
            Type t = vtype(S, b->params[k]);
            xb->tmp[k] = arena_alloc(S->a, lane_bytes(t) * (size_t)type_numel(t));
        }
    }
    return xb;
}

/* Allocates every value's slot; refuses absurd tiles. */
static bool alloc_slots(Interp *S)
{
    const Func *f = S->f;
    S->slot = arena_alloc(S->a, sizeof *S->slot * (size_t)f->vals.n);
    for (int v = 1; v < f->vals.n; v++) {
        Type t = f->vals.v[v].ty;
        int64_t n = type_numel(t);
        if (n > MAX_TILE_NUMEL) {
            Buf b = {.a = S->d->a};
            type_print(&b, t);
            diag_error(S->d, f->vals.v[v].loc,
                       "interpreter: tile %s has %lld elements, more than the limit of %lld",
                       buf_str(&b), (long long)n, (long long)MAX_TILE_NUMEL);
            return false;
        }
        S->slot[v] = arena_alloc(S->a, lane_bytes(t) * (size_t)n);
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Elementwise operations                                              */
/* ------------------------------------------------------------------ */

/* maxnum/minnum: a NaN operand yields the other operand (tl.maximum's
 * default PropagateNan.NONE lowers to the GPU's max.f32); +0 > -0. */
static inline double fmaxnum(double a, double b)
{
    if (isnan(a))
        return b;
    if (isnan(b))
        return a;
    if (a == b)
        return signbit(a) ? b : a;
    return a > b ? a : b;
}

static inline double fminnum(double a, double b)
{
    if (isnan(a))
        return b;
    if (isnan(b))
        return a;
    if (a == b)
        return signbit(a) ? a : b;
    return a < b ? a : b;
}

static double f_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double f_rsqrt(double x) { return 1.0 / sqrt(x); }

/* <math.h> function of each unary float math op. */
static double (*unary_fn(int op))(double)
{
    switch (op) {
    case OP_EXP: return exp;
    case OP_EXP2: return exp2;
    case OP_EXPM1: return expm1;
    case OP_LOG: return log;
    case OP_LOG2: return log2;
    case OP_LOG1P: return log1p;
    case OP_SQRT: return sqrt;
    case OP_RSQRT: return f_rsqrt;
    case OP_SIGMOID: return f_sigmoid;
    case OP_SIN: return sin;
    case OP_COS: return cos;
    case OP_TAN: return tan;
    case OP_ASIN: return asin;
    case OP_ACOS: return acos;
    case OP_ATAN: return atan;
    case OP_SINH: return sinh;
    case OP_COSH: return cosh;
    case OP_TANH: return tanh;
    case OP_ERF: return erf;
    case OP_FLOOR: return floor;
    case OP_CEIL: return ceil;
    case OP_TRUNC: return trunc;
    case OP_RINT: return nearbyint; /* half to even in the default rounding mode */
    default: return NULL;
    }
}

#define LOOP(n) for (int64_t i = 0; i < (n); i++)

static void float_binop(Interp *S, const XInst *xi)
{
    const double *a = xi->x, *b = xi->y;
    double *r = xi->r;
    int64_t n = xi->n;
    switch (xi->op) {
    case OP_ADD: LOOP(n) r[i] = a[i] + b[i]; break;
    case OP_SUB: LOOP(n) r[i] = a[i] - b[i]; break;
    case OP_MUL: LOOP(n) r[i] = a[i] * b[i]; break;
    case OP_DIV: LOOP(n) r[i] = a[i] / b[i]; break;
    case OP_REM: LOOP(n) r[i] = fmod(a[i], b[i]); break;
    case OP_POW: LOOP(n) r[i] = pow(a[i], b[i]); break;
    case OP_MAXIMUM: LOOP(n) r[i] = fmaxnum(a[i], b[i]); break;
    case OP_MINIMUM: LOOP(n) r[i] = fminnum(a[i], b[i]); break;
    case OP_ATAN2: LOOP(n) r[i] = atan2(a[i], b[i]); break;
    default: unsupported(S, xi);
    }
    round_array(xi->rk, r, n);
}

/* a*b+c rounded once to the result dtype: the product of two operands of
 * at most 26 significant bits is exact in double; the sum's error (TwoSum)
 * is folded into the last bit (round to odd), so that rounding the double
 * to fp32/fp16/bf16 is the correctly rounded fused result. */
static double fma_round(double a, double b, double c, int rk)
{
    if (rk == R_NONE)
        return fma(a, b, c);
    double p = a * b, s = p + c;
    double bv = s - p, err = (p - (s - bv)) + (c - bv);
    if (err != 0 && isfinite(s)) {
        uint64_t u;
        memcpy(&u, &s, 8);
        if (!(u & 1))
            s = nextafter(s, err > 0 ? INFINITY : -INFINITY);
    }
    return round_rk(rk, s);
}

/* A libdevice op (ops.h, KAD_LIBM_OPS), lane by lane: libm_eval's values,
 * rounded to the result dtype; ilogb's int result. */
static void libm_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    int ni = libm_int_operand(in->op);
    const void *op3[3] = {xi->x, xi->y, xi->z};
    const double *fa[3] = {NULL, NULL, NULL};
    const int64_t *ia = ni >= 0 ? op3[ni] : NULL;
    for (int k = 0; k < in->nargs && k < 3; k++)
        if (k != ni)
            fa[k] = op3[k];
    if (!fa[ni == 0 ? 1 : 0])
        unsupported(S, xi);
    bool f32 = xi->rk == R_F32;
    if (in->op == OP_ILOGB) {
        int64_t *r = xi->r;
        LOOP(xi->n) r[i] = (int64_t)libm_eval(in->op, in->ival, f32, fa[0][i], 0, 0, 0);
        return;
    }
    double *r = xi->r;
    LOOP(xi->n) r[i] = libm_eval(in->op, in->ival, f32, fa[0] ? fa[0][i] : 0, fa[1] ? fa[1][i] : 0,
                                 fa[2] ? fa[2][i] : 0, ia ? ia[i] : 0);
    round_array(xi->rk, r, xi->n);
}

static void int_binop(Interp *S, const XInst *xi)
{
    const int64_t *a = xi->x, *b = xi->y;
    int64_t *r = xi->r;
    int64_t n = xi->n;
    IntFmt F = xi->ifmt;
    bool u64 = xi->cls == C_U64;
    int w = 64 - F.sh;
    switch (xi->op) {
    case OP_ADD: LOOP(n) r[i] = iwrap((uint64_t)a[i] + (uint64_t)b[i], F); break;
    case OP_SUB: LOOP(n) r[i] = iwrap((uint64_t)a[i] - (uint64_t)b[i], F); break;
    case OP_MUL: LOOP(n) r[i] = iwrap((uint64_t)a[i] * (uint64_t)b[i], F); break;
    case OP_DIV:
    case OP_REM:
        LOOP(n) {
            if (b[i] == 0)
                fail(S, xi->in->loc, vtype(S, xi->in->res[0]), i, "integer %s by zero",
                     xi->op == OP_DIV ? "division" : "remainder");
            if (u64) {
                uint64_t q = (uint64_t)a[i] / (uint64_t)b[i], m = (uint64_t)a[i] % (uint64_t)b[i];
                r[i] = (int64_t)(xi->op == OP_DIV ? q : m);
            } else if (b[i] == -1) { /* INT_MIN / -1 wraps; remainder 0 */
                r[i] = xi->op == OP_DIV ? iwrap(0 - (uint64_t)a[i], F) : 0;
            } else {
                r[i] = iwrap((uint64_t)(xi->op == OP_DIV ? a[i] / b[i] : a[i] % b[i]), F);
            }
        }
        break;
    case OP_MAXIMUM:
        if (u64)
            LOOP(n) r[i] = (uint64_t)a[i] > (uint64_t)b[i] ? a[i] : b[i];
        else
            LOOP(n) r[i] = a[i] > b[i] ? a[i] : b[i];
        break;
    case OP_MINIMUM:
        if (u64)
            LOOP(n) r[i] = (uint64_t)a[i] < (uint64_t)b[i] ? a[i] : b[i];
        else
            LOOP(n) r[i] = a[i] < b[i] ? a[i] : b[i];
        break;
    case OP_AND: LOOP(n) r[i] = a[i] & b[i]; break;
    case OP_OR: LOOP(n) r[i] = a[i] | b[i]; break;
    case OP_XOR: LOOP(n) r[i] = a[i] ^ b[i]; break;
    /* Shift amounts at or beyond the width (negative ones included, read
     * as unsigned) give 0, or the sign fill for arithmetic right shifts:
     * what PTX's clamping shl/shr do. */
    case OP_SHL:
        LOOP(n) r[i] = (uint64_t)b[i] >= (uint64_t)w ? 0 : iwrap((uint64_t)a[i] << b[i], F);
        break;
    case OP_SHR:
        if (F.uns)
            LOOP(n) r[i] = (uint64_t)b[i] >= (uint64_t)w ? 0 : (int64_t)((uint64_t)a[i] >> b[i]);
        else
            LOOP(n) r[i] = (uint64_t)b[i] >= (uint64_t)w ? (a[i] < 0 ? -1 : 0) : a[i] >> b[i];
        break;
    case OP_UMULHI:
        if (w == 64) {
            LOOP(n) r[i] = (int64_t)mulhi64((uint64_t)a[i], (uint64_t)b[i]);
        } else {
            uint64_t mask = ((uint64_t)1 << w) - 1;
            LOOP(n) r[i] = iwrap((((uint64_t)a[i] & mask) * ((uint64_t)b[i] & mask)) >> w, F);
        }
        break;
    default: unsupported(S, xi);
    }
}

/* Comparisons: NaN compares false except with ne (Triton's != is the
 * unordered fcmp une: !(a == b), the same as != for integers).
 * COMPARE_LANES(T) sets r[i] = a[i] op b[i] for lanes of element type T. */
#define COMPARE_LANES(T)                                        \
    do {                                                        \
        const T *a = xi->x, *b = xi->y;                         \
        switch (op) {                                           \
        case OP_LT: LOOP(n) r[i] = a[i] < b[i]; break;          \
        case OP_LE: LOOP(n) r[i] = a[i] <= b[i]; break;         \
        case OP_GT: LOOP(n) r[i] = a[i] > b[i]; break;          \
        case OP_GE: LOOP(n) r[i] = a[i] >= b[i]; break;         \
        case OP_EQ: LOOP(n) r[i] = a[i] == b[i]; break;         \
        default: LOOP(n) r[i] = !(a[i] == b[i]); break;         \
        }                                                       \
    } while (0)

static void compare(Interp *S, const XInst *xi)
{
    int64_t *r = xi->r, n = xi->n;
    int op = xi->op;
    if (xi->cls == C_FLOAT) {
        COMPARE_LANES(double);
    } else if (xi->cls == C_INT) {
        COMPARE_LANES(int64_t);
    } else if (xi->cls == C_U64) {
        COMPARE_LANES(uint64_t);
    } else {
        /* pointers: ordered by (buffer, offset) */
        const PtrLane *a = xi->x, *b = xi->y;
        LOOP(n) {
            int c = a[i].buf != b[i].buf ? (a[i].buf < b[i].buf ? -1 : 1)
                    : a[i].off != b[i].off ? (a[i].off < b[i].off ? -1 : 1) : 0;
            switch (op) {
            case OP_LT: r[i] = c < 0; break;
            case OP_LE: r[i] = c <= 0; break;
            case OP_GT: r[i] = c > 0; break;
            case OP_GE: r[i] = c >= 0; break;
            case OP_EQ: r[i] = c == 0; break;
            default: r[i] = c != 0; break;
            }
        }
    }
    (void)S;
}
#undef COMPARE_LANES

static void unary(Interp *S, const XInst *xi)
{
    int64_t n = xi->n;
    int op = xi->op;
    if (op == OP_ISNAN || op == OP_ISINF) {
        const double *a = xi->x;
        int64_t *r = xi->r;
        if (xi->cls != C_FLOAT)
            LOOP(n) r[i] = 0;
        else if (op == OP_ISNAN)
            LOOP(n) r[i] = isnan(a[i]) != 0;
        else
            LOOP(n) r[i] = isinf(a[i]) != 0;
        return;
    }
    if (xi->cls == C_FLOAT) {
        const double *a = xi->x;
        double *r = xi->r;
        if (op == OP_NEG) {
            LOOP(n) r[i] = -a[i];
        } else if (op == OP_ABS) {
            LOOP(n) r[i] = fabs(a[i]);
        } else {
            double (*fn)(double) = unary_fn(op);
            if (!fn)
                unsupported(S, xi);
            LOOP(n) r[i] = fn(a[i]);
        }
        round_array(xi->rk, r, n);
        return;
    }
    if (xi->cls == C_PTR)
        unsupported(S, xi);
    const int64_t *a = xi->x;
    int64_t *r = xi->r;
    IntFmt F = xi->ifmt;
    switch (op) {
    case OP_NEG: LOOP(n) r[i] = iwrap(0 - (uint64_t)a[i], F); break;
    case OP_ABS:
        if (F.uns)
            LOOP(n) r[i] = a[i];
        else
            LOOP(n) r[i] = a[i] < 0 ? iwrap(0 - (uint64_t)a[i], F) : a[i];
        break;
    case OP_NOT: LOOP(n) r[i] = iwrap(~(uint64_t)a[i], F); break;
    default: unsupported(S, xi);
    }
}

/* Copies n lanes of lb bytes each. */
static void copy_lanes(void *dst, const void *src, int64_t n, size_t lb)
{
    if (dst != src)
        memcpy(dst, src, (size_t)n * lb);
}

static void where_op(const XInst *xi)
{
    const int64_t *c = xi->x;
    int64_t n = xi->n;
    if (xi->rdt == DT_PTR) {
        const PtrLane *a = xi->y, *b = xi->z;
        PtrLane *r = xi->r;
        LOOP(n) r[i] = c[i] ? a[i] : b[i];
    } else {
        const int64_t *a = xi->y, *b = xi->z;
        int64_t *r = xi->r;
        LOOP(n) r[i] = c[i] ? a[i] : b[i];
    }
}

static void cast_op(Interp *S, const XInst *xi)
{
    Type st = vtype(S, xi->in->args[0]);
    Dtype sdt = (Dtype)st.dt, rdt = xi->rdt;
    int64_t n = xi->n;
    bool sf = dtype_is_float(sdt), rf = dtype_is_float(rdt);
    if (sdt == DT_PTR || rdt == DT_PTR) {
        if (sdt == DT_PTR && rdt == DT_PTR) {
            copy_lanes(xi->r, xi->x, n, sizeof(PtrLane));
            return;
        }
        unsupported(S, xi);
    }
    if (sf && rf) {
        copy_lanes(xi->r, xi->x, n, 8);
        round_array(xi->rk, xi->r, n);
    } else if (!sf && rf) {
        const int64_t *a = xi->x;
        double *r = xi->r;
        bool u64 = sdt == DT_U64;
        LOOP(n) r[i] = int_to_float(a[i], u64, xi->rk);
    } else if (sf && !rf) {
        const double *a = xi->x;
        int64_t *r = xi->r;
        LOOP(n) r[i] = float_to_int(a[i], rdt);
    } else {
        const int64_t *a = xi->x;
        int64_t *r = xi->r;
        if (rdt == DT_I1)
            LOOP(n) r[i] = a[i] != 0;
        else
            LOOP(n) r[i] = iwrap((uint64_t)a[i], xi->ifmt);
    }
}

/* Same-width reinterpretation: each lane is stored in its dtype's memory
 * format and loaded back in the result's.  A float operand is thereby
 * rounded to its dtype first (a no-op in IM_AS_WRITTEN; in IM_F64 its bits
 * are those of the declared dtype). */
static void bitcast_op(Interp *S, const XInst *xi)
{
    Type st = vtype(S, xi->in->args[0]);
    Dtype sdt = (Dtype)st.dt, rdt = xi->rdt;
    int64_t n = xi->n;
    if (sdt == DT_PTR || rdt == DT_PTR) {
        if (sdt == DT_PTR && rdt == DT_PTR) {
            copy_lanes(xi->r, xi->x, n, sizeof(PtrLane));
            return;
        }
        unsupported(S, xi);
    }
    bool sf = dtype_is_float(sdt), rf = dtype_is_float(rdt);
    LOOP(n) {
        uint8_t elem[8] = {0}; /* the lane's bytes, at most 64 bits */
        if (sf)
            store_float(elem, sdt, false, ((const double *)xi->x)[i]);
        else
            store_int(elem, sdt, ((const int64_t *)xi->x)[i]);
        if (rf)
            ((double *)xi->r)[i] = load_float(elem, rdt, false);
        else
            ((int64_t *)xi->r)[i] = load_int(elem, rdt);
    }
}

/* ------------------------------------------------------------------ */
/* Memory                                                              */
/* ------------------------------------------------------------------ */

/* Reports a failed access of lane i (cold path of lane_addr). */
static _Noreturn void access_error(Interp *S, const XInst *xi, const PtrLane *p, int64_t i,
                                   int es, const char *what)
{
    Type pt = vtype(S, xi->in->args[0]);
    int64_t bi = p->buf - 1;
    if (bi < 0 || bi >= S->f->nparams || !S->bufs[bi].name)
        fail(S, xi->in->loc, pt, i, "%s through an invalid pointer", what);
    const Buffer *B = &S->bufs[bi];
    int64_t off = p->off;
    if (off < 0 || off > B->nbytes - es) {
        int64_t el = off / es - (off % es < 0); /* floor division */
        fail(S, xi->in->loc, pt, i, "out-of-bounds %s '%s': element %lld of %lld", what, B->name,
             (long long)el, (long long)(B->nbytes / es));
    }
    fail(S, xi->in->loc, pt, i, "misaligned %s '%s': byte offset %lld is not a multiple of %d",
         what, B->name, (long long)off, es);
}

/* The address of lane i of a pointer operand for an access of es bytes (a
 * power of two), after the bounds and alignment checks. */
static inline uint8_t *lane_addr(Interp *S, const XInst *xi, const PtrLane *p, int64_t i, int es,
                                 const char *what)
{
    uint64_t bi = (uint64_t)(p->buf - 1);
    if (bi < (uint64_t)S->f->nparams) {
        const Buffer *B = &S->bufs[bi];
        int64_t off = p->off;
        if (off >= 0 && off <= B->nbytes - es && !(off & (es - 1)) && B->name)
            return B->data + off;
    }
    access_error(S, xi, p, i, es, what);
}

/* Operand positions of the optional mask and other. */
static const int64_t *mask_of(const Interp *S, const Inst *in, int at)
{
    return (in->flags & IF_HAS_MASK) ? S->slot[in->args[at]] : NULL;
}

static void load_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    const PtrLane *p = xi->x;
    const int64_t *m = mask_of(S, in, 1);
    const int64_t *other = (in->flags & IF_HAS_OTHER) ? S->slot[in->args[m ? 2 : 1]] : NULL;
    Dtype dt = xi->rdt;
    if (dt == DT_PTR)
        unsupported(S, xi);
    int es = access_size(S, dt);
    int64_t *r = xi->r; /* raw 8-byte lanes: doubles or int64 */
    bool fl = dtype_is_float(dt);
    LOOP(xi->n) {
        if (m && !m[i]) {
            r[i] = other ? other[i] : 0; /* 0 and 0.0 share their bits */
            continue;
        }
        const uint8_t *addr = lane_addr(S, xi, &p[i], i, es, "load from");
        if (fl) {
            double v = load_float(addr, dt, S->f64);
            memcpy(&r[i], &v, 8);
        } else {
            r[i] = load_int(addr, dt);
        }
    }
}

static void store_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    const PtrLane *p = xi->x;
    const int64_t *m = mask_of(S, in, 2);
    Dtype dt = (Dtype)vtype(S, in->args[1]).dt;
    if (dt == DT_PTR)
        unsupported(S, xi);
    int es = access_size(S, dt);
    bool fl = dtype_is_float(dt);
    LOOP(xi->n) {
        if (m && !m[i])
            continue;
        uint8_t *addr = lane_addr(S, xi, &p[i], i, es, "store to");
        if (fl)
            store_float(addr, dt, S->f64, ((const double *)xi->y)[i]);
        else
            store_int(addr, dt, ((const int64_t *)xi->y)[i]);
    }
}

/* The value an atomic of kind op leaves, from the old one and the lane's (atomic_max and
 * atomic_min compare unsigned ints as unsigned: u is true for u32/u64). */
static double atomic_float(OpKind op, double old, double v)
{
    switch (op) {
    case OP_ATOMIC_MAX: return v > old ? v : old;
    case OP_ATOMIC_MIN: return v < old ? v : old;
    case OP_ATOMIC_XCHG: return v;
    default: return old + v;
    }
}
static int64_t atomic_int(OpKind op, int64_t old, int64_t v, bool u)
{
    bool gt = u ? (uint64_t)v > (uint64_t)old : v > old, lt = u ? (uint64_t)v < (uint64_t)old : v < old;
    switch (op) {
    case OP_ATOMIC_MAX: return gt ? v : old;
    case OP_ATOMIC_MIN: return lt ? v : old;
    case OP_ATOMIC_XCHG: return v;
    default: return (int64_t)((uint64_t)old + (uint64_t)v);
    }
}

/* Lanes apply in lane order, so lanes hitting one address see each
 * other's writes.  Masked-off lanes return 0. */
static void atomic_op(Interp *S, const XInst *xi)
{
    OpKind op = (OpKind)xi->in->op;
    const Inst *in = xi->in;
    const PtrLane *p = xi->x;
    const int64_t *m = mask_of(S, in, 2);
    Dtype dt = xi->rdt;
    if (dt == DT_PTR)
        unsupported(S, xi);
    int es = access_size(S, dt);
    bool fl = dtype_is_float(dt);
    int rk = rk_of(S, dt);
    IntFmt F = int_fmt(fl ? DT_I64 : dt);
    LOOP(xi->n) {
        if (m && !m[i]) {
            ((int64_t *)xi->r)[i] = 0;
            continue;
        }
        uint8_t *addr = lane_addr(S, xi, &p[i], i, es, op_info[op].name);
        if (fl) {
            double old = load_float(addr, dt, S->f64);
            store_float(addr, dt, S->f64, round_rk(rk, atomic_float(op, old, ((const double *)xi->y)[i])));
            ((double *)xi->r)[i] = old;
        } else {
            int64_t old = load_int(addr, dt);
            int64_t nv = atomic_int(op, old, ((const int64_t *)xi->y)[i], dt == DT_U32 || dt == DT_U64);
            store_int(addr, dt, iwrap((uint64_t)nv, F));
            ((int64_t *)xi->r)[i] = old;
        }
    }
}

static void addptr_op(Interp *S, const XInst *xi)
{
    const PtrLane *p = xi->x;
    const int64_t *o = xi->y;
    PtrLane *r = xi->r;
    Type pt = vtype(S, xi->in->args[0]);
    uint64_t es = (uint64_t)access_size(S, (Dtype)pt.elem);
    LOOP(xi->n) {
        r[i].buf = p[i].buf;
        r[i].off = (int64_t)((uint64_t)p[i].off + (uint64_t)o[i] * es);
    }
}

/* ------------------------------------------------------------------ */
/* Shapes, reductions, scans, dot                                      */
/* ------------------------------------------------------------------ */

/* Row-major strides (in lanes) of shape t. */
static void strides_of(Type t, int64_t st[KAD_MAX_RANK])
{
    int64_t s = 1;
    for (int k = t.rank - 1; k >= 0; k--) {
        st[k] = s;
        s *= t.shape[k];
    }
}

/* Copies a tile of result type rt lane by lane, reading source lane
 * sum(idx[k] * sst[k]) for result index idx (an odometer over rt). */
static void gather(void *dst, const void *src, Type rt, const int64_t sst[KAD_MAX_RANK], size_t lb)
{
    int64_t n = type_numel(rt);
    int64_t idx[KAD_MAX_RANK] = {0};
    int64_t so = 0;
    uint8_t *d = dst;
    const uint8_t *s = src;
    for (int64_t i = 0; i < n; i++) {
        if (lb == 8)
            ((int64_t *)dst)[i] = ((const int64_t *)src)[so];
        else
            memcpy(d + (size_t)i * lb, s + (size_t)so * lb, lb);
        for (int k = rt.rank - 1; k >= 0; k--) {
            idx[k]++;
            so += sst[k];
            if (idx[k] < rt.shape[k])
                break;
            so -= sst[k] * idx[k];
            idx[k] = 0;
        }
    }
}

static void broadcast_op(Interp *S, const XInst *xi)
{
    Type st = vtype(S, xi->in->args[0]), rt = vtype(S, xi->in->res[0]);
    size_t lb = lane_bytes(rt);
    if (st.rank == 0 || type_numel(st) == 1) {
        if (lb == 8) {
            int64_t v = *(const int64_t *)xi->x, *r = xi->r;
            LOOP(xi->n) r[i] = v;
        } else {
            PtrLane v = *(const PtrLane *)xi->x, *r = xi->r;
            LOOP(xi->n) r[i] = v;
        }
        return;
    }
    ASSERT(st.rank == rt.rank);
    int64_t sst[KAD_MAX_RANK];
    strides_of(st, sst);
    for (int k = 0; k < st.rank; k++)
        if (st.shape[k] == 1)
            sst[k] = 0;
    gather(xi->r, xi->x, rt, sst, lb);
}

static void permute_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type st = vtype(S, in->args[0]), rt = vtype(S, in->res[0]);
    int64_t sst[KAD_MAX_RANK], pst[KAD_MAX_RANK];
    strides_of(st, sst);
    for (int k = 0; k < rt.rank; k++)
        pst[k] = sst[in->ints[k]]; /* result axis k is source axis perm[k] */
    gather(xi->r, xi->x, rt, pst, lane_bytes(rt));
}

/* The [outer, len, inner] view of a tile around `axis`. */
static void axis_view(Type t, int axis, int64_t *outer, int64_t *len, int64_t *inner)
{
    *outer = *inner = 1;
    for (int k = 0; k < axis; k++)
        *outer *= t.shape[k];
    *len = t.rank ? t.shape[axis] : 1;
    for (int k = axis + 1; k < t.rank; k++)
        *inner *= t.shape[k];
}

/* sum/max/min/argmax/argmin: sequential order along the axis.  Float sums
 * accumulate in double and round once; max/min are maxnum/minnum (NaNs
 * ignored unless all lanes are NaN); argmax/argmin fold Triton's
 * _argmax_combine/_argmin_combine with tie_break_left from the first
 * index. */
static void reduce_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type st = vtype(S, in->args[0]);
    int64_t O, L, I;
    axis_view(st, (int)in->ival, &O, &L, &I);
    int op = xi->op;
    bool fl = xi->cls == C_FLOAT, u64 = xi->cls == C_U64;
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            int64_t base = o * L * I + i, out = o * I + i;
            if (fl) {
                const double *a = xi->x;
                double acc = a[base];
                int64_t best = 0;
                for (int64_t k = 1; k < L; k++) {
                    double v = a[base + k * I];
                    switch (op) {
                    case OP_SUM: acc += v; break;
                    case OP_MAX: acc = fmaxnum(acc, v); break;
                    case OP_MIN: acc = fminnum(acc, v); break;
                    case OP_ARGMAX: if (!(acc > v || acc == v)) { acc = v; best = k; } break;
                    case OP_ARGMIN: if (!(acc < v || acc == v)) { acc = v; best = k; } break;
                    default: unsupported(S, xi);
                    }
                }
                if (op == OP_ARGMAX || op == OP_ARGMIN)
                    ((int64_t *)xi->r)[out] = best;
                else
                    ((double *)xi->r)[out] = round_rk(xi->rk, acc);
            } else {
                const int64_t *a = xi->x;
                int64_t acc = a[base], best = 0;
                for (int64_t k = 1; k < L; k++) {
                    int64_t v = a[base + k * I];
                    bool gt = u64 ? (uint64_t)v > (uint64_t)acc : v > acc;
                    bool lt = u64 ? (uint64_t)v < (uint64_t)acc : v < acc;
                    switch (op) {
                    case OP_SUM: acc = (int64_t)((uint64_t)acc + (uint64_t)v); break;
                    case OP_MAX: if (gt) acc = v; break;
                    case OP_MIN: if (lt) acc = v; break;
                    case OP_ARGMAX: if (gt) { acc = v; best = k; } break;
                    case OP_ARGMIN: if (lt) { acc = v; best = k; } break;
                    default: unsupported(S, xi);
                    }
                }
                ((int64_t *)xi->r)[out] =
                    op == OP_ARGMAX || op == OP_ARGMIN ? best : iwrap((uint64_t)acc, xi->ifmt);
            }
        }
}

/* Inclusive scans; the running value is kept in double (int64 for ints)
 * and each output is rounded to the dtype. */
static void scan_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type st = vtype(S, in->args[0]);
    int64_t O, L, I;
    axis_view(st, (int)in->ival, &O, &L, &I);
    bool rev = (in->flags & IF_REVERSE) != 0, prod = xi->op == OP_CUMPROD;
    bool fl = xi->cls == C_FLOAT;
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            double facc = prod ? 1 : 0;
            uint64_t iacc = prod ? 1 : 0;
            for (int64_t j = 0; j < L; j++) {
                int64_t k = rev ? L - 1 - j : j;
                int64_t at = o * L * I + k * I + i;
                if (fl) {
                    double v = ((const double *)xi->x)[at];
                    facc = prod ? facc * v : facc + v;
                    ((double *)xi->r)[at] = round_rk(xi->rk, facc);
                } else {
                    uint64_t v = (uint64_t)((const int64_t *)xi->x)[at];
                    iacc = prod ? iacc * v : iacc + v;
                    ((int64_t *)xi->r)[at] = iwrap(iacc, xi->ifmt);
                }
            }
        }
    (void)S;
}

/* join: the two operands' lanes alternate along a new last axis of 2. */
static void join_op(const XInst *xi)
{
    const int64_t *a = xi->x, *b = xi->y;
    int64_t *r = xi->r;
    LOOP(xi->n / 2) {
        r[2 * i] = a[i];
        r[2 * i + 1] = b[i];
    }
}

/* split: lane `half` of each pair of the last axis. */
static void split_op(const XInst *xi)
{
    const int64_t *x = xi->x;
    int64_t *r = xi->r, h = xi->in->ival;
    LOOP(xi->n) r[i] = x[2 * i + h];
}

/* flip: the axis reversed. */
static void flip_op(Interp *S, const XInst *xi)
{
    int64_t O, L, I;
    axis_view(vtype(S, xi->in->args[0]), (int)xi->in->ival, &O, &L, &I);
    const int64_t *x = xi->x;
    int64_t *r = xi->r;
    for (int64_t o = 0; o < O; o++)
        for (int64_t k = 0; k < L; k++)
            for (int64_t i = 0; i < I; i++)
                r[(o * L + k) * I + i] = x[(o * L + L - 1 - k) * I + i];
}

/* gather: r[.., j, ..] = src[.., index[.., j, ..], ..] along the axis; an
 * index outside the source's axis is an error (Triton's result is
 * undefined there). */
static void gather_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type st = vtype(S, in->args[0]), it = vtype(S, in->args[1]);
    int axis = (int)in->ival;
    int64_t sst[KAD_MAX_RANK], idx[KAD_MAX_RANK] = {0};
    strides_of(st, sst);
    const int64_t *src = xi->x, *ix = xi->y;
    int64_t *r = xi->r;
    bool u64 = it.dt == DT_U64;
    for (int64_t i = 0; i < xi->n; i++) {
        int64_t v = ix[i];
        if ((u64 && (uint64_t)v >= (uint64_t)st.shape[axis]) || (!u64 && (v < 0 || v >= st.shape[axis])))
            fail(S, in->loc, it, i, "gather index %lld is out of range for axis %d of size %d", (long long)v,
                 axis, (int)st.shape[axis]);
        int64_t so = v * sst[axis];
        for (int k = 0; k < st.rank; k++)
            if (k != axis)
                so += idx[k] * sst[k];
        r[i] = src[so];
        for (int k = it.rank - 1; k >= 0; k--) {
            if (++idx[k] < it.shape[k])
                break;
            idx[k] = 0;
        }
    }
}

/* Orders for sort: ascending; NaNs after every number. */
static int cmp_f64(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    if (isnan(x) || isnan(y))
        return isnan(x) - isnan(y);
    return (x > y) - (x < y);
}
static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* sort: each row of the last axis sorted (descending under IF_REVERSE), the
 * first ival values kept (tl.topk). */
static void sort_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type st = vtype(S, in->args[0]);
    int64_t L = st.shape[st.rank - 1], k = in->ival, rows = type_numel(st) / L;
    bool desc = (in->flags & IF_REVERSE) != 0;
    /* a full ascending sort runs in the result; otherwise in scratch (topk) */
    int64_t *row = k == L && !desc ? NULL : arena_alloc(S->a, (size_t)L * sizeof *row);
    for (int64_t o = 0; o < rows; o++) {
        if (!row) {
            memcpy((int64_t *)xi->r + o * L, (const int64_t *)xi->x + o * L, (size_t)L * sizeof *row);
            qsort((int64_t *)xi->r + o * L, (size_t)L, sizeof *row,
                  xi->cls == C_FLOAT ? cmp_f64 : xi->cls == C_U64 ? cmp_u64 : cmp_i64);
            continue;
        }
        memcpy(row, (const int64_t *)xi->x + o * L, (size_t)L * sizeof *row);
        qsort(row, (size_t)L, sizeof *row,
              xi->cls == C_FLOAT ? cmp_f64 : xi->cls == C_U64 ? cmp_u64 : cmp_i64);
        for (int64_t j = 0; j < k; j++)
            ((int64_t *)xi->r)[o * k + j] = row[desc ? L - 1 - j : j];
    }
}

/* histogram: counts of the values 0 .. bins-1 over the (unmasked) lanes; a
 * value outside is an error (Triton's GPU result is undefined there). */
static void histogram_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type xt = vtype(S, in->args[0]);
    const int64_t *x = xi->x, *m = in->nargs > 1 ? xi->y : NULL;
    int64_t *r = xi->r, nb = in->ival;
    bool u64 = xt.dt == DT_U64;
    LOOP(nb) r[i] = 0;
    LOOP(type_numel(xt)) {
        if (m && !m[i])
            continue;
        if ((u64 && (uint64_t)x[i] >= (uint64_t)nb) || (!u64 && (x[i] < 0 || x[i] >= nb)))
            fail(S, in->loc, xt, i, "histogram value %lld is outside the %lld bins", (long long)x[i],
                 (long long)nb);
        r[x[i]]++;
    }
}

/* dot: a[(B,)M,K] x b[(B,)K,N] + acc[(B,)M,N].  For each output the
 * products are summed over k in order in double (exact int64 for ints),
 * then acc is added and the result rounded once to the result dtype. */
static void dot_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type at = vtype(S, in->args[0]), bt = vtype(S, in->args[1]);
    int r = at.rank;
    int64_t B = r == 3 ? at.shape[0] : 1;
    int64_t M = at.shape[r - 2], K = at.shape[r - 1], N = bt.shape[r - 1];
    bool fl = xi->cls == C_FLOAT;
    if (fl != dtype_is_float(xi->rdt) || cls_of(bt) != xi->cls || xi->cls == C_PTR)
        unsupported(S, xi);
    for (int64_t bb = 0; bb < B; bb++) {
        int64_t ao = bb * M * K, bo = bb * K * N, ro = bb * M * N;
        if (fl) {
            const double *a = (const double *)xi->x + ao, *b = (const double *)xi->y + bo;
            const double *c = (const double *)xi->z + ro;
            double *res = (double *)xi->r + ro;
            for (int64_t i = 0; i < M * N; i++)
                res[i] = 0;
            for (int64_t i = 0; i < M; i++)
                for (int64_t k = 0; k < K; k++) {
                    double aik = a[i * K + k];
                    const double *brow = b + k * N;
                    double *rrow = res + i * N;
                    for (int64_t j = 0; j < N; j++)
                        rrow[j] += aik * brow[j];
                }
            for (int64_t i = 0; i < M * N; i++)
                res[i] = round_rk(xi->rk, res[i] + c[i]);
        } else {
            const int64_t *a = (const int64_t *)xi->x + ao, *b = (const int64_t *)xi->y + bo;
            const int64_t *c = (const int64_t *)xi->z + ro;
            int64_t *res = (int64_t *)xi->r + ro;
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    uint64_t s = 0;
                    for (int64_t k = 0; k < K; k++)
                        s += (uint64_t)a[i * K + k] * (uint64_t)b[k * N + j];
                    res[i * N + j] = iwrap(s + (uint64_t)c[i * N + j], xi->ifmt);
                }
        }
    }
}

/* ------------------------------------------------------------------ */
/* Random numbers                                                      */
/* ------------------------------------------------------------------ */

/* rand/randn/randint.  Values are those of Triton's fp32 computation in
 * both modes (IM_F64 included), so that dropout masks agree across modes. */
static void random_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    Type ot = vtype(S, in->args[1]);
    int ow = dtype_bits((Dtype)ot.dt);
    if (ow != 32 && ow != 64)
        fail(S, in->loc, ot, -1, "%s: offsets must be 32- or 64-bit integers, got %s",
             op_info[in->op].name, dtype_name((Dtype)ot.dt));
    uint64_t seed = (uint64_t)*(const int64_t *)xi->x; /* seed.to(tl.uint64) */
    const int64_t *off = xi->y;
    LOOP(xi->n) {
        uint64_t r0;
        float u0, u1;
        if (ow == 32) {
            uint32_t c[4] = {(uint32_t)off[i], 0, 0, 0};
            philox32(c, (uint32_t)seed, (uint32_t)(seed >> 32));
            r0 = c[0];
            u0 = uniform32(c[0]), u1 = uniform32(c[1]);
        } else {
            uint64_t c[4] = {(uint64_t)off[i], 0, 0, 0};
            philox64(c, seed, 0);
            r0 = c[0];
            u0 = uniform64(c[0]), u1 = uniform64(c[1]);
        }
        switch (xi->op) {
        case OP_RANDINT: ((int64_t *)xi->r)[i] = iwrap(r0, xi->ifmt); break;
        case OP_RAND: ((double *)xi->r)[i] = u0; break;
        default: ((double *)xi->r)[i] = uniform_pair_to_normal(u0, u1); break;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Constants and execution                                             */
/* ------------------------------------------------------------------ */

/* Fills the results of instructions whose value is the same in every
 * program: const, arange, num_programs.  Returns true for those. */
static bool fill_invariant(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    switch (xi->op) {
    case OP_CONST:
        if (dtype_is_float(xi->rdt)) {
            double v = round_rk(xi->rk, in->fval);
            LOOP(xi->n) ((double *)xi->r)[i] = v;
        } else if (xi->rdt != DT_PTR) {
            int64_t v = xi->rdt == DT_I1 ? in->ival != 0 : iwrap((uint64_t)in->ival, xi->ifmt);
            LOOP(xi->n) ((int64_t *)xi->r)[i] = v;
        }
        return true;
    case OP_ARANGE:
        LOOP(xi->n) ((int64_t *)xi->r)[i] = iwrap((uint64_t)in->ival + (uint64_t)i, xi->ifmt);
        return true;
    case OP_NUM_PROGRAMS:
        *(int64_t *)xi->r = S->grid[in->ival >= 0 && in->ival < 3 ? in->ival : 0];
        return true;
    default: return false;
    }
}

static void fill_invariants(Interp *S, const XBlock *xb)
{
    for (int i = 0; i < xb->n; i++) {
        const XInst *xi = &xb->v[i];
        if (xi->op == OP_CONST && xi->rdt == DT_PTR)
            unsupported(S, xi);
        fill_invariant(S, xi);
        for (int k = 0; k < 2; k++)
            if (xi->reg[k])
                fill_invariants(S, xi->reg[k]);
    }
}

static void copy_value(Interp *S, ValId dst, ValId src)
{
    Type t = vtype(S, dst);
    copy_lanes(S->slot[dst], S->slot[src], type_numel(t), lane_bytes(t));
}

/* Assigns the yield of xb to the params dst[first..] as one parallel
 * assignment (through temporaries when the yield permutes params). */
static void assign_yield(Interp *S, const XBlock *xb, const ValId *dst, int ndst)
{
    const Inst *y = xb->term;
    ASSERT(y && y->nargs == ndst);
    if (!xb->tmp) {
        for (int j = 0; j < ndst; j++)
            if (dst[j] != y->args[j])
                copy_value(S, dst[j], y->args[j]);
        return;
    }
    int first = xb->b->nparams - ndst; /* tmp is indexed by block param */
    for (int j = 0; j < ndst; j++) {
        Type t = vtype(S, dst[j]);
        copy_lanes(xb->tmp[first + j], S->slot[y->args[j]], type_numel(t), lane_bytes(t));
    }
    for (int j = 0; j < ndst; j++) {
        Type t = vtype(S, dst[j]);
        copy_lanes(S->slot[dst[j]], xb->tmp[first + j], type_numel(t), lane_bytes(t));
    }
}

static void exec_block(Interp *S, const XBlock *xb);

static void for_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    const XBlock *body = xi->reg[0];
    const Block *b = body->b;
    Type it = vtype(S, in->args[0]);
    bool u64 = it.dt == DT_U64;
    int64_t lb = *(int64_t *)xi->x, ub = *(int64_t *)xi->y, st = *(int64_t *)xi->z;
    if (st == 0)
        fail(S, in->loc, it, -1, "for loop step is zero (program (%lld, %lld, %lld))",
             (long long)S->pid[0], (long long)S->pid[1], (long long)S->pid[2]);
    int nc = in->nargs - 3;
    ASSERT(b->nparams == nc + 1 && in->nres == nc);
    for (int j = 0; j < nc; j++)
        copy_value(S, b->params[1 + j], in->args[3 + j]);
    int64_t *iv = S->slot[b->params[0]];
    /* Python range semantics, computed exactly in 64 bits: the loop runs
     * while iv < ub (step > 0) or iv > ub (step < 0) and stops before iv
     * would leave the 64-bit range. */
    for (int64_t i = lb;;) {
        bool go = u64 ? (st > 0 ? (uint64_t)i < (uint64_t)ub : (uint64_t)i > (uint64_t)ub)
                      : (st > 0 ? i < ub : i > ub);
        if (!go)
            break;
        *iv = i;
        exec_block(S, body);
        assign_yield(S, body, b->params + 1, nc);
        uint64_t next = (uint64_t)i + (uint64_t)st;
        if (u64 ? (st > 0 ? next < (uint64_t)i : next > (uint64_t)i)
                : (st > 0 ? (int64_t)next < i : (int64_t)next > i))
            break; /* wrapped around: past the end */
        i = (int64_t)next;
    }
    for (int j = 0; j < nc; j++)
        copy_value(S, in->res[j], b->params[1 + j]);
}

/* scan with a combine region: per lane across the axis, the running
 * values (params 0..n-1) and the next element (params n..2n-1) go through
 * the region; the first element along the scan's direction is itself.
 * Every lane is 8 bytes (no pointers: verified). */
static void scan_region_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    const XBlock *cb = xi->reg[0];
    const Block *b = cb->b;
    const Inst *y = cb->term;
    int n = in->nargs;
    ASSERT(y && y->nargs == n && b->nparams == 2 * n);
    int64_t O, L, I;
    axis_view(vtype(S, in->args[0]), (int)in->ival, &O, &L, &I);
    bool rev = (in->flags & IF_REVERSE) != 0;
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            int64_t prev = 0;
            for (int64_t j = 0; j < L; j++) {
                int64_t k = rev ? L - 1 - j : j;
                int64_t at = o * L * I + k * I + i;
                if (j == 0) {
                    for (int q = 0; q < n; q++)
                        memcpy((char *)S->slot[in->res[q]] + 8 * at, (char *)S->slot[in->args[q]] + 8 * at, 8);
                } else {
                    for (int q = 0; q < n; q++) {
                        memcpy(S->slot[b->params[q]], (char *)S->slot[in->res[q]] + 8 * prev, 8);
                        memcpy(S->slot[b->params[n + q]], (char *)S->slot[in->args[q]] + 8 * at, 8);
                    }
                    exec_block(S, cb);
                    for (int q = 0; q < n; q++)
                        memcpy((char *)S->slot[in->res[q]] + 8 * at, S->slot[y->args[q]], 8);
                }
                prev = at;
            }
        }
}

/* reduce with a combine region: per lane across the axis, a left fold in
 * order (the value so far, params 0..n-1, then the next element, params
 * n..2n-1); the first element is itself.  Triton combines in a tree: the
 * same, up to rounding, for a combine_fn that is associative and
 * commutative (docs/LANGUAGE.md). */
static void reduce_region_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    const XBlock *cb = xi->reg[0];
    const Block *b = cb->b;
    const Inst *y = cb->term;
    int n = in->nargs;
    ASSERT(y && y->nargs == n && b->nparams == 2 * n);
    int64_t O, L, I;
    axis_view(vtype(S, in->args[0]), (int)in->ival, &O, &L, &I);
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            char *acc[16], *src[16];
            ASSERT(n <= 16);
            for (int q = 0; q < n; q++) {
                acc[q] = (char *)S->slot[in->res[q]] + 8 * (o * I + i);
                src[q] = (char *)S->slot[in->args[q]] + 8 * (o * L * I + i);
                memcpy(acc[q], src[q], 8);
            }
            for (int64_t k = 1; k < L; k++) {
                for (int q = 0; q < n; q++) {
                    memcpy(S->slot[b->params[q]], acc[q], 8);
                    memcpy(S->slot[b->params[n + q]], src[q] + 8 * k * I, 8);
                }
                exec_block(S, cb);
                for (int q = 0; q < n; q++)
                    memcpy(acc[q], S->slot[y->args[q]], 8);
            }
        }
}

static void if_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    const XBlock *taken = *(const int64_t *)xi->x ? xi->reg[0] : xi->reg[1];
    exec_block(S, taken);
    const Inst *y = taken->term;
    ASSERT(y && y->nargs == in->nres);
    for (int j = 0; j < in->nres; j++)
        copy_value(S, in->res[j], y->args[j]);
}

static void while_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    const XBlock *cond = xi->reg[0], *body = xi->reg[1];
    const Block *cb = cond->b, *bb = body->b;
    int nc = in->nargs;
    ASSERT(cb->nparams == nc && bb->nparams == nc && in->nres == nc);
    for (int j = 0; j < nc; j++)
        copy_value(S, cb->params[j], in->args[j]);
    for (int64_t iter = 0;; iter++) {
        exec_block(S, cond);
        ASSERT(cond->term && cond->term->op == OP_CONDITION);
        if (!*(const int64_t *)S->slot[cond->term->args[0]])
            break;
        if (iter >= MAX_WHILE_ITERS)
            fail(S, in->loc, vtype(S, cond->term->args[0]), -1,
                 "while loop ran more than %lld iterations (program (%lld, %lld, %lld))",
                 (long long)MAX_WHILE_ITERS, (long long)S->pid[0], (long long)S->pid[1],
                 (long long)S->pid[2]);
        for (int j = 0; j < nc; j++)
            copy_value(S, bb->params[j], cb->params[j]);
        exec_block(S, body);
        /* The body's yield cannot name the cond region's params (they are
         * not visible there), so a direct copy is a parallel assignment. */
        const Inst *y = body->term;
        ASSERT(y && y->nargs == nc);
        for (int j = 0; j < nc; j++)
            copy_value(S, cb->params[j], y->args[j]);
    }
    for (int j = 0; j < nc; j++)
        copy_value(S, in->res[j], cb->params[j]);
}

static void assert_op(Interp *S, const XInst *xi)
{
    const int64_t *c = xi->x;
    const Inst *in = xi->in;
    LOOP(xi->n) {
        if (!c[i]) {
            Type t = vtype(S, in->args[0]);
            if (in->sattr && *in->sattr)
                fail(S, in->loc, t, i, "device_assert failed: %s", in->sattr);
            fail(S, in->loc, t, i, "device_assert failed");
        }
    }
}

static void exec_inst(Interp *S, const XInst *xi)
{
    switch (xi->op) {
    case OP_CONST:
    case OP_ARANGE:
    case OP_NUM_PROGRAMS: break; /* filled once per run */
    case OP_PROGRAM_ID: *(int64_t *)xi->r = S->pid[xi->in->ival]; break;
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_REM: case OP_POW:
    case OP_MAXIMUM: case OP_MINIMUM: case OP_ATAN2:
    case OP_AND: case OP_OR: case OP_XOR: case OP_SHL: case OP_SHR: case OP_UMULHI:
        if (xi->cls == C_FLOAT)
            float_binop(S, xi);
        else if (xi->cls == C_PTR)
            unsupported(S, xi);
        else
            int_binop(S, xi);
        break;
    case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE:
        compare(S, xi);
        break;
    case OP_FMA: {
        if (xi->cls != C_FLOAT)
            unsupported(S, xi);
        const double *a = xi->x, *b = xi->y, *c = xi->z;
        double *r = xi->r;
        LOOP(xi->n) r[i] = fma_round(a[i], b[i], c[i], xi->rk);
        break;
    }
    case OP_WHERE: where_op(xi); break;
#define LIBM_CASE(en, ...) case en:
    KAD_LIBM_OPS(LIBM_CASE)
#undef LIBM_CASE
        libm_op(S, xi);
        break;
    case OP_CAST: cast_op(S, xi); break;
    case OP_BITCAST: bitcast_op(S, xi); break;
    case OP_MULTIPLE_OF:
    case OP_MAX_CONTIGUOUS:
    case OP_STOP_GRADIENT:
    case OP_CUSTOM_VJP: /* identity on operand 0 (its rule is for AD) */
    case OP_CUSTOM_JVP:
    case OP_EXPAND_DIMS:
    case OP_RESHAPE:
        copy_lanes(xi->r, xi->x, xi->n, lane_bytes(vtype(S, xi->in->res[0])));
        break;
    case OP_BROADCAST: broadcast_op(S, xi); break;
    case OP_PERMUTE: permute_op(S, xi); break;
    case OP_SUM: case OP_MAX: case OP_MIN: case OP_ARGMAX: case OP_ARGMIN:
        reduce_op(S, xi);
        break;
    case OP_CUMSUM: case OP_CUMPROD: scan_op(S, xi); break;
    case OP_JOIN: join_op(xi); break;
    case OP_SPLIT: split_op(xi); break;
    case OP_FLIP: flip_op(S, xi); break;
    case OP_GATHER: gather_op(S, xi); break;
    case OP_SORT: sort_op(S, xi); break;
    case OP_HISTOGRAM: histogram_op(S, xi); break;
    case OP_DOT: dot_op(S, xi); break;
    case OP_RAND: case OP_RANDN: case OP_RANDINT: random_op(S, xi); break;
    case OP_ADDPTR: addptr_op(S, xi); break;
    case OP_LOAD: load_op(S, xi); break;
    case OP_STORE: store_op(S, xi); break;
    case OP_ATOMIC_ADD: case OP_ATOMIC_MAX: case OP_ATOMIC_MIN: case OP_ATOMIC_XCHG: atomic_op(S, xi); break;
    case OP_ASSERT: assert_op(S, xi); break;
    case OP_BARRIER: break; /* one thread per program: accesses are already in order */
    case OP_FOR: for_op(S, xi); break;
    case OP_IF: if_op(S, xi); break;
    case OP_WHILE: while_op(S, xi); break;
    case OP_SCAN: scan_region_op(S, xi); break;
    case OP_REDUCE: reduce_region_op(S, xi); break;
    default:
        if (unary_fn(xi->op) || xi->op == OP_NEG || xi->op == OP_ABS || xi->op == OP_NOT ||
            xi->op == OP_ISNAN || xi->op == OP_ISINF)
            unary(S, xi);
        else
            unsupported(S, xi);
    }
}

static void exec_block(Interp *S, const XBlock *xb)
{
    for (int i = 0; i < xb->n; i++)
        exec_inst(S, &xb->v[i]);
}

/* ------------------------------------------------------------------ */
/* Entry                                                               */
/* ------------------------------------------------------------------ */

/* Binds the runtime arguments to the parameters' slots and buffers. */
static bool bind_args(Interp *S, const InterpArg *args)
{
    const Func *f = S->f;
    S->bufs = arena_alloc(S->a, sizeof *S->bufs * (size_t)(f->nparams ? f->nparams : 1));
    for (int i = 0; i < f->nparams; i++) {
        ValId v = f->params[i];
        const Value *pv = &f->vals.v[v];
        Type t = pv->ty;
        int64_t n = type_numel(t);
        if (t.dt == DT_PTR) {
            if (args[i].nbytes < 0 || (!args[i].data && args[i].nbytes > 0)) {
                diag_error(S->d, pv->loc, "argument %d ('%s'): invalid buffer (%lld bytes at %p)",
                           i, pv->name ? pv->name : "", (long long)args[i].nbytes, args[i].data);
                return false;
            }
            S->bufs[i] = (Buffer){pv->name ? pv->name : arena_printf(S->d->a, "parameter %d", i),
                                  args[i].data, args[i].nbytes};
            PtrLane *p = S->slot[v];
            for (int64_t k = 0; k < n; k++)
                p[k] = (PtrLane){0, i + 1};
        } else if (dtype_is_float((Dtype)t.dt)) {
            double x = round_rk(rk_of(S, (Dtype)t.dt), args[i].f);
            for (int64_t k = 0; k < n; k++)
                ((double *)S->slot[v])[k] = x;
        } else {
            int64_t x = t.dt == DT_I1 ? args[i].i != 0
                                      : iwrap((uint64_t)args[i].i, int_fmt((Dtype)t.dt));
            for (int64_t k = 0; k < n; k++)
                ((int64_t *)S->slot[v])[k] = x;
        }
    }
    return true;
}

static void run_grid(Interp *S, const XBlock *body)
{
    fill_invariants(S, body);
    for (int64_t z = 0; z < S->grid[2]; z++)
        for (int64_t y = 0; y < S->grid[1]; y++)
            for (int64_t x = 0; x < S->grid[0]; x++) {
                S->pid[0] = x, S->pid[1] = y, S->pid[2] = z;
                exec_block(S, body);
            }
}

bool interp_ranges_hold(const Func *f, const InterpArg *args, Diags *d)
{
    for (int i = 0; i < f->ranges.n; i++) { /* the ranges the kernel was specialized for */
        const ParamRange *r = &f->ranges.v[i];
        int64_t v = args[r->param].i;
        if (v < r->lo || v > r->hi) {
            const Value *pv = &f->vals.v[f->params[r->param]];
            diag_error(d, pv->loc, "%s = %lld is outside [%lld, %lld], the range kernel '%s' was specialized for",
                       pv->name ? pv->name : "a parameter", (long long)v, (long long)r->lo, (long long)r->hi,
                       f->name);
            return false;
        }
    }
    return true;
}

bool interp_run(const Func *f, const int64_t grid[3], const InterpArg *args, int nargs, InterpMode mode,
                Diags *d)
{
    if (nargs != f->nparams) {
        diag_error(d, f->loc, "kernel '%s' takes %d runtime arguments, %d given", f->name,
                   f->nparams, nargs);
        return false;
    }
    if (!interp_ranges_hold(f, args, d))
        return false;
    for (int k = 0; k < 3; k++)
        if (grid[k] < 0 || grid[k] > INT32_MAX) {
            diag_error(d, f->loc, "grid dimension %d is %lld: must be in 0..%d", k,
                       (long long)grid[k], INT32_MAX);
            return false;
        }
    Arena *a = arena_new(SCRATCH_LIMIT);
    if (!a) {
        diag_error(d, f->loc, "interpreter: out of memory");
        return false;
    }
    jmp_buf jb;
    Interp S = {.f = f, .d = d, .a = a, .f64 = mode == IM_F64, .jb = &jb};
    for (int k = 0; k < 3; k++)
        S.grid[k] = grid[k];
    arena_set_oom(a, &jb);
    switch (setjmp(jb)) {
    case 0:
        if (alloc_slots(&S) && bind_args(&S, args)) {
            const XBlock *body = prepare_block(&S, f->body);
            run_grid(&S, body);
            arena_free(a);
            return true;
        }
        break;
    case 1: /* the scratch arena is exhausted */
        diag_error(d, f->loc, "interpreter: out of memory (more than %lld MiB of tiles)",
                   (long long)(SCRATCH_LIMIT >> 20));
        break;
    default: /* a runtime error, already reported */
        break;
    }
    arena_free(a);
    return false;
}
