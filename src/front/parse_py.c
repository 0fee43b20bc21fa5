/* parse_py.c -- tokens -> Module (the AST of the Triton subset of Python).
 *
 * The job: read a real Triton module and keep what kernels need:
 *   - imports (with their aliases resolved to qualified names),
 *   - module-level constants (`NAME = expr`, `NAME: ann = expr`),
 *   - every @triton.jit function, fully parsed.
 * Everything else at module level is host code (torch wrappers, autotune
 * configs, classes, `if __name__ == "__main__":` ...): it is skipped by its
 * token structure (a logical line, plus the indented block after it), so
 * host code may use any Python syntax.
 *
 * Inside @triton.jit functions the grammar is the subset Triton accepts
 * (statements: expression, =, op=, annotated =, if/elif/else, for, while,
 * return, pass, break, continue, assert, nested def; expressions: Python's
 * operators, calls with keyword arguments, attributes, subscripts with slices
 * and None, tuples, lists, conditional expressions, f-strings).  Python
 * syntax outside that subset (lambda, comprehensions, dict/set displays,
 * *args, with/try/raise/del/global, ...) is a located error naming the
 * construct.  parse_module_lazy keeps the errors of each @triton.jit
 * function on its FuncDef instead (reported by sema if a kernel reaches it).
 * Every error in kernel code is reported; after an error the parser skips
 * to the next statement and goes on, so several errors are reported at once
 * (one per statement, to avoid cascades).
 *
 * Module-level details (Python semantics where kad can follow them):
 *   - a later unconditional import or constant with the same name replaces
 *     the earlier one (the last binding wins, as at kernel launch time);
 *   - a constant rebound in a way kad cannot evaluate (op=, an expression
 *     outside the subset, tuple unpacking of a non-tuple) is dropped, so that
 *     a kernel using it gets "not defined" rather than a stale value;
 *   - inside module-level `if`/`try` blocks (version switches such as
 *     `try: from triton.language.extra.cuda import libdevice except
 *     ImportError: from triton.language.extra import libdevice`), only the
 *     imports are collected, and the first binding of an alias wins;
 *   - a function is a kernel when one of its decorators resolves, through
 *     the imports seen so far, to triton.jit (`@triton.jit`, `@jit` after
 *     `from triton import jit`, `@triton.jit(...)`, stacked under
 *     `@triton.autotune(...)`/`@triton.heuristics(...)`).
 *
 * Expression locations: the first token of the expression, except binary
 * operators, comparisons, `and`/`or` and `x if c else y` (their operator or
 * keyword), attributes (the attribute name), calls (the callee's location,
 * so `x.to(...)` points at `to`) and subscripts (the `[`).
 *
 * Limits (CPython has similar ones): parse recursion 1000, expression
 * trees 1000 levels deep; deeper input is a located error, never a stack
 * overflow, so later stages may recurse over the AST freely.
 *
 * The files: this one holds the parser's state and errors, the AST
 * construction, function definitions and the module level; the
 * expressions are parse_expr.c's, the statements parse_stmt.c's (all three
 * share the Parser through front.h).
 */
#include <string.h>

#include "base/base.h"
#include "front/triton.h"
#include "front/front.h"

enum { MAX_RECURSION = 1000, MAX_TREE_DEPTH = 1000 };

/* Every Expr the parser makes carries its tree depth (for the limit). */
typedef struct PExpr {
    Expr e; /* first: an Expr * is a PExpr * */
    int depth;
} PExpr;

/* ---- tokens (the primitives are front.h's) ---- */

static const char *const py_keywords[] = {
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
    "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
    "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
    "try", "while", "with", "yield",
};

bool tok_is_keyword(const Token *t)
{
    if (t->kind != TK_NAME || t->len < 2 || t->len > 8)
        return false;
    for (size_t k = 0; k < sizeof py_keywords / sizeof py_keywords[0]; k++)
        if (tok_is_word(t, py_keywords[k]))
            return true;
    return false;
}

char *tok_str(Parser *P, const Token *t) { return arena_strndup(P->a, t->text, (size_t)t->len); }

/* How a token reads in a message: 'foo', '+', end of line. */
const char *tok_desc(Parser *P, const Token *t)
{
    switch (t->kind) {
    case TK_NAME:
    case TK_INT:
    case TK_FLOAT:
    case TK_STRING:
        if (t->len > 24)
            return arena_printf(P->a, "'%.20s...'", t->text);
        return arena_printf(P->a, "'%.*s'", t->len, t->text);
    case TK_NEWLINE: return "end of line";
    case TK_INDENT: return "an indented block";
    case TK_DEDENT: return "the end of the block";
    case TK_EOF: return "end of file";
    default: return arena_printf(P->a, "'%s'", tok_kind_name(t->kind));
    }
}

/* ---- errors ---- */

void parse_perr(Parser *P, Loc loc, const char *fmt, ...)
{
    if (P->failed)
        return; /* one error per statement: the rest would be noise */
    P->failed = true;
    if (P->quiet) {
        P->qfail = true;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    diag_verror(P->d, loc, fmt, ap);
    va_end(ap);
}

/* "expected ')' to close the call, found 'x'" */
bool parse_expect(Parser *P, TokKind k, const char *why)
{
    if (accept(P, k))
        return true;
    parse_perr(P, peek(P)->loc, "expected '%s'%s%s, found %s", tok_kind_name(k), why ? " " : "", why ? why : "",
               tok_desc(P, peek(P)));
    return false;
}

/* Guards the recursion of the parse functions; every successful parse_enter()
 * is paired with a parse_leave(). */
bool parse_enter(Parser *P)
{
    if (P->rec >= MAX_RECURSION) {
        parse_perr(P, peek(P)->loc, "too deeply nested (more than %d levels)", MAX_RECURSION);
        return false;
    }
    P->rec++;
    return true;
}
void parse_leave(Parser *P) { P->rec--; }

/* ---- AST construction ---- */

Expr *parse_new_expr(Parser *P, ExprKind k, Loc loc)
{
    PExpr *pe = arena_alloc(P->a, sizeof *pe);
    pe->e.kind = k;
    pe->e.loc = loc;
    pe->depth = 1;
    return &pe->e;
}

static int edepth(const Expr *e) { return e ? ((const PExpr *)e)->depth : 0; }

/* Records the depth of a finished composite node (1 + its deepest child)
 * and enforces the limit. */
Expr *parse_finish(Parser *P, Expr *e)
{
    int d = 0;
#define KID(x) do { int d_ = edepth(x); if (d_ > d) d = d_; } while (0)
    switch (e->kind) {
    case EX_ATTR: KID(e->attr.value); break;
    case EX_CALL:
        KID(e->call.func);
        for (int k = 0; k < e->call.nargs; k++) KID(e->call.args[k]);
        for (int k = 0; k < e->call.nkw; k++) KID(e->call.kw[k].value);
        break;
    case EX_SUBSCRIPT:
        KID(e->sub.value);
        for (int k = 0; k < e->sub.nindex; k++) KID(e->sub.index[k]);
        break;
    case EX_SLICE: KID(e->slice.lo); KID(e->slice.hi); KID(e->slice.step); break;
    case EX_BINOP: KID(e->bin.l); KID(e->bin.r); break;
    case EX_UNOP: KID(e->un.x); break;
    case EX_COMPARE:
        KID(e->cmp.first);
        for (int k = 0; k < e->cmp.n; k++) KID(e->cmp.rest[k]);
        break;
    case EX_BOOLOP: for (int k = 0; k < e->boolop.n; k++) KID(e->boolop.xs[k]); break;
    case EX_IFEXP: KID(e->ifexp.cond); KID(e->ifexp.then); KID(e->ifexp.els); break;
    case EX_TUPLE:
    case EX_LIST:
    case EX_FSTRING: for (int k = 0; k < e->seq.n; k++) KID(e->seq.xs[k]); break;
    case EX_FORMAT: KID(e->fmt.value); break;
    default: break;
    }
#undef KID
    ((PExpr *)e)->depth = d + 1;
    if (d + 1 > MAX_TREE_DEPTH) {
        parse_perr(P, e->loc, "expression too deeply nested (more than %d levels)", MAX_TREE_DEPTH);
        return P->bad;
    }
    return e;
}

/* ---- function definitions ---- */

/* parameters: '(' [param (',' param)* [',']] ')'
 * param: NAME [':' test] ['=' test]     (no *args, **kwargs, '/' or '*') */
static bool parse_params(Parser *P, FuncDef *fn)
{
    if (!parse_expect(P, TK_LPAREN, "after the function name"))
        return false;
    Vec(Param) ps = {0};
    bool seen_default = false;
    while (!at(P, TK_RPAREN)) {
        Token *t = peek(P);
        if (t->kind == TK_STAR || t->kind == TK_DSTAR || t->kind == TK_SLASH) {
            parse_perr(P, t->loc,
                       "'%s' in a kernel's parameter list is not supported by kad (use plain parameters)",
                       tok_kind_name(t->kind));
            return false;
        }
        if (t->kind != TK_NAME || tok_is_keyword(t)) {
            parse_perr(P, t->loc, "expected a parameter name, found %s", tok_desc(P, t));
            return false;
        }
        advance(P);
        Param p = {tok_str(P, t), NULL, NULL, t->loc};
        for (int k = 0; k < ps.n; k++)
            if (!strcmp(ps.v[k].name, p.name)) {
                parse_perr(P, t->loc, "duplicate parameter '%s' in function definition", p.name);
                return false;
            }
        if (accept(P, TK_COLON))
            p.ann = parse_test(P);
        if (!P->failed && accept(P, TK_ASSIGN)) {
            p.dflt = parse_test(P);
            seen_default = true;
        } else if (!P->failed && seen_default) {
            parse_perr(P, t->loc, "parameter '%s' without a default follows a parameter with a default", p.name);
        }
        if (P->failed)
            return false;
        vec_push(P->a, ps, p);
        if (!accept(P, TK_COMMA))
            break;
    }
    if (!parse_expect(P, TK_RPAREN, "to close the parameter list"))
        return false;
    fn->params = ps.v;
    fn->nparams = ps.n;
    return true;
}

/* funcdef: 'def' NAME parameters ['->' test] ':' block
 * (called at 'def'; decorators already read) */
static FuncDef *parse_funcdef(Parser *P, Decorator *decos, int ndecos)
{
    Token *def = advance(P);
    Token *name = peek(P);
    if (name->kind != TK_NAME || tok_is_keyword(name)) {
        parse_perr(P, name->loc, "expected a function name after 'def', found %s", tok_desc(P, name));
        return NULL;
    }
    advance(P);
    FuncDef *fn = arena_alloc(P->a, sizeof *fn);
    fn->name = tok_str(P, name);
    fn->loc = def->loc;
    fn->decos = decos;
    fn->ndecos = ndecos;
    fn->is_jit = true;
    if (!parse_params(P, fn))
        return NULL;
    if (accept(P, TK_ARROW)) {
        (void)parse_test(P); /* a return annotation: ignored, like Triton does */
        if (P->failed)
            return NULL;
    }
    fn->body = parse_block(P, "def", def->loc.line);
    return P->failed ? NULL : fn;
}

/* ---- module level ---- */

/* dotted_name: NAME ('.' NAME)*  -> "a.b.c", or NULL (nothing consumed) */
static char *parse_dotted(Parser *P)
{
    if (!at(P, TK_NAME) || tok_is_keyword(peek(P)))
        return NULL;
    Buf b = {.a = P->a};
    for (;;) {
        Token *t = advance(P);
        buf_printf(&b, "%.*s", t->len, t->text);
        if (!(at(P, TK_DOT) && peek2(P)->kind == TK_NAME))
            break;
        advance(P);
        buf_putc(&b, '.');
    }
    return (char *)buf_str(&b);
}

/* The qualified name an alias-led dotted name refers to, through the
 * module's imports ("tl.float32" -> "triton.language.float32"). */
static const char *resolve_dotted(Parser *P, const char *dotted)
{
    const char *dot = strchr(dotted, '.');
    size_t n = dot ? (size_t)(dot - dotted) : strlen(dotted);
    for (int k = P->m->imports.n - 1; k >= 0; k--) {
        const Import *im = &P->m->imports.v[k];
        if (strlen(im->alias) == n && !memcmp(im->alias, dotted, n))
            return dot ? arena_printf(P->a, "%s%s", im->qual, dot) : im->qual;
    }
    return dotted;
}

/* Adds a binding.  An alternative (a second branch of a module-level if or
 * try) only adds names not yet bound; otherwise the last binding wins. */
static void add_import(Parser *P, Import im, bool alt)
{
    for (int k = 0; k < P->m->imports.n; k++)
        if (!strcmp(P->m->imports.v[k].alias, im.alias)) {
            if (!alt)
                P->m->imports.v[k] = im;
            return;
        }
    vec_push(P->a, P->m->imports, im);
}

static void drop_global(Parser *P, const char *name)
{
    Module *m = P->m;
    for (int k = 0; k < m->globals.n; k++)
        if (!strcmp(m->globals.v[k].name, name)) {
            memmove(&m->globals.v[k], &m->globals.v[k + 1],
                    sizeof *m->globals.v * (size_t)(m->globals.n - k - 1));
            m->globals.n--;
            return;
        }
}

static void add_global(Parser *P, Global g)
{
    drop_global(P, g.name);
    vec_push(P->a, P->m->globals, g);
}

static void add_func(Parser *P, FuncDef *fn)
{
    for (int k = 0; k < P->m->funcs.n; k++)
        if (!strcmp(P->m->funcs.v[k]->name, fn->name)) {
            P->m->funcs.v[k] = fn; /* redefinition: the last one wins */
            return;
        }
    vec_push(P->a, P->m->funcs, fn);
}

/* import_stmt: 'import' dotted_name ['as' NAME] (',' dotted_name ['as' NAME])*
 *            | 'from' ('.'* dotted_name | '.'+) 'import'
 *                     ('*' | '(' import_names [','] ')' | import_names)
 * import_names: NAME ['as' NAME] (',' NAME ['as' NAME])* */
static void parse_import(Parser *P, bool alt)
{
    Token *t = advance(P);
    if (tok_is_word(t, "import")) {
        do {
            Token *nt = peek(P);
            char *dotted = parse_dotted(P);
            if (!dotted) {
                parse_perr(P, nt->loc, "expected a module name after 'import', found %s", tok_desc(P, nt));
                return;
            }
            Import im = {NULL, dotted, nt->loc};
            if (accept_kw(P, "as")) {
                if (!at(P, TK_NAME)) {
                    parse_perr(P, peek(P)->loc, "expected a name after 'as'");
                    return;
                }
                im.alias = tok_str(P, advance(P));
            } else {
                /* `import a.b` binds `a` */
                const char *dot = strchr(dotted, '.');
                im.alias = dot ? arena_strndup(P->a, dotted, (size_t)(dot - dotted)) : dotted;
                im.qual = im.alias;
            }
            add_import(P, im, alt);
        } while (accept(P, TK_COMMA));
        return;
    }
    /* from */
    Buf mod = {.a = P->a};
    for (;;) {
        if (accept(P, TK_DOT))
            buf_putc(&mod, '.');
        else if (accept(P, TK_ELLIPSIS))
            buf_puts(&mod, "...");
        else
            break;
    }
    char *dotted = parse_dotted(P);
    if (dotted)
        buf_puts(&mod, dotted);
    if (!mod.len) {
        parse_perr(P, peek(P)->loc, "expected a module name after 'from', found %s", tok_desc(P, peek(P)));
        return;
    }
    if (!accept_kw(P, "import")) {
        parse_perr(P, peek(P)->loc, "expected 'import', found %s", tok_desc(P, peek(P)));
        return;
    }
    if (accept(P, TK_STAR))
        return; /* names unknown to kad: uses will say "not defined" */
    const char *m = buf_str(&mod);
    bool relative_only = m[strlen(m) - 1] == '.';
    bool paren = accept(P, TK_LPAREN);
    do {
        if (paren && at(P, TK_RPAREN))
            break; /* trailing comma */
        Token *nt = peek(P);
        if (nt->kind != TK_NAME || tok_is_keyword(nt)) {
            parse_perr(P, nt->loc, "expected a name to import, found %s", tok_desc(P, nt));
            return;
        }
        advance(P);
        Import im = {tok_str(P, nt),
                     arena_printf(P->a, "%s%s%.*s", m, relative_only ? "" : ".", nt->len, nt->text),
                     nt->loc};
        if (accept_kw(P, "as")) {
            if (!at(P, TK_NAME)) {
                parse_perr(P, peek(P)->loc, "expected a name after 'as'");
                return;
            }
            im.alias = tok_str(P, advance(P));
        }
        add_import(P, im, alt);
    } while (accept(P, TK_COMMA));
    if (paren)
        parse_expect(P, TK_RPAREN, "to close the import list");
}

/* Whether a decorator's qualified name is Triton's jit: triton.jit and
 * its definition triton.runtime.jit.jit, also when re-exported through a
 * module kad cannot see (`from .compat import triton` gives
 * ".compat.triton.jit"; Triton's own `from ..runtime.jit import jit`). */
static bool is_jit_name(const char *qual)
{
    static const char *const forms[] = {"triton.jit", "triton.runtime.jit", "runtime.jit.jit"};
    size_t n = strlen(qual);
    for (size_t k = 0; k < sizeof forms / sizeof forms[0]; k++) {
        size_t m = strlen(forms[k]);
        if (n >= m && !strcmp(qual + n - m, forms[k]) && (n == m || qual[n - m - 1] == '.'))
            return true;
    }
    return false;
}

/* A def that is not @triton.jit: host code, or a function made a kernel by
 * a call (`k = triton.jit(f)`).  Parsed quietly; kept in Module.plain when
 * it is in the Triton subset, else skipped. */
static void parse_plain_def(Parser *P, Decorator *decos, int ndecos)
{
    int start = P->i;
    P->quiet = true;
    P->qfail = false;
    FuncDef *fn = parse_funcdef(P, decos, ndecos);
    bool ok = fn && !P->qfail && !P->failed;
    P->quiet = false;
    P->qfail = false;
    P->failed = false;
    if (!ok) {
        P->i = start;
        parse_skip_stmt(P);
        return;
    }
    fn->is_jit = false;
    for (int k = 0; k < P->m->plain.n; k++)
        if (!strcmp(P->m->plain.v[k]->name, fn->name)) {
            P->m->plain.v[k] = fn;
            return;
        }
    vec_push(P->a, P->m->plain, fn);
}

static FuncDef *find_def(FuncDef **v, int n, const Token *name)
{
    for (int k = n - 1; k >= 0; k--)
        if ((int)strlen(v[k]->name) == name->len && !memcmp(v[k]->name, name->text, (size_t)name->len))
            return v[k];
    return NULL;
}

/* The dotted name starting at token j (NAME ('.' NAME)*), its end in *end;
 * NULL when token j is not a name or is preceded by '.'. */
static const char *tok_dotted(Parser *P, int j, int *end)
{
    Token *t = P->t;
    if (t[j].kind != TK_NAME || (j > 0 && t[j - 1].kind == TK_DOT))
        return NULL;
    Buf b = {.a = P->a};
    buf_printf(&b, "%.*s", t[j].len, t[j].text);
    while (t[j + 1].kind == TK_DOT && t[j + 2].kind == TK_NAME) {
        buf_printf(&b, ".%.*s", t[j + 2].len, t[j + 2].text);
        j += 2;
    }
    *end = j + 1;
    return buf_str(&b);
}

/* `X = triton.jit(f, ...)`, `X = triton.heuristics({...})(triton.jit(f))`,
 * `X = triton.autotune(...)(k)`, `X = libentry()(k)`: a kernel made by a
 * call.  Recognized by its tokens (the configs are host code kad need not
 * parse): X becomes another name of the def (and a def made jit by the
 * call becomes a kernel under its own name too).  Wrappers are taken to be
 * transparent (they do not change arguments).  Returns whether the
 * statement was consumed. */
static bool parse_jit_assign(Parser *P)
{
    Token *t = P->t;
    int i = P->i;
    if (t[i].kind != TK_NAME || t[i + 1].kind != TK_ASSIGN)
        return false;
    int end = i + 2;
    while (t[end].kind != TK_NEWLINE && t[end].kind != TK_EOF && t[end].kind != TK_SEMI)
        end++;
    FuncDef *target = NULL;
    /* triton.jit(NAME , ...) anywhere in the value */
    for (int j = i + 2; j < end && !target; j++) {
        int e;
        const char *d = tok_dotted(P, j, &e);
        if (!d || e + 2 >= end || t[e].kind != TK_LPAREN || t[e + 1].kind != TK_NAME ||
            (t[e + 2].kind != TK_COMMA && t[e + 2].kind != TK_RPAREN) || !is_jit_name(resolve_dotted(P, d)))
            continue;
        FuncDef *f = find_def(P->m->funcs.v, P->m->funcs.n, &t[e + 1]);
        if (!f) {
            FuncDef *pl = find_def(P->m->plain.v, P->m->plain.n, &t[e + 1]);
            if (pl) {
                f = arena_alloc(P->a, sizeof *f);
                *f = *pl;
                f->is_jit = true;
                add_func(P, f);
            }
        }
        target = f;
    }
    /* WRAPPER(...)(NAME) or triton.autotune/heuristics(...)(NAME) of a kernel */
    if (!target && end - i >= 6 && t[end - 1].kind == TK_RPAREN && t[end - 2].kind == TK_NAME &&
        t[end - 3].kind == TK_LPAREN && t[end - 4].kind == TK_RPAREN) {
        FuncDef *f = find_def(P->m->funcs.v, P->m->funcs.n, &t[end - 2]);
        int e;
        const char *d = tok_dotted(P, i + 2, &e);
        if (f && d && t[e].kind == TK_LPAREN)
            target = f;
    }
    if (!target)
        return false;
    const char *name = tok_str(P, &t[i]);
    drop_global(P, name);
    if (strcmp(name, target->name)) {
        FuncDef *alias = arena_alloc(P->a, sizeof *alias);
        *alias = *target;
        alias->name = name;
        add_func(P, alias);
    }
    P->i = end;
    parse_skip_stmt(P);
    return true;
}

/* A @triton.jit def under parse_module_lazy: its errors go to a private
 * sink and are kept on the FuncDef, which is added whatever happened (a
 * stub with no parameters and body when even its def line failed). */
static void parse_jit_def_lazy(Parser *P, Decorator *decos, int ndecos)
{
    Token *name = peek2(P);
    Diags *outer = P->d;
    Diags own;
    diag_init(&own, P->a);
    own.max_errors = outer->max_errors;
    P->d = &own;
    FuncDef *fn = parse_funcdef(P, decos, ndecos);
    bool def_failed = !fn;
    if (def_failed)
        parse_resync(P); /* an error in the def line */
    P->d = outer;
    if (!fn) {
        if (name->kind != TK_NAME || tok_is_keyword(name) || !own.nerrors) {
            for (int k = 0; k < own.list.n; k++) /* no name to keep them under */
                vec_push(P->a, outer->list, own.list.v[k]);
            outer->nerrors += own.nerrors;
            return;
        }
        fn = arena_alloc(P->a, sizeof *fn);
        fn->name = tok_str(P, name);
        fn->loc = name->loc;
        fn->decos = decos;
        fn->ndecos = ndecos;
        fn->is_jit = true;
    }
    fn->errs = own.list.v;
    fn->nerrs = own.list.n;
    add_func(P, fn);
}

/* Whether dotted name s is w or ends in ".w". */
static bool last_is(const char *s, const char *w)
{
    size_t n = strlen(s), m = strlen(w);
    return n >= m && !strcmp(s + n - m, w) && (n == m || s[n - m - 1] == '.');
}

/* The dotted name an expression spells (a.b.c), or NULL. */
static const char *expr_dotted(Parser *P, const Expr *e)
{
    if (e->kind == EX_NAME)
        return e->name;
    if (e->kind != EX_ATTR)
        return NULL;
    const char *l = expr_dotted(P, e->attr.value);
    return l ? arena_printf(P->a, "%s.%s", l, e->attr.name) : NULL;
}

/* decorated: ('@' dotted_name ['(' ... ')'] NEWLINE)+ (funcdef | classdef)
 * A def whose decorators include triton.jit is parsed as a kernel; any
 * other decorated definition is host code and skipped. */
static void parse_decorated(Parser *P, bool conditional)
{
    Vec(Decorator) decos = {0};
    bool jit = false;
    while (at(P, TK_AT)) {
        Token *at_tok = advance(P);
        Decorator dc = {NULL, false, at_tok->loc, NULL};
        char *name = parse_dotted(P);
        if (name && (at(P, TK_NEWLINE) || at(P, TK_LPAREN))) {
            dc.name = name;
            dc.called = at(P, TK_LPAREN);
            jit |= is_jit_name(resolve_dotted(P, name));
            if (dc.called && (last_is(name, "vjp_of") || last_is(name, "jvp_of"))) {
                /* a custom rule: keep its one argument, the helper (parsed quietly) */
                int save = P->i;
                P->quiet = true;
                P->qfail = false;
                advance(P);
                Expr *x = parse_test(P);
                bool ok = x && !P->qfail && !P->failed && at(P, TK_RPAREN);
                P->quiet = P->qfail = P->failed = false;
                dc.arg = ok ? x : NULL;
                P->i = save;
            }
        } else {
            dc.name = "<expression>"; /* Python 3.9 allows any expression here */
        }
        parse_skip_line(P); /* the decorator's arguments are host code */
        vec_push(P->a, decos, dc);
    }
    if (at_kw(P, "def") && !jit && !conditional) {
        parse_plain_def(P, decos.v, decos.n);
        return;
    }
    if (!at_kw(P, "def") || !jit || conditional) {
        parse_skip_stmt(P); /* def, class or async def of host code */
        return;
    }
    if (P->lazy) {
        parse_jit_def_lazy(P, decos.v, decos.n);
        return;
    }
    FuncDef *fn = parse_funcdef(P, decos.v, decos.n);
    if (fn)
        add_func(P, fn);
    else
        parse_resync(P); /* an error in the def line */
}

/* Collects the names bound by an assignment target. */
typedef Vec(const char *) NameVec;
static void target_names(Expr *e, NameVec *out, Arena *a)
{
    if (e->kind == EX_NAME)
        vec_push(a, *out, e->name);
    else if (e->kind == EX_TUPLE || e->kind == EX_LIST)
        for (int k = 0; k < e->seq.n; k++)
            target_names(e->seq.xs[k], out, a);
}

/* A module-level statement starting with a name: `NAME = expr`,
 * `NAME: ann = expr`, `A, B = x, y`, chained `A = B = 1`.  Parsed quietly:
 * host code may use any syntax here; what kad cannot read drops the name. */
static void parse_module_assign(Parser *P)
{
    int start = P->i;
    Token *first = peek(P);
    P->quiet = true;
    Stmt *s = parse_small_stmt(P);
    bool ok = !P->failed && (at(P, TK_NEWLINE) || at(P, TK_EOF) || at(P, TK_SEMI));
    P->quiet = false;
    P->failed = false;
    if (!ok) {
        /* unreadable: if it assigns a plain name, forget that name */
        P->i = start;
        if (first->kind == TK_NAME && (peek2(P)->kind == TK_ASSIGN ||
                                       (peek2(P)->kind >= TK_PLUSEQ && peek2(P)->kind <= TK_ATEQ) ||
                                       peek2(P)->kind == TK_COLON))
            drop_global(P, tok_str(P, first));
        parse_skip_stmt(P);
        return;
    }
    if (s->kind == ST_ASSIGN) {
        for (int t = 0; t < s->assign.ntargets; t++) {
            Expr *tg = s->assign.targets[t];
            Expr *v = s->assign.value;
            if (tg->kind == EX_NAME) {
                add_global(P, (Global){tg->name, v, NULL, tg->loc});
            } else if ((tg->kind == EX_TUPLE || tg->kind == EX_LIST) && v->kind == EX_TUPLE &&
                       v->seq.n == tg->seq.n) {
                for (int k = 0; k < tg->seq.n; k++) {
                    Expr *tk = tg->seq.xs[k];
                    if (tk->kind == EX_NAME)
                        add_global(P, (Global){tk->name, v->seq.xs[k], NULL, tk->loc});
                }
            } else {
                NameVec names = {0};
                target_names(tg, &names, P->a);
                for (int k = 0; k < names.n; k++)
                    drop_global(P, names.v[k]);
            }
        }
    } else if (s->kind == ST_ANNASSIGN && s->ann.target->kind == EX_NAME && s->ann.value) {
        add_global(P, (Global){s->ann.target->name, s->ann.value, s->ann.ann, s->ann.target->loc});
    } else if (s->kind == ST_AUGASSIGN && s->aug.target->kind == EX_NAME) {
        drop_global(P, s->aug.target->name);
    } else if (s->kind == ST_EXPR && s->expr->kind == EX_CALL) {
        /* `kad.nondiff(helper)` in a rules file */
        const char *fnn = expr_dotted(P, s->expr->call.func);
        if (fnn && last_is(fnn, "nondiff"))
            vec_push(P->a, P->m->nondiff, s->expr);
    }
    /* `A = 1; B = 2`: the next statement of the line */
    if (accept(P, TK_SEMI) && at(P, TK_NAME) && !tok_is_keyword(peek(P)) && parse_enter(P)) {
        parse_module_assign(P);
        parse_leave(P);
    } else if (!accept(P, TK_NEWLINE)) {
        parse_skip_stmt(P);
    }
}

static void parse_module_stmts(Parser *P, bool conditional);

/* A module-level compound statement (if/elif/else/try/except/finally/with):
 * skip its header, and collect the imports of its block. */
static void parse_module_compound(Parser *P)
{
    parse_skip_line(P);
    if (!at(P, TK_INDENT))
        return;
    advance(P);
    if (!parse_enter(P)) {
        P->failed = false;
        return;
    }
    parse_module_stmts(P, true);
    parse_leave(P);
    accept(P, TK_DEDENT);
}

/* module: stmt* ENDMARKER  (see the file comment for what is kept) */
static void parse_module_stmts(Parser *P, bool conditional)
{
    static const char *const compound[] = {"if", "elif", "else", "try", "except", "finally", "with"};
    while (!at(P, TK_EOF) && !at(P, TK_DEDENT)) {
        Token *t = peek(P);
        P->failed = false;
        if (t->kind == TK_NEWLINE) {
            advance(P);
            continue;
        }
        if (t->kind == TK_INDENT) {
            diag_error(P->d, t->loc, "unexpected indent");
            parse_skip_block(P);
            continue;
        }
        if (t->kind == TK_AT) {
            parse_decorated(P, conditional);
        } else if (tok_is_word(t, "import") || tok_is_word(t, "from")) {
            parse_import(P, conditional);
            if (!P->failed && !at(P, TK_SEMI) && !at(P, TK_EOF))
                parse_expect(P, TK_NEWLINE, "at the end of the import");
            if (P->failed)
                parse_skip_stmt(P);
            else if (accept(P, TK_SEMI))
                parse_skip_stmt(P); /* what follows `;` is host code */
            else
                accept(P, TK_NEWLINE);
        } else if (t->kind == TK_NAME && !tok_is_keyword(t) && !conditional) {
            if (!parse_jit_assign(P))
                parse_module_assign(P);
        } else if (tok_is_word(t, "def") && !conditional) {
            parse_plain_def(P, NULL, 0);
        } else {
            bool is_compound = false;
            for (size_t k = 0; k < sizeof compound / sizeof compound[0]; k++)
                is_compound |= tok_is_word(t, compound[k]);
            if (is_compound)
                parse_module_compound(P);
            else
                parse_skip_stmt(P);
        }
    }
}

static Module *parse_module_mode(Arena *a, Diags *d, const char *file, const char *text, bool lazy)
{
    int before = d->nerrors;
    Parser P = {0};
    P.lazy = lazy;
    P.a = a;
    P.d = d;
    P.file = file;
    P.t = lex(a, d, file, text, &P.ntok);
    P.m = arena_alloc(a, sizeof *P.m);
    P.m->file = file;
    P.bad = parse_new_expr(&P, EX_NONE, (Loc){file, 1, 1});
    /* After lexical errors (an unclosed bracket above all) the token
     * structure is unreliable and parse errors would only be echoes. */
    if (d->nerrors == before) {
        while (!at(&P, TK_EOF)) {
            parse_module_stmts(&P, false);
            accept(&P, TK_DEDENT); /* cannot happen: the lexer balances blocks */
        }
    }
    return P.m;
}

Module *parse_module(Arena *a, Diags *d, const char *file, const char *text)
{
    return parse_module_mode(a, d, file, text, false);
}

Module *parse_module_lazy(Arena *a, Diags *d, const char *file, const char *text)
{
    return parse_module_mode(a, d, file, text, true);
}
