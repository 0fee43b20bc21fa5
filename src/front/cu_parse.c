/* cu_parse.c -- the C/C++ subset of CUDA C / HIP kernels into a CuUnit.
 *
 * At file scope the parser keeps what device code needs: struct
 * definitions, typedefs, `__global__` and `__device__` functions (with
 * their `template <...>` heads and qualifiers such as `__forceinline__`
 * and `__launch_bounds__(...)`), and explicit instantiations
 * (`template __global__ void k<float>(...);`).  Everything else (host
 * functions, launchers, pybind modules, globals) is skipped by balanced
 * brackets up to its `;` or closing brace, so host C++ outside the subset
 * never stops a kernel from being read.  Inside device functions the
 * grammar is C's statements and expressions with the C++ casts,
 * function-style casts and template arguments of calls.
 */
#include <string.h>

#include "base/base.h"
#include "front/cuda.h"
#include "front/cu.h"

typedef struct P {
    Arena *a;
    Diags *d;
    const CuTok *t;
    int n, i;
    CuUnit *u;
    Vec(const char *) tnames; /* template parameters in scope that name types */
    int errs_here;            /* errors in the current function (stop after a few) */
} P;

static const CuTok *peek(P *p) { return &p->t[p->i]; }
static const CuTok *peekn(P *p, int k) { return &p->t[p->i + k < p->n ? p->i + k : p->n - 1]; }
static const CuTok *next(P *p)
{
    const CuTok *t = &p->t[p->i];
    if (t->kind != CT_EOF)
        p->i++;
    return t;
}
static bool is(const CuTok *t, const char *s)
{
    return (t->kind == CT_PUNCT || t->kind == CT_IDENT) && !strcmp(t->text, s);
}
static bool accept(P *p, const char *s)
{
    if (is(peek(p), s)) {
        next(p);
        return true;
    }
    return false;
}
static void expect(P *p, const char *s)
{
    if (!accept(p, s)) {
        const CuTok *t = peek(p);
        diag_error(p->d, t->loc, "expected '%s', got '%s'", s, t->kind == CT_EOF ? "end of file" : t->text);
        p->errs_here++;
    }
}

/* ---- types ---- */

static const char *const builtin_types[] = {
    "void", "bool", "char", "short", "int", "long", "unsigned", "signed", "float", "double", "size_t",
    "ptrdiff_t", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
    "half", "__half", "__nv_bfloat16", "nv_bfloat16", "hip_bfloat16", "__hip_bfloat16", "auto", "float2",
    "float3", "float4", "double2", "double3", "double4", "int2", "int3", "int4", "uint2", "uint3", "uint4", "dim3",
    "longlong", "uint", "__int64", "half2", "__half2", "__nv_bfloat162", "nv_bfloat162",
};

static bool is_type_name(P *p, const char *s)
{
    for (size_t k = 0; k < sizeof builtin_types / sizeof *builtin_types; k++)
        if (!strcmp(s, builtin_types[k]))
            return true;
    for (int k = 0; k < p->tnames.n; k++)
        if (!strcmp(p->tnames.v[k], s))
            return true;
    for (int k = 0; k < p->u->structs.n; k++)
        if (p->u->structs.v[k]->name && !strcmp(p->u->structs.v[k]->name, s)) /* (an anonymous struct has none) */
            return true;
    for (int k = 0; k < p->u->typedefs.n; k++)
        if (!strcmp(p->u->typedefs.v[k].name, s))
            return true;
    return false;
}

static bool is_qual(const char *s)
{
    return !strcmp(s, "const") || !strcmp(s, "volatile") || !strcmp(s, "__restrict__") ||
           !strcmp(s, "__restrict") || !strcmp(s, "restrict") || !strcmp(s, "struct") || !strcmp(s, "typename") ||
           !strcmp(s, "constexpr") || !strcmp(s, "register");
}

static const char *torch_type(P *p);

/* cooperative_groups' group types (cg:: or cooperative_groups::, any alias naming the namespace
 * `cg`): the type's name when one starts here, else NULL. */
static const char *cg_type(P *p)
{
    const CuTok *ns = peek(p), *nm = peekn(p, 2);
    if (ns->kind != CT_IDENT || !is(peekn(p, 1), "::") || nm->kind != CT_IDENT ||
        !(is(ns, "cg") || is(ns, "cooperative_groups")))
        return NULL;
    static const char *const names[] = {"thread_block", "thread_block_tile", "thread_group", "coalesced_group",
                                        "grid_group"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (is(nm, names[k]))
            return names[k];
    return NULL;
}

/* Whether a type starts here (after storage qualifiers). */
static bool type_starts(P *p)
{
    const CuTok *t = peek(p);
    if (t->kind != CT_IDENT)
        return false;
    if (is_qual(t->text))
        return true;
    if ((!strcmp(t->text, "cub") && is(peekn(p, 1), "::") && is(peekn(p, 2), "BlockReduce")) || torch_type(p) ||
        cg_type(p))
        return true;
    if (!strcmp(t->text, "std") && is(peekn(p, 1), "::"))
        /* std::size_t x starts a declaration, std::tan(x) an expression */
        return peekn(p, 2)->kind == CT_IDENT && is_type_name(p, peekn(p, 2)->text);
    return is_type_name(p, t->text);
}

static CuTArg *parse_targs(P *p, int *n);

/* PyTorch's device types (at::, c10::, torch:: spellings): kad's name for the one starting here, or
 * NULL: at::Half and at::BFloat16 are __half and __nv_bfloat16; at::acc_type<T, is_cuda> and
 * at::opmath_type<T> are resolved by the lowering. */
static const char *torch_type(P *p)
{
    const CuTok *ns = peek(p), *nm = peekn(p, 2);
    if (ns->kind != CT_IDENT || !is(peekn(p, 1), "::") || nm->kind != CT_IDENT ||
        !(is(ns, "at") || is(ns, "c10") || is(ns, "torch")))
        return NULL;
    if (is(nm, "Half"))
        return "__half";
    if (is(nm, "BFloat16"))
        return "__nv_bfloat16";
    if ((is(nm, "acc_type") || is(nm, "opmath_type")) && is(peekn(p, 3), "<"))
        return is(nm, "acc_type") ? "at::acc_type" : "at::opmath_type";
    if ((is(nm, "PackedTensorAccessor32") || is(nm, "PackedTensorAccessor64")) && is(peekn(p, 3), "<"))
        return is(nm, "PackedTensorAccessor32") ? "torch::PackedTensorAccessor32" : "torch::PackedTensorAccessor64";
    return NULL;
}

/* type := qual* base qual* ('*' qual*)* ['&'] */
static CuTypeSpec *parse_type(P *p)
{
    CuTypeSpec *ty = arena_alloc(p->a, sizeof *ty);
    ty->loc = peek(p)->loc;
    Buf b = {.a = p->a};
    int words = 0;
    for (;;) {
        const CuTok *t = peek(p);
        if (t->kind != CT_IDENT)
            break;
        const char *pt = !words ? torch_type(p) : NULL;
        if (pt) { /* at::Half, c10::BFloat16, at::acc_type<T, true>, at::opmath_type<T> */
            next(p), next(p), next(p);
            if (!strcmp(pt, "at::acc_type") || !strcmp(pt, "at::opmath_type") || !strncmp(pt, "torch::Packed", 13))
                ty->targs = parse_targs(p, &ty->ntargs);
            buf_puts(&b, pt);
            words++;
            break;
        }
        const char *cgt = !words ? cg_type(p) : NULL;
        if (cgt) { /* cg::thread_block, cg::thread_block_tile<32> */
            next(p), next(p), next(p);
            if (is(peek(p), "<"))
                ty->targs = parse_targs(p, &ty->ntargs);
            buf_printf(&b, "cg::%s", cgt);
            words++;
            break;
        }
        if (!words && !strcmp(t->text, "cub") && is(peekn(p, 1), "::") && is(peekn(p, 2), "BlockReduce") &&
            is(peekn(p, 3), "<")) {
            /* cub::BlockReduce<T, THREADS[, ...]>, and its ::TempStorage */
            next(p), next(p), next(p);
            ty->targs = parse_targs(p, &ty->ntargs);
            buf_puts(&b, "cub::BlockReduce");
            words++;
            break;
        }
        if (is_qual(t->text)) {
            if (!strcmp(t->text, "const"))
                ty->is_const = true;
            next(p);
            continue;
        }
        if (!strcmp(t->text, "std") && is(peekn(p, 1), "::")) {
            next(p), next(p);
            continue;
        }
        bool multi = !strcmp(t->text, "unsigned") || !strcmp(t->text, "signed") || !strcmp(t->text, "long") ||
                     !strcmp(t->text, "short") || !strcmp(t->text, "int") || !strcmp(t->text, "char");
        if (words && !multi)
            break;
        if (words && multi) {
            /* `unsigned int`, `long long`: only C's multi-word integer types continue */
            const char *prev = buf_str(&b);
            bool prev_multi = strstr(prev, "unsigned") || strstr(prev, "signed") || strstr(prev, "long") ||
                              strstr(prev, "short") || !strcmp(prev, "int") || !strcmp(prev, "char");
            if (!prev_multi)
                break;
        }
        if (!is_type_name(p, t->text))
            break;
        if (words)
            buf_putc(&b, ' ');
        buf_puts(&b, t->text);
        words++;
        next(p);
        if (!multi)
            break;
    }
    while (peek(p)->kind == CT_IDENT && is_qual(peek(p)->text)) {
        if (!strcmp(peek(p)->text, "const"))
            ty->is_const = true;
        next(p);
    }
    if (!words) {
        diag_error(p->d, peek(p)->loc, "expected a type, got '%s'", peek(p)->text);
        p->errs_here++;
        ty->name = "int";
        return ty;
    }
    if (is(peek(p), "::") && is(peekn(p, 1), "TempStorage")) { /* BlockReduce::TempStorage */
        next(p), next(p);
        buf_puts(&b, "::TempStorage");
    }
    ty->name = arena_strdup(p->a, buf_str(&b));
    while (is(peek(p), "*")) {
        next(p);
        ty->nptr++;
        while (peek(p)->kind == CT_IDENT && is_qual(peek(p)->text))
            next(p);
    }
    if (accept(p, "&"))
        ty->ref = true;
    return ty;
}

/* ---- expressions ---- */

static CuExpr *parse_expr(P *p);
static CuExpr *parse_assign(P *p);
static CuExpr *parse_bin(P *p, int min);

static CuExpr *mk(P *p, CuExprKind k, Loc loc)
{
    CuExpr *e = arena_alloc(p->a, sizeof *e);
    e->kind = k;
    e->loc = loc;
    return e;
}

/* Whether `<` at p->i starts template arguments of a call: the name is a
 * function template of the unit, the bracket closes before `(`. */
static bool targs_follow(P *p, const char *name)
{
    bool known = false;
    for (int k = 0; k < p->u->funcs.n; k++)
        if (!strcmp(p->u->funcs.v[k]->name, name) && p->u->funcs.v[k]->ntparams)
            known = true;
    if (!known)
        return false;
    int depth = 0;
    for (int k = p->i; k < p->n; k++) {
        const CuTok *t = &p->t[k];
        if (is(t, "<"))
            depth++;
        else if (is(t, ">") && --depth == 0)
            return is(&p->t[k + 1], "(");
        else if (t->kind == CT_EOF || is(t, ";") || is(t, "{") || is(t, "&&") || is(t, "||"))
            return false;
    }
    return false;
}

static CuTArg *parse_targs(P *p, int *n)
{
    Vec(CuTArg) v = {0};
    expect(p, "<");
    while (!is(peek(p), ">") && peek(p)->kind != CT_EOF) {
        CuTArg ta = {0};
        if (type_starts(p) && (!(peekn(p, 1)->kind == CT_PUNCT && is(peekn(p, 1), "::")) || torch_type(p) ||
                               is(peek(p), "cub")))
            ta.type = parse_type(p); /* (Act::kRelu, an enumerator, is a constant) */
        else {
            /* a constant: parsed above the comparisons so that '>' closes the list */
            ta.expr = parse_bin(p, 8);
        }
        vec_push(p->a, v, ta);
        if (!accept(p, ","))
            break;
    }
    expect(p, ">");
    *n = v.n;
    return v.v;
}

static CuExpr **parse_args(P *p, int *n)
{
    Vec(CuExpr *) v = {0};
    expect(p, "(");
    while (!is(peek(p), ")") && peek(p)->kind != CT_EOF && p->errs_here < 8) {
        vec_push(p->a, v, parse_assign(p));
        if (!accept(p, ","))
            break;
    }
    expect(p, ")");
    *n = v.n;
    return v.v;
}

static CuExpr *parse_unary(P *p);

static CuExpr *parse_lambda(P *p);

static CuExpr *parse_primary(P *p)
{
    const CuTok *t = peek(p);
    Loc loc = t->loc;
    if (is(t, "["))
        return parse_lambda(p);
    if (t->kind == CT_INT || t->kind == CT_CHAR) {
        next(p);
        CuExpr *e = mk(p, CE_INT, loc);
        e->tok = t;
        return e;
    }
    if (t->kind == CT_FLOAT) {
        next(p);
        CuExpr *e = mk(p, CE_FLOAT, loc);
        e->tok = t;
        return e;
    }
    if (t->kind == CT_STRING) {
        next(p);
        while (peek(p)->kind == CT_STRING)
            next(p);
        CuExpr *e = mk(p, CE_STRING, loc);
        e->tok = t;
        return e;
    }
    if (is(t, "(")) {
        next(p);
        CuExpr *e = parse_expr(p);
        expect(p, ")");
        return e;
    }
    if (is(t, "{")) {
        next(p);
        CuExpr *e = mk(p, CE_INIT, loc);
        Vec(CuExpr *) v = {0};
        while (!is(peek(p), "}") && peek(p)->kind != CT_EOF) {
            vec_push(p->a, v, parse_assign(p));
            if (!accept(p, ","))
                break;
        }
        expect(p, "}");
        e->args = v.v;
        e->nargs = v.n;
        return e;
    }
    if (t->kind == CT_IDENT) {
        if (!strcmp(t->text, "true") || !strcmp(t->text, "false")) {
            next(p);
            CuExpr *e = mk(p, CE_BOOL, loc);
            e->tok = t;
            return e;
        }
        if (!strcmp(t->text, "static_cast") || !strcmp(t->text, "reinterpret_cast") ||
            !strcmp(t->text, "const_cast")) {
            next(p);
            CuExpr *e = mk(p, CE_CAST, loc);
            e->op = t->text;
            expect(p, "<");
            e->type = parse_type(p);
            expect(p, ">");
            expect(p, "(");
            e->l = parse_expr(p);
            expect(p, ")");
            return e;
        }
        if (!strcmp(t->text, "sizeof")) {
            next(p);
            CuExpr *e = mk(p, CE_SIZEOF, loc);
            expect(p, "(");
            if (type_starts(p))
                e->type = parse_type(p);
            else
                e->l = parse_expr(p);
            expect(p, ")");
            return e;
        }
        bool cubt = (!strcmp(t->text, "cub") && is(peekn(p, 1), "::") && is(peekn(p, 2), "BlockReduce")) ||
                    torch_type(p);
        if (type_starts(p) && !is(t, "auto") && (!is(peekn(p, 1), "::") || cubt)) {
            /* a function-style cast or constructor: float(x), float4{...}, make_* are calls */
            CuTypeSpec *ty = parse_type(p);
            CuExpr *e = mk(p, CE_CAST, loc);
            e->op = "()";
            e->type = ty;
            if (is(peek(p), "(")) {
                e->args = parse_args(p, &e->nargs);
            } else if (is(peek(p), "{")) {
                CuExpr *init = parse_primary(p);
                e->args = init->args;
                e->nargs = init->nargs;
            } else {
                diag_error(p->d, peek(p)->loc, "expected '(' after the type name '%s'", ty->name);
                p->errs_here++;
            }
            if (e->nargs == 1)
                e->l = e->args[0];
            return e;
        }
        next(p);
        /* qualified names: only std:: and :: prefixes of the math library */
        const char *name = t->text;
        while (is(peek(p), "::") && peekn(p, 1)->kind == CT_IDENT) {
            next(p);
            name = next(p)->text;
        }
        CuExpr *e = mk(p, CE_IDENT, loc);
        e->name = name;
        if ((!strcmp(name, "is_same") || !strcmp(name, "is_same_v")) && is(peek(p), "<")) {
            /* std::is_same<A, B>::value, std::is_same_v<A, B>: a call named "is_same" of two types */
            e->kind = CE_CALL;
            e->name = "is_same";
            e->targs = parse_targs(p, &e->ntargs);
            if (!strcmp(name, "is_same") && accept(p, "::")) {
                if (!(peek(p)->kind == CT_IDENT && is(peek(p), "value")))
                    diag_error(p->d, peek(p)->loc, "expected 'value' after std::is_same<...>::"), p->errs_here++;
                else
                    next(p);
            }
            return e;
        }
        if (!strcmp(name, "numeric_limits") && is(peek(p), "<")) {
            /* std::numeric_limits<T>::infinity(): a call named "numeric_limits::infinity" */
            e->kind = CE_CALL;
            e->targs = parse_targs(p, &e->ntargs);
            expect(p, "::");
            if (peek(p)->kind == CT_IDENT)
                e->name = arena_printf(p->a, "numeric_limits::%s", next(p)->text);
            else
                diag_error(p->d, peek(p)->loc, "expected a member of std::numeric_limits"), p->errs_here++;
            if (is(peek(p), "("))
                e->args = parse_args(p, &e->nargs);
            return e;
        }
        if (is(peek(p), "<") && targs_follow(p, name)) {
            e->kind = CE_CALL;
            e->targs = parse_targs(p, &e->ntargs);
        } else if (is(peek(p), "<") && !strcmp(name, "tiled_partition")) {
            e->kind = CE_CALL; /* cg::tiled_partition<32>(block) */
            e->targs = parse_targs(p, &e->ntargs);
        } else if (is(peek(p), "<") && (!strcmp(name, "maximum") || !strcmp(name, "minimum") || !strcmp(name, "plus") ||
                                        !strcmp(name, "greater") || !strcmp(name, "less") ||
                                        !strcmp(name, "bit_and") || !strcmp(name, "bit_or") || !strcmp(name, "bit_xor"))) {
            /* CCCL's operator objects for cub (cuda::maximum<>(), cuda::std::plus<float>{}): a call of
               no arguments named after them */
            e->kind = CE_CALL;
            e->targs = parse_targs(p, &e->ntargs);
            if (accept(p, "{")) {
                expect(p, "}");
                return e;
            }
        }
        if (is(peek(p), "(")) {
            e->kind = CE_CALL;
            e->args = parse_args(p, &e->nargs);
        } else if (e->kind == CE_CALL) {
            diag_error(p->d, peek(p)->loc, "expected '(' after template arguments");
            p->errs_here++;
        }
        return e;
    }
    if (is(t, "::") && peekn(p, 1)->kind == CT_IDENT) {
        next(p);
        return parse_primary(p);
    }
    diag_error(p->d, loc, "expected an expression, got '%s'", t->kind == CT_EOF ? "end of file" : t->text);
    p->errs_here++;
    next(p);
    return mk(p, CE_INT, loc);
}

static CuExpr *parse_postfix(P *p)
{
    CuExpr *e = parse_primary(p);
    for (;;) {
        const CuTok *t = peek(p);
        if (is(t, "[")) {
            next(p);
            CuExpr *x = mk(p, CE_INDEX, t->loc);
            x->l = e;
            x->r = parse_expr(p);
            expect(p, "]");
            e = x;
        } else if (is(t, ".") || is(t, "->")) {
            next(p);
            CuExpr *x = mk(p, CE_MEMBER, peek(p)->loc);
            x->l = e;
            x->arrow = is(t, "->");
            if (peek(p)->kind != CT_IDENT) {
                diag_error(p->d, peek(p)->loc, "expected a member name");
                p->errs_here++;
                return e;
            }
            x->name = next(p)->text;
            if (!x->arrow && is(peek(p), "(")) { /* obj.method(args): a call named ".method" of l */
                x->kind = CE_CALL;
                x->name = arena_printf(p->a, ".%s", x->name);
                x->args = parse_args(p, &x->nargs);
            }
            e = x;
        } else if (is(t, "++") || is(t, "--")) {
            next(p);
            CuExpr *x = mk(p, CE_UNARY, t->loc);
            x->op = is(t, "++") ? "post++" : "post--";
            x->l = e;
            e = x;
        } else {
            return e;
        }
    }
}

static CuExpr *parse_unary(P *p)
{
    const CuTok *t = peek(p);
    if (is(t, "-") || is(t, "+") || is(t, "!") || is(t, "~") || is(t, "*") || is(t, "&") || is(t, "++") ||
        is(t, "--")) {
        next(p);
        CuExpr *e = mk(p, CE_UNARY, t->loc);
        e->op = is(t, "++") ? "++pre" : is(t, "--") ? "--pre" : t->text;
        e->l = parse_unary(p);
        return e;
    }
    if (is(t, "(")) {
        /* a C cast: ( type ) unary */
        int save = p->i;
        next(p);
        if (type_starts(p)) {
            CuTypeSpec *ty = parse_type(p);
            if (accept(p, ")")) {
                CuExpr *e = mk(p, CE_CAST, t->loc);
                e->op = "(T)";
                e->type = ty;
                e->l = parse_unary(p);
                return e;
            }
        }
        p->i = save;
    }
    return parse_postfix(p);
}

static int bin_prec(const CuTok *t)
{
    static const struct { const char *op; int prec; } ops[] = {
        {"||", 1}, {"&&", 2}, {"|", 3}, {"^", 4}, {"&", 5}, {"==", 6}, {"!=", 6}, {"<", 7}, {">", 7},
        {"<=", 7}, {">=", 7}, {"<<", 8}, {">>", 8}, {"+", 9}, {"-", 9}, {"*", 10}, {"/", 10}, {"%", 10},
    };
    if (t->kind != CT_PUNCT)
        return -1;
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
        if (!strcmp(t->text, ops[k].op))
            return ops[k].prec;
    return -1;
}

static CuExpr *parse_bin(P *p, int min)
{
    CuExpr *l = parse_unary(p);
    for (;;) {
        const CuTok *t = peek(p);
        int pr = bin_prec(t);
        if (pr < 0 || pr < min)
            return l;
        next(p);
        CuExpr *e = mk(p, CE_BINARY, t->loc);
        e->op = t->text;
        e->l = l;
        e->r = parse_bin(p, pr + 1);
        l = e;
    }
}

static CuExpr *parse_cond(P *p)
{
    CuExpr *c = parse_bin(p, 1);
    if (is(peek(p), "?")) {
        CuExpr *e = mk(p, CE_COND, next(p)->loc);
        e->c = c;
        e->l = parse_expr(p);
        expect(p, ":");
        e->r = parse_cond(p);
        return e;
    }
    return c;
}

static CuExpr *parse_assign(P *p)
{
    CuExpr *l = parse_cond(p);
    const CuTok *t = peek(p);
    static const char *const aops[] = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="};
    for (size_t k = 0; k < sizeof aops / sizeof *aops; k++)
        if (is(t, aops[k])) {
            next(p);
            CuExpr *e = mk(p, CE_ASSIGN, t->loc);
            e->op = aops[k];
            e->l = l;
            e->r = parse_assign(p);
            return e;
        }
    return l;
}

static CuExpr *parse_expr(P *p)
{
    CuExpr *e = parse_assign(p);
    while (is(peek(p), ",")) {
        CuExpr *x = mk(p, CE_BINARY, next(p)->loc);
        x->op = ",";
        x->l = e;
        x->r = parse_assign(p);
        e = x;
    }
    return e;
}

/* ---- statements ---- */

static CuStmt *parse_stmt(P *p);

static CuStmt *mks(P *p, CuStmtKind k, Loc loc)
{
    CuStmt *s = arena_alloc(p->a, sizeof *s);
    s->kind = k;
    s->loc = loc;
    return s;
}

/* decl := [__shared__|extern|static]* type declarator (',' declarator)* ';' */
static CuStmt *parse_decl(P *p, bool need_semi)
{
    CuStmt *s = mks(p, CS_DECL, peek(p)->loc);
    for (;;) {
        const CuTok *t = peek(p);
        if (is(t, "__shared__"))
            s->shared = true;
        else if (is(t, "extern"))
            s->is_extern = true;
        else if (is(t, "static"))
            s->is_static = true;
        else if (!is(t, "__device__") && !is(t, "__restrict__") && !is(t, "__constant__"))
            break;
        next(p);
    }
    s->type = parse_type(p);
    Vec(CuDecl) ds = {0};
    for (;;) {
        CuDecl dc = {0};
        int extra_ptr = 0;
        while (accept(p, "*"))
            extra_ptr++;
        while (peek(p)->kind == CT_IDENT && is_qual(peek(p)->text))
            next(p);
        if (extra_ptr) {
            /* `float *a, b;`: each declarator's own stars */
            CuTypeSpec *ty = arena_alloc(p->a, sizeof *ty);
            *ty = *s->type;
            ty->nptr += extra_ptr;
            if (ds.n == 0)
                s->type = ty;
        }
        dc.loc = peek(p)->loc;
        if (peek(p)->kind != CT_IDENT) {
            diag_error(p->d, peek(p)->loc, "expected a name in the declaration, got '%s'", peek(p)->text);
            p->errs_here++;
            break;
        }
        dc.name = next(p)->text;
        while (accept(p, "[")) {
            if (is(peek(p), "]")) {
                dc.unsized = true;
            } else if (dc.ndims < 4) {
                dc.dims[dc.ndims++] = parse_expr(p);
            }
            expect(p, "]");
        }
        if (accept(p, "="))
            dc.init = parse_assign(p);
        else if (is(peek(p), "{") || is(peek(p), "("))
            dc.init = parse_primary(p);
        vec_push(p->a, ds, dc);
        if (!accept(p, ","))
            break;
    }
    s->decls = ds.v;
    s->ndecls = ds.n;
    if (need_semi)
        expect(p, ";");
    return s;
}

static bool decl_starts(P *p)
{
    const CuTok *t = peek(p);
    if (is(t, "__shared__") || is(t, "extern") || is(t, "static"))
        return true;
    if (!type_starts(p))
        return false;
    /* `float(x) * y;` is an expression; `float x` a declaration */
    int save = p->i;
    int before = p->d->nerrors;
    Diags *d = p->d;
    Diags quiet;
    diag_init(&quiet, p->a);
    p->d = &quiet;
    (void)parse_type(p);
    bool ok = peek(p)->kind == CT_IDENT || is(peek(p), "*");
    p->d = d;
    p->d->nerrors = before;
    p->i = save;
    return ok;
}

static CuStmt *parse_block(P *p)
{
    CuStmt *s = mks(p, CS_BLOCK, peek(p)->loc);
    expect(p, "{");
    Vec(CuStmt *) v = {0};
    while (!is(peek(p), "}") && peek(p)->kind != CT_EOF && p->errs_here < 8)
        vec_push(p->a, v, parse_stmt(p));
    expect(p, "}");
    s->list = v.v;
    s->n = v.n;
    return s;
}

/* `using name = T;` or `typedef T name;` in a function's body: a type name from here to the end of
 * the function for the parser (p->tnames), of its block for the lowering (CS_TYPEDEF). */
static CuStmt *parse_local_typedef(P *p, Loc loc)
{
    const char *name = NULL;
    CuTypeSpec *ty = NULL;
    if (accept(p, "using")) {
        name = next(p)->text;
        expect(p, "=");
        ty = parse_type(p);
    } else {
        expect(p, "typedef");
        ty = parse_type(p);
        if (peek(p)->kind != CT_IDENT) {
            diag_error(p->d, peek(p)->loc, "expected the typedef's name");
            return mks(p, CS_EMPTY, loc);
        }
        name = next(p)->text;
    }
    expect(p, ";");
    CuStmt *s = mks(p, CS_TYPEDEF, loc);
    s->type = ty;
    s->decls = arena_alloc(p->a, sizeof *s->decls);
    s->decls[0] = (CuDecl){.name = name, .loc = loc};
    s->ndecls = 1;
    vec_push(p->a, p->tnames, name);
    return s;
}

static CuStmt *parse_stmt(P *p)
{
    const CuTok *t = peek(p);
    Loc loc = t->loc;
    if (is(t, "{"))
        return parse_block(p);
    if ((is(t, "using") && peekn(p, 1)->kind == CT_IDENT && is(peekn(p, 2), "=")) || is(t, "typedef"))
        return parse_local_typedef(p, loc);
    if (is(t, "using")) { /* using namespace std; using std::max;: names kad reads anyway */
        while (!is(peek(p), ";") && peek(p)->kind != CT_EOF)
            next(p);
        accept(p, ";");
        return mks(p, CS_EMPTY, loc);
    }
    if (is(t, ";")) {
        next(p);
        return mks(p, CS_EMPTY, loc);
    }
    if (is(t, "if")) {
        next(p);
        CuStmt *s = mks(p, CS_IF, loc);
        accept(p, "constexpr"); /* if constexpr: a constant condition, and kad lowers only the branch taken */
        expect(p, "(");
        s->e = parse_expr(p);
        expect(p, ")");
        s->body = parse_stmt(p);
        if (accept(p, "else"))
            s->els = parse_stmt(p);
        return s;
    }
    if (is(t, "for")) {
        next(p);
        CuStmt *s = mks(p, CS_FOR, loc);
        expect(p, "(");
        if (!is(peek(p), ";")) {
            if (decl_starts(p))
                s->init = parse_decl(p, false);
            else {
                s->init = mks(p, CS_EXPR, peek(p)->loc);
                s->init->e = parse_expr(p);
            }
        }
        expect(p, ";");
        if (!is(peek(p), ";"))
            s->e = parse_expr(p);
        expect(p, ";");
        if (!is(peek(p), ")"))
            s->step = parse_expr(p);
        expect(p, ")");
        s->body = parse_stmt(p);
        return s;
    }
    if (is(t, "while")) {
        next(p);
        CuStmt *s = mks(p, CS_WHILE, loc);
        expect(p, "(");
        s->e = parse_expr(p);
        expect(p, ")");
        s->body = parse_stmt(p);
        return s;
    }
    if (is(t, "do")) {
        next(p);
        CuStmt *s = mks(p, CS_DO, loc);
        s->body = parse_stmt(p);
        expect(p, "while");
        expect(p, "(");
        s->e = parse_expr(p);
        expect(p, ")");
        expect(p, ";");
        return s;
    }
    if (is(t, "break") || is(t, "continue")) {
        next(p);
        expect(p, ";");
        return mks(p, is(t, "break") ? CS_BREAK : CS_CONTINUE, loc);
    }
    if (is(t, "return")) {
        next(p);
        CuStmt *s = mks(p, CS_RETURN, loc);
        if (!is(peek(p), ";"))
            s->e = parse_expr(p);
        expect(p, ";");
        return s;
    }
    if (is(t, "switch")) {
        next(p);
        CuStmt *s = mks(p, CS_SWITCH, loc);
        expect(p, "(");
        s->e = parse_expr(p);
        expect(p, ")");
        if (!is(peek(p), "{")) {
            diag_error(p->d, peek(p)->loc, "expected '{' after switch (...)");
            p->errs_here++;
            return s;
        }
        s->body = parse_block(p);
        return s;
    }
    if (is(t, "case") || (is(t, "default") && is(peekn(p, 1), ":"))) {
        next(p);
        CuStmt *s = mks(p, CS_CASE, loc);
        if (is(t, "case"))
            s->e = parse_cond(p);
        expect(p, ":");
        return s;
    }
    if (is(t, "goto")) {
        diag_error(p->d, loc, "'%s' is not supported in kernels: write it with if/else", t->text);
        p->errs_here++;
        next(p);
        return mks(p, CS_EMPTY, loc);
    }
    if (decl_starts(p))
        return parse_decl(p, true);
    CuStmt *s = mks(p, CS_EXPR, loc);
    s->e = parse_expr(p);
    expect(p, ";");
    return s;
}

/* ---- file scope ---- */

/* Skips one file-scope item: up to a `;` at depth 0, or a balanced
 * `{...}` (and a `;` after it). */
static void skip_item(P *p)
{
    int depth = 0;
    while (peek(p)->kind != CT_EOF) {
        const CuTok *t = next(p);
        if (is(t, "(") || is(t, "["))
            depth++;
        else if (is(t, ")") || is(t, "]"))
            depth--;
        else if (is(t, "{")) {
            int b = 1;
            while (b && peek(p)->kind != CT_EOF) {
                const CuTok *u = next(p);
                b += is(u, "{") - is(u, "}");
            }
            if (depth <= 0) {
                accept(p, ";");
                return;
            }
        } else if (is(t, ";") && depth <= 0)
            return;
        else if (is(t, "}") && depth <= 0)
            return; /* the end of a namespace or extern "C" block */
    }
}

/* struct NAME { fields }; / typedef struct [NAME] { fields } NAME; */
static bool parse_struct(P *p, bool tdef)
{
    int save = p->i;
    expect(p, "struct");
    CuStruct *st = arena_alloc(p->a, sizeof *st);
    st->loc = peek(p)->loc;
    if (peek(p)->kind == CT_IDENT && !is(peek(p), "{"))
        st->name = next(p)->text;
    while (peek(p)->kind == CT_IDENT && (is(peek(p), "__align__") || is(peek(p), "alignas"))) {
        next(p);
        int n;
        (void)parse_args(p, &n);
    }
    if (!is(peek(p), "{")) {
        p->i = save;
        return false;
    }
    next(p);
    Vec(CuField) fs = {0};
    if (st->name) /* fields may name the struct's own type */
        vec_push(p->a, p->u->structs, st);
    while (!is(peek(p), "}") && peek(p)->kind != CT_EOF && p->errs_here < 8) {
        if (!type_starts(p)) {
            /* a host struct (torch::Tensor members, constructors...): refused only where a kernel uses it */
            if (!st->host)
                st->host = true, st->host_loc = peek(p)->loc;
            skip_item(p);
            continue;
        }
        CuTypeSpec *ty = parse_type(p);
        for (;;) {
            CuField f = {ty, NULL};
            if (peek(p)->kind == CT_IDENT) {
                f.name = next(p)->text;
            } else if (is(peek(p), "(")) {
                /* a constructor: host code unless a kernel uses the struct */
                if (!st->host)
                    st->host = true, st->host_loc = ty->loc;
                skip_item(p);
                break;
            } else {
                diag_error(p->d, peek(p)->loc, "expected a member name");
                p->errs_here++;
                break;
            }
            if (is(peek(p), "[") || is(peek(p), "(")) {
                if (!st->host)
                    st->host = true, st->host_loc = peek(p)->loc;
                skip_item(p);
                break;
            }
            vec_push(p->a, fs, f);
            if (!accept(p, ","))
                break;
        }
        accept(p, ";");
    }
    expect(p, "}");
    if (tdef && peek(p)->kind == CT_IDENT) {
        const char *alias = next(p)->text;
        if (!st->name) {
            st->name = alias;
            vec_push(p->a, p->u->structs, st);
        } else {
            CuTypeSpec *ty = arena_alloc(p->a, sizeof *ty);
            ty->name = st->name;
            vec_push(p->a, p->u->typedefs, ((CuField){ty, alias}));
        }
    }
    if (!st->name)
        vec_push(p->a, p->u->structs, st);
    st->fields = fs.v;
    st->nfields = fs.n;
    if (!tdef && peek(p)->kind == CT_IDENT) { /* struct {...} g;: a variable of file scope, host data */
        skip_item(p);
        return true;
    }
    expect(p, ";");
    return true;
}

/* enum [class|struct] NAME [: T] { A, B = e, ... };  The type is an int (a typedef of NAME), each
 * enumerator a file-scope constant `constexpr int A = ...;` (scoped ones named by their last part:
 * Act::kRelu is kRelu). */
static void parse_enum(P *p)
{
    expect(p, "enum");
    if (!accept(p, "class"))
        accept(p, "struct");
    const char *name = peek(p)->kind == CT_IDENT ? next(p)->text : NULL;
    CuTypeSpec *base = arena_alloc(p->a, sizeof *base);
    base->name = "int";
    base->loc = peek(p)->loc;
    if (accept(p, ":") && type_starts(p))
        base = parse_type(p);
    if (name)
        vec_push(p->a, p->u->typedefs, ((CuField){base, name}));
    if (!accept(p, "{")) {
        skip_item(p);
        return;
    }
    CuExpr *prev = NULL;
    int64_t k = 0;
    while (peek(p)->kind == CT_IDENT && p->errs_here < 8) {
        const CuTok *id = next(p);
        CuExpr *v;
        if (accept(p, "=")) {
            v = parse_cond(p);
            prev = v, k = 0;
        } else if (prev) { /* the previous explicit value plus k */
            CuExpr *one = mk(p, CE_BINARY, id->loc);
            CuTok *t = arena_alloc(p->a, sizeof *t);
            k++;
            *t = (CuTok){.kind = CT_INT, .loc = id->loc, .text = arena_printf(p->a, "%lld", (long long)k), .ival = k};
            CuExpr *lit = mk(p, CE_INT, id->loc);
            lit->tok = t;
            one->op = "+", one->l = prev, one->r = lit;
            v = one;
        } else {
            CuTok *t = arena_alloc(p->a, sizeof *t);
            *t = (CuTok){.kind = CT_INT, .loc = id->loc, .text = arena_printf(p->a, "%lld", (long long)k), .ival = k};
            v = mk(p, CE_INT, id->loc);
            v->tok = t;
            k++;
        }
        CuStmt *s = mks(p, CS_DECL, id->loc);
        CuTypeSpec *ty = arena_alloc(p->a, sizeof *ty);
        *ty = *base;
        ty->is_const = true;
        s->type = ty;
        s->decls = arena_alloc(p->a, sizeof *s->decls);
        s->decls[0] = (CuDecl){.name = id->text, .init = v, .loc = id->loc};
        s->ndecls = 1;
        vec_push(p->a, p->u->consts, s);
        if (!accept(p, ","))
            break;
    }
    expect(p, "}");
    accept(p, ";");
}

/* The specifiers before a function: __global__, __device__, __host__,
 * __forceinline__, inline, static, __launch_bounds__(...), extern "C". */
static void parse_specs(P *p, bool *glob, bool *dev, bool *host)
{
    for (;;) {
        const CuTok *t = peek(p);
        if (is(t, "__global__"))
            *glob = true;
        else if (is(t, "__device__"))
            *dev = true;
        else if (is(t, "__host__"))
            *host = true;
        else if (is(t, "__launch_bounds__") || is(t, "C10_LAUNCH_BOUNDS_1") || is(t, "C10_LAUNCH_BOUNDS_2")) {
            /* C10_LAUNCH_BOUNDS_*: PyTorch's spelling of __launch_bounds__ (c10/macros/Macros.h) */
            next(p);
            int n;
            (void)parse_args(p, &n);
            continue;
        } else if (is(t, "extern") && peekn(p, 1)->kind == CT_STRING) {
            next(p);
        } else if (!(is(t, "__forceinline__") || is(t, "inline") || is(t, "static") || is(t, "__inline__") ||
                     is(t, "__noinline__") || is(t, "constexpr") || is(t, "__attribute__") ||
                     is(t, "C10_LAUNCH_BOUNDS_0") || is(t, "C10_HOST_DEVICE") || is(t, "C10_DEVICE")))
            return;
        if (is(t, "__attribute__")) {
            next(p);
            int n;
            (void)parse_args(p, &n);
            continue;
        }
        next(p);
    }
}

/* A function's (or lambda's) parameter list `(T a, U b)` into fn. */
static void parse_params(P *p, CuFunc *fn)
{
    Vec(CuParam) ps = {0};
    expect(p, "(");
    if (is(peek(p), "void") && is(peekn(p, 1), ")"))
        next(p);
    while (!is(peek(p), ")") && peek(p)->kind != CT_EOF && p->errs_here < 8) {
        CuParam pr = {0};
        pr.type = parse_type(p);
        pr.loc = peek(p)->loc;
        if (peek(p)->kind == CT_IDENT)
            pr.name = next(p)->text;
        if (accept(p, "[")) { /* float x[] as a parameter: a pointer */
            while (!is(peek(p), "]") && peek(p)->kind != CT_EOF)
                next(p);
            expect(p, "]");
            pr.type->nptr++;
        }
        vec_push(p->a, ps, pr);
        if (!accept(p, ","))
            break;
    }
    expect(p, ")");
    fn->params = ps.v;
    fn->nparams = ps.n;
}

/* A lambda, at its '[': [captures](params) mutable -> ret { body } (params optional). */
static CuExpr *parse_lambda(P *p)
{
    CuExpr *e = mk(p, CE_LAMBDA, peek(p)->loc);
    CuFunc *fn = arena_alloc(p->a, sizeof *fn);
    fn->name = "lambda";
    fn->loc = e->loc;
    fn->is_device = true;
    e->fn = fn;
    expect(p, "[");
    while (!is(peek(p), "]") && peek(p)->kind != CT_EOF) {
        const CuTok *t = next(p);
        if (is(t, "=") || (t->kind == CT_IDENT && !is(t, "this") && !(p->i >= 2 && is(&p->t[p->i - 2], "&"))))
            e->by_copy = true; /* [=], [x]: by value ([&], [&x] by reference) */
    }
    expect(p, "]");
    if (is(peek(p), "("))
        parse_params(p, fn);
    while (peek(p)->kind == CT_IDENT && (is(peek(p), "mutable") || is(peek(p), "constexpr") ||
                                         is(peek(p), "__device__") || is(peek(p), "__host__") || is(peek(p), "noexcept")))
        next(p);
    if (accept(p, "->"))
        fn->ret = parse_type(p);
    if (!is(peek(p), "{")) {
        diag_error(p->d, peek(p)->loc, "expected the lambda's body");
        p->errs_here++;
        return e;
    }
    fn->body = parse_block(p);
    return e;
}

static void parse_function(P *p, CuTParam *tps, int ntps, bool glob, bool dev)
{
    CuFunc *fn = arena_alloc(p->a, sizeof *fn);
    fn->is_global = glob;
    fn->is_device = dev;
    fn->tparams = tps;
    fn->ntparams = ntps;
    fn->ret = parse_type(p);
    bool g2 = false, d2 = false, h2 = false;
    parse_specs(p, &g2, &d2, &h2); /* void __launch_bounds__(256) k(...) */
    fn->loc = peek(p)->loc;
    if (peek(p)->kind != CT_IDENT) {
        diag_error(p->d, peek(p)->loc, "expected the function's name");
        skip_item(p);
        return;
    }
    fn->name = next(p)->text;
    parse_params(p, fn);
    while (peek(p)->kind == CT_IDENT && (is(peek(p), "const") || is(peek(p), "noexcept")))
        next(p);
    if (accept(p, ";"))
        return; /* a declaration */
    if (!is(peek(p), "{")) {
        diag_error(p->d, peek(p)->loc, "expected the body of '%s'", fn->name);
        skip_item(p);
        return;
    }
    vec_push(p->a, p->u->funcs, fn); /* before the body: recursion is refused at lowering */
    fn->body = parse_block(p);
}

/* Whether the file-scope item at item0 (specifiers already read up to p->i)
 * declares constants: `const` or `constexpr` among its tokens before the
 * type's end, a type, a name and `=` (or `[` for a constant array), no
 * function.  p->i is restored. */
static bool const_item(P *p, int item0)
{
    bool is_const = false;
    for (int k = item0; k < p->i; k++)
        is_const = is_const || is(&p->t[k], "constexpr") || is(&p->t[k], "__constant__");
    while (is(peek(p), "static") || is(peek(p), "__device__") || is(peek(p), "__constant__"))
        next(p);
    if (!type_starts(p))
        return false;
    int save = p->i;
    Diags quiet, *d = p->d;
    diag_init(&quiet, p->a);
    p->d = &quiet;
    CuTypeSpec *ty = parse_type(p);
    is_const = is_const || ty->is_const;
    bool ok = is_const && ty->nptr == 0 && peek(p)->kind == CT_IDENT && (is(peekn(p, 1), "=") || is(peekn(p, 1), "["));
    p->d = d;
    p->i = save;
    return ok && !quiet.nerrors;
}

/* One function of file scope, parsed with its own diagnostics: where it fails, it is dropped and
 * its errors kept in the unit's broken list (cu_lower reports them where the function is used),
 * and the parse goes on after the item (from item0, by balanced brackets). */
static void parse_item_function(P *p, int item0, CuTParam *tps, int ntps, bool glob, bool dev)
{
    Diags fd, *dd = p->d;
    diag_init(&fd, p->a);
    p->d = &fd;
    int nfuncs = p->u->funcs.n, name_at = p->i;
    parse_function(p, tps, ntps, glob, dev);
    p->d = dd;
    for (int i = 0; i < fd.list.n; i++) /* notes and warnings of a function that parses stay */
        if (!fd.nerrors)
            vec_push(p->a, dd->list, fd.list.v[i]);
    if (!fd.nerrors)
        return;
    p->u->funcs.n = nfuncs; /* pushed before its body: not a function kad can lower */
    /* the name: the identifier before the parameters' parenthesis */
    const char *name = NULL;
    for (int i = name_at; i + 1 < p->n && p->t[i].kind != CT_EOF; i++) {
        if (is(&p->t[i + 1], "(") && p->t[i].kind == CT_IDENT && !is(&p->t[i], "__launch_bounds__")) {
            name = p->t[i].text;
            break;
        }
        if (is(&p->t[i], "{") || is(&p->t[i], ";"))
            break;
    }
    CuBroken b = {.name = name, .diags = fd.list.v, .ndiags = fd.list.n};
    vec_push(p->a, p->u->broken, b);
    p->i = item0;
    skip_item(p);
}

CuUnit *cu_parse(Arena *a, Diags *d, const char *file, const CuTok *toks, int ntok)
{
    P p = {.a = a, .d = d, .t = toks, .n = ntok};
    p.u = arena_alloc(a, sizeof *p.u);
    p.u->file = file;
    while (peek(&p)->kind != CT_EOF) {
        p.errs_here = 0;
        p.tnames.n = 0;
        const CuTok *t = peek(&p);
        if (is(t, "namespace")) {
            while (!is(peek(&p), "{") && peek(&p)->kind != CT_EOF && !is(peek(&p), ";"))
                next(&p);
            if (!accept(&p, "{"))
                skip_item(&p);
            continue;
        }
        if (is(t, "}") || is(t, ";")) {
            next(&p);
            continue;
        }
        if (is(t, "extern") && peekn(&p, 1)->kind == CT_STRING && is(peekn(&p, 2), "{")) {
            next(&p), next(&p), next(&p);
            continue;
        }
        if (is(t, "using") && peekn(&p, 1)->kind == CT_IDENT && is(peekn(&p, 2), "=")) {
            next(&p);
            const char *name = next(&p)->text;
            next(&p);
            if (type_starts(&p)) {
                CuTypeSpec *ty = parse_type(&p);
                vec_push(a, p.u->typedefs, ((CuField){ty, name}));
                accept(&p, ";");
            } else
                skip_item(&p);
            continue;
        }
        if (is(t, "typedef")) {
            next(&p);
            if (is(peek(&p), "struct")) {
                if (!parse_struct(&p, true))
                    skip_item(&p);
                continue;
            }
            if (type_starts(&p)) {
                CuTypeSpec *ty = parse_type(&p);
                if (peek(&p)->kind == CT_IDENT && is(peekn(&p, 1), ";")) {
                    vec_push(a, p.u->typedefs, ((CuField){ty, next(&p)->text}));
                    next(&p);
                    continue;
                }
            }
            skip_item(&p);
            continue;
        }
        if (is(t, "enum")) {
            parse_enum(&p);
            continue;
        }
        if (is(t, "struct")) {
            if (!parse_struct(&p, false))
                skip_item(&p);
            continue;
        }
        CuTParam *tps = NULL;
        int ntps = 0;
        if (is(t, "template")) {
            next(&p);
            if (!is(peek(&p), "<")) {
                /* an explicit instantiation: template [specs] type name<args>(params); */
                int save = p.i;
                while (peek(&p)->kind != CT_EOF && !is(peek(&p), ";") &&
                       !(peek(&p)->kind == CT_IDENT && is(peekn(&p, 1), "<")))
                    next(&p);
                if (peek(&p)->kind == CT_IDENT) {
                    CuInst ci = {.name = peek(&p)->text, .loc = peek(&p)->loc};
                    next(&p);
                    ci.targs = parse_targs(&p, &ci.ntargs);
                    vec_push(a, p.u->insts, ci);
                }
                (void)save;
                skip_item(&p);
                continue;
            }
            next(&p);
            Vec(CuTParam) v = {0};
            while (!is(peek(&p), ">") && peek(&p)->kind != CT_EOF) {
                CuTParam tp = {.loc = peek(&p)->loc};
                if (accept(&p, "typename") || accept(&p, "class")) {
                    tp.is_type = true;
                } else {
                    tp.type = parse_type(&p);
                }
                tp.loc = peek(&p)->loc;
                if (peek(&p)->kind == CT_IDENT)
                    tp.name = next(&p)->text;
                if (accept(&p, "=")) { /* defaults are not used: skip to , or > */
                    while (!is(peek(&p), ",") && !is(peek(&p), ">") && peek(&p)->kind != CT_EOF)
                        next(&p);
                }
                if (tp.is_type && tp.name)
                    vec_push(a, p.tnames, tp.name);
                vec_push(a, v, tp);
                if (!accept(&p, ","))
                    break;
            }
            expect(&p, ">");
            tps = v.v;
            ntps = v.n;
        }
        int item0 = p.i;
        bool glob = false, dev = false, host = false;
        parse_specs(&p, &glob, &dev, &host);
        if (!tps && const_item(&p, item0)) {
            /* a file-scope constant: `constexpr int kTile = 4;`, `static const float C = 0.5f;` */
            p.i = item0;
            CuStmt *s = parse_decl(&p, true);
            vec_push(a, p.u->consts, s);
            continue;
        }
        if ((glob || dev) && type_starts(&p)) {
            /* __device__ variables (__constant__ arrays too) are not functions */
            int save = p.i;
            Diags quiet;
            diag_init(&quiet, a);
            Diags *dd = p.d;
            p.d = &quiet;
            (void)parse_type(&p);
            bool isfn = peek(&p)->kind == CT_IDENT && is(peekn(&p, 1), "(");
            p.d = dd;
            p.i = save;
            if (isfn) {
                parse_item_function(&p, item0, tps, ntps, glob, dev);
                continue;
            }
        }
        skip_item(&p);
    }
    return p.u;
}
