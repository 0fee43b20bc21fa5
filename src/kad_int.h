/* kad_int.h -- the one internal header of kad.
 *
 * Types shared by the stages, then, under a heading per file, the functions
 * each file exports.  Everything not declared here is static in its file,
 * except what the files of one folder share through its private header
 * (front/front.h, front/cu.h, analysis/access_int.h, ir/ir_int.h, ad/ad.h,
 * emit/emit_grad.h, emit/emit_cuda_int.h; plan/plan.h: the Program).
 *
 * Pipeline (kad.c: kad_specialize):
 *   lex.c      source text -> tokens (INDENT/DEDENT, locations)
 *   parse_py.c tokens -> Module (AST of the Triton subset of Python)
 *              (expressions: parse_expr.c; statements: parse_stmt.c)
 *   ast_dump.c Module -> S-expression text (tests, `kad ast`)
 *   sema.c     Module + kernel name + signature -> Func (typed tile IR):
 *              names, expressions, inlining of helpers
 *   sema_sig.c signature strings; binding the kernel's parameters
 *   sema_stmt.c statements and control flow (if/for/while, early return)
 *   sema_ops.c the value toolkit: SVals, Triton's promotion, emission
 *   sema_const.c constexpr folding and text with Python semantics
 *   sema_operators.c typing and lowering of operators, attributes, conversions
 *   sema_builtins.c tl.*, libdevice and Python builtins, tensor methods
 *              (handlers: sema_memory.c, sema_math.c, sema_shapes.c,
 *              sema_convert.c; the front end's own header: front/front.h)
 *   verify.c   checks a Func (run after every stage in checked builds)
 *   pass.c     IR passes (simplify, ...), by name for `kad opt --pass`
 *   ir.c       IR construction helpers and the printer
 *   irparse.c  textual IR -> Func
 *   interp.c   runs a Func over a grid on host buffers
 *   kad.c      the public API (include/kad.h)
 *   main.c     the `kad` command line
 *
 * Memory: everything of one compilation lives in one Arena (util.c); nothing
 * is freed piecemeal.  Errors in user input go to a Diags sink with a Loc;
 * library code never prints and never exits.  Internal invariant failures
 * use ASSERT/die (checked builds), which abort: they are kad bugs.
 */
#ifndef KAD_INT_H
#define KAD_INT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../include/kad.h"
#include "ir/ops.h"

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
#define ASSERT(c) ((void)0)
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

/* ------------------------------------------------------------------ */
/* lex.c                                                               */
/* ------------------------------------------------------------------ */

/* Token kinds.  Operators and delimiters have one kind each; keywords are
 * TK_NAME tokens (the parser compares the text), except that the parser may
 * use tok_is(). */
#define KAD_TOKENS(X) \
    X(TK_EOF, "end of file") X(TK_NEWLINE, "newline") X(TK_INDENT, "indent") \
    X(TK_DEDENT, "dedent") X(TK_NAME, "name") X(TK_INT, "integer") \
    X(TK_FLOAT, "float") X(TK_STRING, "string") \
    X(TK_LPAREN, "(") X(TK_RPAREN, ")") X(TK_LBRACKET, "[") X(TK_RBRACKET, "]") \
    X(TK_LBRACE, "{") X(TK_RBRACE, "}") X(TK_COMMA, ",") X(TK_COLON, ":") \
    X(TK_SEMI, ";") X(TK_DOT, ".") X(TK_ARROW, "->") X(TK_AT, "@") \
    X(TK_ASSIGN, "=") X(TK_WALRUS, ":=") X(TK_ELLIPSIS, "...") \
    X(TK_PLUS, "+") X(TK_MINUS, "-") X(TK_STAR, "*") X(TK_SLASH, "/") \
    X(TK_DSLASH, "//") X(TK_PERCENT, "%") X(TK_DSTAR, "**") X(TK_AMP, "&") \
    X(TK_PIPE, "|") X(TK_CARET, "^") X(TK_TILDE, "~") X(TK_LSHIFT, "<<") \
    X(TK_RSHIFT, ">>") X(TK_LT, "<") X(TK_LE, "<=") X(TK_GT, ">") \
    X(TK_GE, ">=") X(TK_EQ, "==") X(TK_NE, "!=") \
    X(TK_PLUSEQ, "+=") X(TK_MINUSEQ, "-=") X(TK_STAREQ, "*=") \
    X(TK_SLASHEQ, "/=") X(TK_DSLASHEQ, "//=") X(TK_PERCENTEQ, "%=") \
    X(TK_DSTAREQ, "**=") X(TK_AMPEQ, "&=") X(TK_PIPEEQ, "|=") \
    X(TK_CARETEQ, "^=") X(TK_LSHIFTEQ, "<<=") X(TK_RSHIFTEQ, ">>=") \
    X(TK_ATEQ, "@=")

typedef enum TokKind {
#define X(e, s) e,
    KAD_TOKENS(X)
#undef X
    TK_COUNT
} TokKind;

typedef struct Token {
    TokKind kind;
    Loc loc;
    const char *text; /* points into the source */
    int len;          /* bytes of text */
    int64_t ival;     /* TK_INT */
    bool big;         /* TK_INT does not fit in int64 (ival 0, or INT64_MIN for
                         exactly 2**63 so that -9223372036854775808 parses); the
                         parser reports it in kernel code only: host code may
                         hold such numbers */
    double fval;      /* TK_FLOAT */
    const char *str;  /* TK_STRING: decoded value, NUL-terminated (arena) */
} Token;

const char *tok_kind_name(TokKind k);
/* Tokenizes a whole file.  Inside brackets newlines and indentation are
 * ignored; a final NEWLINE and the closing DEDENTs precede TK_EOF.
 * Lexical errors go to d; the token array is still usable. */
Token *lex(Arena *a, Diags *d, const char *file, const char *text, int *ntok);
/* The text of an f-string's literal part [p, end) of a token's source, as
 * Python reads it: `{{`/`}}` are braces, escapes are decoded unless raw,
 * a backslash before a brace stays.  line and line_start locate p (for
 * errors in escapes, which go to d). */
const char *lex_fstring_text(Arena *a, Diags *d, const char *file, int line, const char *line_start,
                             const char *p, const char *end, bool raw);

/* ------------------------------------------------------------------ */
/* parse_py.c: the AST                                                 */
/* ------------------------------------------------------------------ */

typedef enum ExprKind {
    EX_NAME,      /* name */
    EX_INT,       /* ival */
    EX_FLOAT,     /* fval */
    EX_STR,       /* str */
    EX_BOOL,      /* bval */
    EX_NONE,
    EX_ATTR,      /* attr.value . attr.name */
    EX_CALL,      /* call */
    EX_SUBSCRIPT, /* sub: value[index, ...] */
    EX_SLICE,     /* slice: lo:hi:step, each may be NULL (only inside a subscript) */
    EX_BINOP,     /* bin */
    EX_UNOP,      /* un */
    EX_COMPARE,   /* cmp: first op1 x1 op2 x2 ... (chained) */
    EX_BOOLOP,    /* boolop: x1 and x2 and ... */
    EX_IFEXP,     /* ifexp: then if cond else els */
    EX_TUPLE,     /* seq */
    EX_LIST,      /* seq */
    EX_FSTRING,   /* seq: the parts of f"...", each EX_STR or EX_FORMAT */
    EX_FORMAT,    /* fmt: one replacement field {value!conv:spec} of an f-string */
} ExprKind;

typedef enum BinOp {
    BO_ADD, BO_SUB, BO_MUL, BO_DIV, BO_FLOORDIV, BO_MOD, BO_POW,
    BO_LSHIFT, BO_RSHIFT, BO_BITAND, BO_BITOR, BO_BITXOR, BO_MATMUL
} BinOp;
typedef enum UnOp { UO_NEG, UO_POS, UO_INVERT, UO_NOT } UnOp;
typedef enum CmpOp { CO_LT, CO_LE, CO_GT, CO_GE, CO_EQ, CO_NE, CO_IS, CO_ISNOT, CO_IN, CO_NOTIN } CmpOp;
typedef enum BoolOpKind { BL_AND, BL_OR } BoolOpKind;

typedef struct Expr Expr;
typedef struct Keyword {
    const char *name;
    Expr *value;
    Loc loc;
} Keyword;

struct Expr {
    ExprKind kind;
    Loc loc; /* of the expression's first token; binops, compares, and/or and
                x-if-c-else-y: of the operator; attributes: of the name; calls:
                of the callee (so `x.to(...)` points at `to`); subscripts: `[` */
    union {
        const char *name; /* EX_NAME */
        int64_t ival;     /* EX_INT */
        double fval;      /* EX_FLOAT */
        const char *str;  /* EX_STR (adjacent literals concatenated) */
        bool bval;        /* EX_BOOL */
        struct { Expr *value; const char *name; } attr;
        struct { Expr *func; Expr **args; int nargs; Keyword *kw; int nkw; } call;
        struct { Expr *value; Expr **index; int nindex; } sub; /* x[i, :, None] */
        struct { Expr *lo, *hi, *step; } slice;
        struct { BinOp op; Expr *l, *r; } bin;
        struct { UnOp op; Expr *x; } un;
        struct { Expr *first; CmpOp *ops; Expr **rest; int n; } cmp;
        struct { BoolOpKind op; Expr **xs; int n; } boolop;
        struct { Expr *cond, *then, *els; } ifexp;
        struct { Expr **xs; int n; } seq; /* EX_TUPLE, EX_LIST, EX_FSTRING */
        struct { Expr *value; char conv; const char *spec; } fmt; /* conv: 0, 's', 'r', 'a'; spec: "" if none */
    };
};

typedef struct Stmt Stmt;
typedef struct Stmts {
    Stmt **v;
    int n;
} Stmts;

typedef enum StmtKind {
    ST_EXPR,      /* expr */
    ST_ASSIGN,    /* assign: t1 = t2 = value; targets may be tuples */
    ST_AUGASSIGN, /* aug: target op= value */
    ST_ANNASSIGN, /* ann: target: ann [= value] */
    ST_IF,        /* if_: elif chains nest in els */
    ST_FOR,       /* for_ */
    ST_WHILE,     /* while_ */
    ST_RETURN,    /* expr (NULL for bare return) */
    ST_PASS,
    ST_BREAK,
    ST_CONTINUE,
    ST_ASSERT,    /* assert_ */
    ST_FUNCDEF,   /* nested def: parsed, refused by sema */
} StmtKind;

struct Stmt {
    StmtKind kind;
    Loc loc;
    union {
        Expr *expr;
        struct { Expr **targets; int ntargets; Expr *value; } assign;
        struct { BinOp op; Expr *target; Expr *value; } aug;
        struct { Expr *target; Expr *ann; Expr *value; } ann;
        struct { Expr *cond; Stmts then, els; } if_;
        struct { Expr *target; Expr *iter; Stmts body, orelse; } for_;
        struct { Expr *cond; Stmts body, orelse; } while_;
        struct { Expr *test; Expr *msg; } assert_;
    };
};

typedef struct Param {
    const char *name;
    Expr *ann;  /* annotation or NULL (tl.constexpr marks a constexpr) */
    Expr *dflt; /* default or NULL */
    Loc loc;
} Param;

typedef struct Decorator {
    const char *name; /* dotted name as written: "triton.jit", "jit", "triton.autotune" */
    bool called;      /* written with arguments: @triton.jit(...) (arguments are skipped) */
    Loc loc;
    Expr *arg;        /* @kad.vjp_of(EXPR) / @kad.jvp_of(EXPR): the helper named (custom rules) */
} Decorator;

typedef struct FuncDef {
    const char *name;
    Loc loc;
    Param *params;
    int nparams;
    Stmts body;
    Decorator *decos;
    int ndecos;
    bool is_jit; /* has a decorator resolving to triton.jit */
    Diag *errs;  /* parse errors recorded by parse_module_lazy, reported only */
    int nerrs;   /* when a specialization reaches the function (sema) */
} FuncDef;

/* `import triton.language as tl`      -> alias "tl",       qual "triton.language"
 * `import triton`                     -> alias "triton",   qual "triton"
 * `import triton.language`            -> alias "triton",   qual "triton" (binds the top name)
 * `from triton.language.extra import libdevice` -> alias "libdevice", qual "triton.language.extra.libdevice"
 * `from triton.language.math import rsqrt as r` -> alias "r", qual "triton.language.math.rsqrt" */
typedef struct Import {
    const char *alias, *qual;
    Loc loc;
} Import;

/* Module-level `NAME = expr`, `NAME: ann = expr`. */
typedef struct Global {
    const char *name;
    Expr *value;
    Expr *ann; /* or NULL */
    Loc loc;
} Global;

typedef struct Module {
    const char *file;
    const char *name;      /* dotted module name ("pkg.ops.utils"); the file stem for kad_add_source */
    bool is_pkg;           /* a package's __init__.py: relative imports start at name itself */
    Vec(FuncDef *) funcs;  /* every def at module level that is @triton.jit (or made one by
                              `k = triton.jit(f)`, under both names) */
    Vec(FuncDef *) plain;  /* other module-level defs that parse as the Triton subset */
    Vec(Import) imports;
    Vec(Global) globals;
    Vec(Global) host;      /* values the host set (kad_set_global): they win over the source */
    Vec(Expr *) nondiff;   /* module-level `kad.nondiff(EXPR)` calls (custom rules) */
} Module;

/* Parses a whole file.  Module-level statements that are not imports,
 * simple assignments or @triton.jit functions are skipped.  Returns NULL
 * only if lexing/parsing failed hard; errors go to d. */
Module *parse_module(Arena *a, Diags *d, const char *file, const char *text);
/* Like parse_module, but an error inside a @triton.jit function (its def
 * line included) is recorded on that FuncDef (errs/nerrs) instead of going
 * to d; a def whose body or parameters failed is kept with what parsed.
 * Lexical errors and errors outside jit functions still go to d.  sema
 * reports a function's errors when a kernel reaches it. */
Module *parse_module_lazy(Arena *a, Diags *d, const char *file, const char *text);

/* ------------------------------------------------------------------ */
/* ast_dump.c                                                          */
/* ------------------------------------------------------------------ */

/* Writes the AST in a compact S-expression form (tests, `kad ast`). */
void ast_dump(Buf *b, const Module *m);

/* ------------------------------------------------------------------ */
/* The IR                                                              */
/* ------------------------------------------------------------------ */

typedef enum OpKind {
#define X(e, name, nargs, nres, nreg, pure, ew, diff) e,
    KAD_OPS(X)
#undef X
    OP_COUNT
} OpKind;

typedef struct OpInfo {
    const char *name;
    int nargs, nres, nregions;
    bool pure, elementwise;
    char diff; /* 'D', 'Z', 'M', 'C' as in ops.h */
} OpInfo;
extern const OpInfo op_info[OP_COUNT]; /* constant table, defined in ir.c */
OpKind op_by_name(const char *s, size_t n); /* OP_COUNT if unknown */
/* A float op whose result depends differentiably on its operands ('D' or 'N'). */
static inline bool op_differentiable(int op) { return op_info[op].diff == 'D' || op_info[op].diff == 'N'; }
/* A read-modify-write of memory (ptr, value [, mask] -> the old value): tl.atomic_add and the
 * other atomics.  Only atomic_add is linear in its value; the others are refused where a
 * gradient would flow through them, and dropped from a backward like any scratch write. */
static inline bool op_is_atomic(int op)
{
    return op == OP_ATOMIC_ADD || op == OP_ATOMIC_MAX || op == OP_ATOMIC_MIN || op == OP_ATOMIC_XCHG;
}
/* A write of memory through its first operand: a store or an atomic. */
static inline bool op_writes_memory(int op) { return op == OP_STORE || op_is_atomic(op); }

/* Inst.flags */
enum {
    IF_HAS_MASK = 1 << 0,  /* load/store/atomic_add: a mask operand follows */
    IF_HAS_OTHER = 1 << 1, /* load: an `other` operand follows the mask */
    IF_KEEP_DIMS = 1 << 2, /* reductions */
    IF_REVERSE = 1 << 3,   /* cumsum/cumprod/scan; sort: descending */
    IF_DESC = 1 << 4,      /* load/store: made from a tensor descriptor; its operands follow (ir_desc_at) */
};

/* OP_DOT ival: the forward's input precision. */
typedef enum DotPrec { DP_DEFAULT, DP_TF32, DP_TF32X3, DP_IEEE } DotPrec;

/* Values are indices into Func.vals; 0 means "no value". */
typedef int32_t ValId;

typedef struct Value {
    Type ty;
    const char *name; /* source-name hint ("offs", "acc"), or NULL */
    Loc loc;          /* where it was defined (params: the parameter) */
} Value;

typedef struct Block Block;

/* One instruction.  Results, operands and regions are arena arrays. */
typedef struct Inst {
    uint16_t op;    /* OpKind */
    uint16_t flags; /* IF_* */
    int nargs, nres, nregions;
    ValId *args;
    ValId *res;
    Block **regions;
    int64_t ival;                 /* op-specific integer attribute (see ops.h) */
    double fval;                  /* OP_CONST float value */
    int32_t ints[KAD_MAX_RANK];   /* op-specific list (permute, hints) */
    int nints;
    const char *sattr;            /* op-specific string (assert message) */
    Loc loc;                      /* the source construct it came from */
} Inst;

/* A load or store with IF_DESC came from a tensor descriptor's desc.load /
 * desc.store (in-kernel or host-side).  Its pointer tile and mask stay the
 * semantics (interpreter, access analysis, AD); after them it carries the
 * descriptor as operands, so that emitters can print the access as TMA:
 *     base (scalar pointer), shape[r] (int scalars), strides[r - 1] (int
 *     scalars; the last stride is the constant 1), offsets[r] (i32 scalars)
 * with r the pointer tile's rank (the block shape is the tile's shape).  A
 * load's padding is its `other` operand (a NaN constant: "nan", else "zero").
 * ir_desc_at: the index of the first descriptor operand (base), which is
 * nargs for an access without IF_DESC; ir_desc_rank: r, or 0. */
static inline int ir_desc_at(const Inst *in)
{
    if (!(in->flags & IF_DESC))
        return in->nargs;
    return (in->op == OP_LOAD ? 1 : 2) + !!(in->flags & IF_HAS_MASK) + !!(in->flags & IF_HAS_OTHER);
}
static inline int ir_desc_rank(const Inst *in) { return (in->nargs - ir_desc_at(in)) / 3; }

/* tl.range's scheduling hints on an OP_FOR (nints = 0: none given): ints[LH_*].
 * LH_STAGES and LH_UNROLL hold the value or -1; LH_GIVEN and LH_TRUE are
 * bit sets (LHB_*) of the boolean hints written and of those set to True. */
enum { LH_STAGES, LH_UNROLL, LH_GIVEN, LH_TRUE, LH_N };
enum { LHB_FLATTEN = 1, LHB_WARP_SPECIALIZE = 2, LHB_NO_ACC_MULTI_BUFFER = 4, LHB_DISABLE_LICM = 8 };
/* The hints' names (tl.range keywords) and the bit of each boolean one. */
extern const struct LoopHint { const char *name; int bit; } ir_loop_hints[6];

/* A region: parameters, then instructions; the last instruction of a
 * region of for/if/while-body is OP_YIELD, of a while-cond OP_CONDITION.
 * A region whose parent yields nothing still ends in an empty yield. */
struct Block {
    ValId *params;
    int nparams;
    Vec(Inst) insts;
};

/* A specialized constexpr parameter, kept for printing and emitters. */
typedef struct ConstParam {
    const char *name;
    const char *value; /* as Python would spell it: 1024, 1e-06, True, 'relu', tl.float16 */
    int pos;           /* 1 + its position among all parameters of the kernel's def (runtime
                          and constexpr), set by sema; 0 when unknown (IR read from text,
                          where constexprs are taken to come last).  Memory only: the IR
                          text does not carry it.  The backward module keeps the def's order. */
    bool runtime;      /* a runtime (non-constexpr) parameter that Triton's JIT specializes to a
                          constant: None, or the int 1 (docs/LANGUAGE.md "Signatures").  Callers
                          still pass it: emitted kernels keep it as a plain parameter, launchers
                          pass it among the runtime arguments.  Memory only, like pos. */
} ConstParam;

/* A host-side tensor descriptor parameter (triton.tools.tensor_descriptor.
 * TensorDescriptor, signature `tensordesc<fp32[64, 64]>`): the kernel
 * takes it expanded, as params[param .. param + 2*rank): the base pointer
 * (named like the parameter), `<name>_shape_<k>` (i32) per dimension,
 * `<name>_stride_<k>` (i64) per dimension but the last (the constant 1).
 * Launchers expand a TensorDescriptor object there.  Memory only, like
 * ConstParam.pos: the IR text does not carry it. */
typedef struct FuncDesc {
    const char *name;
    int param;
    int rank;
    int64_t block[KAD_MAX_RANK];
    bool nan;
} FuncDesc;

/* A runtime int parameter the kernel is specialized to see in [lo, hi]
 * (signature `n=i32[1:4096]`, IR `%n: i32 in [1, 4096]`): sema runs the
 * `range` loops whose trip count that fixes at 0 or 1 as straight-line
 * code; launchers and the interpreter refuse a value outside.  param: an
 * index into Func.params (a backward's and a jvp's first parameters are
 * the forward's, in order, so the index holds there too). */
typedef struct ParamRange {
    int param;
    int64_t lo, hi;
} ParamRange;
/* A runtime int parameter that bounds a `range(start, n, step)` loop with
 * constant start and step > 0 (sema, of a kernel specialized without a
 * range for it): for n in [lo, hi] = [start + 1, start + step] the loop
 * runs once, and a signature with `n=i32[lo:hi]` makes it straight-line
 * code (kad_kernel_range_hints).  Memory only. */
typedef struct RangeHint {
    const char *name;
    int64_t lo, hi;
} RangeHint;

/* A kernel in IR form.
 *
 * Structured control flow:
 *   for:   args = lb, ub, step (same int dtype, scalars), inits...
 *          region 0 params = iv, carried... ; yields the next carried values
 *          results = the carried values after the last iteration
 *          (iterates iv = lb, lb+step, ... while iv < ub for step > 0,
 *           iv > ub for step < 0, like Python's range)
 *   if:    args = cond (i1 scalar); regions then, else, each yielding the
 *          results; results = the yielded values of the taken region
 *   while: args = inits...; region 0 (cond) params = carried, ends in
 *          `condition %c`; region 1 (body) params = carried, yields the
 *          next carried values; results = carried values when %c is false
 * Regions see every value defined before them in enclosing regions. */
typedef struct Func {
    const char *name;
    Arena *a;
    Vec(Value) vals;   /* vals.v[0] is a dummy so that 0 means "none" */
    ValId *params;     /* runtime parameters in signature order (no constexprs) */
    int nparams;
    Vec(ConstParam) consts; /* constexpr parameters in signature order */
    Block *body;       /* params of body are unused (the kernel params live in `params`) */
    Loc loc;
    Vec(FuncDesc) descs; /* host-side tensor descriptor parameters, expanded (sema_sig.c) */
    Vec(ParamRange) ranges; /* runtime int parameters specialized to a range (in the IR text) */
    Vec(RangeHint) hints;   /* loops a range would make straight-line (sema; memory only) */
    Vec(Block *) rules; /* custom adjoint rules (OP_CUSTOM_VJP's ival indexes them): params =
                         * the helper's value arguments, then the result's adjoint; the region
                         * yields one adjoint per float argument.  Values live in vals. */
} Func;

/* A backward as a program: kernels plus host steps (src/plan/plan.h). */
typedef struct Program Program;

/* ------------------------------------------------------------------ */
/* ir.c: construction, printing                                        */
/* ------------------------------------------------------------------ */

Func *ir_func_new(Arena *a, const char *name, Loc loc);
/* Whether in may write memory: a store, an atomic, a barrier, or a region holding one. */
bool ir_inst_writes(const Inst *in);
/* Whether b, or a region nested in it, holds an instruction of kind op. */
bool ir_block_has_op(const Block *b, int op);
/* Whether in takes v as an operand or uses it in one of its regions; whether
 * b (or a region nested in it) uses v. */
bool ir_inst_uses(const Inst *in, ValId v);
bool ir_block_uses(const Block *b, ValId v);
/* def[v] = the instruction defining v, for every result in b and the regions nested in
 * it (def: by ValId, f->vals.n entries; parameters' entries left as they were). */
void ir_index_defs(const Block *b, const Inst **def);
/* A deep copy of f's body, values, parameters, constexprs, ranges and rules, named
 * name, allocated in a; its hints are left empty. */
Func *ir_func_clone(Arena *a, const Func *f, const char *name);
/* The range of runtime parameter index param (Func.ranges), or NULL. */
const ParamRange *ir_param_range(const Func *f, int param);
ValId ir_value_new(Func *f, Type ty, const char *name, Loc loc);
ValId ir_param_add(Func *f, Type ty, const char *name, Loc loc);
Block *ir_block_new(Func *f);
/* b's terminator (its last instruction), or NULL when b is empty. */
const Inst *ir_block_term(const Block *b);
ValId ir_block_param_add(Func *f, Block *b, Type ty, const char *name, Loc loc);
/* Appends an instruction; args copied; nres results created with the given
 * types (may be NULL when nres == 0).  Returns the instruction, valid until
 * the next append to the same block. */
Inst *ir_emit(Func *f, Block *b, OpKind op, const ValId *args, int nargs,
              const Type *res_types, int nres, Loc loc);
/* The instruction of block b (not of its regions) that defines v, or NULL
 * (defined elsewhere).  Valid until the next append to b. */
const Inst *ir_block_def(const Block *b, ValId v);
/* Copies the attributes of src (flags, ival, fval, ints, sattr) onto dst: a copy of an
 * instruction with other operands. */
void ir_inst_copy_attrs(Inst *dst, const Inst *src);
/* A 16-bit float tile widened to fp32, seen through at most one permute
 * (trans): for v = cast(x) or permute(cast(x)) with x bf16 or fp16 and the
 * cast's result fp32, x (and *perm the permute, or NULL); else 0.  def: the
 * defining instructions by ValId (nv entries). */
ValId ir_widened16(const Func *f, const Inst *const *def, int nv, ValId v, const Inst **perm);
/* perm (an instruction of pf) applied to x in f, appended to b: the same
 * permutation with x's dtype; returns its result. */
ValId ir_permute_as(Func *f, Block *b, const Func *pf, const Inst *perm, ValId x);
/* Short forms for single-result ops; return the result. */
ValId ir_op1(Func *f, Block *b, OpKind op, Type ty, ValId x, Loc loc);
ValId ir_op2(Func *f, Block *b, OpKind op, Type ty, ValId x, ValId y, Loc loc);
ValId ir_op3(Func *f, Block *b, OpKind op, Type ty, ValId x, ValId y, ValId z, Loc loc);
ValId ir_const_int(Func *f, Block *b, Type ty, int64_t v, Loc loc);
ValId ir_const_float(Func *f, Block *b, Type ty, double v, Loc loc);
/* Adds a region to inst (a for/if/while being built). */
Block *ir_inst_add_region(Func *f, Inst *inst);
/* Empties b's instruction list and returns its old array (*n entries), for
 * a pass that rebuilds the block from it. */
Inst *ir_block_detach(Block *b, int *n);
static inline Type ir_type(const Func *f, ValId v) { return f->vals.v[v].ty; }

/* The textual form (see docs/IR.md, "Textual IR"):
 *   kernel @name(%x_ptr: *fp32, %n: i32) [BLOCK = 1024] {
 *     %pid = program_id 0 : i32
 *     %offs = arange 0 : i32[1024]
 *     %x = load %p, mask %m, other %o : fp32[1024]
 *     %s = sum %x {axis = 0} : fp32
 *     %r:2 = for %i = %lb to %ub step %st iter_args(%acc = %a0, %k = %k0) -> (fp32[64], i32) { ... yield %a, %b }
 *     %v = if %c -> (fp32[64]) { ... yield %a } else { ... yield %b }
 *     store %p, %v, mask %m
 *   }
 * ir_print writes it; irparse reads it back; print(parse(print(f))) == print(f). */
void ir_print(Buf *b, const Func *f);
char *ir_to_string(Arena *a, const Func *f);
/* A float constant as the printer writes it: the shortest decimal that
 * reads back to x, always a float literal ("1.0", "1e-06", "-inf", "nan"). */
void ir_format_float(Buf *b, double x);
/* "default", "tf32", "tf32x3", "ieee" for a DotPrec. */
const char *ir_dot_prec_name(int prec);
/* The names ir_print gives the values of f (without '%'), by ValId; NULL
 * for values not defined in f.  For messages that name values. */
const char **ir_names(Arena *a, const Func *f);

/* ------------------------------------------------------------------ */
/* irparse.c                                                           */
/* ------------------------------------------------------------------ */

/* Parses one kernel in textual IR.  NULL on error (located in d; file is
 * the name used in locations). */
Func *ir_parse(Arena *a, Diags *d, const char *file, const char *text);

/* ------------------------------------------------------------------ */
/* verify.c                                                            */
/* ------------------------------------------------------------------ */

/* Checks operand counts and types, shapes of elementwise ops, region
 * structure, terminators, yields against results, single definition and
 * dominance.  Problems are reported as errors at the instruction's Loc,
 * prefixed "IR verifier: ".  Returns true when f is valid. */
bool ir_verify(const Func *f, Diags *d);

/* ------------------------------------------------------------------ */
/* pass.c                                                              */
/* ------------------------------------------------------------------ */

/* Runs the named pass on f in place ("simplify", "dce", "verify").
 * Unknown names are an error in d.  Returns false on error. */
bool pass_run(Func *f, const char *name, Diags *d);
/* Dead-code elimination ("dce").  whiles_terminate: the caller knows every
 * `while` of f terminates (a backward kernel recomputing a forward that
 * terminated), so an unused `while` without effects is removed too. */
bool pass_dce(Func *f, bool whiles_terminate);
/* Adjoint dots on 16-bit tiles (a backward's, ad_backward): a dot whose
 * operands are both bf16 (or both fp16) tiles widened to fp32 (directly or
 * through one permute: ir_widened16) and which reads data through params[first..] (the
 * gradients: the recomputed forward's dots keep the author's form) takes
 * the 16-bit tiles as they are.  Exact: a 16-bit float is exactly a TF32
 * (or fp32) value and the products and sums are fp32 either way; it runs at
 * the 16-bit dot rate.  Returns how many dots it changed. */
int pass_narrow_dots(Func *f, int first);

/* ------------------------------------------------------------------ */
/* sema.c                                                              */
/* ------------------------------------------------------------------ */

/* One parameter of a signature string "x_ptr=*fp32,n=i32,BLOCK=1024". */
typedef enum SigKind { SIG_PTR, SIG_SCALAR, SIG_CONST, SIG_TENSORDESC } SigKind;
typedef enum ConstKind { CK_NONE, CK_INT, CK_FLOAT, CK_BOOL, CK_STR, CK_DTYPE } ConstKind;
typedef struct ConstVal {
    ConstKind kind;
    int64_t i;     /* CK_INT, CK_BOOL */
    double f;      /* CK_FLOAT */
    const char *s; /* CK_STR */
    Dtype dt;      /* CK_DTYPE (a pointer: dt = DT_PTR, the pointee in i) */
    /* CK_DTYPE of Triton's block_type (a tile's `x.type`: brank > 0, the
     * shape in bshape, elements dt/i), or with of_block a block pointer's
     * type (pointer_type(block_type(i, bshape)), dt = DT_PTR) */
    int brank;
    bool of_block;
    int32_t bshape[KAD_MAX_RANK];
} ConstVal;
typedef struct SigParam {
    const char *name;
    SigKind kind;
    Dtype dt;       /* SIG_PTR: pointee; SIG_SCALAR: the scalar type; SIG_TENSORDESC: the element type */
    ConstVal value; /* SIG_CONST */
    bool ranged;    /* SIG_SCALAR of an int type written `i32[LO:HI]`: the value lies in [lo, hi] */
    int64_t lo, hi;
    int rank;       /* SIG_TENSORDESC: the block's rank and shape, padding "nan" (else "zero") */
    int64_t block[KAD_MAX_RANK];
    bool nan;
    Loc loc;        /* inside the signature string (file "<sig>") */
} SigParam;
typedef struct Signature {
    Vec(SigParam) params;
} Signature;

/* Parses a signature string; errors located in "<sig>" at column = offset+1. */
bool sig_parse(Arena *a, Diags *d, const char *text, Signature *out);

typedef struct SemaOptions {
    bool unroll_const_loops; /* also unroll `range` loops with constexpr bounds */
} SemaOptions;

/* Specializes kernel `name` (a @triton.jit function of one of mods; helpers
 * may come from any of them; "pkg.mod.kernel" names the module) for sig and
 * lowers it to IR.  NULL on error. */
Func *sema_kernel(Arena *a, Diags *d, Module **mods, int nmods, const char *name,
                  const Signature *sig, const SemaOptions *opt);
/* The absolute dotted name an import's qualified name refers to from module
 * `from` (".utils.exp" in pkg.ops.k -> "pkg.ops.utils.exp"); absolute names
 * are returned as they are; one going above the top package is resolved
 * from the top; NULL for `from . import` of nothing. */
const char *sema_abs_name(Arena *a, const Module *from, const char *qual);

/* ------------------------------------------------------------------ */
/* sema.c and sema_ops.c: the values of specialization                 */
/* ------------------------------------------------------------------ */

/* While specializing, an expression evaluates to an SVal: a compile-time
 * constant (constexpr), a runtime IR value, a tuple, or a name of the
 * triton namespace.  sema.c owns names, statements, control flow and
 * inlining; sema_ops.c owns the typing and lowering of every operation on
 * values (Python operators, tl.* builtins, methods, attributes). */
typedef enum SvKind {
    SV_ERROR,   /* an error was already reported: propagate without new ones */
    SV_NONE,    /* Python None */
    SV_CONST,   /* constexpr: c (int, float, bool, str, dtype) */
    SV_VALUE,   /* runtime IR value: v */
    SV_TUPLE,   /* elts[0..n) */
    SV_SLICE,   /* a full slice `:` inside a subscript */
    SV_MODULE,  /* a namespace: qual ("triton.language", "triton.language.extra.libdevice") */
    SV_BUILTIN, /* a builtin function: qual ("triton.language.exp", "builtins.min", "triton.cdiv") */
    SV_FUNC,    /* a @triton.jit function: fn of module mod */
    SV_METHOD,  /* a bound method: elts[0] is self, qual is the method name ("to", "reshape") */
    SV_BLOCKPTR, /* tl.make_block_ptr's block pointer: elts[BP_*], n = BP_N (see below) */
} SvKind;

/* The parts of an SV_BLOCKPTR.  A block pointer exists only in sema: its
 * loads and stores lower to tiles of pointers and masks (sema_builtins.c),
 * so the IR never holds one.  base: a scalar pointer value; shape and
 * strides: tuples of int constants or i64 scalars; offsets: a tuple of int
 * constants or i32 scalars (what a loop carries, what tl.advance changes);
 * block and order: tuples of int constants. */
enum { BP_BASE, BP_SHAPE, BP_STRIDES, BP_OFFSETS, BP_BLOCK, BP_ORDER, BP_N };

typedef struct SVal {
    SvKind kind;
    ConstVal c;          /* SV_CONST */
    ValId v;             /* SV_VALUE */
    struct SVal *elts;   /* SV_TUPLE, SV_METHOD, SV_BLOCKPTR */
    int n;
    const char *qual;    /* SV_MODULE, SV_BUILTIN, SV_METHOD */
    const FuncDef *fn;   /* SV_FUNC */
    const Module *mod;   /* SV_FUNC; SV_MODULE of an added module (NULL: a triton namespace) */
} SVal;

/* Where lowering emits: sema.c moves b into and out of regions. */
typedef struct Lower {
    Arena *a;
    Diags *d;
    Func *f;
    Block *b;
} Lower;

/* sema_operators.c (lower_global and lower_call: sema_builtins.c) -- every
 * function reports its own errors (at loc) and returns SV_ERROR (or 0 for
 * ValId) after an error; given an SV_ERROR operand it returns SV_ERROR
 * without a new message. */

/* A qualified name of the triton namespace (after import aliases are
 * resolved): dtypes ("triton.language.float32" -> CK_DTYPE), builtin
 * functions (-> SV_BUILTIN), namespaces (-> SV_MODULE). */
SVal lower_global(Lower *L, const char *qual, Loc loc);
/* x.name: value attributes (dtype, shape, T), methods (-> SV_METHOD),
 * members of namespaces (via lower_global), attributes of dtype constants. */
SVal lower_attr(Lower *L, SVal x, const char *name, Loc loc);
/* Calls fn (SV_BUILTIN or SV_METHOD) with positional and keyword arguments.
 * Keyword argument values are already evaluated. */
SVal lower_call(Lower *L, SVal fn, const SVal *args, int nargs, const char *const *kwnames,
                const SVal *kwvals, int nkw, Loc loc);
/* Python operators on constants (Python semantics, folded) and values
 * (Triton semantics: promotion, broadcasting, explicit casts in the IR). */
SVal lower_binop(Lower *L, BinOp op, SVal x, SVal y, Loc loc);
SVal lower_unop(Lower *L, UnOp op, SVal x, Loc loc);
SVal lower_compare(Lower *L, CmpOp op, SVal x, SVal y, Loc loc);
/* `and`/`or` on two already evaluated operands (constexpr: Python value
 * semantics; values: logical and/or of i1 tiles). */
SVal lower_boolop(Lower *L, BoolOpKind op, SVal x, SVal y, Loc loc);
/* x[idx...] with idx elements SV_SLICE (`:`), SV_NONE (new axis) or
 * constant ints on tuples. */
SVal lower_subscript(Lower *L, SVal x, const SVal *idx, int n, Loc loc);
/* Materializes x as an IR value: constants become `const` (Python int ->
 * i32, or i64 when out of i32 range; float -> fp32; bool -> i1). */
ValId lower_value(Lower *L, SVal x, Loc loc);
/* Converts v to type ty: dtype cast, then broadcast of shape (used for
 * loop-carried and if-yielded values).  Reports an error when the shape
 * cannot be broadcast. */
ValId lower_convert(Lower *L, ValId v, Type ty, Loc loc);
/* The truth value of a condition: *is_const with *cval for constexprs,
 * else an i1 scalar IR value (ints/floats compared with 0).  Tiles are an
 * error.  Returns false after an error. */
bool lower_truth(Lower *L, SVal x, bool *is_const, bool *cval, ValId *v, Loc loc);
/* Writes a constant the way Python would print it (for ConstParam). */
const char *const_repr(Arena *a, ConstVal c);
/* Python's format(x, spec) of a constant after the f-string conversion
 * conv (0, 's', 'r', 'a'; dtypes print as Triton's do); NULL with *err
 * when the spec does not apply to the value. */
const char *const_format(Arena *a, ConstVal c, char conv, const char *spec, const char **err);

/* ------------------------------------------------------------------ */
/* sema.c, sema_sig.c and sema_stmt.c: the state of a specialization   */
/* ------------------------------------------------------------------ */

/* sema.c holds the state, names and expressions; sema_stmt.c runs
 * statements and control flow; sema_sig.c parses signatures (sig_parse,
 * above) and binds the kernel's parameters.  Only these three files use
 * what follows. */

typedef struct Binding {
    const char *name;
    SVal val;
} Binding;
/* Names of one scope; each name at most once.  Copied, never shared,
 * between control-flow paths.  Once a scope holds many names, sema_env_set
 * keeps a hash index of them (a long kernel binds thousands); a copy
 * starts without one and builds its own. */
typedef struct Env {
    Binding *v;
    int n, cap;
    int *idx;      /* open addressing: 1 + the index in v of a binding, 0 empty */
    uint32_t mask; /* idx's size - 1 */
    int nidx;      /* the bindings idx holds: v[0..nidx); used only while nidx == n */
} Env;

enum { GS_NEW, GS_BUSY, GS_DONE };
/* The lazily evaluated value of one module global. */
typedef struct GlobalSlot {
    int state; /* GS_* */
    SVal val;
} GlobalSlot;

/* One function being run: the kernel, an inlined helper, or module-level
 * evaluation (globals, defaults: fn == NULL). */
typedef struct Frame {
    const Module *mod;
    const FuncDef *fn;
    bool is_kernel;
    Env env;
    int global_limit; /* only globals with index < limit are visible (-1: all);
                         a global's initializer sees the ones before it */
    int loop_depth;   /* > 0 inside a loop body (IR loop or unrolled) */
    bool done;        /* control left the function: run nothing more */
    bool has_ret;     /* a `return` ran; ret is its value */
    SVal ret;
} Frame;

/* A custom rule for a helper (docs/AD.md "Custom derivatives"): from a
 * `@kad.vjp_of(helper)` / `@kad.jvp_of(helper)` decorator, a
 * `kad.nondiff(helper)` call of any added module, or the helper's name
 * (kad_stop_gradient). */
enum { RULE_VJP, RULE_JVP, RULE_NONDIFF };
typedef struct SemaRule {
    const FuncDef *helper;
    const FuncDef *rule; /* RULE_VJP/RULE_JVP: the rule function, of module rmod */
    const Module *rmod;
    int kind;
} SemaRule;

typedef struct Sema {
    Arena *a;
    Diags *d;
    Lower L;             /* L.b: the block being emitted into */
    Module **mods;
    int nmods;
    GlobalSlot **slots;  /* [module][global] */
    const SemaOptions *opt;
    Frame *fr;           /* the current frame */
    int depth;           /* helper inlining depth */
    bool recursed;       /* the depth limit was hit: only the outermost call gets a note */
    int resolving;       /* depth of names resolved through other modules (import cycles) */
    Block *scratch;      /* for module-level evaluation: IR emitted here is dropped */
    Vec(SemaRule) rules; /* custom rules of the added modules, resolved by sema_kernel */
} Sema;

/* The value of an import's qualified name q (absolute, or relative to
 * module `from`): a triton name, an added module, or what a name inside one
 * is bound to.  alias names the binding in messages. */
SVal sema_resolve_qual(Sema *S, const Module *from, const char *q, const char *alias, Loc loc);

/* The rest of a statement list (and of the lists enclosing it, in one
 * function), run after an `if` that may return: see sema_stmt.c's header
 * comment. */
typedef struct Cont {
    const Stmts *s;
    int from;
    const struct Cont *next;
} Cont;

/* sema.c: values, environments, names, expressions. */
bool sval_has_value(SVal x); /* a runtime value anywhere (so not a constexpr) */
const char *sema_type_str(Sema *S, Type t);
/* What x is, for messages: "None", "the constant 0.5", "a value of type fp32[64]". */
const char *sema_describe(Sema *S, SVal x);
Binding *sema_env_find(const Env *e, const char *name);
void sema_env_set(Arena *a, Env *e, const char *name, SVal v);
Env sema_env_copy(Arena *a, const Env *e);
/* Gives an unnamed runtime value the variable's name as its print hint. */
void sema_name_value(Sema *S, SVal v, const char *name);
/* Binds name in the current frame (naming the value). */
void sema_bind(Sema *S, const char *name, SVal v);
bool sema_in_list(const char *const *list, const char *s); /* list ends in NULL */
/* The qualified name an attribute chain resolves to without evaluating it
 * ("tl.static_range" -> "triton.language.static_range"), or NULL when its
 * root is a variable, a global or a helper. */
const char *sema_qual_of(Sema *S, const Module *m, const Env *env, const Expr *e);
/* Whether a parameter annotation says tl.constexpr. */
bool sema_is_constexpr_ann(Sema *S, const Module *m, const Expr *ann);
/* Which loop iterator a qualified name is: 0 none, else RK_*. */
enum { RK_NONE, RK_RANGE, RK_TL_RANGE, RK_STATIC };
int sema_range_kind(const char *q);
const char *sema_range_name(int rk); /* "range", "tl.range", "tl.static_range" */
/* e as a compile-time constant in module m's scope; `what` names it in
 * the error when it is not one.  No IR reaches the kernel. */
SVal sema_eval_module_const(Sema *S, const Module *m, const Expr *e, int global_limit, const char *what);
/* Name lookup: locals of the frame, module globals, imports, @triton.jit
 * functions of the module, Python builtins. */
SVal sema_lookup(Sema *S, const char *name, Loc loc);
SVal sema_eval_expr(Sema *S, const Expr *e);

/* sema_stmt.c: runs s[from..] and then the continuation k, until the
 * function is done; `a if c else b`. */
void sema_exec_list(Sema *S, const Stmts *s, int from, const Cont *k);
SVal sema_eval_ifexp(Sema *S, const Expr *e);

/* sema_sig.c: binds the kernel's parameters from the signature: runtime
 * ones become Func params (source order), constexpr ones constants
 * (Func.consts). */
void sema_bind_kernel_params(Sema *S, const Module *m, const FuncDef *fn, const Signature *sig);

/* ------------------------------------------------------------------ */
/* sema_ops.c and sema_builtins.c                                      */
/* ------------------------------------------------------------------ */

/* What the builtins (sema_builtins.c) lower their calls with: sema_ops.c's
 * values, Triton's promotion and broadcasting, emission.  The ops_*
 * functions report their own errors like the lower_* ones above. */

/* SVal construction; sval_value(0) (a failed lowering) is SV_ERROR. */
SVal sval_error(void);
SVal sval_none(void);
SVal sval_value(ValId v);
SVal sval_int(int64_t i);
SVal sval_float(double f);
SVal sval_bool(bool b);
SVal sval_dtype(Dtype dt);
SVal sval_tuple(Lower *L, const SVal *elts, int n);
bool sval_is_none(SVal x); /* None, as SV_NONE or as a constant */
bool sval_is_num(SVal x);  /* a constexpr int, float or bool */
bool sval_is_int(SVal x);  /* a constexpr int or bool */
bool sval_truthy(SVal x);  /* Python truthiness of a non-value */
bool const_truthy(ConstVal c);
double const_as_double(ConstVal c); /* of a number */

/* Messages: a type, a shape "[64,32]", an operand in the user's terms. */
Type ops_type(Lower *L, ValId v);
const char *ops_tystr(Lower *L, Type t);
const char *ops_shapestr(Lower *L, int rank, const int32_t *shape);
const char *ops_describe(Lower *L, SVal x);
/* Reports an error at loc; returns SV_ERROR. */
SVal ops_fail(Lower *L, Loc loc, const char *fmt, ...);
/* "integer overflow in constexpr 'op'". */
SVal ops_overflow(Lower *L, const char *op, Loc loc);
/* Triton's signedness: int1 counts as unsigned. */
bool ops_unsigned(Dtype d);

/* Emission into L->b.  ops_emit_attr: one operand (or none: x = 0) and an
 * integer attribute (ival) and flags.  ops_emit_const: the constant c as
 * type ty (reports a float that does not fit an integer dtype). */
ValId ops_emit1(Lower *L, OpKind op, Type ty, ValId x, Loc loc);
ValId ops_emit2(Lower *L, OpKind op, Type ty, ValId x, ValId y, Loc loc);
ValId ops_emit_attr(Lower *L, OpKind op, Type ty, ValId x, int64_t ival, int flags, Loc loc);
ValId ops_emit_const(Lower *L, ConstVal c, Type ty, Loc loc);
ValId ops_emit_zero(Lower *L, Type ty, Loc loc);
/* v as dtype dt (not pointers; to i1 is `ne 0`); v itself if it has dt. */
ValId ops_cast(Lower *L, ValId v, Dtype dt, Loc loc);
/* The numpy broadcast of two shapes into out (rank *rank); false if they
 * do not broadcast. */
bool ops_bcast_shape(int ra, const int32_t *a, int rb, const int32_t *b, int *rank, int32_t *out);
/* v broadcast to a shape the caller checked (expand_dims, broadcast). */
ValId ops_bcast_to(Lower *L, ValId v, int rank, const int32_t *shape, Loc loc);
/* v with a size-1 axis inserted at axis; v with its axes permuted (axis i
 * of the result is axis perm[i] of v).  The caller checked the arguments. */
ValId ops_expand_dims(Lower *L, ValId v, int axis, Loc loc);
ValId ops_permute(Lower *L, ValId v, const int32_t *perm, Loc loc);
/* A comparison of two constexprs, folded with Python semantics. */
SVal ops_fold_compare(Lower *L, CmpOp op, SVal x, SVal y, Loc loc);

/* An operand of a Triton operation: a Python number not yet materialized,
 * or a runtime value. */
typedef struct Opnd {
    bool is_const; /* a Python number, not yet materialized */
    bool weak;     /* takes part in promotion as a Python scalar */
    ConstVal c;
    ValId v;
    Type ty;       /* for constants: Triton's to_tensor type, rank 0 */
} Opnd;
/* x as an operand (weak: a number is weakly typed); anything but a number
 * or a value is an error naming ctx ("'+'", "tl.where"). */
bool ops_opnd(Lower *L, SVal x, bool weak, Opnd *o, const char *ctx, Loc loc);
/* Two operands; two numbers are both converted to tensors (not weak). */
bool ops_opnd_pair(Lower *L, SVal x, SVal y, bool weak, Opnd *a, Opnd *b, const char *ctx, Loc loc);
/* o as dtype dt (DT_PTR: o's own pointer type) broadcast to the shape. */
ValId ops_materialize(Lower *L, const Opnd *o, Dtype dt, int rank, const int32_t *shape, Loc loc);
/* The common dtype of two numeric operands (Triton's
 * binary_op_type_checking_impl); DT_VOID after an error. */
Dtype ops_unify_dtype(Lower *L, const Opnd *a, const Opnd *b, bool divmod, const char *op, Loc loc);
/* Two operands at their common dtype and broadcast shape, materialized. */
bool ops_unify2(Lower *L, SVal x, SVal y, bool weak, bool divmod, const char *op, Loc loc, ValId *vx,
                ValId *vy);

/* sema_builtins.c: how messages show a qualified name ("tl.exp",
 * "libdevice.pow"); whether x.name is a tensor method kad lowers. */
const char *builtin_user_name(Arena *a, const char *qual);
/* Triton's other spellings of a qualified name ("triton.language.core.cast")
 * as the one kad's tables use ("triton.language.cast"); NULL for a name
 * the module does not export (sema_builtins.c). */
const char *builtin_canonical(Arena *a, const char *qual, const char **mod, const char **name);
bool builtin_is_method(const char *name);
/* Whether x is tl.make_tensor_descriptor's descriptor (an SV_BLOCKPTR). */
bool sval_is_tensor_desc(SVal x);
/* A host-side descriptor parameter's descriptor (Func.descs): base a
 * scalar pointer, shape[rank] i32 scalars, strides[rank - 1] i64 scalars
 * (the last stride is the constant 1), block the signature's block shape. */
SVal sval_host_tensor_desc(Lower *L, ValId base, const ValId *shape, const ValId *strides, const int64_t *block,
                           int rank, bool nan);
/* The names of triton.language kad knows (`kad builtins`), one per line:
 * "NAME supported|refused AD", AD the IR op's AD class from ops.h ('D', 'N',
 * 'Z') for builtins that lower to one op, else '-'.  Names not listed are
 * refused as unknown ("'tl.X' is not supported by kad yet"). */
void builtin_surface(Buf *b);

/* ------------------------------------------------------------------ */
/* access.c (forms), access_decide.c, access_disjoint.c (decisions),  */
/* access_report.c (conditions printed and evaluated, the report):    */
/* affine access analysis (see docs/AD.md, "Access analysis")         */
/* ------------------------------------------------------------------ */

/* A polynomial over symbols with integer coefficients: sum of k * s1*s2*s3.
 * Symbols are integer scalars the launch fixes: runtime int parameters,
 * tl.num_programs(axis), and values kad cannot express otherwise (named in
 * messages by their IR name).  Symbol ids are >= 1; 0 pads a monomial. */
#define ACC_NSYM 3
#define ACC_NMONO 8
typedef struct AccMono {
    int64_t k;
    int32_t s[ACC_NSYM]; /* sorted descending, 0 = none */
} AccMono;
typedef struct AccPoly {
    int n;
    AccMono m[ACC_NMONO];
} AccPoly;
/* A runtime condition in conjunctive form: every clause holds, a clause
 * holds when one of its polynomials is >= 0. */
#define ACC_NALT 4
#define ACC_NCLAUSE 8
typedef struct AccClause {
    int n;
    AccPoly p[ACC_NALT];
} AccClause;
typedef struct AccCond {
    int n;
    AccClause c[ACC_NCLAUSE];
} AccCond;
typedef Vec(const AccCond *) AccCondVec; /* a conjunction of conditions */

typedef enum AccVerdict {
    ACC_PROVEN,        /* injective / disjoint for every launch */
    ACC_PROVEN_IF,     /* ... whenever cond holds (a check over scalar params) */
    ACC_NOT_INJECTIVE, /* two points of the domain reach one element (why: a witness) */
    ACC_UNKNOWN,       /* kad cannot tell (why: the reason) */
} AccVerdict;
typedef struct AccResult {
    AccVerdict v;
    const char *why;     /* NOT_INJECTIVE, UNKNOWN: the reason; else NULL */
    const AccCond *cond; /* PROVEN_IF: the condition (arena); else NULL */
} AccResult;

/* What a query lets vary; what stays fixed is one unknown value.  The
 * lanes of the tile are those the access's mask (and enclosing `if`s, loop
 * bounds) enable. */
enum {
    ACC_VARY_PIDS = 1,   /* tl.program_id of every axis */
    ACC_VARY_LOOPS = 2,  /* the iterations of every loop enclosing the access */
    ACC_VARY_LANES = 4,  /* the lanes of the tile */
    ACC_SKIP_UNUSED_LANES = 8, /* lanes the address does not depend on are not varied
                                  (several lanes writing one element in one iteration
                                  is then allowed: "distinct iterations write distinct
                                  elements") */
};

/* The analysis of one Func: every load, store and atomic_add's address as
 * a base parameter plus an affine form over program ids, loop iterations,
 * lanes, and quasi-affine // and % terms, with symbolic coefficients.  f
 * must stay unchanged while the Access is used. */
typedef struct Access Access;
Access *access_analyze(Arena *a, const Func *f);
/* The memory instructions of f in program order (load, store, atomic_add). */
int access_count(const Access *A);
const Inst *access_inst(const Access *A, int i);
/* The pointer parameter an access goes through (index into f->params), or
 * -1 when its address is not an affine form over one parameter. */
int access_base(Access *A, const Inst *mem);
/* The parameters (indices < nparams) the accesses of A's function go through: w[p]
 * set for those its stores and atomic_adds write through, r[p] (unless r is NULL:
 * loads not asked about) for those its loads read through; accesses whose sattr is
 * skip (unless NULL) are left out.  False when an access has no base parameter
 * among them (the others are still marked). */
bool access_params(Access *A, int nparams, uint8_t *w, uint8_t *r, const char *skip);
/* Is (program ids, loop iterations, enabled lanes) -> element injective,
 * over what `vary` (ACC_VARY_*) lets vary? */
AccResult access_injective(Access *A, const Inst *mem, int vary);
/* The grid axes (bit k: axis k) the address provably does not depend on:
 * every program along such an axis touches the same elements (a weight
 * read by every row program), so its gradient collides across that axis.
 * Returns false when the address is unknown. */
bool access_pid_independent(Access *A, const Inst *mem, unsigned *axes);
/* mem's address as base parameter (*base, an index into f->params) + c0 +
 * sum_k pid[k] * tl.program_id(k) + terms over the tile's lanes only; false
 * when it is unknown or has a loop, `//` or `%` term (write/gather.c). */
bool access_pid_form(Access *A, const Inst *mem, int *base, AccPoly *c0, AccPoly pid[3]);
/* Do two accesses through one base parameter, in one program and one
 * iteration of their common loops, touch disjoint elements (on the lanes
 * their masks enable)?  (Two halves of a row through two tl.store sites.) */
AccResult access_disjoint(Access *A, const Inst *x, const Inst *y);
/* The same over every iteration of every loop enclosing either access
 * (one program; a loop enclosing both varies on its own for each): two
 * sites in loops never write one element (a reverse tile walk's masked
 * first tile and its loop). */
AccResult access_disjoint_all(Access *A, const Inst *x, const Inst *y);
/* The condition as a Python / Triton expression over the kernel's
 * parameter names (`stride >= n_cols`, `tl.num_programs(0) * s >= 1`);
 * NULL when it names a value that is not a parameter. */
const char *access_cond_python(Access *A, const AccCond *c);
/* Evaluates the condition for runtime values of the int parameters (by
 * index into f->params; others ignored) and the grid.  False when it names
 * a value not computed from int parameters, constants and num_programs by
 * + - * // %; else *holds is set. */
bool access_cond_eval(Access *A, const AccCond *c, const int64_t *params, const int64_t grid[3],
                      bool *holds);
/* A report of every access (form, constraints, verdicts): `kad access`. */
const char *access_report(Access *A);
/* What symbol id (>= 1, as in AccMono.s) stands for: 1 and *param (index
 * into f->params) for an int parameter, 2 and *axis for
 * tl.num_programs(axis), 0 for anything else. */
int access_sym(Access *A, int id, int *param, int *axis);
/* Is the footprint of each program private along `axes` (bit k:
 * tl.program_id(k))?  That is: is every element one program touches
 * through any of the n accesses mems (one base parameter; over every
 * iteration of their loops and every enabled lane) touched by no program
 * whose program id differs from it in some axis of `axes`?  Within one
 * program the sites may overlap freely (LayerNorm reads its row in three
 * loops).  axes = 0 is trivially PROVEN.  NOT_INJECTIVE comes with a
 * witness (two programs reaching one element); data-dependent addresses
 * are UNKNOWN. */
AccResult access_private(Access *A, const Inst *const *mems, int n, unsigned axes);
/* The condition as a Python expression for the host: int parameter p as
 * args["p"], tl.num_programs(k) as grid[k] (args and grid: the names
 * given); NULL when it names a value that is not computed from them. */
const char *access_cond_host(Access *A, const AccCond *c, const char *args, const char *grid);
/* Adds c to the conjunction out, its clauses merged into out's where they
 * fit (clauses another implies dropped): out means (out and c). */
void access_cond_conj(Access *A, AccCondVec *out, const AccCond *c);
/* Does the conjunction x imply y?  True when each clause of y is implied by
 * one of x's (a sufficient test: false may still be an implication). */
bool access_cond_implies(const AccCondVec *x, const AccCond *y);
/* Coverage (access_cover.c; docs/AD.md, "Coverage"): the elements the
 * whole launch reaches through mem (every program, every iteration of its
 * `for` loops, the lanes its mask enables), described exactly enough that
 * a launcher can check that they include every element of a tensor's
 * view: then a gradient stored with mem's address and mask needs no
 * zero-fill.  NULL, with the reason in *why (may be NULL), when kad cannot
 * describe them exactly (a mask it does not read exactly, an enclosing
 * `if` or `while`, `//` or `%` in the address, a constant offset). */
typedef struct AccCover AccCover;
const AccCover *access_cover(Access *A, const Inst *mem, const char **why);
/* The check as a Python expression, true only when every element of the
 * view of `tensor` (a Python expression for a torch.Tensor) is reached:
 * int parameter p as args["p"], the grid as grid[k] (args and grid: the
 * names given); a call of _kad_covers, the Python helper the launcher
 * prints before them (src/emit/py/cover.py, embedded as kad_py_covers).
 * NULL when a coefficient names a value not computed from them. */
const char *access_cover_host(Access *A, const AccCover *c, const char *tensor, const char *args,
                              const char *grid);

/* access_text.c: a condition and a cover as a Program's text (docs/IR.md, "Programs"), the
 * contract's int parameters named pnames[0..np) (the main kernel's printed names, without
 * '%').  Reading: symbols interned in A (an Access over the kernel pnames names), NULL with
 * *err (the message) when the text at s is not one; else where it ends. */
void access_cond_text(Buf *b, Access *A, const AccCond *c, const char *const *pnames, int np);
void access_cover_text(Buf *b, Access *A, const AccCover *c, const char *const *pnames, int np);
const char *access_cond_read(Access *A, const char *s, const char *const *pnames, int np, const AccCond **out,
                             const char **err);
const char *access_cover_read(Access *A, const char *s, const char *const *pnames, int np, const AccCover **out,
                              const char **err);

/* A launch condition of a backward kernel: its gradient is right only
 * when cond holds (a store in a loop proven to write distinct elements
 * under it).  Symbols: the forward's int parameters, which are the
 * backward's first parameters, and the grid. */
typedef struct FuncGuard {
    Access *acc;         /* the forward's analysis (cond's symbols) */
    const AccCond *cond;
    Loc loc;             /* the forward's construct that needs it */
    const char *msg;     /* the refusal, without the location */
} FuncGuard;
/* A flag of a backward kernel: an i1 parameter, true when cond holds for
 * the launch (then an input's gradient is written with plain stores or
 * private read-modify-writes, else with atomics).  The generated launcher
 * computes it on the host and passes it as a tl.constexpr, so Triton
 * compiles only the branch the launch takes; plan_run computes it with
 * access_cond_eval (false when it cannot: atomics, always right). */
typedef struct FuncFlag {
    ValId param;
    Access *acc;
    const AccCond *const *cond; /* true when every one holds */
    int ncond;
    const int64_t *grid_add; /* NULL: cond's num_programs are the forward's grid; else a gather
                              * kernel's (write/gather.c): the forward's plus grid_add[k] along axis k */
} FuncFlag;
/* An input gradient of a backward kernel (its parameter) that the launch
 * overwrites entirely when `cover` holds for the gradient tensor's view
 * (and, when flag is not 0, the FuncFlag of that parameter holds: the
 * plain stores are taken): then the launcher does not zero-fill it.  One
 * per input gradient. */
typedef struct FuncCover {
    ValId param;
    ValId flag;
    Access *acc;
    const AccCover *cover; /* NULL: always zero-filled, because of why */
    const char *why;
} FuncCover;
/* Does each of the n guards g hold for these int arguments (by index into
 * the kernel's params) and grid?  False after a located error in d otherwise
 * (also when a condition cannot be evaluated). */
bool func_guards_hold(const FuncGuard *g, int n, const int64_t *iargs, const int64_t grid[3], Diags *d);

/* An integer the host computes from a launch (ad_tape.c): a tape's trip
 * count.  TX_PARAM: the value of int parameter number v (an index into
 * Func.params, one of the contract's); TX_GRID: the grid's size along axis
 * v; TX_PID: tl.program_id(v), any of 0 .. grid[v] - 1 (the host bounds the
 * expression over all of them: interval arithmetic); the others combine x
 * and y with the kernel's integer semantics (div and rem truncate, as C
 * and Triton do; cdiv(x, y) = (x + y - 1) / y, y > 0). */
enum { TX_CONST, TX_PARAM, TX_GRID, TX_ADD, TX_SUB, TX_MUL, TX_DIV, TX_REM, TX_MAX, TX_MIN, TX_CDIV, TX_PID };
typedef struct TapeExpr {
    int op;
    int64_t v;
    const struct TapeExpr *x, *y;
} TapeExpr;
/* A TapeExpr node (ad_tape.c), with x + 0, x - 0, x * 1, x / 1, cdiv(x, 1) and 0 + y folded. */
const TapeExpr *tape_expr_new(Arena *a, int op, int64_t v, const TapeExpr *x, const TapeExpr *y);
/* v (an int scalar of f; def: its defining instructions by ValId, NULL for a parameter or a
 * region's) as an expression of f's int arguments, the grid and the program id; NULL with
 * *why (what stops it) when it is computed from something else (a load, a loop's variable). */
const TapeExpr *tape_expr_of(Arena *a, const Func *f, const struct Inst *const *def, ValId v, const char **why);
/* The TX_ op of an integer IR op the host evaluates (add, sub, mul, div, rem, maximum,
 * minimum), else -1. */
int tape_expr_op(int op);
/* The IR text's name of a TX_ operation (add ... cdiv), or NULL (ir.c). */
const char *ir_tape_expr_op_name(int op);
/* A tape of a backward kernel: a scratch buffer (pointer parameter param,
 * after the flags) holding, for every iteration t < trips of one `for`
 * loop and every program p (numbered x fastest), `slot` elements at
 * (t * programs + p) * slot: the loop-carried values its reverse sweep
 * needs at the start of iteration t.  The launcher and plan_run
 * allocate trips * programs * slot elements (uninitialized: each is
 * written before it is read). */
typedef struct FuncTape {
    ValId param;           /* the Program's main kernel's */
    const TapeExpr *trips; /* iterations per program, >= 0 once clamped */
    int64_t slot;          /* elements per (iteration, program) */
    Loc loc;               /* the loop (the forward's), or the kernel's for IR text */
    const char *what;      /* the taped values' names, "m_i, l_i" (header), or NULL */
    bool bounded;          /* a `while` loop's: trips is a capacity; KAD_TAPE_HEAD elements come
                            * first (element 0: the overflow flag, zeroed by the host, nonzero
                            * after a launch whose loop ran past the capacity) */
    const char *bound;     /* bounded: how the capacity was found, or NULL */
    const char *recomputed; /* the carried ints/pointers the reverse loop recomputes, or NULL */
    const char *linear;    /* the loop's linear accumulators (no tape), or NULL */
    bool ckpt;             /* checkpointed (a tape budget): with k = ceil(sqrt(trips)) per
                            * program, slots 0 .. k - 1 hold one segment's iterations, slot
                            * k + s the carried values at iteration s * k; the host allocates
                            * 2 * ceil(sqrt(trips)) slots per program */
    int64_t budget;        /* the tape budget in bytes per launch (0: none); the host refuses a
                            * launch whose tapes exceed it */
    bool revolve;          /* ckpt by binomial checkpointing (trips not depending on the program
                            * id): the tape starts with a plan's head (1 + 5 * rows elements: the
                            * rows, then RV_FIELDS each, as exact floats, revolve_plan), then
                            * s slots per program (revolve_fit, the budget shared equally among
                            * f's checkpointed tapes) */
} FuncTape;

/* ------------------------------------------------------------------ */
/* audit.c: determinism audit (see docs/AD.md, "Determinism audit")    */
/* ------------------------------------------------------------------ */

/* The report of what makes f nondeterministic (float atomics that may add
 * into one element several times) or batch-variant (float accumulation
 * loops chunked by tl.num_programs or by a batch size), one located line
 * per finding, then a summary line (`kad audit`, kad_audit). */
const char *audit_report(Arena *a, const Func *f);

/* ------------------------------------------------------------------ */
/* ad_save.c: loop results the forward saves for the backward          */
/* (docs/AD.md, "Saved loop results")                                  */
/* ------------------------------------------------------------------ */

/* The values the saving forward stores: results of the forward's top-level
 * `for` loops, by ValId, one after the other in the program's slot,
 * row-major, in fp32 (fp16/bf16 widened exactly).  The buffer holds slot
 * elements per program, program p's at p * slot with p = pid0 + G0 * (pid1
 * + G1 * pid2).  ValIds are the forward's: the kernel AD differentiates
 * (the forward plus the kad_saved parameter, gauge_rewrite's copy of it)
 * keeps them, and a loop gauge_rewrite splits in two defines the original
 * loop's results with the original ValIds. */
typedef struct SavePlan {
    ValId *val;
    Type *ty;
    int64_t *off;
    int n;
    int64_t slot;
} SavePlan;
/* The parameter a saving (or loading) kernel takes the buffer by. */
#define KAD_SAVE_PARAM "kad_saved"
/* A backward's spread (write/spread.c, docs/AD.md "Spreading a loop over
 * programs"): its last parameter, KAD_SPREAD_PARAM (i32), is S, the programs
 * each forward program's loop iterations are dealt to; the main kernel then
 * runs on the grid (G0 * S, G1, G2).  trips: the loop's trip count for the
 * host (no program id, no division).  S = 1 runs it as before. */
typedef struct FuncSpread {
    ValId param;
    const TapeExpr *trips; /* iterations to deal: the loop's trip count times parts */
    int parts;             /* > 1: the loop's tile split into this many (write/spread.c) */
    int32_t lanes;         /* > 0: the loop is split_lanes', over parts of a tile of this many
                            * lanes (its launch defaults read it: emit_grad_launch.c) */
    Loc loc;               /* the loop */
} FuncSpread;
/* The host plan a backward's kernel header carries in the IR text, between its constexprs and
 * its body: `tape(...)`, `spread(...)` and `fold(...)`.  The plan stage's data (Program.tapes,
 * Program.spread, Program.fold), printed and parsed by ir.c and irparse.c because it names the
 * kernel's values; plan_print and plan_parse (src/plan/text.c) use these. */
typedef struct IrPlanText {
    Vec(FuncTape) tapes;
    const FuncSpread *spread;
    const struct FoldPlan *fold;
} IrPlanText;
/* ir_print with the header's plan (pt may be NULL: none). */
void ir_print_plan(Buf *b, const Func *f, const IrPlanText *pt);
/* ir_parse that also reads the header's plan into *pt (allocated in a). */
Func *ir_parse_plan(Arena *a, Diags *d, const char *file, const char *text, IrPlanText *pt);
/* The same for the kernel at *pos in src (line *line of file), where the text may go on: *pos
 * and *line are left at the token after the kernel (its rules included). */
Func *ir_parse_next(Arena *a, Diags *d, const char *file, const char *src, const char **pos, int *line,
                    IrPlanText *pt);
/* Reads the quoted string at s (s[0] == '"'; the escapes \n \t \" \\ and \xHH but \x00): its
 * text in a and *end after the closing quote; NULL on an error, with *err the message and *at
 * where it stands (irparse.c). */
const char *ir_string_read(Arena *a, const char *s, const char **end, const char **at, const char **err);
/* The lanes of a spread loop's tile after a split: a wider tile whose body
 * is lane by lane is split into tiles of this many. */
#ifndef KAD_SPREAD_TILE
#define KAD_SPREAD_TILE 8192
#endif
/* The lanes of each part a loop-free lane-by-lane backward on a wider tile
 * runs its tile in (write/spread.c, split_lanes). */
#ifndef KAD_LANE_TILE
#define KAD_LANE_TILE 1024
#endif
#define KAD_SPREAD_PARAM "kad_spread"
/* Spreads P's main loop when the rule of write/spread.c holds (P->spread set), else leaves it. */
void ad_spread(Arena *a, Program *P);
/* The lanes of f's one 1-D tile when f has no loop and computes lane by lane
 * (write/spread.c's lanewise: elementwise ops, memory accesses, scalars
 * broadcast); 0 otherwise (also when f has no tile). */
int32_t spread_lane_width(const Func *f);
/* The plan of fwd (verified): NULL when nothing is worth saving. */
const SavePlan *save_plan(Arena *a, const Func *fwd);
/* fwd with one more parameter, KAD_SAVE_PARAM (*fp32), last; with stores,
 * the saving forward: each planned value stored after its loop. */
Func *save_kernel(Arena *a, const Func *fwd, const SavePlan *p, bool stores);
/* For the top-level `for` loop fw->body->insts.v[k]: per result, its offset
 * in the slot (-1: not saved, and unused after the loop), or NULL when the
 * loop must run (a result used after it is not saved, or none is). */
const int64_t *save_offsets(Arena *a, const SavePlan *p, const Func *fw, int k);
/* The offset (i64, elements) of this program's slot: program * slot, or
 * with an iteration number iter (a tape's) (iter * programs + program) *
 * slot, where program = pid0 + G0 * (pid1 + G1 * pid2). */
ValId save_slot_at(Func *f, Block *b, ValId iter, int64_t slot, Loc loc);
/* Pointers to the elements of a value of type vt at offset off from base:
 * row-major, a scalar pointer for a scalar. */
ValId save_elems(Func *f, Block *b, ValId base, Type vt, int64_t off, Loc loc);

/* ------------------------------------------------------------------ */
/* backward.c: reverse-mode AD (see docs/AD.md)                       */
/* ------------------------------------------------------------------ */

/* What to differentiate, by pointer-parameter name. */
typedef struct AdSpec {
    const char *const *wrt;  /* differentiated inputs (only read by the kernel) */
    int nwrt;
    const char *const *outs; /* differentiated outputs (only written by the kernel) */
    int nouts;
    int mutate;              /* tests only: AD_MUTATE_* deliberately breaks a rule */
    int64_t while_cap;       /* the tape capacity of a `while` loop without a bound kad finds
                              * (0: KAD_WHILE_CAP_DEFAULT) */
    int64_t tape_budget;     /* bytes of tape per launch above which taped `for` loops are
                              * checkpointed (0: no budget) */
    bool atomics;            /* accumulate every input gradient with atomic_add (KAD_GRAD_ATOMICS) */
    bool *grad_rmw;          /* out, optional (nwrt entries): d_<wrt[j]> is added by read-modify-writes
                              * private to each program (several load sites; grad_when may hold
                              * their condition) */
    const char **grad_write; /* out, optional (nwrt entries): ad_backward sets entry j to NULL
                              * when d_<wrt[j]> is written with plain tl.store, else to why it
                              * is accumulated with tl.atomic_add */
    const char **grad_when;  /* out, optional (nwrt entries): where grad_write[j] is set, the
                              * Python condition under which the backward still writes
                              * d_<wrt[j]> with plain stores (checked at run time), or NULL */
    bool *grad_first;        /* out, optional (nwrt entries): with grad_rmw, the site the backward
                              * reaches first stores its gradient without reading (first_writer) */
    bool trusted;            /* the outputs and scratch buffers hold what the forward stored (the
                              * caller checked): the backward loads what ad_trust.c plans */
    int fold_zero_block;     /* the tile of a fold's loop zeroing its rows of partials (0:
                              * FOLD_ZERO_BLOCK); the CUDA C module passes its lane count, so that
                              * the loop runs one element per thread */
    const SavePlan *save;    /* the forward's last parameter is KAD_SAVE_PARAM, holding what the
                              * saving forward stored: the primal sweep loads the planned loops'
                              * results instead of running them (NULL: recompute everything) */
} AdSpec;
enum {
    AD_MUTATE_NONE = 0,
    AD_MUTATE_EXP = 1,      /* d(exp x) = d*x instead of d*exp(x) */
    AD_MUTATE_MUL = 2,      /* d(a*b)/da = d*a instead of d*b */
    AD_MUTATE_MAX = 3,      /* max/min reductions: d to every lane, not the extremal ones */
    AD_MUTATE_WHERE = 4,    /* where(c, a, b): the two sides' adjoints swapped */
    AD_MUTATE_CUMSUM = 5,   /* cumsum: the adjoint scans in the same direction */
    AD_MUTATE_MAX_DROP = 6, /* scalar max/min reductions: adjoint dropped without the
                               shift-invariance proof */
    AD_MUTATE_TAPE = 7,     /* taped loops: the reverse loop reads the tape's slots in forward order */
    AD_MUTATE_LIBM = 8,     /* libdevice functions (ad_libm_partial): each partial derivative doubled */
    AD_MUTATE_STRONG_ZERO = 9, /* no strong zeros (ad_finite.c): 0 * inf stays NaN, both modes */
    AD_MUTATE_SCAN_JAC = 10,   /* the general scan rule: its Jacobian J_a used untransposed */
};
/* Testing aid: the AD_MUTATE_* of a name ("exp", "mul", "max", "where",
 * "cumsum", "max_drop", "tape", "libm", "strong_zero"); -1 if unknown.  check_gradients applies the one
 * CheckConfig.mutate names (the CLI and the Python tests take it from
 * KAD_TEST_MUTATE; docs/AD.md). */
int ad_mutation_by_name(const char *name);

/* The backward kernel as kad hands it out: ad_reverse, then the simplify
 * pass (CSE, DCE: the primal sweep's dead stores' operands go away), with
 * ir_verify before and after.  NULL after an error. */
Program *ad_backward(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec);
/* Splits "x_ptr, w_ptr" at commas into trimmed names; returns the count. */
int ad_split_names(Arena *a, const char *s, const char ***out);

/* ------------------------------------------------------------------ */
/* sweep_fwd.c: forward-mode AD (JVP; see docs/AD.md, "Forward mode")   */
/* ------------------------------------------------------------------ */

/* The jvp kernel of fwd: one pass computing fwd's outputs and their
 * tangents.  Params: fwd's runtime params, then t_<x> per input in spec->wrt
 * (a name also in spec->outs, updated in place, once, here), then t_<y> per
 * output only in spec->outs, each in fwd's parameter order; fwd's
 * constexprs.  spec's mutate/atomics/out fields are ignored.  Simplified
 * and verified; NULL after located errors (what forward mode refuses). */
Func *ad_forward(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec);

/* ------------------------------------------------------------------ */
/* write/plain.c: how each input gradient is written                  */
/* ------------------------------------------------------------------ */

/* Decides ad->plain (and why/when/cond/fold_axes) per differentiated input
 * of ad (after ad_analyze; ad->plain etc. allocated): see write/plain.c. */
typedef struct Ad Ad;
void ad_plain_inputs(Ad *ad);

/* ------------------------------------------------------------------ */
/* write/fold.c: deterministic shared gradients (grid folding, partials) */
/* ------------------------------------------------------------------ */

/* One input whose gradient is summed through partials. */
typedef struct FoldInput {
    int slot;          /* bw param index: the partials (the place of d_<x> in the contract) */
    ValId span;        /* bw param (i64): elements of d_<x>'s storage span, the partials' row length */
    const char *name;  /* x's name */
    Dtype dt;          /* d_<x>'s dtype */
    Dtype pdt;         /* the partials' dtype: fp64 for fp64, else fp32 */
    bool load_store;   /* the site is stored once per program, through the load's address and a
                        * mask the same in every fold iteration (a top-level site): each row's
                        * written elements are what the load reaches (access_cover), so a launch
                        * whose load covers a dense d_<x> writes every element of every row */
    int rows;          /* site rows (ad_site_rows): one row per adding site, this many; 0: a folded
                        * input, one row per fold program */
    ValId flag;        /* site rows under a launcher flag (bw i1 param): when it is false, one row
                        * that the sites add into with atomics; else 0 */
} FoldInput;
/* How a folded backward runs.  The forward's programs along the folded axes
 * (G_a, G_b, ...: t = pid_a + G_a * (pid_b + G_b * pid_c) numbers them) are
 * shared among P <= prod G programs along the first folded axis (the others
 * launched with 1): program q runs t = q, q + P, ... in order.  Its partials
 * parameters get buffers of P rows of span elements (slices of one
 * allocation; a program zeroes its own rows when the grid has one program
 * along every unfolded axis, else they must be zero-filled unless the
 * launch provably writes every element: FoldInput.load_store), its span
 * parameters those spans, its programs parameters the G's; then the one
 * sum kernel runs. */
typedef struct FoldPlan {
    int axis;          /* the first folded axis: the one launched with P programs; -1: none */
    unsigned axes;     /* the folded axes (bits); 0: not folded (site rows only) */
    int nargs;         /* the parameters before the fold's: params [0, nargs) */
    ValId programs[3]; /* bw params (i32, last, by axis): G_k for each folded axis k, else 0 */
    int n;
    FoldInput *in;
} FoldPlan;
/* The fold's one sum kernel of every input j (Program.sum): (part_j, d_j, span_j, rows_j, dense_j
 * for each j) [grid sum_j cdiv(span_j, FOLD_SUM_BLOCK)]: d_j += the sum of its rows
 * (FOLD_SUM_ROWS rows at a time, summed by a reduction, in row order); dense_j != 0: d_j = the
 * sum, stored at every element of the span. */
enum { FOLD_SUM_BLOCK = 64, FOLD_SUM_ROWS = 64, FOLD_CPU_PROGRAMS = 3, FOLD_ZERO_BLOCK = 1024 };
/* Folds bw = P->main (ad_backward's, before verification), its plan P->fold, along the grid axes `axes` (bits) for
 * the n inputs whose gradient parameters are params[slot[j]] (names[j]: the
 * inputs' names): see write/fold.c.  False, bw unchanged, when a gradient
 * pointer flows where the fold cannot follow it. */
bool ad_fold(Arena *a, Program *P, unsigned axes, const int *slot, const char *const *names, int n, int zero_block);
/* Marks a folded backward's fold loop for Triton's software pipelining
 * (tl.range num_stages=3) where that is safe and fits (write/fold.c); after
 * the backward's last simplify. */
void ad_fold_pipeline(Arena *a, const Program *P);
/* Site rows (Ad.plain 6 and 7), in bw = P->main and its plan P->fold: the gradient of the input
 * whose gradient parameter is params[slot] (x: its name) is added at several
 * sites, each adding to distinct elements over the whole launch, but two
 * sites may meet across programs (a stencil's taps).  Each site k then
 * stores into row k of a partials buffer (plain stores: no atomics), and
 * the input's sum kernel adds the rows in order.  flag: a bw i1 param, or
 * 0; when it is false at run time, the sites atomic_add into row 0.  Run
 * before ad_fold (which extends the plan).  False, bw unchanged, when a
 * gradient pointer flows where the rewrite cannot follow it. */
bool ad_site_rows(Arena *a, Program *P, int slot, const char *name, ValId flag);
/* The partials' dtype of a gradient of dtype dt (FoldInput.pdt): fp64 for fp64, else fp32. */
static inline Dtype fold_partial_dtype(Dtype dt) { return dt == DT_F64 ? DT_F64 : DT_F32; }

/* ------------------------------------------------------------------ */
/* ad_gauge.c: online-softmax loops reversed by a second pass           */
/* ------------------------------------------------------------------ */

/* fwd with each `for` loop of online-softmax form (a running max m, values c starting at 0
 * rescaled by exp(m - m_new) plus terms linear in exp(s - m_new); docs/AD.md, "Online
 * softmax: a second pass instead of a tape") replaced by a loop computing the max alone and
 * a loop accumulating the c with the final max, in a copy allocated in a, with one note per
 * rewritten loop in *notes (*nnotes of them: the backward's Program.notes); fwd itself, and no
 * notes, when no loop matches.  Only AD sees the copy. */
const Func *gauge_rewrite(Arena *a, const Func *fwd, const char ***notes, int *nnotes);
/* In a backward made from such a copy: each pair of loops 1 and 2 whose primal copies
 * stand in one block, loop 1 writing nothing (its max not taped) and both flat, becomes one
 * loop computing the max and loop 2's accumulators rescaled by it, as the forward's online
 * loop did: one pass over the data instead of two (the reverse of loop 2 is untouched).
 * Before the backward's simplify.  False only without memory. */
bool ad_gauge_fuse(Func *f);

/* ------------------------------------------------------------------ */
/* ad_tape.c: tapes for loops with non-linear loop-carried values       */
/* ------------------------------------------------------------------ */

/* A `for` loop of the forward whose reverse sweep runs backwards, reading
 * the carried values it needs from a tape (docs/AD.md, "Tapes"). */
typedef struct TapeLoop {
    const struct Inst *loop; /* the forward's `for` */
    uint8_t *taped;          /* by carried slot: recorded on the tape */
    uint8_t *linear;         /* by carried slot: a linear accumulator (ad->chain), no tape */
    uint8_t *affine;         /* by carried slot: an int or pointer advanced by a loop-invariant
                              * step (or unchanged): recomputed as init + t * step, no tape */
    ValId *delta;            /* by carried slot (affine): the fw value of its step, 0: unchanged */
    uint8_t *neg;            /* by carried slot (affine): advanced by -delta (c - d: an int counted down) */
    const struct Inst **inner; /* by carried slot (affine): the `for` loop in the body that advances it by
                                * delta per inner iteration (its step: delta times that loop's trip
                                * count, bounds invariant), or NULL: the body advances it by delta */
    int64_t *off;            /* by carried slot (taped): its first element in a tape slot */
    int64_t slot;            /* elements per (iteration, program) */
    Dtype dt;                /* the tape's dtype: fp64 when a taped value is, else fp32 */
    const TapeExpr *trips;   /* the loop's trip count for the host */
    const char *what;        /* the taped values' names */
    ValId param;             /* bw: the tape parameter (0 until the emission makes it) */
    /* a `while` loop's tape (ad_tape_plan_while): trips is a capacity, not a trip count */
    bool is_while;
    const char *bound;       /* how the capacity was found (header, report) */
    ValId cap_ub, cap_init;  /* fw: capacity = cdiv(max(cap_ub + cap_plus - cap_init, 0), cap_step); */
    int64_t cap_step, cap_plus; /* cap_ub 0: the constant cap_const */
    int64_t cap_const;
    ValId count, capv;       /* bw: the latest primal copy's iteration count (a result) and capacity */
    const char *recomputed, *linear_names; /* names for the report, or NULL */
    bool ckpt;               /* checkpointed (AdSpec.tape_budget): segments of k = ceil(sqrt(trips)) */
    ValId kv;                /* bw (ckpt): the latest primal copy's segment length */
    bool revolve;            /* ckpt by binomial checkpointing (a plan in the tape's head) */
    ValId headv;             /* bw (revolve): the elements before the slots (1 + RV_FIELDS * rows), i64 */
} TapeLoop;
/* The default capacity of a `while` loop's tape when kad finds no bound
 * (AdSpec.while_cap overrides it). */
#define KAD_WHILE_CAP_DEFAULT 1024
/* Elements before a `while` tape's slots: element 0 is its overflow flag. */
#define KAD_TAPE_HEAD 4
/* Plans the tape of `for` loop in (ad_analysis's validation, after the
 * loop's body; linear: by carried slot, the linear accumulators; rep: a
 * store under it whose writes the iterations order, which alone puts the
 * loop on a tape, for the messages; at: the tape's index in Ad.tapes,
 * program order).  False after a located error saying why kad cannot
 * tape it. */
bool ad_tape_plan(struct Ad *ad, const struct Inst *in, const uint8_t *linear, const struct Inst *rep, int at);
/* Plans the tape of `while` loop in, every differentiated carried float
 * recorded, its capacity a bound kad extracts from the condition (a
 * counter compared with a loop-invariant int) or spec->while_cap. */
bool ad_tape_plan_while(struct Ad *ad, const struct Inst *in, const struct Inst *rep, int at);
/* Is fw value v the same in every iteration of the loop whose body's
 * values ad_mark_defs stamped with id (defined outside it, or computed
 * inside by pure ops from such values only)? */
bool ad_tape_invariant(struct Ad *ad, ValId v, int id);
/* The tape of fw loop in, or NULL when it has none. */
TapeLoop *ad_tape_of(struct Ad *ad, const struct Inst *in);

/* ------------------------------------------------------------------ */
/* ad_analysis.c, ad_validate.c: what AD differentiates and refuses     */
/* ------------------------------------------------------------------ */

/* What a pointer parameter is to AD.  AD_ROLE_INOUT: named both in wrt and
 * in outs, a buffer the kernel updates in place (docs/AD.md, "In-place
 * buffers"): read like an input (its pre-launch value), written like an
 * output, one gradient buffer d_<name> for both. */
enum { AD_ROLE_NONE, AD_ROLE_IN, AD_ROLE_OUT, AD_ROLE_INOUT };
static inline bool ad_role_reads(int role) { return role == AD_ROLE_IN || role == AD_ROLE_INOUT; }
static inline bool ad_role_writes(int role) { return role == AD_ROLE_OUT || role == AD_ROLE_INOUT; }

/* The state of one differentiation (ad_reverse): the facts ad_analyze
 * computes about fw, then the maps sweep_rev.c's sweeps fill.  Arrays "by
 * ValId" are indexed by fw values (nvals entries). */
/* Strong zeros (ad_finite.c; docs/AD.md, "Untaken branches: exact zeros").
 * What is KNOWN of a forward value, lane by lane (0: nothing): */
enum {
    VK_FIN = 1,  /* finite (no inf, no NaN) */
    VK_NOHI = 2, /* no +inf, no NaN (finite or -inf) */
    VK_NZ = 4,   /* never +-0 */
    VK_NN = 8,   /* never < 0 */
    VK_LE0 = 16, /* never > 0 */
    VK_NONAN = 32, /* never NaN (may be +-inf) */
    VK_FINITE = VK_FIN | VK_NOHI | VK_NONAN,
    VK_ALL_INT = VK_FINITE, /* integers, booleans, pointers */
};
typedef struct AdFinite {
    const uint8_t *k; /* by ValId: VK_*; NULL: strong zeros off */
    int n;            /* values covered (f->vals.n) */
} AdFinite;
/* The facts of every value of f (a forward walk, loops and combine regions
 * to a fixpoint; loaded data and parameters are finite). */
AdFinite ad_value_facts(Arena *a, const Func *f);
/* May the partial derivative of in's result with respect to operand k be
 * non-finite?  Then the rules of both modes make operand k's contribution
 * exactly 0 where the incoming adjoint (tangent) is exactly 0.  The one
 * list per op kind: a new op with a rule that can be non-finite adds its
 * case there.  False when fi is NULL or fi->k is (strong zeros off). */
bool ad_partial_unsafe(const AdFinite *fi, const Inst *in, int k);

/* ad_trust.c: a forward value the trusted backward (AdSpec.trusted) loads from the buffer the
 * forward stored it in, instead of recomputing it (docs/AD.md, "Trusted saved outputs"). */
enum {
    TRUST_STAT,       /* a scalar stored as it is: its primal is the load; its rule as written */
    TRUST_RECIP,      /* y = 1 / w, loaded: dw = -dy * y * y */
    TRUST_RSQRT,      /* y = 1 / sqrt(w) or rsqrt(w), loaded: dw = -dy * y^3 / 2 */
    TRUST_SOFTMAX,    /* y = exp(w) / sum(exp(w)) (exp2: scale ln 2), loaded: dw = scale * y * (dy - sum(dy*y)) */
    TRUST_LOGSOFTMAX, /* y = w - log(sum(exp(w))), loaded: dw = dy - exp(y) * sum(dy) */
};
typedef struct TrustVal {
    int kind;          /* TRUST_* */
    ValId v;           /* the forward value */
    ValId w;           /* RECIP, RSQRT, SOFTMAX, LOGSOFTMAX: the operand its rule gives the adjoint */
    ValId mask;        /* the store's mask, or 0 */
    const Inst *store; /* the one store of v into its buffer */
    const Block *block; /* the block holding v's definition and its store */
    int axis;          /* SOFTMAX, LOGSOFTMAX: the reduced axis */
    bool keep;         /* ... reduced with keep_dims */
    double scale;      /* SOFTMAX: 1 (exp) or ln 2 (exp2), times the constants w was scaled by
                        * on its way from w's operand (shifted); LOGSOFTMAX: those constants */
    bool shifted;      /* w is replaced by the operand a of w = (a - bcast(row value)) * c: the
                        * row value's adjoint is exactly zero (shift invariance) */
    double other;      /* the load's value off the mask: 0, or -inf (LOGSOFTMAX) */
    int narrow;        /* SOFTMAX, LOGSOFTMAX stored through a float cast to a narrower type (bf16,
                        * fp16): that type (the load returns v rounded to it, cast back), else 0 */
} TrustVal;

typedef struct Ad {
    Arena *a;
    Diags *d;
    const Func *fw;
    const AdSpec *spec;
    Program *P;                /* the backward being built: its main kernel is bw (below) */
    /* facts (ad_analysis.c) */
    int nvals;                 /* fw->vals.n: size of the per-value arrays */
    int *role;                 /* by fw param index: AD_ROLE_* */
    int *root;                 /* by ValId: 0 none, p+1 derives from param p, -1 ambiguous
                                * (read from memory), <= -2 one of several params (psets) */
    uint8_t *varied;           /* by ValId: depends on a differentiated input */
    uint8_t *useful;           /* by ValId: reaches a differentiated output */
    uint8_t *pinned;           /* by ValId: kept not useful (shift-invariant maxima), or NULL */
    uint8_t *chain;            /* by ValId: on a loop's linear-accumulator chain */
    int *nuses;                /* by ValId: operand uses anywhere */
    const Inst **def;          /* by ValId: defining instruction (NULL: param) */
    uint8_t *stored;           /* by param index: some store/atomic writes through it */
    uint8_t *cleared;          /* by param index: an output stored at several sites whose writes may
                                * meet (outside loops): its stores read their gradient and clear it,
                                * in reverse order, from a private copy (Program.cleared) */
    const Inst **first_store;  /* by param index: the first tl.store through it, or NULL */
    const Inst **first_atomic; /* by param index: the first atomic_add through it, or NULL */
    int *stamp;                /* by ValId: scratch marks (ad_mark_defs) */
    int gen;                   /* the last generation handed out for stamp/seen */
    bool changed;              /* facts fixpoint: something changed this round */
    Vec(uint8_t *) psets;      /* provenance sets: root -2 - s is psets.v[s], nparams flags */
    /* emission (sweep_rev.c, rules_rev.c, tape_rev.c) */
    Func *bw;
    ValId *pm;   /* by ValId: its primal copy in the current bw scope */
    ValId *sm;   /* by ValId (pointers): its shadow (gradient-buffer pointer) */
    ValId *vm;   /* by ValId (pointers selected among params, some without a
                  * gradient): i1 tile, true where the shadow is real; 0: everywhere */
    ValId *adj;  /* by ValId: accumulated adjoint (0 = zero so far) */
    ValId *grad; /* by param index: its gradient param in bw, or 0 */
    TrustVal **trust; /* by fw ValId (AdSpec.trusted): what the backward loads (ad_trust.c), or NULL */
    ValId saved_base; /* bw: this program's slot of the saved loop results (AdSpec.save), once made */
    int *seen;   /* by ValId: scratch marks (collect_outside) */
    uint8_t *plain;    /* by param index: input gradient written with plain stores
                        * (1), or with them when flag[i] holds, else atomics (2), or
                        * summed through per-program partials (3, write/fold.c), or added
                        * by read-modify-writes private to the program (4; when flag[i]
                        * holds, else atomics: 5), or stored per site into rows of
                        * partials (6; when flag[i] holds, else atomics: 7; ad_site_rows) */
    const char **why;  /* by param index (inputs): why atomics, or NULL */
    const char **when; /* by param index (plain 2): the condition as Python */
    AccCondVec *cond;  /* by param index (plain 2, 5, 7): the conditions (all must hold) */
    ValId *flag;       /* by param index (plain 2): bw i1 scalar, the condition */
    const AccCover **cover; /* by param index (plain 1, 2; 4, 5 with first): what its one load site reaches
                             * (access_cover), or NULL; dropped when adj_load does not store it */
    uint8_t *wrote;    /* by param index (plain 1, 2): adj_load stored its gradient with the
                        * load's own address and mask */
    const char **cover_why; /* by param index (plain 1, 2): why cover is NULL */
    const Inst **first; /* by param index (plain 4, 5): the earliest load of the site the backward
                         * runs before every other site, writing each element once
                         * (first_writer): its adjoint is stored without reading d_<x>, and
                         * cover describes what it reaches; or NULL */
    unsigned fold_axes; /* plain 3 (summed through partials, write/fold.c): the grid axes folded, or 0 */
    uint8_t *scat;     /* by fw ValId (a load's result), or NULL (not asked for): a scattered site
                        * (write/scatter.c, scatter_split): adj_load adds its adjoint with an atomic_add
                        * marked AD_SCATTER_MARK, which ad_scatter_split moves into a kernel run
                        * after the backward */
    Access *acc;       /* fw's access analysis, or NULL */
    Vec(FuncGuard) guards; /* launch conditions the backward needs (check_loop_store) */
    Access *vacc;          /* the access analysis of fw for the validation's proofs, once made */
    int nrev;              /* stores whose enclosing loops must run backwards (need_reverse) */
    const Inst *rev_store; /* the last of them (for messages) */
    Vec(struct TapeLoop) tapes; /* the loops whose reverse sweep reads a tape (ad_tape.c) */
    const uint8_t *lanes; /* by ValId, or NULL: the values of a reduce's combine region while
                           * adj_reduce applies it to tiles; rules_rev.c types them lane_ty's shape */
    Type lane_ty;
    AdFinite fin; /* which partials need a strong zero (ad_finite.c) */
    Vec(ValId) zm; /* by bw value: an i1 of its shape, true on the lanes where that adjoint (or
                    * contribution) is 0 because no gradient reaches them (a tl.where's untaken
                    * side, a store's masked-off lanes); 0: none known (strong_zero) */
    Vec(uint8_t) zsel; /* by bw value: its zm includes a selection's lanes (zm_sel) */
} Ad;

/* Resolves ad->spec to roles, computes the facts and validates fw (a, d,
 * fw, spec set; the fact arrays are allocated here).  False after located
 * errors in ad->d: then nothing may be emitted. */
bool ad_analyze(Ad *ad);
/* Does v get an adjoint: float, varied and useful? */
bool ad_active(const Ad *ad, ValId v);
/* The role of the parameter pointer v derives from (AD_ROLE_NONE if none).
 * For a pointer selected among several parameters: the role of those that
 * are differentiated (validated to agree), AD_ROLE_NONE if none is. */
int ad_root_role(const Ad *ad, ValId v);
/* b's terminator (its last instruction), or NULL when b is empty. */
const Inst *ad_block_term(const Block *b);
/* The combine functions of `scan` that AD has rules of their own for,
 * recognized from the region's IR (docs/AD.md, "Scans"): a sum `x + y`; the
 * first-order linear recurrence `(a1*a2, a2*b1 + b2)` on pairs (params a1, b1,
 * a2, b2); a running `maximum` / `minimum`; a selection.  SCAN_OTHER: any
 * other, differentiated by the general rule (through the combine's Jacobians). */
typedef enum ScanKind { SCAN_OTHER, SCAN_SUM, SCAN_LINREC, SCAN_MAX, SCAN_MIN, SCAN_SELECT } ScanKind;
ScanKind ad_scan_kind(const Func *f, const Inst *scan);
/* SCAN_SELECT: every float value k the combine yields is `where(c, x_k, y_k)` or
 * `where(c, y_k, x_k)` (x: the running values' params, y: the next element's): a
 * selection, so each result is one input element.  True for such a slot k, with the
 * region's condition *cond and whether it selects the running value when true. */
bool ad_scan_select(const Inst *scan, int k, ValId *cond, bool *running_when_true);
/* Stamps every value defined in b (regions included) with id. */
void ad_mark_defs(Ad *ad, const Block *b, int id);
/* ad_trust.c: fills ad->trust when ad->spec->trusted (else NULL). */
void ad_trust_plan(Ad *ad);
/* Does carried slot k of the for body `body` flow through a chain of
 * single-use instructions, each accepted by link(ad, use, operand position,
 * the value used), into the yield at position k, used nowhere else (no
 * nested region reads a value of the chain)?  Then marks the chain's values
 * in ad->chain (only then).  Linear accumulators (ad_validate.c) and
 * self-feeding counters (ad_tape.c) are such chains. */
bool ad_carried_chain(Ad *ad, const Block *body, int k, bool (*link)(Ad *, const Inst *, int, ValId));
/* Is the store at position k of b overwritten on every lane by a later
 * unmasked store in b through the same pointer value? */
bool ad_store_overwritten(const Block *b, int k);
/* How the kernel uses pointer parameter i: AD_ACCESS_LOAD if some load may
 * read through it, AD_ACCESS_STORE if some store or atomic may write
 * through it (a pointer selected among parameters counts for each of them,
 * one of ambiguous provenance for every pointer parameter). */
enum { AD_ACCESS_LOAD = 1, AD_ACCESS_STORE = 2 };
int ad_param_access(Arena *a, const Func *f, int i);
/* The number of names in spec->wrt not also in spec->outs (in-place names
 * get one gradient parameter, among the outputs'). */
int ad_spec_nwrt_only(const AdSpec *spec);
/* Can pointer v derive from parameter p (a candidate of its provenance)? */
bool ad_root_has(const Ad *ad, ValId v, int p);

/* ------------------------------------------------------------------ */
/* check/check.c: the float64 finite-difference gradient checker       */
/* ------------------------------------------------------------------ */

typedef struct CheckConfig {
    int64_t grid[3];
    const char *shapes; /* "x_ptr=64x128,w_ptr=128": elements of every pointer param */
    const char *args;   /* "n=1000,eps=1e-5": value of every scalar param */
    const char *ranges; /* optional "x_ptr=0.5:2": input distribution (default -1:1) */
    uint64_t seed;      /* 0: 1 */
    int directions;     /* random directions per input; 0: 4 */
    int64_t elem_limit; /* per-element FD for inputs of <= this many elements; 0: 4096; <0: never */
    double rtol;        /* 0: CHECK_RTOL */
    const char *mutate; /* testing aid: NULL or an adjoint rule to break (ad_mutation_by_name) */
    bool saved;         /* check the backward of the saving forward (ad_save.c): the saving forward
                         * runs first and fills the buffer the backward loads */
} CheckConfig;
#define CHECK_RTOL 1e-6

/* Differentiates fwd per spec, runs forward and backward on the
 * interpreter in float64 and compares with central finite differences.
 * Returns the report (one line per input, then PASS or FAIL) and sets
 * *passed; NULL on an error (bad configuration, AD refusal, interpreter
 * error), reported in d. */
const char *check_gradients(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec,
                            const CheckConfig *cfg, bool *passed);

/* ------------------------------------------------------------------ */
/* emit_triton.c                                                       */
/* ------------------------------------------------------------------ */

typedef struct EmitOptions {
    const char *name;   /* name of the @triton.jit function (NULL: the Func's) */
    const char *header; /* header comment text, may span lines (NULL: names the kernel) */
    /* A backward kernel (emit_triton_backward sets these): params [0, nfwd) are the
     * forward's, then nouts output gradients, then the input gradients.  The header is
     * then the whole module comment, parameters follow the def's order (ConstParam.pos,
     * constexprs without defaults), and the body is split into the sections "recompute
     * the forward" and "reverse sweep" (from the first statement reading an output
     * gradient). */
    bool backward;
    int nfwd, nouts;
    bool fragment;      /* only the @triton.jit function: no module comment, no imports (a
                         * second kernel of a module) */
    const char *jit_args; /* inside @triton.jit(...), e.g. do_not_specialize=[...]; NULL: none */
    bool jvp;           /* with backward: a jvp kernel (ad_forward): the def's order, then the
                         * tangent pointers, the body printed as one section */
    bool combine;       /* a scan's combine function (emit_triton builds these itself): the Func's
                         * params are the region's, its body the region, whose yield prints as
                         * `return` */
    /* With backward: the main kernel's plan as its Program holds it (src/plan/plan.h); NULL and 0
     * for any other kernel (companions, forwards, jvps). */
    const struct FoldPlan *fold; /* Program.fold: the fold loop and its hidden parameters, which
                                  * Triton does not specialize */
    const struct FuncFlag *flags; /* Program.flags: the parameters printed as tl.constexpr */
    int nflags;
} EmitOptions;

/* Appends to out a Python module holding f as one @triton.jit function
 * (runtime params, then the constexprs with their specialized values as
 * defaults) that computes what f computes.  IR without a Triton spelling
 * is a located error in d; returns false after any error.  opt may be NULL. */
bool emit_triton(Buf *out, const Func *f, const EmitOptions *opt, Diags *d);
/* One parameter of a kernel's def: a runtime parameter (index into
 * Func.params) or a constexpr (index into Func.consts). */
typedef struct DefParam {
    bool cnst;
    int i;
} DefParam;
/* The def's parameters in order: the first nfwd runtime parameters and every
 * constexpr at its ConstParam.pos; when a position is unknown (IR read from
 * text), the constexprs follow the runtime ones.  nfwd + consts.n entries. */
DefParam *emit_def_order(Arena *a, const Func *f, int nfwd);
/* Whether f holds an access made from a tensor descriptor (IF_DESC), which
 * emit_triton prints as tl.make_tensor_descriptor: Triton then needs a
 * global-scratch allocator at launch (triton.set_allocator). */
bool emit_has_desc(const Func *f);
/* A backward's descriptor stores into gradient parameters (params from nfwd
 * on): the distinct such parameters, in parameter order, into out (room for
 * f->nparams); returns their number.  Each store runs as TMA only under the
 * kernel's constexpr emit_tma_flag(p) (default False: pointer stores), which
 * the launcher sets when the gradient's base is 16-byte aligned. */
int emit_tma_grads(const Func *f, int nfwd, ValId *out);
const char *emit_tma_flag(Arena *a, const Func *f, ValId p);

/* emit_grad.c: appends the backward module of docs/GRAD.md: bwd (= ad_backward(fwd, spec)) as
 * @triton.jit <fwd>_bwd with the forward's parameters in the def's order, then the
 * gradient pointers, a header naming kernel, signature, inputs and outputs, and the
 * host launcher launch_<fwd>_bwd.  Every kernel comes before the host part, which a
 * separator comment opens; kernels_only: the module ends there (KAD_GRAD_KERNELS_ONLY).
 * Returns false after a located error in d. */
bool emit_triton_backward(Buf *out, const Func *fwd, const Program *bwd, const AdSpec *spec, bool kernels_only,
                          Diags *d);
/* emit_grad.c: the jvp module (docs/GRAD.md, "Forward mode"): jv (= ad_forward(fwd, spec)) as
 * @triton.jit <fwd>_jvp (the forward's parameters in the def's order, then the tangent pointers),
 * a header, and the host launcher launch_<fwd>_jvp.  False after a located error in d. */
bool emit_triton_jvp(Buf *out, const Func *fwd, const Func *jv, const AdSpec *spec, Diags *d);
/* The saving forward (ad_save.c: sv = save_kernel(fwd, plan, true)) as a
 * Python module: the kernel <name>_fwd and its launcher launch_<name>_fwd,
 * which takes the forward's runtime arguments, then the kad_saved buffer
 * (slot fp32 elements per program). */
bool emit_triton_saving(Buf *out, const Func *fwd, const Func *sv, int64_t slot, Diags *d);
/* The one-writer check of fwd's outputs (ad_race.c's plan p) as a Python module: its check
 * kernel <kernel>_race with launch_<kernel>_race, and check_<kernel>_races(grid, *args). */
struct RacePlan;
bool emit_triton_race(Buf *out, const Func *fwd, const struct RacePlan *p, Diags *d);

/* ------------------------------------------------------------------ */
/* emit_triton.c, emit_passes.c, emit_expr.c, emit_stmt.c: internals  */
/* ------------------------------------------------------------------ */

/* The state of one emit_triton call, shared by the emitter's three files
 * (the passes: emit_passes.c, with emit_triton.c's driver; expressions:
 * emit_expr.c; statements: emit_stmt.c).  The em_* functions are used by those files only. */

/* A printed expression and the precedence of its outermost operator (PR_*,
 * emit_expr.c). */
typedef struct Ex {
    const char *s;
    int prec;
} Ex;

/* How an operand position treats a Python literal (see const_literal_ok). */
typedef enum Ctx {
    CTX_ANY,     /* no literal: a typed constant (tl.full) */
    CTX_BIN,     /* weak scalar of a binary operator: converted straight to the peer's dtype */
    CTX_TT,      /* to_tensor first (fp32/i32/...), then promoted with the peer tensor */
    CTX_CONVERT, /* to_tensor, then cast to the pointee dtype (load other, store value) */
    CTX_SLOT,    /* assigned to a variable: to_tensor's dtype must be the IR dtype */
    CTX_RANGE,   /* a bound of range(): the loop variable's dtype comes from it */
} Ctx;

typedef struct InstInfo InstInfo;

/* Per instruction, mirroring the IR's region tree. */
struct InstInfo {
    const Inst *in;
    const Block *blk;  /* the block holding it */
    int idx;           /* its index in blk */
    InstInfo *parent;  /* the control-flow instruction whose region holds it, or NULL */
    int depth;         /* number of enclosing control-flow instructions */
    InstInfo **reg;    /* per region, the infos of its instructions */
    ValId *eff;        /* operands as printed: implicit broadcasts skipped */
    int pos, end;      /* print-order numbers: the instruction, and after its regions */
    int mid;           /* while: the number between the condition and the body */
    int region;        /* index of the region of parent holding it */
    int rstart[2];     /* if: print-order number where each region starts */
    bool effects;      /* writes memory or asserts (itself or inside its regions) */
    bool dead;         /* pure and unused: not printed */
    int desc;          /* an IF_DESC access printed as a descriptor load/store: 1 + its index in
                        * Emitter.descs; 0 otherwise */
};

/* A live interval [lo, hi] in print-order positions (see liveness). */
typedef struct Ival {
    int lo, hi;
} Ival;

/* Per value. */
typedef struct ValInfo {
    InstInfo *defi;    /* defining instruction; NULL for kernel and region params */
    const Block *blk;  /* block where it becomes visible */
    InstInfo *scope;   /* the control-flow instruction whose region blk is, or NULL */
    int depth;         /* control-flow depth of that block */
    int nuses;         /* uses as printed (live instructions, after stripping) */
    InstInfo *useri;   /* the user when nuses == 1 */
    int uarg;          /* its operand index there */
    bool cnst;         /* a constant (or broadcast of one): printed at each use */
    bool inl;          /* printed inside its single user's expression */
    bool param;        /* a kernel parameter */
    bool iv;           /* a for loop's induction variable */
    bool var;          /* printed as a Python variable */
    int def_pos, last_pos;
    /* coalescing (meaningful on class roots) */
    int cls;           /* union-find parent */
    int prio;          /* how strongly hint names the class: 3 param, 2 loop slot, 1 other */
    const char *hint;  /* sanitized preferred name, or NULL */
    const char *name;  /* the Python name, once assigned */
    Vec(Ival) ivals;   /* live intervals of all members; from liveness's end on sorted by lo */
    Vec(int) imax;     /* imax.v[i]: the largest hi of ivals.v[0..i] (interferes' lookup) */
    int ilo, ihi;      /* the span of ivals: classes whose spans are apart do not interfere */
    bool civ, cparam;  /* a var member is a loop variable, a kernel parameter */
    int8_t cx;         /* em_may_be_constexpr, once asked: 0 not yet, 1 no, 2 yes */
} ValInfo;

/* One emission: emit_passes.c's passes fill it, emit_expr.c and emit_stmt.c
 * print from it. */
typedef struct Emitter {
    Arena *a;
    const Func *f;
    Diags *d;
    const EmitOptions *opt;
    ValInfo *vi;
    int nvals;
    InstInfo *body;         /* infos of f->body */
    Vec(InstInfo *) order;  /* every instruction in print order */
    int counter;            /* next print-order number */
    bool measuring;         /* rendering only to measure line lengths: placeholder names */
    Vec(int) reads;         /* classes read by the expression being rendered */
    bool libdevice;         /* some op printed through libdevice */
    bool failed;
    const InstInfo *early_return; /* the last top-level `if`, without results: an
                                     empty then-branch prints as `return` */
    /* the names in use (open addressing) */
    const char **set;
    uint32_t mask;
    const char **ubase; /* emit_unique_name's bases (same mask) and per base the next */
    int *unext;         /* suffix to try: every smaller one is taken (names are never freed) */
    int ntmp;
    const char *kname;      /* the printed function's name */
    Vec(const Inst *) scans; /* the scans, in print order */
    const char **combine_names; /* per scan: its combine function (identical ones shared) */
    const char *helpers;    /* the combine functions' source, printed before the kernel */
    Vec(struct EmDesc) descs; /* the tensor descriptors of the accesses printed as TMA */
} Emitter;

/* A tensor descriptor the emitter prints (tl.make_tensor_descriptor): of
 * its first access (operand indices from ir_desc_at), once at the top of
 * the kernel when base, shape and strides are parameters or constants
 * (hoisted, named), else inline at each access.  flag: a backward's
 * gradient descriptor, used only under the constexpr TMA_<param> that the
 * launcher computes (emit_tma_flag), else 0. */
typedef struct EmDesc {
    InstInfo *first;
    ValId base, dims[2 * KAD_MAX_RANK]; /* shape[r], strides[r - 1] */
    int rank;
    bool nan, hoist;
    ValId flag;          /* the gradient parameter the flag is named after, or 0 */
    const char *name;    /* hoisted: the variable */
} EmDesc;

static inline Type em_vtype(const Emitter *E, ValId v) { return E->f->vals.v[v].ty; }
/* The name of the combine function of scan `in` (emit_triton.c). */
const char *em_combine_name(Emitter *E, const Inst *in);

/* emit_triton.c (em_error) and emit_passes.c (the rest) */

/* A located error in E->d; nothing while measuring (the final print
 * reports it once). */
void em_error(Emitter *E, Loc loc, const char *fmt, ...);
/* The root of v's class: the values that share one Python variable. */
int em_find(Emitter *E, int v);
/* Whether v may be a Triton constexpr at some launch: a scalar computed
 * only from scalar int kernel parameters (Triton's JIT makes one equal to 1
 * a constexpr) and constants.  Such a value must not become a variable that
 * a loop reassigns or an if-branch yields (Triton refuses a constexpr
 * there): it joins no class there, and its copies convert with tl.cast. */
bool em_may_be_constexpr(const Emitter *E, ValId v);
/* A hint as a Python identifier: characters outside [A-Za-z0-9_] become
 * '_' (`acc.1` -> `acc_1`), a leading digit gets a 'v' in front.  NULL
 * when there is no hint or it is purely numeric (an anonymous value). */
const char *em_py_ident(Arena *a, const char *h);

/* emit_expr.c */

/* The constant instruction v is (through broadcasts), or NULL when v is
 * not a constant. */
const Inst *em_const_inst(const Emitter *E, ValId v);
/* Operand i of info as printed in an operand position of kind ctx. */
Ex em_opnd(Emitter *E, InstInfo *info, int i, Ctx ctx);
/* The expression computing the (single) result of info. */
Ex em_gen_inst(Emitter *E, InstInfo *info);
/* The printed name of a variable value; records its class in E->reads. */
const char *em_var_name(Emitter *E, ValId v);
/* load/store/atomic_add arguments: "ptr[, value][, mask=m][, other=o]". */
const char *em_mem_args(Emitter *E, InstInfo *info);
/* An access printed as a descriptor's (info->desc): "DESC.load([offsets])"
 * or "DESC.store([offsets], value)". */
const char *em_desc_access(Emitter *E, InstInfo *info);
/* The Python string literal of s. */
const char *em_py_string(Emitter *E, const char *s);

/* emit_stmt.c */

/* Appends the copies dsts[k] = operand first+k of info as one parallel
 * assignment (copies within one class vanish, a cycle is a tuple
 * assignment), at indentation depth. */
void em_print_moves(Emitter *E, Buf *b, int depth, InstInfo *info, int first, const ValId *dsts, int n,
                    Ctx ctx);
/* The statements of one instruction (control flow: its header and inits
 * only when measuring); the instructions of a block. */
void em_print_inst(Emitter *E, Buf *b, InstInfo *info, int depth);
void em_print_block(Emitter *E, Buf *b, const Block *blk, InstInfo *infos, int depth);

/* ------------------------------------------------------------------ */
/* libm.c: the libdevice ops' values and names (ops.h, KAD_LIBM_OPS)     */
/* ------------------------------------------------------------------ */

/* Rounding of the *_round ops (ival): round to nearest even, toward zero,
 * down, up; libdevice's suffixes. */
enum { RND_RN, RND_RZ, RND_RD, RND_RU };
extern const char *const libm_rounding_names[4];
bool op_is_libm(int op);
/* The operand index that is an i32 (ldexp, powi: 1; jn, yn: 0), or -1. */
int libm_int_operand(int op);
/* The libdevice function op prints as (add_round {round = rz}: "add_rz"). */
const char *libm_name(Arena *a, int op, int64_t ival);
/* One lane's value: float operands a, b, c, the int operand n; f32: the
 * result is fp32 (the *_round ops round in float). */
double libm_eval(int op, int64_t ival, bool f32, double a, double b, double c, int64_t n);

/* ad_libm.c: dy/da_k of a libdevice op from the primal operands pa and
 * result py, emitted into b of f; 0 where y does not depend on a_k. */
ValId ad_libm_partial(Func *f, Block *b, Loc loc, const Inst *in, int k, const ValId *pa, ValId py);

/* ------------------------------------------------------------------ */
/* interp.c                                                            */
/* ------------------------------------------------------------------ */

/* One runtime argument, in the order of Func.params. */
typedef struct InterpArg {
    void *data;     /* pointer params: host buffer */
    int64_t nbytes; /* its size in bytes (bounds checks) */
    int64_t i;      /* integer scalars */
    double f;       /* float scalars */
} InterpArg;

typedef enum InterpMode {
    IM_AS_WRITTEN, /* each float op rounded to its dtype (fp32, fp16, bf16) */
    IM_F64,        /* every float computed in double; float buffers hold doubles */
} InterpMode;

/* Runs every program of f on one grid, in order (x fastest), with f's
 * runtime arguments (nargs == f->nparams; its ranges are checked).  Errors
 * (out-of-bounds access, failed device_assert, ...) name the source line and
 * the program id and stop the run.  Returns true on success.  A backward's
 * host steps (flags, tapes, several kernels) are plan_run's (src/plan/). */
bool interp_run(const Func *f, const int64_t grid[3], const InterpArg *args, int nargs,
                InterpMode mode, Diags *d);
/* Whether f's int arguments lie in the ranges it was specialized for (Func.ranges); false
 * after a located error in d. */
bool interp_ranges_hold(const Func *f, const InterpArg *args, Diags *d);

/* ------------------------------------------------------------------ */
/* ad_race.c: one writer per element of a differentiated output        */
/* ------------------------------------------------------------------ */

#define KAD_RACE_PARAM "kad_race_info" /* the check kernel's last parameter: 2 i32 per site */
/* A store into a checked output: the forward's instruction and its parameter. */
typedef struct RaceSite {
    const Inst *store;
    int param; /* the parameter it stores into, or -1: a pointer selected among several */
    const char *why_programs, *why_lanes; /* a collision the analysis found (its witness), or NULL */
    bool lanes_proven; /* its lanes write distinct elements in every launch: the check kernel's
                        * own-code hits are then iterations overwriting (ordered), not a race */
} RaceSite;
typedef Vec(RaceSite) RaceSiteVec;
/* Whether a launch of fwd may write one element of a differentiated output from two
 * programs, or from two lanes of one store (docs/AD.md, "One writer per element"). */
typedef struct RacePlan {
    RaceSiteVec sites;    /* the stores into the outputs, in program order (site s = index) */
    uint64_t tagged;      /* bit p: parameter p's buffer is replaced by a tag buffer (the outputs the
                           * sites store into, and the other candidates of a selected pointer) */
    Access *acc;          /* fwd's analysis: the conditions' symbols */
    AccCondVec skip;      /* no check when all of these hold for the launch (and !always) */
    bool always;          /* some store kad cannot prove: check (on the first launch of a key) */
    Func *kernel;         /* the check kernel: fwd's runtime parameters (the outputs' as *i64 tag
                           * buffers laid out like them), then KAD_RACE_PARAM; NULL: why */
    const char *why;      /* why there is no check kernel (a launch that needs one is refused) */
} RacePlan;
/* The plan for a backward of fwd w.r.t. spec: NULL when every store into spec's outputs is
 * proven to have one writer per element for every launch. */
RacePlan *race_plan(Arena *a, const Func *fwd, const AdSpec *spec);
/* Whether this launch needs no check: every condition holds (iargs: the int parameters). */
bool race_skip(const RacePlan *p, const int64_t *iargs, const int64_t grid[3]);
/* The refusal for site s (programs: two programs met there; else two lanes or iterations). */
const char *race_message(Arena *a, const Func *fwd, const RacePlan *p, int s, bool programs);
/* The check of one launch of fwd on the interpreter (args: fwd's, in mode's layout): true
 * when no element has two writers; else false after a located error. */
bool race_run(const Func *fwd, const RacePlan *p, const int64_t grid[3], const InterpArg *args, int nargs,
              InterpMode mode, Diags *d);
/* ------------------------------------------------------------------ */
/* write/gemm.c: deterministic operand gradients of a tiled matmul     */
/* ------------------------------------------------------------------ */

enum { GEMM_MAX_GROUP = 8 }; /* the most K iterations one program of an operand kernel owns */
/* The launch order of an operand kernel k: a 1-D grid of tiles x groups
 * (groups = cdiv(trips, R)); program p takes, within blocks of GEMM_ORDER
 * consecutive tile ids, first = p / (GEMM_ORDER * groups) * GEMM_ORDER,
 * rows = min(tiles - first, GEMM_ORDER), tile id first + (p % (GEMM_ORDER *
 * groups)) % rows and K group (p % (GEMM_ORDER * groups)) / rows: programs
 * running together share both operands in L2 (a bijection onto [0, tiles) x
 * [0, groups); each element's sum order is unchanged). */
enum { GEMM_ORDER = 8 };
/* The contraction chunk of the operand kernels (GemmOperand.chunk). */
enum { GEMM_CHUNK = 64 };
/* One operand gradient of the plan: kernel k (grid (tiles of its own id *
 * cdiv(trips, group), 1, 1), in GEMM_ORDER's order) writes d_<name> = bw param `slot` with plain stores:
 * those of the one-iteration kernel (grid (tiles, trips)), which are
 * disjoint when cond holds (NULL: always; symbols: its params, its grid). */
typedef struct GemmOperand {
    const char *name;
    int slot;
    int own;            /* 0: the program's id is u (loops over v), 1: v */
    int group;          /* R: the K iterations one program owns (grid (tiles * cdiv(trips, R), 1, 1)) */
    bool wide;          /* k computes them as one tile R times as wide along the K axis (one dot),
                         * not as R loop bodies (write/gemm.c, "Widening") */
    int chunk;          /* > 0: k and single sum over the other tile id's lanes in chunks of this many
                         * (one dot per chunk into the accumulator; write/gemm.c, "Chunks"); 0: whole */
    Func *k;
    Func *single;       /* when R > 1: the one-iteration kernel (grid (tiles, trips), named
                         * <k>_single), which the launcher runs instead of k when k's grid has
                         * fewer programs than the GPU has SMs (the same sums, bit for bit);
                         * else NULL */
    Access *acc;        /* of the one-iteration kernel (R = 1), whose stores k's are */
    const AccCond *cond;
    const AccCover *cover; /* what that kernel's store reaches over its grid (tiles, trips): when it
                            * covers d_<name>'s view, the launcher skips its zero-fill; or NULL */
} GemmOperand;
/* How the GEMM form of a backward runs (Program.gemm).  Every kernel takes
 * the backward's contract arguments, then kad_dacc (U * V * tile elements
 * of sdt), kad_tiles_u (U), kad_tiles_v (V).  first: the forward's grid,
 * stores each program's dacc tile at (u, v); then each operand kernel.
 * Valid for a launch when the programs map one to one onto [0, U) x [0, V)
 * through id[0], id[1] (checked per launch) and each operand's cond holds;
 * else the atomic backward (the Func itself) runs. */
typedef struct GemmPlan {
    Func *first;
    const TapeExpr *id[2];  /* u, v over the grid, program ids and int params */
    const TapeExpr *trips;  /* the K loop's iterations */
    int64_t tile;           /* elements of one dacc tile */
    Dtype sdt;              /* the scratch's dtype */
    int nargs;              /* the contract's arguments */
    const char *data;       /* the name of the tile the loop reads (dacc) */
    int n;
    GemmOperand op[2];
} GemmPlan;
/* Gives bw (ad_backward's, verified) a GEMM plan for the n input gradients
 * params[slot[j]] (names[j]) when its pattern holds.  Returns NULL when it
 * did (P->gemm set) or when d holds a kad bug; else why not (P unchanged). */
const char *ad_gemm(Arena *a, Program *P, const int *slot, const char *const *names, int n, Diags *d);

/* ------------------------------------------------------------------ */
/* write/gather.c: a stencil's input gradient as a gather              */
/* ------------------------------------------------------------------ */

enum { GATHER_SITES_MAX = 16 };
/* One gathered input gradient: kernel k (its params: the backward's
 * contract, params [0, plan_nargs)) runs on the forward's grid plus
 * grid_add[d] programs along each axis d and stores every element of
 * d_<name> that a site of the backward added into, once. */
typedef struct GatherIn {
    const char *name;
    int slot;            /* the backward's param d_<name> */
    Func *k;
    int64_t grid_add[3];
    int nsites;
    int flag;            /* the index in Program.flags of the launch condition k needs (its stores
                          * are distinct elements; when false, the backward's sites add with
                          * tl.atomic_add), or -1: always */
    Access *acc;         /* k's analysis, and the condition (NULL: none) */
    const AccCond *cond;
    const Inst *const *sites; /* ad_gather_check's: the sites in its bw */
    bool scatter;        /* not a gather: k adds the scattered sites' adjoints with atomic_adds
                          * after the backward stored the rest (ad_scatter_split); nsites of
                          * them, grid_add 0, flag -1 */
    Access *cover_acc;   /* a gather: what k stores at least (the site of offset 0 in the backward
                          * ad_gather_check read, analysed by cover_acc), or NULL with cover_why */
    const AccCover *cover;
    const char *cover_why;
} GatherIn;
typedef struct GatherPlan {
    int n;
    GatherIn *in;
    int main;            /* the backward kernel itself: 0 launched, 1 not (nothing left to do), 2 launched
                          * unless every gather's flag holds (then it has nothing left to do) */
} GatherPlan;
/* Can the gradient of the input x whose gradient param is bw->params[slot]
 * be gathered (bw: ad_backward's, simplified, its sites for x top-level
 * atomic_adds)?  NULL when it can, with *out its gather kernel (out->flag:
 * 0 always, 1 under out->cond, a condition on the kernel's grid in out->acc's
 * symbols), else why not. */
const char *ad_gather_check(Arena *a, const Program *P, int slot, const char *name, GatherIn *out);
/* Gives bw (the final backward, of the same contract: its sites for x may
 * lie in a folded loop) the gather kernel gi of ad_gather_check: every
 * atomic_add into d_x is removed, or, when gi->cond, wrapped as
 * `if flag: pass else: atomic_add` with flag (a bw i1 param, a FuncFlag of
 * bw) given gi's condition.  False, bw unchanged, when flag does not fit. */
bool ad_gather(Arena *a, Program *P, const GatherIn *gi, ValId flag);
/* The sites of ad_strip_sites: the atomic_adds of b (regions included) through a
 * pointer der marks (der gets the pointers computed from marked ones, in program
 * order, a loop's carried pointer from a marked init), whose sattr is mark when mark
 * is not NULL.  keep: every other store, atomic_add and barrier is removed, the
 * sites stay; else the sites are removed, or wrapped in `if flag: pass else: site`
 * when flag != 0.  *n counts the sites. */
typedef struct StripSites {
    ValId flag;
    const char *mark;
    bool keep;
} StripSites;
void ad_strip_sites(Func *bw, Block *b, uint8_t *der, const StripSites *how, int *n);

/* write/scatter.c: scattered sites in a kernel of their own (docs/AD.md, "Scattered sites").
 * The sattr of the atomic_adds adj_load makes for them. */
#define AD_SCATTER_MARK "kad_scatter"
/* Does b (regions included) hold an atomic_add marked AD_SCATTER_MARK? */
bool ad_has_scatter(const Block *b);
/* Moves bw's marked atomic_adds into one kernel per input gradient (params[slot],
 * nfwd <= slot < plan_nargs), a pruned copy of bw keeping only them and what they
 * need, launched after bw on the forward's grid (Program.gather, GatherIn.scatter).
 * bw must be a plain backward (no fold, GEMM form, gather, flags or tapes), and the
 * copies must read nothing a backward kernel writes.  False, bw unchanged, when
 * that does not hold: then the caller builds the backward without scattered sites. */
bool ad_scatter_split(Arena *a, Program *P, int nfwd);

#endif
