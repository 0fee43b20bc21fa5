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
 */
#include <string.h>

#include "kad_int.h"

enum { MAX_RECURSION = 1000, MAX_TREE_DEPTH = 1000 };

/* Every Expr the parser makes carries its tree depth (for the limit). */
typedef struct PExpr {
    Expr e; /* first: an Expr * is a PExpr * */
    int depth;
} PExpr;

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

static Token *peek(Parser *P) { return &P->t[P->i]; }
static Token *peek2(Parser *P) { return &P->t[P->i + (P->t[P->i].kind != TK_EOF)]; }
static Token *advance(Parser *P)
{
    Token *t = &P->t[P->i];
    if (t->kind != TK_EOF)
        P->i++;
    return t;
}
static bool at(Parser *P, TokKind k) { return peek(P)->kind == k; }
static bool accept(Parser *P, TokKind k)
{
    if (!at(P, k))
        return false;
    advance(P);
    return true;
}

static bool tok_is_word(const Token *t, const char *w)
{
    /* strncmp stops at w's NUL, so a shorter w never reads past its end */
    return t->kind == TK_NAME && t->text[0] == w[0] && !strncmp(t->text, w, (size_t)t->len) &&
           w[t->len] == 0;
}
static bool at_kw(Parser *P, const char *w) { return tok_is_word(peek(P), w); }
static bool accept_kw(Parser *P, const char *w)
{
    if (!at_kw(P, w))
        return false;
    advance(P);
    return true;
}

static const char *const py_keywords[] = {
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
    "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
    "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
    "try", "while", "with", "yield",
};

static bool tok_is_keyword(const Token *t)
{
    if (t->kind != TK_NAME || t->len < 2 || t->len > 8)
        return false;
    for (size_t k = 0; k < sizeof py_keywords / sizeof py_keywords[0]; k++)
        if (tok_is_word(t, py_keywords[k]))
            return true;
    return false;
}

static char *tok_str(Parser *P, const Token *t) { return arena_strndup(P->a, t->text, (size_t)t->len); }

/* How a token reads in a message: 'foo', '+', end of line. */
static const char *tok_desc(Parser *P, const Token *t)
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

static void perr(Parser *P, Loc loc, const char *fmt, ...)
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
static bool expect(Parser *P, TokKind k, const char *why)
{
    if (accept(P, k))
        return true;
    perr(P, peek(P)->loc, "expected '%s'%s%s, found %s", tok_kind_name(k), why ? " " : "", why ? why : "",
         tok_desc(P, peek(P)));
    return false;
}

/* Guards the recursion of the parse functions; every successful enter()
 * is paired with a leave(). */
static bool enter(Parser *P)
{
    if (P->rec >= MAX_RECURSION) {
        perr(P, peek(P)->loc, "too deeply nested (more than %d levels)", MAX_RECURSION);
        return false;
    }
    P->rec++;
    return true;
}
static void leave(Parser *P) { P->rec--; }

/* ---- AST construction ---- */

static Expr *new_expr(Parser *P, ExprKind k, Loc loc)
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
static Expr *finish(Parser *P, Expr *e)
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
        perr(P, e->loc, "expression too deeply nested (more than %d levels)", MAX_TREE_DEPTH);
        return P->bad;
    }
    return e;
}

/* Copies a vector of Expr * into an arena array. */
#define VEC_COPY(P, vec, out, nout)                                                   \
    do {                                                                              \
        (nout) = (vec).n;                                                             \
        (out) = (vec).n ? arena_alloc((P)->a, sizeof *(vec).v * (size_t)(vec).n) : NULL; \
        if ((vec).n)                                                                  \
            memcpy((out), (vec).v, sizeof *(vec).v * (size_t)(vec).n);                \
    } while (0)

/* ---- expressions ---- */

static Expr *parse_test(Parser *P);
static Expr *parse_binary(Parser *P, int level);
static Expr *parse_factor(Parser *P);

/* Refuses the constructs of Python that Triton kernels do not have, when
 * they start at the current token.  Returns true (after an error) if so. */
static bool refuse_unsupported_atom(Parser *P, Token *t)
{
    static const struct { const char *word, *msg; } words[] = {
        {"lambda", "lambda expressions are not supported in Triton kernels"},
        {"yield", "'yield' is not supported in Triton kernels"},
        {"await", "'await' is not supported in Triton kernels"},
    };
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
        if (tok_is_word(t, words[k].word)) {
            perr(P, t->loc, "%s", words[k].msg);
            return true;
        }
    if (tok_is_keyword(t)) {
        perr(P, t->loc, "invalid syntax: unexpected keyword '%.*s'", t->len, t->text);
        return true;
    }
    return false;
}

/* ---- f-strings ---- */

/* The location of q inside token t's source text. */
static Loc loc_in_token(const Token *t, const char *q)
{
    Loc l = t->loc;
    const char *ls = NULL;
    for (const char *c = t->text; c < q; c++)
        if (*c == '\n' || (*c == '\r' && c[1] != '\n')) {
            l.line++;
            ls = c + 1;
        }
    l.col = ls ? (int)(q - ls) + 1 : t->loc.col + (int)(q - t->text);
    return l;
}

/* Skips a string literal nested in a replacement field at p (< end). */
static const char *skip_field_string(const char *p, const char *end)
{
    char q = *p;
    bool triple = p + 2 < end && p[1] == q && p[2] == q;
    p += triple ? 3 : 1;
    while (p < end) {
        if (*p == '\\' && p + 1 < end) {
            p += 2;
            continue;
        }
        if (*p == q && (!triple || (p + 2 < end && p[1] == q && p[2] == q)))
            return p + (triple ? 3 : 1);
        p++;
    }
    return end;
}

/* Parses the expression source [s, e) of a replacement field: lexed on its
 * own (inside parentheses, so it may span lines) with the locations of the
 * token t it sits in. */
static Expr *parse_field_expr(Parser *P, const Token *t, const char *s, const char *e)
{
    while (s < e && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\f'))
        s++;
    Loc at0 = loc_in_token(t, s);
    if (s == e) {
        perr(P, at0, "f-string: valid expression required before '%c'", *e);
        return P->bad;
    }
    const char *text = arena_printf(P->a, "(%.*s)", (int)(e - s), s);
    Diags scratch;
    diag_init(&scratch, P->a);
    int n;
    Token *toks = lex(P->a, &scratch, P->file, text, &n);
    if (scratch.nerrors) {
        perr(P, at0, "f-string: invalid expression: %s", scratch.list.n ? scratch.list.v[0].msg : "?");
        return P->bad;
    }
    for (int k = 0; k < n; k++) {
        if (toks[k].loc.line == 1)
            toks[k].loc.col += at0.col - 2;
        toks[k].loc.line += at0.line - 1;
    }
    Parser Q = *P;
    Q.t = toks;
    Q.ntok = n;
    Q.i = 1; /* after the '(' */
    Expr *x = parse_test(&Q);
    /* the whole text must be one expression: then come ')' and NEWLINE */
    if (!Q.failed && !(at(&Q, TK_RPAREN) && peek2(&Q)->kind == TK_NEWLINE))
        perr(&Q, peek(&Q)->loc, "f-string: expecting '}', found %s", tok_desc(&Q, peek(&Q)));
    P->failed = Q.failed;
    P->qfail = Q.qfail;
    return P->failed ? P->bad : x;
}

/* The parts of one f-string token (appended to parts); false after an
 * error.  Literal parts become EX_STR, fields EX_FORMAT. */
static bool parse_fstring_token(Parser *P, const Token *t, ExprVec *parts)
{
    const char *q = strpbrk(t->text, "'\"");
    size_t plen = (size_t)(q - t->text);
    bool raw = memchr(t->text, 'r', plen) || memchr(t->text, 'R', plen);
    bool triple = q[1] == *q && q[2] == *q && t->len - (int)plen >= 6;
    const char *p = q + (triple ? 3 : 1);
    const char *end = t->text + t->len - (triple ? 3 : 1);
    const char *lit = p;
    Diags scratch;
    diag_init(&scratch, P->a);
    for (;;) {
        bool at_end = p >= end;
        if (!at_end && !raw && *p == '\\' && p + 1 < end) {
            if (p[1] == 'N' && p[2] == '{') {
                perr(P, loc_in_token(t, p), "\\N{...} escapes are not supported by kad; write the character itself");
                return false;
            }
            p += p[1] == '{' || p[1] == '}' ? 1 : 2;
            continue;
        }
        if (!at_end && (*p == '{' || *p == '}') && p + 1 < end && p[1] == *p) {
            p += 2;
            continue;
        }
        if (!at_end && *p == '}') {
            perr(P, loc_in_token(t, p), "f-string: single '}' is not allowed");
            return false;
        }
        if (!at_end && *p != '{') {
            p++;
            continue;
        }
        if (p > lit) { /* the literal text before the field (or the end) */
            Loc ll = loc_in_token(t, lit);
            const char *line_start = lit - (ll.col - 1);
            const char *str = lex_fstring_text(P->a, &scratch, P->file, ll.line, line_start, lit, p, raw);
            if (scratch.nerrors) {
                perr(P, scratch.list.v[0].loc, "%s", scratch.list.v[0].msg);
                return false;
            }
            Expr *e = new_expr(P, EX_STR, ll);
            e->str = str;
            vec_push(P->a, *parts, e);
        }
        if (at_end)
            return true;
        /* a replacement field: {expr [=] [!conv] [:spec]} */
        const char *open = p++;
        const char *es = p;
        int depth = 0;
        bool selfdoc = false;
        const char *ee = NULL;
        while (p < end) {
            char c = *p;
            if (c == '\'' || c == '"') {
                p = skip_field_string(p, end);
                continue;
            }
            if (c == '(' || c == '[' || c == '{')
                depth++;
            else if ((c == ')' || c == ']' || c == '}') && depth > 0)
                depth--;
            else if (depth == 0 && (c == '}' || c == ':' || (c == '!' && p[1] != '=')))
                break;
            else if (depth == 0 && c == '=' && p[1] != '=' && p > es && !strchr("=!<>", p[-1])) {
                selfdoc = true;
                ee = p++;
                while (p < end && (*p == ' ' || *p == '\t'))
                    p++;
                break;
            }
            p++;
        }
        if (!ee)
            ee = p;
        if (p >= end) {
            perr(P, loc_in_token(t, open), "f-string: expecting '}'");
            return false;
        }
        Expr *value = parse_field_expr(P, t, es, ee);
        if (P->failed)
            return false;
        Expr *f = new_expr(P, EX_FORMAT, value->loc);
        f->fmt.value = value;
        f->fmt.spec = "";
        if (selfdoc) {
            Expr *e = new_expr(P, EX_STR, loc_in_token(t, es));
            e->str = arena_strndup(P->a, es, (size_t)(p - es));
            vec_push(P->a, *parts, e);
        }
        if (*p == '!') {
            char c = p + 1 < end ? p[1] : 0;
            if (c != 's' && c != 'r' && c != 'a') {
                perr(P, loc_in_token(t, p), "f-string: invalid conversion character: expected 's', 'r', or 'a'");
                return false;
            }
            f->fmt.conv = c;
            p += 2;
        }
        if (p < end && *p == ':') {
            const char *ss = ++p;
            while (p < end && *p != '}') {
                if (*p == '{') {
                    perr(P, loc_in_token(t, p),
                         "nested replacement fields in an f-string's format spec are not supported by kad");
                    return false;
                }
                p++;
            }
            f->fmt.spec = arena_strndup(P->a, ss, (size_t)(p - ss));
        } else if (selfdoc && !f->fmt.conv) {
            f->fmt.conv = 'r'; /* {x=} is {x!r} without a format spec */
        }
        if (p >= end || *p != '}') {
            perr(P, loc_in_token(t, p < end ? p : open), "f-string: expecting '}'");
            return false;
        }
        f = finish(P, f);
        vec_push(P->a, *parts, f);
        lit = ++p;
    }
}

/* strings: STRING+  (adjacent literals concatenate; bytes are refused; with
 * an f-string among them the result is an EX_FSTRING of the parts) */
static Expr *parse_strings(Parser *P)
{
    Token *first = peek(P);
    Buf b = {.a = P->a};
    ExprVec parts = {0};
    bool fstr = false;
    while (at(P, TK_STRING)) {
        Token *t = advance(P);
        bool is_f = false;
        /* the prefix letters before the quote */
        for (const char *c = t->text; *c != '\'' && *c != '"'; c++) {
            if (*c == 't' || *c == 'T') {
                perr(P, t->loc, "template strings (t\"...\") are not supported in Triton kernels");
                return P->bad;
            }
            is_f |= *c == 'f' || *c == 'F';
            if (*c == 'b' || *c == 'B') {
                perr(P, t->loc, "bytes literals are not supported in Triton kernels");
                return P->bad;
            }
        }
        /* the lexer keeps \N{NAME} undecoded (no Unicode name table) */
        const char *quote = strpbrk(t->text, "'\"");
        size_t plen = (size_t)(quote - t->text);
        bool raw = memchr(t->text, 'r', plen) || memchr(t->text, 'R', plen);
        for (int k = (int)(quote - t->text); !raw && k + 2 < t->len; k++)
            if (t->text[k] == '\\') {
                if (t->text[k + 1] == 'N' && t->text[k + 2] == '{') {
                    perr(P, t->loc, "\\N{...} escapes are not supported by kad; write the character itself");
                    return P->bad;
                }
                k++; /* skip the escaped character */
            }
        if (is_f || fstr) {
            if (!fstr && b.len) { /* the plain literals before the first f-string */
                Expr *e = new_expr(P, EX_STR, first->loc);
                e->str = arena_strdup(P->a, buf_str(&b));
                vec_push(P->a, parts, e);
            }
            fstr = true;
            if (is_f) {
                if (!parse_fstring_token(P, t, &parts))
                    return P->bad;
            } else {
                Expr *e = new_expr(P, EX_STR, t->loc);
                e->str = t->str;
                vec_push(P->a, parts, e);
            }
            continue;
        }
        buf_puts(&b, t->str);
    }
    if (fstr) {
        Expr *e = new_expr(P, EX_FSTRING, first->loc);
        VEC_COPY(P, parts, e->seq.xs, e->seq.n);
        return finish(P, e);
    }
    Expr *e = new_expr(P, EX_STR, first->loc);
    e->str = arena_strdup(P->a, buf_str(&b));
    return e;
}

/* Parses a comma-separated sequence of tests up to `close` (consumed).
 * Refuses comprehensions and starred items.  *trailing is set when the
 * last item was followed by a comma. */
static void parse_seq_items(Parser *P, TokKind close, const char *what, ExprVec *out, bool *trailing)
{
    *trailing = false;
    while (!at(P, close)) {
        if (at(P, TK_STAR) || at(P, TK_DSTAR)) {
            perr(P, peek(P)->loc, "starred expressions are not supported in Triton kernels");
            return;
        }
        Expr *x = parse_test(P);
        if (P->failed)
            return;
        if (at_kw(P, "for") || at_kw(P, "async")) {
            perr(P, peek(P)->loc, "comprehensions are not supported in Triton kernels");
            return;
        }
        vec_push(P->a, *out, x);
        *trailing = false;
        if (!accept(P, TK_COMMA))
            break;
        *trailing = true;
    }
    expect(P, close, what);
}

/* atom: NAME | INT | FLOAT | STRING+ | 'True' | 'False' | 'None'
 *     | '(' [test (',' test)* [',']] ')' | '[' [test (',' test)* [',']] ']' */
static Expr *parse_atom(Parser *P)
{
    Token *t = peek(P);
    switch (t->kind) {
    case TK_NAME: {
        if (tok_is_word(t, "True") || tok_is_word(t, "False")) {
            advance(P);
            Expr *e = new_expr(P, EX_BOOL, t->loc);
            e->bval = t->text[0] == 'T';
            return e;
        }
        if (tok_is_word(t, "None")) {
            advance(P);
            return new_expr(P, EX_NONE, t->loc);
        }
        if (refuse_unsupported_atom(P, t))
            return P->bad;
        advance(P);
        Expr *e = new_expr(P, EX_NAME, t->loc);
        e->name = tok_str(P, t);
        return e;
    }
    case TK_INT: {
        advance(P);
        if (t->big) {
            perr(P, t->loc, "integer literal %.*s is too large: kad's integer constants are signed 64-bit",
                 t->len, t->text);
            return P->bad;
        }
        Expr *e = new_expr(P, EX_INT, t->loc);
        e->ival = t->ival;
        return e;
    }
    case TK_FLOAT: {
        advance(P);
        char last = t->text[t->len - 1];
        if (last == 'j' || last == 'J') {
            perr(P, t->loc, "complex literals are not supported in Triton kernels");
            return P->bad;
        }
        Expr *e = new_expr(P, EX_FLOAT, t->loc);
        e->fval = t->fval;
        return e;
    }
    case TK_STRING:
        return parse_strings(P);
    case TK_LPAREN: {
        advance(P);
        if (accept(P, TK_RPAREN)) {
            Expr *e = new_expr(P, EX_TUPLE, t->loc);
            return e; /* () */
        }
        if (at(P, TK_NAME) && peek2(P)->kind == TK_WALRUS) {
            perr(P, peek2(P)->loc, "assignment expressions (':=') are not supported in Triton kernels");
            return P->bad;
        }
        ExprVec xs = {0};
        bool trailing;
        parse_seq_items(P, TK_RPAREN, "to close the parenthesis", &xs, &trailing);
        if (P->failed)
            return P->bad;
        if (xs.n == 1 && !trailing)
            return xs.v[0]; /* (x) is just x */
        Expr *e = new_expr(P, EX_TUPLE, t->loc);
        VEC_COPY(P, xs, e->seq.xs, e->seq.n);
        return finish(P, e);
    }
    case TK_LBRACKET: {
        advance(P);
        ExprVec xs = {0};
        bool trailing;
        parse_seq_items(P, TK_RBRACKET, "to close the list", &xs, &trailing);
        if (P->failed)
            return P->bad;
        Expr *e = new_expr(P, EX_LIST, t->loc);
        VEC_COPY(P, xs, e->seq.xs, e->seq.n);
        return finish(P, e);
    }
    case TK_LBRACE:
        perr(P, t->loc, "dict and set displays are not supported in Triton kernels");
        return P->bad;
    case TK_ELLIPSIS:
        perr(P, t->loc, "'...' (Ellipsis) is not supported in Triton kernels");
        return P->bad;
    default:
        perr(P, t->loc, "expected an expression, found %s", tok_desc(P, t));
        return P->bad;
    }
}

/* arguments: [arg (',' arg)* [',']]
 * arg: test | NAME '=' test      (positional arguments first) */
static Expr *parse_call(Parser *P, Expr *func)
{
    advance(P); /* ( */
    ExprVec args = {0};
    Vec(Keyword) kws = {0};
    while (!at(P, TK_RPAREN)) {
        Token *t = peek(P);
        if (t->kind == TK_STAR || t->kind == TK_DSTAR) {
            perr(P, t->loc, "'%s' argument unpacking is not supported in Triton kernels",
                 t->kind == TK_STAR ? "*" : "**");
            return P->bad;
        }
        if (t->kind == TK_NAME && peek2(P)->kind == TK_ASSIGN && !tok_is_keyword(t)) {
            advance(P);
            advance(P);
            Keyword kw = {tok_str(P, t), NULL, t->loc};
            for (int k = 0; k < kws.n; k++)
                if (!strcmp(kws.v[k].name, kw.name)) {
                    perr(P, t->loc, "keyword argument repeated: '%s'", kw.name);
                    return P->bad;
                }
            kw.value = parse_test(P);
            if (P->failed)
                return P->bad;
            vec_push(P->a, kws, kw);
        } else {
            if (t->kind == TK_NAME && peek2(P)->kind == TK_WALRUS) {
                perr(P, peek2(P)->loc, "assignment expressions (':=') are not supported in Triton kernels");
                return P->bad;
            }
            Expr *x = parse_test(P);
            if (P->failed)
                return P->bad;
            if (at_kw(P, "for") || at_kw(P, "async")) {
                perr(P, peek(P)->loc, "generator expressions are not supported in Triton kernels");
                return P->bad;
            }
            if (kws.n) {
                perr(P, x->loc, "positional argument follows keyword argument");
                return P->bad;
            }
            vec_push(P->a, args, x);
        }
        if (!accept(P, TK_COMMA))
            break;
    }
    if (!expect(P, TK_RPAREN, "to close the call's arguments"))
        return P->bad;
    Expr *e = new_expr(P, EX_CALL, func->loc);
    e->call.func = func;
    VEC_COPY(P, args, e->call.args, e->call.nargs);
    e->call.kw = kws.n ? kws.v : NULL;
    e->call.nkw = kws.n;
    return finish(P, e);
}

/* subscript: test | [test] ':' [test] [':' [test]] */
static Expr *parse_subscript_item(Parser *P)
{
    Token *t = peek(P);
    Expr *lo = NULL;
    if (t->kind == TK_STAR) {
        perr(P, t->loc, "starred expressions are not supported in Triton kernels");
        return P->bad;
    }
    if (!at(P, TK_COLON)) {
        lo = parse_test(P);
        if (P->failed || !at(P, TK_COLON))
            return lo;
    }
    advance(P); /* : */
    Expr *e = new_expr(P, EX_SLICE, t->loc);
    e->slice.lo = lo;
    if (!at(P, TK_COLON) && !at(P, TK_COMMA) && !at(P, TK_RBRACKET)) {
        e->slice.hi = parse_test(P);
        if (P->failed)
            return P->bad;
    }
    if (accept(P, TK_COLON) && !at(P, TK_COMMA) && !at(P, TK_RBRACKET)) {
        e->slice.step = parse_test(P);
        if (P->failed)
            return P->bad;
    }
    return finish(P, e);
}

/* trailer: '[' subscript (',' subscript)* [','] ']' */
static Expr *parse_index(Parser *P, Expr *value)
{
    Token *open = advance(P); /* [ */
    ExprVec idx = {0};
    if (at(P, TK_RBRACKET)) {
        perr(P, peek(P)->loc, "expected an index inside '[]'");
        return P->bad;
    }
    bool trailing = false;
    while (!at(P, TK_RBRACKET)) {
        Expr *x = parse_subscript_item(P);
        if (P->failed)
            return P->bad;
        vec_push(P->a, idx, x);
        trailing = false;
        if (!accept(P, TK_COMMA))
            break;
        trailing = true;
    }
    if (!expect(P, TK_RBRACKET, "to close the subscript"))
        return P->bad;
    if (idx.n == 1 && !trailing && idx.v[0]->kind == EX_TUPLE && idx.v[0]->seq.n > 0) {
        /* x[(a, b)] is x[a, b] in Python */
        Expr *tup = idx.v[0];
        idx.n = 0;
        for (int k = 0; k < tup->seq.n; k++)
            vec_push(P->a, idx, tup->seq.xs[k]);
    }
    Expr *e = new_expr(P, EX_SUBSCRIPT, open->loc);
    e->sub.value = value;
    VEC_COPY(P, idx, e->sub.index, e->sub.nindex);
    return finish(P, e);
}

/* primary: atom trailer*
 * trailer: '(' arguments ')' | '[' subscripts ']' | '.' NAME */
static Expr *parse_primary(Parser *P)
{
    Expr *e = parse_atom(P);
    while (!P->failed) {
        if (at(P, TK_LPAREN)) {
            e = parse_call(P, e);
        } else if (at(P, TK_LBRACKET)) {
            e = parse_index(P, e);
        } else if (at(P, TK_DOT)) {
            advance(P);
            Token *n = peek(P);
            if (n->kind != TK_NAME) {
                perr(P, n->loc, "expected an attribute name after '.', found %s", tok_desc(P, n));
                return P->bad;
            }
            advance(P);
            Expr *x = new_expr(P, EX_ATTR, n->loc);
            x->attr.value = e;
            x->attr.name = tok_str(P, n);
            e = finish(P, x);
        } else {
            break;
        }
    }
    return P->failed ? P->bad : e;
}

/* power: primary ['**' factor]   (right-associative, binds tighter than
 * unary minus on its left: -2**2 == -4) */
static Expr *parse_power(Parser *P)
{
    Expr *l = parse_primary(P);
    if (P->failed || !at(P, TK_DSTAR))
        return l;
    Token *op = advance(P);
    Expr *r = parse_factor(P);
    if (P->failed)
        return P->bad;
    Expr *e = new_expr(P, EX_BINOP, op->loc);
    e->bin.op = BO_POW;
    e->bin.l = l;
    e->bin.r = r;
    return finish(P, e);
}

/* factor: ('+' | '-' | '~') factor | power */
static Expr *parse_factor(Parser *P)
{
    Token *t = peek(P);
    UnOp op;
    if (t->kind == TK_MINUS)
        op = UO_NEG;
    else if (t->kind == TK_PLUS)
        op = UO_POS;
    else if (t->kind == TK_TILDE)
        op = UO_INVERT;
    else
        return parse_power(P);
    advance(P);
    /* -9223372036854775808: the one literal that only fits negated */
    if (op == UO_NEG && at(P, TK_INT) && peek(P)->big && peek(P)->ival == INT64_MIN &&
        peek2(P)->kind != TK_DSTAR && peek2(P)->kind != TK_DOT && peek2(P)->kind != TK_LPAREN &&
        peek2(P)->kind != TK_LBRACKET) {
        Token *n = advance(P);
        Expr *e = new_expr(P, EX_INT, n->loc);
        e->ival = INT64_MIN;
        e->loc = t->loc;
        return e;
    }
    if (!enter(P))
        return P->bad;
    Expr *x = parse_factor(P);
    leave(P);
    if (P->failed)
        return P->bad;
    Expr *e = new_expr(P, EX_UNOP, t->loc);
    e->un.op = op;
    e->un.x = x;
    return finish(P, e);
}

/* Binary operator levels, loosest first:
 *   bitor:  bitxor ('|' bitxor)*        bitxor: bitand ('^' bitand)*
 *   bitand: shift ('&' shift)*          shift:  arith (('<<'|'>>') arith)*
 *   arith:  term (('+'|'-') term)*      term:   factor (('*'|'/'|'//'|'%'|'@') factor)*
 * All left-associative. */
typedef struct BinLevel {
    TokKind tok[5];
    BinOp op[5];
    int n;
} BinLevel;
static const BinLevel bin_levels[] = {
    {{TK_PIPE}, {BO_BITOR}, 1},
    {{TK_CARET}, {BO_BITXOR}, 1},
    {{TK_AMP}, {BO_BITAND}, 1},
    {{TK_LSHIFT, TK_RSHIFT}, {BO_LSHIFT, BO_RSHIFT}, 2},
    {{TK_PLUS, TK_MINUS}, {BO_ADD, BO_SUB}, 2},
    {{TK_STAR, TK_SLASH, TK_DSLASH, TK_PERCENT, TK_AT}, {BO_MUL, BO_DIV, BO_FLOORDIV, BO_MOD, BO_MATMUL}, 5},
};
enum { NBIN_LEVELS = sizeof bin_levels / sizeof bin_levels[0] };

static Expr *parse_binary(Parser *P, int level)
{
    if (level == NBIN_LEVELS)
        return parse_factor(P);
    Expr *l = parse_binary(P, level + 1);
    const BinLevel *lv = &bin_levels[level];
    while (!P->failed) {
        int k = 0;
        while (k < lv->n && lv->tok[k] != peek(P)->kind)
            k++;
        if (k == lv->n)
            break;
        Token *op = advance(P);
        Expr *r = parse_binary(P, level + 1);
        if (P->failed)
            break;
        Expr *e = new_expr(P, EX_BINOP, op->loc);
        e->bin.op = lv->op[k];
        e->bin.l = l;
        e->bin.r = r;
        l = finish(P, e);
    }
    return P->failed ? P->bad : l;
}

/* comparison: bitor (compop bitor)*
 * compop: '<' | '>' | '==' | '>=' | '<=' | '!=' | 'in' | 'not' 'in' | 'is' | 'is' 'not' */
static bool parse_compop(Parser *P, CmpOp *op)
{
    Token *t = peek(P);
    switch (t->kind) {
    case TK_LT: *op = CO_LT; break;
    case TK_LE: *op = CO_LE; break;
    case TK_GT: *op = CO_GT; break;
    case TK_GE: *op = CO_GE; break;
    case TK_EQ: *op = CO_EQ; break;
    case TK_NE: *op = CO_NE; break;
    default:
        if (tok_is_word(t, "in")) {
            *op = CO_IN;
        } else if (tok_is_word(t, "not") && tok_is_word(peek2(P), "in")) {
            advance(P);
            *op = CO_NOTIN;
        } else if (tok_is_word(t, "is")) {
            if (tok_is_word(peek2(P), "not")) {
                advance(P);
                *op = CO_ISNOT;
            } else {
                *op = CO_IS;
            }
        } else {
            return false;
        }
    }
    advance(P);
    return true;
}

static Expr *parse_comparison(Parser *P)
{
    Expr *first = parse_binary(P, 0);
    if (P->failed)
        return P->bad;
    Vec(CmpOp) ops = {0};
    ExprVec rest = {0};
    Loc loc = peek(P)->loc;
    CmpOp op;
    while (parse_compop(P, &op)) {
        Expr *r = parse_binary(P, 0);
        if (P->failed)
            return P->bad;
        vec_push(P->a, ops, op);
        vec_push(P->a, rest, r);
    }
    if (!ops.n)
        return first;
    Expr *e = new_expr(P, EX_COMPARE, loc);
    e->cmp.first = first;
    e->cmp.ops = ops.v;
    e->cmp.rest = rest.v;
    e->cmp.n = ops.n;
    return finish(P, e);
}

/* not_test: 'not' not_test | comparison */
static Expr *parse_not(Parser *P)
{
    if (!at_kw(P, "not"))
        return parse_comparison(P);
    Token *t = advance(P);
    if (!enter(P))
        return P->bad;
    Expr *x = parse_not(P);
    leave(P);
    if (P->failed)
        return P->bad;
    Expr *e = new_expr(P, EX_UNOP, t->loc);
    e->un.op = UO_NOT;
    e->un.x = x;
    return finish(P, e);
}

/* and_test: not_test ('and' not_test)*     or_test: and_test ('or' and_test)* */
static Expr *parse_boolop(Parser *P, BoolOpKind kind)
{
    const char *word = kind == BL_AND ? "and" : "or";
    Expr *first = kind == BL_AND ? parse_not(P) : parse_boolop(P, BL_AND);
    if (P->failed || !at_kw(P, word))
        return P->failed ? P->bad : first;
    Loc loc = peek(P)->loc;
    ExprVec xs = {0};
    vec_push(P->a, xs, first);
    while (accept_kw(P, word)) {
        Expr *x = kind == BL_AND ? parse_not(P) : parse_boolop(P, BL_AND);
        if (P->failed)
            return P->bad;
        vec_push(P->a, xs, x);
    }
    Expr *e = new_expr(P, EX_BOOLOP, loc);
    e->boolop.op = kind;
    e->boolop.xs = xs.v;
    e->boolop.n = xs.n;
    return finish(P, e);
}

/* test: or_test ['if' or_test 'else' test] */
static Expr *parse_test(Parser *P)
{
    if (!enter(P))
        return P->bad;
    Expr *x = parse_boolop(P, BL_OR);
    if (!P->failed && at_kw(P, "if")) {
        Token *kw = advance(P);
        Expr *cond = parse_boolop(P, BL_OR);
        if (!P->failed && !at_kw(P, "else"))
            perr(P, peek(P)->loc, "expected 'else' in the conditional expression, found %s",
                 tok_desc(P, peek(P)));
        if (!P->failed) {
            advance(P);
            Expr *els = parse_test(P);
            if (!P->failed) {
                Expr *e = new_expr(P, EX_IFEXP, kw->loc);
                e->ifexp.cond = cond;
                e->ifexp.then = x;
                e->ifexp.els = els;
                x = finish(P, e);
            }
        }
    }
    if (!P->failed && at(P, TK_WALRUS))
        perr(P, peek(P)->loc, "assignment expressions (':=') are not supported in Triton kernels");
    leave(P);
    return P->failed ? P->bad : x;
}

/* testlist: test (',' test)* [',']   -- a tuple when there is a comma.
 * With `targets`, the items are `bitor` expressions: the targets of a `for`,
 * where 'in' must not be read as a comparison.  Starred items are refused. */
static Expr *parse_testlist(Parser *P, bool targets)
{
    Token *t = peek(P);
    ExprVec xs = {0};
    bool comma = false;
    for (;;) {
        if (at(P, TK_STAR)) {
            perr(P, peek(P)->loc, "starred expressions are not supported in Triton kernels");
            return P->bad;
        }
        Expr *x = targets ? parse_binary(P, 0) : parse_test(P);
        if (P->failed)
            return P->bad;
        vec_push(P->a, xs, x);
        if (!at(P, TK_COMMA))
            break;
        advance(P);
        comma = true;
        /* a trailing comma ends the list */
        TokKind k = peek(P)->kind;
        if (k == TK_NEWLINE || k == TK_SEMI || k == TK_ASSIGN || k == TK_EOF || k == TK_COLON ||
            k == TK_RPAREN || (targets && at_kw(P, "in")) || (k >= TK_PLUSEQ && k <= TK_ATEQ))
            break;
    }
    if (!comma)
        return xs.v[0];
    Expr *e = new_expr(P, EX_TUPLE, t->loc);
    VEC_COPY(P, xs, e->seq.xs, e->seq.n);
    return finish(P, e);
}

/* ---- statements ---- */

static Stmt *new_stmt(Parser *P, StmtKind k, Loc loc)
{
    Stmt *s = arena_alloc(P->a, sizeof *s);
    s->kind = k;
    s->loc = loc;
    return s;
}

/* Skips the rest of the logical line (through its NEWLINE). */
static void skip_line(Parser *P)
{
    while (!at(P, TK_NEWLINE) && !at(P, TK_EOF) && !at(P, TK_INDENT) && !at(P, TK_DEDENT))
        advance(P);
    accept(P, TK_NEWLINE);
}

/* At an INDENT: skips through the matching DEDENT. */
static void skip_block(Parser *P)
{
    int depth = 0;
    do {
        if (at(P, TK_INDENT))
            depth++;
        else if (at(P, TK_DEDENT))
            depth--;
        else if (at(P, TK_EOF))
            return;
        advance(P);
    } while (depth > 0);
}

/* Skips one statement by its structure: its line and an indented block. */
static void skip_stmt(Parser *P)
{
    skip_line(P);
    if (at(P, TK_INDENT))
        skip_block(P);
}

/* After an error: skips to the next statement of the current block,
 * together with the elif/else/except/finally clauses of a failed
 * compound statement (they would only produce echoes). */
static void resync(Parser *P)
{
    skip_stmt(P);
    while (at_kw(P, "elif") || at_kw(P, "else") || at_kw(P, "except") || at_kw(P, "finally"))
        skip_stmt(P);
}

/* Whether e can be assigned to (Python's rule, minus starred targets). */
static bool check_target(Parser *P, Expr *e, bool tuple_ok)
{
    switch (e->kind) {
    case EX_NAME:
    case EX_ATTR:
    case EX_SUBSCRIPT:
        return true;
    case EX_TUPLE:
    case EX_LIST:
        if (tuple_ok && e->seq.n > 0) {
            for (int k = 0; k < e->seq.n; k++)
                if (!check_target(P, e->seq.xs[k], true))
                    return false;
            return true;
        }
        break;
    default:
        break;
    }
    static const char *const what[] = {
        [EX_INT] = "a literal", [EX_FLOAT] = "a literal", [EX_STR] = "a literal",
        [EX_BOOL] = "a literal", [EX_NONE] = "None", [EX_CALL] = "a function call",
        [EX_SLICE] = "a slice", [EX_BINOP] = "an expression", [EX_UNOP] = "an expression",
        [EX_COMPARE] = "a comparison", [EX_BOOLOP] = "an expression",
        [EX_IFEXP] = "a conditional expression", [EX_TUPLE] = "this tuple", [EX_LIST] = "this list",
        [EX_FSTRING] = "an f-string",
    };
    const char *w = (unsigned)e->kind < sizeof what / sizeof what[0] && what[e->kind] ? what[e->kind]
                                                                                      : "this expression";
    perr(P, e->loc, "cannot assign to %s", w);
    return false;
}

static BinOp augop(TokKind k)
{
    switch (k) {
    case TK_PLUSEQ: return BO_ADD;
    case TK_MINUSEQ: return BO_SUB;
    case TK_STAREQ: return BO_MUL;
    case TK_SLASHEQ: return BO_DIV;
    case TK_DSLASHEQ: return BO_FLOORDIV;
    case TK_PERCENTEQ: return BO_MOD;
    case TK_DSTAREQ: return BO_POW;
    case TK_AMPEQ: return BO_BITAND;
    case TK_PIPEEQ: return BO_BITOR;
    case TK_CARETEQ: return BO_BITXOR;
    case TK_LSHIFTEQ: return BO_LSHIFT;
    case TK_RSHIFTEQ: return BO_RSHIFT;
    default: return BO_MATMUL; /* TK_ATEQ */
    }
}

/* expr_stmt: testlist ( ('=' testlist)+ | augop testlist | ':' test ['=' testlist] )? */
static Stmt *parse_expr_stmt(Parser *P)
{
    Token *start = peek(P);
    Expr *x = parse_testlist(P, false);
    if (P->failed)
        return NULL;
    TokKind k = peek(P)->kind;
    if (k == TK_ASSIGN) {
        ExprVec targets = {0};
        vec_push(P->a, targets, x);
        Expr *value = NULL;
        while (accept(P, TK_ASSIGN)) {
            if (at_kw(P, "yield")) {
                perr(P, peek(P)->loc, "'yield' is not supported in Triton kernels");
                return NULL;
            }
            value = parse_testlist(P, false);
            if (P->failed)
                return NULL;
            if (at(P, TK_ASSIGN))
                vec_push(P->a, targets, value);
        }
        for (int t = 0; t < targets.n; t++)
            if (!check_target(P, targets.v[t], true))
                return NULL;
        Stmt *s = new_stmt(P, ST_ASSIGN, start->loc);
        s->assign.targets = targets.v;
        s->assign.ntargets = targets.n;
        s->assign.value = value;
        return s;
    }
    if (k >= TK_PLUSEQ && k <= TK_ATEQ) {
        Token *op = advance(P);
        if (x->kind == EX_TUPLE || x->kind == EX_LIST) {
            perr(P, op->loc, "augmented assignment to a tuple is not possible");
            return NULL;
        }
        if (!check_target(P, x, false))
            return NULL;
        Expr *value = parse_testlist(P, false);
        if (P->failed)
            return NULL;
        Stmt *s = new_stmt(P, ST_AUGASSIGN, start->loc);
        s->aug.op = augop(op->kind);
        s->aug.target = x;
        s->aug.value = value;
        return s;
    }
    if (k == TK_COLON) {
        Token *colon = advance(P);
        if (x->kind == EX_TUPLE || x->kind == EX_LIST) {
            perr(P, colon->loc, "only a single target can be annotated");
            return NULL;
        }
        if (!check_target(P, x, false))
            return NULL;
        Stmt *s = new_stmt(P, ST_ANNASSIGN, start->loc);
        s->ann.target = x;
        s->ann.ann = parse_test(P);
        if (!P->failed && accept(P, TK_ASSIGN))
            s->ann.value = parse_testlist(P, false);
        return P->failed ? NULL : s;
    }
    Stmt *s = new_stmt(P, ST_EXPR, start->loc);
    s->expr = x;
    return s;
}

/* Statements Python has and Triton kernels do not. */
static const struct {
    const char *word, *what;
} refused_stmts[] = {
    {"del", "'del' statements"}, {"global", "'global' statements"},
    {"nonlocal", "'nonlocal' statements"}, {"import", "imports"},
    {"from", "imports"}, {"raise", "'raise' statements"},
    {"with", "'with' statements"}, {"try", "'try' statements"}, {"class", "class definitions"},
    {"async", "'async' definitions and statements"}, {"yield", "'yield' expressions"},
    {"lambda", "lambda expressions"},
};

/* small_stmt: 'pass' | 'break' | 'continue' | 'return' [testlist]
 *           | 'assert' test [',' test] | expr_stmt */
static Stmt *parse_small_stmt(Parser *P)
{
    Token *t = peek(P);
    if (accept_kw(P, "pass"))
        return new_stmt(P, ST_PASS, t->loc);
    if (accept_kw(P, "break"))
        return new_stmt(P, ST_BREAK, t->loc);
    if (accept_kw(P, "continue"))
        return new_stmt(P, ST_CONTINUE, t->loc);
    if (accept_kw(P, "return")) {
        Stmt *s = new_stmt(P, ST_RETURN, t->loc);
        if (!at(P, TK_NEWLINE) && !at(P, TK_SEMI) && !at(P, TK_EOF))
            s->expr = parse_testlist(P, false);
        return P->failed ? NULL : s;
    }
    if (accept_kw(P, "assert")) {
        Stmt *s = new_stmt(P, ST_ASSERT, t->loc);
        s->assert_.test = parse_test(P);
        if (!P->failed && accept(P, TK_COMMA))
            s->assert_.msg = parse_test(P);
        return P->failed ? NULL : s;
    }
    for (size_t k = 0; k < sizeof refused_stmts / sizeof refused_stmts[0]; k++)
        if (tok_is_word(t, refused_stmts[k].word)) {
            perr(P, t->loc, "%s are not supported in Triton kernels", refused_stmts[k].what);
            return NULL;
        }
    return parse_expr_stmt(P);
}

/* simple_stmts: small_stmt (';' small_stmt)* [';'] NEWLINE */
static void parse_simple_stmts(Parser *P, StmtVec *out)
{
    for (;;) {
        Stmt *s = parse_small_stmt(P);
        if (P->failed)
            return;
        vec_push(P->a, *out, s);
        if (!accept(P, TK_SEMI))
            break;
        if (at(P, TK_NEWLINE) || at(P, TK_EOF))
            break;
    }
    if (!at(P, TK_EOF))
        expect(P, TK_NEWLINE, "at the end of the statement");
}

static void parse_stmt(Parser *P, StmtVec *out);

/* block: simple_stmts | NEWLINE INDENT stmt+ DEDENT
 * `what`/`line` name the statement that opened it, for the error message. */
static Stmts parse_block(Parser *P, const char *what, int line)
{
    StmtVec body = {0};
    if (!expect(P, TK_COLON, arena_printf(P->a, "at the end of the '%s' line", what)))
        return (Stmts){0};
    if (!at(P, TK_NEWLINE)) {
        parse_simple_stmts(P, &body);
        return (Stmts){body.v, body.n};
    }
    advance(P);
    if (!at(P, TK_INDENT)) {
        perr(P, peek(P)->loc, "expected an indented block after '%s' statement on line %d", what, line);
        return (Stmts){0};
    }
    advance(P);
    if (!enter(P))
        return (Stmts){0};
    while (!at(P, TK_DEDENT) && !at(P, TK_EOF)) {
        parse_stmt(P, &body);
        if (P->failed) {
            resync(P);
            P->failed = false;
        }
    }
    leave(P);
    accept(P, TK_DEDENT);
    return (Stmts){body.v, body.n};
}

/* if_stmt: 'if' test ':' block ('elif' test ':' block)* ['else' ':' block]
 * (an elif chain nests: the else branch holds one ST_IF) */
static Stmt *parse_if(Parser *P, const char *word)
{
    Token *t = advance(P); /* if / elif */
    Stmt *s = new_stmt(P, ST_IF, t->loc);
    s->if_.cond = parse_test(P);
    if (P->failed)
        return NULL;
    s->if_.then = parse_block(P, word, t->loc.line);
    if (P->failed)
        return NULL;
    if (at_kw(P, "elif")) {
        if (!enter(P))
            return NULL;
        Stmt *e = parse_if(P, "elif");
        leave(P);
        if (!e)
            return NULL;
        Stmt **v = arena_alloc(P->a, sizeof *v);
        v[0] = e;
        s->if_.els = (Stmts){v, 1};
    } else if (at_kw(P, "else")) {
        Token *el = advance(P);
        s->if_.els = parse_block(P, "else", el->loc.line);
    }
    return P->failed ? NULL : s;
}

/* for_stmt: 'for' targets 'in' testlist ':' block ['else' ':' block]
 * targets: bitor (',' bitor)* [','] */
static Stmt *parse_for(Parser *P)
{
    Token *t = advance(P);
    Stmt *s = new_stmt(P, ST_FOR, t->loc);
    s->for_.target = parse_testlist(P, true);
    if (P->failed || !check_target(P, s->for_.target, true))
        return NULL;
    if (!accept_kw(P, "in")) {
        perr(P, peek(P)->loc, "expected 'in' after the loop variable, found %s", tok_desc(P, peek(P)));
        return NULL;
    }
    s->for_.iter = parse_testlist(P, false);
    if (P->failed)
        return NULL;
    s->for_.body = parse_block(P, "for", t->loc.line);
    if (!P->failed && at_kw(P, "else")) {
        Token *el = advance(P);
        s->for_.orelse = parse_block(P, "else", el->loc.line);
    }
    return P->failed ? NULL : s;
}

/* while_stmt: 'while' test ':' block ['else' ':' block] */
static Stmt *parse_while(Parser *P)
{
    Token *t = advance(P);
    Stmt *s = new_stmt(P, ST_WHILE, t->loc);
    s->while_.cond = parse_test(P);
    if (P->failed)
        return NULL;
    s->while_.body = parse_block(P, "while", t->loc.line);
    if (!P->failed && at_kw(P, "else")) {
        Token *el = advance(P);
        s->while_.orelse = parse_block(P, "else", el->loc.line);
    }
    return P->failed ? NULL : s;
}

/* `match` is a keyword only in a line `match subject:` that opens a block;
 * elsewhere it is a plain name (a helper may be called match). */
static bool is_match_stmt(Parser *P)
{
    if (!at_kw(P, "match"))
        return false;
    int k = P->i + 1;
    while (P->t[k].kind != TK_NEWLINE && P->t[k].kind != TK_EOF)
        k++;
    return k > P->i + 1 && P->t[k - 1].kind == TK_COLON && P->t[k].kind == TK_NEWLINE &&
           P->t[k + 1].kind == TK_INDENT;
}

/* stmt: if_stmt | for_stmt | while_stmt | funcdef | decorated | simple_stmts
 * (a nested def is kept as ST_FUNCDEF without its body: sema refuses it) */
static void parse_stmt(Parser *P, StmtVec *out)
{
    Token *t = peek(P);
    Stmt *s = NULL;
    if (t->kind == TK_INDENT) {
        perr(P, t->loc, "unexpected indent");
        return;
    }
    if (tok_is_word(t, "if")) {
        s = parse_if(P, "if");
    } else if (tok_is_word(t, "for")) {
        s = parse_for(P);
    } else if (tok_is_word(t, "while")) {
        s = parse_while(P);
    } else if (tok_is_word(t, "def") || t->kind == TK_AT) {
        s = new_stmt(P, ST_FUNCDEF, t->loc);
        while (at(P, TK_AT)) /* decorators of the nested def */
            skip_line(P);
        skip_stmt(P);
    } else if (tok_is_word(t, "elif") || tok_is_word(t, "else")) {
        perr(P, t->loc, "'%.*s' without a matching 'if'", t->len, t->text);
        return;
    } else if (tok_is_word(t, "except") || tok_is_word(t, "finally") || is_match_stmt(P)) {
        perr(P, t->loc, "'%.*s' statements are not supported in Triton kernels", t->len, t->text);
        return;
    } else {
        parse_simple_stmts(P, out);
        return;
    }
    if (s && !P->failed)
        vec_push(P->a, *out, s);
}

/* ---- function definitions ---- */

/* parameters: '(' [param (',' param)* [',']] ')'
 * param: NAME [':' test] ['=' test]     (no *args, **kwargs, '/' or '*') */
static bool parse_params(Parser *P, FuncDef *fn)
{
    if (!expect(P, TK_LPAREN, "after the function name"))
        return false;
    Vec(Param) ps = {0};
    bool seen_default = false;
    while (!at(P, TK_RPAREN)) {
        Token *t = peek(P);
        if (t->kind == TK_STAR || t->kind == TK_DSTAR || t->kind == TK_SLASH) {
            perr(P, t->loc,
                 "'%s' in a kernel's parameter list is not supported by kad (use plain parameters)",
                 tok_kind_name(t->kind));
            return false;
        }
        if (t->kind != TK_NAME || tok_is_keyword(t)) {
            perr(P, t->loc, "expected a parameter name, found %s", tok_desc(P, t));
            return false;
        }
        advance(P);
        Param p = {tok_str(P, t), NULL, NULL, t->loc};
        for (int k = 0; k < ps.n; k++)
            if (!strcmp(ps.v[k].name, p.name)) {
                perr(P, t->loc, "duplicate parameter '%s' in function definition", p.name);
                return false;
            }
        if (accept(P, TK_COLON))
            p.ann = parse_test(P);
        if (!P->failed && accept(P, TK_ASSIGN)) {
            p.dflt = parse_test(P);
            seen_default = true;
        } else if (!P->failed && seen_default) {
            perr(P, t->loc, "parameter '%s' without a default follows a parameter with a default", p.name);
        }
        if (P->failed)
            return false;
        vec_push(P->a, ps, p);
        if (!accept(P, TK_COMMA))
            break;
    }
    if (!expect(P, TK_RPAREN, "to close the parameter list"))
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
        perr(P, name->loc, "expected a function name after 'def', found %s", tok_desc(P, name));
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
                perr(P, nt->loc, "expected a module name after 'import', found %s", tok_desc(P, nt));
                return;
            }
            Import im = {NULL, dotted, nt->loc};
            if (accept_kw(P, "as")) {
                if (!at(P, TK_NAME)) {
                    perr(P, peek(P)->loc, "expected a name after 'as'");
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
        perr(P, peek(P)->loc, "expected a module name after 'from', found %s", tok_desc(P, peek(P)));
        return;
    }
    if (!accept_kw(P, "import")) {
        perr(P, peek(P)->loc, "expected 'import', found %s", tok_desc(P, peek(P)));
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
            perr(P, nt->loc, "expected a name to import, found %s", tok_desc(P, nt));
            return;
        }
        advance(P);
        Import im = {tok_str(P, nt),
                     arena_printf(P->a, "%s%s%.*s", m, relative_only ? "" : ".", nt->len, nt->text),
                     nt->loc};
        if (accept_kw(P, "as")) {
            if (!at(P, TK_NAME)) {
                perr(P, peek(P)->loc, "expected a name after 'as'");
                return;
            }
            im.alias = tok_str(P, advance(P));
        }
        add_import(P, im, alt);
    } while (accept(P, TK_COMMA));
    if (paren)
        expect(P, TK_RPAREN, "to close the import list");
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
        skip_stmt(P);
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
    skip_stmt(P);
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
        resync(P); /* an error in the def line */
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
        skip_line(P); /* the decorator's arguments are host code */
        vec_push(P->a, decos, dc);
    }
    if (at_kw(P, "def") && !jit && !conditional) {
        parse_plain_def(P, decos.v, decos.n);
        return;
    }
    if (!at_kw(P, "def") || !jit || conditional) {
        skip_stmt(P); /* def, class or async def of host code */
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
        resync(P); /* an error in the def line */
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
        skip_stmt(P);
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
    if (accept(P, TK_SEMI) && at(P, TK_NAME) && !tok_is_keyword(peek(P)) && enter(P)) {
        parse_module_assign(P);
        leave(P);
    } else if (!accept(P, TK_NEWLINE)) {
        skip_stmt(P);
    }
}

static void parse_module_stmts(Parser *P, bool conditional);

/* A module-level compound statement (if/elif/else/try/except/finally/with):
 * skip its header, and collect the imports of its block. */
static void parse_module_compound(Parser *P)
{
    skip_line(P);
    if (!at(P, TK_INDENT))
        return;
    advance(P);
    if (!enter(P)) {
        P->failed = false;
        return;
    }
    parse_module_stmts(P, true);
    leave(P);
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
            skip_block(P);
            continue;
        }
        if (t->kind == TK_AT) {
            parse_decorated(P, conditional);
        } else if (tok_is_word(t, "import") || tok_is_word(t, "from")) {
            parse_import(P, conditional);
            if (!P->failed && !at(P, TK_SEMI) && !at(P, TK_EOF))
                expect(P, TK_NEWLINE, "at the end of the import");
            if (P->failed)
                skip_stmt(P);
            else if (accept(P, TK_SEMI))
                skip_stmt(P); /* what follows `;` is host code */
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
                skip_stmt(P);
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
    P.bad = new_expr(&P, EX_NONE, (Loc){file, 1, 1});
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
