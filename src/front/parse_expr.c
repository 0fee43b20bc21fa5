/* parse_expr.c -- the expressions of the Triton subset: atoms, f-strings,
 * calls with keyword arguments, attributes, subscripts with slices and
 * None, the operators by precedence (a table of binary levels),
 * comparisons, not/and/or, conditional expressions and tuple lists.
 * Python expressions outside the subset (lambda, comprehensions, dict and
 * set displays, starred arguments, ...) are located errors naming them.
 *
 * Each parse function has its grammar rule above it.  Locations follow
 * parse_py.c's file comment (operators at the operator, calls at the
 * callee, subscripts at the `[`); every Expr goes through parse_finish(), which
 * keeps the tree-depth limit.
 *
 * Requires: front.h (the Parser and its token helpers, parse_py.c).
 * Guarantees: after an error, P->failed is set and P->bad returned; the
 * statement parser resyncs.
 */
#include <string.h>

#include "base/base.h"
#include "front/triton.h"
#include "front/front.h"

/* ---- expressions ---- */

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
            parse_perr(P, t->loc, "%s", words[k].msg);
            return true;
        }
    if (tok_is_keyword(t)) {
        parse_perr(P, t->loc, "invalid syntax: unexpected keyword '%.*s'", t->len, t->text);
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
        parse_perr(P, at0, "f-string: valid expression required before '%c'", *e);
        return P->bad;
    }
    const char *text = arena_printf(P->a, "(%.*s)", (int)(e - s), s);
    Diags scratch;
    diag_init(&scratch, P->a);
    int n;
    Token *toks = lex(P->a, &scratch, P->file, text, &n);
    if (scratch.nerrors) {
        parse_perr(P, at0, "f-string: invalid expression: %s", scratch.list.n ? scratch.list.v[0].msg : "?");
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
        parse_perr(&Q, peek(&Q)->loc, "f-string: expecting '}', found %s", tok_desc(&Q, peek(&Q)));
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
                parse_perr(P, loc_in_token(t, p),
                           "\\N{...} escapes are not supported by kad; write the character itself");
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
            parse_perr(P, loc_in_token(t, p), "f-string: single '}' is not allowed");
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
                parse_perr(P, scratch.list.v[0].loc, "%s", scratch.list.v[0].msg);
                return false;
            }
            Expr *e = parse_new_expr(P, EX_STR, ll);
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
            parse_perr(P, loc_in_token(t, open), "f-string: expecting '}'");
            return false;
        }
        Expr *value = parse_field_expr(P, t, es, ee);
        if (P->failed)
            return false;
        Expr *f = parse_new_expr(P, EX_FORMAT, value->loc);
        f->fmt.value = value;
        f->fmt.spec = "";
        if (selfdoc) {
            Expr *e = parse_new_expr(P, EX_STR, loc_in_token(t, es));
            e->str = arena_strndup(P->a, es, (size_t)(p - es));
            vec_push(P->a, *parts, e);
        }
        if (*p == '!') {
            char c = p + 1 < end ? p[1] : 0;
            if (c != 's' && c != 'r' && c != 'a') {
                parse_perr(P, loc_in_token(t, p), "f-string: invalid conversion character: expected 's', 'r', or 'a'");
                return false;
            }
            f->fmt.conv = c;
            p += 2;
        }
        if (p < end && *p == ':') {
            const char *ss = ++p;
            while (p < end && *p != '}') {
                if (*p == '{') {
                    parse_perr(P, loc_in_token(t, p),
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
            parse_perr(P, loc_in_token(t, p < end ? p : open), "f-string: expecting '}'");
            return false;
        }
        f = parse_finish(P, f);
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
                parse_perr(P, t->loc, "template strings (t\"...\") are not supported in Triton kernels");
                return P->bad;
            }
            is_f |= *c == 'f' || *c == 'F';
            if (*c == 'b' || *c == 'B') {
                parse_perr(P, t->loc, "bytes literals are not supported in Triton kernels");
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
                    parse_perr(P, t->loc, "\\N{...} escapes are not supported by kad; write the character itself");
                    return P->bad;
                }
                k++; /* skip the escaped character */
            }
        if (is_f || fstr) {
            if (!fstr && b.len) { /* the plain literals before the first f-string */
                Expr *e = parse_new_expr(P, EX_STR, first->loc);
                e->str = arena_strdup(P->a, buf_str(&b));
                vec_push(P->a, parts, e);
            }
            fstr = true;
            if (is_f) {
                if (!parse_fstring_token(P, t, &parts))
                    return P->bad;
            } else {
                Expr *e = parse_new_expr(P, EX_STR, t->loc);
                e->str = t->str;
                vec_push(P->a, parts, e);
            }
            continue;
        }
        buf_puts(&b, t->str);
    }
    if (fstr) {
        Expr *e = parse_new_expr(P, EX_FSTRING, first->loc);
        VEC_COPY(P, parts, e->seq.xs, e->seq.n);
        return parse_finish(P, e);
    }
    Expr *e = parse_new_expr(P, EX_STR, first->loc);
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
            parse_perr(P, peek(P)->loc, "starred expressions are not supported in Triton kernels");
            return;
        }
        Expr *x = parse_test(P);
        if (P->failed)
            return;
        if (at_kw(P, "for") || at_kw(P, "async")) {
            parse_perr(P, peek(P)->loc, "comprehensions are not supported in Triton kernels");
            return;
        }
        vec_push(P->a, *out, x);
        *trailing = false;
        if (!accept(P, TK_COMMA))
            break;
        *trailing = true;
    }
    parse_expect(P, close, what);
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
            Expr *e = parse_new_expr(P, EX_BOOL, t->loc);
            e->bval = t->text[0] == 'T';
            return e;
        }
        if (tok_is_word(t, "None")) {
            advance(P);
            return parse_new_expr(P, EX_NONE, t->loc);
        }
        if (refuse_unsupported_atom(P, t))
            return P->bad;
        advance(P);
        Expr *e = parse_new_expr(P, EX_NAME, t->loc);
        e->name = tok_str(P, t);
        return e;
    }
    case TK_INT: {
        advance(P);
        if (t->big) {
            parse_perr(P, t->loc, "integer literal %.*s is too large: kad's integer constants are signed 64-bit",
                       t->len, t->text);
            return P->bad;
        }
        Expr *e = parse_new_expr(P, EX_INT, t->loc);
        e->ival = t->ival;
        return e;
    }
    case TK_FLOAT: {
        advance(P);
        char last = t->text[t->len - 1];
        if (last == 'j' || last == 'J') {
            parse_perr(P, t->loc, "complex literals are not supported in Triton kernels");
            return P->bad;
        }
        Expr *e = parse_new_expr(P, EX_FLOAT, t->loc);
        e->fval = t->fval;
        return e;
    }
    case TK_STRING:
        return parse_strings(P);
    case TK_LPAREN: {
        advance(P);
        if (accept(P, TK_RPAREN)) {
            Expr *e = parse_new_expr(P, EX_TUPLE, t->loc);
            return e; /* () */
        }
        if (at(P, TK_NAME) && peek2(P)->kind == TK_WALRUS) {
            parse_perr(P, peek2(P)->loc, "assignment expressions (':=') are not supported in Triton kernels");
            return P->bad;
        }
        ExprVec xs = {0};
        bool trailing;
        parse_seq_items(P, TK_RPAREN, "to close the parenthesis", &xs, &trailing);
        if (P->failed)
            return P->bad;
        if (xs.n == 1 && !trailing)
            return xs.v[0]; /* (x) is just x */
        Expr *e = parse_new_expr(P, EX_TUPLE, t->loc);
        VEC_COPY(P, xs, e->seq.xs, e->seq.n);
        return parse_finish(P, e);
    }
    case TK_LBRACKET: {
        advance(P);
        ExprVec xs = {0};
        bool trailing;
        parse_seq_items(P, TK_RBRACKET, "to close the list", &xs, &trailing);
        if (P->failed)
            return P->bad;
        Expr *e = parse_new_expr(P, EX_LIST, t->loc);
        VEC_COPY(P, xs, e->seq.xs, e->seq.n);
        return parse_finish(P, e);
    }
    case TK_LBRACE:
        parse_perr(P, t->loc, "dict and set displays are not supported in Triton kernels");
        return P->bad;
    case TK_ELLIPSIS:
        parse_perr(P, t->loc, "'...' (Ellipsis) is not supported in Triton kernels");
        return P->bad;
    default:
        parse_perr(P, t->loc, "expected an expression, found %s", tok_desc(P, t));
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
            parse_perr(P, t->loc, "'%s' argument unpacking is not supported in Triton kernels",
                       t->kind == TK_STAR ? "*" : "**");
            return P->bad;
        }
        if (t->kind == TK_NAME && peek2(P)->kind == TK_ASSIGN && !tok_is_keyword(t)) {
            advance(P);
            advance(P);
            Keyword kw = {tok_str(P, t), NULL, t->loc};
            for (int k = 0; k < kws.n; k++)
                if (!strcmp(kws.v[k].name, kw.name)) {
                    parse_perr(P, t->loc, "keyword argument repeated: '%s'", kw.name);
                    return P->bad;
                }
            kw.value = parse_test(P);
            if (P->failed)
                return P->bad;
            vec_push(P->a, kws, kw);
        } else {
            if (t->kind == TK_NAME && peek2(P)->kind == TK_WALRUS) {
                parse_perr(P, peek2(P)->loc, "assignment expressions (':=') are not supported in Triton kernels");
                return P->bad;
            }
            Expr *x = parse_test(P);
            if (P->failed)
                return P->bad;
            if (at_kw(P, "for") || at_kw(P, "async")) {
                parse_perr(P, peek(P)->loc, "generator expressions are not supported in Triton kernels");
                return P->bad;
            }
            if (kws.n) {
                parse_perr(P, x->loc, "positional argument follows keyword argument");
                return P->bad;
            }
            vec_push(P->a, args, x);
        }
        if (!accept(P, TK_COMMA))
            break;
    }
    if (!parse_expect(P, TK_RPAREN, "to close the call's arguments"))
        return P->bad;
    Expr *e = parse_new_expr(P, EX_CALL, func->loc);
    e->call.func = func;
    VEC_COPY(P, args, e->call.args, e->call.nargs);
    e->call.kw = kws.n ? kws.v : NULL;
    e->call.nkw = kws.n;
    return parse_finish(P, e);
}

/* subscript: test | [test] ':' [test] [':' [test]] */
static Expr *parse_subscript_item(Parser *P)
{
    Token *t = peek(P);
    Expr *lo = NULL;
    if (t->kind == TK_STAR) {
        parse_perr(P, t->loc, "starred expressions are not supported in Triton kernels");
        return P->bad;
    }
    if (!at(P, TK_COLON)) {
        lo = parse_test(P);
        if (P->failed || !at(P, TK_COLON))
            return lo;
    }
    advance(P); /* : */
    Expr *e = parse_new_expr(P, EX_SLICE, t->loc);
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
    return parse_finish(P, e);
}

/* trailer: '[' subscript (',' subscript)* [','] ']' */
static Expr *parse_index(Parser *P, Expr *value)
{
    Token *open = advance(P); /* [ */
    ExprVec idx = {0};
    if (at(P, TK_RBRACKET)) {
        parse_perr(P, peek(P)->loc, "expected an index inside '[]'");
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
    if (!parse_expect(P, TK_RBRACKET, "to close the subscript"))
        return P->bad;
    if (idx.n == 1 && !trailing && idx.v[0]->kind == EX_TUPLE && idx.v[0]->seq.n > 0) {
        /* x[(a, b)] is x[a, b] in Python */
        Expr *tup = idx.v[0];
        idx.n = 0;
        for (int k = 0; k < tup->seq.n; k++)
            vec_push(P->a, idx, tup->seq.xs[k]);
    }
    Expr *e = parse_new_expr(P, EX_SUBSCRIPT, open->loc);
    e->sub.value = value;
    VEC_COPY(P, idx, e->sub.index, e->sub.nindex);
    return parse_finish(P, e);
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
                parse_perr(P, n->loc, "expected an attribute name after '.', found %s", tok_desc(P, n));
                return P->bad;
            }
            advance(P);
            Expr *x = parse_new_expr(P, EX_ATTR, n->loc);
            x->attr.value = e;
            x->attr.name = tok_str(P, n);
            e = parse_finish(P, x);
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
    Expr *e = parse_new_expr(P, EX_BINOP, op->loc);
    e->bin.op = BO_POW;
    e->bin.l = l;
    e->bin.r = r;
    return parse_finish(P, e);
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
        Expr *e = parse_new_expr(P, EX_INT, n->loc);
        e->ival = INT64_MIN;
        e->loc = t->loc;
        return e;
    }
    if (!parse_enter(P))
        return P->bad;
    Expr *x = parse_factor(P);
    parse_leave(P);
    if (P->failed)
        return P->bad;
    Expr *e = parse_new_expr(P, EX_UNOP, t->loc);
    e->un.op = op;
    e->un.x = x;
    return parse_finish(P, e);
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
        Expr *e = parse_new_expr(P, EX_BINOP, op->loc);
        e->bin.op = lv->op[k];
        e->bin.l = l;
        e->bin.r = r;
        l = parse_finish(P, e);
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
    Expr *e = parse_new_expr(P, EX_COMPARE, loc);
    e->cmp.first = first;
    e->cmp.ops = ops.v;
    e->cmp.rest = rest.v;
    e->cmp.n = ops.n;
    return parse_finish(P, e);
}

/* not_test: 'not' not_test | comparison */
static Expr *parse_not(Parser *P)
{
    if (!at_kw(P, "not"))
        return parse_comparison(P);
    Token *t = advance(P);
    if (!parse_enter(P))
        return P->bad;
    Expr *x = parse_not(P);
    parse_leave(P);
    if (P->failed)
        return P->bad;
    Expr *e = parse_new_expr(P, EX_UNOP, t->loc);
    e->un.op = UO_NOT;
    e->un.x = x;
    return parse_finish(P, e);
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
    Expr *e = parse_new_expr(P, EX_BOOLOP, loc);
    e->boolop.op = kind;
    e->boolop.xs = xs.v;
    e->boolop.n = xs.n;
    return parse_finish(P, e);
}

/* test: or_test ['if' or_test 'else' test] */
Expr *parse_test(Parser *P)
{
    if (!parse_enter(P))
        return P->bad;
    Expr *x = parse_boolop(P, BL_OR);
    if (!P->failed && at_kw(P, "if")) {
        Token *kw = advance(P);
        Expr *cond = parse_boolop(P, BL_OR);
        if (!P->failed && !at_kw(P, "else"))
            parse_perr(P, peek(P)->loc, "expected 'else' in the conditional expression, found %s",
                       tok_desc(P, peek(P)));
        if (!P->failed) {
            advance(P);
            Expr *els = parse_test(P);
            if (!P->failed) {
                Expr *e = parse_new_expr(P, EX_IFEXP, kw->loc);
                e->ifexp.cond = cond;
                e->ifexp.then = x;
                e->ifexp.els = els;
                x = parse_finish(P, e);
            }
        }
    }
    if (!P->failed && at(P, TK_WALRUS))
        parse_perr(P, peek(P)->loc, "assignment expressions (':=') are not supported in Triton kernels");
    parse_leave(P);
    return P->failed ? P->bad : x;
}

/* testlist: test (',' test)* [',']   -- a tuple when there is a comma.
 * With `targets`, the items are `bitor` expressions: the targets of a `for`,
 * where 'in' must not be read as a comparison.  Starred items are refused. */
Expr *parse_testlist(Parser *P, bool targets)
{
    Token *t = peek(P);
    ExprVec xs = {0};
    bool comma = false;
    for (;;) {
        if (at(P, TK_STAR)) {
            parse_perr(P, peek(P)->loc, "starred expressions are not supported in Triton kernels");
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
    Expr *e = parse_new_expr(P, EX_TUPLE, t->loc);
    VEC_COPY(P, xs, e->seq.xs, e->seq.n);
    return parse_finish(P, e);
}

