/* triton.h -- the Triton (Python) front end's entry points: tokens
 * (lex.c), the AST (parse_py.c, parse_expr.c, parse_stmt.c), its dump
 * (ast_dump.c), signatures and specialization to the IR (sema_sig.c,
 * sema.c), and the list of builtins kad knows (sema_builtins.c).
 *
 * Included by the front end's files and by the stages that call it
 * (kad.c, main.c; tests/c, fuzz/).  What only the front end's files
 * share is front/front.h; the CUDA C front end's entry points are
 * front/cuda.h.
 */
#ifndef KAD_TRITON_H
#define KAD_TRITON_H

#include "base/base.h"
#include "ir/ir.h"

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
/* sema_builtins.c: the names kad knows                               */
/* ------------------------------------------------------------------ */

/* The names of triton.language kad knows (`kad builtins`), one per line:
 * "NAME supported|refused AD", AD the IR op's AD class from ops.h ('D', 'N',
 * 'Z') for builtins that lower to one op, else '-'.  Names not listed are
 * refused as unknown ("'tl.X' is not supported by kad yet"). */
void builtin_surface(Buf *b);

#endif
