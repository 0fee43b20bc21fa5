/* parse_stmt.c -- the statements of @triton.jit functions: expression
 * statements, =, op=, annotated =, if/elif/else, for, while, return, pass,
 * break, continue, assert and nested def, blocks by INDENT/DEDENT, and the
 * skipping of statements by their token structure (host code, parse_resync
 * after an error).  Python statements Triton kernels do not have
 * (with/try/raise/del/global/match, ...) are located errors naming them.
 *
 * Requires: front.h (the Parser, parse_expr.c's parse_test and
 * parse_testlist).  Guarantees: one error per statement; after one the
 * parser skips to the next statement (parse_resync), so several are reported.
 */
#include <string.h>

#include "base/base.h"
#include "front/triton.h"
#include "front/front.h"

/* ---- statements ---- */

static Stmt *new_stmt(Parser *P, StmtKind k, Loc loc)
{
    Stmt *s = arena_alloc(P->a, sizeof *s);
    s->kind = k;
    s->loc = loc;
    return s;
}

/* Skips the rest of the logical line (through its NEWLINE). */
void parse_skip_line(Parser *P)
{
    while (!at(P, TK_NEWLINE) && !at(P, TK_EOF) && !at(P, TK_INDENT) && !at(P, TK_DEDENT))
        advance(P);
    accept(P, TK_NEWLINE);
}

/* At an INDENT: skips through the matching DEDENT. */
void parse_skip_block(Parser *P)
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
void parse_skip_stmt(Parser *P)
{
    parse_skip_line(P);
    if (at(P, TK_INDENT))
        parse_skip_block(P);
}

/* After an error: skips to the next statement of the current block,
 * together with the elif/else/except/finally clauses of a failed
 * compound statement (they would only produce echoes). */
void parse_resync(Parser *P)
{
    parse_skip_stmt(P);
    while (at_kw(P, "elif") || at_kw(P, "else") || at_kw(P, "except") || at_kw(P, "finally"))
        parse_skip_stmt(P);
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
    parse_perr(P, e->loc, "cannot assign to %s", w);
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
                parse_perr(P, peek(P)->loc, "'yield' is not supported in Triton kernels");
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
            parse_perr(P, op->loc, "augmented assignment to a tuple is not possible");
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
            parse_perr(P, colon->loc, "only a single target can be annotated");
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
Stmt *parse_small_stmt(Parser *P)
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
            parse_perr(P, t->loc, "%s are not supported in Triton kernels", refused_stmts[k].what);
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
        parse_expect(P, TK_NEWLINE, "at the end of the statement");
}

static void parse_stmt(Parser *P, StmtVec *out);

/* block: simple_stmts | NEWLINE INDENT stmt+ DEDENT
 * `what`/`line` name the statement that opened it, for the error message. */
Stmts parse_block(Parser *P, const char *what, int line)
{
    StmtVec body = {0};
    if (!parse_expect(P, TK_COLON, arena_printf(P->a, "at the end of the '%s' line", what)))
        return (Stmts){0};
    if (!at(P, TK_NEWLINE)) {
        parse_simple_stmts(P, &body);
        return (Stmts){body.v, body.n};
    }
    advance(P);
    if (!at(P, TK_INDENT)) {
        parse_perr(P, peek(P)->loc, "expected an indented block after '%s' statement on line %d", what, line);
        return (Stmts){0};
    }
    advance(P);
    if (!parse_enter(P))
        return (Stmts){0};
    while (!at(P, TK_DEDENT) && !at(P, TK_EOF)) {
        parse_stmt(P, &body);
        if (P->failed) {
            parse_resync(P);
            P->failed = false;
        }
    }
    parse_leave(P);
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
        if (!parse_enter(P))
            return NULL;
        Stmt *e = parse_if(P, "elif");
        parse_leave(P);
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
        parse_perr(P, peek(P)->loc, "expected 'in' after the loop variable, found %s", tok_desc(P, peek(P)));
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
        parse_perr(P, t->loc, "unexpected indent");
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
            parse_skip_line(P);
        parse_skip_stmt(P);
    } else if (tok_is_word(t, "elif") || tok_is_word(t, "else")) {
        parse_perr(P, t->loc, "'%.*s' without a matching 'if'", t->len, t->text);
        return;
    } else if (tok_is_word(t, "except") || tok_is_word(t, "finally") || is_match_stmt(P)) {
        parse_perr(P, t->loc, "'%.*s' statements are not supported in Triton kernels", t->len, t->text);
        return;
    } else {
        parse_simple_stmts(P, out);
        return;
    }
    if (s && !P->failed)
        vec_push(P->a, *out, s);
}

