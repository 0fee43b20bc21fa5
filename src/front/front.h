/* front.h -- the front end's private header: what the files of src/front/
 * share among themselves and no other stage sees.  Everything other stages
 * call stays in kad_int.h (lex, parse_module, sema_kernel, ...).
 *
 * The builtins (sema_builtins.c and the files of its handlers):
 * sema_builtins.c binds a call's arguments to a Builtin's parameters (a
 * Call) and dispatches through its tables to one handler per builtin;
 * the handlers live in the files named for their job:
 *   sema_memory.c   creation, loads, stores, atomics, block pointers,
 *                   tensor descriptors
 *   sema_math.c     elementwise math, reductions, scans, dot, libdevice
 *   sema_shapes.c   permutes, reshapes, broadcasts, join/split, gather,
 *                   sort, histogram
 *   sema_convert.c  casts, hints, assertions, random numbers, constexpr
 *                   helpers, Python builtins
 * and check their arguments with the helpers of sema_builtins.c below.
 *
 * The operations on values: sema_ops.c (the ops_* toolkit of kad_int.h:
 * SVals, Triton's promotion, emission, operands), sema_const.c (constexpr
 * folding and text), sema_operators.c (the lower_* operators of kad_int.h).
 *
 * The parser: parse_py.c (state, errors, defs, module level),
 * parse_expr.c (expressions), parse_stmt.c (statements).
 */
#ifndef KAD_FRONT_H
#define KAD_FRONT_H

#include <string.h>

#include "kad_int.h"

/* ------------------------------------------------------------------ */
/* Builtin calls (sema_builtins.c)                                     */
/* ------------------------------------------------------------------ */

#define MAX_PARAMS 12 /* the most parameters of any builtin (tl.load has 8) */

typedef struct Builtin Builtin;

/* One call being lowered: the bound arguments by parameter slot. */
typedef struct Call {
    Lower *L;
    const Builtin *def;           /* the table entry called */
    const char *fname;            /* as the user wrote it: "tl.load", "x.to" */
    int np;                       /* parameters of def */
    const char *pname[MAX_PARAMS]; /* their names, for messages and keywords */
    SVal a[MAX_PARAMS];           /* the argument bound to each parameter */
    bool has[MAX_PARAMS];         /* whether the call gave one (else the default) */
    Loc loc;                      /* the call, where every message points */
} Call;

typedef SVal (*BuiltinFn)(Call *c);

/* One entry of a namespace's table. */
struct Builtin {
    const char *name; /* the name in its namespace: "load" */
    BuiltinFn fn;
    /* Parameters: "x,axis=,*shape": `=` marks optional ones, `*` collects
     * the remaining positional arguments into a tuple.  NULL: the handler
     * refuses the call whatever its arguments. */
    const char *params;
    int aux; /* handler-specific: an OpKind, a flag */
};

/* Argument helpers (sema_builtins.c): each reports a located error naming
 * the argument and returns false (or 0) when it is not what is asked. */
bool sema_absent(Call *c, int i);
bool arg_wrong(Call *c, int i, const char *what);
bool arg_int(Call *c, int i, int64_t *out);
bool arg_bool(Call *c, int i, bool dflt, bool *out);
bool arg_str(Call *c, int i, const char *dflt, const char **out);
bool arg_dtype(Call *c, int i, Dtype *out, Dtype *elem);
bool sema_int_list(Call *c, SVal x, bool allow_int, int64_t *out, int max, int *n, const char *what);
SVal sema_unwrap_iterable(SVal t);
bool sema_check_shape(Call *c, int rank, const int64_t *dims);
bool arg_shape(Call *c, SVal x, int *rank, int32_t *shape);
ValId sema_to_value(Lower *L, SVal x, const char *ctx, Loc loc);
ValId arg_tile(Call *c, int i);
bool sema_wrap_axis(Call *c, int64_t axis, int rank, int *out);
/* A mask operand (sema_memory.c, also tl.device_assert's). */
bool arg_mask(Call *c, int i, Opnd *o);

/* Handler-specific bits of Builtin.aux that the tables set: math that is
 * fp32 only (sema_math.c's b_math1), and libdevice's flags and rounding
 * (b_libdevice). */
enum { MF_FP32_ONLY = 1 << 16 };
enum {
    LD_ISFIN = OP_COUNT + 1, /* isfinited / finitef: not (isnan or isinf) */
    LD_I32_RESULT = 1 << 17, /* libdevice returns int32 (isnan, isinf) */
    LD_INT_OK = 1 << 18,     /* also accepts int32/int64 (abs) */
    LD_ROUND_SHIFT = 20,     /* the *_round ops: the rounding (RND_*) at this bit */
};
#define LD_RZ (RND_RZ << LD_ROUND_SHIFT)
#define LD_RD (RND_RD << LD_ROUND_SHIFT)
#define LD_RU (RND_RU << LD_ROUND_SHIFT)

/* The methods of a tensor descriptor (sema_memory.c), which lower_call
 * dispatches to. */
extern const Builtin sema_desc_load_method, sema_desc_store_method;

/* The handlers, by file (the tables of sema_builtins.c name them). */
/* sema_memory.c */
SVal b_program_id(Call *c);
SVal b_arange(Call *c);
SVal b_full(Call *c);
SVal b_zeros_like(Call *c);
SVal b_make_block_ptr(Call *c);
SVal b_advance(Call *c);
SVal b_load(Call *c);
SVal b_store(Call *c);
SVal b_make_tensor_descriptor(Call *c);
SVal b_desc_load(Call *c);
SVal b_desc_store(Call *c);
SVal b_atomic(Call *c);
/* sema_math.c */
SVal b_where(Call *c);
SVal b_minmax2(Call *c);
SVal b_clamp(Call *c);
SVal b_math1(Call *c);
SVal b_abs(Call *c);
SVal b_fma(Call *c);
SVal b_umulhi(Call *c);
SVal b_fdiv(Call *c);
SVal b_div_rn(Call *c);
SVal b_sigmoid(Call *c);
SVal b_cdiv(Call *c);
SVal b_sum(Call *c);
SVal b_maxmin(Call *c);
SVal b_argmaxmin(Call *c);
SVal b_scan(Call *c);
SVal b_assoc_scan(Call *c);
SVal b_softmax(Call *c);
SVal b_dot(Call *c);
SVal b_libdevice_int(Call *c);
SVal b_libdevice(Call *c);
SVal b_refuse(Call *c);
/* sema_shapes.c */
SVal b_permute(Call *c);
SVal b_reshape(Call *c);
SVal b_ravel(Call *c);
SVal b_broadcast_to(Call *c);
SVal b_broadcast(Call *c);
SVal b_expand_dims(Call *c);
SVal b_join(Call *c);
SVal b_interleave(Call *c);
SVal b_split(Call *c);
SVal b_flip(Call *c);
SVal b_gather(Call *c);
SVal b_sort(Call *c);
SVal b_histogram(Call *c);
/* sema_convert.c */
SVal b_cast(Call *c);
SVal b_hint(Call *c);
SVal b_static_assert(Call *c);
SVal b_nothing(Call *c);
SVal b_device_assert(Call *c);
SVal b_rand(Call *c);
SVal b_constexpr(Call *c);
SVal b_loop_only(Call *c);
SVal b_next_pow2(Call *c);
SVal b_py_minmax(Call *c);
SVal b_py_abs(Call *c);
SVal b_py_conv(Call *c);
SVal b_py_len(Call *c);

/* ------------------------------------------------------------------ */
/* The parser (parse_py.c, parse_expr.c, parse_stmt.c)                 */
/* ------------------------------------------------------------------ */

/* parse_py.c holds the parser's state, its errors and the AST
 * construction, function definitions and the module level; parse_expr.c
 * the expressions; parse_stmt.c the statements of kernels. */

typedef Vec(Expr *) ExprVec;
typedef Vec(Stmt *) StmtVec;

typedef struct Parser {
    Arena *a;
    Diags *d;
    const char *file;
    Token *t;      /* the tokens, ending in TK_EOF */
    int ntok;
    int i;         /* the current token */
    int rec;       /* recursion depth of the parse functions */
    bool quiet;    /* parsing host code speculatively: errors are not reported */
    bool failed;   /* an error in the current statement: unwind, then resync */
    bool qfail;    /* an error while quiet (sticky until cleared): the speculation failed */
    bool lazy;     /* parse_module_lazy: errors in jit functions are recorded on them */
    Module *m;
    Expr *bad;     /* returned after an error (an EX_NONE) */
} Parser;

/* ---- tokens ---- */

/* The token primitives, static inline here: each is a line or two, and as
 * external functions `accept` would clash with POSIX accept() (a global
 * symbol of the sanitizer and fuzzer builds' runtimes). */
static inline Token *peek(Parser *P) { return &P->t[P->i]; }
static inline Token *peek2(Parser *P) { return &P->t[P->i + (P->t[P->i].kind != TK_EOF)]; }
static inline Token *advance(Parser *P)
{
    Token *t = &P->t[P->i];
    if (t->kind != TK_EOF)
        P->i++;
    return t;
}
static inline bool at(Parser *P, TokKind k) { return peek(P)->kind == k; }
static inline bool accept(Parser *P, TokKind k)
{
    if (!at(P, k))
        return false;
    advance(P);
    return true;
}

static inline bool tok_is_word(const Token *t, const char *w)
{
    /* strncmp stops at w's NUL, so a shorter w never reads past its end */
    return t->kind == TK_NAME && t->text[0] == w[0] && !strncmp(t->text, w, (size_t)t->len) &&
           w[t->len] == 0;
}
static inline bool at_kw(Parser *P, const char *w) { return tok_is_word(peek(P), w); }
static inline bool accept_kw(Parser *P, const char *w)
{
    if (!at_kw(P, w))
        return false;
    advance(P);
    return true;
}

/* The rest of the token helpers, errors and AST construction (parse_py.c). */
bool tok_is_keyword(const Token *t);
char *tok_str(Parser *P, const Token *t);
const char *tok_desc(Parser *P, const Token *t);
void parse_perr(Parser *P, Loc loc, const char *fmt, ...);
bool parse_expect(Parser *P, TokKind k, const char *why);
bool parse_enter(Parser *P);
void parse_leave(Parser *P);
Expr *parse_new_expr(Parser *P, ExprKind k, Loc loc);
Expr *parse_finish(Parser *P, Expr *e);

/* Copies a vector of Expr * into an arena array. */
#define VEC_COPY(P, vec, out, nout)                                                   \
    do {                                                                              \
        (nout) = (vec).n;                                                             \
        (out) = (vec).n ? arena_alloc((P)->a, sizeof *(vec).v * (size_t)(vec).n) : NULL; \
        if ((vec).n)                                                                  \
            memcpy((out), (vec).v, sizeof *(vec).v * (size_t)(vec).n);                \
    } while (0)

/* Expressions (parse_expr.c). */
Expr *parse_test(Parser *P);
Expr *parse_testlist(Parser *P, bool targets);

/* Statements (parse_stmt.c): the skips by token structure and parse_resync
 * after an error, which module level uses too, and blocks. */
void parse_skip_line(Parser *P);
void parse_skip_block(Parser *P);
void parse_skip_stmt(Parser *P);
void parse_resync(Parser *P);
Stmt *parse_small_stmt(Parser *P);
Stmts parse_block(Parser *P, const char *what, int line);

/* ------------------------------------------------------------------ */
/* Operations on values (sema_ops.c, sema_const.c, sema_operators.c)   */
/* ------------------------------------------------------------------ */

/* SVal construction (sema_ops.c; the rest are kad_int.h's). */
SVal sval_str(const char *s);
SVal sval_ptr_dtype(Dtype elem);
SVal sval_block_type(Type t, bool of_block);
SVal sema_dtype_unblock(SVal x);
SVal sval_method(Lower *L, SVal self, const char *name);
/* Triton's to_tensor_type of a Python number (sema_ops.c). */
Dtype const_dtype(ConstVal c);
/* The broadcast shape of two operands, and both materialized at dtype dt
 * and that shape (sema_ops.c); false after an error naming op. */
bool sema_opnd_shape(Lower *L, const Opnd *a, const Opnd *b, int *rank, int32_t *shape, const char *op,
                     Loc loc);
bool sema_materialize_pair(Lower *L, const Opnd *a, const Opnd *b, Dtype dt, const char *op, Loc loc,
                           ValId *va, ValId *vb);

/* The operators as Python writes them, by BinOp and CmpOp (sema_const.c). */
extern const char *const sema_binop_sym[];
extern const char *const sema_cmp_sym[];
/* A binary operator on two constants, folded with Python semantics
 * (sema_const.c). */
SVal sema_fold_binop(Lower *L, BinOp op, SVal x, SVal y, Loc loc);

#endif
