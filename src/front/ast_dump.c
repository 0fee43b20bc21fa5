/* ast_dump.c -- Module -> a compact S-expression text (tests, `kad ast`).
 *
 * The job: show exactly what parse_py.c built, so the golden tests of the
 * front end can pin the AST down node by node.  One line per import,
 * module constant and statement; statements, constants and functions carry
 * their line:col, nested blocks are indented two spaces per level.
 * Expressions print in prefix form: `(+ a b)`, `(call f x (kw axis 0))`,
 * `(index x (slice _ _ _) None)`, with `_` for an absent child.
 *
 * Requires: a Module from parse_module (also one with errors: a failed
 * expression is an EX_NONE and prints as None).  Guarantees: the text
 * depends only on the AST; strings are escaped so that one node stays on
 * one line; floats are the shortest decimal that reads back to the same
 * double (always with a `.`, `e`, `inf` or `nan`).  Reads the AST only;
 * allocates nothing but the Buf's growth.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "front/triton.h"

/* ---- the AST dump (tests, `kad ast`) ---- */

static void dump_str(Buf *b, const char *s)
{
    buf_putc(b, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            buf_printf(b, "\\%c", c);
        else if (c == '\n')
            buf_puts(b, "\\n");
        else if (c < 0x20 || c == 0x7F)
            buf_printf(b, "\\x%02x", c);
        else
            buf_putc(b, (char)c);
    }
    buf_putc(b, '"');
}

/* The shortest decimal that reads back to the same double. */
static void dump_float(Buf *b, double v)
{
    if (isnan(v)) {
        buf_puts(b, "nan");
        return;
    }
    if (isinf(v)) {
        buf_puts(b, v < 0 ? "-inf" : "inf");
        return;
    }
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    buf_puts(b, tmp);
    if (!strpbrk(tmp, ".e"))
        buf_puts(b, ".0");
}

static const char *const binop_sym[] = {
    [BO_ADD] = "+", [BO_SUB] = "-", [BO_MUL] = "*", [BO_DIV] = "/", [BO_FLOORDIV] = "//",
    [BO_MOD] = "%", [BO_POW] = "**", [BO_LSHIFT] = "<<", [BO_RSHIFT] = ">>", [BO_BITAND] = "&",
    [BO_BITOR] = "|", [BO_BITXOR] = "^", [BO_MATMUL] = "@",
};
static const char *const cmpop_sym[] = {
    [CO_LT] = "<", [CO_LE] = "<=", [CO_GT] = ">", [CO_GE] = ">=", [CO_EQ] = "==", [CO_NE] = "!=",
    [CO_IS] = "is", [CO_ISNOT] = "is-not", [CO_IN] = "in", [CO_NOTIN] = "not-in",
};
static const char *const unop_sym[] = {
    [UO_NEG] = "neg", [UO_POS] = "pos", [UO_INVERT] = "~", [UO_NOT] = "not",
};

static void dump_expr(Buf *b, const Expr *e)
{
    if (!e) {
        buf_putc(b, '_');
        return;
    }
    switch (e->kind) {
    case EX_NAME: buf_puts(b, e->name); break;
    case EX_INT: buf_printf(b, "%lld", (long long)e->ival); break;
    case EX_FLOAT: dump_float(b, e->fval); break;
    case EX_STR: dump_str(b, e->str); break;
    case EX_BOOL: buf_puts(b, e->bval ? "True" : "False"); break;
    case EX_NONE: buf_puts(b, "None"); break;
    case EX_ATTR:
        buf_puts(b, "(. ");
        dump_expr(b, e->attr.value);
        buf_printf(b, " %s)", e->attr.name);
        break;
    case EX_CALL:
        buf_puts(b, "(call ");
        dump_expr(b, e->call.func);
        for (int k = 0; k < e->call.nargs; k++) {
            buf_putc(b, ' ');
            dump_expr(b, e->call.args[k]);
        }
        for (int k = 0; k < e->call.nkw; k++) {
            buf_printf(b, " (kw %s ", e->call.kw[k].name);
            dump_expr(b, e->call.kw[k].value);
            buf_putc(b, ')');
        }
        buf_putc(b, ')');
        break;
    case EX_SUBSCRIPT:
        buf_puts(b, "(index ");
        dump_expr(b, e->sub.value);
        for (int k = 0; k < e->sub.nindex; k++) {
            buf_putc(b, ' ');
            dump_expr(b, e->sub.index[k]);
        }
        buf_putc(b, ')');
        break;
    case EX_SLICE:
        buf_puts(b, "(slice ");
        dump_expr(b, e->slice.lo);
        buf_putc(b, ' ');
        dump_expr(b, e->slice.hi);
        buf_putc(b, ' ');
        dump_expr(b, e->slice.step);
        buf_putc(b, ')');
        break;
    case EX_BINOP:
        buf_printf(b, "(%s ", binop_sym[e->bin.op]);
        dump_expr(b, e->bin.l);
        buf_putc(b, ' ');
        dump_expr(b, e->bin.r);
        buf_putc(b, ')');
        break;
    case EX_UNOP:
        buf_printf(b, "(%s ", unop_sym[e->un.op]);
        dump_expr(b, e->un.x);
        buf_putc(b, ')');
        break;
    case EX_COMPARE:
        buf_puts(b, "(cmp ");
        dump_expr(b, e->cmp.first);
        for (int k = 0; k < e->cmp.n; k++) {
            buf_printf(b, " %s ", cmpop_sym[e->cmp.ops[k]]);
            dump_expr(b, e->cmp.rest[k]);
        }
        buf_putc(b, ')');
        break;
    case EX_BOOLOP:
        buf_puts(b, e->boolop.op == BL_AND ? "(and" : "(or");
        for (int k = 0; k < e->boolop.n; k++) {
            buf_putc(b, ' ');
            dump_expr(b, e->boolop.xs[k]);
        }
        buf_putc(b, ')');
        break;
    case EX_IFEXP:
        buf_puts(b, "(ifexp ");
        dump_expr(b, e->ifexp.cond);
        buf_putc(b, ' ');
        dump_expr(b, e->ifexp.then);
        buf_putc(b, ' ');
        dump_expr(b, e->ifexp.els);
        buf_putc(b, ')');
        break;
    case EX_TUPLE:
    case EX_LIST:
        buf_puts(b, e->kind == EX_TUPLE ? "(tuple" : "(list");
        for (int k = 0; k < e->seq.n; k++) {
            buf_putc(b, ' ');
            dump_expr(b, e->seq.xs[k]);
        }
        buf_putc(b, ')');
        break;
    case EX_FSTRING:
        buf_puts(b, "(fstring");
        for (int k = 0; k < e->seq.n; k++) {
            buf_putc(b, ' ');
            dump_expr(b, e->seq.xs[k]);
        }
        buf_putc(b, ')');
        break;
    case EX_FORMAT:
        buf_puts(b, "(format ");
        dump_expr(b, e->fmt.value);
        if (e->fmt.conv)
            buf_printf(b, " !%c", e->fmt.conv);
        if (e->fmt.spec[0]) {
            buf_puts(b, " :");
            dump_str(b, e->fmt.spec);
        }
        buf_putc(b, ')');
        break;
    }
}

static void dump_stmts(Buf *b, const Stmts *ss, int ind);

static void dump_block(Buf *b, const char *what, const Stmts *ss, int ind)
{
    buf_printf(b, "\n%*s(%s", ind, "", what);
    dump_stmts(b, ss, ind + 2);
    buf_putc(b, ')');
}

static void dump_stmt(Buf *b, const Stmt *s, int ind)
{
    buf_printf(b, "\n%*s", ind, "");
    buf_printf(b, "%d:%d ", s->loc.line, s->loc.col);
    switch (s->kind) {
    case ST_EXPR:
        buf_puts(b, "(expr ");
        dump_expr(b, s->expr);
        buf_putc(b, ')');
        break;
    case ST_ASSIGN:
        buf_puts(b, "(assign");
        for (int k = 0; k < s->assign.ntargets; k++) {
            buf_putc(b, ' ');
            dump_expr(b, s->assign.targets[k]);
        }
        buf_puts(b, " = ");
        dump_expr(b, s->assign.value);
        buf_putc(b, ')');
        break;
    case ST_AUGASSIGN:
        buf_printf(b, "(augassign %s= ", binop_sym[s->aug.op]);
        dump_expr(b, s->aug.target);
        buf_putc(b, ' ');
        dump_expr(b, s->aug.value);
        buf_putc(b, ')');
        break;
    case ST_ANNASSIGN:
        buf_puts(b, "(annassign ");
        dump_expr(b, s->ann.target);
        buf_putc(b, ' ');
        dump_expr(b, s->ann.ann);
        buf_putc(b, ' ');
        dump_expr(b, s->ann.value);
        buf_putc(b, ')');
        break;
    case ST_IF:
        buf_puts(b, "(if ");
        dump_expr(b, s->if_.cond);
        dump_block(b, "then", &s->if_.then, ind + 2);
        if (s->if_.els.n)
            dump_block(b, "else", &s->if_.els, ind + 2);
        buf_putc(b, ')');
        break;
    case ST_FOR:
        buf_puts(b, "(for ");
        dump_expr(b, s->for_.target);
        buf_putc(b, ' ');
        dump_expr(b, s->for_.iter);
        dump_block(b, "body", &s->for_.body, ind + 2);
        if (s->for_.orelse.n)
            dump_block(b, "orelse", &s->for_.orelse, ind + 2);
        buf_putc(b, ')');
        break;
    case ST_WHILE:
        buf_puts(b, "(while ");
        dump_expr(b, s->while_.cond);
        dump_block(b, "body", &s->while_.body, ind + 2);
        if (s->while_.orelse.n)
            dump_block(b, "orelse", &s->while_.orelse, ind + 2);
        buf_putc(b, ')');
        break;
    case ST_RETURN:
        buf_puts(b, "(return ");
        dump_expr(b, s->expr);
        buf_putc(b, ')');
        break;
    case ST_PASS: buf_puts(b, "(pass)"); break;
    case ST_BREAK: buf_puts(b, "(break)"); break;
    case ST_CONTINUE: buf_puts(b, "(continue)"); break;
    case ST_ASSERT:
        buf_puts(b, "(assert ");
        dump_expr(b, s->assert_.test);
        buf_putc(b, ' ');
        dump_expr(b, s->assert_.msg);
        buf_putc(b, ')');
        break;
    case ST_FUNCDEF: buf_puts(b, "(funcdef)"); break;
    }
}

static void dump_stmts(Buf *b, const Stmts *ss, int ind)
{
    for (int k = 0; k < ss->n; k++)
        dump_stmt(b, ss->v[k], ind);
}

void ast_dump(Buf *b, const Module *m)
{
    buf_printf(b, "(module %s", m->file);
    for (int k = 0; k < m->imports.n; k++)
        buf_printf(b, "\n  (import %s %s)", m->imports.v[k].alias, m->imports.v[k].qual);
    for (int k = 0; k < m->globals.n; k++) {
        const Global *g = &m->globals.v[k];
        buf_printf(b, "\n  %d:%d (global %s ", g->loc.line, g->loc.col, g->name);
        if (g->ann) {
            buf_puts(b, "(ann ");
            dump_expr(b, g->ann);
            buf_puts(b, ") ");
        }
        dump_expr(b, g->value);
        buf_putc(b, ')');
    }
    for (int k = 0; k < m->funcs.n; k++) {
        const FuncDef *fn = m->funcs.v[k];
        buf_printf(b, "\n  %d:%d (def %s", fn->loc.line, fn->loc.col, fn->name);
        for (int j = 0; j < fn->ndecos; j++)
            buf_printf(b, " @%s%s", fn->decos[j].name, fn->decos[j].called ? "()" : "");
        buf_puts(b, "\n    (params");
        for (int j = 0; j < fn->nparams; j++) {
            const Param *p = &fn->params[j];
            buf_printf(b, " (%s", p->name);
            if (p->ann) {
                buf_puts(b, " : ");
                dump_expr(b, p->ann);
            }
            if (p->dflt) {
                buf_puts(b, " = ");
                dump_expr(b, p->dflt);
            }
            buf_putc(b, ')');
        }
        buf_putc(b, ')');
        dump_stmts(b, &fn->body, 4);
        buf_putc(b, ')');
    }
    buf_puts(b, ")\n");
}
