/* util.c -- arenas, growable arrays, string buffers, diagnostics, types.
 *
 * The one allocation function is arena_alloc: every byte kad allocates for a
 * compilation or a run comes from it, so a byte limit on the arena caps the
 * memory of the fuzzer and lets tests inject allocation failure.  On
 * exhaustion arena_alloc longjmps to the jmp_buf set with arena_set_oom (the
 * public API entry points set it and turn the jump into an error).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

_Noreturn void die_(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "kad internal error at %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

/* ---- arenas ---- */

typedef struct Chunk {
    struct Chunk *next;
    size_t size, used;
    max_align_t data[]; /* the memory handed out */
} Chunk;

struct Arena {
    Chunk *head;
    size_t limit; /* 0: none */
    size_t total; /* bytes obtained from malloc */
    size_t used;  /* bytes handed out */
    jmp_buf *oom;
};

Arena *arena_new(size_t limit)
{
    Arena *a = calloc(1, sizeof *a);
    if (a)
        a->limit = limit;
    return a;
}

void arena_free(Arena *a)
{
    if (!a)
        return;
    for (Chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(a);
}

void arena_set_oom(Arena *a, jmp_buf *oom) { a->oom = oom; }

size_t arena_used(const Arena *a) { return a->used; }

static _Noreturn void arena_exhausted(Arena *a)
{
    if (a->oom)
        longjmp(*a->oom, 1);
    die("out of memory");
}

void *arena_alloc(Arena *a, size_t n)
{
    const size_t align = sizeof(max_align_t);
    n = (n + align - 1) / align * align;
    if (n == 0)
        n = align;
    Chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = n > 64 * 1024 ? n : 64 * 1024;
        if (c && c->size * 2 > size && c->size < (1u << 24))
            size = c->size * 2;
        if (a->limit && a->total + size > a->limit) {
            if (a->total + n > a->limit)
                arena_exhausted(a);
            size = n;
        }
        c = malloc(sizeof *c + size);
        if (!c)
            arena_exhausted(a);
        c->size = size;
        c->used = 0;
        c->next = a->head;
        a->head = c;
        a->total += size;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    a->used += n;
    memset(p, 0, n);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

char *arena_vprintf(Arena *a, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        n = 0;
    char *p = arena_alloc(a, (size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *arena_printf(Arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = arena_vprintf(a, fmt, ap);
    va_end(ap);
    return p;
}

void vec_grow_(Arena *a, void **data, int *cap, size_t elem, int need)
{
    if (need <= *cap)
        return;
    int ncap = *cap ? *cap : 4;
    while (ncap < need) {
        if (ncap > (1 << 29))
            arena_exhausted(a);
        ncap *= 2;
    }
    void *p = arena_alloc(a, (size_t)ncap * elem);
    if (*cap)
        memcpy(p, *data, (size_t)*cap * elem);
    *data = p;
    *cap = ncap;
}

/* ---- string buffers ---- */

static void buf_reserve(Buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < b->len + extra + 1)
        ncap *= 2;
    char *p = arena_alloc(b->a, ncap);
    if (b->len)
        memcpy(p, b->s, b->len);
    b->s = p;
    b->cap = ncap;
}

void buf_puts(Buf *b, const char *s)
{
    size_t n = strlen(s);
    buf_reserve(b, n);
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void buf_putc(Buf *b, char c)
{
    buf_reserve(b, 1);
    b->s[b->len++] = c;
    b->s[b->len] = 0;
}

void buf_printf(Buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n > 0) {
        buf_reserve(b, (size_t)n);
        vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
        b->len += (size_t)n;
    }
    va_end(ap);
}

const char *buf_str(Buf *b) { return b->s ? b->s : ""; }

/* ---- diagnostics ---- */

void diag_init(Diags *d, Arena *a)
{
    memset(d, 0, sizeof *d);
    d->a = a;
}

void diag_add_source(Diags *d, const char *name, const char *text)
{
    SourceText st = {name, text};
    vec_push(d->a, d->sources, st);
}

static void diag_add(Diags *d, DiagKind kind, Loc loc, const char *fmt, va_list ap)
{
    int max = d->max_errors ? d->max_errors : 50;
    if (kind == DG_ERROR) {
        d->nerrors++;
        if (d->nerrors > max)
            return;
    } else if (d->nerrors > max) {
        return;
    }
    Diag g = {kind, loc, arena_vprintf(d->a, fmt, ap)};
    vec_push(d->a, d->list, g);
}

void diag_verror(Diags *d, Loc loc, const char *fmt, va_list ap) { diag_add(d, DG_ERROR, loc, fmt, ap); }

void diag_error(Diags *d, Loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_add(d, DG_ERROR, loc, fmt, ap);
    va_end(ap);
}

void diag_note(Diags *d, Loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_add(d, DG_NOTE, loc, fmt, ap);
    va_end(ap);
}

/* The text of line `line` of the registered source `file`, or NULL.  The
 * registration whose name is the location's own string comes first: one
 * file may be registered several times with different texts (the Python
 * package adds a helper's own source under its real file name beside the
 * module's), and a location points at the name of the text it came from. */
static const char *source_line(const Diags *d, const char *file, int line, int *len)
{
    if (!file || line < 1)
        return NULL;
    int at = -1;
    for (int i = d->sources.n - 1; i >= 0 && at < 0; i--)
        if (d->sources.v[i].name == file)
            at = i;
    for (int i = d->sources.n - 1; i >= 0; i--) {
        const SourceText *st = &d->sources.v[at >= 0 ? at : i];
        if (at < 0 && strcmp(st->name, file) != 0)
            continue;
        const char *p = st->text;
        for (int l = 1; l < line && p; l++) {
            p = strchr(p, '\n');
            if (p)
                p++;
        }
        if (!p)
            return NULL;
        const char *e = strchr(p, '\n');
        *len = e ? (int)(e - p) : (int)strlen(p);
        if (*len > 0 && p[*len - 1] == '\r')
            (*len)--;
        return p;
    }
    return NULL;
}

const char *diag_render(Diags *d)
{
    Buf b = {.a = d->a};
    for (int i = 0; i < d->list.n; i++) {
        const Diag *g = &d->list.v[i];
        const char *kind = g->kind == DG_ERROR ? "error" : "note";
        if (g->loc.file && g->loc.line > 0)
            buf_printf(&b, "%s:%d:%d: %s: %s\n", g->loc.file, g->loc.line, g->loc.col, kind, g->msg);
        else if (g->loc.file)
            buf_printf(&b, "%s: %s: %s\n", g->loc.file, kind, g->msg);
        else
            buf_printf(&b, "%s: %s\n", kind, g->msg);
        int len = 0;
        const char *line = source_line(d, g->loc.file, g->loc.line, &len);
        if (line) {
            buf_printf(&b, "    %.*s\n    ", len, line);
            for (int c = 1; c < g->loc.col && c <= len; c++)
                buf_putc(&b, line[c - 1] == '\t' ? '\t' : ' ');
            buf_puts(&b, "^\n");
        }
    }
    int max = d->max_errors ? d->max_errors : 50;
    if (d->nerrors > max)
        buf_printf(&b, "(%d more errors not shown)\n", d->nerrors - max);
    return buf_str(&b);
}

char *read_file(Arena *a, const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    Buf b = {.a = a};
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, fp)) > 0) {
        buf_reserve(&b, n);
        memcpy(b.s + b.len, tmp, n);
        b.len += n;
        b.s[b.len] = 0;
    }
    int err = ferror(fp);
    fclose(fp);
    if (err)
        return NULL;
    if (len)
        *len = b.len;
    return b.s ? b.s : arena_strdup(a, "");
}

/* ---- dtypes and types ---- */

static const struct {
    const char *name, *triton;
    int bits;
    bool is_float, is_signed;
} dtype_tab[DT_COUNT] = {
#define X(e, n, b, f, s, t) [e] = {n, t, b, f, s},
    KAD_DTYPES(X)
#undef X
};

const char *dtype_name(Dtype t) { return (unsigned)t < DT_COUNT ? dtype_tab[t].name : "?"; }
const char *dtype_triton_name(Dtype t) { return (unsigned)t < DT_COUNT ? dtype_tab[t].triton : "?"; }
int dtype_bits(Dtype t) { return dtype_tab[t].bits; }
int dtype_bytes(Dtype t) { return t == DT_I1 ? 1 : dtype_tab[t].bits / 8; }
bool dtype_is_float(Dtype t) { return dtype_tab[t].is_float; }
bool dtype_is_int(Dtype t) { return t != DT_VOID && t != DT_PTR && !dtype_tab[t].is_float; }
bool dtype_is_signed(Dtype t) { return dtype_tab[t].is_signed; }
bool dtype_is_fp8(Dtype t) { return t == DT_F8E5 || t == DT_F8E4NV || t == DT_F8E4B15; }

/* Round-to-nearest-even of x to a binary format with p significant bits,
 * minimum normal exponent emin (subnormals below it) and largest finite
 * value maxf; values rounding beyond maxf become infinities.  Scaling by
 * powers of two is exact, so the one rounding is nearbyint's (round-half-
 * even in the default rounding mode). */
static double round_format(double x, int p, int emin, double maxf)
{
    double ax = fabs(x);
    if (!(ax > 0) || ax == INFINITY)
        return x; /* zeros, NaN, infinities */
    int e;
    frexp(ax, &e); /* ax in [2^(e-1), 2^e): the ulp is 2^(e-p) */
    int qe = e - p;
    if (qe < emin - p + 1)
        qe = emin - p + 1; /* subnormal: fixed quantum */
    double q = ldexp(nearbyint(ldexp(ax, -qe)), qe);
    if (q > maxf)
        q = INFINITY;
    return copysign(q, x);
}

/* fp8e5 and fp8e4nv as Triton converts fp32, fp16 and bf16 to them on
 * NVIDIA GPUs (sm_89 and later: cvt.rn.satfinite): round-to-nearest-even,
 * magnitudes beyond the largest finite value (57344, 448) and infinities
 * saturate to it, NaN stays NaN.  p, emin, maxf as round_format's. */
static double round_satfinite(double x, int p, int emin, double maxf)
{
    if (isnan(x))
        return x;
    if (fabs(x) >= maxf)
        return copysign(maxf, x);
    double q = round_format(x, p, emin, INFINITY);
    return fabs(q) > maxf ? copysign(maxf, x) : q;
}

/* fp8e4b15 (4 exponent bits, bias 15, 3 mantissa bits, no infinities or
 * NaNs) as Triton's NVIDIA backend converts to it (convert_custom_float8 in
 * triton/language/extra/cuda/utils.py): fp32 to fp16 rounding toward zero,
 * the magnitude clamped to 1.75 (min.f16x2, which maps NaN to 1.75 too), then
 * the fp16 bit pattern rounded to 3 mantissa bits with ties away from zero
 * (bits + 0x40 >> 7). */
static double round_e4b15(double x)
{
    double ax = fabs(x);
    if (isnan(x) || ax >= 1.75)
        return copysign(1.75, x);
    if (!(ax > 0))
        return x;
    int e;
    frexp(ax, &e);
    int qe = e - 11 < -24 ? -24 : e - 11; /* fp16's quantum */
    double t = ldexp(trunc(ldexp(ax, -qe)), qe);
    if (!(t > 0))
        return copysign(0.0, x);
    frexp(t, &e);
    qe = e - 4 < -17 ? -17 : e - 4; /* fp8e4b15's quantum */
    double q = ldexp(floor(ldexp(t, -qe) + 0.5), qe);
    return copysign(q, x);
}

/* The constant folder (pass.c), sema and the interpreter all round here,
 * so that a folded constant equals what running the op would give. */
double dtype_round(Dtype t, double x)
{
    switch (t) {
    case DT_F32: return (double)(float)x; /* C's conversion: one correct rounding */
    case DT_F16: return round_format(x, 11, -14, 65504.0);
    case DT_BF16: return round_format(x, 8, -126, 0x1.fep127); /* (2 - 2^-7) * 2^127 */
    case DT_F8E5: return round_satfinite(x, 3, -14, 57344.0);
    case DT_F8E4NV: return round_satfinite(x, 4, -6, 448.0);
    case DT_F8E4B15: return round_e4b15(x);
    default: return x;
    }
}

/* Exponent bias and mantissa bits of the fp8 formats. */
static void fp8_format(Dtype t, int *bias, int *mbits)
{
    *mbits = t == DT_F8E5 ? 2 : 3;
    *bias = t == DT_F8E4NV ? 7 : 15;
}

double fp8_decode(Dtype t, uint8_t b)
{
    int bias, mbits;
    fp8_format(t, &bias, &mbits);
    int ebits = 7 - mbits;
    int ex = (b >> mbits) & ((1 << ebits) - 1), m = b & ((1 << mbits) - 1);
    double sign = b & 0x80 ? -1.0 : 1.0;
    if (t == DT_F8E5 && ex == 31)
        return m ? NAN : sign * INFINITY;
    if (t == DT_F8E4NV && ex == 15 && m == 7)
        return NAN;
    if (ex == 0)
        return sign * ldexp(m, 1 - bias - mbits);
    return sign * ldexp(m + (1 << mbits), ex - bias - mbits);
}

uint8_t fp8_encode(Dtype t, double x)
{
    int bias, mbits;
    fp8_format(t, &bias, &mbits);
    x = dtype_round(t, x);
    if (isnan(x))
        return 0x7f; /* e5's and e4nv's NaN; e4b15 has none (rounding maps NaN to 1.75) */
    uint8_t sign = signbit(x) ? 0x80 : 0;
    double ax = fabs(x);
    if (ax == INFINITY)
        return sign | 0x7c; /* e5 only: the others saturate */
    if (ax == 0)
        return sign;
    int e;
    frexp(ax, &e); /* ax in [2^(e-1), 2^e) */
    int ex = e - 1 + bias;
    if (ex <= 0) /* subnormal */
        return sign | (uint8_t)(ax / ldexp(1.0, 1 - bias - mbits));
    int m = (int)(ldexp(ax, mbits - (e - 1)) - (1 << mbits));
    return sign | (uint8_t)(ex << mbits) | (uint8_t)m;
}

int64_t dtype_wrap(Dtype t, uint64_t x)
{
    int bits = dtype_bits(t);
    if (bits >= 64)
        return (int64_t)x;
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    x &= mask;
    if (dtype_is_signed(t) && (x >> (bits - 1)) & 1)
        x |= ~mask;
    return (int64_t)x;
}

Dtype dtype_parse(const char *s, size_t n)
{
    for (int t = 1; t < DT_COUNT; t++)
        if (strlen(dtype_tab[t].name) == n && memcmp(dtype_tab[t].name, s, n) == 0)
            return (Dtype)t;
    return DT_VOID;
}

Type type_tile(Dtype dt, int rank, const int32_t *shape)
{
    Type t = {0};
    ASSERT(rank >= 0 && rank <= KAD_MAX_RANK);
    t.dt = (uint8_t)dt;
    t.rank = (uint8_t)rank;
    for (int i = 0; i < rank; i++)
        t.shape[i] = shape[i];
    return t;
}

Type type_scalar(Dtype dt) { return type_tile(dt, 0, NULL); }

Type type_ptr(Dtype elem, int rank, const int32_t *shape)
{
    Type t = type_tile(DT_PTR, rank, shape);
    t.elem = (uint8_t)elem;
    return t;
}

Type type_with_dtype(Type t, Dtype dt)
{
    t.dt = (uint8_t)dt;
    t.elem = DT_VOID;
    return t;
}

Type type_with_shape(Type t, int rank, const int32_t *shape)
{
    Type r = type_tile((Dtype)t.dt, rank, shape);
    r.elem = t.elem;
    return r;
}

bool type_same_shape(Type a, Type b)
{
    if (a.rank != b.rank)
        return false;
    for (int i = 0; i < a.rank; i++)
        if (a.shape[i] != b.shape[i])
            return false;
    return true;
}

bool type_eq(Type a, Type b) { return a.dt == b.dt && a.elem == b.elem && type_same_shape(a, b); }

int64_t type_numel(Type t)
{
    int64_t n = 1;
    for (int i = 0; i < t.rank; i++)
        n *= t.shape[i];
    return n;
}

void type_print(Buf *b, Type t)
{
    if (t.dt == DT_PTR)
        buf_printf(b, "*%s", dtype_name((Dtype)t.elem));
    else
        buf_puts(b, dtype_name((Dtype)t.dt));
    if (t.rank > 0) {
        buf_putc(b, '[');
        for (int i = 0; i < t.rank; i++)
            buf_printf(b, i ? ",%d" : "%d", (int)t.shape[i]);
        buf_putc(b, ']');
    }
}
