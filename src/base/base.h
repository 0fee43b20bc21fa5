/* base.h -- the base stage (util.c): arenas, growable arrays, string
 * buffers, locations and diagnostics, internal errors (die, ASSERT),
 * reading a file; and the dtypes and tile types (Dtype, Type), which every
 * later stage shares and util.c implements.
 *
 * Included by every stage (it includes no other header of kad).
 *
 * Memory: everything of one compilation lives in one Arena; nothing is
 * freed piecemeal.  Errors in user input go to a Diags sink with a Loc;
 * library code never prints and never exits.  Internal invariant failures
 * use ASSERT/die (checked builds), which abort: they are kad bugs.
 */
#ifndef KAD_BASE_H
#define KAD_BASE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>


#define KAD_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------ */
/* util.c: arenas, growable arrays, string buffers, diagnostics        */
/* ------------------------------------------------------------------ */

/* A source location.  line and col are 1-based; col counts bytes. */
typedef struct Loc {
    const char *file; /* file name as given (owned by the arena) */
    int line, col;
} Loc;

/* Internal errors (kad bugs, not user errors): abort with file:line. */
_Noreturn void die_(const char *file, int line, const char *fmt, ...);
#define die(...) die_(__FILE__, __LINE__, __VA_ARGS__)
#ifdef KAD_CHECKED
#define ASSERT(c) ((c) ? (void)0 : die("assertion failed: %s", #c))
#else
#define ASSERT(c) ((void)sizeof(c)) /* unevaluated: the operands count as used */
#endif

/* Arena: a bump allocator owning all memory of one compilation or run.
 * arena_alloc returns zeroed memory.  When the arena's byte limit is
 * exceeded (or malloc fails) it longjmps to *oom if set, else dies. */
typedef struct Arena Arena;
Arena *arena_new(size_t limit); /* limit 0: no limit.  NULL if malloc fails */
void arena_free(Arena *a);
void arena_set_oom(Arena *a, jmp_buf *oom); /* where to jump on exhaustion */
void *arena_alloc(Arena *a, size_t n);
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...);
char *arena_vprintf(Arena *a, const char *fmt, va_list ap);
size_t arena_used(const Arena *a);

/* Growable array in an arena: Vec(T) v = {0}; vec_push(a, v, x); v.v[i], v.n */
#define Vec(T) struct { T *v; int n, cap; }
void vec_grow_(Arena *a, void **data, int *cap, size_t elem, int need);
#define vec_reserve(a, vec, need) \
    ((need) > (vec).cap ? vec_grow_((a), (void **)&(vec).v, &(vec).cap, sizeof *(vec).v, (need)) : (void)0)
#define vec_push(a, vec, x) \
    (vec_reserve((a), (vec), (vec).n + 1), (vec).v[(vec).n++] = (x))

/* A growing string. */
typedef struct Buf {
    Arena *a;
    char *s; /* always NUL-terminated once anything was written */
    size_t len, cap;
} Buf;
void buf_puts(Buf *b, const char *s);
void buf_putc(Buf *b, char c);
void buf_printf(Buf *b, const char *fmt, ...);
const char *buf_str(Buf *b); /* "" when empty */

/* Diagnostics.  Messages are rendered as
 *   file:line:col: error: message
 *       <the source line>
 *       ^
 * when the file's text is registered (diag_add_source). */
typedef enum DiagKind { DG_ERROR, DG_NOTE } DiagKind;
typedef struct Diag {
    DiagKind kind;
    Loc loc;
    char *msg;
} Diag;
typedef struct SourceText {
    const char *name, *text;
} SourceText;
typedef struct Diags {
    Arena *a;
    Vec(Diag) list;
    Vec(SourceText) sources;
    int nerrors;
    int max_errors; /* stop recording after this many (0: 50) */
} Diags;
void diag_init(Diags *d, Arena *a);
void diag_add_source(Diags *d, const char *name, const char *text);
void diag_error(Diags *d, Loc loc, const char *fmt, ...);
void diag_verror(Diags *d, Loc loc, const char *fmt, va_list ap);
void diag_note(Diags *d, Loc loc, const char *fmt, ...);
const char *diag_render(Diags *d); /* all diagnostics, in order */

/* Reads a whole file (NULL on error). */
char *read_file(Arena *a, const char *path, size_t *len);

/* ------------------------------------------------------------------ */
/* Types: dtypes and tile types                                        */
/* ------------------------------------------------------------------ */

/*      enum      name    bits float signed  triton name */
#define KAD_DTYPES(X) \
    X(DT_VOID, "void",  0, 0, 0, "void")       \
    X(DT_I1,   "i1",    1, 0, 0, "int1")       \
    X(DT_I8,   "i8",    8, 0, 1, "int8")       \
    X(DT_U8,   "u8",    8, 0, 0, "uint8")      \
    X(DT_I16,  "i16",  16, 0, 1, "int16")      \
    X(DT_U16,  "u16",  16, 0, 0, "uint16")     \
    X(DT_I32,  "i32",  32, 0, 1, "int32")      \
    X(DT_U32,  "u32",  32, 0, 0, "uint32")     \
    X(DT_I64,  "i64",  64, 0, 1, "int64")      \
    X(DT_U64,  "u64",  64, 0, 0, "uint64")     \
    X(DT_F16,  "fp16", 16, 1, 1, "float16")    \
    X(DT_BF16, "bf16", 16, 1, 1, "bfloat16")   \
    X(DT_F32,  "fp32", 32, 1, 1, "float32")    \
    X(DT_F64,  "fp64", 64, 1, 1, "float64")    \
    X(DT_F8E5,    "fp8e5",    8, 1, 1, "float8e5")    \
    X(DT_F8E4NV,  "fp8e4nv",  8, 1, 1, "float8e4nv")  \
    X(DT_F8E4B15, "fp8e4b15", 8, 1, 1, "float8e4b15") \
    X(DT_PTR,  "ptr",  64, 0, 0, "pointer")

typedef enum Dtype {
#define X(e, n, b, f, s, t) e,
    KAD_DTYPES(X)
#undef X
    DT_COUNT
} Dtype;

const char *dtype_name(Dtype t);        /* "fp32" */
const char *dtype_triton_name(Dtype t); /* "float32" */
int dtype_bits(Dtype t);
int dtype_bytes(Dtype t); /* storage size: i1 is 1 byte */
bool dtype_is_float(Dtype t);
bool dtype_is_int(Dtype t); /* i1 included */
bool dtype_is_signed(Dtype t); /* i1 is unsigned (0 or 1), as Triton's int1 */
bool dtype_is_fp8(Dtype t);    /* fp8e5, fp8e4nv, fp8e4b15 */
/* x rounded to float dtype t as storing it in t would (fp32/fp16/bf16:
 * round-to-nearest-even, overflow to inf; fp8 types: as Triton's
 * conversion from fp32 on NVIDIA GPUs, see dtype_round in util.c); x
 * itself for fp64 and others. */
double dtype_round(Dtype t, double x);
/* x reduced to int dtype t with two's-complement wrap-around: sign-extended
 * for signed t, zero-extended for unsigned (u64 as its bit pattern, i1 as
 * x & 1). */
int64_t dtype_wrap(Dtype t, uint64_t x);
Dtype dtype_parse(const char *s, size_t n); /* "fp32", "i32", ...; DT_VOID if unknown */
/* One fp8 element: its value (NaN for e4nv's NaN codes), and the byte of a
 * value already rounded by dtype_round. */
double fp8_decode(Dtype t, uint8_t b);
uint8_t fp8_encode(Dtype t, double x);

#define KAD_MAX_RANK 4

/* The type of an IR value: a dtype (for pointers, also the pointee dtype)
 * and a tile shape.  rank 0 is a scalar.  Dimensions are > 0. */
typedef struct Type {
    uint8_t dt;   /* Dtype */
    uint8_t elem; /* pointee Dtype when dt == DT_PTR, else DT_VOID */
    uint8_t rank;
    int32_t shape[KAD_MAX_RANK];
} Type;

Type type_scalar(Dtype dt);
Type type_ptr(Dtype elem, int rank, const int32_t *shape); /* rank 0: scalar pointer */
Type type_tile(Dtype dt, int rank, const int32_t *shape);
Type type_with_dtype(Type t, Dtype dt); /* same shape, other dtype (not ptr) */
Type type_with_shape(Type t, int rank, const int32_t *shape);
bool type_eq(Type a, Type b);
bool type_same_shape(Type a, Type b);
int64_t type_numel(Type t); /* 1 for scalars */
/* "fp32", "i32[128]", "*fp32[64,64]", "*bf16" */
void type_print(Buf *b, Type t);

#endif
