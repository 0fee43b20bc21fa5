/* sema.c -- specialization of a kernel: Module + name + signature -> Func.
 *
 * Job: parse signature strings; bind the kernel's parameters (runtime ones
 * become Func params, constexpr ones constants); run the kernel's statements
 * the way Triton's JIT does, with constexprs folded: names and scopes,
 * module globals and imports, `if` on constexprs (only the taken branch is
 * lowered), `if`/`for`/`while` on runtime values (structured IR regions with
 * explicit yields), static_range unrolling, early `return`, and inlining of
 * @triton.jit helpers.  Every operation on values (operators, tl.*
 * builtins, methods, attributes, conversions) is delegated to sema_ops.c
 * through the lower_* interface of kad_int.h.
 *
 * Model: an expression evaluates to an SVal; a name is bound to an SVal in
 * the environment (Env) of the current Frame, one Frame per inlined call.
 * Control flow never mutates an environment shared with another path:
 * each branch or loop body runs on a copy, and the copies are merged
 * afterwards into the values the IR region yields.  So an SSA value defined
 * inside a region can never be named outside it.
 *
 * Early return: when a statement list holds an `if` one of whose branches
 * may return, the statements after the `if` (and the continuations of the
 * enclosing lists of the same function) run inside each branch that falls
 * through (Cont).  A branch that returns never reaches them, so the rest
 * runs exactly when Python would run it; code is duplicated only when a
 * branch returns on some paths and not on others.
 *
 * Requires: a parsed Module (parse_py.c) and sema_ops.c.  Guarantees: on
 * success a Func whose regions end in their terminators (the kernel body has
 * none) and whose values are defined before use; after any error NULL, with
 * every error located at the construct that caused it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kad_int.h"

/* Deeper nesting of helper calls than this is taken for recursion. */
#define MAX_INLINE_DEPTH 64
/* Calls this deep or deeper get no "in the call of" note. */
#define MAX_NOTE_DEPTH 4
/* Upper bound on the iterations of an unrolled loop (static_range, --unroll). */
#define MAX_UNROLL 65536

/* ------------------------------------------------------------------ */
/* Signatures                                                          */
/* ------------------------------------------------------------------ */

/* Pointer element types and runtime scalar types a signature may name. */
static const Dtype sig_ptr_dtypes[] = {DT_F16, DT_BF16, DT_F32, DT_F64, DT_I1, DT_I8,
                                       DT_U8,  DT_I16,  DT_I32, DT_I64, DT_U32};
static const Dtype sig_scalar_dtypes[] = {DT_I1, DT_I32, DT_I64, DT_U32, DT_F32, DT_F64};

static bool dtype_in(Dtype dt, const Dtype *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == dt)
            return true;
    return false;
}

static bool is_ident_start(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

/* Locations inside the signature string: one line, column = offset + 1. */
static Loc sig_loc(size_t off) { return (Loc){"<sig>", 1, (int)off + 1}; }

static size_t skip_ws(const char *s, size_t i)
{
    while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')
        i++;
    return i;
}

/* The dtype whose Triton name is s[0..n) ("float16"), DT_VOID if none. */
static Dtype dtype_by_triton_name(const char *s, size_t n)
{
    for (int dt = DT_I1; dt < DT_PTR; dt++) {
        const char *t = dtype_triton_name((Dtype)dt);
        if (strlen(t) == n && !memcmp(t, s, n))
            return (Dtype)dt;
    }
    return DT_VOID;
}

/* number := ['+'|'-'] (DECIMAL | '0x' HEX | '0o' OCT | '0b' BIN | FLOAT)
 * Python's literal rules, ints limited to int64. */
static bool sig_number(Arena *a, Diags *d, const char *s, size_t *pi, SigParam *p)
{
    size_t i = *pi, j = i;
    if (s[j] == '+' || s[j] == '-')
        j++;
    size_t body = j;
    bool prefixed = s[body] == '0' && s[body + 1] && strchr("xXoObB", s[body + 1]);
    while (s[j] && (is_ident_char(s[j]) || s[j] == '.' ||
                    ((s[j] == '+' || s[j] == '-') && !prefixed && j > body &&
                     (s[j - 1] == 'e' || s[j - 1] == 'E'))))
        j++;
    char *tok = arena_strndup(a, s + i, j - i);
    const char *digits = tok + (body - i);
    if (!prefixed && strpbrk(digits, ".eE")) {
        char *end;
        errno = 0;
        double v = strtod(tok, &end);
        if (*end || end == tok || !is_digit(digits[0] == '.' ? digits[1] : digits[0])) {
            diag_error(d, sig_loc(i), "invalid number '%s' for parameter '%s'", tok, p->name);
            return false;
        }
        if (errno == ERANGE && (v > 1 || v < -1)) {
            diag_error(d, sig_loc(i), "float '%s' for parameter '%s' is out of range", tok, p->name);
            return false;
        }
        p->kind = SIG_CONST;
        p->value = (ConstVal){.kind = CK_FLOAT, .f = v};
    } else {
        int base = 10;
        if (prefixed) {
            char c = digits[1];
            base = c == 'x' || c == 'X' ? 16 : c == 'o' || c == 'O' ? 8 : 2;
            digits += 2;
        }
        char *end;
        errno = 0;
        unsigned long long u = is_ident_char(digits[0]) ? strtoull(digits, &end, base) : 0;
        bool neg = tok[0] == '-';
        if (!is_ident_char(digits[0]) || *end || (base == 10 && digits[0] == '0' && digits[1])) {
            diag_error(d, sig_loc(i), "invalid number '%s' for parameter '%s'", tok, p->name);
            return false;
        }
        if (errno == ERANGE || u > (neg ? (unsigned long long)INT64_MAX + 1 : (unsigned long long)INT64_MAX)) {
            diag_error(d, sig_loc(i), "integer '%s' for parameter '%s' does not fit in 64 bits", tok,
                       p->name);
            return false;
        }
        p->kind = SIG_CONST;
        p->value = (ConstVal){.kind = CK_INT, .i = neg ? (int64_t)(0 - u) : (int64_t)u};
    }
    *pi = j;
    return true;
}

/* spec := '*' DTYPE                       pointer (runtime)
 *       | DTYPE                           scalar type (or dtype constant)
 *       | number | 'True' | 'False' | 'None' | STRING
 *       | ('tl.' | 'triton.language.') TRITON_DTYPE */
static bool sig_spec(Arena *a, Diags *d, const char *s, size_t *pi, SigParam *p)
{
    size_t i = *pi;
    char c = s[i];
    if (c == '*') {
        i = skip_ws(s, i + 1);
        size_t w = i;
        while (is_ident_char(s[i]))
            i++;
        Dtype dt = dtype_parse(s + w, i - w);
        if (i == w || !dtype_in(dt, sig_ptr_dtypes, sizeof sig_ptr_dtypes / sizeof *sig_ptr_dtypes)) {
            diag_error(d, sig_loc(w),
                       "expected a pointer element type after '*' for parameter '%s' (fp16, bf16, "
                       "fp32, fp64, i1, i8, u8, i16, i32, i64 or u32)",
                       p->name);
            return false;
        }
        p->kind = SIG_PTR;
        p->dt = dt;
    } else if (c == '\'' || c == '"') {
        size_t j = i + 1;
        while (s[j] && s[j] != c)
            j++;
        if (!s[j]) {
            diag_error(d, sig_loc(i), "unterminated string for parameter '%s'", p->name);
            return false;
        }
        p->kind = SIG_CONST;
        p->value = (ConstVal){.kind = CK_STR, .s = arena_strndup(a, s + i + 1, j - i - 1)};
        i = j + 1;
    } else if (is_digit(c) || c == '-' || c == '+' || c == '.') {
        if (!sig_number(a, d, s, &i, p))
            return false;
    } else if (is_ident_start(c)) {
        size_t w = i;
        while (is_ident_char(s[i]) || (s[i] == '.' && is_ident_start(s[i + 1])))
            i++;
        const char *word = s + w;
        size_t n = i - w;
        if (n == 4 && !memcmp(word, "True", 4)) {
            p->kind = SIG_CONST;
            p->value = (ConstVal){.kind = CK_BOOL, .i = 1};
        } else if (n == 5 && !memcmp(word, "False", 5)) {
            p->kind = SIG_CONST;
            p->value = (ConstVal){.kind = CK_BOOL, .i = 0};
        } else if (n == 4 && !memcmp(word, "None", 4)) {
            p->kind = SIG_CONST;
            p->value = (ConstVal){.kind = CK_NONE};
        } else if (memchr(word, '.', n)) {
            size_t pre = n > 3 && !memcmp(word, "tl.", 3) ? 3
                         : n > 16 && !memcmp(word, "triton.language.", 16) ? 16 : 0;
            Dtype dt = pre ? dtype_by_triton_name(word + pre, n - pre) : DT_VOID;
            if (dt == DT_VOID) {
                diag_error(d, sig_loc(w), "unknown dtype '%.*s' for parameter '%s'", (int)n, word,
                           p->name);
                return false;
            }
            p->kind = SIG_CONST;
            p->value = (ConstVal){.kind = CK_DTYPE, .dt = dt};
        } else {
            Dtype dt = dtype_parse(word, n);
            if (dt == DT_VOID || dt == DT_PTR) {
                diag_error(d, sig_loc(w), "unknown type or value '%.*s' for parameter '%s'", (int)n,
                           word, p->name);
                return false;
            }
            /* a runtime scalar, or a dtype constant for a constexpr
             * parameter: sema_kernel decides from the annotation */
            p->kind = SIG_SCALAR;
            p->dt = dt;
        }
    } else {
        diag_error(d, sig_loc(i), "expected a type or a value for parameter '%s'", p->name);
        return false;
    }
    *pi = i;
    return true;
}

/* signature := [ param (',' param)* ]     param := NAME '=' spec */
bool sig_parse(Arena *a, Diags *d, const char *text, Signature *out)
{
    memset(out, 0, sizeof *out);
    const char *s = text;
    size_t i = skip_ws(s, 0);
    if (!s[i])
        return true;
    for (;;) {
        i = skip_ws(s, i);
        size_t ns = i;
        while (is_ident_char(s[i]))
            i++;
        if (i == ns || !is_ident_start(s[ns])) {
            diag_error(d, sig_loc(ns), "expected a parameter name");
            return false;
        }
        SigParam p = {.name = arena_strndup(a, s + ns, i - ns), .loc = sig_loc(ns)};
        i = skip_ws(s, i);
        if (s[i] != '=') {
            diag_error(d, sig_loc(i), "expected '=' after parameter name '%s'", p.name);
            return false;
        }
        i = skip_ws(s, i + 1);
        if (!sig_spec(a, d, s, &i, &p))
            return false;
        for (int k = 0; k < out->params.n; k++)
            if (!strcmp(out->params.v[k].name, p.name)) {
                diag_error(d, p.loc, "parameter '%s' appears twice in the signature", p.name);
                return false;
            }
        vec_push(a, out->params, p);
        i = skip_ws(s, i);
        if (!s[i])
            return true;
        if (s[i] != ',') {
            diag_error(d, sig_loc(i), "unexpected '%c' after parameter '%s' (parameters are separated by ',')",
                       s[i], p.name);
            return false;
        }
        i++;
    }
}

/* ------------------------------------------------------------------ */
/* State of a specialization                                           */
/* ------------------------------------------------------------------ */

typedef struct Binding {
    const char *name;
    SVal val;
} Binding;
/* Names of one scope; each name at most once.  Copied, never shared,
 * between control-flow paths. */
typedef Vec(Binding) Env;

typedef Vec(const char *) Names;

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
    Block *scratch;      /* for module-level evaluation: IR emitted here is dropped */
} Sema;

/* The rest of a statement list (and of the lists enclosing it, in one
 * function), run after an `if` that may return: see the header comment. */
typedef struct Cont {
    const Stmts *s;
    int from;
    const struct Cont *next;
} Cont;

static SVal eval_expr(Sema *S, const Expr *e);
static void exec_list(Sema *S, const Stmts *s, int from, const Cont *k);

/* ------------------------------------------------------------------ */
/* SVal helpers                                                        */
/* ------------------------------------------------------------------ */

/* A ConstVal as an SVal: Python None is SV_NONE, not a constant. */
static SVal sv_from_const(ConstVal c)
{
    if (c.kind == CK_NONE)
        return sval_none();
    return (SVal){.kind = SV_CONST, .c = c};
}

static bool const_eq(ConstVal a, ConstVal b)
{
    if (a.kind != b.kind)
        return false;
    switch (a.kind) {
    case CK_NONE: return true;
    case CK_INT:
    case CK_BOOL: return a.i == b.i;
    case CK_FLOAT: return !memcmp(&a.f, &b.f, sizeof a.f); /* -0.0 and 0.0 differ */
    case CK_STR: return !strcmp(a.s, b.s);
    case CK_DTYPE: return a.dt == b.dt;
    }
    return false;
}

/* Whether a and b are the same value (so a merge needs no IR). */
static bool sval_same(SVal a, SVal b)
{
    if (a.kind != b.kind)
        return false;
    switch (a.kind) {
    case SV_ERROR:
    case SV_NONE:
    case SV_SLICE: return true;
    case SV_CONST: return const_eq(a.c, b.c);
    case SV_VALUE: return a.v == b.v;
    case SV_TUPLE:
        if (a.n != b.n)
            return false;
        for (int i = 0; i < a.n; i++)
            if (!sval_same(a.elts[i], b.elts[i]))
                return false;
        return true;
    case SV_MODULE:
    case SV_BUILTIN: return !strcmp(a.qual, b.qual);
    case SV_FUNC: return a.fn == b.fn;
    case SV_METHOD: return !strcmp(a.qual, b.qual) && sval_same(a.elts[0], b.elts[0]);
    }
    return false;
}

/* Whether x holds a runtime value anywhere (so it is not a constexpr). */
static bool sval_has_value(SVal x)
{
    if (x.kind == SV_VALUE)
        return true;
    if (x.kind == SV_TUPLE || x.kind == SV_METHOD)
        for (int i = 0; i < x.n; i++)
            if (sval_has_value(x.elts[i]))
                return true;
    return false;
}

static bool sval_has_error(SVal x)
{
    if (x.kind == SV_ERROR)
        return true;
    if (x.kind == SV_TUPLE)
        for (int i = 0; i < x.n; i++)
            if (sval_has_error(x.elts[i]))
                return true;
    return false;
}

static bool is_numconst(SVal x)
{
    return x.kind == SV_CONST && (x.c.kind == CK_INT || x.c.kind == CK_BOOL || x.c.kind == CK_FLOAT);
}

static const char *type_str(Sema *S, Type t)
{
    Buf b = {.a = S->a};
    type_print(&b, t);
    return buf_str(&b);
}

/* A constexpr tuple as Python prints it, for the kernel header. */
static const char *sval_repr(Sema *S, SVal x)
{
    if (x.kind == SV_NONE)
        return "None";
    if (x.kind == SV_CONST)
        return const_repr(S->a, x.c);
    if (x.kind == SV_TUPLE) {
        Buf b = {.a = S->a};
        buf_putc(&b, '(');
        for (int i = 0; i < x.n; i++)
            buf_printf(&b, "%s%s", i ? ", " : "", sval_repr(S, x.elts[i]));
        buf_puts(&b, x.n == 1 ? ",)" : ")");
        return buf_str(&b);
    }
    return "?";
}

/* What x is, for messages: "None", "the constant 0.5", "a value of type fp32[64]". */
static const char *describe(Sema *S, SVal x)
{
    switch (x.kind) {
    case SV_ERROR: return "invalid";
    case SV_NONE: return "None";
    case SV_CONST: return arena_printf(S->a, "the constant %s", const_repr(S->a, x.c));
    case SV_VALUE: return arena_printf(S->a, "a value of type %s", type_str(S, ir_type(S->L.f, x.v)));
    case SV_TUPLE: return arena_printf(S->a, "a tuple of %d elements", x.n);
    case SV_SLICE: return "a slice";
    case SV_MODULE: return arena_printf(S->a, "the module '%s'", x.qual);
    case SV_BUILTIN: return arena_printf(S->a, "the function '%s'", x.qual);
    case SV_FUNC: return arena_printf(S->a, "the function '%s'", x.fn->name);
    case SV_METHOD: return arena_printf(S->a, "the method '%s'", x.qual);
    }
    return "?";
}

/* ------------------------------------------------------------------ */
/* Environments                                                        */
/* ------------------------------------------------------------------ */

static Binding *env_find(const Env *e, const char *name)
{
    for (int i = e->n - 1; i >= 0; i--)
        if (!strcmp(e->v[i].name, name))
            return &e->v[i];
    return NULL;
}

static void env_set(Arena *a, Env *e, const char *name, SVal v)
{
    Binding *b = env_find(e, name);
    if (b) {
        b->val = v;
        return;
    }
    Binding nb = {name, v};
    vec_push(a, *e, nb);
}

static Env env_copy(Arena *a, const Env *e)
{
    Env c = {0};
    vec_reserve(a, c, e->n);
    if (e->n)
        memcpy(c.v, e->v, (size_t)e->n * sizeof *e->v);
    c.n = e->n;
    return c;
}

/* Gives an unnamed runtime value the variable's name as its print hint. */
static void name_value(Sema *S, SVal v, const char *name)
{
    if (v.kind == SV_VALUE && v.v > 0 && !S->L.f->vals.v[v.v].name)
        S->L.f->vals.v[v.v].name = name;
}

static void bind(Sema *S, const char *name, SVal v)
{
    name_value(S, v, name);
    env_set(S->a, &S->fr->env, name, v);
}

/* ------------------------------------------------------------------ */
/* Names: module globals, imports, helpers, Python builtins            */
/* ------------------------------------------------------------------ */

static const char *const py_builtins[] = {"min", "max", "abs", "int", "float", "bool", "len",
                                          "range", "print", "isinstance", NULL};
/* Python builtins a kernel might reach for, refused by name rather than
 * reported as undefined. */
static const char *const py_unsupported[] = {
    "sum", "zip", "enumerate", "list", "tuple", "dict", "set", "str", "round", "pow", "divmod",
    "map", "filter", "sorted", "reversed", "any", "all", "type", "getattr", "hasattr", "setattr",
    "iter", "next", "super", "object", "id", "hash", "repr", "chr", "ord", "slice", "callable",
    "issubclass", "format", "hex", "oct", "bin", "complex", "bytes", NULL};

static bool in_list(const char *const *list, const char *s)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], s))
            return true;
    return false;
}

static int mod_index(const Sema *S, const Module *m)
{
    for (int i = 0; i < S->nmods; i++)
        if (S->mods[i] == m)
            return i;
    die("module not registered with sema");
}

static const FuncDef *find_jit(const Module *m, const char *name)
{
    for (int i = 0; i < m->funcs.n; i++)
        if (!strcmp(m->funcs.v[i]->name, name))
            return m->funcs.v[i];
    return NULL;
}

/* Visible global of m named `name` below limit (-1: all): the last
 * definition wins, as after running the module.  -1 if none. */
static int find_global(const Module *m, const char *name, int limit)
{
    int lim = limit < 0 || limit > m->globals.n ? m->globals.n : limit;
    for (int i = lim - 1; i >= 0; i--)
        if (m->globals.v[i].value && !strcmp(m->globals.v[i].name, name))
            return i;
    return -1;
}

static const Import *find_import(const Module *m, const char *name)
{
    for (int i = m->imports.n - 1; i >= 0; i--)
        if (!strcmp(m->imports.v[i].alias, name))
            return &m->imports.v[i];
    return NULL;
}

/* The qualified name an attribute chain resolves to without evaluating it
 * ("tl.static_range" -> "triton.language.static_range", "range" ->
 * "builtins.range"), or NULL when its root is a variable, a global or a
 * helper.  Lets sema recognize loop iterators and annotations before (and
 * independently of) what lower_global makes of them. */
static const char *qual_of(Sema *S, const Module *m, const Env *env, const Expr *e)
{
    if (e->kind == EX_ATTR) {
        const char *base = qual_of(S, m, env, e->attr.value);
        return base ? arena_printf(S->a, "%s.%s", base, e->attr.name) : NULL;
    }
    if (e->kind != EX_NAME)
        return NULL;
    const char *n = e->name;
    if ((env && env_find(env, n)) || find_global(m, n, -1) >= 0)
        return NULL;
    const Import *imp = find_import(m, n);
    if (imp)
        return imp->qual;
    if (find_jit(m, n))
        return NULL;
    if (in_list(py_builtins, n))
        return arena_printf(S->a, "builtins.%s", n);
    return NULL;
}

/* Whether a parameter annotation says tl.constexpr (any import spelling;
 * also the quoted form "tl.constexpr"). */
static bool is_constexpr_ann(Sema *S, const Module *m, const Expr *ann)
{
    if (!ann)
        return false;
    if (ann->kind == EX_STR) {
        const char *dot = strrchr(ann->str, '.');
        return !strcmp(dot ? dot + 1 : ann->str, "constexpr");
    }
    const char *q = qual_of(S, m, NULL, ann);
    if (q)
        return !strcmp(q, "triton.language.constexpr") || !strcmp(q, "triton.language.core.constexpr");
    /* an unresolvable root (tl not imported): go by the spelling */
    return (ann->kind == EX_ATTR && !strcmp(ann->attr.name, "constexpr")) ||
           (ann->kind == EX_NAME && !strcmp(ann->name, "constexpr"));
}

/* Which loop iterator a qualified name is: 0 none, else RK_*. */
enum { RK_NONE, RK_RANGE, RK_TL_RANGE, RK_STATIC };
static int range_kind(const char *q)
{
    if (!q)
        return RK_NONE;
    if (!strcmp(q, "builtins.range"))
        return RK_RANGE;
    if (!strcmp(q, "triton.language.range") || !strcmp(q, "triton.language.core.range"))
        return RK_TL_RANGE;
    if (!strcmp(q, "triton.language.static_range") || !strcmp(q, "triton.language.core.static_range"))
        return RK_STATIC;
    return RK_NONE;
}

static const char *range_name(int rk)
{
    return rk == RK_RANGE ? "range" : rk == RK_TL_RANGE ? "tl.range" : "tl.static_range";
}

/* Evaluates e as a compile-time constant in module m's scope (module
 * globals, parameter defaults).  No IR reaches the kernel. */
static SVal eval_module_const(Sema *S, const Module *m, const Expr *e, int global_limit, const char *what)
{
    Frame tmp = {.mod = m, .global_limit = global_limit};
    Frame *saved = S->fr;
    Block *sb = S->L.b;
    S->fr = &tmp;
    S->L.b = S->scratch;
    SVal v = eval_expr(S, e);
    S->fr = saved;
    S->L.b = sb;
    if (sval_has_value(v)) {
        diag_error(S->d, e->loc, "%s is not a compile-time constant", what);
        return sval_error();
    }
    return v;
}

static SVal global_value(Sema *S, const Module *m, int gi, Loc use)
{
    GlobalSlot *slot = &S->slots[mod_index(S, m)][gi];
    const Global *g = &m->globals.v[gi];
    if (slot->state == GS_DONE)
        return slot->val;
    if (slot->state == GS_BUSY) {
        diag_error(S->d, use, "module constant '%s' is defined in terms of itself", g->name);
        return sval_error();
    }
    slot->state = GS_BUSY;
    int errs = S->d->nerrors;
    SVal v = eval_module_const(S, m, g->value, gi, arena_printf(S->a, "module-level '%s'", g->name));
    if (S->d->nerrors > errs)
        diag_note(S->d, use, "in module constant '%s', used here", g->name);
    slot->state = GS_DONE;
    slot->val = v;
    return v;
}

static SVal resolve_import(Sema *S, const Import *imp, Loc loc)
{
    const char *q = imp->qual;
    if (!strcmp(q, "triton") || !strncmp(q, "triton.", 7))
        return lower_global(&S->L, q, loc);
    /* `from other_module import helper`: a @triton.jit function of one of
     * the added sources, matched by name (the current module first) */
    const char *dot = strrchr(q, '.');
    const char *last = dot ? dot + 1 : q;
    const Module *cur = S->fr->mod;
    const FuncDef *fn = find_jit(cur, last);
    if (fn)
        return (SVal){.kind = SV_FUNC, .fn = fn, .mod = cur};
    for (int i = 0; i < S->nmods; i++)
        if ((fn = find_jit(S->mods[i], last)))
            return (SVal){.kind = SV_FUNC, .fn = fn, .mod = S->mods[i]};
    diag_error(S->d, loc,
               "'%s' is imported from '%s', which is neither part of triton nor a @triton.jit "
               "function of the given sources (add its file with --include)",
               imp->alias, q);
    return sval_error();
}

/* name lookup: locals of the frame, module globals, imports, @triton.jit
 * functions of the module, Python builtins. */
static SVal lookup(Sema *S, const char *name, Loc loc)
{
    Frame *fr = S->fr;
    Binding *b = env_find(&fr->env, name);
    if (b)
        return b->val;
    const Module *m = fr->mod;
    int gi = find_global(m, name, fr->global_limit);
    if (gi >= 0)
        return global_value(S, m, gi, loc);
    const Import *imp = find_import(m, name);
    if (imp)
        return resolve_import(S, imp, loc);
    const FuncDef *fn = find_jit(m, name);
    if (fn)
        return (SVal){.kind = SV_FUNC, .fn = fn, .mod = m};
    if (in_list(py_builtins, name))
        return (SVal){.kind = SV_BUILTIN, .qual = arena_printf(S->a, "builtins.%s", name)};
    if (in_list(py_unsupported, name)) {
        diag_error(S->d, loc, "Python builtin '%s' is not supported in Triton kernels", name);
        return sval_error();
    }
    diag_error(S->d, loc, "'%s' is not defined", name);
    return sval_error();
}

/* ------------------------------------------------------------------ */
/* Merging the values of two paths into region results                 */
/* ------------------------------------------------------------------ */

/* While two regions are merged, the values each yields and the result
 * types.  Merged SVals hold placeholders for results not yet created:
 * SV_VALUE with v = -(index + 1), replaced by fill() once the
 * instruction exists. */
typedef struct Merge {
    Vec(ValId) tv, ev; /* yielded by the first (then) and the second (else) region */
    Vec(Type) ty;      /* result types */
} Merge;

static SVal placeholder(int k) { return sval_value(-(k + 1)); }

/* Replaces the placeholders of x by res[...], naming them `hint`. */
static SVal fill(Sema *S, SVal x, const ValId *res, const char *hint)
{
    if (x.kind == SV_VALUE && x.v < 0) {
        SVal r = sval_value(res[-x.v - 1]);
        if (hint)
            name_value(S, r, hint);
        return r;
    }
    if (x.kind == SV_TUPLE) {
        SVal t = x;
        t.elts = arena_alloc(S->a, sizeof *t.elts * (size_t)(x.n ? x.n : 1));
        for (int i = 0; i < x.n; i++)
            t.elts[i] = fill(S, x.elts[i], res, hint);
        return t;
    }
    return x;
}

static bool int_fits(int64_t v, Dtype dt)
{
    if (dt == DT_I1)
        return v == 0 || v == 1;
    int bits = dtype_bits(dt);
    if (!dtype_is_signed(dt))
        return v >= 0 && (bits >= 64 || v < ((int64_t)1 << bits));
    return bits >= 64 || (v >= -((int64_t)1 << (bits - 1)) && v < ((int64_t)1 << (bits - 1)));
}

/* Materializes the numeric constant c directly with type ty into b (a
 * constant of the variable's type, not a cast of an i32 constant).  0 when
 * c cannot be represented exactly (a float as an int, an int out of
 * range, anything as a pointer). */
static ValId const_as(Sema *S, Block *b, ConstVal c, Type ty, Loc loc)
{
    Dtype dt = (Dtype)ty.dt;
    if (dt == DT_PTR || dt == DT_VOID || (c.kind != CK_INT && c.kind != CK_BOOL && c.kind != CK_FLOAT))
        return 0;
    if (dtype_is_float(dt))
        return ir_const_float(S->L.f, b, ty, c.kind == CK_FLOAT ? c.f : (double)c.i, loc);
    if (c.kind == CK_FLOAT || !int_fits(c.i, dt))
        return 0;
    return ir_const_int(S->L.f, b, ty, c.i, loc);
}

/* The type a lone constant materializes as (lower_value's rule). */
static Type const_natural_type(ConstVal c)
{
    if (c.kind == CK_BOOL)
        return type_scalar(DT_I1);
    if (c.kind == CK_FLOAT)
        return type_scalar(DT_F32);
    return type_scalar(int_fits(c.i, DT_I32) ? DT_I32 : DT_I64);
}

/* Merges t (from region tb) and e (from region eb) into one SVal.  Equal
 * values need no IR; tuples merge elementwise; a constant meeting a value
 * becomes a constant of the value's type; two values must have one type
 * (Triton does not promote across branches).  `what` names the thing in
 * messages ("variable 'x'"). */
static SVal merge_one(Sema *S, Merge *m, SVal t, SVal e, Block *tb, Block *eb, const char *what, Loc loc)
{
    if (t.kind == SV_ERROR || e.kind == SV_ERROR)
        return sval_error();
    if (sval_same(t, e))
        return t;
    if (t.kind == SV_TUPLE && e.kind == SV_TUPLE && t.n == e.n) {
        SVal r = t;
        r.elts = arena_alloc(S->a, sizeof *r.elts * (size_t)(t.n ? t.n : 1));
        for (int i = 0; i < t.n; i++)
            r.elts[i] = merge_one(S, m, t.elts[i], e.elts[i], tb, eb, what, loc);
        return r;
    }
    bool tok = t.kind == SV_VALUE || is_numconst(t), eok = e.kind == SV_VALUE || is_numconst(e);
    if (!tok || !eok) {
        diag_error(S->d, loc, "%s is %s in the then branch and %s in the else branch", what, describe(S, t),
                   describe(S, e));
        return sval_error();
    }
    Func *f = S->L.f;
    ValId tv, ev;
    Type ty;
    if (t.kind == SV_VALUE && e.kind == SV_VALUE) {
        Type a = ir_type(f, t.v), b = ir_type(f, e.v);
        if (!type_eq(a, b)) {
            diag_error(S->d, loc, "%s has type %s in the then branch and %s in the else branch", what,
                       type_str(S, a), type_str(S, b));
            return sval_error();
        }
        ty = a;
        tv = t.v;
        ev = e.v;
    } else {
        if (t.kind == SV_VALUE)
            ty = ir_type(f, t.v);
        else if (e.kind == SV_VALUE)
            ty = ir_type(f, e.v);
        else { /* two different constants: the wider of their natural types */
            Type a = const_natural_type(t.c), b = const_natural_type(e.c);
            bool af = dtype_is_float((Dtype)a.dt), bf = dtype_is_float((Dtype)b.dt);
            ty = af != bf ? (af ? a : b) : dtype_bits((Dtype)a.dt) >= dtype_bits((Dtype)b.dt) ? a : b;
        }
        tv = t.kind == SV_VALUE ? t.v : const_as(S, tb, t.c, ty, loc);
        ev = e.kind == SV_VALUE ? e.v : const_as(S, eb, e.c, ty, loc);
        if (!tv || !ev) {
            diag_error(S->d, loc, "%s is %s in the then branch and %s in the else branch", what,
                       describe(S, t), describe(S, e));
            return sval_error();
        }
    }
    vec_push(S->a, m->tv, tv);
    vec_push(S->a, m->ev, ev);
    vec_push(S->a, m->ty, ty);
    return placeholder(m->ty.n - 1);
}

/* Ends regions tb and eb with yields of m and appends the `if` on cond to
 * the current block.  Returns the results (NULL when there is nothing to
 * emit: no results and two empty regions). */
static ValId *emit_if(Sema *S, ValId cond, Block *tb, Block *eb, Merge *m, Loc loc)
{
    Func *f = S->L.f;
    int n = m->ty.n;
    if (n == 0 && tb->insts.n == 0 && eb->insts.n == 0)
        return NULL;
    ir_emit(f, tb, OP_YIELD, m->tv.v, n, NULL, 0, loc);
    ir_emit(f, eb, OP_YIELD, m->ev.v, n, NULL, 0, loc);
    Inst *in = ir_emit(f, S->L.b, OP_IF, &cond, 1, m->ty.v, n, loc);
    *ir_inst_add_region(f, in) = *tb;
    *ir_inst_add_region(f, in) = *eb;
    return in->res;
}

/* ------------------------------------------------------------------ */
/* Expressions                                                         */
/* ------------------------------------------------------------------ */

/* Inlines a call of a @triton.jit function: binds the arguments like
 * Python (positional, keyword, defaults), runs the body in a new frame and
 * returns what `return` gave (None without one). */
static SVal call_jit(Sema *S, SVal fnv, const SVal *args, const Loc *alocs, int nargs, const Keyword *kw,
                     const SVal *kwv, int nkw, Loc loc)
{
    const FuncDef *fn = fnv.fn;
    const Module *m = fnv.mod;
    if (S->depth >= MAX_INLINE_DEPTH) {
        S->recursed = true;
        diag_error(S->d, loc,
                   "call of '%s' exceeds the inlining depth limit of %d (recursive @triton.jit functions "
                   "are not supported)",
                   fn->name, MAX_INLINE_DEPTH);
        return sval_error();
    }
    int np = fn->nparams, errs = S->d->nerrors;
    SVal *bound = arena_alloc(S->a, sizeof *bound * (size_t)(np ? np : 1));
    Loc *blocs = arena_alloc(S->a, sizeof *blocs * (size_t)(np ? np : 1));
    bool *set = arena_alloc(S->a, (size_t)(np ? np : 1));
    if (nargs > np) {
        diag_error(S->d, alocs[np], "'%s' takes %d argument%s but %d were given", fn->name, np,
                   np == 1 ? "" : "s", nargs);
        return sval_error();
    }
    for (int i = 0; i < nargs; i++) {
        bound[i] = args[i];
        blocs[i] = alocs[i];
        set[i] = true;
    }
    for (int k = 0; k < nkw; k++) {
        int i = 0;
        while (i < np && strcmp(fn->params[i].name, kw[k].name))
            i++;
        if (i == np) {
            diag_error(S->d, kw[k].loc, "'%s' got an unexpected keyword argument '%s'", fn->name, kw[k].name);
            continue;
        }
        if (set[i]) {
            diag_error(S->d, kw[k].loc, "'%s' got multiple values for argument '%s'", fn->name, kw[k].name);
            continue;
        }
        bound[i] = kwv[k];
        blocs[i] = kw[k].loc;
        set[i] = true;
    }
    for (int i = 0; i < np; i++) {
        const Param *p = &fn->params[i];
        if (!set[i]) {
            if (!p->dflt) {
                diag_error(S->d, loc, "missing argument '%s' in call to '%s'", p->name, fn->name);
                continue;
            }
            bound[i] = eval_module_const(S, m, p->dflt, -1,
                                         arena_printf(S->a, "the default value of '%s'", p->name));
            blocs[i] = p->loc;
        }
        if (is_constexpr_ann(S, m, p->ann) && sval_has_value(bound[i]))
            diag_error(S->d, blocs[i], "parameter '%s' of '%s' is tl.constexpr, but %s was passed", p->name,
                       fn->name, describe(S, bound[i]));
    }
    if (S->d->nerrors > errs)
        return sval_error();
    for (int i = 0; i < np; i++)
        if (sval_has_error(bound[i]))
            return sval_error();

    Frame nf = {.mod = m, .fn = fn, .global_limit = -1};
    for (int i = 0; i < np; i++) {
        name_value(S, bound[i], fn->params[i].name);
        env_set(S->a, &nf.env, fn->params[i].name, bound[i]);
    }
    Frame *saved = S->fr;
    S->fr = &nf;
    S->depth++;
    exec_list(S, &fn->body, 0, NULL);
    S->depth--;
    S->fr = saved;
    /* errors inside the helper point into it; say where it was called
     * from (the outermost few calls; after runaway recursion only the
     * call from the kernel) */
    if (S->d->nerrors > errs && S->depth < MAX_NOTE_DEPTH && (!S->recursed || S->depth == 0))
        diag_note(S->d, loc, "in the call of '%s' from here", fn->name);
    if (S->depth == 0)
        S->recursed = false;
    return nf.has_ret ? nf.ret : sval_none();
}

static SVal eval_call(Sema *S, const Expr *e)
{
    const Expr *fe = e->call.func;
    int rk = range_kind(qual_of(S, S->fr->mod, &S->fr->env, fe));
    if (rk) {
        diag_error(S->d, e->loc, "%s() can only be used as the iterable of a for loop", range_name(rk));
        return sval_error();
    }
    SVal fn = eval_expr(S, fe);
    int na = e->call.nargs, nk = e->call.nkw;
    SVal *args = arena_alloc(S->a, sizeof *args * (size_t)(na + 1));
    Loc *alocs = arena_alloc(S->a, sizeof *alocs * (size_t)(na + 1));
    const char **kn = arena_alloc(S->a, sizeof *kn * (size_t)(nk + 1));
    SVal *kv = arena_alloc(S->a, sizeof *kv * (size_t)(nk + 1));
    bool bad = fn.kind == SV_ERROR;
    for (int i = 0; i < na; i++) {
        args[i] = eval_expr(S, e->call.args[i]);
        alocs[i] = e->call.args[i]->loc;
        bad |= sval_has_error(args[i]);
    }
    alocs[na] = e->loc;
    for (int k = 0; k < nk; k++) {
        if (!e->call.kw[k].name) {
            diag_error(S->d, e->call.kw[k].loc, "'**' arguments are not supported");
            bad = true;
            continue;
        }
        kn[k] = e->call.kw[k].name;
        kv[k] = eval_expr(S, e->call.kw[k].value);
        bad |= sval_has_error(kv[k]);
    }
    if (bad)
        return sval_error();
    switch (fn.kind) {
    case SV_FUNC: return call_jit(S, fn, args, alocs, na, e->call.kw, kv, nk, e->loc);
    case SV_BUILTIN:
        if ((rk = range_kind(fn.qual))) {
            diag_error(S->d, e->loc, "%s() can only be used as the iterable of a for loop", range_name(rk));
            return sval_error();
        }
        /* fallthrough */
    case SV_METHOD: return lower_call(&S->L, fn, args, na, kn, kv, nk, e->loc);
    default:
        diag_error(S->d, fe->loc, "%s is not callable", describe(S, fn));
        return sval_error();
    }
}

static SVal eval_subscript(Sema *S, const Expr *e)
{
    SVal x = eval_expr(S, e->sub.value);
    int n = e->sub.nindex;
    SVal *idx = arena_alloc(S->a, sizeof *idx * (size_t)(n ? n : 1));
    bool bad = x.kind == SV_ERROR;
    for (int i = 0; i < n; i++) {
        const Expr *ie = e->sub.index[i];
        if (ie->kind == EX_SLICE) {
            if (ie->slice.lo || ie->slice.hi || ie->slice.step) {
                diag_error(S->d, ie->loc, "slices with bounds are not supported (only ':' to keep an axis)");
                bad = true;
            }
            idx[i] = (SVal){.kind = SV_SLICE};
        } else {
            idx[i] = eval_expr(S, ie);
            bad |= sval_has_error(idx[i]);
        }
    }
    if (bad)
        return sval_error();
    return lower_subscript(&S->L, x, idx, n, e->loc);
}

/* a < b < c is (a < b) and (b < c), with b evaluated once and Python's
 * short circuit on a constexpr false. */
static SVal eval_compare(Sema *S, const Expr *e)
{
    SVal left = eval_expr(S, e->cmp.first), result = sval_error();
    for (int i = 0; i < e->cmp.n; i++) {
        SVal right = eval_expr(S, e->cmp.rest[i]);
        SVal c = lower_compare(&S->L, e->cmp.ops[i], left, right, e->loc);
        if (i == 0 || result.kind != SV_VALUE)
            result = c; /* the previous result was a constexpr true */
        else
            result = lower_boolop(&S->L, BL_AND, result, c, e->loc);
        if (result.kind == SV_ERROR)
            return result;
        if (i + 1 < e->cmp.n && result.kind != SV_VALUE && !sval_truthy(result))
            return result;
        left = right;
    }
    return result;
}

/* x1 and x2 ...: a constexpr left operand short-circuits as in Python
 * (the value of the expression is the deciding operand); a runtime one is
 * combined with the right operand by lower_boolop. */
static SVal eval_boolop(Sema *S, const Expr *e)
{
    SVal r = eval_expr(S, e->boolop.xs[0]);
    for (int i = 1; i < e->boolop.n; i++) {
        if (r.kind == SV_ERROR)
            return r;
        if (r.kind != SV_VALUE) {
            bool t = sval_truthy(r);
            if (e->boolop.op == BL_AND ? !t : t)
                return r;
            r = eval_expr(S, e->boolop.xs[i]);
        } else {
            SVal y = eval_expr(S, e->boolop.xs[i]);
            r = lower_boolop(&S->L, e->boolop.op, r, y, e->loc);
        }
    }
    return r;
}

/* a if c else b: a constexpr c evaluates one side only; a runtime scalar c
 * becomes an IR `if` yielding the value (both sides of one type). */
static SVal eval_ifexp(Sema *S, const Expr *e)
{
    SVal c = eval_expr(S, e->ifexp.cond);
    if (c.kind == SV_ERROR)
        return c;
    bool is_const = true, cval = sval_truthy(c);
    ValId cv = 0;
    if (c.kind == SV_VALUE && !lower_truth(&S->L, c, &is_const, &cval, &cv, e->ifexp.cond->loc))
        return sval_error();
    if (is_const)
        return eval_expr(S, cval ? e->ifexp.then : e->ifexp.els);
    Func *f = S->L.f;
    Block *outer = S->L.b, *tb = ir_block_new(f), *eb = ir_block_new(f);
    S->L.b = tb;
    SVal t = eval_expr(S, e->ifexp.then);
    S->L.b = eb;
    SVal x = eval_expr(S, e->ifexp.els);
    S->L.b = outer;
    Merge m = {0};
    SVal r = merge_one(S, &m, t, x, tb, eb, "the conditional expression", e->loc);
    ValId *res = emit_if(S, cv, tb, eb, &m, e->loc);
    return res ? fill(S, r, res, NULL) : r;
}

static SVal eval_expr(Sema *S, const Expr *e)
{
    Lower *L = &S->L;
    switch (e->kind) {
    case EX_NAME: return lookup(S, e->name, e->loc);
    case EX_INT: return (SVal){.kind = SV_CONST, .c = {.kind = CK_INT, .i = e->ival}};
    case EX_FLOAT: return (SVal){.kind = SV_CONST, .c = {.kind = CK_FLOAT, .f = e->fval}};
    case EX_STR: return (SVal){.kind = SV_CONST, .c = {.kind = CK_STR, .s = e->str}};
    case EX_BOOL: return (SVal){.kind = SV_CONST, .c = {.kind = CK_BOOL, .i = e->bval}};
    case EX_NONE: return sval_none();
    case EX_ATTR: {
        SVal x = eval_expr(S, e->attr.value);
        if (x.kind == SV_ERROR)
            return x;
        return lower_attr(L, x, e->attr.name, e->loc);
    }
    case EX_CALL: return eval_call(S, e);
    case EX_SUBSCRIPT: return eval_subscript(S, e);
    case EX_SLICE:
        diag_error(S->d, e->loc, "a slice is only allowed inside a subscript");
        return sval_error();
    case EX_BINOP: {
        SVal x = eval_expr(S, e->bin.l);
        SVal y = eval_expr(S, e->bin.r);
        if (x.kind == SV_ERROR || y.kind == SV_ERROR)
            return sval_error();
        return lower_binop(L, e->bin.op, x, y, e->loc);
    }
    case EX_UNOP: {
        SVal x = eval_expr(S, e->un.x);
        if (x.kind == SV_ERROR)
            return x;
        return lower_unop(L, e->un.op, x, e->loc);
    }
    case EX_COMPARE: return eval_compare(S, e);
    case EX_BOOLOP: return eval_boolop(S, e);
    case EX_IFEXP: return eval_ifexp(S, e);
    case EX_TUPLE:
    case EX_LIST: {
        SVal t = {.kind = SV_TUPLE, .n = e->seq.n};
        t.elts = arena_alloc(S->a, sizeof *t.elts * (size_t)(e->seq.n ? e->seq.n : 1));
        bool bad = false;
        for (int i = 0; i < e->seq.n; i++) {
            t.elts[i] = eval_expr(S, e->seq.xs[i]);
            bad |= t.elts[i].kind == SV_ERROR;
        }
        return bad ? sval_error() : t;
    }
    }
    die("unknown expression kind %d", (int)e->kind);
}

/* ------------------------------------------------------------------ */
/* Assignment                                                          */
/* ------------------------------------------------------------------ */

static void assign_target(Sema *S, const Expr *t, SVal v)
{
    switch (t->kind) {
    case EX_NAME: bind(S, t->name, v); return;
    case EX_TUPLE:
    case EX_LIST: {
        int n = t->seq.n;
        if (v.kind == SV_ERROR) {
            for (int i = 0; i < n; i++)
                assign_target(S, t->seq.xs[i], v);
            return;
        }
        if (v.kind != SV_TUPLE || v.n != n) {
            diag_error(S->d, t->loc, "cannot unpack %s into %d name%s", describe(S, v), n, n == 1 ? "" : "s");
            for (int i = 0; i < n; i++)
                assign_target(S, t->seq.xs[i], sval_error());
            return;
        }
        for (int i = 0; i < n; i++)
            assign_target(S, t->seq.xs[i], v.elts[i]);
        return;
    }
    case EX_SUBSCRIPT:
        diag_error(S->d, t->loc, "assignment to a subscript is not supported (tensors are immutable in Triton)");
        return;
    case EX_ATTR: diag_error(S->d, t->loc, "assignment to an attribute is not supported"); return;
    default: diag_error(S->d, t->loc, "cannot assign to this expression"); return;
    }
}

/* ------------------------------------------------------------------ */
/* Statements                                                          */
/* ------------------------------------------------------------------ */

/* Names assigned anywhere in s (nested ifs and loops included): the
 * candidates for loop-carried variables. */
static void scan_target(Arena *a, const Expr *t, Names *out)
{
    if (t->kind == EX_NAME) {
        for (int i = 0; i < out->n; i++)
            if (!strcmp(out->v[i], t->name))
                return;
        vec_push(a, *out, t->name);
    } else if (t->kind == EX_TUPLE || t->kind == EX_LIST) {
        for (int i = 0; i < t->seq.n; i++)
            scan_target(a, t->seq.xs[i], out);
    }
}

static void scan_assigned(Arena *a, const Stmts *s, Names *out)
{
    for (int i = 0; i < s->n; i++) {
        const Stmt *st = s->v[i];
        switch (st->kind) {
        case ST_ASSIGN:
            for (int k = 0; k < st->assign.ntargets; k++)
                scan_target(a, st->assign.targets[k], out);
            break;
        case ST_AUGASSIGN: scan_target(a, st->aug.target, out); break;
        case ST_ANNASSIGN:
            if (st->ann.value)
                scan_target(a, st->ann.target, out);
            break;
        case ST_IF:
            scan_assigned(a, &st->if_.then, out);
            scan_assigned(a, &st->if_.els, out);
            break;
        case ST_FOR:
            scan_target(a, st->for_.target, out);
            scan_assigned(a, &st->for_.body, out);
            break;
        case ST_WHILE: scan_assigned(a, &st->while_.body, out); break;
        default: break;
        }
    }
}

/* Whether running s may execute a `return` (loops excluded: a return in a
 * loop is an error of its own). */
static bool stmts_may_return(const Stmts *s)
{
    for (int i = 0; i < s->n; i++) {
        const Stmt *st = s->v[i];
        if (st->kind == ST_RETURN)
            return true;
        if (st->kind == ST_IF && (stmts_may_return(&st->if_.then) || stmts_may_return(&st->if_.els)))
            return true;
    }
    return false;
}

/* An `if` on a runtime scalar.  Without a continuation, the variables
 * assigned in a branch that exist after the if (defined before it or in
 * both branches) become the results; with one (k: a branch may return),
 * both branches run to the end of the function and the only result is a
 * helper's return value. */
static void runtime_if(Sema *S, const Stmt *st, ValId cond, const Cont *k)
{
    Frame *fr = S->fr;
    Func *f = S->L.f;
    Block *outer = S->L.b, *tb = ir_block_new(f), *eb = ir_block_new(f);
    Env before = fr->env;

    fr->env = env_copy(S->a, &before);
    S->L.b = tb;
    exec_list(S, &st->if_.then, 0, k);
    Env tenv = fr->env;
    SVal tret = fr->has_ret ? fr->ret : sval_none();

    fr->env = env_copy(S->a, &before);
    fr->done = fr->has_ret = false;
    S->L.b = eb;
    exec_list(S, &st->if_.els, 0, k);
    Env eenv = fr->env;
    SVal eret = fr->has_ret ? fr->ret : sval_none();
    fr->done = fr->has_ret = false;
    S->L.b = outer;

    Merge m = {0};
    if (k) {
        SVal r = sval_none();
        if (!fr->is_kernel)
            r = merge_one(S, &m, tret, eret, tb, eb,
                          arena_printf(S->a, "the return value of '%s'", fr->fn ? fr->fn->name : "?"), st->loc);
        ValId *res = emit_if(S, cond, tb, eb, &m, st->loc);
        fr->env = before;
        fr->done = fr->has_ret = true;
        fr->ret = res ? fill(S, r, res, NULL) : r;
        return;
    }
    Binding *merged = arena_alloc(S->a, sizeof *merged * (size_t)(tenv.n + 1));
    int nm = 0;
    for (int i = 0; i < tenv.n; i++) {
        const char *name = tenv.v[i].name;
        Binding *eb2 = env_find(&eenv, name);
        if (!eb2)
            continue; /* defined in the then branch only: not visible after the if */
        merged[nm].name = name;
        merged[nm++].val = merge_one(S, &m, tenv.v[i].val, eb2->val, tb, eb,
                                     arena_printf(S->a, "variable '%s'", name), st->loc);
    }
    ValId *res = emit_if(S, cond, tb, eb, &m, st->loc);
    fr->env = before;
    for (int i = 0; i < nm; i++)
        bind(S, merged[i].name, res ? fill(S, merged[i].val, res, merged[i].name) : merged[i].val);
}

static void exec_if(Sema *S, const Stmt *st, const Cont *k)
{
    const Expr *ce = st->if_.cond;
    SVal c = eval_expr(S, ce);
    bool is_const = true, cval = false;
    ValId cv = 0;
    if (c.kind == SV_ERROR ||
        (c.kind == SV_VALUE && !lower_truth(&S->L, c, &is_const, &cval, &cv, ce->loc))) {
        if (k) /* the rest of the function hangs on this if: stop here */
            S->fr->done = true;
        return;
    }
    if (c.kind != SV_VALUE)
        cval = sval_truthy(c);
    if (is_const)
        exec_list(S, cval ? &st->if_.then : &st->if_.els, 0, k);
    else
        runtime_if(S, st, cv, k);
}

/* Loop-carried variables.  A carried variable's value before the loop is
 * turned into a template: its runtime leaves (values, and numeric
 * constants, materialized) become placeholders numbered like the loop's
 * iter_args; other leaves (None, strings, dtypes, functions) stay fixed
 * and must not change in the loop. */
typedef struct Carry {
    const char *name;
    SVal tmpl;
} Carry;
typedef struct Carried {
    Vec(Carry) vars;
    Vec(ValId) inits;        /* iter_arg initial values */
    Vec(const char *) leaf;  /* the variable of each iter_arg (name hint) */
} Carried;

static SVal carry_template(Sema *S, Carried *c, SVal init, const char *name, Loc loc)
{
    if (init.kind == SV_VALUE || is_numconst(init)) {
        ValId v = init.kind == SV_VALUE ? init.v : lower_value(&S->L, init, loc);
        if (!v)
            return sval_error();
        vec_push(S->a, c->inits, v);
        vec_push(S->a, c->leaf, name);
        return placeholder(c->inits.n - 1);
    }
    if (init.kind == SV_TUPLE) {
        SVal t = init;
        t.elts = arena_alloc(S->a, sizeof *t.elts * (size_t)(init.n ? init.n : 1));
        for (int i = 0; i < init.n; i++)
            t.elts[i] = carry_template(S, c, init.elts[i], name, loc);
        return t;
    }
    return init;
}

/* The carried variables of a loop with body `body` (excluding `skip`, the
 * loop variable): names assigned in the body that exist before it. */
static void collect_carried(Sema *S, Carried *c, const Stmts *body, const char *skip, Loc loc)
{
    Names assigned = {0};
    scan_assigned(S->a, body, &assigned);
    for (int i = 0; i < assigned.n; i++) {
        const char *name = assigned.v[i];
        Binding *b = env_find(&S->fr->env, name);
        if (!b || (skip && !strcmp(name, skip)))
            continue;
        Carry cy = {name, carry_template(S, c, b->val, name, loc)};
        vec_push(S->a, c->vars, cy);
    }
}

static Type *carried_types(Sema *S, const Carried *c)
{
    Type *t = arena_alloc(S->a, sizeof *t * (size_t)(c->inits.n + 1));
    for (int i = 0; i < c->inits.n; i++)
        t[i] = ir_type(S->L.f, c->inits.v[i]);
    return t;
}

/* Region parameters of block b for the carried values. */
static ValId *carried_params(Sema *S, const Carried *c, Block *b, Loc loc)
{
    ValId *p = arena_alloc(S->a, sizeof *p * (size_t)(c->inits.n + 1));
    for (int i = 0; i < c->inits.n; i++)
        p[i] = ir_block_param_add(S->L.f, b, ir_type(S->L.f, c->inits.v[i]), c->leaf.v[i], loc);
    return p;
}

/* Binds the carried variables to their template filled with ids. */
static void bind_carried(Sema *S, const Carried *c, const ValId *ids)
{
    for (int i = 0; i < c->vars.n; i++)
        bind(S, c->vars.v[i].name, fill(S, c->vars.v[i].tmpl, ids, c->vars.v[i].name));
}

/* Sets ys[k] to the new value of each placeholder of tmpl, found in the
 * variable's value after an iteration (nv), converted to the parameter's
 * type (params[k]).  ys starts as the parameters themselves, so after an
 * error the IR stays well-formed. */
static void carry_yield(Sema *S, SVal tmpl, SVal nv, const ValId *params, ValId *ys, const char *name, Loc loc)
{
    Func *f = S->L.f;
    if (nv.kind == SV_ERROR || tmpl.kind == SV_ERROR)
        return;
    if (tmpl.kind == SV_VALUE && tmpl.v < 0) {
        int k = -tmpl.v - 1;
        Type pt = ir_type(f, params[k]);
        if (nv.kind == SV_VALUE) {
            Type nt = ir_type(f, nv.v);
            if (type_eq(nt, pt))
                ys[k] = nv.v;
            else
                diag_error(S->d, loc,
                           "loop-carried variable '%s' has type %s before the loop and %s after an iteration",
                           name, type_str(S, pt), type_str(S, nt));
        } else if (is_numconst(nv)) {
            ValId v = const_as(S, S->L.b, nv.c, pt, loc);
            if (v)
                ys[k] = v;
            else
                diag_error(S->d, loc,
                           "loop-carried variable '%s' has type %s before the loop and is set to %s in the loop",
                           name, type_str(S, pt), describe(S, nv));
        } else {
            diag_error(S->d, loc, "loop-carried variable '%s' has type %s before the loop and is %s after an iteration",
                       name, type_str(S, pt), describe(S, nv));
        }
        return;
    }
    if (tmpl.kind == SV_TUPLE) {
        if (nv.kind != SV_TUPLE || nv.n != tmpl.n) {
            diag_error(S->d, loc, "loop-carried variable '%s' is a tuple of %d elements before the loop and %s after an iteration",
                       name, tmpl.n, describe(S, nv));
            return;
        }
        for (int i = 0; i < tmpl.n; i++)
            carry_yield(S, tmpl.elts[i], nv.elts[i], params, ys, name, loc);
        return;
    }
    if (!sval_same(tmpl, nv))
        diag_error(S->d, loc,
                   "variable '%s' is %s before the loop and %s after an iteration; only tensors and numbers "
                   "can change in a loop",
                   name, describe(S, tmpl), describe(S, nv));
}

/* The values yielded at the end of a loop body whose region params are params. */
static ValId *carried_yields(Sema *S, const Carried *c, const ValId *params, Loc loc)
{
    ValId *ys = arena_alloc(S->a, sizeof *ys * (size_t)(c->inits.n + 1));
    for (int i = 0; i < c->inits.n; i++)
        ys[i] = params[i];
    for (int i = 0; i < c->vars.n; i++) {
        Binding *b = env_find(&S->fr->env, c->vars.v[i].name);
        if (b)
            carry_yield(S, c->vars.v[i].tmpl, b->val, params, ys, c->vars.v[i].name, loc);
    }
    return ys;
}

/* Runs body once per constant in vals, binding target: static_range,
 * --unroll, tuples. */
static void exec_unrolled(Sema *S, const Stmt *st, const SVal *vals, int64_t n, int64_t start, int64_t step)
{
    Frame *fr = S->fr;
    fr->loop_depth++;
    for (int64_t i = 0; i < n; i++) {
        SVal v = vals ? vals[i] : sval_int((int64_t)((uint64_t)start + (uint64_t)i * (uint64_t)step));
        int errs = S->d->nerrors;
        assign_target(S, st->for_.target, v);
        exec_list(S, &st->for_.body, 0, NULL);
        if (S->d->nerrors > errs)
            break; /* one report, not one per iteration */
    }
    fr->loop_depth--;
}

/* A `for` over range/tl.range with bounds b[0..2] (start, stop, step) as
 * an IR for: bounds materialized in the iv type (i64 if a bound needs it,
 * else i32), carried variables as iter_args. */
static void exec_ir_for(Sema *S, const Stmt *st, const SVal *b, const Loc *bl)
{
    Frame *fr = S->fr;
    Func *f = S->L.f;
    Block *outer = S->L.b;
    const char *var = st->for_.target->name;
    Dtype ivt = DT_I32;
    for (int i = 0; i < 3; i++) {
        if (b[i].kind == SV_VALUE) {
            Type t = ir_type(f, b[i].v);
            if (t.rank != 0 || !dtype_is_int((Dtype)t.dt)) {
                diag_error(S->d, bl[i], "range() bounds must be integer scalars, got %s", type_str(S, t));
                return;
            }
            if (dtype_bits((Dtype)t.dt) == 64)
                ivt = DT_I64;
        } else if (!int_fits(b[i].c.i, DT_I32)) {
            ivt = DT_I64;
        }
    }
    Type ivty = type_scalar(ivt);
    ValId ids[3];
    for (int i = 0; i < 3; i++) {
        if (b[i].kind == SV_CONST)
            ids[i] = const_as(S, outer, b[i].c, ivty, bl[i]);
        else if (ir_type(f, b[i].v).dt == ivt)
            ids[i] = b[i].v;
        else
            ids[i] = lower_convert(&S->L, b[i].v, ivty, bl[i]);
        if (!ids[i])
            return;
    }

    Carried c = {0};
    collect_carried(S, &c, &st->for_.body, var, st->loc);
    int n = c.inits.n;
    ValId *args = arena_alloc(S->a, sizeof *args * (size_t)(n + 3));
    memcpy(args, ids, sizeof ids);
    if (n)
        memcpy(args + 3, c.inits.v, sizeof *args * (size_t)n);
    Inst *in = ir_emit(f, outer, OP_FOR, args, n + 3, carried_types(S, &c), n, st->loc);
    int idx = outer->insts.n - 1;
    Block *body = ir_inst_add_region(f, in);
    ValId iv = ir_block_param_add(f, body, ivty, var, st->for_.target->loc);
    ValId *params = carried_params(S, &c, body, st->loc);

    Env before = fr->env;
    fr->env = env_copy(S->a, &before);
    bind_carried(S, &c, params);
    bind(S, var, sval_value(iv));
    S->L.b = body;
    fr->loop_depth++;
    exec_list(S, &st->for_.body, 0, NULL);
    fr->loop_depth--;
    ValId *ys = carried_yields(S, &c, params, st->loc);
    ir_emit(f, body, OP_YIELD, ys, n, NULL, 0, st->loc);
    S->L.b = outer;

    in = &outer->insts.v[idx];
    fr->env = before;
    bind_carried(S, &c, in->res);
}

/* for NAME in range(...) / tl.range(...) / tl.static_range(...) */
static void exec_range_for(Sema *S, const Stmt *st, int rk)
{
    const Expr *call = st->for_.iter;
    const char *fname = range_name(rk);
    SVal a[3] = {0};
    Loc al[3] = {call->loc, call->loc, call->loc};
    bool have[3] = {false, false, false}, bad = false;
    int na = call->call.nargs;
    if (na > 3) {
        diag_error(S->d, call->call.args[3]->loc, "%s() takes at most 3 positional arguments, got %d", fname, na);
        return;
    }
    for (int i = 0; i < na; i++) {
        a[i] = eval_expr(S, call->call.args[i]);
        al[i] = call->call.args[i]->loc;
        have[i] = true;
        bad |= a[i].kind == SV_ERROR;
    }
    static const char *const slot_names[3] = {"arg1", "arg2", "step"};
    static const char *const hints[] = {"num_stages", "loop_unroll_factor", "warp_specialize", "flatten",
                                        "disallow_acc_multi_buffer", "disable_licm", NULL};
    for (int k = 0; k < call->call.nkw; k++) {
        const Keyword *kw = &call->call.kw[k];
        int slot = -1;
        for (int i = 0; i < 3 && rk != RK_RANGE && kw->name; i++)
            if (!strcmp(kw->name, slot_names[i]))
                slot = i;
        if (slot >= 0 && !have[slot]) {
            a[slot] = eval_expr(S, kw->value);
            al[slot] = kw->loc;
            have[slot] = true;
            bad |= a[slot].kind == SV_ERROR;
        } else if (rk == RK_TL_RANGE && kw->name && in_list(hints, kw->name)) {
            /* scheduling hints: accepted for compatibility, no effect here */
            bad |= eval_expr(S, kw->value).kind == SV_ERROR;
        } else {
            diag_error(S->d, kw->loc, "%s() got an unexpected keyword argument '%s'", fname,
                       kw->name ? kw->name : "**");
            bad = true;
        }
    }
    if (!have[0]) {
        diag_error(S->d, call->loc, "%s() expects 1 to 3 arguments (start, end, step)", fname);
        return;
    }
    if (bad)
        return;
    /* range(end) or range(start, end[, step]) */
    SVal b[3];
    Loc bl[3];
    if (have[1]) {
        b[0] = a[0], bl[0] = al[0];
        b[1] = a[1], bl[1] = al[1];
    } else {
        b[0] = sval_int(0), bl[0] = call->loc;
        b[1] = a[0], bl[1] = al[0];
    }
    b[2] = have[2] ? a[2] : sval_int(1);
    bl[2] = have[2] ? al[2] : call->loc;
    bool all_const = true;
    for (int i = 0; i < 3; i++) {
        if (b[i].kind == SV_VALUE) {
            if (rk == RK_STATIC) {
                diag_error(S->d, bl[i], "tl.static_range bounds must be constexpr ints, got %s", describe(S, b[i]));
                return;
            }
            all_const = false;
        } else if (b[i].kind != SV_CONST || (b[i].c.kind != CK_INT && b[i].c.kind != CK_BOOL)) {
            diag_error(S->d, bl[i], "%s() bounds must be integers, got %s", fname, describe(S, b[i]));
            return;
        }
    }
    if (b[2].kind == SV_CONST && b[2].c.i == 0) {
        diag_error(S->d, bl[2], "%s() step must not be zero", fname);
        return;
    }
    if (st->for_.target->kind != EX_NAME) {
        diag_error(S->d, st->for_.target->loc, "the variable of a %s() loop must be a single name", fname);
        return;
    }
    if (rk == RK_STATIC || (all_const && S->opt->unroll_const_loops)) {
        int64_t start = b[0].c.i, stop = b[1].c.i, step = b[2].c.i;
        uint64_t n = 0;
        if (step > 0 && start < stop)
            n = ((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)step + 1;
        else if (step < 0 && start > stop)
            n = ((uint64_t)start - (uint64_t)stop - 1) / (0 - (uint64_t)step) + 1;
        if (n <= MAX_UNROLL) {
            exec_unrolled(S, st, NULL, (int64_t)n, start, step);
            return;
        }
        if (rk == RK_STATIC) {
            diag_error(S->d, call->loc, "unrolling %llu iterations exceeds kad's limit of %d", (unsigned long long)n,
                       MAX_UNROLL);
            return;
        }
        /* --unroll is an optimization: a huge range stays a loop */
    }
    exec_ir_for(S, st, b, bl);
}

static void exec_for(Sema *S, const Stmt *st)
{
    if (st->for_.orelse.n) {
        diag_error(S->d, st->loc, "for/else is not supported");
        return;
    }
    const Expr *it = st->for_.iter;
    if (it->kind == EX_CALL) {
        int rk = range_kind(qual_of(S, S->fr->mod, &S->fr->env, it->call.func));
        if (rk) {
            exec_range_for(S, st, rk);
            return;
        }
    }
    SVal v = eval_expr(S, it);
    if (v.kind == SV_ERROR)
        return;
    if (v.kind != SV_TUPLE) {
        diag_error(S->d, it->loc,
                   "for loops must iterate over range(...), tl.range(...), tl.static_range(...) or a "
                   "constexpr tuple, not %s",
                   describe(S, v));
        return;
    }
    exec_unrolled(S, st, v.elts, v.n, 0, 0);
}

/* while cond: body -- an IR while whose cond region re-evaluates cond on
 * the carried variables. */
static void exec_while(Sema *S, const Stmt *st)
{
    if (st->while_.orelse.n) {
        diag_error(S->d, st->loc, "while/else is not supported");
        return;
    }
    Frame *fr = S->fr;
    Func *f = S->L.f;
    Block *outer = S->L.b, *cb = ir_block_new(f), *bb = ir_block_new(f);
    const Expr *ce = st->while_.cond;
    Carried c = {0};
    collect_carried(S, &c, &st->while_.body, NULL, st->loc);
    int n = c.inits.n;
    ValId *cparams = carried_params(S, &c, cb, st->loc);
    ValId *bparams = carried_params(S, &c, bb, st->loc);
    Env before = fr->env;

    fr->env = env_copy(S->a, &before);
    bind_carried(S, &c, cparams);
    S->L.b = cb;
    SVal cond = eval_expr(S, ce);
    bool is_const = true, cval = false;
    ValId cv = 0;
    bool ok = cond.kind != SV_ERROR &&
              (cond.kind != SV_VALUE || lower_truth(&S->L, cond, &is_const, &cval, &cv, ce->loc));
    if (ok && cond.kind != SV_VALUE)
        cval = sval_truthy(cond);
    if (!ok || is_const) {
        /* the condition does not depend on anything the loop changes */
        S->L.b = outer;
        fr->env = before;
        if (ok && cval)
            diag_error(S->d, ce->loc, "while loop condition is constant True: the loop would never end "
                                      "(break is not supported)");
        return;
    }
    ir_emit(f, cb, OP_CONDITION, &cv, 1, NULL, 0, ce->loc);

    fr->env = env_copy(S->a, &before);
    bind_carried(S, &c, bparams);
    S->L.b = bb;
    fr->loop_depth++;
    exec_list(S, &st->while_.body, 0, NULL);
    fr->loop_depth--;
    ValId *ys = carried_yields(S, &c, bparams, st->loc);
    ir_emit(f, bb, OP_YIELD, ys, n, NULL, 0, st->loc);
    S->L.b = outer;

    Inst *in = ir_emit(f, outer, OP_WHILE, c.inits.v, n, carried_types(S, &c), n, st->loc);
    *ir_inst_add_region(f, in) = *cb;
    *ir_inst_add_region(f, in) = *bb;
    fr->env = before;
    bind_carried(S, &c, in->res);
}

static void exec_return(Sema *S, const Stmt *st)
{
    Frame *fr = S->fr;
    if (fr->loop_depth > 0) {
        diag_error(S->d, st->loc, "return inside a loop is not supported");
        return;
    }
    SVal v = st->expr ? eval_expr(S, st->expr) : sval_none();
    if (fr->is_kernel && v.kind != SV_NONE && v.kind != SV_ERROR) {
        diag_error(S->d, st->expr->loc, "a kernel cannot return a value");
        v = sval_error();
    }
    fr->done = fr->has_ret = true;
    fr->ret = v;
}

static void exec_assert(Sema *S, const Stmt *st)
{
    SVal t = eval_expr(S, st->assert_.test);
    if (t.kind == SV_ERROR)
        return;
    if (sval_has_value(t)) {
        diag_error(S->d, st->loc, "assert on a runtime value is not supported: use tl.device_assert(cond, msg)");
        return;
    }
    if (sval_truthy(t))
        return;
    SVal msg = st->assert_.msg ? eval_expr(S, st->assert_.msg) : sval_none();
    if (msg.kind == SV_CONST && msg.c.kind == CK_STR)
        diag_error(S->d, st->loc, "assertion failed: %s", msg.c.s);
    else if (msg.kind == SV_CONST)
        diag_error(S->d, st->loc, "assertion failed: %s", const_repr(S->a, msg.c));
    else
        diag_error(S->d, st->loc, "assertion failed");
}

static void exec_stmt(Sema *S, const Stmt *st)
{
    switch (st->kind) {
    case ST_EXPR:
        if (st->expr->kind != EX_STR) /* docstrings */
            eval_expr(S, st->expr);
        return;
    case ST_ASSIGN: {
        SVal v = eval_expr(S, st->assign.value);
        for (int i = 0; i < st->assign.ntargets; i++)
            assign_target(S, st->assign.targets[i], v);
        return;
    }
    case ST_AUGASSIGN: {
        const Expr *t = st->aug.target;
        if (t->kind != EX_NAME) {
            assign_target(S, t, sval_error()); /* reports subscripts and attributes */
            return;
        }
        SVal cur = lookup(S, t->name, t->loc);
        SVal y = eval_expr(S, st->aug.value);
        SVal r = cur.kind == SV_ERROR || y.kind == SV_ERROR ? sval_error()
                                                              : lower_binop(&S->L, st->aug.op, cur, y, st->loc);
        bind(S, t->name, r);
        return;
    }
    case ST_ANNASSIGN: {
        if (!st->ann.value)
            return;
        SVal v = eval_expr(S, st->ann.value);
        if (is_constexpr_ann(S, S->fr->mod, st->ann.ann) && sval_has_value(v)) {
            diag_error(S->d, st->ann.value->loc, "a tl.constexpr variable needs a compile-time constant, got %s",
                       describe(S, v));
            v = sval_error();
        }
        assign_target(S, st->ann.target, v);
        return;
    }
    case ST_IF: exec_if(S, st, NULL); return;
    case ST_FOR: exec_for(S, st); return;
    case ST_WHILE: exec_while(S, st); return;
    case ST_RETURN: exec_return(S, st); return;
    case ST_PASS: return;
    case ST_BREAK: diag_error(S->d, st->loc, "break is not supported in Triton kernels"); return;
    case ST_CONTINUE: diag_error(S->d, st->loc, "continue is not supported in Triton kernels"); return;
    case ST_ASSERT: exec_assert(S, st); return;
    case ST_FUNCDEF:
        diag_error(S->d, st->loc, "nested function definitions are not supported: define helpers at module "
                                  "level with @triton.jit");
        return;
    }
    die("unknown statement kind %d", (int)st->kind);
}

/* Runs s[from..] and then the continuation k, until the function is done.
 * An `if` that may return takes over the rest (see the header comment);
 * inside loops a return is an error, so no restructuring happens there. */
static void exec_list(Sema *S, const Stmts *s, int from, const Cont *k)
{
    Frame *fr = S->fr;
    for (int i = from; i < s->n && !fr->done; i++) {
        const Stmt *st = s->v[i];
        if (st->kind == ST_IF && fr->loop_depth == 0 &&
            (stmts_may_return(&st->if_.then) || stmts_may_return(&st->if_.els))) {
            Cont rest = {s, i + 1, k};
            exec_if(S, st, &rest);
            return;
        }
        exec_stmt(S, st);
    }
    if (!fr->done && k)
        exec_list(S, k->s, k->from, k->next);
}

/* ------------------------------------------------------------------ */
/* The kernel                                                          */
/* ------------------------------------------------------------------ */

static const SigParam *sig_find(const Signature *sig, const char *name)
{
    for (int i = 0; i < sig->params.n; i++)
        if (!strcmp(sig->params.v[i].name, name))
            return &sig->params.v[i];
    return NULL;
}

static const char *param_list(Arena *a, const FuncDef *fn)
{
    Buf b = {.a = a};
    for (int i = 0; i < fn->nparams; i++)
        buf_printf(&b, "%s%s", i ? ", " : "", fn->params[i].name);
    return fn->nparams ? buf_str(&b) : "none";
}

/* Binds the kernel's parameters from the signature: runtime ones become
 * Func params (source order), constexpr ones constants (Func.consts). */
static void bind_kernel_params(Sema *S, const Module *m, const FuncDef *fn, const Signature *sig)
{
    Func *f = S->L.f;
    for (int i = 0; i < sig->params.n; i++) {
        const SigParam *sp = &sig->params.v[i];
        int k = 0;
        while (k < fn->nparams && strcmp(fn->params[k].name, sp->name))
            k++;
        if (k == fn->nparams)
            diag_error(S->d, sp->loc, "'%s' is not a parameter of kernel '%s' (its parameters: %s)", sp->name,
                       fn->name, param_list(S->a, fn));
    }
    for (int i = 0; i < fn->nparams; i++) {
        const Param *p = &fn->params[i];
        const SigParam *sp = sig_find(sig, p->name);
        if (is_constexpr_ann(S, m, p->ann)) {
            SVal v;
            if (sp && sp->kind == SIG_CONST) {
                v = sv_from_const(sp->value);
            } else if (sp && sp->kind == SIG_SCALAR) { /* `fp32` for a constexpr: the dtype tl.float32 */
                v = (SVal){.kind = SV_CONST, .c = {.kind = CK_DTYPE, .dt = sp->dt}};
            } else if (sp) {
                diag_error(S->d, sp->loc,
                           "parameter '%s' is tl.constexpr: the signature must give its value (e.g. %s=1024), "
                           "not a pointer type",
                           p->name, p->name);
                continue;
            } else if (p->dflt) {
                v = eval_module_const(S, m, p->dflt, -1, arena_printf(S->a, "the default value of '%s'", p->name));
            } else {
                diag_error(S->d, p->loc, "missing value for tl.constexpr parameter '%s' in the signature", p->name);
                continue;
            }
            env_set(S->a, &S->fr->env, p->name, v);
            if (v.kind != SV_ERROR) {
                ConstParam cp = {p->name, sval_repr(S, v), i + 1};
                vec_push(S->a, f->consts, cp);
            }
            continue;
        }
        if (!sp) {
            diag_error(S->d, p->loc, "missing type for parameter '%s' in the signature (e.g. %s=i32 or %s=*fp32)",
                       p->name, p->name, p->name);
            continue;
        }
        Type ty;
        if (sp->kind == SIG_CONST) {
            diag_error(S->d, sp->loc,
                       "parameter '%s' is not tl.constexpr: the signature must give its type (e.g. %s=i32), "
                       "not a value; annotate it '%s: tl.constexpr' to specialize on a value",
                       p->name, p->name, p->name);
            continue;
        } else if (sp->kind == SIG_PTR) {
            ty = type_ptr(sp->dt, 0, NULL);
        } else {
            if (!dtype_in(sp->dt, sig_scalar_dtypes, sizeof sig_scalar_dtypes / sizeof *sig_scalar_dtypes)) {
                diag_error(S->d, sp->loc,
                           "runtime scalar parameter '%s' must be i1, i32, i64, u32, fp32 or fp64, not %s",
                           p->name, dtype_name(sp->dt));
                continue;
            }
            ty = type_scalar(sp->dt);
        }
        ValId v = ir_param_add(f, ty, p->name, p->loc);
        env_set(S->a, &S->fr->env, p->name, sval_value(v));
    }
}

Func *sema_kernel(Arena *a, Diags *d, Module **mods, int nmods, const char *name, const Signature *sig,
                  const SemaOptions *opt)
{
    int errs = d->nerrors;
    /* the last module added wins: the CLI adds --include files first */
    const FuncDef *fn = NULL;
    const Module *m = NULL;
    for (int i = nmods - 1; i >= 0 && !fn; i--)
        if ((fn = find_jit(mods[i], name)))
            m = mods[i];
    if (!fn) {
        Buf b = {.a = a};
        for (int i = 0; i < nmods; i++)
            for (int k = 0; k < mods[i]->funcs.n; k++)
                buf_printf(&b, "%s%s", b.len ? ", " : "", mods[i]->funcs.v[k]->name);
        Loc loc = {nmods ? mods[nmods - 1]->file : NULL, 0, 0};
        if (b.len)
            diag_error(d, loc, "kernel '%s' not found; the @triton.jit functions are: %s", name, buf_str(&b));
        else
            diag_error(d, loc, "kernel '%s' not found: there are no @triton.jit functions", name);
        return NULL;
    }

    SemaOptions dflt = {0};
    Func *f = ir_func_new(a, fn->name, fn->loc);
    Sema S = {.a = a, .d = d, .mods = mods, .nmods = nmods, .opt = opt ? opt : &dflt};
    S.L = (Lower){.a = a, .d = d, .f = f, .b = f->body};
    S.scratch = ir_block_new(f);
    S.slots = arena_alloc(a, sizeof *S.slots * (size_t)(nmods ? nmods : 1));
    for (int i = 0; i < nmods; i++)
        S.slots[i] = arena_alloc(a, sizeof **S.slots * (size_t)(mods[i]->globals.n + 1));
    Frame kf = {.mod = m, .fn = fn, .is_kernel = true, .global_limit = -1};
    S.fr = &kf;

    bind_kernel_params(&S, m, fn, sig);
    if (d->nerrors > errs)
        return NULL;
    exec_list(&S, &fn->body, 0, NULL);
    return d->nerrors > errs ? NULL : f;
}
