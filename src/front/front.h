/* front.h -- the front end's private header: what the files of src/front/
 * share among themselves and no other stage sees.  Everything other stages
 * call is front/triton.h's (lex, parse_module, sema_kernel, ...).
 *
 * Specialization's values and state (first below): SVals and Lower, the
 * lower_* operators, the Sema state of sema.c, sema_sig.c and
 * sema_stmt.c, the ops_* toolkit of sema_ops.c and sema_builtins.c.
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
 * The operations on values: sema_ops.c (the ops_* toolkit below:
 * SVals, Triton's promotion, emission, operands), sema_const.c (constexpr
 * folding and text), sema_operators.c (the lower_* operators below).
 *
 * The parser: parse_py.c (state, errors, defs, module level),
 * parse_expr.c (expressions), parse_stmt.c (statements).
 */
#ifndef KAD_FRONT_H
#define KAD_FRONT_H

#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/triton.h"

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

/* SVal construction (sema_ops.c; the rest are above). */
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
