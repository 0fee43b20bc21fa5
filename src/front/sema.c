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
 * through the lower_* interface of front.h.
 *
 * The stage is three files:
 *   sema_sig.c   signature strings; binding the kernel's parameters
 *   sema.c       (this file) the state of a specialization, environments,
 *                name lookup (module globals, imports, helpers, Python
 *                builtins), expressions, inlining of @triton.jit helpers,
 *                and the entry point sema_kernel
 *   sema_stmt.c  statements and control flow: assignment, `if`/`for`/
 *                `while`, merging of paths into region results, loop-
 *                carried variables, unrolling, early `return`
 * They share the state (Sema, Frame) and the functions declared in
 * front.h under "sema.c, sema_sig.c and sema_stmt.c".
 *
 * Model: an expression evaluates to an SVal; a name is bound to an SVal in
 * the environment (Env) of the current Frame, one Frame per inlined call.
 * Control flow never mutates an environment shared with another path:
 * each branch or loop body runs on a copy, and the copies are merged
 * afterwards into the values the IR region yields.  So an SSA value defined
 * inside a region can never be named outside it.
 *
 * Requires: a parsed Module (parse_py.c) and sema_ops.c.  Guarantees: on
 * success a Func whose regions end in their terminators (the kernel body has
 * none) and whose values are defined before use; after any error NULL, with
 * every error located at the construct that caused it.
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/triton.h"
#include "front/front.h"

/* Deeper nesting of helper calls than this is taken for recursion. */
#define MAX_INLINE_DEPTH 64
/* Calls this deep or deeper get no "in the call of" note. */
#define MAX_NOTE_DEPTH 4

/* ------------------------------------------------------------------ */
/* SVal helpers                                                        */
/* ------------------------------------------------------------------ */

/* Whether x holds a runtime value anywhere (so it is not a constexpr). */
bool sval_has_value(SVal x)
{
    if (x.kind == SV_VALUE)
        return true;
    if (x.kind == SV_TUPLE || x.kind == SV_METHOD || x.kind == SV_BLOCKPTR)
        for (int i = 0; i < x.n; i++)
            if (sval_has_value(x.elts[i]))
                return true;
    return false;
}

static bool sval_has_error(SVal x)
{
    if (x.kind == SV_ERROR)
        return true;
    if (x.kind == SV_TUPLE || x.kind == SV_BLOCKPTR)
        for (int i = 0; i < x.n; i++)
            if (sval_has_error(x.elts[i]))
                return true;
    return false;
}

const char *sema_type_str(Sema *S, Type t)
{
    Buf b = {.a = S->a};
    type_print(&b, t);
    return buf_str(&b);
}

/* What x is, for messages: "None", "the constant 0.5", "a value of type fp32[64]". */
const char *sema_describe(Sema *S, SVal x)
{
    switch (x.kind) {
    case SV_ERROR: return "invalid";
    case SV_NONE: return "None";
    case SV_CONST: return arena_printf(S->a, "the constant %s", const_repr(S->a, x.c));
    case SV_VALUE: return arena_printf(S->a, "a value of type %s", sema_type_str(S, ir_type(S->L.f, x.v)));
    case SV_TUPLE: return arena_printf(S->a, "a tuple of %d elements", x.n);
    case SV_SLICE: return "a slice";
    case SV_MODULE: return arena_printf(S->a, "the module '%s'", x.qual);
    case SV_BUILTIN: return arena_printf(S->a, "the function '%s'", x.qual);
    case SV_FUNC: return arena_printf(S->a, "the function '%s'", x.fn->name);
    case SV_METHOD: return arena_printf(S->a, "the method '%s'", x.qual);
    case SV_BLOCKPTR:
        return arena_printf(S->a, "a %s of %d dimensions", sval_is_tensor_desc(x) ? "tensor descriptor" : "block pointer",
                            x.elts[BP_BLOCK].n);
    }
    return "?";
}

/* ------------------------------------------------------------------ */
/* Environments                                                        */
/* ------------------------------------------------------------------ */

static uint32_t env_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

Binding *sema_env_find(const Env *e, const char *name)
{
    if (e->idx && e->nidx == e->n) {
        for (uint32_t i = env_hash(name) & e->mask; e->idx[i]; i = (i + 1) & e->mask)
            if (e->idx[i] <= e->n && !strcmp(e->v[e->idx[i] - 1].name, name))
                return &e->v[e->idx[i] - 1];
        return NULL;
    }
    for (int i = e->n - 1; i >= 0; i--)
        if (!strcmp(e->v[i].name, name))
            return &e->v[i];
    return NULL;
}

/* Brings e's index up to date from 16 names on: the bindings pushed since
 * added, or built anew (at most half full). */
static void env_index(Arena *a, Env *e)
{
    if (e->n < 16)
        return;
    if (!e->idx || e->nidx > e->n || 2u * (uint32_t)e->n > e->mask) {
        uint32_t cap = 64;
        while (cap < 4u * (uint32_t)e->n)
            cap *= 2;
        e->idx = arena_alloc(a, cap * sizeof *e->idx);
        e->mask = cap - 1;
        e->nidx = 0;
    }
    for (; e->nidx < e->n; e->nidx++) {
        uint32_t i = env_hash(e->v[e->nidx].name) & e->mask;
        while (e->idx[i])
            i = (i + 1) & e->mask;
        e->idx[i] = e->nidx + 1;
    }
}

void sema_env_set(Arena *a, Env *e, const char *name, SVal v)
{
    Binding *b = sema_env_find(e, name);
    if (b) {
        b->val = v;
        return;
    }
    Binding nb = {name, v};
    vec_push(a, *e, nb);
    env_index(a, e);
}

Env sema_env_copy(Arena *a, const Env *e)
{
    Env c = {0};
    vec_reserve(a, c, e->n);
    if (e->n)
        memcpy(c.v, e->v, (size_t)e->n * sizeof *e->v);
    c.n = e->n;
    return c;
}

/* Gives an unnamed runtime value the variable's name as its print hint. */
void sema_name_value(Sema *S, SVal v, const char *name)
{
    if (v.kind == SV_VALUE && v.v > 0 && !S->L.f->vals.v[v.v].name)
        S->L.f->vals.v[v.v].name = name;
}

void sema_bind(Sema *S, const char *name, SVal v)
{
    sema_name_value(S, v, name);
    sema_env_set(S->a, &S->fr->env, name, v);
}

/* ------------------------------------------------------------------ */
/* Names: module globals, imports, helpers, Python builtins            */
/* ------------------------------------------------------------------ */

static const char *const py_builtins[] = {"min", "max", "abs", "int", "float", "bool", "len",
                                          "range", "print", NULL};
/* Python builtins a kernel might reach for, refused by name rather than
 * reported as undefined. */
static const char *const py_unsupported[] = {
    "sum", "zip", "enumerate", "list", "tuple", "dict", "set", "str", "round", "pow", "divmod",
    "map", "filter", "sorted", "reversed", "any", "all", "type", "getattr", "hasattr", "setattr",
    "iter", "next", "super", "object", "id", "hash", "repr", "chr", "ord", "slice", "callable",
    "isinstance", "issubclass", "format", "hex", "oct", "bin", "complex", "bytes", NULL};

bool sema_in_list(const char *const *list, const char *s)
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

/* A function parsed by parse_module_lazy with errors: reports them now
 * that a specialization reaches it (true if there were any). */
static bool report_parse_errors(Diags *d, const FuncDef *fn, Loc from)
{
    if (!fn->nerrs)
        return false;
    for (int k = 0; k < fn->nerrs; k++)
        if (fn->errs[k].kind == DG_ERROR)
            diag_error(d, fn->errs[k].loc, "%s", fn->errs[k].msg);
        else
            diag_note(d, fn->errs[k].loc, "%s", fn->errs[k].msg);
    if (from.file)
        diag_note(d, from, "'%s' is used here", fn->name);
    return true;
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
const char *sema_qual_of(Sema *S, const Module *m, const Env *env, const Expr *e)
{
    if (e->kind == EX_ATTR) {
        const char *base = sema_qual_of(S, m, env, e->attr.value);
        return base ? arena_printf(S->a, "%s.%s", base, e->attr.name) : NULL;
    }
    if (e->kind != EX_NAME)
        return NULL;
    const char *n = e->name;
    if ((env && sema_env_find(env, n)) || find_global(m, n, -1) >= 0)
        return NULL;
    const Import *imp = find_import(m, n);
    if (imp)
        return imp->qual;
    if (find_jit(m, n))
        return NULL;
    if (sema_in_list(py_builtins, n))
        return arena_printf(S->a, "builtins.%s", n);
    return NULL;
}

/* Whether a parameter annotation says tl.constexpr (any import spelling;
 * also the quoted form "tl.constexpr"). */
bool sema_is_constexpr_ann(Sema *S, const Module *m, const Expr *ann)
{
    if (!ann)
        return false;
    if (ann->kind == EX_STR) {
        const char *dot = strrchr(ann->str, '.');
        return !strcmp(dot ? dot + 1 : ann->str, "constexpr");
    }
    const char *q = sema_qual_of(S, m, NULL, ann);
    if (q)
        return !strcmp(q, "triton.language.constexpr") || !strcmp(q, "triton.language.core.constexpr");
    /* an unresolvable root (tl not imported): go by the spelling */
    return (ann->kind == EX_ATTR && !strcmp(ann->attr.name, "constexpr")) ||
           (ann->kind == EX_NAME && !strcmp(ann->name, "constexpr"));
}

/* Which loop iterator a qualified name is: 0 none, else RK_*. */
int sema_range_kind(const char *q)
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

const char *sema_range_name(int rk)
{
    return rk == RK_RANGE ? "range" : rk == RK_TL_RANGE ? "tl.range" : "tl.static_range";
}

/* Evaluates e as a compile-time constant in module m's scope (module
 * globals, parameter defaults).  No IR reaches the kernel. */
SVal sema_eval_module_const(Sema *S, const Module *m, const Expr *e, int global_limit, const char *what)
{
    Frame tmp = {.mod = m, .global_limit = global_limit};
    Frame *saved = S->fr;
    Block *sb = S->L.b;
    S->fr = &tmp;
    S->L.b = S->scratch;
    SVal v = sema_eval_expr(S, e);
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
    SVal v = sema_eval_module_const(S, m, g->value, gi, arena_printf(S->a, "module-level '%s'", g->name));
    if (S->d->nerrors > errs)
        diag_note(S->d, use, "in module constant '%s', used here", g->name);
    slot->state = GS_DONE;
    slot->val = v;
    return v;
}

static const Module *find_module(const Sema *S, const char *name)
{
    for (int i = S->nmods - 1; i >= 0; i--)
        if (S->mods[i]->name && !strcmp(S->mods[i]->name, name))
            return S->mods[i];
    return NULL;
}

const char *sema_abs_name(Arena *a, const Module *from, const char *qual)
{
    if (qual[0] != '.')
        return qual;
    int ndots = 0;
    while (qual[ndots] == '.')
        ndots++;
    const char *rest = qual + ndots;
    const char *name = from->name ? from->name : "";
    size_t n = strlen(name);
    /* the package: the module itself for __init__.py, else its parent;
     * each further dot goes one package up */
    int up = from->is_pkg ? ndots - 1 : ndots;
    for (int k = 0; k < up && n; k++) {
        while (n && name[n - 1] != '.')
            n--;
        if (n)
            n--;
    }
    if (!n) /* above the top package: resolved from the top, so that sources added
               without module names still find each other */
        return *rest ? rest : NULL;
    return *rest ? arena_printf(a, "%.*s.%s", (int)n, name, rest) : arena_strndup(a, name, n);
}

static SVal module_attr(Sema *S, const Module *m, const char *name, Loc loc);

/* The value a module-level name of m set by the host has (kad_set_global):
 * a dotted name is resolved absolutely (triton.language.exp, a module, a
 * function of an added module), a bare dtype name (fp16) is that dtype,
 * anything else is a constant expression. */
static SVal host_value(Sema *S, const Module *m, const Global *g)
{
    const Expr *e = g->value;
    Buf b = {.a = S->a};
    const Expr *x = e;
    const char *parts[64];
    int np = 0;
    while (x->kind == EX_ATTR && np < 63) {
        parts[np++] = x->attr.name;
        x = x->attr.value;
    }
    if (x->kind == EX_NAME) {
        if (!np) {
            Dtype dt = dtype_parse(x->name, strlen(x->name));
            if (dt != DT_VOID && dt != DT_PTR)
                return (SVal){.kind = SV_CONST, .c = {.kind = CK_DTYPE, .dt = dt}};
        }
        buf_puts(&b, x->name);
        while (np)
            buf_printf(&b, ".%s", parts[--np]);
        return sema_resolve_qual(S, m, buf_str(&b), g->name, g->loc);
    }
    return sema_eval_module_const(S, m, e, -1, arena_printf(S->a, "the host value of '%s'", g->name));
}

static const Global *find_host(const Module *m, const char *name)
{
    for (int i = m->host.n - 1; i >= 0; i--)
        if (!strcmp(m->host.v[i].name, name))
            return &m->host.v[i];
    return NULL;
}

/* The value of qualified name q (absolute or relative to module `from`):
 * a triton name, an added module, or a name inside one (a @triton.jit
 * function, a constant, an alias, an import it re-exports, a submodule).
 * `alias` names the binding for messages. */
SVal sema_resolve_qual(Sema *S, const Module *from, const char *q, const char *alias, Loc loc)
{
    const char *abs = sema_abs_name(S->a, from, q);
    if (!abs) {
        diag_error(S->d, loc, "'%s' is imported from '%s', a relative import beyond the top-level package of "
                   "module '%s'", alias, q, from->name ? from->name : from->file);
        return sval_error();
    }
    if (!strcmp(abs, "triton") || !strncmp(abs, "triton.", 7))
        return lower_global(&S->L, abs, loc);
    const Module *m = find_module(S, abs);
    if (m)
        return (SVal){.kind = SV_MODULE, .qual = m->name, .mod = m};
    /* the longest prefix that is an added module, then attributes */
    size_t n = strlen(abs);
    while (n) {
        while (n && abs[n - 1] != '.')
            n--;
        if (!n)
            break;
        n--;
        const char *prefix = arena_strndup(S->a, abs, n);
        if (!(m = find_module(S, prefix)))
            continue;
        SVal v = {.kind = SV_MODULE, .qual = m->name, .mod = m};
        const char *p = abs + n + 1;
        while (*p && v.kind != SV_ERROR) {
            const char *dot = strchr(p, '.');
            const char *part = dot ? arena_strndup(S->a, p, (size_t)(dot - p)) : p;
            v = v.kind == SV_MODULE && v.mod ? module_attr(S, v.mod, part, loc) : lower_attr(&S->L, v, part, loc);
            p = dot ? dot + 1 : "";
        }
        return v;
    }
    /* no added module of that name: a @triton.jit function of the added
     * sources matched by name (the current module first) -- what
     * kad_add_source without module names relies on */
    const char *dot = strrchr(abs, '.');
    const char *last = dot ? dot + 1 : abs;
    const FuncDef *fn = find_jit(from, last);
    if (fn)
        return (SVal){.kind = SV_FUNC, .fn = fn, .mod = from};
    for (int i = 0; i < S->nmods; i++)
        if ((fn = find_jit(S->mods[i], last)))
            return (SVal){.kind = SV_FUNC, .fn = fn, .mod = S->mods[i]};
    const char *modname = dot ? arena_printf(S->a, "'%s' or '%.*s'", abs, (int)(dot - abs), abs)
                              : arena_printf(S->a, "'%s'", abs);
    diag_error(S->d, loc,
               "'%s' is imported from '%s', which is neither part of triton nor found in the given sources "
               "(no module %s was added: pass its package root with -I DIR, or its file with --include)",
               alias, q, modname);
    return sval_error();
}

/* m.name for an added module m: what running m would bind to name. */
static SVal module_attr(Sema *S, const Module *m, const char *name, Loc loc)
{
    if (S->resolving >= MAX_INLINE_DEPTH) {
        diag_error(S->d, loc, "'%s' is imported in a cycle of modules (through '%s')", name, m->name);
        return sval_error();
    }
    SVal v;
    const Global *h = find_host(m, name);
    int gi = find_global(m, name, -1);
    const FuncDef *fn = find_jit(m, name);
    const Import *imp = find_import(m, name);
    S->resolving++;
    if (h)
        v = host_value(S, m, h);
    else if (gi >= 0)
        v = global_value(S, m, gi, loc);
    else if (fn)
        v = (SVal){.kind = SV_FUNC, .fn = fn, .mod = m};
    else if (imp)
        v = sema_resolve_qual(S, m, imp->qual, imp->alias, loc);
    else {
        const char *sub = arena_printf(S->a, "%s.%s", m->name, name);
        const Module *sm = find_module(S, sub);
        if (sm)
            v = (SVal){.kind = SV_MODULE, .qual = sm->name, .mod = sm};
        else {
            diag_error(S->d, loc,
                       "module '%s' (%s) defines no '%s' that kad can read (a name bound by host code kad "
                       "does not run is set with kad_set_global, as the Python package does), and no "
                       "module '%s' was found (pass its package root with -I DIR)",
                       m->name, m->file, name, sub);
            v = sval_error();
        }
    }
    S->resolving--;
    return v;
}

static SVal resolve_import(Sema *S, const Import *imp, Loc loc)
{
    return sema_resolve_qual(S, S->fr->mod, imp->qual, imp->alias, loc);
}

/* name lookup: locals of the frame, module globals, imports, @triton.jit
 * functions of the module, Python builtins. */
SVal sema_lookup(Sema *S, const char *name, Loc loc)
{
    Frame *fr = S->fr;
    Binding *b = sema_env_find(&fr->env, name);
    if (b)
        return b->val;
    const Module *m = fr->mod;
    const Global *h = find_host(m, name);
    if (h)
        return host_value(S, m, h);
    int gi = find_global(m, name, fr->global_limit);
    if (gi >= 0)
        return global_value(S, m, gi, loc);
    const Import *imp = find_import(m, name);
    if (imp)
        return resolve_import(S, imp, loc);
    const FuncDef *fn = find_jit(m, name);
    if (fn)
        return (SVal){.kind = SV_FUNC, .fn = fn, .mod = m};
    if (sema_in_list(py_builtins, name))
        return (SVal){.kind = SV_BUILTIN, .qual = arena_printf(S->a, "builtins.%s", name)};
    if (sema_in_list(py_unsupported, name)) {
        diag_error(S->d, loc, "Python builtin '%s' is not supported in Triton kernels", name);
        return sval_error();
    }
    diag_error(S->d, loc, "'%s' is not defined", name);
    return sval_error();
}

/* ------------------------------------------------------------------ */
/* Expressions                                                         */
/* ------------------------------------------------------------------ */

static SVal inline_jit(Sema *S, SVal fnv, const SVal *bound, Loc loc, int errs);
static SVal call_jit(Sema *S, SVal fnv, const SVal *args, const Loc *alocs, int nargs, const Keyword *kw,
                     const SVal *kwv, int nkw, Loc loc);

static const SemaRule *find_rule(const Sema *S, const FuncDef *fn)
{
    for (int i = S->rules.n - 1; i >= 0; i--)
        if (S->rules.v[i].helper == fn && S->rules.v[i].kind != RULE_JVP)
            return &S->rules.v[i];
    if (!strcmp(fn->name, "kad_stop_gradient")) {
        static const SemaRule stop = {NULL, NULL, NULL, RULE_NONDIFF};
        return &stop;
    }
    return NULL;
}

/* fn's forward-mode rule (@kad.jvp_of), or NULL. */
static const SemaRule *find_jvp_rule(const Sema *S, const FuncDef *fn)
{
    for (int i = S->rules.n - 1; i >= 0; i--)
        if (S->rules.v[i].helper == fn && S->rules.v[i].kind == RULE_JVP)
            return &S->rules.v[i];
    return NULL;
}

/* The adjoint type of a value of type t: fp16/bf16 adjoints are fp32. */
static Type rule_adj_type(Type t)
{
    if (t.dt == DT_F16 || t.dt == DT_BF16)
        t.dt = DT_F32;
    return t;
}

/* y (the result of helper fn called with bound) through `custom_jvp`, whose
 * rule (a Func.rules region) is jr's function lowered with parameters
 * standing for fn's value arguments, then the tangents of the float ones
 * (the other arguments' tangents are None); it returns y's tangent. */
static SVal jvp_rule(Sema *S, const SemaRule *jr, const FuncDef *fn, const SVal *bound, const Loc *blocs, ValId y,
                     Loc loc)
{
    int np = fn->nparams, errs = S->d->nerrors;
    Func *f = S->L.f;
    Type rt = f->vals.v[y].ty;
    Block *rb = ir_block_new(f);
    ValId *args = arena_alloc(S->a, sizeof *args * (size_t)(np + 1));
    int na = 0;
    args[na++] = y;
    SVal *rargs = arena_alloc(S->a, sizeof *rargs * (size_t)(2 * np + 1));
    Loc *rlocs = arena_alloc(S->a, sizeof *rlocs * (size_t)(2 * np + 1));
    for (int i = 0; i < np; i++) {
        rlocs[i] = rlocs[np + i] = blocs[i];
        rargs[np + i] = sval_none();
        if (bound[i].kind == SV_VALUE) {
            args[na++] = bound[i].v;
            rargs[i] = sval_value(ir_block_param_add(f, rb, f->vals.v[bound[i].v].ty, fn->params[i].name, blocs[i]));
        } else {
            rargs[i] = bound[i];
        }
    }
    for (int i = 0; i < np; i++)
        if (bound[i].kind == SV_VALUE && dtype_is_float((Dtype)f->vals.v[bound[i].v].ty.dt))
            rargs[np + i] = sval_value(ir_block_param_add(f, rb, f->vals.v[bound[i].v].ty,
                                                          arena_printf(S->a, "t_%s", fn->params[i].name), blocs[i]));
    Block *saved = S->L.b;
    S->L.b = rb;
    SVal g = call_jit(S, (SVal){.kind = SV_FUNC, .fn = jr->rule, .mod = jr->rmod}, rargs, rlocs, 2 * np, NULL, NULL,
                      0, loc);
    ValId t = 0;
    if (g.kind == SV_NONE) {
        t = ir_const_float(f, rb, rt, 0.0, loc);
    } else if (g.kind == SV_VALUE || (g.kind == SV_CONST && (g.c.kind == CK_INT || g.c.kind == CK_FLOAT))) {
        ValId v = lower_value(&S->L, g, loc);
        if (v && g.kind == SV_VALUE) {
            Type gt = f->vals.v[v].ty;
            bool fits = gt.rank <= rt.rank;
            for (int k = 0; fits && k < gt.rank; k++)
                fits = gt.shape[gt.rank - 1 - k] == rt.shape[rt.rank - 1 - k] || gt.shape[gt.rank - 1 - k] == 1;
            if (!fits) {
                diag_error(S->d, jr->rule->loc, "jvp rule '%s' returns a tangent of type %s for the result of '%s', "
                           "which is %s", jr->rule->name, sema_type_str(S, gt), fn->name, sema_type_str(S, rt));
                v = 0;
            }
        }
        t = v ? lower_convert(&S->L, v, rt, loc) : 0;
    } else if (g.kind != SV_ERROR) {
        diag_error(S->d, jr->rule->loc, "jvp rule '%s' returns %s: it must return the tangent of the result of '%s' "
                   "(one float value)", jr->rule->name, sema_describe(S, g), fn->name);
    }
    if (t)
        ir_emit(f, rb, OP_YIELD, &t, 1, NULL, 0, loc);
    S->L.b = saved;
    if (S->d->nerrors > errs || !t) {
        if (S->d->nerrors == errs)
            diag_error(S->d, loc, "jvp rule '%s' of '%s' gives no tangent", jr->rule->name, fn->name);
        diag_note(S->d, loc, "in the jvp rule '%s' of '%s' called from here", jr->rule->name, fn->name);
        return sval_error();
    }
    vec_push(S->a, f->rules, rb);
    Inst *in = ir_emit(f, S->L.b, OP_CUSTOM_JVP, args, na, &rt, 1, loc);
    in->ival = f->rules.n - 1;
    return sval_value(in->res[0]);
}

/* A call of a helper with a custom rule: the helper is inlined as usual;
 * its result goes through `stop_gradient` (nondiff) or `custom_vjp`, whose
 * rule (a Func.rules region) is the vjp function lowered with parameters
 * standing for the helper's value arguments and the result's adjoint. */
static SVal call_with_rule(Sema *S, const SemaRule *r, const SemaRule *jr, SVal fnv, const SVal *bound,
                           const Loc *blocs, Loc loc)
{
    const FuncDef *fn = fnv.fn;
    int np = fn->nparams, errs = S->d->nerrors;
    Func *f = S->L.f;
    if (r && r->kind == RULE_NONDIFF)
        jr = NULL; /* no derivative in either mode */
    bool custom = (r && r->kind == RULE_VJP) || jr;
    const char *how = r && r->kind == RULE_NONDIFF ? "is marked non-differentiable"
                      : r                          ? "has a custom vjp rule"
                                                   : "has a custom jvp rule";
    for (int i = 0; i < np; i++) {
        SVal x = bound[i];
        if (x.kind == SV_VALUE && f->vals.v[x.v].ty.dt == DT_PTR && custom)
            diag_error(S->d, blocs[i],
                       "argument '%s' of '%s' is a pointer, but '%s' %s: a rule gives the gradients of value "
                       "arguments only (load the values in the kernel and pass them)",
                       fn->params[i].name, fn->name, fn->name, how);
        else if (x.kind != SV_VALUE && sval_has_value(x) && custom)
            diag_error(S->d, blocs[i], "argument '%s' of '%s' is %s: a helper with a custom rule takes single values",
                       fn->params[i].name, fn->name, sema_describe(S, x));
    }
    if (S->d->nerrors > errs)
        return sval_error();
    SVal ret = inline_jit(S, fnv, bound, loc, errs);
    if (ret.kind == SV_ERROR)
        return ret;
    if (ret.kind != SV_VALUE || !dtype_is_float((Dtype)f->vals.v[ret.v].ty.dt)) {
        diag_error(S->d, loc, "'%s' %s, but it returns %s: a helper with a rule must return one float value",
                   fn->name, how, sema_describe(S, ret));
        return sval_error();
    }
    Type rt = f->vals.v[ret.v].ty;
    if (r && r->kind == RULE_NONDIFF)
        return sval_value(ir_op1(f, S->L.b, OP_STOP_GRADIENT, rt, ret.v, loc));
    if (!r)
        return jvp_rule(S, jr, fn, bound, blocs, ret.v, loc);

    /* the rule's region: parameters for the value arguments, then the adjoint */
    Block *rb = ir_block_new(f);
    ValId *args = arena_alloc(S->a, sizeof *args * (size_t)(np + 1));
    int na = 0;
    args[na++] = ret.v;
    SVal *rargs = arena_alloc(S->a, sizeof *rargs * (size_t)(np + 1));
    Loc *rlocs = arena_alloc(S->a, sizeof *rlocs * (size_t)(np + 2));
    for (int i = 0; i < np; i++) {
        rlocs[i] = loc;
        if (bound[i].kind == SV_VALUE) {
            args[na++] = bound[i].v;
            rargs[i] = sval_value(ir_block_param_add(f, rb, f->vals.v[bound[i].v].ty, fn->params[i].name, blocs[i]));
        } else {
            rargs[i] = bound[i];
        }
    }
    rlocs[np] = rlocs[np + 1] = loc;
    rargs[np] = sval_value(ir_block_param_add(f, rb, rule_adj_type(rt), "dout", loc));
    Block *saved = S->L.b;
    S->L.b = rb;
    SVal g = call_jit(S, (SVal){.kind = SV_FUNC, .fn = r->rule, .mod = r->rmod}, rargs, rlocs, np + 1, NULL, NULL,
                      0, loc);
    ValId *ys = arena_alloc(S->a, sizeof *ys * (size_t)(np + 1));
    int ny = 0;
    if (g.kind != SV_ERROR) {
        int ng = g.kind == SV_TUPLE ? g.n : 1;
        const SVal *gs = g.kind == SV_TUPLE ? g.elts : &g;
        if (ng != np) {
            diag_error(S->d, r->rule->loc,
                       "vjp rule '%s' returns %d gradient%s, but '%s' takes %d argument%s (return one per argument, "
                       "None for those without one)",
                       r->rule->name, ng, ng == 1 ? "" : "s", fn->name, np, np == 1 ? "" : "s");
        } else {
            for (int i = 0; i < np; i++) {
                SVal x = bound[i], gi = gs[i];
                bool fl = x.kind == SV_VALUE && dtype_is_float((Dtype)f->vals.v[x.v].ty.dt);
                if (!fl) {
                    if (gi.kind != SV_NONE && gi.kind != SV_CONST && gi.kind != SV_ERROR)
                        diag_error(S->d, r->rule->loc,
                                   "vjp rule '%s' returns %s as the gradient of '%s', which is not a float value "
                                   "(return None)",
                                   r->rule->name, sema_describe(S, gi), fn->params[i].name);
                    continue;
                }
                Type at = rule_adj_type(f->vals.v[x.v].ty);
                if (gi.kind == SV_NONE) {
                    ys[ny++] = ir_const_float(f, rb, at, 0.0, loc);
                    continue;
                }
                if (gi.kind != SV_VALUE && !(gi.kind == SV_CONST && (gi.c.kind == CK_INT || gi.c.kind == CK_FLOAT))) {
                    diag_error(S->d, r->rule->loc, "vjp rule '%s' returns %s as the gradient of '%s'",
                               r->rule->name, sema_describe(S, gi), fn->params[i].name);
                    continue;
                }
                ValId v = lower_value(&S->L, gi, loc);
                if (v && gi.kind == SV_VALUE) {
                    Type gt = f->vals.v[v].ty;
                    bool fits = gt.rank <= at.rank;
                    for (int k = 0; fits && k < gt.rank; k++)
                        fits = gt.shape[gt.rank - 1 - k] == at.shape[at.rank - 1 - k] ||
                               gt.shape[gt.rank - 1 - k] == 1;
                    if (!fits) {
                        diag_error(S->d, r->rule->loc,
                                   "vjp rule '%s' returns a gradient of type %s for '%s', which is %s",
                                   r->rule->name, sema_type_str(S, gt), fn->params[i].name, sema_type_str(S, at));
                        continue;
                    }
                }
                v = v ? lower_convert(&S->L, v, at, loc) : 0;
                if (v)
                    ys[ny++] = v;
            }
        }
    }
    ir_emit(f, rb, OP_YIELD, ys, ny, NULL, 0, loc);
    S->L.b = saved;
    if (S->d->nerrors > errs) {
        diag_note(S->d, loc, "in the vjp rule '%s' of '%s' called from here", r->rule->name, fn->name);
        return sval_error();
    }
    vec_push(S->a, f->rules, rb);
    Inst *in = ir_emit(f, S->L.b, OP_CUSTOM_VJP, args, na, &rt, 1, loc);
    in->ival = f->rules.n - 1;
    if (jr)
        return jvp_rule(S, jr, fn, bound, blocs, in->res[0], loc);
    return sval_value(in->res[0]);
}

/* The custom rules of the added modules: `@kad.vjp_of(h)`/`@kad.jvp_of(h)`
 * on a @triton.jit function, `kad.nondiff(h)` at module level. */
static void resolve_rules(Sema *S)
{
    for (int mi = 0; mi < S->nmods; mi++) {
        const Module *m = S->mods[mi];
        for (int k = 0; k < m->funcs.n; k++) {
            const FuncDef *fn = m->funcs.v[k];
            for (int j = 0; j < fn->ndecos; j++) {
                const Decorator *dc = &fn->decos[j];
                if (!dc->arg)
                    continue;
                size_t n = strlen(dc->name);
                bool jvp = n >= 6 && !strcmp(dc->name + n - 6, "jvp_of");
                SVal h = sema_eval_module_const(S, m, dc->arg, -1, "the helper of a custom rule");
                if (h.kind == SV_ERROR)
                    continue;
                if (h.kind != SV_FUNC) {
                    diag_error(S->d, dc->arg->loc, "@%s: %s is not a @triton.jit function", dc->name,
                               sema_describe(S, h));
                    continue;
                }
                int want = jvp ? 2 * h.fn->nparams : h.fn->nparams + 1;
                if (fn->nparams != want) {
                    diag_error(S->d, fn->loc,
                               "%s rule '%s' for '%s' must take %d parameters (the %d of '%s', then %s), it takes %d",
                               jvp ? "jvp" : "vjp", fn->name, h.fn->name, want, h.fn->nparams, h.fn->name,
                               jvp ? "one tangent per parameter" : "the adjoint of its result", fn->nparams);
                    continue;
                }
                vec_push(S->a, S->rules, ((SemaRule){h.fn, fn, m, jvp ? RULE_JVP : RULE_VJP}));
            }
        }
        for (int k = 0; k < m->nondiff.n; k++) {
            const Expr *c = m->nondiff.v[k];
            if (c->call.nargs != 1 || c->call.nkw) {
                diag_error(S->d, c->loc, "kad.nondiff takes one argument, the helper");
                continue;
            }
            SVal h = sema_eval_module_const(S, m, c->call.args[0], -1, "the helper of kad.nondiff");
            if (h.kind == SV_ERROR)
                continue;
            if (h.kind != SV_FUNC) {
                diag_error(S->d, c->call.args[0]->loc, "kad.nondiff: %s is not a @triton.jit function",
                           sema_describe(S, h));
                continue;
            }
            vec_push(S->a, S->rules, ((SemaRule){h.fn, NULL, m, RULE_NONDIFF}));
        }
    }
}

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
    if (report_parse_errors(S->d, fn, loc))
        return sval_error();
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
            bound[i] = sema_eval_module_const(S, m, p->dflt, -1,
                                         arena_printf(S->a, "the default value of '%s'", p->name));
            blocs[i] = p->loc;
        }
        /* a helper's `tl.constexpr` annotation binds nothing: Triton's
         * call_JitFunction makes constants of the arguments that are
         * constants and passes the rest as values, whatever the callee's
         * annotations say (only a kernel's own signature is bound by them) */
    }
    if (S->d->nerrors > errs)
        return sval_error();
    for (int i = 0; i < np; i++)
        if (sval_has_error(bound[i]))
            return sval_error();

    const SemaRule *rule = find_rule(S, fn), *jrule = find_jvp_rule(S, fn);
    if (rule || jrule)
        return call_with_rule(S, rule, jrule, fnv, bound, blocs, loc);
    return inline_jit(S, fnv, bound, loc, errs);
}

/* Runs the body of helper fnv with its parameters bound. */
static SVal inline_jit(Sema *S, SVal fnv, const SVal *bound, Loc loc, int errs)
{
    const FuncDef *fn = fnv.fn;
    const Module *m = fnv.mod;
    int np = fn->nparams;
    Frame nf = {.mod = m, .fn = fn, .global_limit = -1};
    for (int i = 0; i < np; i++) {
        sema_name_value(S, bound[i], fn->params[i].name);
        sema_env_set(S->a, &nf.env, fn->params[i].name, bound[i]);
    }
    Frame *saved = S->fr;
    S->fr = &nf;
    S->depth++;
    sema_exec_list(S, &fn->body, 0, NULL);
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

/* The first non-pure or region instruction of a combine region, or NULL. */
static const Inst *impure_inst(const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        if (in->op != OP_YIELD && (!op_info[in->op].pure || in->nregions || in->op == OP_RAND ||
                                   in->op == OP_RANDN || in->op == OP_RANDINT || in->op == OP_PROGRAM_ID ||
                                   in->op == OP_NUM_PROGRAMS))
            return in;
    }
    return NULL;
}

/* tl.associative_scan(input, axis, combine_fn, reverse=False): the inputs
 * (a tile or a tuple of tiles of one shape) scanned along axis by the
 * @triton.jit combine_fn, inlined once on scalars into the scan's closed
 * combine region (params: the running values, then the next element's).
 * red: tl.reduce(input, axis, combine_fn, keep_dims=False), the same
 * checks and region, axis None (all axes: the inputs flattened, as Triton's
 * semantic.reduction) and keep_dims (expand_dims of the results). */
static SVal assoc_scan(Sema *S, bool red, const SVal *args, const Loc *alocs, int na, const char *const *kn,
                       const SVal *kv, int nk, Loc loc)
{
    static const char *const snames[] = {"input", "axis", "combine_fn", "reverse"};
    static const char *const rnames[] = {"input", "axis", "combine_fn", "keep_dims"};
    const char *const *names = red ? rnames : snames;
    const char *what = red ? "tl.reduce" : "tl.associative_scan";
    SVal a[4] = {sval_none(), sval_none(), sval_none(), sval_none()};
    bool has[4] = {false, false, false, false};
    Loc al[4] = {loc, loc, loc, loc};
    if (na > 4) {
        diag_error(S->d, alocs[4], "%s takes at most 4 arguments, %d were given", what, na);
        return sval_error();
    }
    for (int i = 0; i < na; i++) {
        a[i] = args[i];
        has[i] = true;
        al[i] = alocs[i];
    }
    for (int k = 0; k < nk; k++) {
        int i = 0;
        while (i < 4 && strcmp(names[i], kn[k]))
            i++;
        if (i == 4 || has[i]) {
            diag_error(S->d, loc, i == 4 ? "%s got an unexpected keyword argument '%s'"
                                         : "%s got multiple values for argument '%s'", what, kn[k]);
            return sval_error();
        }
        a[i] = kv[k];
        has[i] = true;
    }
    for (int i = 0; i < 3; i++)
        if (!has[i]) {
            diag_error(S->d, loc, "%s: missing argument '%s'", what, names[i]);
            return sval_error();
        }
    Lower *L = &S->L;
    Func *f = L->f;
    /* inputs */
    int n = a[0].kind == SV_TUPLE ? a[0].n : 1;
    const SVal *xs = a[0].kind == SV_TUPLE ? a[0].elts : &a[0];
    if (n < 1 || n > 16) {
        diag_error(S->d, al[0], "%s: 'input' must be a tile or a tuple of 1 to 16 tiles", what);
        return sval_error();
    }
    ValId *x = arena_alloc(S->a, sizeof *x * (size_t)n);
    for (int i = 0; i < n; i++) {
        if (xs[i].kind != SV_VALUE || ir_type(f, xs[i].v).rank == 0 || ir_type(f, xs[i].v).dt == DT_PTR) {
            diag_error(S->d, al[0], "%s: 'input' must be a tile or a tuple of tiles of numbers, got %s", what,
                       sema_describe(S, xs[i]));
            return sval_error();
        }
        x[i] = xs[i].v;
        if (!type_same_shape(ir_type(f, x[i]), ir_type(f, x[0]))) {
            diag_error(S->d, al[0], "%s: the input tiles must have one shape, got %s and %s", what,
                       sema_type_str(S, ir_type(f, x[0])), sema_type_str(S, ir_type(f, x[i])));
            return sval_error();
        }
    }
    Type t0 = ir_type(f, x[0]);
    int rank0 = t0.rank;
    bool all = red && sval_is_none(a[1]);
    if (!all && !sval_is_int(a[1])) {
        diag_error(S->d, al[1], "%s: 'axis' must be a constexpr int%s, got %s", what, red ? " or None" : "",
                   sema_describe(S, a[1]));
        return sval_error();
    }
    int64_t axis = all ? 0 : a[1].c.i;
    if (axis < -(int64_t)t0.rank || axis >= t0.rank) {
        diag_error(S->d, al[1], "%s: axis %lld is out of range for a tile of rank %d", what, (long long)axis,
                   t0.rank);
        return sval_error();
    }
    if (axis < 0)
        axis += t0.rank;
    bool flag = false; /* reverse, or keep_dims */
    if (has[3] && !sval_is_none(a[3])) {
        if (a[3].kind != SV_CONST || (a[3].c.kind != CK_BOOL && a[3].c.kind != CK_INT)) {
            diag_error(S->d, al[3], "%s: '%s' must be a constexpr bool, got %s", what, names[3],
                       sema_describe(S, a[3]));
            return sval_error();
        }
        flag = const_truthy(a[3].c);
    }
    if (a[2].kind != SV_FUNC) {
        diag_error(S->d, al[2], "%s: 'combine_fn' must be a @triton.jit function, got %s", what,
                   sema_describe(S, a[2]));
        return sval_error();
    }
    if (all && rank0 > 1) { /* all axes: the inputs flattened */
        int32_t numel = (int32_t)type_numel(t0);
        for (int i = 0; i < n; i++)
            x[i] = ops_emit1(L, OP_RESHAPE, type_with_shape(ir_type(f, x[i]), 1, &numel), x[i], loc);
        t0 = ir_type(f, x[0]);
    }
    /* the combine region, built by inlining combine_fn on its scalar params */
    Block *rb = ir_block_new(f);
    SVal *pv = arena_alloc(S->a, sizeof *pv * (size_t)(2 * n));
    Loc *pl = arena_alloc(S->a, sizeof *pl * (size_t)(2 * n + 1));
    const FuncDef *fn = a[2].fn;
    for (int i = 0; i < 2 * n; i++) {
        Type st = type_with_shape(ir_type(f, x[i % n]), 0, NULL);
        const char *pn = i < fn->nparams ? fn->params[i].name : NULL;
        pv[i] = sval_value(ir_block_param_add(f, rb, st, pn, i < fn->nparams ? fn->params[i].loc : loc));
        pl[i] = loc;
    }
    pl[2 * n] = loc;
    int errs = S->d->nerrors;
    Block *outer = L->b;
    L->b = rb;
    SVal r = call_jit(S, a[2], pv, pl, 2 * n, NULL, NULL, 0, loc);
    ValId *ys = arena_alloc(S->a, sizeof *ys * (size_t)n);
    if (S->d->nerrors == errs && !sval_has_error(r)) {
        int nr = r.kind == SV_TUPLE ? r.n : 1;
        const SVal *rs = r.kind == SV_TUPLE ? r.elts : &r;
        if (nr != n) {
            diag_error(S->d, loc, "%s: the combine_fn '%s' returns %d value%s for %d input%s", what, fn->name, nr, nr == 1 ? "" : "s", n, n == 1 ? "" : "s");
        } else {
            for (int i = 0; i < n && S->d->nerrors == errs; i++) {
                ValId v = lower_value(L, rs[i], loc);
                if (v && ir_type(f, v).rank != 0)
                    diag_error(S->d, loc, "%s: the combine_fn '%s' must return scalars, value %d is %s", what,
                               fn->name, i + 1, sema_type_str(S, ir_type(f, v)));
                else if (v)
                    ys[i] = lower_convert(L, v, type_with_shape(ir_type(f, x[i]), 0, NULL), loc);
            }
        }
    }
    if (S->d->nerrors == errs) {
        const Inst *bad = impure_inst(rb);
        if (bad)
            diag_error(S->d, bad->loc, "%s: the combine_fn '%s' may only compute on its "
                       "arguments ('%s' is not allowed there: no memory, control flow or random numbers)", what,
                       fn->name, op_info[bad->op].name);
    }
    if (S->d->nerrors == errs)
        ir_emit(f, rb, OP_YIELD, ys, n, NULL, 0, loc);
    L->b = outer;
    if (S->d->nerrors > errs)
        return sval_error();
    Type *rt = arena_alloc(S->a, sizeof *rt * (size_t)n);
    int32_t rsh[KAD_MAX_RANK];
    for (int k = 0, j = 0; k < t0.rank; k++)
        if (k != axis)
            rsh[j++] = t0.shape[k];
    for (int i = 0; i < n; i++)
        rt[i] = red ? type_with_shape(ir_type(f, x[i]), t0.rank - 1, rsh) : ir_type(f, x[i]);
    Inst *in = ir_emit(f, outer, red ? OP_REDUCE : OP_SCAN, x, n, rt, n, loc);
    in->ival = axis;
    in->flags = !red && flag ? IF_REVERSE : 0;
    in->regions = arena_alloc(S->a, sizeof *in->regions);
    in->regions[0] = rb;
    in->nregions = 1;
    SVal *out = arena_alloc(S->a, sizeof *out * (size_t)n);
    for (int i = 0; i < n; i++) {
        ValId v = in->res[i];
        if (red && flag && all) { /* keep_dims over all axes: ones of the input's rank */
            int32_t ones[KAD_MAX_RANK] = {1, 1, 1, 1};
            v = ops_emit1(L, OP_RESHAPE, type_with_shape(rt[i], rank0, ones), v, loc);
        } else if (red && flag) {
            int32_t sh[KAD_MAX_RANK];
            memcpy(sh, t0.shape, sizeof sh);
            sh[axis] = 1;
            v = ops_emit_attr(L, OP_EXPAND_DIMS, type_with_shape(rt[i], t0.rank, sh), v, axis, 0, loc);
        }
        out[i] = sval_value(v);
    }
    if (n == 1 && a[0].kind != SV_TUPLE)
        return out[0];
    return sval_tuple(L, out, n);
}

static SVal eval_call(Sema *S, const Expr *e)
{
    const Expr *fe = e->call.func;
    int rk = sema_range_kind(sema_qual_of(S, S->fr->mod, &S->fr->env, fe));
    if (rk) {
        diag_error(S->d, e->loc, "%s() can only be used as the iterable of a for loop", sema_range_name(rk));
        return sval_error();
    }
    SVal fn = sema_eval_expr(S, fe);
    int na = e->call.nargs, nk = e->call.nkw;
    SVal *args = arena_alloc(S->a, sizeof *args * (size_t)(na + 1));
    Loc *alocs = arena_alloc(S->a, sizeof *alocs * (size_t)(na + 1));
    const char **kn = arena_alloc(S->a, sizeof *kn * (size_t)(nk + 1));
    SVal *kv = arena_alloc(S->a, sizeof *kv * (size_t)(nk + 1));
    bool bad = fn.kind == SV_ERROR;
    for (int i = 0; i < na; i++) {
        args[i] = sema_eval_expr(S, e->call.args[i]);
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
        kv[k] = sema_eval_expr(S, e->call.kw[k].value);
        bad |= sval_has_error(kv[k]);
    }
    if (bad)
        return sval_error();
    switch (fn.kind) {
    case SV_FUNC: return call_jit(S, fn, args, alocs, na, e->call.kw, kv, nk, e->loc);
    case SV_BUILTIN:
        if (!strcmp(fn.qual, "triton.language.associative_scan") || !strcmp(fn.qual, "triton.language.reduce"))
            return assoc_scan(S, !strcmp(fn.qual, "triton.language.reduce"), args, alocs, na, kn, kv, nk, e->loc);
        if ((rk = sema_range_kind(fn.qual))) {
            diag_error(S->d, e->loc, "%s() can only be used as the iterable of a for loop", sema_range_name(rk));
            return sval_error();
        }
        /* fallthrough */
    case SV_METHOD:
        /* x.reduce(axis, combine_fn, ...) and x.associative_scan(...): the functions with x first */
        if (!strcmp(fn.qual, "reduce") || !strcmp(fn.qual, "associative_scan")) {
            SVal *sa = arena_alloc(S->a, sizeof *sa * (size_t)(na + 2));
            Loc *sl = arena_alloc(S->a, sizeof *sl * (size_t)(na + 2));
            sa[0] = fn.elts[0], sl[0] = fe->loc;
            memcpy(sa + 1, args, sizeof *sa * (size_t)na);
            memcpy(sl + 1, alocs, sizeof *sl * (size_t)(na + 1));
            return assoc_scan(S, !strcmp(fn.qual, "reduce"), sa, sl, na + 1, kn, kv, nk, e->loc);
        }
        return lower_call(&S->L, fn, args, na, kn, kv, nk, e->loc);
    default:
        diag_error(S->d, fe->loc, "%s is not callable", sema_describe(S, fn));
        return sval_error();
    }
}

static SVal eval_subscript(Sema *S, const Expr *e)
{
    SVal x = sema_eval_expr(S, e->sub.value);
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
            idx[i] = sema_eval_expr(S, ie);
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
    SVal left = sema_eval_expr(S, e->cmp.first), result = sval_error();
    for (int i = 0; i < e->cmp.n; i++) {
        SVal right = sema_eval_expr(S, e->cmp.rest[i]);
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
    SVal r = sema_eval_expr(S, e->boolop.xs[0]);
    for (int i = 1; i < e->boolop.n; i++) {
        if (r.kind == SV_ERROR)
            return r;
        if (r.kind != SV_VALUE) {
            bool t = sval_truthy(r);
            if (e->boolop.op == BL_AND ? !t : t)
                return r;
            r = sema_eval_expr(S, e->boolop.xs[i]);
        } else {
            SVal y = sema_eval_expr(S, e->boolop.xs[i]);
            r = lower_boolop(&S->L, e->boolop.op, r, y, e->loc);
        }
    }
    return r;
}

/* f"...": folds to a str constant, as Triton does; every field must be a
 * compile-time value (Triton formats only constexprs). */
static SVal eval_fstring(Sema *S, const Expr *e)
{
    Buf b = {.a = S->a};
    bool bad = false;
    for (int i = 0; i < e->seq.n; i++) {
        const Expr *x = e->seq.xs[i];
        if (x->kind == EX_STR) {
            buf_puts(&b, x->str);
            continue;
        }
        SVal v = sema_eval_expr(S, x->fmt.value);
        if (v.kind == SV_ERROR) {
            bad = true;
            continue;
        }
        if (v.kind == SV_NONE)
            v = (SVal){.kind = SV_CONST, .c = {.kind = CK_NONE}};
        if (v.kind != SV_CONST) {
            diag_error(S->d, x->fmt.value->loc,
                       "an f-string can only format compile-time values (constexprs, constants, dtypes), "
                       "as in Triton; this is %s",
                       sema_describe(S, v));
            bad = true;
            continue;
        }
        const char *err;
        const char *s = const_format(S->a, v.c, x->fmt.conv, x->fmt.spec, &err);
        if (!s) {
            diag_error(S->d, x->fmt.value->loc, "f-string: cannot format %s with '%s': %s", sema_describe(S, v),
                       x->fmt.spec, err);
            bad = true;
            continue;
        }
        buf_puts(&b, s);
    }
    if (bad)
        return sval_error();
    return (SVal){.kind = SV_CONST, .c = {.kind = CK_STR, .s = buf_str(&b)}};
}

SVal sema_eval_expr(Sema *S, const Expr *e)
{
    Lower *L = &S->L;
    switch (e->kind) {
    case EX_NAME: return sema_lookup(S, e->name, e->loc);
    case EX_INT: return (SVal){.kind = SV_CONST, .c = {.kind = CK_INT, .i = e->ival}};
    case EX_FLOAT: return (SVal){.kind = SV_CONST, .c = {.kind = CK_FLOAT, .f = e->fval}};
    case EX_STR: return (SVal){.kind = SV_CONST, .c = {.kind = CK_STR, .s = e->str}};
    case EX_BOOL: return (SVal){.kind = SV_CONST, .c = {.kind = CK_BOOL, .i = e->bval}};
    case EX_NONE: return sval_none();
    case EX_ATTR: {
        SVal x = sema_eval_expr(S, e->attr.value);
        if (x.kind == SV_ERROR)
            return x;
        if (x.kind == SV_MODULE && x.mod)
            return module_attr(S, x.mod, e->attr.name, e->loc);
        return lower_attr(L, x, e->attr.name, e->loc);
    }
    case EX_CALL: return eval_call(S, e);
    case EX_SUBSCRIPT: return eval_subscript(S, e);
    case EX_SLICE:
        diag_error(S->d, e->loc, "a slice is only allowed inside a subscript");
        return sval_error();
    case EX_BINOP: {
        SVal x = sema_eval_expr(S, e->bin.l);
        SVal y = sema_eval_expr(S, e->bin.r);
        if (x.kind == SV_ERROR || y.kind == SV_ERROR)
            return sval_error();
        return lower_binop(L, e->bin.op, x, y, e->loc);
    }
    case EX_UNOP: {
        SVal x = sema_eval_expr(S, e->un.x);
        if (x.kind == SV_ERROR)
            return x;
        return lower_unop(L, e->un.op, x, e->loc);
    }
    case EX_COMPARE: return eval_compare(S, e);
    case EX_BOOLOP: return eval_boolop(S, e);
    case EX_IFEXP: return sema_eval_ifexp(S, e);
    case EX_FSTRING: return eval_fstring(S, e);
    case EX_FORMAT: die("an f-string field outside an f-string");
    case EX_TUPLE:
    case EX_LIST: {
        SVal t = {.kind = SV_TUPLE, .n = e->seq.n};
        t.elts = arena_alloc(S->a, sizeof *t.elts * (size_t)(e->seq.n ? e->seq.n : 1));
        bool bad = false;
        for (int i = 0; i < e->seq.n; i++) {
            t.elts[i] = sema_eval_expr(S, e->seq.xs[i]);
            bad |= t.elts[i].kind == SV_ERROR;
        }
        return bad ? sval_error() : t;
    }
    }
    die("unknown expression kind %d", (int)e->kind);
}

/* ------------------------------------------------------------------ */
/* The kernel                                                          */
/* ------------------------------------------------------------------ */

Func *sema_kernel(Arena *a, Diags *d, Module **mods, int nmods, const char *name, const Signature *sig,
                  const SemaOptions *opt)
{
    int errs = d->nerrors;
    /* the last module added wins: the CLI adds --include files first */
    const FuncDef *fn = NULL;
    const Module *m = NULL;
    const char *kdot = strrchr(name, '.');
    if (kdot) {
        /* "pkg.mod.kernel": the kernel of that module */
        const char *modname = arena_strndup(a, name, (size_t)(kdot - name));
        name = kdot + 1;
        for (int i = nmods - 1; i >= 0 && !m; i--)
            if (mods[i]->name && !strcmp(mods[i]->name, modname))
                m = mods[i];
        if (!m) {
            diag_error(d, (Loc){nmods ? mods[nmods - 1]->file : NULL, 0, 0},
                       "kernel '%s': no module '%s' was added", name, modname);
            return NULL;
        }
        fn = find_jit(m, name);
        if (!fn) {
            Buf b = {.a = a};
            for (int k = 0; k < m->funcs.n; k++)
                buf_printf(&b, "%s%s", b.len ? ", " : "", m->funcs.v[k]->name);
            diag_error(d, (Loc){m->file, 0, 0}, "kernel '%s' not found in module '%s'%s%s", name, modname,
                       b.len ? "; its @triton.jit functions are: " : ": it has no @triton.jit functions",
                       buf_str(&b));
            return NULL;
        }
    }
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

    if (report_parse_errors(d, fn, (Loc){0}))
        return NULL;
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

    resolve_rules(&S);
    sema_bind_kernel_params(&S, m, fn, sig);
    if (d->nerrors > errs)
        return NULL;
    sema_exec_list(&S, &fn->body, 0, NULL);
    return d->nerrors > errs ? NULL : f;
}
